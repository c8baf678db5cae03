/* Reports on a run, the triage file, and the cutover gate. */
#ifndef UNDERSTUDY_REPORT_H
#define UNDERSTUDY_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---- triage ------------------------------------------------------------ */

typedef struct ust_triage_entry {
    char *class_glob; /* '*' matches any run of characters */
    char *reason, *owner, *date;
} ust_triage_entry;

typedef struct ust_triage {
    ust_triage_entry *entries;
    size_t n;
} ust_triage;

/* Loads {"accepted": [{"class", "reason", "owner", "date"}, ...]}. A
 * malformed file is UST_ECONFIG with *err naming the entry and field, never
 * an empty list. */
int ust_triage_load(const char *path, ust_triage **out, char **err);
void ust_triage_free(ust_triage *t);
/* The first entry whose pattern matches cls, or NULL. t may be NULL. */
const ust_triage_entry *ust_triage_match(const ust_triage *t, const char *cls);
/* Whole-string match; '*' matches any run of characters (also none). */
int ust_glob_match(const char *pattern, const char *text);

/* ---- redaction --------------------------------------------------------- */

/* Masks, in place, every value named by rules (JSON array of field names,
 * matched at any depth, and JSON Pointers) with "[redacted]". */
void ust_redact_json(json_t *doc, const json_t *rules);

/* ---- report ------------------------------------------------------------ */

typedef struct ust_report_opts {
    const char *run_path;
    const char *out_dir;      /* created when missing */
    const ust_triage *triage; /* may be NULL: everything is open */
    size_t max_examples;      /* per class; 0 = 5 */
    size_t max_timelines;     /* entities per class; 0 = 10 */
    size_t max_classes;       /* detailed in the HTML; 0 = 100 */
} ust_report_opts;

/* Writes index.html, summary.md and divergences.jsonl into out_dir, in
 * memory bounded by the caps whatever the run's size. */
int ust_report_write(const ust_report_opts *o, char **err);

/* ---- gate -------------------------------------------------------------- */

typedef struct ust_gate_class {
    char *class_name;
    int64_t count;
    const ust_triage_entry *accepted; /* NULL: open */
} ust_gate_class;

typedef struct ust_gate_result {
    ust_gate_class *classes; /* by count, descending */
    size_t n;
    int64_t divergences, open_divergences;
    size_t open_classes;
} ust_gate_result;

int ust_gate_check(const char *run_path, const ust_triage *t, ust_gate_result *res,
                   char **err);
void ust_gate_result_clear(ust_gate_result *res);

#endif
