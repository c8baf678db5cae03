/* The jobs of recorded requests and the one queue type that carries them
 * between the recorder's threads: loop -> writer -> (responder ->) loop.
 * Each stage hands its finished jobs to a sink, so no stage knows which
 * stage comes after it: server.c wires them. */
#ifndef UST_HTTP_QUEUE_H
#define UST_HTTP_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <understudy/host.h>
#include <understudy/log.h>

/* A recorded request on its way through the threads. */
typedef struct ust__job {
    struct ust__job *next;
    ust_log_record rec; /* derived fields; rec.req borrows req */
    int derive_rc;
    const ust_config *cfg;
    ust_request req;
    struct ust__slot *slot; /* the loop's: where the answer goes */
    int64_t seq;
    ust_sig_status sig;
    char *failure;        /* why the log could not take it, NULL when stored */
    ust_decision *answer; /* --respond legacy: the legacy's decision */
    /* --respond upstream: the service's answer, sent as it came */
    struct ust_http_result *upstream;
    /* --respond upstream: per header of req, the value the client sent
     * where masking (capture.mask_headers) changed the recorded one, else
     * NULL; NULL when none is masked. What is forwarded; never stored. */
    char **sent;
    size_t route_index;
    int sampled_out; /* the route's sample leaves it out: answered, not stored */
} ust__job;

/* Jobs in order, between threads. The condition variable runs on
 * CLOCK_MONOTONIC, so a taker's deadline is ust_time_mono_us's. */
typedef struct ust__jobq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ust__job *head, *tail;
    int stopping;
} ust__jobq;

/* 0, or UST_ENOMEM when the mutex or condition cannot be made. */
int ust__jobq_init(ust__jobq *q);
void ust__jobq_destroy(ust__jobq *q);
/* Appends the chain first..last (last->next is NULL) and wakes the taker. */
void ust__jobq_put(ust__jobq *q, ust__job *first, ust__job *last);
/* Takes up to max jobs (0: every one) as a chain into *first..*last, with
 * their count in *n. Waits while the queue is empty, not stopped, and the
 * monotonic clock (µs) is short of due_us (0: no wait; INT64_MAX: no
 * bound). 1 jobs taken; 0 none (due, or no wait asked); -1 stopped and
 * drained. */
int ust__jobq_take(ust__jobq *q, size_t max, int64_t due_us, ust__job **first,
                   ust__job **last, size_t *n);
/* The taker drains what is queued, then its take returns -1. */
void ust__jobq_stop(ust__jobq *q);

/* Where a stage hands jobs on: put(ctx, first, last, through) with the
 * last seq the chain made durable (and decided, with a responder), 0 when
 * none. */
typedef struct ust__sink {
    void (*put)(void *ctx, ust__job *first, ust__job *last, int64_t through);
    void *ctx;
} ust__sink;

#endif
