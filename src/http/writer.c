/* The writer thread: group commit. It takes every request queued since its
 * last commit (up to a batch; derived already, on libuv's thread pool, so
 * JSON parsing runs on every core) and appends them in one transaction with
 * synchronous=FULL, and only then hands them back to the loop to be
 * answered: nothing is acknowledged before it is on disk. */
#include "http/writer.h"

#include <understudy/priority.h>
#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <string.h>

static void commit_batch(ust__writer *w, ust__job *batch, size_t n)
{
    ust_log_record *recs = w->recs;
    ust__job *j = batch;
    int rc = 0;
    char *err = NULL;
    for (size_t i = 0; i < n; i++, j = j->next) {
        recs[i] = j->rec; /* shallow: the jobs keep ownership */
        if (j->derive_rc != 0 && rc == 0)
            rc = ust_errf(&err, j->derive_rc, "cannot derive the event: %s",
                          ust_strerror(j->derive_rc));
    }
    int64_t first = 0, t0 = ust_time_mono_us();
    if (rc == 0)
        rc = ust_log_append(w->db, recs, n, &first, &err);
    int64_t took = ust_time_mono_us() - t0;
    ust__metrics *m = w->metrics;
    ust__job *last = batch;
    j = batch;
    for (size_t i = 0; i < n; i++, j = j->next) {
        last = j;
        if (rc == 0) {
            j->seq = first + (int64_t)i;
            j->sig = j->rec.sig;
            if (j->route_index < UST__MAX_ROUTES && j->sig < UST__SIG_STATES)
                atomic_fetch_add(&m->recorded[j->route_index][j->sig], 1);
        } else {
            j->failure = ust_strdup(err ? err : ust_strerror(rc));
        }
    }
    if (rc == 0) {
        ust_histogram_observe(&m->commit_us, took);
        ust_histogram_observe(&m->batch_events, (int64_t)n);
        atomic_store(&m->last_seq, first + (int64_t)n - 1);
    } else {
        atomic_fetch_add(&m->append_failures, 1);
    }
    ust__health_appended(w->health, rc, err, first + (int64_t)n - 1,
                         batch->req.received_at_us);
    ust_free(err);
    w->out.put(w->out.ctx, batch, last, rc == 0 ? first + (int64_t)n - 1 : 0);
}

/* Retention: the rows older than keep go, on this thread and connection,
 * between two batches, so a prune never runs beside an append. Age is by
 * the wall clock, as received_at is: retention is operational, decisions
 * still go by event time. */
static void retention_pass(ust__writer *w)
{
    int64_t now = ust_time_wall_us();
    int64_t before = now - w->cfg->retention.keep_us;
    /* Never past what the runner has decided, nor the row at its cursor: a
     * restarted runner checks that row before it resumes. Without a run
     * database there is no runner to wait for. */
    int64_t max_seq = w->decided != NULL ? atomic_load(w->decided) - 1 : INT64_MAX;
    if (max_seq < 1)
        return;
    int64_t n = 0;
    char *err = NULL;
    int rc = ust_log_prune_through(w->db, before, max_seq, now, &n, &err);
    char at[32];
    ust_time_format(before, at);
    if (rc != 0)
        ust__say(&w->log, UST_LOG_WARN,
                 "retention: %s (trying again at the next check)",
                 err ? err : ust_strerror(rc));
    else if (n > 0)
        ust__say(&w->log, UST_LOG_INFO,
                 "retention: pruned %lld events that arrived before %s", (long long)n,
                 at);
    ust_free(err);
}

static void *writer_main(void *arg)
{
    ust__writer *w = arg;
    ust_name_thread("ust-writer");
    int64_t every = w->cfg->retention.keep_us > 0 ? w->cfg->retention.every_us : 0;
    int64_t due = every > 0 ? ust_time_mono_us() + every : INT64_MAX;
    for (;;) {
        /* Checked between batches, so load cannot defer it. */
        if (ust_time_mono_us() >= due) {
            retention_pass(w);
            due = ust_time_mono_us() + every;
        }
        ust__job *batch, *last;
        size_t n;
        int got = ust__jobq_take(&w->in, UST__WRITER_MAX_BATCH, due, &batch, &last, &n);
        if (got < 0)
            break; /* stopping and drained */
        if (got > 0)
            commit_batch(w, batch, n);
    }
    return NULL;
}

int ust__writer_start(ust__writer *w, char **err)
{
    int rc = ust_log_open(w->log_path, UST_LOG_CREATE, &w->db, err);
    if (rc != 0)
        return rc;
    if (ust__jobq_init(&w->in) != 0)
        return ust_errf(err, UST_ENOMEM, "cannot make the writer's queue");
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        ust__jobq_destroy(&w->in);
        return ust_errf(err, UST_ENOMEM, "cannot start the writer thread");
    }
    w->started = 1;
    return 0;
}

void ust__writer_put(ust__writer *w, ust__job *first, ust__job *last)
{
    ust__jobq_put(&w->in, first, last);
}

void ust__writer_stop(ust__writer *w)
{
    if (!w->started)
        return;
    ust__jobq_stop(&w->in);
    pthread_join(w->thread, NULL);
    ust__jobq_destroy(&w->in);
    w->started = 0;
}

int ust__writer_close(ust__writer *w)
{
    int rc = ust_log_close(w->db);
    w->db = NULL;
    return rc;
}
