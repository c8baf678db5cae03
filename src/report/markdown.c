/* summary.md: the essentials for a pull request or a ticket. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>

/* Text in a table cell (or a line of prose): the characters that would end
 * the row or the cell, or start markup (raw HTML, an image fetched from
 * anywhere, a link, an entity), are escaped, so the text reads as it is. */
static const char *const cell_escape[256] = {
    ['|'] = "\\|", ['\\'] = "\\\\", ['!'] = "\\!",  ['['] = "\\[",
    [']'] = "\\]", ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;",
    ['`'] = "'",   ['\r'] = " ",    ['\n'] = " ",
};

/* Text inside a `code span`: nothing is markup there but its backquote,
 * and a line break would end the list item. */
static const char *const code_escape[256] = {['`'] = "'", ['\r'] = " ", ['\n'] = " "};

static void cell(FILE *f, const char *s)
{
    ust__report_put_escaped(f, s, cell_escape, UST__REPORT_BIDI_VISIBLE);
}

static void code(FILE *f, const char *s)
{
    fputc('`', f);
    ust__report_put_escaped(f, s, code_escape, UST__REPORT_BIDI_VISIBLE);
    fputc('`', f);
}

/* The divergences of each UTC day of the run's span, zero days included:
 * the total, the largest classes and the rest. */
static void write_days(FILE *f, const ust__report_model *m)
{
    size_t top = m->n_detailed < UST__REPORT_DAY_CLASSES ? m->n_detailed
                                                         : UST__REPORT_DAY_CLASSES;
    fputs("\n## Divergences by day (UTC)\n\n| date | divergences |", f);
    for (size_t c = 0; c < top; c++) {
        fputc(' ', f);
        cell(f, m->classes[c].name);
        fputs(" |", f);
    }
    fputs(" other |\n|---|---:|", f);
    for (size_t c = 0; c <= top; c++)
        fputs("---:|", f);
    fputs("\n", f);
    for (size_t d = 0; m->events > 0 && d < m->days.n; d++) {
        char date[32];
        ust_time_format(m->days.origin_us + (int64_t)d * m->days.width_us, date);
        int64_t other = m->total_days[d];
        fprintf(f, "| %.10s | %lld |", date, (long long)other);
        for (size_t c = 0; c < top; c++) {
            fprintf(f, " %lld |", (long long)m->classes[c].days[d]);
            other -= m->classes[c].days[d];
        }
        fprintf(f, " %lld |\n", (long long)other);
    }
}

int ust__report_write_markdown(const ust__report_model *m, const char *path, char **err)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot write", path);
    char a[32] = "-", b[32] = "-";
    if (m->events > 0) {
        ust_time_format(m->first_at, a);
        ust_time_format(m->last_at, b);
    }
    int pass = ust_gate_pass(&m->gate, 0);
    fprintf(f, "# understudy report\n\n**%s**: ",
            pass ? "Every divergence is triaged" : "Not ready for cutover");
    if (m->gate.refusal != NULL) {
        cell(f, m->gate.refusal);
        fputs("; ", f);
    }
    fprintf(f, "%lld divergence(s) in %zu class(es), %lld open in %lld class(es).\n\n",
            (long long)m->divergences, m->n_classes,
            (long long)m->gate.open_divergences, (long long)m->gate.open_classes);
    fprintf(
        f, "- span: %s – %s\n- events: %lld read, %lld decided by both, %lld not fed\n",
        a, b, (long long)m->events, (long long)m->fed, (long long)(m->events - m->fed));
    const char *keys[] = {"legacy_name",       "legacy_version",  "candidate_name",
                          "candidate_version", "log_head_sha256", "config_sha256"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(keys); i++) {
        fprintf(f, "- %s: ", keys[i]);
        code(f, json_string_value(json_object_get(m->meta, keys[i])));
        fputs("\n", f);
    }
    static const ust__report_about_style md = {
        cell_escape, code_escape,       "- ", ": ", "\n", "`", "`",
        "verified",  "**NOT verified**"};
    ust__report_put_about(f, m->about, &md);
    fputs("\n## Legacy × candidate verdicts\n\n| legacy \\\\ candidate |", f);
    for (int c = 0; c < UST__REPORT_VERDICTS; c++)
        fprintf(f, " %s |", ust__report_verdict_label(c));
    fputs("\n|---|", f);
    for (int c = 0; c < UST__REPORT_VERDICTS; c++)
        fputs("---:|", f);
    fputs("\n", f);
    for (int l = 0; l < UST__REPORT_VERDICTS; l++) {
        fprintf(f, "| %s |", ust__report_verdict_label(l));
        for (int c = 0; c < UST__REPORT_VERDICTS; c++)
            fprintf(f, " %lld |", (long long)m->matrix[l][c]);
        fputs("\n", f);
    }
    fputs("\n## Divergence classes\n\n| class | count | follow-on | fields | triage |\n"
          "|---|---:|---:|---|---|\n",
          f);
    for (size_t i = 0; i < m->n_detailed; i++) {
        const ust__report_class *c = &m->classes[i];
        fputs("| ", f);
        cell(f, c->name);
        fprintf(f, " | %lld | %lld | ", (long long)c->count, (long long)c->follow_ons);
        char *fs = json_dumps(json_array_get(c->field_sets, 0), JSON_COMPACT);
        cell(f, fs);
        ust_free(fs);
        fputs(" | ", f);
        ust__report_put_triage(f, c->accepted, cell_escape, "accepted: ", "**open**",
                               0);
        fputs(" |\n", f);
    }
    write_days(f, m);
    /* The two lists are tables of the same columns but their last. */
    ust__report_entry_style rows = {.replace = cell_escape,
                                    .before = "| ",
                                    .between = " | ",
                                    .owner_end = "",
                                    .extra_before = " | ",
                                    .extra_after = "",
                                    .end = " |\n",
                                    .closing = ""};
    ust__report_entry_style stale = rows, expired = rows;
    stale.heading = "\n## Stale triage entries\n\nThey accept no class of this run: "
                    "remove them or correct their class.\n\n| class | owner | did you "
                    "mean |\n|---|---|---|\n";
    expired.heading = "\n## Expired triage entries\n\nThey accept nothing: the classes "
                      "they accepted are open.\n\n| class | owner | expired after |\n"
                      "|---|---|---|\n";
    ust__report_put_unused(f, &m->gate, 0, &stale);
    ust__report_put_unused(f, &m->gate, 1, &expired);
    if (m->n_classes > m->n_detailed)
        fprintf(f, "\n%zu more classes: see divergences.jsonl.\n",
                m->n_classes - m->n_detailed);
    ust__report_write_coverage_markdown(f, m);
    if (fclose(f) != 0)
        return ust_errf(err, UST_EIO, "%s: write failed", path);
    return 0;
}
