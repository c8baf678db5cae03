/* Replay with a url candidate against a trivial local keep-alive service,
 * beside a plain libcurl loop sending the same requests (the same headers
 * and bodies) one by one to the same service, in the same run: the replay's
 * rate as a share of the loop's with max_in_flight 1, and with 8. The
 * legacy is the reference .so; the run database is a fresh file each time
 * (the journal's commits, one a batch, reach the disk).
 * usage: bench_url SOURCE_DIR BUILD_DIR DIR [EVENTS] [DELAY_US] [ROUNDS] */
#define _GNU_SOURCE /* memmem */
#include "bench_common.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/http_client.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "whsec_bench_secret"
#define T0 1795946400LL

static long delay_us;

/* ---- the service: a thread a connection, 200 {} to every request ------ */
static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 2\r\n\r\n{}";
    char buf[65536];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        for (;;) {
            char *end = memmem(buf, have, "\r\n\r\n", 4);
            if (end == NULL)
                break;
            size_t head = (size_t)(end + 4 - buf), body = 0;
            for (char *p = buf; p < end; p++)
                if ((p == buf || p[-1] == '\n') &&
                    strncasecmp(p, "Content-Length:", 15) == 0)
                    body = (size_t)atol(p + 15);
            if (have < head + body)
                break;
            if (delay_us > 0)
                usleep((useconds_t)delay_us);
            if (write(fd, answer, sizeof(answer) - 1) < 0)
                goto out;
            memmove(buf, buf + head + body, have - head - body);
            have -= head + body;
        }
    }
out:
    close(fd);
    return NULL;
}

static pid_t start_service(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t len = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("service");
        exit(2);
    }
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid == 0) {
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0)
                continue;
            pthread_t t;
            pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)c);
            pthread_detach(t);
        }
    }
    close(fd);
    return pid;
}

/* ---- the log: signed Stripe events over 64 payments ------------------- */
static void build_log(const char *path, const ust_config *cfg, long n)
{
    ust_log *log = bench_log_create(path);
    ust_request *reqs = ust_calloc((size_t)n, sizeof(*reqs));
    for (long i = 0; i < n; i++) {
        ust_request *r = &reqs[i];
        int64_t at = (T0 + i) * 1000000;
        r->body = (unsigned char *)ust_sprintf(
            "{\"id\":\"evt_%ld\",\"type\":\"payment_intent.succeeded\",\"created\":%"
            "lld,"
            "\"data\":{\"object\":{\"id\":\"pi_%ld\",\"amount\":%ld,\"currency\":"
            "\"eur\","
            "\"metadata\":{\"order_id\":\"order_%ld\"}}}}",
            i, (long long)(at / 1000000), i % 64, 1000 + i % 90, i % 64);
        r->body_len = strlen((char *)r->body);
        r->received_at_us = at;
        r->remote = ust_strdup("203.0.113.7:443");
        r->method = ust_strdup("POST");
        r->target = ust_strdup("/webhooks/stripe");
        ust_request_add_header(r, "Content-Type", "application/json");
        ust_sig_params p = {UST_SCHEME_STRIPE, SECRET, NULL, 300};
        ust_sig_sign(&p, at / 1000000, NULL, r);
    }
    bench_log_append(log, cfg, reqs, (size_t)n);
    ust_free(reqs);
    ust_log_close(log);
}

static size_t discard(char *buf, size_t size, size_t n, void *data)
{
    (void)buf;
    (void)data;
    return size * n;
}

/* ---- the plain loop: the same requests, one curl handle, one by one ----- */
static double curl_loop(const char *log_path, const char *base, const char *host)
{
    bench_rows rows;
    bench_rows_open(&rows, log_path);
    ust_log_record *rec = &rows.rec;
    /* Every request ready before the clock starts: the loop only sends. */
    size_t n = 0, cap = 1024;
    struct prepared {
        struct curl_slist *list;
        char *url, *body;
        size_t len;
    } *p = malloc(cap * sizeof(*p));
    while (bench_rows_next(&rows)) {
        if (n == cap)
            p = realloc(p, (cap *= 2) * sizeof(*p));
        ust_header *h = NULL;
        size_t nh = 0;
        ust_http_forward_headers(&rec->req, host, &h, &nh);
        struct curl_slist *list = NULL;
        for (size_t i = 0; i < nh; i++) {
            char *line = ust_sprintf("%s: %s", h[i].name, h[i].value);
            list = curl_slist_append(list, line);
            ust_free(line);
        }
        char line[96], at[32];
        snprintf(line, sizeof(line), "Understudy-Seq: %lld", (long long)rec->seq);
        list = curl_slist_append(list, line);
        ust_time_format(rec->req.received_at_us, at);
        snprintf(line, sizeof(line), "Understudy-Received-At: %s", at);
        list = curl_slist_append(list, line);
        list = curl_slist_append(list, "Accept:");
        list = curl_slist_append(list, "Expect:");
        ust_free(h);
        p[n].list = list;
        p[n].url = ust_sprintf("%s%s", base, rec->req.target);
        p[n].body = ust_memdup(rec->req.body, rec->req.body_len);
        p[n].len = rec->req.body_len;
        n++;
    }
    bench_rows_close(&rows);
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    double t0 = bench_now();
    for (size_t i = 0; i < n; i++) {
        curl_easy_setopt(e, CURLOPT_URL, p[i].url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, p[i].list);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, p[i].body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p[i].len);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
        if (curl_easy_perform(e) != CURLE_OK) {
            fprintf(stderr, "curl loop: request %zu failed\n", i);
            exit(2);
        }
    }
    double dt = bench_now() - t0;
    curl_easy_cleanup(e);
    for (size_t i = 0; i < n; i++) {
        curl_slist_free_all(p[i].list);
        ust_free(p[i].url);
        ust_free(p[i].body);
    }
    free(p);
    return (double)n / dt;
}

