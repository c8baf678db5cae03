/* What a report shows, gathered from a run database with every list capped,
 * so memory stays bounded whatever the run's size. */
#ifndef UST_REPORT_MODEL_H
#define UST_REPORT_MODEL_H

#include <jansson.h>
#include <stdio.h>
#include <stdint.h>

#include <understudy/report.h>

/* Verdict columns of the matrix: 0 is "not fed", 1..7 the verdicts. */
#define RP_VERDICTS 8

typedef struct rp_row {
    int64_t seq, at;
    char *event_type, *lv, *ls, *cv, *cs;
    int diverged, follow_on;
} rp_row;

typedef struct rp_timeline {
    char *entity;
    rp_row *rows;
    size_t n;
    int truncated;
} rp_timeline;

typedef struct rp_example {
    int64_t seq;
    json_t *divergence; /* the divergence line, redacted */
    json_t *request; /* the raw request from the log, redacted; NULL if unavailable */
} rp_example;

typedef struct rp_class {
    char *name;
    int64_t count, first_at, last_at, follow_ons;
    json_t *field_sets; /* distinct "fields" arrays, at most 5 */
    const ust_triage_entry *accepted;
    rp_example *examples;
    size_t n_examples;
    rp_timeline *timelines;
    size_t n_timelines;
    int64_t *buckets; /* divergences per time bucket */
} rp_class;

typedef struct rp_model {
    json_t *meta;
    json_t *redact;
    int64_t events, fed, divergences, follow_ons;
    json_t *by_route, *by_signature;
    int64_t matrix[RP_VERDICTS][RP_VERDICTS];
    rp_class *classes; /* by count, descending; detailed up to the cap */
    size_t n_classes, n_detailed;
    ust_gate_result gate; /* the verdict: the gate's judgement of the run */
    int64_t first_at, last_at, bucket_us;
    size_t n_buckets;
    int64_t *total_buckets;
} rp_model;

int rp_model_load(const ust_report_opts *o, rp_model *m, char **err);
void rp_model_clear(rp_model *m);

/* Index in the matrix of a verdict name (0 for NULL or unknown). */
int rp_verdict_index(const char *name);
const char *rp_verdict_label(int index);

/* Writes s with each character that replace() maps to a string written as
 * that string instead (NULL, or no replace: the character as it is), and each
 * bidi control as bidi_format with its code point (one unsigned argument). */
void rp_put_escaped(FILE *f, const char *s, const char *(*replace)(char c),
                    const char *bidi_format);

/* How HTML and Markdown show a bidi control: visible, and inert. */
#define RP_BIDI_VISIBLE "{U+%04X}"

int rp_write_html(const rp_model *m, const char *path, char **err);
int rp_write_markdown(const rp_model *m, const char *path, char **err);

#endif
