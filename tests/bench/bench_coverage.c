/* Coverage over an event log: the time of the count, its counts (run it
 * under /usr/bin/time -v for its peak RSS). The baseline, in the same run,
 * is one plain scan of the log's rows in seq order.
 * usage: bench_coverage LOG.db CONFIG [ROUNDS]   (after `gen` and `log import`) */
#include "bench_common.h"

#include <understudy/config.h>
#include <understudy/coverage.h>

static int nothing(void *ctx, const ust_log_scan_row *row)
{
    (*(int64_t *)ctx)++;
    (void)row;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LOG.db CONFIG [ROUNDS]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    ust_config *cfg = NULL;
    ust_log *log = NULL;
    char *err = NULL;
    if (ust_config_load(argv[2], &cfg, &err) != 0 ||
        ust_log_open(argv[1], UST_LOG_READONLY, &log, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    ust_coverage_params p;
    if (ust_coverage_params_from_config(cfg, &p) != 0)
        return 2;
    int64_t head = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_log_head(log, &head, hex, NULL);
    double t_count[16], t_scan[16];
    ust_coverage cov;
    for (int r = 0; r < rounds && r < 16; r++) {
        double t0 = bench_now();
        int64_t n = 0;
        ust_log_scan_opts all = {.through_seq = head, .api_routes = p.api_routes};
        if (ust_log_scan(log, &all, nothing, &n, &err) != 0)
            return 2;
        double t1 = bench_now();
        if (ust_coverage_count(log, &p, head, &cov, &err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 2;
        }
        t_scan[r] = t1 - t0;
        t_count[r] = bench_now() - t1;
    }
    printf("%lld events: coverage %.2f s (median of %d), one plain scan %.2f s\n",
           (long long)head, bench_median(t_count, rounds), rounds,
           bench_median(t_scan, rounds));
    for (int k = 0; k < UST_COVERAGE_N; k++)
        printf("  %-24s %lld\n", ust_coverage_kind_name((ust_coverage_kind)k),
               (long long)cov.counts[k]);
    ust_coverage_params_clear(&p);
    ust_log_close(log);
    ust_config_free(cfg);
    return 0;
}
