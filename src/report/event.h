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

/* One event of the entity's story, in seq order. */
typedef struct ust__report_story_row {
    int64_t seq, at;
    char *event_type, *lv, *ls, *cv, *cs;
    int diverged, follow_on;
} ust__report_story_row;

typedef struct ust__report_event {
    int64_t seq;
    json_t *divergence; /* the divergence line, redacted; NULL: it did not diverge */
    json_t *request; /* the raw request from the log, redacted; NULL if unavailable */
    char *entity;    /* NULL when the event has none */
    ust__report_story_row *story;
    size_t n_story;
    int story_truncated;
} ust__report_event;

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

#endif
