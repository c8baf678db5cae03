/* Writing a report directory: index.html, summary.md, divergences.jsonl. */
#include "report/model.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Every divergence, streamed in seq order; masked when the run has rules. */
static int write_jsonl(const ust_report_opts *o, const json_t *redact, int64_t total,
                       const char *path, char **err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(o->run_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT line FROM divergences ORDER BY seq", -1, &st,
                           NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return ust_errf(err, UST_EDB, "%s: cannot read divergences", o->run_path);
    }
    FILE *f = fopen(path, "wb");
    int rc = f ? 0 : ust_errf(err, UST_EIO, "%s: cannot write", path);
    int masking = json_array_size(redact) > 0;
    int step = 0;
    int64_t done = 0;
    while (rc == 0 && (step = ust__db_step(st, o->run_path, err)) == 1) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        char *masked = NULL;
        if (masking) {
            json_error_t jerr;
            json_t *d = ust_json_loads(line, 0, &jerr);
            ust_redact_json(json_object_get(json_object_get(d, "legacy"), "body"),
                            redact);
            ust_redact_json(json_object_get(json_object_get(d, "candidate"), "body"),
                            redact);
            masked = d ? json_dumps(d, JSON_COMPACT) : NULL;
            json_decref(d);
        }
        /* In JSON text a bidi control can only be inside a string, where
         * its \u escape means the same. */
        rp_put_escaped(f, masked ? masked : line, NULL, "\\u%04X");
        if (fputc('\n', f) == EOF || ferror(f))
            rc = ust_errf(err, UST_EIO, "%s: write failed", path);
        ust_free(masked);
        done++;
        ust_progress_tell(&o->progress, done,
                          done >= total ? 1 : (double)done / (double)total);
    }
    if (step < 0)
        rc = step;
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (f != NULL && fclose(f) != 0 && rc == 0)
        rc = ust_errf(err, UST_EIO, "%s: write failed", path);
    if (rc == 0)
        ust_progress_tell(&o->progress, done, 1);
    return rc;
}

void rp_put_escaped(FILE *f, const char *s, const char *(*replace)(char c),
                    const char *bidi_format)
{
    /* Plain runs go out in one write: a report streams every divergence. */
    const char *run = s;
    for (; s != NULL && *s; s++) {
        uint32_t cp = (unsigned char)*s == 0xE2 ? ust_utf8_bidi_control(s) : 0;
        const char *r = cp == 0 && replace != NULL ? replace(*s) : NULL;
        if (cp == 0 && r == NULL)
            continue;
        fwrite(run, 1, (size_t)(s - run), f);
        if (cp != 0) {
            fprintf(f, bidi_format, (unsigned)cp);
            s += 2;
        } else {
            fputs(r, f);
        }
        run = s + 1;
    }
    if (run != NULL)
        fwrite(run, 1, (size_t)(s - run), f);
}

int ust_report_write(const ust_report_opts *o, char **err)
{
    if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST)
        return ust_errf(err, UST_EIO, "%s: cannot create the directory", o->out_dir);
    rp_model m;
    int rc = rp_model_load(o, &m, err);
    if (rc != 0)
        return rc;
    char *html = ust_sprintf("%s/index.html", o->out_dir);
    char *md = ust_sprintf("%s/summary.md", o->out_dir);
    char *jsonl = ust_sprintf("%s/divergences.jsonl", o->out_dir);
    if (html == NULL || md == NULL || jsonl == NULL)
        rc = UST_ENOMEM;
    if (rc == 0)
        rc = rp_write_html(&m, html, err);
    if (rc == 0)
        rc = rp_write_markdown(&m, md, err);
    if (rc == 0)
        rc = write_jsonl(o, m.redact, m.divergences, jsonl, err);
    ust_free(html);
    ust_free(md);
    ust_free(jsonl);
    rp_model_clear(&m);
    return rc;
}
