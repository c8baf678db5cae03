/* What a report shows, gathered from a run database with every list capped,
 * so memory stays bounded whatever the run's size. */
#ifndef UST_REPORT_MODEL_H
#define UST_REPORT_MODEL_H

#include <jansson.h>
#include <stdio.h>
#include <stdint.h>

#include "report/escape.h"
#include "report/event.h"

#include <understudy/coverage.h>
#include <understudy/report.h>
#include <understudy/log.h>
#include <understudy/run.h>

/* Verdict columns of the matrix: 0 is "not fed", 1..7 the verdicts. */
#define UST__REPORT_VERDICTS 8

typedef struct ust__report_class {
    char *name;
    int64_t count, first_at, last_at, follow_ons;
    json_t *field_sets; /* distinct "fields" arrays, at most 5 */
    const ust_triage_entry *accepted;
    ust__report_event *examples; /* each with its entity's story, in time order */
    char **example_reasons; /* the kind of each example's candidate reason (run.h) */
    size_t n_examples;
    int64_t *buckets; /* divergences per bar of the chart */
    int64_t *days;    /* per UTC day, for the first UST__REPORT_DAY_CLASSES only */
} ust__report_class;

/* The chart's bars at most, and the classes the daily table names. */
#define UST__REPORT_MAX_BARS 48
#define UST__REPORT_DAY_CLASSES 5

/* Time slots of equal width from origin_us (a multiple of the width, so a
 * slot starts on a round UTC time): the chart's bars, the table's days. */
typedef struct ust__report_slots {
    int64_t origin_us, width_us;
    size_t n;
} ust__report_slots;

typedef struct ust__report_chain ust__report_chain;
typedef struct ust__report_coverage_job ust__report_coverage_job;

typedef struct ust__report_model {
    json_t *meta;
    json_t *redact;
    int64_t events, fed, divergences, follow_ons;
    json_t *by_route, *by_signature;
    int64_t matrix[UST__REPORT_VERDICTS][UST__REPORT_VERDICTS];
    ust__report_class *classes; /* by count, descending; detailed up to the cap */
    size_t n_classes, n_detailed;
    ust_gate_result gate; /* the verdict: the gate's judgement of the run */
    int64_t first_at, last_at;
    ust__report_slots bars, days;
    int64_t *total_buckets, *total_days;
    /* What the report is: generated_at, understudy_version, triage (path and
     * sha256, or null), log_chain (verified, through_seq and sha256, or
     * reason). */
    json_t *about;
    ust__report_chain *chain; /* the check for about's log_chain, running */
    /* What the traffic exercised, up to the run's cursor; has_coverage 0
     * when the event log could not be read (then it is unknown). Counted
     * meanwhile by coverage_job, until ust__report_coverage_finish. */
    ust_coverage coverage;
    int has_coverage;
    ust__report_coverage_job *coverage_job;
} ust__report_model;

/* ust_gate_check on a run already open (the report reads its verdict and
 * its model from one connection). With tally (else NULL), the run's totals
 * and tally's counts are read into *totals by the same read of the
 * decisions the judgement makes (ust_run_tally_read), in its transaction. */
int ust__gate_judge(ust_run *run, const char *run_path, const char *log_path,
                    const ust_triage *t, const ust_run_tally *tally,
                    ust_run_totals *totals, ust_gate_result *res, char **err);
/* Opens the run o reads: run_path, or the n_runs of run_paths as one. */
int ust__report_run_open(const ust_report_opts *o, ust_run **out, char **err);

/* The slots of the chart's bars over [first_us, last_us]: the narrowest
 * round width (1 s, 2 s, 5 s, ... 1 h, 2 h, 3 h, 4 h, 6 h, 12 h, 1 d, ...)
 * that needs at most UST__REPORT_MAX_BARS. */
ust__report_slots ust__report_bar_slots(int64_t first_us, int64_t last_us);
/* Whole UTC days from the one of first_us to the one of last_us. */
ust__report_slots ust__report_day_slots(int64_t first_us, int64_t last_us);

/* m->about but its log_chain. UST_EINVAL with *err for a malformed
 * SOURCE_DATE_EPOCH. */
int ust__report_about_load(const ust_report_opts *o, ust__report_model *m, char **err);

/* The chain of the log at log_path (NULL: the run names none) checked from its first
 * row to the run's cursor, and through the head hash the run recorded (meta:
 * log_head_seq, log_head_sha256) when that is the cursor's: on a thread of its own, a
 * read as long as the report's others, on another file. 0, or UST_ENOMEM. */
