/* The live runner: the replay runner kept open on its own thread, stepping
 * whenever the writer reports a commit (and every so often regardless), so
 * legacy and candidate decide each event soon after it is durable, off the
 * request path. After a restart it resumes from the run's cursor. */
#include "http/http_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/priority.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A stop lets the runner decide for STOP_CATCH_UP_MS, then tells it to end
 * its step at the next batch boundary (committing what it decided) and
 * waits STOP_GRACE_MS more; a runner still in a decide then (a candidate
 * slow or hung within its timeout) is left behind: the process exits with
 * the run's cursor at its last commit, and the next start resumes there. */
#define STOP_CATCH_UP_MS 5000
#define STOP_GRACE_MS 5000

/* Events per step: a short read of the log, even at background priority. */
#define FOLLOWER_STEP_EVENTS 512
/* After a failed step: a pause before the next try, doubling to the cap, so
 * a lasting fault (a full disk) is retried, not spun on. */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 30000

/* ms from now, for pthread_cond_timedwait. */
static struct timespec in_ms(long ms)
{
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L)
        at.tv_sec++, at.tv_nsec -= 1000000000L;
    return at;
}

/* Waits until the server stops or ms pass (called with follow_mu held). */
static void pause_ms(ust__server *s, long ms)
{
    struct timespec until = in_ms(ms);
    while (!s->follow_stop &&
           pthread_cond_timedwait(&s->follow_cv, &s->follow_mu, &until) == 0)
        ;
}

static void *follower_main(void *arg)
{
    ust__server *s = arg;
    ust_background_thread(); /* first: a thread named ust-runner is at nice 10 */
    ust_name_thread("ust-runner");
    long retry_ms = 0; /* 0: the last step went well */
    for (;;) {
        pthread_mutex_lock(&s->follow_mu);
        if (retry_ms > 0) {
            pause_ms(s, retry_ms);
        } else if (!s->follow_stop &&
                   s->follow_wanted <= ust_runner_cursor(s->runner)) {
            struct timespec until = in_ms(200); /* or sooner, on a commit */
            pthread_cond_timedwait(&s->follow_cv, &s->follow_mu, &until);
        }
        int stop = s->follow_stop;
        pthread_mutex_unlock(&s->follow_mu);
        ust_replay_stats st;
        char *err = NULL;
        int rc = ust_runner_step(s->runner, &st, &err);
        ust__health_stepped(s, rc, err, ust_runner_cursor(s->runner),
                            ust_runner_candidate_down(s->runner));
        if (rc != 0) {
            /* The recorder keeps recording; the runner tries again later and
             * resumes from its cursor, so nothing is skipped. */
            retry_ms = retry_ms ? retry_ms * 2 : RETRY_FIRST_MS;
            if (retry_ms > RETRY_MAX_MS)
                retry_ms = RETRY_MAX_MS;
            fprintf(stderr, "understudy: runner: %s (trying again in %ld ms)\n",
                    err ? err : "step failed", retry_ms);
            ust_free(err);
        } else {
            retry_ms = 0;
            atomic_fetch_add(&s->metrics.runner_events, st.events);
            atomic_fetch_add(&s->metrics.divergences, st.divergences);
        }
        atomic_store(&s->metrics.runner_seq, ust_runner_cursor(s->runner));
        atomic_store(&s->decided_seq, ust_runner_cursor(s->runner));
        /* After the writer stopped: steps until one ends short of its bound,
         * at the end of the log, or until the stop's time is up. */
        if (stop && (rc != 0 || st.events < FOLLOWER_STEP_EVENTS ||
                     atomic_load(&s->runner_stop)))
            break;
    }
    pthread_mutex_lock(&s->follow_mu);
    s->follow_done = 1;
    pthread_cond_broadcast(&s->follow_done_cv);
    pthread_mutex_unlock(&s->follow_mu);
    return NULL;
}

/* Events a run left undecided before this start: the runner's lag counts
 * from the arrival of the first of them (best effort: /healthz then only
 * misses a lag it would have named). */
