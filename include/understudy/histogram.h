/* A histogram with fixed bucket bounds, for /metrics: observations from any
 * thread (atomics, no lock), read while they go on. Values are integers in
 * the unit the caller chose (µs, events); the exposition divides by a
 * scale (1e6 for µs as seconds). */
#ifndef UNDERSTUDY_HISTOGRAM_H
#define UNDERSTUDY_HISTOGRAM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UST_HISTOGRAM_MAX_BUCKETS 20

typedef struct ust_histogram {
    const int64_t *bounds; /* upper bounds, ascending, in the value's unit */
    size_t n_bounds;       /* at most UST_HISTOGRAM_MAX_BUCKETS */
    double scale;          /* a bound or the sum over scale is what is shown */
    /* per bucket, not cumulative; [n_bounds] is the one past every bound */
    atomic_ullong counts[UST_HISTOGRAM_MAX_BUCKETS + 1];
    atomic_ullong sum;
} ust_histogram;

/* Zero counts, these bounds (borrowed: static arrays). */
void ust_histogram_init(ust_histogram *h, const int64_t *bounds, size_t n_bounds,
                        double scale);
void ust_histogram_observe(ust_histogram *h, int64_t value);
/* The series of one histogram in the Prometheus text format: the _bucket
 * lines (cumulative, le="+Inf" last), _sum and _count. labels is the text
 * inside the braces without them ("plugin=\"legacy\""), or "" for none.
 * _count is the +Inf bucket, read once, so the two always agree. */
void ust_histogram_write(FILE *f, const char *name, const char *labels,
                         ust_histogram *h);

#endif