int ust__report_chain_start(const char *log_path, int64_t cursor, const json_t *meta,
                            ust__report_chain **out);
/* Waits for the check and ends it: {"verified": true, "through_seq",
 * "sha256"} or {"verified": false, "reason"}. c may be NULL (nothing
 * started: NULL). */
json_t *ust__report_chain_finish(ust__report_chain *c);

/* How a report writes its metadata: each item as row_start, its name,
 * row_mid, its text (escaped through replace; hashes and paths between
 * code_open and code_close, escaped through code_replace), row_end. */
typedef struct ust__report_about_style {
    const char *const *replace, *const *code_replace;
    const char *row_start, *row_mid, *row_end, *code_open, *code_close;
    const char *verified, *not_verified; /* the log chain's two states */
} ust__report_about_style;
void ust__report_put_about(FILE *f, const json_t *about,
                           const ust__report_about_style *s);

int ust__report_model_load(const ust_report_opts *o, ust__report_model *m, char **err);
/* The event log of the report (o's, else the one the run names), for the
 * requests of the events shown: *out NULL when it cannot be opened. With
 * path (else NULL), *path is where it is (ust_malloc'd, NULL when the run
 * names none). */
int ust__report_log_open(ust_run *run, const ust_report_opts *o, ust_log **out,
                         char **path, char **err);
void ust__report_model_clear(ust__report_model *m);

/* items (n used of *cap, each size bytes) with room for one more: the same,
 * or grown to twice its capacity (16 at first), or NULL when that fails
 * (items unchanged). */
void *ust__report_grow(void *items, size_t *cap, size_t n, size_t size);

/* Index in the matrix of a verdict name (0 for NULL or unknown). */
int ust__report_verdict_index(const char *name);
const char *ust__report_verdict_label(int index);

/* A class's triage as both reports tell it: open_label when nothing accepted
 * it, else accepted_label, the reason and "(owner)" ("(owner, date)" with
 * with_date and a date), each text escaped through replace. */
void ust__report_put_triage(FILE *f, const ust_triage_entry *accepted,
                            const char *const *replace, const char *accepted_label,
                            const char *open_label, int with_date);
/* How a report lists the triage entries that accepted nothing: when there
 * is one, heading, then each entry as before, its class glob, between, its
 * owner, owner_end, then (when there is one) a stale entry's arrow hint or
 * an expired entry's date between extra_before and extra_after, then end;
 * after the last, closing. The texts are escaped through replace. */
typedef struct ust__report_entry_style {
    const char *const *replace;
    const char *heading, *before, *between, *owner_end, *extra_before, *extra_after,
        *end, *closing;
} ust__report_entry_style;
/* The gate's stale entries (expired 0) or its expired ones (1). */
void ust__report_put_unused(FILE *f, const ust_gate_result *gate, int expired,
                            const ust__report_entry_style *s);

/* The chart of divergences over the run's span, with its legend. */
void ust__report_write_chart(FILE *f, const ust__report_model *m);

/* The coverage of the run open as run, from log (open). */
int ust__report_coverage(ust_run *run, ust_log *log, ust_coverage *out, char **err);
/* The same counted on a thread, from the log at log_path (which opened),
 * while the report reads the rest: *out to wait for. */
int ust__report_coverage_start(ust_run *run, const char *log_path,
                               ust__report_coverage_job **out, char **err);
/* Waits for the count and frees j: 0 with *out and *counted 1, or the
 * count's error (with *err; *counted 0). A NULL j: 0, *counted 0. */
int ust__report_coverage_finish(ust__report_coverage_job *j, ust_coverage *out,
                                int *counted, char **err);

/* The coverage sections of index.html and summary.md (coverage_sections.c),
 * and summary.json. */
void ust__report_write_coverage_html(FILE *f, const ust__report_model *m);
void ust__report_write_coverage_markdown(FILE *f, const ust__report_model *m);
int ust__report_write_summary_json(const ust__report_model *m, const char *path,
                                   char **err);

int ust__report_write_html(const ust__report_model *m, const char *path, char **err);
/* An HTML page's start, to its <body>: the report's style and policy (no
 * script), titled title and then subject (escaped; NULL: none). */
void ust__report_html_head(FILE *f, const char *title, const char *subject);
int ust__report_write_markdown(const ust__report_model *m, const char *path,
                               char **err);

#endif
