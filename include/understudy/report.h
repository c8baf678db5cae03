/* Reports on a run, the triage file, and the cutover gate. */
#ifndef UNDERSTUDY_REPORT_H
#define UNDERSTUDY_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/progress.h>

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
/* The first entry that accepts cls, or NULL. t may be NULL. An error class
 * (the candidate's verdict is `error`, its class ends in "-> error", the arrow U+2192)
 * is accepted only by an entry that names it exactly, without a '*'. */
const ust_triage_entry *ust_triage_match(const ust_triage *t, const char *cls);
/* Whole-string match; '*' matches any run of characters (also none). */
int ust_glob_match(const char *pattern, const char *text);

/* ---- redaction: the config's rules, applied by reports too ------------- */

#include <understudy/redact.h>

/* ---- report ------------------------------------------------------------ */

typedef struct ust_report_opts {
    const char *run_path;
    const char *out_dir;      /* created when missing */
    const char *log_path;     /* NULL: the log the run's metadata names */
    const ust_triage *triage; /* may be NULL: everything is open */
    size_t max_examples;      /* per class; 0 = 5 */
    size_t max_classes;       /* detailed in the HTML; 0 = 100 */
    size_t page_rows;         /* divergences per class page; 0 = 2000 */
    /* divergences written to divergences.jsonl, of the run's; the fraction
     * counts the class pages' rows, written first, too */
    ust_progress progress;
} ust_report_opts;

/* Writes index.html, summary.md, divergences.jsonl and the pages of each
 * detailed class (classes/) into out_dir, in memory bounded by the caps
 * whatever the run's size. */
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
    /* Why the run cannot be judged (ust_malloc'd), NULL when it decided its
     * whole log: it never started, decided no event, or stopped short. */
    char *refusal;
    int64_t decided, cursor, log_head;
    /* The triage entries that accepted no class of the run. */
    const ust_triage_entry **stale;
    size_t n_stale;
} ust_gate_result;

/* Judges the run at run_path against t (NULL: nothing accepted), reading the
 * head of the event log at log_path (NULL: the one the run's metadata
 * names). 0 with *res filled (a refusal is a result, not an error); an
 * error (a read that failed, the log missing) with *err. */
int ust_gate_check(const char *run_path, const char *log_path, const ust_triage *t,
                   ust_gate_result *res, char **err);
/* 1 when the run may cut over: not refused, at most max_open open. */
int ust_gate_pass(const ust_gate_result *res, int64_t max_open);
void ust_gate_result_clear(ust_gate_result *res);

#endif
