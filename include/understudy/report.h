/* Reports on a run, the triage file, and the cutover gate. */
#ifndef UNDERSTUDY_REPORT_H
#define UNDERSTUDY_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/coverage.h>
#include <understudy/progress.h>

/* ---- triage ------------------------------------------------------------ */

typedef struct ust_triage_entry {
    char *class_glob; /* '*' matches any run of characters; "->" read as U+2192 */
    char *reason, *owner, *date;
    char *expires; /* NULL, or YYYY-MM-DD: the last day (UTC) it accepts */
    int expired;   /* expires was before the day the file was loaded */
} ust_triage_entry;

typedef struct ust_triage {
    ust_triage_entry *entries;
    size_t n;
} ust_triage;

/* Loads {"accepted": [{"class", "reason", "owner", "date", "expires"}, ...]}.
 * A malformed file (also an unknown key, a date not of the calendar) is
 * UST_ECONFIG with *err naming the entry and field, never an empty list.
 * "->" in a class is read as the arrow U+2192 of class names ("-->" is not).
 * An entry whose expires is before today (UTC, by the wall clock) is marked
 * expired: it accepts nothing. */
int ust_triage_load(const char *path, ust_triage **out, char **err);
/* The same from len bytes of text (they may hold NULs), path naming them in
 * messages: what ust_triage_load does with the file's bytes. */
int ust_triage_parse(const char *text, size_t len, const char *path, ust_triage **out,
                     char **err);
void ust_triage_free(ust_triage *t);
/* The first entry not expired that accepts cls, or NULL. t may be NULL. An
 * error class (either verdict is `error`: "... → error", "...: error → ...",
 * the arrow U+2192) is accepted only by an entry that names it exactly,
 * without a '*'. */
const ust_triage_entry *ust_triage_match(const ust_triage *t, const char *cls);
/* The first expired entry that would have accepted cls, by the same rule. */
const ust_triage_entry *ust_triage_match_expired(const ust_triage *t, const char *cls);
/* For a pattern that accepted nothing: the same pattern with the arrow of
 * class names (" → ") between its last two words when they read as two
 * verdicts and an arrow was typed otherwise ("=>", "-->", " > ", "→"
 * without spaces) or, when classes_have_arrow, left out. *out is that
 * (ust_malloc'd) or NULL when there is nothing to suggest; UST_ENOMEM. */
int ust_triage_arrow_hint(const char *pattern, int classes_have_arrow, char **out);
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
    const char *triage_path;  /* the file triage was loaded from, for the report's
                                 metadata (its path and SHA-256); may be NULL */
    size_t max_examples;      /* per class; 0 = 5 */
    size_t max_classes;       /* detailed in the HTML; 0 = 100 */
    size_t page_rows;         /* divergences per class page; 0 = 2000 */
    /* a class of more divergences names the differing fields in its rows,
     * without their values; 0 = 20000 */
    size_t value_rows_max;
    /* divergences written to divergences.jsonl, of the run's; the fraction
     * counts the class pages' rows, written first, too */
    ust_progress progress;
    /* When n_runs > 1, in place of run_path: the runs of the partitions of
     * one replay, read as one run (run.h: ust_run_open_many); the report
     * names them. */
    const char *const *run_paths;
    size_t n_runs;
} ust_report_opts;

/* Writes index.html, summary.md, summary.json, divergences.jsonl and the
 * pages of each detailed class (classes/) into out_dir, in memory bounded by
 * the caps whatever the run's size. They say when they were made: now, or
 * SOURCE_DATE_EPOCH (whole seconds since 1970, UTC) when that is set, so the
 * same run can give the same bytes; a malformed SOURCE_DATE_EPOCH is
 * UST_EINVAL. */
int ust_report_write(const ust_report_opts *o, char **err);

/* ---- one event: understudy show --------------------------------------- */

typedef struct ust_show_opts {
    const char *run_path;
    const char *log_path; /* NULL: the log the run's metadata names */
    int64_t seq;
} ust_show_opts;

/* Writes the event at o->seq of the run as text to out: its decisions and
 * diff, the request as it arrived with its derived fields, the entity's
 * timeline, masked by the run's redaction rules. 1 when shown (*log_missing
 * set when the event log could not be read: the text then says the request
 * is unavailable), 0 when the run has no event at that seq, <0 with *err. */
int ust_report_show(const ust_show_opts *o, FILE *out, int *log_missing, char **err);

/* ---- gate -------------------------------------------------------------- */

typedef struct ust_gate_class {
    char *class_name;
    int64_t count;
    const ust_triage_entry *accepted; /* NULL: open */
    const ust_triage_entry *expired;  /* open: the expired entry that accepted it */
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
    /* The triage entries, not expired, that accepted no class of the run;
     * for each, the spelling with the arrow it may have meant
     * (ust_triage_arrow_hint, ust_malloc'd) or NULL. */
    const ust_triage_entry **stale;
    char **stale_hints;
    size_t n_stale;
    /* The entries past their expires date: they accepted nothing. */
    const ust_triage_entry **expired;
    size_t n_expired;
} ust_gate_result;

/* Judges the run at run_path against t (NULL: nothing accepted), reading the
 * head of the event log at log_path (NULL: the one the run's metadata
 * names). 0 with *res filled (a refusal is a result, not an error); an
 * error (a read that failed, the log missing) with *err. */
int ust_gate_check(const char *run_path, const char *log_path, const ust_triage *t,
                   ust_gate_result *res, char **err);
/* The same for the runs of the partitions of one replay, read as one
 * (run.h: ust_run_open_many); one path is ust_gate_check's. */
int ust_gate_check_runs(const char *const *run_paths, size_t n_runs,
                        const char *log_path, const ust_triage *t, ust_gate_result *res,
                        char **err);
/* 1 when the run may cut over: not refused, at most max_open open. */
int ust_gate_pass(const ust_gate_result *res, int64_t max_open);
void ust_gate_result_clear(ust_gate_result *res);

/* What the traffic of the run at run_path exercised: the events of its log
 * (log_path, NULL: the one the run's metadata names) up to its cursor,
 * counted with the params the run recorded (`gate --require-coverage`). */
int ust_report_coverage(const char *run_path, const char *log_path, ust_coverage *out,
                        char **err);
int ust_report_coverage_runs(const char *const *run_paths, size_t n_runs,
                             const char *log_path, ust_coverage *out, char **err);

#endif
