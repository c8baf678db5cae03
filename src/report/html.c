/* index.html: one self-contained file, no network, no script. Every string
 * that came from outside (payloads, headers, plugin output, class names) is
 * escaped, and a Content-Security-Policy forbids scripts besides. */
#include "report/class_page.h"
#include "report/event.h"
#include "report/html_escape.h"
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;"
    "color:#1d2330;padding:0 1em}h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px"
    " solid #ccd}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid"
    " #ccd;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#eef}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}.zero{color:#aab}"
    ".diag{background:#eaf6ea}.open{color:#a00;font-weight:600}.ok{color:#070}"
    "pre{background:#f6f7fb;padding:.5em;overflow:auto;max-height:24em;margin:0}"
    ".side{display:grid;grid-template-columns:1fr 1fr;gap:1em}"
    "tr.div td{background:#fff3e0}tr.follow td{background:#fdf8ef}"
    "details{margin:.5em 0 1em}summary{cursor:pointer}.muted{color:#667}"
    "td code{word-break:break-word}.legend span{display:inline-block;width:10px;"
    "height:10px;margin:0 .4em 0 1em}"
    /* one event (event_html.c): the values that differ, side by side */
    "table.diff td.legacy{background:#fdecea}table.diff td.candidate{background:"
    "#e7f5ec}table.diff td code{font-weight:600}.absent{color:#889;font-style:italic}"
    "table.headers td,table.derived td{font-size:.92em}pre.raw{white-space:pre-wrap;"
    "word-break:break-all}h5{margin:.6em 0 .2em}"
    "table.rows{width:100%}del{background:#fde7e7;text-decoration:none}"
    "ins{background:#e4f5e4;text-decoration:none}.nav{margin:1em 0}";

/* The report's own metadata (model.h: about). */
static void write_about(FILE *f, const json_t *about)
{
    static const ust__report_about_style html = {
        ust__html_entity,
        ust__html_entity,
        "<tr><th>",
        "</th><td>",
        "</td></tr>",
        "<code>",
        "</code>",
        "<span class=ok>verified</span>",
        "<span class=open>NOT verified</span>"};
    fputs("<h2>Report</h2><table>", f);
    ust__report_put_about(f, about, &html);
    fputs("</table>", f);
}

void ust__report_html_head(FILE *f, const char *title, const char *subject)
{
    fputs("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"
          " style-src 'unsafe-inline'\"><title>",
          f);
    ust__html_esc(f, title);
    if (subject != NULL)
        ust__html_esc(f, subject);
    fputs("</title><style>", f);
    fputs(style, f);
    fputs("</style></head><body>", f);
}

static void write_run(FILE *f, const ust__report_model *m)
{
    fputs("<h2>Run</h2><table>", f);
    static const char *const keys[] = {
        "log_path",          "log_head_seq",    "log_head_sha256", "config_sha256",
        "legacy_name",       "legacy_version",  "legacy_sha256",   "candidate_name",
        "candidate_version", "candidate_sha256"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(keys); i++) {
        fputs("<tr><th>", f);
        ust__html_esc(f, keys[i]);
        fputs("</th><td><code>", f);
        ust__html_esc(f, json_string_value(json_object_get(m->meta, keys[i])));
        fputs("</code></td></tr>", f);
    }
    fputs("<tr><th>span</th><td>", f);
    if (m->events > 0) {
        ust__html_time(f, m->first_at);
        fputs(" &ndash; ", f);
        ust__html_time(f, m->last_at);
    }
    fprintf(f,
            "</td></tr><tr><th>events</th><td>%lld read, %lld decided by both, %lld"
            " not fed</td></tr>",
            (long long)m->events, (long long)m->fed, (long long)(m->events - m->fed));
    fprintf(f,
            "<tr><th>divergences</th><td>%lld (%lld follow-on), %lld open in %lld"
            " class(es)</td></tr></table>",
            (long long)m->divergences, (long long)m->follow_ons,
            (long long)m->gate.open_divergences, (long long)m->gate.open_classes);
    const char *titles[] = {"events by route", "events by signature status"};
    json_t *objs[] = {m->by_route, m->by_signature};
    for (int g = 0; g < 2; g++) {
        fprintf(f, "<table><tr><th>%s</th><th>count</th></tr>", titles[g]);
        const char *k;
        json_t *v;
        json_object_foreach(objs[g], k, v)
        {
            fputs("<tr><td>", f);
            ust__html_esc(f, k);
            fprintf(f, "</td><td class=n>%lld</td></tr>",
                    (long long)json_integer_value(v));
        }
        fputs("</table>", f);
    }
}

static void write_matrix(FILE *f, const ust__report_model *m)
{
    fputs("<h2>Legacy verdict &times; candidate verdict</h2><table><tr><th>legacy \\"
          " candidate</th>",
          f);
    for (int c = 0; c < UST__REPORT_VERDICTS; c++)
        fprintf(f, "<th>%s</th>", ust__report_verdict_label(c));
    fputs("</tr>", f);
    for (int l = 0; l < UST__REPORT_VERDICTS; l++) {
        fprintf(f, "<tr><th>%s</th>", ust__report_verdict_label(l));
        for (int c = 0; c < UST__REPORT_VERDICTS; c++)
            fprintf(f, "<td class=\"n%s%s\">%lld</td>", l == c ? " diag" : "",
                    m->matrix[l][c] ? "" : " zero", (long long)m->matrix[l][c]);
        fputs("</tr>", f);
    }
    fputs("</table>", f);
}

