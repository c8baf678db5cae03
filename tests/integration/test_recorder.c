/* The recorder's connection handling, against the real binary on 127.0.0.1
 * (and, where a fault cannot be made for real, ust_serve in this process):
 * idle keep-alive connections, the connection cap, half-closed clients,
 * Expect: 100-continue, header forms a proxy may read otherwise, and a
 * legacy plugin's response headers and status in --respond legacy. */
#include "serve_client.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/clock.h>
#include <understudy/config.h>
#include <understudy/log.h>
#include <understudy/serve.h>

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/resource.h>

typedef serve_world world;

/* The test config with these limits (a reference taken) and legacy as the
 * legacy plugin (a path; NULL: the shipped one). */
static void write_config(world *w, json_t *limits, const char *legacy)
{
    server_write_config_keys(
        w->cfg,
        json_pack(
            "{s:o,s:o}", "limits", limits, "plugins",
            server_plugins(legacy ? json_pack("{s:s}", "path", legacy) : NULL, NULL)));
}

/* Starts serve with the one limit key set to value, and no header timeout
 * to speak of (a minute), so that only the limit under test acts. */
static void start_with_limit(world *w, const char *key, int value)
{
    write_config(w, json_pack("{s:i,s:i}", key, value, "header_timeout_ms", 60000),
                 NULL);
    serve_world_start(w);
}

static int setup(void **state)
{
    world *w = serve_world_new(NULL, "whsec_recorder_test");
    write_config(w, json_pack("{s:i}", "header_timeout_ms", 5000), NULL);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    serve_world_free(*state);
    return 0;
}

/* On the public port a 404, kept alive (the admin listener serves it): a
 * cheap answer that records nothing. */
