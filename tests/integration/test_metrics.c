/* /metrics as Prometheus takes it: the real binary serving with both
 * plugins (a candidate that breaks the protocol every 20th event), signed
 * callbacks over real sockets, then the scrape checked by Debian's
 * `promtool check metrics` and its histograms and fault counters read. */
#include "sanitized.h"
#include "serve_client.h"

#include <understudy/alloc.h>
#include <understudy/sig.h>

#include <jansson.h>
#include <sqlite3.h>
#include <time.h>

#define SECRET "whsec_metrics_test"
#define N_SIGNED 25  /* seq 20 among them: the candidate's garbage line */
#define N_UNSIGNED 4 /* one alone, two pipelined, one after 100 Continue */

static int setup(void **state)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_fixture_path("misbehaving_stdout_garbage", cp);
    *state = serve_world_new(
        json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate", "path", cp),
        SECRET);
    return 0;
}

static int teardown(void **state)
{
    serve_world_free(*state);
    return 0;
}

/* POST path with body and extra header lines; the status. */
static int post(int port, const char *path, const char *extra, const char *body)
{
    char *raw = ust_sprintf("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: "
                            "application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
                            path, extra, strlen(body), body);
    http_resp r;
    int status = http_once(port, raw, strlen(raw), &r);
    ust_free(raw);
    return status;
}

/* The status of the next response on fd, -1 at EOF. */
static int next_status(int fd, char *buf, size_t *len, size_t cap)
{
    http_resp r;
    return read_response(fd, buf, len, cap, &r) ? r.status : -1;
}

/* Three requests to /payments on one connection: two pipelined in one
 * write, then one that waits for 100 Continue before its body. Each is one
 * request for the latency histogram; the 100 is not an answer. */
static void post_kept_alive(int port)
{
    static const char body[] = "{\"order_id\":\"o\",\"amount\":5}";
    char *a =
        ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: p1\r\n"
                    "Content-Length: %zu\r\n\r\n%sPOST /payments HTTP/1.1\r\n"
                    "Host: t\r\nIdempotency-Key: p2\r\nContent-Length: %zu\r\n"
                    "\r\n%s",
                    strlen(body), body, strlen(body), body);
    char *c =
        ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: p3\r\n"
                    "Expect: 100-continue\r\nContent-Length: %zu\r\n\r\n",
                    strlen(body));
    int fd = http_connect(port);
    char buf[16384];
    size_t len = 0;
    send_all(fd, a, strlen(a));
    assert_int_equal(next_status(fd, buf, &len, sizeof(buf)), 202);
    assert_int_equal(next_status(fd, buf, &len, sizeof(buf)), 202);
    send_all(fd, c, strlen(c));
    assert_int_equal(next_status(fd, buf, &len, sizeof(buf)), 100);
    send_all(fd, body, strlen(body));
    assert_int_equal(next_status(fd, buf, &len, sizeof(buf)), 202);
    close(fd);
    ust_free(a);
    ust_free(c);
}

/* A payment_intent.succeeded callback for evt, signed now. */
static int post_signed(int port, int i)
{
    char *body = ust_sprintf(
        "{\"id\":\"evt_m%d\",\"type\":\"payment_intent.succeeded\",\"data\":{"
        "\"object\":"
        "{\"id\":\"pi_m%d\",\"amount\":%d,\"currency\":\"eur\",\"metadata\":"
        "{\"order_id\":\"o_m%d\"}}}}",
        i, i, 100 + i, i);
    char *sig = server_stripe_signature(body, (int64_t)time(NULL), SECRET);
    char *extra = ust_sprintf("Stripe-Signature: %s\r\n", sig);
    int status = post(port, "/webhooks/stripe", extra, body);
    ust_free(extra);
    ust_free(sig);
    ust_free(body);
    return status;
}

/* GET /metrics; the body, malloc'd (the client's buffer is too small). */
static char *scrape(int port)
{
    int fd = http_connect(port);
    static const char get[] =
        "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    send_all(fd, get, sizeof(get) - 1);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while (len < cap - 1 && (n = recv(fd, buf + len, cap - 1 - len, 0)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    assert_non_null(body);
    assert_int_equal(atoi(buf + 9), 200);
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* The value of one series ("name{labels}"), or -1 when it is not there. */
static double value_of(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *at = text; (at = strstr(at, series)) != NULL; at += n)
        if ((at == text || at[-1] == '\n') && at[n] == ' ')
            return strtod(at + n + 1, NULL);
    return -1;
}

/* Scrapes until the runner has decided every event: no sleep decides the
 * outcome, it only spaces the polls. */
