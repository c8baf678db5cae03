/* The live runner: the replay runner on its own thread, woken as events
 * commit; what it decides feeds /metrics and /healthz. */
#ifndef UST_HTTP_FOLLOWER_H
#define UST_HTTP_FOLLOWER_H

#include <stdatomic.h>
#include <understudy/run.h>
#include <understudy/runner.h>

#include "http/health.h"
#include "http/metrics.h"
#include "http/say.h"

typedef struct ust__follower {
    /* set by the caller before open */
    ust_replay_opts runner_opts; /* cfg, paths, divergences; the rest is ours */
    int respond_legacy;          /* follow RUN.answers' legacy decisions */
    ust__metrics *metrics;
    ust__health *health;
    ust__class_counts *classes; /* the run's divergences by class */
    ust__logger log;
    /* The runner's committed cursor, for retention (with --respond legacy it
     * never passes the answers' cursor either). */
    atomic_llong decided;
    /* the follower's own */
    ust_runner *runner;
    ust_run_counts *counts;
    int64_t counted; /* classes counted through this seq */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int64_t wanted;
    /* The commit rate (monotonic µs): the events since window_from's
     * commit, counted from window_us; the recorder is busy until then. */
    int64_t window_us, window_from, busy_until_us;
    int waiting;            /* for a commit: a notify wakes it */
    pthread_cond_t done_cv; /* the thread has ended */
    int done;
    atomic_int runner_stop; /* the step in progress ends at its next batch */
} ust__follower;

/* Opens the runner, its plugins started (before the server listens), and
 * counts the run's divergences so far. */
int ust__follower_open(ust__follower *f, char **err);
/* Runs it on its thread. */
int ust__follower_start(ust__follower *f, char **err);
/* Events through seq are durable (and answered): a step is due. */
void ust__follower_notify(ust__follower *f, int64_t seq);
/* Lets the runner catch up for a bounded time, then stop, and closes it; 1
 * when it did not stop in time: it is left running (nothing freed), and
 * the process must end without it. */
int ust__follower_stop(ust__follower *f);

/* Seconds a stop gives the runner to catch up, then more to end its batch. */
#define UST__STOP_CATCH_UP_MS 5000
#define UST__STOP_GRACE_MS 5000

#endif
