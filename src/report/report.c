/* Writing a report directory: index.html, summary.md, summary.json,
 * divergences.jsonl and the class pages. */
#include "report/class_page.h"
#include "report/model.h"
#include "report/redact_line.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/dir.h>
#include <understudy/error.h>
#include <understudy/run.h>

#include <stdlib.h>
#include <string.h>

typedef struct jsonl_writer {
    const ust_report_opts *o;
    const json_t *redact;
    int64_t total, done, before; /* before: the class pages' share */
    FILE *f;
    const char *path;
    char **err;
} jsonl_writer;

static int write_line(void *ctx, const ust_run_divergence *d)
{
    jsonl_writer *w = ctx;
    char *masked = NULL;
    if (json_array_size(w->redact) > 0) {
        json_error_t jerr;
        json_t *doc = ust_json_loads(d->line, 0, &jerr);
        ust__report_redact_line(doc, w->redact);
        masked = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
    }
    int rc = 0;
    /* A line the rules could not be applied to is not written unmasked. */
    if (json_array_size(w->redact) > 0 && masked == NULL)
        rc = ust_errf(w->err, UST_ENOMEM, "%s: cannot mask seq %lld", w->path,
                      (long long)d->seq);
    else /* In JSON text a bidi control can only be inside a string, where
          * its \u escape means the same. */
        ust__report_put_escaped(w->f, masked ? masked : d->line, NULL, "\\u%04X");
    if (rc == 0 && (fputc('\n', w->f) == EOF || ferror(w->f)))
        rc = ust_errf(w->err, UST_EIO, "%s: write failed", w->path);
    ust_free(masked);
    w->done++;
    int64_t all = w->before + w->done;
    ust_progress_tell(&w->o->progress, w->done,
                      all >= w->total ? 1 : (double)all / (double)w->total);
    return rc;
}

/* Every divergence, streamed in seq order; masked when the run has rules.
 * Progress: its lines, the fraction counting on from before rows (written
 * to the class pages) of total. */
static int write_jsonl(const ust_report_opts *o, const json_t *redact, int64_t before,
                       int64_t total, const char *path, char **err)
{
    ust_run *run = NULL;
    int rc = ust__report_run_open(o, &run, err);
    if (rc != 0)
        return rc;
    jsonl_writer w = {o, redact, total, 0, before, fopen(path, "wb"), path, err};
    ust_run_filter all = {0};
    rc = w.f ? ust_run_divergences(run, &all, write_line, &w, err)
             : ust_errf(err, UST_EIO, "%s: cannot write", path);
    ust_run_close(run);
    if (w.f != NULL && fclose(w.f) != 0 && rc == 0)
        rc = ust_errf(err, UST_EIO, "%s: write failed", path);
    if (rc == 0)
        ust_progress_tell(&o->progress, w.done, 1);
    return rc;
}

void ust__report_put_triage(FILE *f, const ust_triage_entry *accepted,
                            const char *const *replace, const char *accepted_label,
                            const char *open_label, int with_date)
{
    if (accepted == NULL) {
        fputs(open_label, f);
        return;
    }
    fputs(accepted_label, f);
    ust__report_put_escaped(f, accepted->reason, replace, UST__REPORT_BIDI_VISIBLE);
    fputs(" (", f);
    ust__report_put_escaped(f, accepted->owner, replace, UST__REPORT_BIDI_VISIBLE);
    if (with_date && accepted->date) {
        fputs(", ", f);
        ust__report_put_escaped(f, accepted->date, replace, UST__REPORT_BIDI_VISIBLE);
    }
    fputs(")", f);
}

static void put_entry(FILE *f, const ust_triage_entry *e, const char *extra,
                      const ust__report_entry_style *s)
{
    fputs(s->before, f);
    ust__report_put_escaped(f, e->class_glob, s->replace, UST__REPORT_BIDI_VISIBLE);
    fputs(s->between, f);
    ust__report_put_escaped(f, e->owner, s->replace, UST__REPORT_BIDI_VISIBLE);
    fputs(s->owner_end, f);
    if (extra != NULL) {
        fputs(s->extra_before, f);
        ust__report_put_escaped(f, extra, s->replace, UST__REPORT_BIDI_VISIBLE);
        fputs(s->extra_after, f);
    }
    fputs(s->end, f);
}

void ust__report_put_unused(FILE *f, const ust_gate_result *gate, int expired,
                            const ust__report_entry_style *s)
{
    size_t n = expired ? gate->n_expired : gate->n_stale;
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            fputs(s->heading, f);
        if (expired)
            put_entry(f, gate->expired[i], gate->expired[i]->expires, s);
        else
            put_entry(f, gate->stale[i], gate->stale_hints[i], s);
    }
    if (n > 0)
        fputs(s->closing, f);
}

int ust_report_write(const ust_report_opts *o, char **err)
{
    int rc = ust_mkdir_p(o->out_dir, err);
    if (rc != 0)
        return rc;
    ust__report_model m;
    rc = ust__report_model_load(o, &m, err);
    if (rc != 0)
        return rc;
    char *html = ust_sprintf("%s/index.html", o->out_dir);
    char *md = ust_sprintf("%s/summary.md", o->out_dir);
    char *jsonl = ust_sprintf("%s/divergences.jsonl", o->out_dir);
    char *summary = ust_sprintf("%s/summary.json", o->out_dir);
    if (html == NULL || md == NULL || jsonl == NULL || summary == NULL)
        rc = UST_ENOMEM;
    /* Progress counts the lines of the JSONL; its fraction covers the rows
     * of the class pages, written first, too. The pages and the JSONL are
     * written while the log's chain is checked beside them. */
    int64_t rows = 0, total = m.divergences;
    for (size_t i = 0; i < m.n_detailed; i++)
        total += m.classes[i].count;
    if (rc == 0)
        rc = ust__report_write_class_pages(o, &m, &rows, total, err);
    if (rc == 0)
        rc = write_jsonl(o, m.redact, rows, total, jsonl, err);
    json_object_set_new(m.about, "log_chain", ust__report_chain_finish(m.chain));
    m.chain = NULL;
    int counted =
        ust__report_coverage_finish(m.coverage_job, &m.coverage, &m.has_coverage, err);
    m.coverage_job = NULL;
    if (rc == 0)
        rc = counted;
    if (rc == 0)
        rc = ust__report_write_html(&m, html, err);
    if (rc == 0)
        rc = ust__report_write_markdown(&m, md, err);
    if (rc == 0)
        rc = ust__report_write_summary_json(&m, summary, err);
    ust_free(html);
    ust_free(md);
    ust_free(jsonl);
    ust_free(summary);
    ust__report_model_clear(&m);
    return rc;
}