static const char health[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

/* A POST to the unsigned /payments route, as raw HTTP (ust_free). */
static char *payment(int i, const char *extra)
{
    char body[96];
    snprintf(body, sizeof(body),
             "{\"order_id\":\"o%d\",\"amount\":1,\"currency\":\"eur\"}", i);
    return ust_sprintf(
        "POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k%d\r\n"
        "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
        i, extra ? extra : "", strlen(body), body);
}

/* 1 when the server closes fd (EOF or reset) before the 10 s receive
 * timeout http_connect sets, 0 when it is still open then. */
static int closed_by_server(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static int64_t events_in(const char *path)
{
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(path, UST_LOG_READONLY, &log, NULL), 0);
    json_t *st = NULL;
    assert_int_equal(ust_log_stats(log, &st, NULL), 0);
    int64_t n = json_integer_value(json_object_get(st, "events"));
    json_decref(st);
    ust_log_close(log);
    return n;
}

static int64_t log_events(world *w)
{
    return events_in(w->log);
}

/* ---- the live runner under load --------------------------------------- */

/* understudy_runner_events_total from the admin listener's /metrics. */
static long long runner_events(world *w)
{
    static const char metrics[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    static http_resp r;
    assert_int_equal(http_once(w->srv.admin_port, metrics, sizeof(metrics) - 1, &r),
                     200);
    const char *at = strstr(r.body, "\nunderstudy_runner_events_total ");
    assert_non_null(at);
    return atoll(at + strlen("\nunderstudy_runner_events_total "));
}

/* A busy recorder has the runner wait, but only while the oldest event it
 * owes is younger than a tenth of health.max_lag_s: under load that does
 * not let up, the runner decides all the same. (Without the bound it would
 * wait for the load to end, and this load ends only once it decided more
 * than it had when the load was well under way: the first commits, before
 * the recorder counts as busy, are decided at once.) */
static void expect_decisions_under_lasting_load(world *w)
{
    enum { BURST = 200, SETTLED = 10, MAX_BURSTS = 150 };
    int fd = http_connect(w->srv.port);
    char *burst = NULL;
    size_t burst_len = 0;
    static char buf[1 << 16];
    size_t len = 0;
    int bursts = 0;
    long long settled = -1, decided = -1;
    for (; bursts < MAX_BURSTS && decided <= settled; bursts++) {
        /* Pipelined: a burst of requests in one write, then their answers,
         * and the next burst right after, never a pause in between. */
        FILE *f = open_memstream(&burst, &burst_len);
        assert_non_null(f);
        for (int i = 0; i < BURST; i++) {
            char *req = payment(bursts * BURST + i, NULL);
            fputs(req, f);
            ust_free(req);
        }
        fclose(f);
        send_all(fd, burst, burst_len);
        free(burst);
        for (int i = 0; i < BURST; i++) {
            http_resp *r = calloc(1, sizeof(*r));
            assert_int_equal(read_response(fd, buf, &len, sizeof(buf), r), 1);
            assert_int_equal(r->status, 202);
            free(r);
        }
        decided = runner_events(w);
        if (bursts < SETTLED)
            settled = decided;
    }
    close(fd);
    if (decided <= settled)
        fail_msg("the runner decided nothing more under %d bursts of %d requests",
                 bursts - SETTLED, BURST);
}

/* The config with health.max_lag_s 1 (the runner waits at most 100 ms). */
static void write_max_lag_1(world *w)
{
    server_write_config_keys(w->cfg,
                             json_pack("{s:{s:i},s:o}", "health", "max_lag_s", 1,
                                       "plugins", server_plugins(NULL, NULL)));
}

static void test_the_runner_decides_under_lasting_load(void **state)
{
    world *w = *state;
    write_max_lag_1(w);
    serve_world_start(w);
    expect_decisions_under_lasting_load(w);
    serve_world_stop(w);
}

/* Arrival times are the wall clock's: a backlog left undecided by a run
 * whose clock was an hour ahead (or a clock since stepped back) looks an
 * hour younger than it is. Under lasting load the runner still waits no
 * longer than the bound, on a clock that does not step. */
static void test_a_backlog_from_the_future_does_not_starve_the_runner(void **state)
{
    world *w = *state;
    write_max_lag_1(w);
    enum { BACKLOG = 20000 };
    ust_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(ust_config_load(w->cfg, &cfg, &err), 0);
    ust_request *reqs = calloc(BACKLOG, sizeof(*reqs));
    assert_non_null(reqs);
    int64_t ahead = ust_time_wall_us() + 3600 * INT64_C(1000000);
    for (int i = 0; i < BACKLOG; i++) {
        char *raw = payment(1000000 + i, NULL);
        ust_request *r = &reqs[i];
        r->received_at_us = ahead + i;
        r->remote = ust_strdup("127.0.0.1:1");
        r->method = ust_strdup("POST");
        r->target = ust_strdup("/payments");
        const char *body = strstr(raw, "\r\n\r\n") + 4;
        r->body = (unsigned char *)ust_strdup(body);
        r->body_len = strlen(body);
        char key[32];
        snprintf(key, sizeof(key), "f%d", i);
        assert_int_equal(ust_request_add_header(r, "Content-Type", "application/json"),
                         0);
        assert_int_equal(ust_request_add_header(r, "Idempotency-Key", key), 0);
        ust_free(raw);
    }
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(w->log, UST_LOG_CREATE, &log, &err), 0);
    assert_int_equal(ust_log_append_requests(log, cfg, reqs, BACKLOG, NULL, NULL, &err),
                     0);
    ust_log_close(log);
    for (int i = 0; i < BACKLOG; i++)
        ust_request_clear(&reqs[i]);
    free(reqs);
    ust_config_free(cfg);
    serve_world_start(w);
    expect_decisions_under_lasting_load(w);
    serve_world_stop(w);
}

/* ---- item 8: idle connections, the cap, the descriptor limit ---------- */

/* Keep-alive connections that asked once and then say nothing are closed
 * after idle_timeout_ms; a connection is not closed while it is owed. */
static void test_idle_keep_alive_connections_are_closed(void **state)
{
    world *w = *state;
    start_with_limit(w, "idle_timeout_ms", 200);
    enum { N = 12 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        fds[i] = http_connect(w->srv.port);
        send_all(fds[i], health, sizeof(health) - 1);
        char buf[4096];
        size_t len = 0;
        http_resp r;
        assert_int_equal(read_response(fds[i], buf, &len, sizeof(buf), &r), 1);
        assert_int_equal(r.status, 404);
        assert_int_equal(r.closed, 0);
    }
    for (int i = 0; i < N; i++) {
        assert_true(closed_by_server(fds[i]));
        close(fds[i]);
    }
    serve_world_stop(w);
}

/* Beyond max_connections a new connection is refused (503, or closed)
 * while those in the middle of a request finish it; at the cap, an idle
 * keep-alive connection makes room for a new one. The descriptor limit is
 * raised to the hard one. */
static void test_connections_beyond_the_cap_are_refused(void **state)
{
    world *w = *state;
    enum { CAP = 8 };
    write_config(
        w, json_pack("{s:i,s:i}", "max_connections", CAP, "idle_timeout_ms", 60000),
        NULL);
    struct rlimit own;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &own), 0);
    int lowered = own.rlim_max != RLIM_INFINITY && own.rlim_max > 512;
    if (lowered) { /* the server starts with a soft limit below its hard one */
        struct rlimit low = {256, own.rlim_max};
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    }
    serve_world_start(w);
    if (lowered)
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &own), 0);
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)w->srv.pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int seen = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Max open files", 14) != 0)
            continue;
        char soft[32], hard[32];
        assert_int_equal(sscanf(line + 14, "%31s %31s", soft, hard), 2);
        assert_string_equal(soft, hard);
        seen = 1;
    }
    fclose(f);
    assert_true(seen);

    /* CAP connections in the middle of a request: headers and half the body */
    int fds[CAP];
    char *raw[CAP];
    for (int i = 0; i < CAP; i++) {
        raw[i] = payment(i + 1, NULL);
        fds[i] = http_connect(w->srv.port);
        send_all(fds[i], raw[i], strlen(raw[i]) - 10);
    }
    /* One more: 503 or closed, never served. (The server reads the busy
     * ones' bytes before it accepts this one: all of them are answered.) */
    char buf[4096];
    size_t len = 0;
    http_resp r;
    int over = http_connect(w->srv.port);
    send_all(over, health, sizeof(health) - 1);
    if (read_response(over, buf, &len, sizeof(buf), &r) == 1) {
        assert_int_equal(r.status, 503);
        assert_non_null(strstr(r.body, "too many connections"));
    }
    close(over);
    /* Those in flight finish, and stay open, idle. */
    for (int i = 0; i < CAP; i++) {
        send_all(fds[i], raw[i] + strlen(raw[i]) - 10, 10);
        len = 0;
        assert_int_equal(read_response(fds[i], buf, &len, sizeof(buf), &r), 1);
        assert_int_equal(r.status, 202);
        assert_int_equal(r.closed, 0);
        ust_free(raw[i]);
    }
    /* At the cap with idle ones, a new one is served (404: /healthz is on
     * the admin listener): an idle one, and only one, is closed to make room. */
    assert_int_equal(http_once(w->srv.port, health, sizeof(health) - 1, &r), 404);
    struct pollfd pfd[CAP];
    for (int i = 0; i < CAP; i++)
        pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    assert_true(poll(pfd, CAP, 10000) >= 1);
    usleep(200 * 1000); /* more would have closed by now */
    assert_int_equal(poll(pfd, CAP, 0), 1);
    for (int i = 0; i < CAP; i++)
        close(fds[i]);
    serve_world_stop(w);
    assert_int_equal(log_events(w), CAP);
}

