/* What /metrics shows, kept in memory: atomics and histograms the loop, the
 * writer, the responder and the runner's thread update as they go, and the
 * divergences by class, counted as the runner commits them. Rendering reads
 * only these: a scrape never waits for a database. */
#ifndef UST_HTTP_METRICS_H
#define UST_HTTP_METRICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/config.h>
#include <understudy/histogram.h>

#define UST__SIG_STATES 5
#define UST__MAX_ROUTES 64

typedef struct ust__metrics {
    atomic_llong recorded[UST__MAX_ROUTES][UST__SIG_STATES];
    atomic_llong append_failures;
    atomic_llong answers_write_failures; /* --respond legacy: batches not recorded */
    atomic_llong last_seq;               /* newest durable seq */
    atomic_llong runner_seq;             /* newest seq the runner decided */
    atomic_llong divergences, runner_events;
    atomic_llong state_cache_bytes;            /* the runner's, after its last step */
    atomic_llong rejected[8];                  /* 400 404 405 408 413 417 431 503 */
    atomic_llong sampled_out[UST__MAX_ROUTES]; /* answered, not recorded */
    /* µs from a request's first byte to its answer written, by route ([0]:
     * no route: refused, /healthz, /metrics) */
    ust_histogram request_us[UST__MAX_ROUTES + 1];
    ust_histogram commit_us;                       /* one fsync'd append transaction */
    ust_histogram batch_events;                    /* events in it */
    ust_histogram legacy_decide, candidate_decide; /* µs an event */
} ust__metrics;

/* The run's divergences by class: the runner's thread adds, a scrape
 * copies (the mutex is held for neither I/O nor a render). */
typedef struct ust__class_counts {
    pthread_mutex_t mu;
    struct ust__class_count {
        char *cls;
        int64_t n;
    } * v;
    size_t n, cap;
    int partial; /* a read failed, or a class found no memory */
} ust__class_counts;

/* The histograms' bounds; once, before any thread observes. */
void ust__metrics_init(ust__metrics *m);
void ust__metrics_rejected(ust__metrics *m, int status);
/* An answer written: its request's time, started_ns (uv_hrtime) to now,
 * under route (its index + 1, 0 for none); nothing when started_ns is 0. */
void ust__metrics_answered(ust__metrics *m, uint64_t started_ns, size_t route);

void ust__class_counts_init(ust__class_counts *c);
void ust__class_counts_destroy(ust__class_counts *c);
void ust__class_counts_add(ust__class_counts *c, const char *cls, int64_t n);
/* The counts are known to miss some divergences (until the process ends). */
void ust__class_counts_partial(ust__class_counts *c);

/* What a render shows beside the metrics: states other parts own. */
typedef struct ust__metrics_view {
    const ust_config *cfg;
    size_t connections;         /* client connections open now */
    size_t owed_bytes;          /* answer bytes owed, not yet written */
    size_t answers_owed;        /* those answers */
    size_t held_back;           /* connections not read for them */
    double lag_seconds;         /* since the oldest undecided event arrived */
    ust__class_counts *classes; /* NULL: no run, the list is empty and whole */
} ust__metrics_view;

/* Prometheus text of the metrics, ust_malloc'd. */
char *ust__metrics_render(ust__metrics *m, const ust__metrics_view *v);

#endif
