/* The requests a loop turn read leave as one batch at its end, and those
 * read while every batch is on the pool gather in pending and leave as one
 * when one comes back: under load a batch holds what the loop read in the
 * meantime, so the hops a request costs (a wake of a pool thread, a wake
 * of the writer, the pool's answer to the loop) are shared by all of
 * them. Batches derive side by side; each is handed to
 * the writer only after the batch made before it, so seq order is the
 * order requests were read. */
#include "http/deriver.h"

#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/error.h>

#include <stdatomic.h>
#include <string.h>

int ust__deriver_init(ust__deriver *d)
{
    d->owed = d->pending_n = 0;
    d->pending = d->pending_last = NULL;
    d->next_ticket = d->next_out = 0;
    memset(d->batches, 0, sizeof(d->batches));
    if (pthread_mutex_init(&d->mu, NULL) != 0)
        return UST_ENOMEM;
    uv_check_init(d->loop, &d->turn_end);
    d->turn_end.data = d;
    return 0;
}

void ust__deriver_destroy(ust__deriver *d)
{
    pthread_mutex_destroy(&d->mu);
}

/* A batch's jobs to their sinks, in their order: the stored in one put,
 * the sampled out in another (called with mu held, so batches leave in
 * ticket order). */
static void hand_on(ust__deriver *d, ust__derive_batch *b)
{
    ust__job *store = NULL, **store_end = &store, *store_last = NULL;
    ust__job *skip = NULL, **skip_end = &skip, *skip_last = NULL;
    for (ust__job *job = b->jobs, *next; job != NULL; job = next) {
        next = job->next;
        job->next = NULL;
        if (job->sampled_out) {
            *skip_end = skip_last = job;
            skip_end = &job->next;
        } else {
            *store_end = store_last = job;
            store_end = &job->next;
        }
    }
    b->jobs = NULL;
    if (store != NULL)
        d->store.put(d->store.ctx, store, store_last, 0);
    if (skip != NULL)
        d->skip.put(d->skip.ctx, skip, skip_last, 0);
}

/* --respond upstream: the values masking is about to replace, as the
 * client sent them (job->sent), for the service. */
static int keep_sent(ust__job *job)
{
    const ust_request *req = &job->req;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (req->headers[i].value == NULL ||
            !ust_capture_masks(job->cfg, req->headers[i].name))
            continue;
        if (job->sent == NULL &&
            (job->sent = ust_calloc(req->n_headers, sizeof(char *))) == NULL)
            return UST_ENOMEM;
        if ((job->sent[i] = ust_strdup(req->headers[i].value)) == NULL)
            return UST_ENOMEM;
    }
    return 0;
}

/* On the pool: JSON parse, request hash, signature, fields; then the
 * batch, and those derived after it waiting for it, handed on. */
static void derive_batch(uv_work_t *w)
{
    ust__derive_batch *b = w->data;
    ust__deriver *d = b->d;
    for (ust__job *job = b->jobs; job != NULL; job = job->next) {
        job->derive_rc = d->keep_sent ? keep_sent(job) : 0;
        if (job->derive_rc == 0)
            job->derive_rc =
                ust_log_record_derive(job->cfg, &job->req, &job->rec, NULL);
        job->sampled_out = job->derive_rc == 0 &&
                           ust_capture_sampled_out(&job->cfg->routes[job->route_index],
                                                   job->rec.identity, job->rec.sig);
        if (job->sampled_out && job->route_index < UST__MAX_ROUTES)
            atomic_fetch_add(&d->metrics->sampled_out[job->route_index], 1);
    }
    pthread_mutex_lock(&d->mu);
    b->derived = 1;
    for (int found = 1; found;) {
        found = 0;
        for (size_t i = 0; i < UST__DERIVE_IN_FLIGHT; i++) {
            ust__derive_batch *o = &d->batches[i];
            if (o->derived && o->ticket == d->next_out) {
                hand_on(d, o);
                o->derived = 0;
                d->next_out++;
                found = 1;
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
}

static void start_batch(ust__deriver *d);

/* The most requests derived on the loop itself (see start_batch). */
#define UST__DERIVE_HERE 4

/* Back on the loop: every batch both back from the pool (libuv is done
 * with its work request) and handed on is free again. This one may still
 * wait for an earlier one: that one's return frees it. */
static void derive_batch_done(uv_work_t *w, int status)
{
    (void)status; /* only a cancel fails one, and nothing cancels them */
    ust__derive_batch *back = w->data;
    ust__deriver *d = back->d;
    back->returned = 1;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < UST__DERIVE_IN_FLIGHT; i++) {
        ust__derive_batch *b = &d->batches[i];
        if (b->busy && b->returned && b->ticket < d->next_out) {
            b->busy = 0;
            d->owed -= b->n;
        }
    }
    pthread_mutex_unlock(&d->mu);
    start_batch(d);
    d->drained(d->ctx);
}

static void start_batch(ust__deriver *d)
{
    ust__derive_batch *b = NULL;
    for (size_t i = 0; i < UST__DERIVE_IN_FLIGHT && b == NULL; i++)
        if (!d->batches[i].busy)
            b = &d->batches[i];
    if (b == NULL || d->pending == NULL)
        return;
    pthread_mutex_lock(&d->mu); /* pool threads read the tickets */
    b->d = d;
    b->jobs = d->pending;
    b->n = d->pending_n;
    b->busy = 1;
    b->returned = 0;
    b->ticket = d->next_ticket++;
    b->work.data = b;
    pthread_mutex_unlock(&d->mu);
    d->pending = d->pending_last = NULL;
    d->pending_n = 0;
    /* A turn that read only a few requests while the pool is idle (light
     * load) has them derived here: two thread wakes cost more CPU than
     * their derivation, and the loop has nothing else to do. Without a
     * pool, the same. */
    int pool_idle = 1;
    for (size_t i = 0; i < UST__DERIVE_IN_FLIGHT; i++)
        pool_idle &= &d->batches[i] == b || !d->batches[i].busy;
    if ((pool_idle && b->n <= UST__DERIVE_HERE) ||
        uv_queue_work(d->loop, &b->work, derive_batch, derive_batch_done) != 0) {
        derive_batch(&b->work);
        derive_batch_done(&b->work, 0);
    }
}

/* After the loop turn's reads: what they brought goes as one batch. */
static void on_turn_end(uv_check_t *check)
{
    ust__deriver *d = check->data;
    uv_check_stop(check);
    start_batch(d);
}

void ust__deriver_add(ust__deriver *d, ust__job *job)
{
    job->next = NULL;
    if (d->pending_last != NULL)
        d->pending_last->next = job;
    else
        d->pending = job;
    d->pending_last = job;
    d->pending_n++;
    d->owed++;
    uv_check_start(&d->turn_end, on_turn_end);
}

void ust__deriver_close(ust__deriver *d)
{
    uv_close((uv_handle_t *)&d->turn_end, NULL);
}