/* ---- item 9: half-close ------------------------------------------------ */

/* A client that sends its whole request and shuts down its side gets the
 * answer, then the server closes: it has no reason to retry. */
static void test_a_half_closed_client_gets_its_answer(void **state)
{
    world *w = *state;
    serve_world_start(w);
    char *a = payment(1, NULL), *b = payment(2, NULL);
    char *both = ust_sprintf("%s%s%s", a, health, b);
    int fd = http_connect(w->srv.port);
    send_all(fd, both, strlen(both));
    shutdown(fd, SHUT_WR);
    char buf[8192];
    size_t len = 0;
    expect_pipelined_answers(fd, buf, &len, sizeof(buf));
    assert_true(closed_by_server(fd));
    close(fd);
    ust_free(a);
    ust_free(b);
    ust_free(both);
    serve_world_stop(w);
    assert_int_equal(log_events(w), 2);
}

/* ---- item 10: Expect ---------------------------------------------------- */

static void test_expect_100_continue(void **state)
{
    world *w = *state;
    start_with_limit(w, "max_body_bytes", 1024);
    char *raw = payment(1, "Expect: 100-continue\r\n");
    char *body = strstr(raw, "\r\n\r\n") + 4;
    int fd = http_connect(w->srv.port);
    send_all(fd, raw, (size_t)(body - raw)); /* the headers only, then wait */
    char buf[4096];
    size_t len = 0;
    http_resp r;
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    assert_int_equal(r.status, 100);
    send_all(fd, body, strlen(body));
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    assert_int_equal(r.status, 202);
    close(fd);
    ust_free(raw);
    /* Over the limit: 413 at once, without the body. */
    const char big[] = "POST /payments HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                       "Content-Length: 4096\r\n\r\n";
    assert_int_equal(http_once(w->srv.port, big, sizeof(big) - 1, &r), 413);
    /* An expectation it cannot meet. */
    const char odd[] = "POST /payments HTTP/1.1\r\nHost: t\r\nExpect: 200-maybe\r\n"
                       "Content-Length: 2\r\n\r\n";
    assert_int_equal(http_once(w->srv.port, odd, sizeof(odd) - 1, &r), 417);
    serve_world_stop(w);
    assert_int_equal(log_events(w), 1);
}