static void seed_pending(ust__server *s, int64_t cursor)
{
    int64_t head = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_log *log = NULL;
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    /* A connection of its own: the writer's (s->log) belongs to the writer
     * thread, which is running (a retention pass may be using it). */
    if (ust_log_open(s->o->log_path, UST_LOG_READONLY, &log, NULL) != 0)
        return;
    if (ust_log_head(log, &head, hex, NULL) != 0 || head <= cursor ||
        ust_log_cursor_open(log, cursor, &cur, NULL) != 0) {
        ust_log_close(log);
        return;
    }
    if (ust_log_cursor_next(cur, &rec, NULL) == 1) {
        ust__health_appended(s, 0, NULL, head, rec.req.received_at_us);
        atomic_store(&s->metrics.last_seq, head);
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
}

int ust__follower_open(ust__server *s, char **err)
{
    s->runner_opts.cfg = s->o->cfg;
    s->runner_opts.log_path = s->o->log_path;
    s->runner_opts.run_path = s->o->run_path;
    s->runner_opts.legacy_path = s->o->legacy_path;
    s->runner_opts.candidate_path = s->o->candidate_path;
    s->runner_opts.divergences = s->o->divergences;
    char *answers = s->o->respond_legacy ? ust__answers_path(s->o->run_path) : NULL;
    s->runner_opts.legacy_answers = answers;
    s->runner_opts.background = 1;
    s->runner_opts.step_events = FOLLOWER_STEP_EVENTS;
    s->runner_opts.stop = &s->runner_stop;
    s->runner_opts.legacy_decide = &s->metrics.legacy_decide;
    s->runner_opts.candidate_decide = &s->metrics.candidate_decide;
    int rc = ust_runner_open(&s->runner_opts, &s->runner, err);
    if (rc != 0) {
        ust_free(answers);
        s->runner_opts.legacy_answers = NULL;
        return rc;
    }
    atomic_store(&s->metrics.runner_seq, ust_runner_cursor(s->runner));
    atomic_store(&s->decided_seq, ust_runner_cursor(s->runner));
    seed_pending(s, ust_runner_cursor(s->runner));
    pthread_mutex_init(&s->follow_mu, NULL);
    pthread_cond_init(&s->follow_cv, NULL);
    pthread_cond_init(&s->follow_done_cv, NULL);
    return 0;
}

/* The runner closed, with what it holds beyond the server. */
static void close_runner(ust__server *s)
{
    ust_runner_close(s->runner);
    s->runner = NULL;
    ust_free((char *)s->runner_opts.legacy_answers);
    s->runner_opts.legacy_answers = NULL;
}

int ust__follower_start(ust__server *s, char **err)
{
    if (pthread_create(&s->follower, NULL, follower_main, s) != 0) {
        close_runner(s);
        return ust_errf(err, UST_ENOMEM, "cannot start the runner thread");
    }
    s->follower_started = 1;
    return 0;
}

void ust__follower_notify(ust__server *s, int64_t seq)
{
    if (!s->follower_started)
        return;
    pthread_mutex_lock(&s->follow_mu);
    if (seq > s->follow_wanted)
        s->follow_wanted = seq;
    pthread_cond_signal(&s->follow_cv);
    pthread_mutex_unlock(&s->follow_mu);
}

/* Waits (follow_mu held) until the follower thread ended or ms passed. */
static int wait_done(ust__server *s, long ms)
{
    struct timespec until = in_ms(ms);
    while (!s->follow_done &&
           pthread_cond_timedwait(&s->follow_done_cv, &s->follow_mu, &until) == 0)
        ;
    return s->follow_done;
}

int ust__follower_stop(ust__server *s)
{
    if (!s->follower_started) {
        if (s->runner != NULL) /* opened, the server did not start */
            close_runner(s);
        return 0;
    }
    pthread_mutex_lock(&s->follow_mu);
    s->follow_stop = 1;
    pthread_cond_signal(&s->follow_cv);
    int done = wait_done(s, STOP_CATCH_UP_MS);
    if (!done) {
        atomic_store(&s->runner_stop, 1);
        pthread_cond_signal(&s->follow_cv);
        fprintf(stderr,
                "understudy: runner: still deciding after %d s: it stops at the end"
                " of its batch\n",
                STOP_CATCH_UP_MS / 1000);
        done = wait_done(s, STOP_GRACE_MS);
    }
    pthread_mutex_unlock(&s->follow_mu);
    if (!done)
        return 1; /* its thread still uses the runner: nothing is freed */
    pthread_join(s->follower, NULL);
    s->follower_started = 0;
    close_runner(s);
    if (!s->writer_started) { /* the writer left the log to close after us */
        ust_log_close(s->log);
        s->log = NULL;
    }
    return 0;
}

_Noreturn void ust__follower_abandon(ust__server *s)
{
    /* Like a kill at this moment, which the run survives: its transaction
     * holds decisions, state and cursor together, and an uncommitted one is
     * discarded when the run database is next opened. The plugins' child
     * processes die with the process (see child.c). The writer is done, so
     * the log is closed as on any stop (its head recorded, the WAL
     * checkpointed), but the runner's read of the log may hold the
     * checkpoint back: then the -wal must stay beside the .db, and this says
     * so. */
    fprintf(stderr,
            "understudy: runner: still in a decide after %d s more: exiting without"
            " it; the next start resumes after seq %lld\n",
            STOP_GRACE_MS / 1000, (long long)atomic_load(&s->metrics.runner_seq));
    if (ust_log_close(s->log) != 0)
        fprintf(stderr,
                "understudy: %s-wal still holds events that %s does not: keep the two"
                " files together (the next start takes the -wal in)\n",
                s->o->log_path, s->o->log_path);
    s->log = NULL;
    _exit(0);
}
