/* The writer thread: group commit. It takes every request queued since its
 * last commit (up to a batch; derived already, on libuv's thread pool, so
 * JSON parsing runs on every core) and appends them in one transaction with
 * synchronous=FULL, and only then hands them back to the loop to be
 * answered: nothing is acknowledged before it is on disk. */
#include "http/http_internal.h"

#include <understudy/priority.h>
#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_BATCH 1024

void ust__jobs_done(ust__server *s, ust__job *first, ust__job *last)
{
    pthread_mutex_lock(&s->done_mu);
    if (s->done_tail)
        s->done_tail->next = first;
    else
        s->done_head = first;
    s->done_tail = last;
    pthread_mutex_unlock(&s->done_mu);
    uv_async_send(&s->done_async);
}

static void commit_batch(ust__server *s, ust__job *batch, size_t n)
{
    static ust_log_record recs[MAX_BATCH];
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
        rc = ust_log_append(s->log, recs, n, &first, &err);
    int64_t took = ust_time_mono_us() - t0;
    ust__metrics *m = &s->metrics;
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
    ust__health_appended(s, rc, err, first + (int64_t)n - 1, batch->req.received_at_us);
    ust_free(err);
    if (s->responder != NULL) {
        ust__responder_submit(s, batch, last); /* it notifies the follower */
        return;
    }
    ust__jobs_done(s, batch, last);
    if (rc == 0)
        ust__follower_notify(s, first + (int64_t)n - 1);
}

/* Retention: the rows older than keep go, on this thread and connection,
 * between two batches, so a prune never runs beside an append. Age is by
 * the wall clock, as received_at is: retention is operational, decisions
 * still go by event time. */
static void retention_pass(ust__server *s)
{
    int64_t now = ust_time_wall_us();
    int64_t before = now - s->o->cfg->retention.keep_us;
    /* Never past what the runner has decided, nor the row at its cursor: a
     * restarted runner checks that row before it resumes. Without a run
     * database there is no runner to wait for. */
    int64_t max_seq =
        s->o->run_path != NULL ? atomic_load(&s->decided_seq) - 1 : INT64_MAX;
    if (max_seq < 1)
        return;
    int64_t n = 0;
    char *err = NULL;
    int rc = ust_log_prune_through(s->log, before, max_seq, now, &n, &err);
    char at[32];
    ust_time_format(before, at);
    if (rc != 0)
        fprintf(stderr, "understudy: retention: %s (trying again at the next check)\n",
                err ? err : ust_strerror(rc));
    else if (n > 0)
        fprintf(stderr,
                "understudy: retention: pruned %lld events that arrived before %s\n",
                (long long)n, at);
    ust_free(err);
}

static void *writer_main(void *arg)
{
    ust__server *s = arg;
    ust__queue *q = &s->in;
    ust_name_thread("ust-writer");
    int64_t every =
        s->o->cfg->retention.keep_us > 0 ? s->o->cfg->retention.every_us : 0;
    int64_t due = every > 0 ? ust_time_mono_us() + every : INT64_MAX;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (q->head == NULL && !q->stopping && ust_time_mono_us() < due) {
            if (due == INT64_MAX) {
                pthread_cond_wait(&q->cv, &q->mu);
            } else {
                struct timespec at = {(time_t)(due / 1000000),
                                      (long)(due % 1000000) * 1000};
                pthread_cond_timedwait(&q->cv, &q->mu, &at); /* q->cv is monotonic */
            }
        }
        if (q->head == NULL && q->stopping) { /* stopping and drained */
            pthread_mutex_unlock(&q->mu);
            break;
        }
        if (ust_time_mono_us() >=
            due) { /* checked between batches, so load cannot defer it */
            pthread_mutex_unlock(&q->mu);
            retention_pass(s);
            due = ust_time_mono_us() + every;
            continue;
        }
        ust__job *batch = q->head, *j = batch;
        size_t n = 1;
        while (j->next != NULL && n < MAX_BATCH)
            j = j->next, n++;
        q->head = j->next;
        if (q->head == NULL)
            q->tail = NULL;
        j->next = NULL;
        pthread_mutex_unlock(&q->mu);
        commit_batch(s, batch, n);
    }
    return NULL;
}

int ust__writer_start(ust__server *s, char **err)
{
    int rc = ust_log_open(s->o->log_path, UST_LOG_CREATE, &s->log, err);
    if (rc != 0)
        return rc;
    pthread_mutex_init(&s->in.mu, NULL);
    pthread_condattr_t ca; /* the writer's waits for retention are on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->in.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->done_mu, NULL);
    if (pthread_create(&s->writer, NULL, writer_main, s) != 0)
        return ust_errf(err, UST_ENOMEM, "cannot start the writer thread");
    s->writer_started = 1;
    return 0;
}

void ust__writer_submit(ust__server *s, ust__job *job)
{
    pthread_mutex_lock(&s->in.mu);
    job->next = NULL;
    if (s->in.tail)
        s->in.tail->next = job;
    else
        s->in.head = job;
    s->in.tail = job;
    pthread_cond_signal(&s->in.cv);
    pthread_mutex_unlock(&s->in.mu);
}

void ust__writer_stop(ust__server *s)
{
    if (!s->writer_started)
        return;
    pthread_mutex_lock(&s->in.mu);
    s->in.stopping = 1;
    pthread_cond_signal(&s->in.cv);
    pthread_mutex_unlock(&s->in.mu);
    pthread_join(s->writer, NULL);
    s->writer_started = 0;
    /* Closing the log checkpoints it, which goes best with no reader left:
     * while the runner runs, ust__follower_stop closes it after the runner. */
    if (!s->follower_started) {
        ust_log_close(s->log);
        s->log = NULL;
    }
}