/* ---- item 11: header forms a proxy may read otherwise ----------------- */

/* Each is 400, whole or a byte at a time, and nothing is recorded. */
static void test_lenient_header_forms_are_refused(void **state)
{
    world *w = *state;
    serve_world_start(w);
    static const char *const bad[] = {
        /* a space before the colon: chunked here, maybe not at a proxy */
        "POST /payments HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n"
        "2\r\n{}\r\n0\r\n\r\n",
        "POST /payments HTTP/1.1\r\nHost: t\r\nContent-Length\t: 2\r\n\r\n{}",
        /* obs-fold */
        "POST /payments HTTP/1.1\r\nHost: t\r\nX-Note: one\r\n two\r\n"
        "Content-Length: 2\r\n\r\n{}",
        "POST /payments HTTP/1.1\r\nHost: t\r\nX-Note:\r\n\ttwo\r\n"
        "Content-Length: 2\r\n\r\n{}",
        /* a space inside a name */
        "POST /payments HTTP/1.1\r\nHost: t\r\nX Note: one\r\nContent-Length: "
        "2\r\n\r\n{}",
        /* the first header line starts with a space */
        "POST /payments HTTP/1.1\r\n Host: t\r\nContent-Length: 2\r\n\r\n{}",
    };
    http_resp r;
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        if (http_once(w->srv.port, bad[i], strlen(bad[i]), &r) != 400)
            fail_msg("case %zu: %d, not 400", i, r.status);
        /* a byte per write: the checks hold across reads */
        int fd = http_connect(w->srv.port);
        for (size_t k = 0; k < strlen(bad[i]); k++) {
            send_all(fd, bad[i] + k, 1);
            usleep(200);
        }
        char buf[4096];
        size_t len = 0;
        if (read_response(fd, buf, &len, sizeof(buf), &r) != 1 || r.status != 400)
            fail_msg("case %zu, a byte at a time: %d, not 400", i, r.status);
        close(fd);
    }
    /* A well-formed one, a byte at a time, still goes through. */
    char *ok = payment(1, "X-Note: one two\r\n");
    int fd = http_connect(w->srv.port);
    for (size_t k = 0; ok[k] != '\0'; k++)
        send_all(fd, ok + k, 1);
    char buf[4096];
    size_t len = 0;
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    assert_int_equal(r.status, 202);
    close(fd);
    ust_free(ok);
    serve_world_stop(w);
    assert_int_equal(log_events(w), 1);
}

/* ---- item 12: no memory for a connection ------------------------------ */

static pthread_t loop_thread;
static atomic_int fail_next_on_loop;

static int loop_fails(void)
{
    int one = 1;
    return pthread_equal(pthread_self(), loop_thread) &&
           atomic_compare_exchange_strong(&fail_next_on_loop, &one, 0);
}

static void *failing_malloc(size_t n)
{
    return loop_fails() ? NULL : malloc(n);
}

static void *failing_realloc(void *p, size_t n)
{
    return loop_fails() ? NULL : realloc(p, n);
}

