/* Replay throughput with both reference plugins over a generated log (most
 * single deliveries, some retries, refunds, semantic duplicates, API calls
 * with keys and their retries), beside a loop that only reads the rows and
 * parses the bodies. Replay runs in a child process so its peak RSS is its
 * own. usage: bench_replay DIR BUILD_DIR [EVENTS] */
#include "bench_common.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "whsec_bench_secret"
#define T0 1795946400LL

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* A JSON POST of body (taken) to target from remote, at at_us. */
static void json_post(ust_request *r, int64_t at_us, char *body, const char *remote,
                      const char *target)
{
    memset(r, 0, sizeof(*r));
    r->body = (unsigned char *)body;
    r->body_len = strlen(body);
    r->received_at_us = at_us;
    r->remote = ust_strdup(remote);
    r->method = ust_strdup("POST");
    r->target = ust_strdup(target);
    ust_request_add_header(r, "Content-Type", "application/json");
}

static void stripe(ust_request *r, int64_t at_us, long evt, const char *type, long pi,
                   long order, long amount)
{
    char *body = ust_sprintf(
        "{\"id\":\"evt_%ld\",\"object\":\"event\",\"type\":\"%s\",\"created\":%lld,"
        "\"livemode\":true,\"data\":{\"object\":{\"id\":\"pi_%ld\",\"object\":"
        "\"payment_intent\",\"amount\":%ld,\"currency\":\"eur\",\"status\":\"ok\","
        "\"customer\":\"cus_%ld\",\"metadata\":{\"order_id\":\"order_%ld\"}}}}",
        evt, type, (long long)(at_us / 1000000), pi, amount, order % 9973, order);
    json_post(r, at_us, body, "203.0.113.7:443", "/webhooks/stripe");
    ust_sig_params p = {UST_SCHEME_STRIPE, SECRET, NULL, 300};
    ust_sig_sign(&p, at_us / 1000000, NULL, r);
}

static void api(ust_request *r, int64_t at_us, long key, long order, long amount)
{
    char *body = ust_sprintf("{\"order_id\":\"order_%ld\",\"amount\":%ld,\"currency\":"
                             "\"eur\",\"description\":\"checkout\"}",
                             order, amount);
    json_post(r, at_us, body, "198.51.100.2:50000", "/payments");
    ust_request_add_header(r, "X-Tenant-Id", key % 2 ? "tenant-a" : "tenant-b");
    char k[32];
    snprintf(k, sizeof(k), "key-%ld", key);
    ust_request_add_header(r, "Idempotency-Key", k);
}

/* One event of the mix at time at_us; i numbers the events. */
static void generate(ust_request *r, long i, int64_t at_us)
{
    uint64_t roll = next_rand() % 100;
    long recent = i > 50 ? i - 1 - (long)(next_rand() % 50) : i;
    if (roll < 60)
        stripe(r, at_us, i, "payment_intent.succeeded", i, i, 1000 + i % 500);
    else if (roll < 70) /* a retry of a recent delivery */
        stripe(r, at_us, recent, "payment_intent.succeeded", recent, recent,
               1000 + recent % 500);
    else if (roll < 78) /* a refund of a recent payment */
        stripe(r, at_us, i, "charge.refunded", recent, recent, 1000 + recent % 500);
    else if (roll < 82) /* a late paid after that: a new event id */
        stripe(r, at_us, i, "payment_intent.succeeded", recent, recent,
               1000 + recent % 500);
    else if (roll < 85) /* a second transaction for a recent order */
        stripe(r, at_us, i, "payment_intent.succeeded", i, recent, 1000 + recent % 500);
    else if (roll < 95)
        api(r, at_us, i, i, 100 + i % 90);
    else /* an API retry of a recent key */
        api(r, at_us, recent, recent, 100 + recent % 90);
}

static void build_log(const char *path, const ust_config *cfg, long n)
{
    ust_log *log = bench_log_create(path);
    enum { BATCH = 4096 };
    static ust_request reqs[BATCH];
    int64_t at = T0 * 1000000;
    for (long i = 0; i < n;) {
        size_t k = 0;
        for (; k < BATCH && i < n; k++, i++) {
            at += 1000 + (int64_t)(next_rand() % 400000); /* ~5 events/s */
            generate(&reqs[k], i, at);
        }
        bench_log_append(log, cfg, reqs, k);
    }
    ust_log_close(log);
}

static double read_and_parse(const char *path, long *bytes)
{
    bench_rows rows;
    bench_rows_open(&rows, path);
    long n = 0;
    *bytes = 0;
    double t0 = bench_now();
    while (bench_rows_next(&rows)) {
        json_error_t jerr;
        json_t *j = json_loadb((const char *)rows.rec.req.body, rows.rec.req.body_len,
                               0, &jerr);
        json_decref(j);
        *bytes += (long)rows.rec.req.body_len;
        n++;
    }
    double dt = bench_now() - t0;
    bench_rows_close(&rows);
    return n / dt;
}

