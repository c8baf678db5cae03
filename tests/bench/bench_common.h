/* Small helpers shared by the benchmarks: a monotonic clock and medians. */
#ifndef UST_BENCH_COMMON_H
#define UST_BENCH_COMMON_H

#include <stdlib.h>

#include <understudy/clock.h>

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

#endif