typedef struct inproc {
    ust_serve_opts o;
    int rc;
    _Atomic(ust_server *) server; /* between its start and its end */
    atomic_int ended;             /* started(NULL) came */
    FILE *status;                 /* its addresses, as serve says them */
} inproc;

static void on_started(void *ctx, ust_server *server)
{
    inproc *ip = ctx;
    atomic_store(&ip->server, server);
    if (server == NULL) {
        atomic_store(&ip->ended, 1);
        return;
    }
    char name[96];
    ust_serve_bound(server, 1, name, sizeof(name));
    fprintf(ip->status, "admin on %s\n", name);
    ust_serve_bound(server, 0, name, sizeof(name));
    fprintf(ip->status, "listening on %s\n", name);
    fflush(ip->status);
}

static void *serve_main(void *arg)
{
    inproc *ip = arg;
    ip->o.started = on_started;
    ip->o.started_ctx = ip;
    loop_thread = pthread_self();
    char *err = NULL;
    ip->rc = ust_serve(&ip->o, &err);
    free(err);
    fclose(ip->status);
    return NULL;
}

/* The world's config with its secrets, for ust_serve in this process. */
static ust_config *inproc_config(world *w)
{
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(w->cfg, &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0)
        fail_msg("config: %s", err);
    return cfg;
}

/* The first allocation on the loop thread after a connection arrives is
 * the connection's: when it fails, that client is closed unanswered, and
 * the listener goes on accepting. */
static void test_a_failed_connection_allocation_leaves_the_listener_up(void **state)
{
    world *w = *state;
    ust_config *cfg = inproc_config(w);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    inproc ip = {.o = {.cfg = cfg, .listen = "127.0.0.1:0", .log_path = w->log},
                 .status = fdopen(pipefd[1], "w")};
    assert_int_equal(ust_replace_allocator(failing_malloc, failing_realloc, free), 0);
    pthread_t th;
    pthread_create(&th, NULL, serve_main, &ip);
    FILE *status = fdopen(pipefd[0], "r");
    char line[128] = "";
    assert_non_null(fgets(line, sizeof(line), status));
    fclose(status);
    assert_non_null(strstr(line, "admin on ")); /* the first line: /healthz is there */
    int port = atoi(strrchr(line, ':') + 1);

    atomic_store(&fail_next_on_loop, 1);
    int fd = http_connect(port);
    send_all(fd, health, sizeof(health) - 1);
    assert_true(closed_by_server(fd));
    close(fd);
    assert_int_equal(atomic_load(&fail_next_on_loop), 0); /* it was that one */
    http_resp r;
    assert_int_equal(http_once(port, health, sizeof(health) - 1, &r), 200);

    ust_serve_stop(atomic_load(&ip.server)); /* set before the addresses came */
    pthread_join(th, NULL);
    assert_int_equal(ip.rc, 0);
    ust_replace_allocator(malloc, realloc, free);
    ust_config_free(cfg);
}

/* ---- two servers in one process ------------------------------------- */

/* Starts ust_serve on log in a thread; its public port. */
static int inproc_start(inproc *ip, ust_config *cfg, const char *log, pthread_t *th)
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    *ip = (inproc){.o = {.cfg = cfg, .listen = "127.0.0.1:0", .log_path = log},
                   .status = fdopen(pipefd[1], "w")};
    pthread_create(th, NULL, serve_main, ip);
    FILE *status = fdopen(pipefd[0], "r");
    char line[128] = "";
    assert_non_null(fgets(line, sizeof(line), status)); /* admin on */
    assert_non_null(fgets(line, sizeof(line), status)); /* listening on */
    fclose(status);
    assert_non_null(strstr(line, "listening on "));
    return atoi(strrchr(line, ':') + 1);
}

/* The process's SIGPIPE disposition is still the default (terminate): the
 * library neither relies on nor changes it. */
static void expect_sigpipe_default(void)
{
    struct sigaction now;
    assert_int_equal(sigaction(SIGPIPE, NULL, &now), 0);
    assert_true(now.sa_handler == SIG_DFL);
}

static void post_payments(int port, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char *req = payment(i, NULL);
        http_resp r;
        assert_int_equal(http_once(port, req, strlen(req), &r), 202);
        ust_free(req);
    }
}

