/* What a report shows, gathered from a run database with every list capped,
 * so memory stays bounded whatever the run's size. */
#ifndef UST_REPORT_MODEL_H
#define UST_REPORT_MODEL_H

#include <jansson.h>
#include <stdio.h>
#include <stdint.h>

#include "report/escape.h"
#include "report/event.h"

#include <understudy/report.h>
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
    int64_t *buckets; /* divergences per time bucket */
} ust__report_class;

typedef struct ust__report_model {
    json_t *meta;
    json_t *redact;
    int64_t events, fed, divergences, follow_ons;
    json_t *by_route, *by_signature;
    int64_t matrix[UST__REPORT_VERDICTS][UST__REPORT_VERDICTS];
    ust__report_class *classes; /* by count, descending; detailed up to the cap */
    size_t n_classes, n_detailed;
    ust_gate_result gate; /* the verdict: the gate's judgement of the run */
    int64_t first_at, last_at, bucket_us;
    size_t n_buckets;
    int64_t *total_buckets;
} ust__report_model;

/* ust_gate_check on a run already open (the report reads its verdict and
 * its model from one connection). */
int ust__gate_judge(ust_run *run, const char *run_path, const char *log_path,
                    const ust_triage *t, ust_gate_result *res, char **err);

int ust__report_model_load(const ust_report_opts *o, ust__report_model *m, char **err);
/* The event log of the report (o's, else the one the run names), for the
 * requests of the events shown: *out NULL when it cannot be opened. */
int ust__report_log_open(ust_run *run, const ust_report_opts *o, ust_log **out,
                         char **err);
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
/* Each stale triage entry of the gate: before, its class glob, between, its
 * owner, after (the texts escaped through replace). */
void ust__report_put_stale(FILE *f, const ust_gate_result *gate,
                           const char *const *replace, const char *before,
                           const char *between, const char *after);

int ust__report_write_html(const ust__report_model *m, const char *path, char **err);
/* An HTML page's start, to its <body>: the report's style and policy (no
 * script), titled title and then subject (escaped; NULL: none). */
void ust__report_html_head(FILE *f, const char *title, const char *subject);
int ust__report_write_markdown(const ust__report_model *m, const char *path,
                               char **err);

#endif
