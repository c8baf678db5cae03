/* --respond legacy: the legacy's decision of each committed job, recorded
 * in RUN.answers before the job goes on to be answered. --respond upstream:
 * the same, the decision read from the service's answer, which is recorded
 * with it and goes on with the job to be sent as it came. */
#ifndef UST_HTTP_RESPONDER_H
#define UST_HTTP_RESPONDER_H

#include "http/health.h"
#include "http/metrics.h"
#include "http/queue.h"
#include "http/say.h"

typedef struct ust__responder ust__responder;

typedef struct ust__responder_opts {
    const ust_config *cfg;
    const char *log_path;    /* read after a restart or a failed batch */
    const char *run_path;    /* the answers are RUN.answers */
    const char *legacy_path; /* NULL: the config's plugins.legacy */
    ust__sink out;           /* decided batches, through their last decided seq */
    ust__metrics *metrics;   /* batches that could not be recorded */
    ust__health *health;     /* the last batch's outcome */
    int upstream;            /* --respond upstream: plugins.legacy is a url */
    ust__logger log;         /* the service's failures, for the operator */
} ust__responder_opts;

/* Opens the answers, the legacy and its store, decides what the log holds
 * beyond the answers' cursor, and starts the thread. o must outlive it. */
int ust__responder_start(const ust__responder_opts *o, ust__responder **out,
                         char **err);
/* A batch the writer committed, to be decided. */
void ust__responder_put(ust__responder *r, ust__job *first, ust__job *last);
/* Drains what was put, ends the thread and frees r (NULL: nothing). */
void ust__responder_stop(ust__responder *r);

#endif
