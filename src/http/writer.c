/* The writer thread: group commit. It takes every request queued since its
 * last commit (up to a batch; derived already, on libuv's thread pool, so
 * JSON parsing runs on every core) and appends them in one transaction with
 * synchronous=FULL, and only then hands them back to the loop to be
 * answered: nothing is acknowledged before it is on disk. */
#include "http/http_internal.h"

#include <understudy/priority.h>
#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>
#include <time.h>

#define MAX_BATCH 1024

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
    int64_t first = 0, t0 = now_us();
    if (rc == 0)
        rc = ust_log_append(s->log, recs, n, &first, &err);
    int64_t took = now_us() - t0;
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
        atomic_fetch_add(&m->commits, 1);
        atomic_fetch_add(&m->committed_events, (long long)n);
        atomic_fetch_add(&m->commit_us_total, took);
        long long max = atomic_load(&m->commit_us_max);
        while (took > max &&
               !atomic_compare_exchange_weak(&m->commit_us_max, &max, took))
            ;
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

static void *writer_main(void *arg)
{
    ust__server *s = arg;
    ust__queue *q = &s->in;
    ust_name_thread("ust-writer");
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (q->head == NULL && !q->stopping)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->head == NULL) { /* stopping and drained */
            pthread_mutex_unlock(&q->mu);
            break;
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
    pthread_cond_init(&s->in.cv, NULL);
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
