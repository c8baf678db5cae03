/* The live runner: the replay runner kept open on its own thread, stepping
 * whenever the writer reports a commit (and every so often regardless), so
 * legacy and candidate decide each event soon after it is durable, off the
 * request path. After a restart it resumes from the run's cursor. */
#include "http/follower.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/priority.h>
#include <understudy/runner.h>

#include <string.h>
#include <time.h>

/* A stop lets the runner decide for STOP_CATCH_UP_MS, then tells it to end
 * its step at the next batch boundary (committing what it decided) and
 * waits STOP_GRACE_MS more; a runner still in a decide then (a candidate
 * slow or hung within its timeout) is left behind: the process exits with
 * the run's cursor at its last commit, and the next start resumes there. */
#define STOP_CATCH_UP_MS UST__STOP_CATCH_UP_MS
#define STOP_GRACE_MS UST__STOP_GRACE_MS

/* Events per step: a short read of the log, even at background priority. */
#define FOLLOWER_STEP_EVENTS 512
/* After a failed step: a pause before the next try, doubling to the cap, so
 * a lasting fault (a full disk) is retried, not spun on. */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 30000

/* While the recorder is busy (BUSY_EVENTS committed within BUSY_MS, and
 * for BUSY_MS after), the runner leaves it the CPU, for as long as the
 * oldest event it owes arrived less than DEFER_SHARE of health.max_lag_s
 * ago (30 s by default): a burst is recorded at full speed and decided
 * after it, and under load that lasts the runner decides as before, its lag
 * held near that bound, far below the one /healthz names. On two cores, the
 * runner with its candidate takes about a third of the CPU a recorded
 * request costs. */
#define BUSY_MS 100
#define BUSY_EVENTS 100
#define DEFER_SHARE 10 /* a tenth */

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

/* Waits until the server stops or ms pass (called with mu held). */
static void pause_ms(ust__follower *f, long ms)
{
    struct timespec until = in_ms(ms);
    while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
        ;
}

/* How long the runner should still wait before its step, having waited
 * since since_us (monotonic) already; 0: step now (called with mu held). */
static long defer_ms(ust__follower *f, int64_t cursor, int64_t since_us)
{
    if (f->stop || f->wanted <= cursor)
        return 0;
    int64_t busy_until = f->busy_until_us;
    int64_t now = ust_time_mono_us();
    if (now >= busy_until)
        return 0;
    int64_t oldest = ust__health_oldest_undecided_us(f->health, cursor);
    if (oldest == 0)
        return 0;
    int64_t bound = f->runner_opts.cfg->health.max_lag_s * 1000000 / DEFER_SHARE;
    /* The lag is at least the wait itself: arrival times are wall clock
     * (a clock stepped back, or a backlog stamped by a clock ahead, would
     * make them look newer than now), and the wait never outlasts the
     * bound it is held to. */
    int64_t lag = ust_time_wall_us() - oldest;
    if (lag < now - since_us)
        lag = now - since_us;
    if (lag >= bound)
        return 0;
    int64_t wait = busy_until - now < bound - lag ? busy_until - now : bound - lag;
    return (long)(wait / 1000) + 1;
}

static void add_class(void *ctx, const char *cls, int64_t n)
{
    ust__class_counts_add(ctx, cls, n);
}

/* The classes of what the runner committed since the last count (a failed
 * step may have committed some batches too). A count that cannot be read
 * marks the list partial for good: it would never agree again. */
static void count_classes(ust__follower *f, int64_t cursor, int none_new)
{
    if (cursor <= f->counted)
        return;
    if (!none_new) {
        char *err = NULL;
        if (f->counts == NULL ||
            ust_run_counts_classes(f->counts, f->counted, cursor, add_class, f->classes,
                                   &err) != 0) {
            ust__class_counts_partial(f->classes);
            if (err != NULL)
                ust__say(&f->log, UST_LOG_WARN, "metrics: %s", err);
            ust_free(err);
        }
    }
    f->counted = cursor;
}

