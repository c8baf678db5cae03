#include "runner/read_ahead.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/priority.h>

#include <string.h>

static void *reading(void *arg)
{
    ust__read_ahead *ra = arg;
    ust_name_thread(ra->name);
    pthread_mutex_lock(&ra->mu);
    for (;;) {
        while (!ra->quit && ra->produced - ra->returned >= ra->n_slots)
            pthread_cond_wait(&ra->freed, &ra->mu);
        if (ra->quit)
            break;
        size_t slot = (size_t)(ra->produced % ra->n_slots);
        pthread_mutex_unlock(&ra->mu);
        /* A refused allocation is this thread's to count: a fill that
         * quietly did less (a jansson call) fails like any other. */
        unsigned long refused = ust_alloc_failures();
        int more = 0;
        char *err = NULL;
        int rc = ra->fill(ra->ctx, slot, &more, &err);
        if (rc == 0 && ust_alloc_failures() != refused)
            rc = ust_errf(&err, UST_ENOMEM, "out of memory");
        pthread_mutex_lock(&ra->mu);
        ra->produced++;
        ra->done = rc != 0 || !more;
        ra->rc = rc;
        if (ra->done)
            ra->err = err;
        else
            ust_free(err);
        pthread_cond_signal(&ra->filled);
        if (ra->done)
            break;
    }
    pthread_mutex_unlock(&ra->mu);
    return NULL;
}

int ust__read_ahead_start(ust__read_ahead *ra, size_t n_slots,
                          ust__read_ahead_fill fill, void *ctx, const char *name,
                          char **err)
{
    memset(ra, 0, sizeof(*ra));
    ra->n_slots = n_slots;
    ra->fill = fill;
    ra->ctx = ctx;
    ra->name = name;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->filled, NULL);
    pthread_cond_init(&ra->freed, NULL);
    if (pthread_create(&ra->thread, NULL, reading, ra) == 0) {
        ra->started = 1;
        return 0;
    }
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->filled);
    pthread_cond_destroy(&ra->freed);
    return ust_errf(err, UST_ENOMEM, "cannot start the thread that reads the log");
}

int ust__read_ahead_take(ust__read_ahead *ra, size_t *slot, int *more, char **err)
{
    pthread_mutex_lock(&ra->mu);
    while (ra->taken == ra->produced)
        pthread_cond_wait(&ra->filled, &ra->mu);
    *slot = (size_t)(ra->taken % ra->n_slots);
    ra->taken++;
    /* Only the last fill can have ended the reading. */
    int last = ra->done && ra->taken == ra->produced;
    int rc = last ? ra->rc : 0;
    *more = !last;
    if (last && err != NULL && *err == NULL) {
        *err = ra->err;
        ra->err = NULL;
    }
    pthread_mutex_unlock(&ra->mu);
    return rc;
}

void ust__read_ahead_give_back(ust__read_ahead *ra)
{
    pthread_mutex_lock(&ra->mu);
    ra->returned++;
    pthread_cond_signal(&ra->freed);
    pthread_mutex_unlock(&ra->mu);
}

void ust__read_ahead_stop(ust__read_ahead *ra)
{
    if (!ra->started)
        return;
    pthread_mutex_lock(&ra->mu);
    ra->quit = 1;
    pthread_cond_signal(&ra->freed);
    pthread_mutex_unlock(&ra->mu);
    pthread_join(ra->thread, NULL);
    ust_free(ra->err);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->filled);
    pthread_cond_destroy(&ra->freed);
    ra->started = 0;
}
