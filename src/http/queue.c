#include "http/queue.h"

#include <understudy/clock.h>
#include <understudy/error.h>

#include <time.h>

int ust__jobq_init(ust__jobq *q)
{
    q->head = q->tail = NULL;
    q->stopping = 0;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return UST_ENOMEM;
    int rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
             pthread_cond_init(&q->cv, &ca) != 0;
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return UST_ENOMEM;
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        pthread_cond_destroy(&q->cv);
        return UST_ENOMEM;
    }
    return 0;
}

void ust__jobq_destroy(ust__jobq *q)
{
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

void ust__jobq_put(ust__jobq *q, ust__job *first, ust__job *last)
{
    pthread_mutex_lock(&q->mu);
    last->next = NULL;
    if (q->tail)
        q->tail->next = first;
    else
        q->head = first;
    q->tail = last;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int ust__jobq_take(ust__jobq *q, size_t max, int64_t due_us, ust__job **first,
                   ust__job **last, size_t *n)
{
    *first = *last = NULL;
    *n = 0;
    pthread_mutex_lock(&q->mu);
    while (q->head == NULL && !q->stopping && due_us != 0 &&
           ust_time_mono_us() < due_us) {
        if (due_us == INT64_MAX) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else {
            struct timespec at = {(time_t)(due_us / 1000000),
                                  (long)(due_us % 1000000) * 1000};
            pthread_cond_timedwait(&q->cv, &q->mu, &at);
        }
    }
    if (q->head == NULL) {
        int stopped = q->stopping;
        pthread_mutex_unlock(&q->mu);
        return stopped ? -1 : 0;
    }
    ust__job *j = q->head;
    size_t count = 1;
    while (j->next != NULL && (max == 0 || count < max))
        j = j->next, count++;
    *first = q->head;
    *last = j;
    *n = count;
    q->head = j->next;
    if (q->head == NULL)
        q->tail = NULL;
    j->next = NULL;
    pthread_mutex_unlock(&q->mu);
    return 1;
}

void ust__jobq_stop(ust__jobq *q)
{
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}