/* Replays in a child; returns events/s and the child's peak RSS in KiB.
 * isolate puts the candidate in a child process of its own. */
static double replay_in_child(ust_config *cfg, const char *log_path,
                              const char *run_path, const char *build, int isolate,
                              long *rss_kib, long *divergences)
{
    cfg->candidate.isolate = isolate;
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        char lp[4096], cp[4096];
        snprintf(lp, sizeof(lp), "%s/src/plugins/legacy/understudy-legacy.so", build);
        snprintf(cp, sizeof(cp), "%s/src/plugins/candidate/understudy-candidate.so",
                 build);
        unlink(run_path);
        ust_replay_opts o = {.cfg = cfg,
                             .log_path = log_path,
                             .run_path = run_path,
                             .legacy_path = lp,
                             .candidate_path = cp,
                             .commit_every = getenv("BENCH_COMMIT_EVERY")
                                                 ? atol(getenv("BENCH_COMMIT_EVERY"))
                                                 : 0};
        ust_replay_stats st;
        double dt = bench_replay_seconds(&o, &st, _exit);
        double rate = st.events / dt;
        double out[2] = {rate, (double)st.divergences};
        if (write(fds[1], out, sizeof(out)) != sizeof(out))
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    double got[2] = {0, 0};
    if (read(fds[0], got, sizeof(got)) != sizeof(got))
        exit(2);
    close(fds[0]);
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    *rss_kib = ru.ru_maxrss;
    *divergences = (long)got[1];
    return got[0];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR BUILD_DIR [EVENTS] [ROUNDS]\n", argv[0]);
        return 2;
    }
    long n = argc > 3 ? atol(argv[3]) : 1000000;
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    setenv("UNDERSTUDY_STRIPE_SECRET", SECRET, 1);
    /* An isolated candidate runs in understudy's shim, not in this program. */
    char shim[4096];
    snprintf(shim, sizeof(shim), "%s/src/understudy", argv[2]);
    setenv("UST_PLUGIN_SHIM", shim, 0);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load("tests/data/config.json", &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0) {
        fprintf(stderr, "%s (run from the source tree)\n", err);
        return 2;
    }
    char log_path[4096], run_path[4096];
    snprintf(log_path, sizeof(log_path), "%s/replay-bench-events.db", argv[1]);
    snprintf(run_path, sizeof(run_path), "%s/replay-bench-run.db", argv[1]);
    /* BENCH_KEEP=1 keeps the log for the next run and reuses one that is
     * there; BENCH_ONLY=loop|replay|isolated runs one side alone (for a
     * profiler). */
    const char *only = getenv("BENCH_ONLY");
    int keep = getenv("BENCH_KEEP") != NULL;
    if (!keep || access(log_path, F_OK) != 0) {
        unlink(log_path);
        double t0 = bench_now();
        build_log(log_path, cfg, n);
        fprintf(stderr, "generated %ld events in %.1f s\n", n, bench_now() - t0);
    }
    double rp[16], rr[16], ri[16];
    long rss = 0, max_rss = 0, divs = 0, bytes = 0;
    for (int r = 0; r < rounds && r < 16; r++) {
        rp[r] = rr[r] = ri[r] = 1;
        if (only == NULL || strcmp(only, "loop") == 0)
            rp[r] = read_and_parse(log_path, &bytes);
        if (only == NULL || strcmp(only, "replay") == 0)
            rr[r] = replay_in_child(cfg, log_path, run_path, argv[2], 0, &rss, &divs);
        /* (in process: the reference plugins as they are shipped) */
        if (rss > max_rss)
            max_rss = rss;
        if (only == NULL || strcmp(only, "isolated") == 0)
            ri[r] = replay_in_child(cfg, log_path, run_path, argv[2], 1, &rss, &divs);
    }
    double p = bench_median(rp, rounds), q = bench_median(rr, rounds),
           iso = bench_median(ri, rounds);
    printf("replay of %ld events (%.0f bytes/body on average), median of %d rounds\n",
           n, (double)bytes / n, rounds);
    printf("read+parse loop: %10.0f events/s\n", p);
    printf("replay:          %10.0f events/s  (%.0f%% of read+parse)\n", q,
           100 * q / p);
    printf("replay, candidate isolated in a child process: %10.0f events/s (%.2fx the"
           " in-process time)\n",
           iso, q / iso);
    printf("replay peak RSS: %10.1f MiB; divergences: %ld\n", max_rss / 1024.0, divs);
    if (!keep)
        unlink(log_path);
    unlink(run_path);
    ust_config_free(cfg);
    return 0;
}
