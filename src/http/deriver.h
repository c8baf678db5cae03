/* Derivation of recorded requests, in batches on libuv's thread pool:
 * loop -> pool -> writer in one hop a batch, however many requests it
 * holds, and in the order they were read. */
#ifndef UST_HTTP_DERIVER_H
#define UST_HTTP_DERIVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "http/metrics.h"
#include "http/queue.h"

/* Batches on the pool at once: libuv's default pool size. */
#define UST__DERIVE_IN_FLIGHT 4

typedef struct ust__derive_batch {
    uv_work_t work;
    struct ust__deriver *d;
    ust__job *jobs;
    size_t n;
    uint64_t ticket; /* its place in the order batches were made */
    int busy;        /* made, not yet handed on */
    int derived;     /* on the pool: derived, waiting for an earlier batch */
    int returned;    /* on the loop: its work request is done */
} ust__derive_batch;

typedef struct ust__deriver {
    /* set by the caller before init */
    uv_loop_t *loop;
    ust__metrics *metrics;      /* the sampled out, by route */
    ust__sink store;            /* derived, to be stored (the writer) */
    ust__sink skip;             /* sampled out: answered, never stored */
    void (*drained)(void *ctx); /* on the loop, after a batch was handed on */
    int keep_sent;              /* --respond upstream: each job's sent (queue.h) */
    void *ctx;
    /* the deriver's own; owed is read on the loop */
    size_t owed;         /* jobs added, not yet handed on */
    uv_check_t turn_end; /* started while pending holds jobs */
    ust__job *pending, *pending_last;
    size_t pending_n;
    ust__derive_batch batches[UST__DERIVE_IN_FLIGHT];
    pthread_mutex_t mu; /* the hand-off: next_out and each batch's derived */
    uint64_t next_ticket, next_out;
} ust__deriver;

/* 0, or UST_ENOMEM. Its handle is on the loop from here on. */
int ust__deriver_init(ust__deriver *d);
/* On the loop, once nothing is owed: its handle closed. */
void ust__deriver_close(ust__deriver *d);
/* After the loop closed. */
void ust__deriver_destroy(ust__deriver *d);
/* On the loop: job (its req, route_index and cfg set) is derived with the
 * others read in this loop turn, at its end when a batch is free, else
 * with those read until one is. */
void ust__deriver_add(ust__deriver *d, ust__job *job);

#endif