/* The same requests through understudy's client (http_client.h), one by
 * one: what the url kind's sending costs beside plain libcurl. */
static double client_loop(const char *log_path, const char *base, const char *host)
{
    ust_http_client *c = NULL;
    ust_http_client_new(&c, NULL);
    bench_rows rows;
    bench_rows_open(&rows, log_path);
    ust_log_record *rec = &rows.rec;
    long k = 0;
    double t0 = bench_now();
    while (bench_rows_next(&rows)) {
        ust_header *h = NULL;
        size_t nh = 0;
        ust_http_forward_headers(&rec->req, host, &h, &nh);
        char *url = ust_sprintf("%s%s", base, rec->req.target);
        ust_http_call call = {"POST", url, h, nh, rec->req.body, rec->req.body_len,
                              10000};
        ust_http_result res;
        if (ust_http_client_send(c, &call, &res) != 0 || res.failure != 0) {
            fprintf(stderr, "client loop: request %ld failed\n", k);
            exit(2);
        }
        ust_http_result_clear(&res);
        ust_free(url);
        ust_free(h);
        k++;
    }
    double dt = bench_now() - t0;
    bench_rows_close(&rows);
    ust_http_client_free(c);
    return (double)k / dt;
}

static double replay(ust_config *cfg, const char *log_path, const char *run_path,
                     const char *legacy, long n)
{
    unlink(run_path);
    ust_replay_opts o = {
        .cfg = cfg, .log_path = log_path, .run_path = run_path, .legacy_path = legacy};
    ust_replay_stats st;
    double dt = bench_replay_seconds(&o, &st, exit);
    if (st.fed != n) {
        fprintf(stderr, "replay fed %lld of %ld\n", (long long)st.fed, n);
        exit(2);
    }
    return (double)n / dt;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_url SOURCE_DIR BUILD_DIR DIR [EVENTS] [DELAY_US] "
                        "[ROUNDS]\n");
        return 2;
    }
    long n = argc > 4 ? atol(argv[4]) : 20000;
    delay_us = argc > 5 ? atol(argv[5]) : 0;
    int rounds = argc > 6 ? atoi(argv[6]) : 3;
    if (rounds < 1 || rounds > 15)
        rounds = 3;
    setenv("UNDERSTUDY_STRIPE_SECRET", SECRET, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    char cfg_path[4096], legacy[4096], log_path[4096], run_path[4096];
    snprintf(cfg_path, sizeof(cfg_path), "%s/tests/data/config.json", argv[1]);
    snprintf(legacy, sizeof(legacy), "%s/src/plugins/legacy/understudy-legacy.so",
             argv[2]);
    snprintf(log_path, sizeof(log_path), "%s/url-events.db", argv[3]);
    snprintf(run_path, sizeof(run_path), "%s/url-run.db", argv[3]);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(cfg_path, &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int port = 0;
    pid_t svc = start_service(&port);
    char base[64], host[32];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
    snprintf(host, sizeof(host), "127.0.0.1:%d", port);
    unlink(log_path);
    build_log(log_path, cfg, n);
    ust_free(cfg->candidate.url);
    cfg->candidate.url = ust_strdup(base);
    cfg->candidate.timeout_ms = 10000;
    double loop[15], client[15], inproc[15], one[15], eight[15];
    /* The candidate is the service (url) or the library (path), one kind at a
     * time, as a config has it. */
    char *url = cfg->candidate.url, *so = cfg->candidate.path;
    for (int r = 0; r < rounds; r++) {
        loop[r] = curl_loop(log_path, base, host);
        client[r] = client_loop(log_path, base, host);
        /* The replay's own cost: the same log, the in-process candidate. */
        cfg->candidate.url = NULL;
        cfg->candidate.path = so;
        cfg->candidate.isolate = 0;
        inproc[r] = replay(cfg, log_path, run_path, legacy, n);
        cfg->candidate.url = url;
        cfg->candidate.path = NULL;
        cfg->candidate.max_in_flight = 1;
        one[r] = replay(cfg, log_path, run_path, legacy, n);
        cfg->candidate.max_in_flight = 8;
        eight[r] = replay(cfg, log_path, run_path, legacy, n);
        fprintf(stderr, "round %d: loop %.0f/s, max_in_flight 1 %.0f/s, 8 %.0f/s\n",
                r + 1, loop[r], one[r], eight[r]);
    }
    double ml = bench_median(loop, rounds), m1 = bench_median(one, rounds),
           m8 = bench_median(eight, rounds), mc = bench_median(client, rounds),
           mi = bench_median(inproc, rounds);
    printf("%ld events, service delay %ld us, medians of %d rounds:\n", n, delay_us,
           rounds);
    printf("  plain libcurl loop, one by one   %9.0f req/s\n", ml);
    printf("  http_client loop, one by one     %9.0f req/s\n", mc);
    printf("  replay, in-process candidate     %9.0f events/s (no service)\n", mi);
    printf("  replay, url max_in_flight 1      %9.0f events/s  %5.1f%% of the loop\n",
           m1, 100 * m1 / ml);
    printf(
        "  replay, url max_in_flight 8      %9.0f events/s  %5.2fx max_in_flight 1\n",
        m8, m8 / m1);
    kill(svc, SIGKILL);
    waitpid(svc, NULL, 0);
    unlink(log_path);
    unlink(run_path);
    cfg->candidate.path = so; /* freed with the config, as it came */
    ust_config_free(cfg);
    return 0;
}
