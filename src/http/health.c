/* GET /healthz: what is wrong, if anything. Each check reads a state its
 * owner leaves here (the writer's last append, the runner's last step, the
 * candidate's back-off, the commits not yet decided) or asks the kernel
 * (descriptors), so answering never waits for a database or a plugin. */
#include "http/health.h"

#include <understudy/clock.h>
#include <understudy/alloc.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Above this share of RLIMIT_NOFILE, descriptors are "near" the limit. */
#define FD_NEAR_PERCENT 90

void ust__health_init(ust__health *h, int runner)
{
    pthread_mutex_init(&h->mu, NULL);
    h->runner = runner;
}

void ust__health_destroy(ust__health *h)
{
    ust_free(h->log_error);
    ust_free(h->runner_error);
    ust_free(h->answers_error);
    pthread_mutex_destroy(&h->mu);
}

/* Swaps *slot for a copy of err (NULL clears it); the copy is made and the
 * old text freed outside the lock. */
static void set_error(ust__health *h, char **slot, int rc, const char *err)
{
    char *text = rc != 0 ? ust_strdup(err ? err : "failed") : NULL;
    pthread_mutex_lock(&h->mu);
    char *old = *slot;
    *slot = text;
    pthread_mutex_unlock(&h->mu);
    ust_free(old);
}

void ust__health_appended(ust__health *h, int rc, const char *err, int64_t last_seq,
                          int64_t first_received_at_us)
{
    if (rc != 0 || h->log_error != NULL) /* read racily: only this thread writes it */
        set_error(h, &h->log_error, rc, err);
    if (rc != 0 || !h->runner)
        return;
    pthread_mutex_lock(&h->mu);
    if (h->n < UST__HEALTH_PENDING) {
        size_t at = (h->head + h->n++) % UST__HEALTH_PENDING;
        h->pending[at].last_seq = last_seq;
        h->pending[at].received_at_us = first_received_at_us;
    } else {
        /* Full: the newest entry stands for this commit too. The lag of
         * those events is then overstated, never understated. */
        h->pending[(h->head + h->n - 1) % UST__HEALTH_PENDING].last_seq = last_seq;
    }
    pthread_mutex_unlock(&h->mu);
}

void ust__health_answered(ust__health *h, int rc, const char *err)
{
    if (rc != 0 || h->answers_error != NULL) /* racily: only the responder writes it */
        set_error(h, &h->answers_error, rc, err);
}

/* Drops the commits decided through cursor (called with mu held). */
static void drop_decided(ust__health *h, int64_t cursor)
{
    while (h->n > 0 && h->pending[h->head].last_seq <= cursor) {
        h->head = (h->head + 1) % UST__HEALTH_PENDING;
        h->n--;
    }
}

void ust__health_stepped(ust__health *h, int rc, const char *err, int64_t cursor,
                         const char *candidate_down)
{
    if (rc != 0 || h->runner_error != NULL)
        set_error(h, &h->runner_error, rc, err);
    pthread_mutex_lock(&h->mu);
    h->candidate_down = candidate_down;
    drop_decided(h, cursor);
    pthread_mutex_unlock(&h->mu);
}

/* Open descriptors of this process, or -1 when /proc cannot say. */
static long open_descriptors(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static void add_reason(json_t *reasons, const char *check, const char *detail)
{
    json_array_append_new(reasons,
                          json_pack("{s:s,s:s}", "check", check, "detail", detail));
}

static void add_reasonf(json_t *reasons, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_reasonf(json_t *reasons, const char *check, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    add_reason(reasons, check, detail);
}

int64_t ust__health_oldest_undecided_us(ust__health *h, int64_t ran)
{
    pthread_mutex_lock(&h->mu);
    drop_decided(h, ran);
    int64_t oldest_us = h->n > 0 ? h->pending[h->head].received_at_us : 0;
    pthread_mutex_unlock(&h->mu);
    return oldest_us;
}

char *ust__health_render(ust__health *h, int64_t head, int64_t ran, int64_t max_lag_s,
                         int *status)
{
    json_t *reasons = json_array();
    int64_t now = ust_time_wall_us();
    pthread_mutex_lock(&h->mu);
    if (h->log_error != NULL)
        add_reasonf(reasons, "log_write", "the last append to the event log failed: %s",
                    h->log_error);
    if (h->answers_error != NULL)
        add_reasonf(reasons, "answers_write",
                    "the last write of the legacy's answers failed: %s",
                    h->answers_error);
    if (h->candidate_down != NULL)
        add_reasonf(reasons, "candidate_down", "the candidate is down: %s",
                    h->candidate_down);
    if (h->runner_error != NULL)
        add_reasonf(reasons, "runner_failed", "the runner's last step failed: %s",
                    h->runner_error);
    pthread_mutex_unlock(&h->mu);
    int64_t oldest_us = ust__health_oldest_undecided_us(h, ran);
    if (oldest_us > 0 && now - oldest_us > max_lag_s * 1000000)
        add_reasonf(reasons, "runner_lag",
                    "the runner is %lld events behind; the oldest undecided arrived "
                    "%lld s ago (health.max_lag_s is %lld)",
                    (long long)(head > ran ? head - ran : 0),
                    (long long)((now - oldest_us) / 1000000), (long long)max_lag_s);
    struct rlimit rl;
    long open = open_descriptors();
    if (open >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)open * 100 > rl.rlim_cur * FD_NEAR_PERCENT)
        add_reasonf(reasons, "descriptors",
                    "%ld of %llu descriptors open (RLIMIT_NOFILE), over %d %%", open,
                    (unsigned long long)rl.rlim_cur, FD_NEAR_PERCENT);
    size_t n = json_array_size(reasons);
    json_t *doc =
        n == 0 ? json_pack("{s:s}", "status", "ok")
               : json_pack("{s:s,s:O}", "status", "degraded", "reasons", reasons);
    json_decref(reasons);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    /* Without memory for the answer it is degraded all the same. */
    *status = n == 0 && text != NULL ? 200 : 503;
    char *out = ust_strdup(text ? text : "{\"status\":\"degraded\"}");
    ust_free(text);
    return out;
}