static char *scrape_when_decided(int port, int events)
{
    for (int i = 0; i < 1200; i++) {
        char *text = scrape(port);
        if (value_of(text, "understudy_runner_events_total") == events &&
            value_of(text, "understudy_runner_lag_events") == 0)
            return text;
        free(text);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the runner did not decide %d events", events);
    return NULL;
}

/* promtool from the environment (make test-deps puts Debian's there), else
 * from PATH; NULL when there is none. */
static const char *promtool(void)
{
    const char *p = getenv("UST_PROMTOOL");
    if (p != NULL && access(p, X_OK) == 0)
        return p;
    return system("command -v promtool >/dev/null 2>&1") == 0 ? "promtool" : NULL;
}

static void test_promtool_accepts_the_scrape(void **state)
{
    serve_world *w = *state;
    const char *tool = promtool();
    if (tool == NULL) {
        fprintf(stderr, "promtool not found: run `make test-deps` (it extracts it from"
                        " Debian's prometheus package) or set UST_PROMTOOL\n");
        skip();
    }
    serve_world_start(w);
    for (int i = 1; i <= N_SIGNED; i++)
        assert_int_equal(post_signed(w->srv.port, i), 202);
    assert_int_equal(post(w->srv.port, "/payments", "Idempotency-Key: p0\r\n",
                          "{\"order_id\":\"o0\",\"amount\":5}"),
                     202);
    post_kept_alive(w->srv.port);
    assert_int_equal(post(w->srv.port, "/nowhere", "", "{}"), 404);
    char *text = scrape_when_decided(w->srv.admin_port, N_SIGNED + N_UNSIGNED);

    char path[PATH_MAX], out[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/metrics.txt", w->dir);
    snprintf(out, sizeof(out), "%s/promtool.out", w->dir);
    ust_test_write_file(path, text);
    snprintf(cmd, sizeof(cmd), "'%s' check metrics < '%s' > '%s' 2>&1", tool, path,
             out);
    int rc = system(cmd);
    FILE *f = fopen(out, "r");
    char said[4096] = "";
    size_t said_len = f ? fread(said, 1, sizeof(said) - 1, f) : 0;
    said[said_len] = '\0';
    if (f != NULL)
        fclose(f);
    if (rc != 0 || said_len != 0)
        fail_msg("promtool check metrics (exit %d) said:\n%s",
                 WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, said);

    /* Every request sent is in the latency histogram, by route. */
    assert_true(value_of(text, "understudy_request_duration_seconds_count"
                               "{route=\"/webhooks/stripe\"}") == N_SIGNED);
    assert_true(value_of(text, "understudy_request_duration_seconds_count"
                               "{route=\"/payments\"}") == N_UNSIGNED);
    assert_true(value_of(text, "understudy_request_duration_seconds_count"
                               "{route=\"none\"}") >= 1); /* the 404, earlier scrapes */
    assert_true(value_of(text, "understudy_request_duration_seconds_bucket"
                               "{route=\"/payments\",le=\"+Inf\"}") == N_UNSIGNED);
    /* Every event in one commit or another. */
    assert_true(value_of(text, "understudy_commit_batch_events_sum") ==
                N_SIGNED + N_UNSIGNED);
    double commits = value_of(text, "understudy_commit_duration_seconds_count");
    assert_true(commits >= 1 && commits <= N_SIGNED + N_UNSIGNED);
    assert_true(value_of(text, "understudy_commit_batch_events_count") == commits);
    /* Both plugins decided every event (all are fed: verified or unsigned). */
    assert_true(value_of(text, "understudy_plugin_decide_duration_seconds_count"
                               "{plugin=\"legacy\"}") == N_SIGNED + N_UNSIGNED);
    assert_true(value_of(text, "understudy_plugin_decide_duration_seconds_count"
                               "{plugin=\"candidate\"}") == N_SIGNED + N_UNSIGNED);
    /* The garbage line at seq 20: a protocol error, then a restart. */
    assert_true(value_of(text, "understudy_plugin_errors_total"
                               "{plugin=\"candidate\",cause=\"protocol\"}") == 1);
    assert_true(value_of(text, "understudy_plugin_restarts_total"
                               "{plugin=\"candidate\"}") >= 1);
    assert_true(value_of(text, "understudy_plugin_errors_total"
                               "{plugin=\"legacy\",cause=\"protocol\"}") == 0);
    assert_true(value_of(text, "understudy_divergences_total") >= 1);
    assert_true(value_of(text, "understudy_runner_lag_seconds") == 0);
    assert_non_null(strstr(text, "\nunderstudy_divergences_by_class_total{class=\""));
    assert_true(value_of(text, "understudy_divergences_by_class_complete") == 1);
    /* The state cache within its bound, the default 64 MiB. */
    double cache = value_of(text, "understudy_runner_state_cache_bytes");
    assert_true(cache > 0 && cache <= 64 << 20);
    assert_true(value_of(text, "understudy_runner_state_cache_limit_bytes") ==
                64 << 20);
    free(text);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

/* A runner stuck in the candidate's decide: its lag in seconds counts from
 * the oldest event it has not decided, and keeps counting while it stays
 * stuck; 0 once it has decided everything. */
static void test_a_stuck_runner_shows_its_lag_in_seconds(void **state)
{
    serve_world *w = *state;
    char lp[PATH_MAX], cp[PATH_MAX], gate[PATH_MAX], unblock[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_fixture_path("misbehaving_block", cp);
    ust_test_tmpdir(gate); /* for the file that lets the candidate go on */
    snprintf(unblock, sizeof(unblock), "%s/unblock", gate);
    serve_world_free(w);
    *state = w = serve_world_new(
        json_pack("{s:{s:s},s:{s:s,s:i,s:{s:s}}}", "legacy", "path", lp, "candidate",
                  "path", cp, "timeout_ms", 600000, "config", "unblock_file", unblock),
        SECRET);
    serve_world_start(w);
    assert_int_equal(post_signed(w->srv.port, 1), 202);
    assert_int_equal(post_signed(w->srv.port, 2), 202);
    char *text = scrape(w->srv.admin_port);
    /* Both are durable and neither decided: the candidate holds event 1. */
    assert_true(value_of(text, "understudy_runner_lag_events") == 2);
    double first = value_of(text, "understudy_runner_lag_seconds");
    free(text);
    assert_true(first > 0);
    text = scrape(w->srv.admin_port);
    assert_true(value_of(text, "understudy_runner_lag_seconds") >= first);
    free(text);
    ust_test_write_file(unblock, "go");
    text = scrape_when_decided(w->srv.admin_port, 2);
    assert_true(value_of(text, "understudy_runner_lag_seconds") == 0);
    free(text);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    ust_test_rmdir(gate);
}

/* Every class of the run database's divergences has its count in the
 * scrape, and the scrape lists no other; the total. */
static int64_t classes_agree(const char *run, const char *text)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(run, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT class, count(*) FROM divergences"
                                        " GROUP BY class",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int64_t total = 0, classes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char series[512];
        snprintf(series, sizeof(series),
                 "understudy_divergences_by_class_total{class=\"%s\"}",
                 (const char *)sqlite3_column_text(st, 0));
        int64_t n = sqlite3_column_int64(st, 1);
        if (value_of(text, series) != (double)n)
            fail_msg("%s: %g in the scrape, %lld in the run", series,
                     value_of(text, series), (long long)n);
        total += n;
        classes++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    int64_t listed = 0;
    for (const char *at = text;
         (at = strstr(at, "\nunderstudy_divergences_by_class_total{")) != NULL; at++)
        listed++;
    assert_int_equal(listed, classes);
    assert_true(value_of(text, "understudy_divergences_by_class_complete") == 1);
    return total;
}

/* The divergences by class are counted in memory as the runner commits
 * them; they equal the run's rows, and after a restart that resumes the run
 * they count the rows from before it too. */
static void test_the_classes_agree_with_the_run(void **state)
{
    serve_world *w = *state;
    serve_world_start(w);
    for (int i = 1; i <= N_SIGNED; i++)
        assert_int_equal(post_signed(w->srv.port, i), 202);
    char *text = scrape_when_decided(w->srv.admin_port, N_SIGNED);
    int64_t before = classes_agree(w->run, text);
    free(text);
    assert_true(before >= 1);
    serve_world_stop(w);

    serve_world_start(w); /* resumes the run */
    text = scrape(w->srv.admin_port);
    assert_int_equal(classes_agree(w->run, text), before);
    free(text);
    for (int i = N_SIGNED + 1; i <= 2 * N_SIGNED; i++)
        assert_int_equal(post_signed(w->srv.port, i), 202);
    text = scrape_when_decided(w->srv.admin_port, N_SIGNED);
    int64_t after = classes_agree(w->run, text);
    free(text);
    assert_true(after > before);
    serve_world_stop(w);
}

/* ---- the runner's memory under a steady load ---------------------------- */

#define SOAK_WARM 10000   /* events before the first reading: caches full */
#define SOAK_EVENTS 40000 /* events between the two readings */
#define SOAK_WINDOW 64    /* requests pipelined on the connection at once */
/* Growth allowed per event after the warm-up: a generous bound that the
 * 1.7 KB an event once seen (caches filling without bound) exceeds 6x. */
#define SOAK_MAX_BYTES_PER_EVENT 256

/* serve's resident memory, in KiB, from /proc. */
static long vm_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kib = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    assert_true(kib > 0);
    return kib;
}

/* A generated interchange line as a request, its Stripe signature made
 * again now (the generated one is days old and would not verify). */
static char *raw_request(const char *line)
{
    json_error_t jerr;
    json_t *rec = json_loads(line, 0, &jerr);
    assert_non_null(rec);
    const char *body = json_string_value(json_object_get(rec, "body"));
    assert_non_null(body);
    char *head =
        ust_sprintf("%s %s HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n",
                    json_string_value(json_object_get(rec, "method")),
                    json_string_value(json_object_get(rec, "target")), strlen(body));
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(rec, "headers"), i, h)
    {
        const char *name = json_string_value(json_array_get(h, 0));
        char *value = strcasecmp(name, "Stripe-Signature") == 0
                          ? server_stripe_signature(body, (int64_t)time(NULL), SECRET)
                          : ust_strdup(json_string_value(json_array_get(h, 1)));
        assert_true(strcasecmp(name, "webhook-signature") != 0); /* not re-signed */
        char *more = ust_sprintf("%s%s: %s\r\n", head, name, value);
        ust_free(head);
        ust_free(value);
        head = more;
    }
    char *raw = ust_sprintf("%s\r\n%s", head, body);
    ust_free(head);
    json_decref(rec);
    return raw;
}

/* The next n lines of gen to serve on one connection, SOAK_WINDOW pipelined
 * at a time; each must be recorded (202). */
static void send_generated(int port, FILE *gen, int n)
{
    int fd = http_connect(port);
    static char buf[1 << 17];
    size_t len = 0;
    char line[1 << 14];
    while (n > 0) {
        int k = n < SOAK_WINDOW ? n : SOAK_WINDOW;
        for (int i = 0; i < k; i++) {
            assert_non_null(fgets(line, sizeof(line), gen));
            char *raw = raw_request(line);
            send_all(fd, raw, strlen(raw));
            ust_free(raw);
        }
        for (int i = 0; i < k; i++)
            assert_int_equal(next_status(fd, buf, &len, sizeof(buf)), 202);
        n -= k;
    }
    close(fd);
}

/* serve with the reference plugins (both in process, so its RSS holds all
 * their state) under generated traffic: once the caches are full, its
 * memory stays flat. The caches are made small (cache.state_mb and
 * cache.run_pages_mb, 1 MiB each) so they fill within the warm-up; the
 * state cache's gauge stays within its bound. Nothing here is a timing:
 * the readings are taken when the runner has decided every event sent. */
static void test_memory_plateaus_under_a_steady_load(void **state)
{
    serve_world *w = *state;
    char lp[PATH_MAX], cp[PATH_MAX], gen_path[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    server_write_config_keys(
        w->cfg, json_pack("{s:{s:{s:s},s:{s:s,s:b}},s:{s:i,s:i}}", "plugins", "legacy",
                          "path", lp, "candidate", "path", cp, "isolate", 0, "cache",
                          "state_mb", 1, "run_pages_mb", 1));
    ust_config *cfg = ust_test_load_config(w->cfg);
    snprintf(gen_path, sizeof(gen_path), "%s/gen.jsonl", w->dir);
    ust_test_generate(cfg, 11, SOAK_WARM + SOAK_EVENTS, gen_path, NULL);
    ust_config_free(cfg);
    FILE *gen = fopen(gen_path, "r");
    assert_non_null(gen);
    serve_world_start(w);

    send_generated(w->srv.port, gen, SOAK_WARM);
    free(scrape_when_decided(w->srv.admin_port, SOAK_WARM));
    long warm_kib = vm_rss_kib(w->srv.pid);
    send_generated(w->srv.port, gen, SOAK_EVENTS);
    char *text = scrape_when_decided(w->srv.admin_port, SOAK_WARM + SOAK_EVENTS);
    long end_kib = vm_rss_kib(w->srv.pid);
    fclose(gen);

    double per_event = (double)(end_kib - warm_kib) * 1024.0 / SOAK_EVENTS;
    double cache = value_of(text, "understudy_runner_state_cache_bytes");
    double limit = value_of(text, "understudy_runner_state_cache_limit_bytes");
    print_message("RSS %ld KiB after %d events, %ld KiB after %d more: %.1f bytes an"
                  " event; state cache %.0f of %.0f bytes\n",
                  warm_kib, SOAK_WARM, end_kib, SOAK_EVENTS, per_event, cache, limit);
    free(text);
    assert_true(limit == 1 << 20);
    assert_true(cache > 0 && cache <= limit);
#ifndef UST_TEST_SANITIZED /* there RSS is shadow and quarantine */
    assert_true(per_event < SOAK_MAX_BYTES_PER_EVENT);
#endif
    serve_world_stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_promtool_accepts_the_scrape, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_stuck_runner_shows_its_lag_in_seconds,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_classes_agree_with_the_run, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_memory_plateaus_under_a_steady_load, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