/* Two servers in one process, each on its own log, recording at once: one
 * stopped with ust_serve_stop ends while the other goes on answering (a
 * signal handler of the process would have stopped both), and neither
 * touched the process's SIGPIPE disposition. */
static void test_two_servers_in_one_process(void **state)
{
    world *w = *state;
    ust_config *cfg = inproc_config(w);
    expect_sigpipe_default();
    char log2[PATH_MAX + 8];
    snprintf(log2, sizeof(log2), "%s/two.db", w->dir);
    inproc a, b;
    pthread_t ta, tb;
    int pa = inproc_start(&a, cfg, w->log, &ta);
    int pb = inproc_start(&b, cfg, log2, &tb);
    assert_int_not_equal(pa, pb);
    post_payments(pa, 0, 20);
    post_payments(pb, 100, 7);
    post_payments(pa, 20, 5);

    ust_serve_stop(atomic_load(&a.server));
    pthread_join(ta, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(atomic_load(&a.ended), 1);
    post_payments(pb, 107, 3); /* the other one still records */
    ust_serve_stop(atomic_load(&b.server));
    ust_serve_stop(atomic_load(&b.server)); /* twice is once */
    pthread_join(tb, NULL);
    assert_int_equal(b.rc, 0);

    assert_int_equal(events_in(w->log), 25);
    assert_int_equal(events_in(log2), 10);
    expect_sigpipe_default();
    ust_config_free(cfg);
}

/* A client that sends many requests and leaves at once: the server's
 * answers after the first meet a closed socket (EPIPE), which raises
 * SIGPIPE at the writing thread. The process keeps SIGPIPE's default
 * (terminate): it survives only if the library does not depend on the
 * process ignoring it. */
static void test_a_client_gone_mid_answer_leaves_the_process_up(void **state)
{
    world *w = *state;
    ust_config *cfg = inproc_config(w);
    expect_sigpipe_default();
    inproc ip;
    pthread_t th;
    int port = inproc_start(&ip, cfg, w->log, &th);
    size_t one = sizeof(health) - 1, n = 200;
    char *many = malloc(one * n);
    for (size_t i = 0; i < n; i++)
        memcpy(many + i * one, health, one);
    for (int round = 0; round < 20; round++) {
        int fd = http_connect(port);
        send_all(fd, many, one * n);
        close(fd);
    }
    free(many);
    http_resp r;
    assert_int_equal(http_once(port, health, one, &r), 404); /* still serving */
    ust_serve_stop(atomic_load(&ip.server));
    pthread_join(th, NULL);
    assert_int_equal(ip.rc, 0);
    ust_config_free(cfg);
}

/* ---- item 13: a legacy plugin's response headers ---------------------- */

/* A header that would write another, or a name that is not a token: the
 * decision is an error with the cause, and neither reaches the wire. */
/* The legacy's answers recorded in RUN.answers, in seq order, are exactly
 * n: each cause[i] NULL for an applied decision, else the text its error
 * holds. */
static void answers_are(serve_world *w, const char *const *cause, int n)
{
    char answers[PATH_MAX + 16];
    snprintf(answers, sizeof(answers), "%s.answers", w->run);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open(answers, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT verdict, error FROM answers ORDER BY seq", -1,
                           &q, NULL),
        SQLITE_OK);
    for (int i = 0; i < n; i++) {
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        const char *verdict = (const char *)sqlite3_column_text(q, 0);
        const char *error = (const char *)sqlite3_column_text(q, 1);
        if (cause[i] == NULL) {
            assert_string_equal(verdict, "applied");
        } else {
            assert_string_equal(verdict, "error");
            assert_non_null(error);
            assert_non_null(strstr(error, cause[i]));
        }
    }
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* serve --respond legacy with the test plugin named as the legacy. */
static void start_respond_legacy(world *w, const char *legacy)
{
    char lp[PATH_MAX];
    ust_test_fixture_path(legacy, lp);
    write_config(w, json_object(), lp);
    const char *args[] = {"--config",  w->cfg,   "--listen", "127.0.0.1:0",
                          "--log",     w->log,   "--run",    w->run,
                          "--respond", "legacy", NULL};
    w->srv = server_start(args);
}

static void test_respond_legacy_refuses_header_injection(void **state)
{
    world *w = *state;
    start_respond_legacy(w, "misbehaving_header_injection");
    char got[4][8192];
    for (int i = 0; i < 3; i++) {
        char *raw = payment(i + 1, "Connection: close\r\n");
        raw_exchange(w->srv.port, raw, got[i], sizeof(got[i]));
        ust_free(raw);
    }
    assert_int_equal(atoi(got[0] + 9), 500);
    assert_null(strstr(got[0], "Set-Cookie"));
    assert_null(strstr(got[0], "X-Ok"));
    assert_int_equal(atoi(got[1] + 9), 200);
    assert_int_equal(atoi(got[2] + 9), 500);
    assert_null(strstr(got[2], "X Bad"));
    serve_world_stop(w);
    static const char *const want[] = {"CR or LF", NULL, "not an HTTP token"};
    answers_are(w, want, 3);
}

/* How many header lines of the response in raw are named name (any case). */
static int header_count(const char *raw, const char *name)
{
    const char *end = strstr(raw, "\r\n\r\n");
    assert_non_null(end);
    size_t len = strlen(name);
    int n = 0;
    for (const char *p = strstr(raw, "\r\n"); p != NULL && p < end;
         p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':')
            n++;
    return n;
}

/* What follows the response's header block. */
static const char *body_of(const char *raw)
{
    const char *end = strstr(raw, "\r\n\r\n");
    assert_non_null(end);
    return end + 4;
}

/* Framing and hop-by-hop headers are the harness's, and a 1xx is no
 * answer: such a decision is an error with the cause, answered 500 with one
 * Content-Length and nothing chunked. A sane 204 or 304 goes out with
 * neither a body nor a length. */
static void test_respond_legacy_refuses_framing_headers(void **state)
{
    world *w = *state;
    start_respond_legacy(w, "misbehaving_framing");
    enum { N = 12 };
    static char got[N][8192];
    for (int i = 0; i < N; i++) {
        char *raw = payment(i + 1, "Connection: close\r\n");
        raw_exchange(w->srv.port, raw, got[i], sizeof(got[i]));
        ust_free(raw);
    }
    /* by seq - 1: 0 for a 200, -1 for a refused decision (500) */
    static const int status[N] = {-1, 0, -1, 0, -1, 0, 204, 0, 304, 0, -1, 0};
    for (int i = 0; i < N; i++) {
        int want = status[i] == 0 ? 200 : status[i] < 0 ? 500 : status[i];
        assert_int_equal(atoi(got[i] + 9), want);
        assert_int_equal(header_count(got[i], "Transfer-Encoding"), 0);
        assert_int_equal(header_count(got[i], "Keep-Alive"), 0);
        assert_int_equal(header_count(got[i], "Proxy-Connection"), 0);
        if (want == 204 || want == 304) {
            assert_int_equal(header_count(got[i], "Content-Length"), 0);
            assert_string_equal(body_of(got[i]), "");
        } else {
            assert_int_equal(header_count(got[i], "Content-Length"), 1);
        }
    }
    assert_int_equal(header_count(got[6], "X-Ok"), 1);
    serve_world_stop(w);
    static const char *const cause[N] = {
        [0] = "Content-Length is a framing or hop-by-hop header the harness owns",
        [2] = "a 1xx status is interim, not an answer",
        [4] = "Keep-Alive is a framing or hop-by-hop header the harness owns",
        [10] = "Proxy-Connection is a framing or hop-by-hop header the harness owns",
    };
    answers_are(w, cause, N);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_the_runner_decides_under_lasting_load),
        T(test_a_backlog_from_the_future_does_not_starve_the_runner),
        T(test_idle_keep_alive_connections_are_closed),
        T(test_connections_beyond_the_cap_are_refused),
        T(test_a_half_closed_client_gets_its_answer),
        T(test_expect_100_continue),
        T(test_lenient_header_forms_are_refused),
        T(test_respond_legacy_refuses_header_injection),
        T(test_respond_legacy_refuses_framing_headers),
        T(test_two_servers_in_one_process),
        T(test_a_client_gone_mid_answer_leaves_the_process_up),
        /* last: its stop leaves SIGTERM to the server's second-signal handler */
        T(test_a_failed_connection_allocation_leaves_the_listener_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
