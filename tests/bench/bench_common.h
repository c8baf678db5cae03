/* Small helpers shared by the benchmarks: a monotonic clock and medians. */
#ifndef UST_BENCH_COMMON_H
#define UST_BENCH_COMMON_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