static void *follower_main(void *arg)
{
    ust__follower *f = arg;
    ust_background_thread(); /* first: a thread named ust-runner is at nice 10 */
    ust_name_thread("ust-runner");
    long retry_ms = 0; /* 0: the last step went well */
    for (;;) {
        pthread_mutex_lock(&f->mu);
        if (retry_ms > 0) {
            pause_ms(f, retry_ms);
        } else if (!f->stop && f->wanted <= ust_runner_cursor(f->runner)) {
            struct timespec until = in_ms(200); /* or sooner, on a commit */
            f->waiting = 1;
            pthread_cond_timedwait(&f->cv, &f->mu, &until);
            f->waiting = 0;
        }
        int64_t since_us = ust_time_mono_us();
        for (long ms; (ms = defer_ms(f, ust_runner_cursor(f->runner), since_us)) > 0;)
            pause_ms(f, ms);
        int stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        ust_replay_stats st;
        char *err = NULL;
        int rc = ust_runner_step(f->runner, &st, &err);
        int64_t cursor = ust_runner_cursor(f->runner);
        ust__health_stepped(f->health, rc, err, cursor,
                            ust_runner_candidate_down(f->runner));
        if (rc != 0) {
            /* The recorder keeps recording; the runner tries again later and
             * resumes from its cursor, so nothing is skipped. */
            retry_ms = retry_ms ? retry_ms * 2 : RETRY_FIRST_MS;
            if (retry_ms > RETRY_MAX_MS)
                retry_ms = RETRY_MAX_MS;
            ust__say(&f->log, UST_LOG_ERROR, "runner: %s (trying again in %ld ms)",
                     err ? err : "step failed", retry_ms);
            ust_free(err);
        } else {
            retry_ms = 0;
            atomic_fetch_add(&f->metrics->runner_events, st.events);
            atomic_fetch_add(&f->metrics->divergences, st.divergences);
        }
        count_classes(f, cursor, rc == 0 && st.divergences == 0);
        atomic_store(&f->metrics->runner_seq, cursor);
        atomic_store(&f->metrics->state_cache_bytes,
                     (long long)ust_runner_state_cache_bytes(f->runner));
        atomic_store(&f->decided, cursor);
        /* After the writer stopped: steps until one ends short of its bound,
         * at the end of the log, or until the stop's time is up. */
        if (stop && (rc != 0 || st.events < FOLLOWER_STEP_EVENTS ||
                     atomic_load(&f->runner_stop)))
            break;
    }
    pthread_mutex_lock(&f->mu);
    f->done = 1;
    pthread_cond_broadcast(&f->done_cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Events a run left undecided before this start: the runner's lag counts
 * from the arrival of the first of them (best effort: /healthz then only
 * misses a lag it would have named). */
static void seed_pending(ust__follower *f, int64_t cursor)
{
    int64_t head = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_log *log = NULL;
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    /* A connection of its own: the writer's belongs to the writer thread,
     * which is running (a retention pass may be using it). */
    if (ust_log_open(f->runner_opts.log_path, UST_LOG_READONLY, &log, NULL) != 0)
        return;
    if (ust_log_head(log, &head, hex, NULL) != 0 || head <= cursor ||
        ust_log_cursor_open(log, cursor, &cur, NULL) != 0) {
        ust_log_close(log);
        return;
    }
    if (ust_log_cursor_next(cur, &rec, NULL) == 1) {
        ust__health_appended(f->health, 0, NULL, head, rec.req.received_at_us);
        atomic_store(&f->metrics->last_seq, head);
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
}

int ust__follower_open(ust__follower *f, char **err)
{
    ust_replay_opts *ro = &f->runner_opts;
    char *answers = f->respond_legacy ? ust_answers_path(ro->run_path) : NULL;
    if (f->respond_legacy && answers == NULL)
        return UST_ENOMEM;
    ro->legacy_answers = answers;
    ro->background = 1;
    ro->step_events = FOLLOWER_STEP_EVENTS;
    ro->stop = &f->runner_stop;
    ro->legacy_decide = &f->metrics->legacy_decide;
    ro->candidate_decide = &f->metrics->candidate_decide;
    int rc = ust_runner_open(ro, &f->runner, err);
    if (rc != 0) {
        ust_free(answers);
        ro->legacy_answers = NULL;
        return rc;
    }
    int64_t cursor = ust_runner_cursor(f->runner);
    atomic_store(&f->metrics->runner_seq, cursor);
    atomic_store(&f->decided, cursor);
    /* The counts of a resumed run, once; then each step's (count_classes). */
    char *cerr = NULL;
    if (ust_run_counts_open(ro->run_path, &f->counts, &cerr) != 0) {
        ust__say(&f->log, UST_LOG_WARN, "metrics: %s", cerr ? cerr : "run database");
        ust_free(cerr);
    }
    f->counted = 0;
    count_classes(f, cursor, 0);
    seed_pending(f, cursor);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    pthread_cond_init(&f->done_cv, NULL);
    return 0;
}

/* The runner closed, with what it holds beyond the server. */
static void close_runner(ust__follower *f)
{
    ust_runner_close(f->runner);
    f->runner = NULL;
    ust_run_counts_close(f->counts);
    f->counts = NULL;
    ust_free((char *)f->runner_opts.legacy_answers);
    f->runner_opts.legacy_answers = NULL;
}

int ust__follower_start(ust__follower *f, char **err)
{
    if (pthread_create(&f->thread, NULL, follower_main, f) != 0) {
        close_runner(f);
        return ust_errf(err, UST_ENOMEM, "cannot start the runner thread");
    }
    f->started = 1;
    return 0;
}

void ust__follower_notify(ust__follower *f, int64_t seq)
{
    if (!f->started)
        return;
    pthread_mutex_lock(&f->mu);
    int64_t now = ust_time_mono_us();
    if (now - f->window_us >= BUSY_MS * 1000) {
        f->window_us = now;
        f->window_from = f->wanted;
    }
    if (seq - f->window_from >= BUSY_EVENTS)
        f->busy_until_us = now + BUSY_MS * 1000;
    if (seq > f->wanted)
        f->wanted = seq;
    if (f->waiting) /* not while it defers: each commit would wake it */
        pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Waits (mu held) until the follower thread ended or ms passed. */
static int wait_done(ust__follower *f, long ms)
{
    struct timespec until = in_ms(ms);
    while (!f->done && pthread_cond_timedwait(&f->done_cv, &f->mu, &until) == 0)
        ;
    return f->done;
}

int ust__follower_stop(ust__follower *f)
{
    if (!f->started) {
        if (f->runner != NULL) /* opened, the server did not start */
            close_runner(f);
        return 0;
    }
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    int done = wait_done(f, STOP_CATCH_UP_MS);
    if (!done) {
        atomic_store(&f->runner_stop, 1);
        pthread_cond_signal(&f->cv);
        ust__say(&f->log, UST_LOG_WARN,
                 "runner: still deciding after %d s: it stops at the end of its batch",
                 STOP_CATCH_UP_MS / 1000);
        done = wait_done(f, STOP_GRACE_MS);
    }
    pthread_mutex_unlock(&f->mu);
    if (!done)
        return 1; /* its thread still uses the runner: nothing is freed */
    pthread_join(f->thread, NULL);
    f->started = 0;
    close_runner(f);
    return 0;
}