/* "5 of 4,854 shown", linked to the class's pages, which show them all. */
static void write_shown(FILE *f, const ust__report_class *c, size_t i)
{
    fputs("<a href=\"classes/", f);
    ust__report_put_page_name(f, i, 1);
    fprintf(f, "\">%zu of ", c->n_examples);
    ust__report_put_count(f, c->count);
    fputs(" shown</a>", f);
}

static void write_classes(FILE *f, const ust__report_model *m)
{
    fputs("<h2>Divergence "
          "classes</h2><table><tr><th>class</th><th>count</th><th>follow-on"
          "</th><th>fields</th><th>first</th><th>last</th><th>triage</th>"
          "<th>examples</th></tr>",
          f);
    for (size_t i = 0; i < m->n_detailed; i++) {
        const ust__report_class *c = &m->classes[i];
        fprintf(f, "<tr><td><a href=\"#class-%zu\">", i);
        ust__html_esc(f, c->name);
        fprintf(f, "</a></td><td class=n>%lld</td><td class=n>%lld</td><td>",
                (long long)c->count, (long long)c->follow_ons);
        size_t k;
        json_t *fs;
        json_array_foreach(c->field_sets, k, fs)
        {
            char *t = json_dumps(fs, JSON_COMPACT);
            fputs("<code>", f);
            ust__html_esc(f, t);
            fputs("</code> ", f);
            ust_free(t);
        }
        fputs("</td><td>", f);
        ust__html_time(f, c->first_at);
        fputs("</td><td>", f);
        ust__html_time(f, c->last_at);
        fputs("</td><td>", f);
        ust__report_put_triage(
            f, c->accepted, ust__html_entity,
            "<span class=ok>accepted</span>: ", "<span class=open>open</span>", 1);
        fputs("</td><td>", f);
        write_shown(f, c, i);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    if (m->n_classes > m->n_detailed)
        fprintf(f,
                "<p class=muted>%zu more classes are counted in summary.md and listed"
                " in divergences.jsonl.</p>",
                m->n_classes - m->n_detailed);
}

static void write_details(FILE *f, const ust__report_model *m)
{
    for (size_t i = 0; i < m->n_detailed; i++) {
        const ust__report_class *c = &m->classes[i];
        fprintf(f, "<h3 id=\"class-%zu\">", i);
        ust__html_esc(f, c->name);
        fputs(" <span class=muted>(", f);
        ust__report_put_count(f, c->count);
        fputs(")</span></h3><p>", f);
        write_shown(f, c, i);
        fputs(", sampled across the class's span; its pages list every one.</p>", f);
        /* The examples by the candidate's reason, each reason where its
         * first example falls, the examples in time order within it. */
        for (size_t k = 0; k < c->n_examples; k++) {
            const char *reason = c->example_reasons[k];
            int seen = 0;
            for (size_t j = 0; j < k && !seen; j++)
                seen = ust__report_same_reason(c->example_reasons[j], reason);
            if (seen)
                continue;
            fputs("<h4>candidate's reason: ", f);
            ust__report_put_reason(f, reason);
            fputs("</h4>", f);
            for (size_t j = k; j < c->n_examples; j++)
                if (ust__report_same_reason(c->example_reasons[j], reason))
                    ust__report_event_html(f, &c->examples[j], j == 0);
        }
    }
}

/* Triage entries that accepted nothing: the file has drifted from the runs,
 * or its entries' time is up. */
static void write_stale(FILE *f, const ust__report_model *m)
{
    ust__report_entry_style stale = {.replace = ust__html_entity,
                                     .before = "<li><code>",
                                     .between = "</code> (",
                                     .owner_end = ")",
                                     .end = "</li>",
                                     .closing = "</ul>"};
    ust__report_entry_style expired = stale;
    stale.heading = "<p>stale triage entries (they accept no class of this run: "
                    "remove them or correct their class):</p><ul>";
    stale.extra_before = ": did you mean <code>";
    stale.extra_after = "</code>?";
    expired.heading = "<p>expired triage entries (they accept nothing: the classes "
                      "they accepted are open):</p><ul>";
    expired.extra_before = ", expired after ";
    expired.extra_after = "";
    ust__report_put_unused(f, &m->gate, 0, &stale);
    ust__report_put_unused(f, &m->gate, 1, &expired);
}

int ust__report_write_html(const ust__report_model *m, const char *path, char **err)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot write", path);
    ust__report_html_head(f, "understudy report", NULL);
    fputs("<h1>understudy: divergence report</h1>", f);
    int pass = ust_gate_pass(&m->gate, 0);
    fprintf(f, "<p><strong class=%s>%s</strong>: ", pass ? "ok" : "open",
            pass ? "every divergence is triaged" : "not ready for cutover");
    if (m->gate.refusal != NULL) {
        ust__html_esc(f, m->gate.refusal);
        fputs(";", f);
    }
    fprintf(f, " %lld divergence(s) in %zu class(es), %lld open.</p>",
            (long long)m->divergences, m->n_classes,
            (long long)m->gate.open_divergences);
    write_stale(f, m);
    write_about(f, m->about);
    write_run(f, m);
    write_matrix(f, m);
    ust__report_write_chart(f, m);
    write_classes(f, m);
    ust__report_write_coverage_html(f, m);
    write_details(f, m);
    fputs("</body></html>\n", f);
    if (fclose(f) != 0)
        return ust_errf(err, UST_EIO, "%s: write failed", path);
    return 0;
}
