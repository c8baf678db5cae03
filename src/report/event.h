/* One event as a reviewer reads it: the divergence (both decisions and the
 * diff), the request as it arrived with its derived fields (and a recorded
 * answer), and the story of its entity. The report's pages and `understudy
 * show` both render this one model. */
#ifndef UST_REPORT_EVENT_H
#define UST_REPORT_EVENT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/log.h>
#include <understudy/run.h>

/* One event of the entity's story, in seq order. event_id and currency
 * (NULL when absent) and the amount come from the log: all three absent
 * without it. */
typedef struct ust__report_story_row {
    int64_t seq, at;
    char *event_type, *lv, *ls, *cv, *cs;
    int diverged, follow_on;
    char *event_id, *currency;
    int64_t amount;
    int has_amount;
} ust__report_story_row;

/* A name and a value to show (a header, a derived field). */
typedef struct ust__report_pair {
    char *name, *value;
} ust__report_pair;

/* A request's or an answer's headers and body, masked by the run's
 * redaction rules. */
typedef struct ust__report_message {
    ust__report_pair *headers; /* in arrival order, duplicates kept */
    size_t n_headers;
    char *header_text; /* the bytes the pairs point into */
    size_t body_len;
    /* The body as it arrived, when it is UTF-8 text without NUL bytes
     * (text), else its bytes in base64; neither when a redaction rule
     * masked a field of it (withheld: a raw body cannot be partly masked
     * safely) or it is empty. */
    char *text, *base64;
    int withheld;
    json_t *pretty; /* the body parsed, masked, shown indented; NULL when not JSON */
} ust__report_message;

/* The earlier transaction a semantic duplicate repeats (seq 0: none
 * found): the last one before it the candidate moved to paid (an api
 * route: executed) with the same intent, amount and currency, searched at
 * most a day back. */
typedef struct ust__report_repeat {
    int64_t seq, at;
    char *identity;
} ust__report_repeat;

typedef struct ust__report_event {
    int64_t seq;
    json_t *divergence; /* the divergence line, redacted; NULL: it did not diverge */
    char *entity;       /* NULL when the event has none */
    ust__report_story_row *story;
    size_t n_story;
    int story_truncated;
    /* The event as the run decided it (its verdicts and states). */
    ust__report_story_row self;
    /* The request from the log (has_request 0: the log was not available
     * or does not hold the seq). */
    int has_request;
    char *method, *target, *remote;
    int64_t received_at;
    ust__report_message req;
    ust__report_pair *derived; /* the log record's derived fields, in order */
    size_t n_derived;
    int response_status; /* the recorded answer; 0: none */
    ust__report_message resp;
    ust__report_repeat repeats; /* a semantic duplicate's earlier transaction */
} ust__report_event;

/* The run's redaction rules (its "redact" meta, a JSON array: empty when
 * none), in *out. 0, or <0 with *err. */
int ust__report_redact_rules(ust_run *run, json_t **out, char **err);

/* The event log the run read: log_path, else the one its metadata names,
 * opened read-only; *out NULL (and 0 returned) when it cannot be opened,
 * *path (may be NULL) the path tried, ust_malloc'd, NULL when none. <0 with
 * *err when the run cannot be read. */
int ust__report_open_log(ust_run *run, const char *log_path, ust_log **out, char **path,
                         char **err);

/* Loads the event at seq from the run (and the log it read, NULL when it
 * cannot be opened: the request is then missing), its bodies and headers
 * masked by redact (the run's rules, a JSON array). 1 when the run has the
 * event, 0 when not, <0 with *err. */
int ust__report_event_load(ust_run *run, ust_log *log, const json_t *redact,
                           int64_t seq, ust__report_event *out, char **err);
void ust__report_event_clear(ust__report_event *e);

/* The event as one HTML fragment (every outside string escaped); open: its
 * details start unfolded. */
void ust__report_event_html(FILE *f, const ust__report_event *e, int open);

/* The event as plain text for a terminal (understudy show): every outside
 * string with its control characters escaped. */
void ust__report_event_text(FILE *f, const ust__report_event *e);

/* A JSON value as compact text (strings quoted), ust_free'd; NULL for NULL. */
char *ust__report_json_compact(const json_t *v);

#endif
