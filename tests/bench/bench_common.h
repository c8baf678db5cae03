/* Small helpers shared by the benchmarks: a monotonic clock and medians. */
#ifndef UST_BENCH_COMMON_H
#define UST_BENCH_COMMON_H

#include <stdlib.h>

#include <understudy/clock.h>
#include <understudy/log.h>
#include <understudy/runner.h>

#include <stdio.h>
#include <string.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    return (double)ust_time_mono_us() / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The rows of the log at path from the first, read with bench_rows_next;
 * bench_rows_close frees them. */
typedef struct bench_rows {
    ust_log *log;
    ust_log_cursor *cur;
    ust_log_record rec;
} bench_rows;

static inline void bench_rows_open(bench_rows *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    ust_log_open(path, UST_LOG_READONLY, &r->log, NULL);
    ust_log_cursor_open(r->log, 0, &r->cur, NULL);
}

static inline int bench_rows_next(bench_rows *r)
{
    return ust_log_cursor_next(r->cur, &r->rec, NULL) == 1;
}

static inline void bench_rows_close(bench_rows *r)
{
    ust_log_record_clear(&r->rec);
    ust_log_cursor_close(r->cur);
    ust_log_close(r->log);
}

/* A new log at path; a refusal ends the benchmark (exit 2, its message). */
static inline ust_log *bench_log_create(const char *path)
{
    ust_log *log = NULL;
    char *err = NULL;
    if (ust_log_open(path, UST_LOG_CREATE, &log, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    return log;
}

/* Appends reqs[0..n) to log under cfg, then clears them; a refusal ends the
 * benchmark as bench_log_create's does. */
static inline void bench_log_append(ust_log *log, const ust_config *cfg,
                                    ust_request *reqs, size_t n)
{
    char *err = NULL;
    if (ust_log_append_requests(log, cfg, reqs, n, NULL, NULL, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    for (size_t j = 0; j < n; j++)
        ust_request_clear(&reqs[j]);
}

/* The seconds the replay o describes takes, its stats in *st; a refusal
 * ends the benchmark through die (exit, or _exit in a forked child), with
 * status 2 and its message. */
static inline double bench_replay_seconds(const ust_replay_opts *o,
                                          ust_replay_stats *st, void (*die)(int))
{
    char *err = NULL;
    double t0 = bench_now();
    if (ust_replay(o, st, &err) != 0) {
        fprintf(stderr, "replay: %s\n", err);
        die(2);
    }
    return bench_now() - t0;
}

#endif
