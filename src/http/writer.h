/* The writer thread: group commit of recorded requests to the event log. */
#ifndef UST_HTTP_WRITER_H
#define UST_HTTP_WRITER_H

#include <stdatomic.h>

#include "http/health.h"
#include "http/metrics.h"
#include "http/queue.h"
#include "http/say.h"

#define UST__WRITER_MAX_BATCH 1024

typedef struct ust__writer {
    /* set by the caller before start */
    const ust_config *cfg;
    const char *log_path;
    ust__sink out;               /* committed (or failed) batches, in order */
    ust__metrics *metrics;       /* recorded, commit time, batch size, head */
    ust__health *health;         /* the last append's outcome, the commits owed */
    const atomic_llong *decided; /* NULL, or retention's bound: the runner's cursor */
    ust__logger log;
    /* the writer's own */
    ust__jobq in;
    ust_log *db;
    pthread_t thread;
    int started;
    ust_log_record recs[UST__WRITER_MAX_BATCH]; /* one batch, shallow copies */
} ust__writer;

/* Opens (creating) the log and starts the thread. */
int ust__writer_start(ust__writer *w, char **err);
/* Queues the chain first..last, derived, in seq order (from any thread). */
void ust__writer_put(ust__writer *w, ust__job *first, ust__job *last);
/* Drains what was submitted and ends the thread; the log stays open. */
void ust__writer_stop(ust__writer *w);
/* Closes the log (its head recorded, the WAL checkpointed): last, once no
 * runner reads it. Nonzero when a -wal was left beside the log. */
int ust__writer_close(ust__writer *w);

#endif
