/* What /healthz reads, written by the writer, the responder and the
 * runner's thread and read on the loop; the mutex is held only to copy or
 * swap, never over I/O. */
#ifndef UST_HTTP_HEALTH_H
#define UST_HTTP_HEALTH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define UST__HEALTH_PENDING 4096
typedef struct ust__health {
    pthread_mutex_t mu;
    int runner;                 /* a runner follows: the commits it owes are kept */
    char *log_error;            /* the last append's failure; NULL once one succeeds */
    char *runner_error;         /* the last step's failure; NULL once one succeeds */
    char *answers_error;        /* the responder's last failure; NULL once it commits */
    const char *candidate_down; /* static text, or NULL while it is up */
    /* Commits the runner has not decided through, oldest first (a ring):
     * their last seq and the arrival of their first event. */
    struct {
        int64_t last_seq, received_at_us;
    } pending[UST__HEALTH_PENDING];
    size_t head, n;
} ust__health;

/* runner: whether a runner will decide what is appended. */
void ust__health_init(ust__health *h, int runner);
void ust__health_destroy(ust__health *h);
/* The writer, after each commit: rc, its message, and for a commit that
 * went through the batch's last seq and its first event's arrival. */
void ust__health_appended(ust__health *h, int rc, const char *err, int64_t last_seq,
                          int64_t first_received_at_us);
/* The responder (--respond legacy), after each batch it tried to record:
 * rc and its message; a success clears the failure. */
void ust__health_answered(ust__health *h, int rc, const char *err);
/* The runner's thread, after each step. */
void ust__health_stepped(ust__health *h, int rc, const char *err, int64_t cursor,
                         const char *candidate_down);
/* Arrival (µs since the epoch) of the oldest event the runner has not
 * decided through ran, 0 when there is none: the runner's lag in time is
 * now minus it. */
int64_t ust__health_oldest_undecided_us(ust__health *h, int64_t ran);
/* The body of /healthz (ust_malloc'd) and its status, 200 or 503: head is
 * the newest durable seq, ran the runner's, max_lag_s the config's bound. */
char *ust__health_render(ust__health *h, int64_t head, int64_t ran, int64_t max_lag_s,
                         int *status);

#endif
