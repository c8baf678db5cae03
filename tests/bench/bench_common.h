/* Small helpers shared by the benchmarks: a monotonic clock and medians. */
#ifndef UST_BENCH_COMMON_H
#define UST_BENCH_COMMON_H

#include <stdlib.h>

#include <understudy/clock.h>
#include <understudy/log.h>

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

#endif
