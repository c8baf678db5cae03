/* Fixed-bucket histograms: an observation is two relaxed atomic adds, so
 * the request path, the writer and the runner can observe without a lock. */
#include <understudy/histogram.h>

#include <string.h>

void ust_histogram_init(ust_histogram *h, const int64_t *bounds, size_t n_bounds,
                        double scale)
{
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->n_bounds =
        n_bounds < UST_HISTOGRAM_MAX_BUCKETS ? n_bounds : UST_HISTOGRAM_MAX_BUCKETS;
    h->scale = scale > 0 ? scale : 1;
}

void ust_histogram_observe(ust_histogram *h, int64_t value)
{
    if (value < 0)
        value = 0; /* a clock stepped back: it took no time, not negative time */
    size_t i = 0;
    while (i < h->n_bounds && value > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, (unsigned long long)value, memory_order_relaxed);
}

void ust_histogram_write(FILE *f, const char *name, const char *labels,
                         ust_histogram *h)
{
    const char *sep = labels[0] ? "," : "";
    double scale = h->scale > 0 ? h->scale : 1; /* a histogram never initialised */
    unsigned long long cum = 0;
    for (size_t i = 0; i <= h->n_bounds; i++) {
        cum += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        if (i < h->n_bounds)
            fprintf(f, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, labels, sep,
                    (double)h->bounds[i] / scale, cum);
        else
            fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, cum);
    }
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    fprintf(f, "%s_sum%s%s%s %.9g\n", name, open, labels, close,
            (double)atomic_load_explicit(&h->sum, memory_order_relaxed) / scale);
    fprintf(f, "%s_count%s%s%s %llu\n", name, open, labels, close, cum);
}
