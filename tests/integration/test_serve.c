/* The live recorder, end to end: the real binary on 127.0.0.1, real HTTP
 * over real sockets, the real log and plugins. */
#define _GNU_SOURCE 1 /* memmem */
#include "serve_client.h"
#include "http/queue.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#define SECRET "whsec_serve_test"

typedef serve_world world;

static int setup(void **state)
{
    world *w = serve_world_new(NULL, SECRET);
    server_write_config_keys(w->cfg, json_pack("{s:{s:i,s:i,s:i},s:o}", "limits",
                                               "max_body_bytes", 32768, "max_headers",
                                               16, "header_timeout_ms", 300, "plugins",
                                               server_plugins(NULL, NULL)));
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    serve_world_free(*state);
    return 0;
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* A raw POST; extra is more header lines ("Name: value\r\n..."). */
static char *raw_post(const char *path, const char *extra, const char *body,
                      size_t body_len)
{
    char *head =
        ust_sprintf("POST %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json"
                    "\r\n%sContent-Length: %zu\r\n\r\n",
                    path, extra ? extra : "", body_len);
    size_t hl = strlen(head);
    char *out = ust_malloc(hl + body_len + 1);
    memcpy(out, head, hl);
    memcpy(out + hl, body, body_len);
    out[hl + body_len] = '\0';
    ust_free(head);
    return out;
}

/* A Stripe callback signed at t (with secret), as raw HTTP. */
static char *stripe_request(const char *evt, int64_t t, const char *secret, int rotated)
{
    char *body =
        ust_sprintf("{\"id\":\"%s\",\"type\":\"payment_intent.succeeded\",\"data\":{"
                    "\"object\":{\"id\":\"pi_%s\",\"amount\":100,\"currency\":\"eur\","
                    "\"metadata\":{\"order_id\":\"o_%s\"}}}}",
                    evt, evt, evt);
    char *sig = server_stripe_signature(body, t, secret);
    char *extra = rotated ? ust_sprintf("Stripe-Signature: t=%lld,v1=%064d,%s\r\n",
                                        (long long)t, 0, strchr(sig, ',') + 1)
                          : ust_sprintf("Stripe-Signature: %s\r\n", sig);
    char *raw = raw_post("/webhooks/stripe", extra, body, strlen(body));
    ust_free(extra);
    ust_free(sig);
    ust_free(body);
    return raw;
}

static int post(world *w, const char *raw, http_resp *r)
{
    return http_once(w->srv.port, raw, strlen(raw), r);
}

/* One signed Stripe callback, recorded (202). */
static void record_one(world *w, const char *evt)
{
    char *raw = stripe_request(evt, now_s(), SECRET, 0);
    http_resp r;
    assert_true(post(w, raw, &r) > 0);
    ust_free(raw);
    assert_int_equal(r.status, 202);
}

static void test_signatures_at_the_door(void **state)
{
    world *w = *state;
    serve_world_start(w);
    http_resp r;
    char *raw;
    raw = stripe_request("evt_ok", now_s(), SECRET, 0);
    assert_int_equal(post(w, raw, &r), 202);
    assert_non_null(strstr(r.body, "\"seq\":1"));
    ust_free(raw);
    raw = stripe_request("evt_rot", now_s(), SECRET,
                         1); /* a stale v1, then the right one */
    assert_int_equal(post(w, raw, &r), 202);
    ust_free(raw);
    raw = stripe_request("evt_bad", now_s(), "whsec_wrong", 0);
    assert_int_equal(post(w, raw, &r), 401);
    assert_non_null(strstr(r.body, "signature invalid"));
    ust_free(raw);
    raw = stripe_request("evt_old", now_s() - 3600, SECRET, 0);
    assert_int_equal(post(w, raw, &r), 401);
    assert_non_null(strstr(r.body, "signature expired"));
    ust_free(raw);
    raw = raw_post("/webhooks/stripe", NULL, "{\"id\":\"evt_none\"}", 17);
    assert_int_equal(post(w, raw, &r), 401);
    assert_non_null(strstr(r.body, "signature missing"));
    ust_free(raw);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    /* All five are recorded, as evidence; the secret is nowhere in the log. */
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(w->log, UST_LOG_READONLY, &log, NULL), 0);
    json_t *st = NULL;
    assert_int_equal(ust_log_stats(log, &st, NULL), 0);
    json_t *sigs = json_object_get(st, "signatures");
    assert_int_equal(json_integer_value(json_object_get(sigs, "verified")), 2);
    assert_int_equal(json_integer_value(json_object_get(sigs, "invalid")), 1);
    assert_int_equal(json_integer_value(json_object_get(sigs, "expired")), 1);
    assert_int_equal(json_integer_value(json_object_get(sigs, "missing")), 1);
    json_decref(st);
    ust_log_close(log);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof(cmd), "grep -c '%s' '%s' '%s'* >/dev/null", SECRET, w->log,
             w->log);
    assert_int_not_equal(system(cmd), 0);
    /* Only the verified ones reached the plugins. */
    int row[2];
    ust_test_sql_row(w->run, "SELECT sum(fed), count(*) FROM decisions", row, 2);
    assert_int_equal(row[0], 2);
    assert_int_equal(row[1], 5);
}

static void test_bad_input_gets_its_status_and_the_server_stays_up(void **state)
{
    world *w = *state;
    serve_world_start(w);
    http_resp r;
    char *raw;
    /* A body that is not JSON, correctly signed: recorded. */
    raw = raw_post("/payments", "X-Tenant-Id: t\r\nIdempotency-Key: k\r\n", "{not json",
                   9);
    assert_int_equal(post(w, raw, &r), 202);
    ust_free(raw);
    const char bad_utf8[] =
        "{\"order_id\":\"\xff\xfe\",\"amount\":1,\"currency\":\"eur\"}";
    raw = raw_post("/payments", "Idempotency-Key: k2\r\n", bad_utf8,
                   sizeof(bad_utf8) - 1);
    assert_int_equal(post(w, raw, &r), 202);
    ust_free(raw);
    size_t deep = 10000;
    char *nested = ust_malloc(2 * deep + 1);
    memset(nested, '[', deep);
    memset(nested + deep, ']', deep);
    raw = raw_post("/payments", "Idempotency-Key: k3\r\n", nested, 2 * deep);
    assert_int_equal(post(w, raw, &r), 202);
    ust_free(raw);
    ust_free(nested);
    char *big = ust_malloc(40000);
    memset(big, 'x', 40000);
    raw = raw_post("/payments", NULL, big, 40000);
    assert_int_equal(post(w, raw, &r), 413);
    assert_non_null(strstr(r.body, "over the limit"));
    ust_free(raw);
    ust_free(big);
    char headers[4096] = "";
    for (int i = 0; i < 20; i++)
        snprintf(headers + strlen(headers), sizeof(headers) - strlen(headers),
                 "X-Extra-%d: %d\r\n", i, i);
    raw = raw_post("/payments", headers, "{}", 2);
    assert_int_equal(post(w, raw, &r), 431);
    ust_free(raw);
    raw = raw_post("/nowhere", NULL, "{}", 2);
    assert_int_equal(post(w, raw, &r), 404);
    ust_free(raw);
    const char get[] = "GET /payments HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_int_equal(http_once(w->srv.port, get, sizeof(get) - 1, &r), 405);
    const char garbage[] = "HELLO THERE\r\n\r\n";
    assert_int_equal(http_once(w->srv.port, garbage, sizeof(garbage) - 1, &r), 400);
    /* A slow client: half a request, then nothing. */
    int fd = http_connect(w->srv.port);
    send_all(fd, "POST /payments HTTP/1.1\r\nHost: t\r\n", 34);
    char buf[4096];
    size_t len = 0;
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    assert_int_equal(r.status, 408);
    close(fd);
    const char health[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_int_equal(http_once(w->srv.admin_port, health, sizeof(health) - 1, &r), 200);
    const char metrics[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_int_equal(http_once(w->srv.admin_port, metrics, sizeof(metrics) - 1, &r),
                     200);
    assert_non_null(
        strstr(r.body, "understudy_requests_refused_total{status=\"413\"} 1"));
    assert_non_null(strstr(
        r.body,
        "understudy_plugin_decide_duration_seconds_count{plugin=\"candidate\"}"));
    assert_non_null(
        strstr(r.body, "\nunderstudy_plugin_stderr_dropped_bytes_total 0\n"));
    assert_non_null(strstr(r.body,
                           "understudy_events_recorded_total{route=\"/payments\","
                           "signature=\"unsigned\"} 3"));
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

static void test_keep_alive_and_pipelining(void **state)
{
    world *w = *state;
    serve_world_start(w);
    char *a =
        raw_post("/payments", "Idempotency-Key: p1\r\n", "{\"order_id\":\"a\"}", 16);
    char *b =
        raw_post("/payments", "Idempotency-Key: p2\r\n", "{\"order_id\":\"b\"}", 16);
    const char health[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    char *all = ust_sprintf("%s%s%s", a, health, b);
    int fd = http_connect(w->srv.port);
    send_all(fd, all, strlen(all)); /* three requests in one write */
    char buf[8192];
    size_t len = 0;
    expect_pipelined_answers(fd, buf, &len, sizeof(buf));
    /* and the connection stays open for more */
    send_all(fd, a, strlen(a));
    http_resp r;
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    assert_non_null(strstr(r.body, "\"seq\":3"));
    close(fd);
    ust_free(a);
    ust_free(b);
    ust_free(all);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

/* ---- concurrent load, SIGKILL, restart ------------------------------- */

typedef struct loader {
    int port, id;
    int64_t acked[4096];  /* seq of every 2xx */
    char order[4096][24]; /* and the order id its body carried */
    int n_acked;
    volatile int *stop;
} loader;

static void *load(void *arg)
{
    loader *l = arg;
    char buf[8192];
    for (int i = 0; !*l->stop && i < 4000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)l->port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
            close(fd);
            break; /* the server is gone */
        }
        /* a few requests per connection, keep-alive */
        size_t len = 0;
        for (int k = 0; k < 5; k++) {
            char body[128], key[64];
            snprintf(body, sizeof(body),
                     "{\"order_id\":\"w%d-%d-%d\",\"amount\":%d,"
                     "\"currency\":\"eur\"}",
                     l->id, i, k, 100 + k);
            snprintf(key, sizeof(key), "Idempotency-Key: w%d-%d\r\n", l->id, i);
            char *raw = raw_post("/payments", key, body, strlen(body));
            send_all(fd, raw, strlen(raw));
            ust_free(raw);
            http_resp r;
            if (!read_response(fd, buf, &len, sizeof(buf), &r))
                break;
            if (r.status / 100 == 2 && l->n_acked < 4096) {
                const char *s = strstr(r.body, "\"seq\":");
                snprintf(l->order[l->n_acked], sizeof(l->order[0]), "w%d-%d-%d", l->id,
                         i, k);
                l->acked[l->n_acked++] = s ? atoll(s + 6) : -1;
            }
        }
        close(fd);
    }
    return NULL;
}

static char *dump_divergences(const char *run)
{
    sqlite3 *db;
    sqlite3_open(run, &db);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db,
                       "SELECT group_concat(seq || class || fields, ';') FROM"
                       " (SELECT * FROM divergences ORDER BY seq)",
                       -1, &q, NULL);
    sqlite3_step(q);
    const char *t = (const char *)sqlite3_column_text(q, 0);
    char *out = ust_strdup(t ? t : "");
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

static void test_sigkill_under_load_loses_nothing_acknowledged(void **state)
{
    world *w = *state;
    serve_world_start(w);
    enum { N = 4 };
    static loader ls[N];
    pthread_t th[N];
    volatile int stop = 0;
    for (int i = 0; i < N; i++) {
        memset(&ls[i], 0, sizeof(ls[i]));
        ls[i].port = w->srv.port;
        ls[i].id = i;
        ls[i].stop = &stop;
        pthread_create(&th[i], NULL, load, &ls[i]);
    }
    /* Let load build up, then kill the server in the middle of it. */
    for (int waited = 0; waited < 200; waited++) {
        int acked = 0;
        for (int i = 0; i < N; i++)
            acked += ls[i].n_acked;
        if (acked > 200)
            break;
        usleep(10000);
    }
    server_stop(&w->srv, SIGKILL);
    w->srv.pid = 0;
    stop = 1;
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);

    /* Every acknowledged request is in the log, and the chain holds. */
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(w->log, 0, &log, NULL), 0);
    ust_log_verify_result vr;
    assert_int_equal(ust_log_verify(log, &vr, NULL), 0);
    int total = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < ls[i].n_acked; k++, total++) {
            /* the row at the acknowledged seq holds that very request */
            ust_log_cursor *cur = NULL;
            ust_log_record rec;
            memset(&rec, 0, sizeof(rec));
            assert_int_equal(ust_log_cursor_open(log, ls[i].acked[k] - 1, &cur, NULL),
                             0);
            assert_int_equal(ust_log_cursor_next(cur, &rec, NULL), 1);
            assert_int_equal(rec.seq, ls[i].acked[k]);
            char want[40];
            snprintf(want, sizeof(want), "\"%s\"", ls[i].order[k]);
            assert_non_null(memmem(rec.req.body, rec.req.body_len, want, strlen(want)));
            ust_log_record_clear(&rec);
            ust_log_cursor_close(cur);
        }
    assert_true(total > 200);
    ust_log_close(log);

    /* Restart: the runner resumes; after a clean stop it has decided every
     * event exactly once, the same as a replay of the same log. */
    serve_world_start(w);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    char *live = dump_divergences(w->run);
    sqlite3 *db;
    sqlite3_open(w->run, &db);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db,
                       "SELECT count(*), max(seq), count(DISTINCT seq) FROM decisions",
                       -1, &q, NULL);
    sqlite3_step(q);
    assert_int_equal(sqlite3_column_int64(q, 0), vr.head_seq);
    assert_int_equal(sqlite3_column_int64(q, 1), vr.head_seq);
    assert_int_equal(sqlite3_column_int64(q, 2), vr.head_seq);
    sqlite3_finalize(q);
    sqlite3_close(db);

    ust_config *cfg = NULL;
    assert_int_equal(ust_config_load(w->cfg, &cfg, NULL), 0);
    char replay_run[PATH_MAX];
    snprintf(replay_run, sizeof(replay_run), "%s/replay.db", w->dir);
    ust_replay_opts o = {.cfg = cfg, .log_path = w->log, .run_path = replay_run};
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    char *replayed = dump_divergences(replay_run);
    assert_string_equal(live, replayed);
    assert_true(strlen(live) > 0);
    ust_free(live);
    ust_free(replayed);
    ust_config_free(cfg);
}

/* The server's config gets these plugins (a reference taken). */
static void use_plugins(world *w, json_t *plugins)
{
    json_error_t jerr;
    json_t *doc = json_load_file(w->cfg, 0, &jerr);
    assert_non_null(doc);
    json_object_set_new(doc, "plugins", plugins);
    assert_int_equal(json_dump_file(doc, w->cfg, 0), 0);
    json_decref(doc);
}

/* --respond legacy with candidate (a test plugin) as the candidate: sends N
 * requests, lets the candidate go (unblock), stops the server, and checks
 * that every answer was exactly the legacy's recorded decision and that the
 * candidate's verdict for each event was want_candidate. */
enum { N_LIVE = 8 };

static void respond_legacy_run(world *w, const char *candidate,
                               const char *want_candidate, int check_not_decided_yet)
{
    char blocker[PATH_MAX], unblock[PATH_MAX], marker[PATH_MAX], lp[PATH_MAX];
    ust_test_fixture_path(candidate, blocker);
    snprintf(unblock, sizeof(unblock), "%s/unblock", w->dir);
    snprintf(marker, sizeof(marker), "%s/started", w->dir);
    ust_test_plugin_path("legacy", lp);
    use_plugins(w, json_pack("{s:{s:s},s:{s:s,s:{s:s,s:s}}}", "legacy", "path", lp,
                             "candidate", "path", blocker, "config", "unblock_file",
                             unblock, "marker_file", marker));
    const char *args[] = {"--config",  w->cfg,   "--listen", "127.0.0.1:0",
                          "--log",     w->log,   "--run",    w->run,
                          "--respond", "legacy", NULL};
    w->srv = server_start(args);
    http_resp got[N_LIVE];
    for (int i = 0; i < N_LIVE; i++) {
        char key[64], body[128];
        snprintf(key, sizeof(key), "X-Tenant-Id: t\r\nIdempotency-Key: k%d\r\n", i % 3);
        snprintf(body, sizeof(body),
                 "{\"order_id\":\"o%d\",\"amount\":%d,\"currency\":\"eur\"}", i % 3,
                 100 + i % 3);
        char *raw = raw_post("/payments", key, body, strlen(body));
        assert_true(post(w, raw, &got[i]) > 0);
        ust_free(raw);
    }
    sqlite3 *db;
    sqlite3_stmt *q;
    if (check_not_decided_yet) {
        /* Every answer is in, and the candidate has decided nothing yet. */
        sqlite3_open(w->run, &db);
        sqlite3_prepare_v2(db, "SELECT count(*) FROM decisions", -1, &q, NULL);
        if (sqlite3_step(q) == SQLITE_ROW)
            assert_int_equal(sqlite3_column_int(q, 0), 0);
        sqlite3_finalize(q);
        sqlite3_close(db);
    }
    ust_test_write_file(unblock, "go");
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    sqlite3_open(w->run, &db);
    sqlite3_prepare_v2(db,
                       "SELECT l_status, l_body, c_verdict FROM decisions ORDER BY seq",
                       -1, &q, NULL);
    for (int i = 0; i < N_LIVE; i++) {
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(q, 0), got[i].status);
        assert_string_equal((const char *)sqlite3_column_text(q, 1), got[i].body);
        assert_string_equal((const char *)sqlite3_column_text(q, 2), want_candidate);
    }
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    sqlite3_close(db);
    assert_int_equal(got[0].status, 201);
    assert_non_null(strstr(got[0].body, "\"payment_id\":\"pay_1\""));
}

/* The first signal finishes what is in flight, which waits for the runner;
 * a second one leaves at once (exit status 1) even while that wait blocks
 * the event loop: here the candidate hangs, past a minute's timeout. */
static void test_a_second_signal_exits_at_once(void **state)
{
    world *w = *state;
    char blocker[PATH_MAX], unblock[PATH_MAX], lp[PATH_MAX];
    ust_test_fixture_path("misbehaving_block", blocker);
    snprintf(unblock, sizeof(unblock), "%s/unblock", w->dir);
    ust_test_plugin_path("legacy", lp);
    use_plugins(w, json_pack("{s:{s:s},s:{s:s,s:i,s:{s:s}}}", "legacy", "path", lp,
                             "candidate", "path", blocker, "timeout_ms", 60000,
                             "config", "unblock_file", unblock));
    serve_world_start(w);
    record_one(w, "evt_stuck");
    usleep(300 * 1000); /* the runner is in the candidate's decide */
    kill(w->srv.pid, SIGTERM);
    usleep(300 * 1000); /* the stop now waits for the runner */
    int64_t t0 = now_s();
    assert_int_equal(server_stop(&w->srv, SIGTERM), 1);
    assert_true(now_s() - t0 < 5);
    w->srv.pid = 0;
    ust_test_write_file(unblock, "go"); /* the orphaned child may end too */
}

static int count_rows(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    int n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

static int post_payment(world *w, int i)
{
    char key[64], body[128];
    snprintf(key, sizeof(key), "X-Tenant-Id: t\r\nIdempotency-Key: once-%d\r\n", i);
    snprintf(body, sizeof(body),
             "{\"order_id\":\"o%d\",\"amount\":100,\"currency\":\"eur\"}", i);
    char *raw = raw_post("/payments", key, body, strlen(body));
    http_resp r;
    assert_true(post(w, raw, &r) > 0);
    ust_free(raw);
    return r.status;
}

/* --respond legacy, and the legacy's decision of one request cannot be
 * recorded (a real SQLite error, from a trigger on the answers table): that
 * request gets 503, and is decided before the next one, so the answers'
 * cursor never passes an undecided event and the runner decides them all. */
static void test_respond_legacy_after_a_failed_answer(void **state)
{
    world *w = *state;
    const char *args[] = {"--config",  w->cfg,   "--listen", "127.0.0.1:0",
                          "--log",     w->log,   "--run",    w->run,
                          "--respond", "legacy", NULL};
    w->srv = server_start(args);
    assert_int_equal(post_payment(w, 1), 201);
    char answers[PATH_MAX + 16];
    snprintf(answers, sizeof(answers), "%s.answers", w->run);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(answers, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER fail_once BEFORE INSERT ON answers"
                                  " WHEN NEW.seq = 2 BEGIN SELECT RAISE(ABORT, 'disk"
                                  " trouble'); END",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(post_payment(w, 2), 503);
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER fail_once", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(post_payment(w, 3), 201);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    assert_int_equal(count_rows(answers, "SELECT count(*) FROM answers"), 3);
    assert_int_equal(count_rows(w->run, "SELECT count(*) FROM decisions"), 3);
}

/* A candidate that hangs (until the test lets it go) changes and delays no
 * answer: all are answered while it is still stuck on the first event. */
static void test_respond_legacy_with_a_hanging_candidate(void **state)
{
    respond_legacy_run(*state, "misbehaving_block", "applied", 1);
}

/* A candidate that crashes and cannot start again: every answer is still
 * the legacy's, and every event holds an error decision for the candidate. */
static void test_respond_legacy_with_a_candidate_that_exits(void **state)
{
    respond_legacy_run(*state, "misbehaving_exit_on_restart", "error", 0);
}

/* Field `field` (1-based, as proc(5) numbers them, 3 or more) of a stat
 * file, read after the command name, which may hold spaces. */
static long stat_field(const char *path, int field)
{
    char buf[1024] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return LONG_MIN;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return LONG_MIN;
    p++;
    for (int i = 3; i < field; i++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return LONG_MIN;
    }
    return strtol(p, NULL, 10);
}

/* A thread's or process's name from its comm file ("" when gone). */
static void read_comm(const char *path, char name[32])
{
    name[0] = '\0';
    FILE *comm = fopen(path, "r");
    if (comm == NULL)
        return;
    if (fgets(name, 32, comm) != NULL)
        name[strcspn(name, "\n")] = '\0';
    fclose(comm);
}

/* Shadow work yields to the request path: the runner's threads and the
 * candidate's child run at nice 10; the thread that records and answers, at
 * the nice it was started with. */
/* Calls each(name, nice, data) for every thread of pid; none when /proc
 * does not show pid. */
static void each_thread(pid_t pid,
                        void (*each)(const char *name, long nice, void *data),
                        void *data)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char file[PATH_MAX + 300], comm[32];
        snprintf(file, sizeof(file), "%s/%s/comm", path, e->d_name);
        read_comm(file, comm);
        snprintf(file, sizeof(file), "%s/%s/stat", path, e->d_name);
        long nice = stat_field(file, 19); /* field 19: nice */
        /* A thread that ended while it was looked at (the runner's reader
         * ends with each step) is not counted. */
        if (comm[0] != '\0' && nice != LONG_MIN)
            each(comm, nice, data);
    }
    if (d != NULL)
        closedir(d);
}

struct thread_wanted {
    const char *name;
    long nice;
    int found;
};

static void look_for(const char *name, long nice, void *data)
{
    struct thread_wanted *t = data;
    t->found |= strcmp(name, t->name) == 0 && nice == t->nice;
}

/* Whether a thread of pid named name runs at nice. */
static int thread_shows(pid_t pid, const char *name, long nice)
{
    struct thread_wanted t = {name, nice, 0};
    each_thread(pid, look_for, &t);
    return t.found;
}

/* Whether docs/threads.md's table has a row for the thread (or process)
 * name: the page every thread is documented on, whose rows
 * scripts/check-threads.sh holds to the code. */
static int documented_thread(const char *name)
{
    char path[PATH_MAX], want[64];
    ust_test_source_path("docs/threads.md", path);
    snprintf(want, sizeof(want), "| `%s` |", name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0)
        found = strncmp(line, want, strlen(want)) == 0;
    free(line);
    fclose(f);
    return found;
}

/* The server's threads by name: the runner, its reader of the log (there
 * while a step runs) and the candidate's link in the background, the
 * writer and the rest (the loop, libuv's pool) at own; each one a row of
 * docs/threads.md. */
struct thread_census {
    long own;
    int background, writers;
};

static void count_thread(const char *name, long nice, void *data)
{
    struct thread_census *c = data;
    if (!documented_thread(name))
        fail_msg("thread \"%s\" (nice %ld) is not a row of docs/threads.md", name,
                 nice);
    if (strcmp(name, "ust-runner") == 0 || strcmp(name, "ust-link") == 0) {
        assert_int_equal(nice, 10);
        c->background++;
    } else if (strcmp(name, "ust-reader") == 0) {
        assert_int_equal(nice, 10); /* shadow work too, started by the runner */
    } else if (strcmp(name, "ust-writer") == 0) {
        assert_int_equal(nice, c->own);
        c->writers++;
    } else {
        assert_int_equal(nice, c->own); /* the loop and libuv's pool */
    }
}

static void test_shadow_work_runs_at_background_priority(void **state)
{
    world *w = *state;
    serve_world_start(w);
    record_one(w, "evt_nice");
    enum { NICE = 19 };
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)w->srv.pid);
    long own = stat_field(path, NICE);
    if (own >= 10) { /* started at background priority already: nothing to see */
        assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
        w->srv.pid = 0;
        skip();
    }
    /* The runner's thread names itself and lowers its priority as it
     * starts, which may come after the first answer (it starts once the
     * ports are bound): wait for it to show, then look at every thread. */
    for (int i = 0; i < 600 && !thread_shows(w->srv.pid, "ust-runner", 10); i++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    /* The threads, known by their names: the runner and the candidate's
     * link at 10, the writer at the server's own priority. */
    snprintf(path, sizeof(path), "/proc/%d/task", (int)w->srv.pid);
    assert_int_equal(access(path, R_OK), 0);
    struct thread_census census = {own, 0, 0};
    each_thread(w->srv.pid, count_thread, &census);
    assert_true(census.background >= 2); /* with a link restarting, more */
    assert_true(census.writers >= 1);    /* and the writer's digest helper is one too */
    /* The candidate's child (isolated by default) is a child process of the
     * server: found among all processes by its parent. */
    int children = 0, background_children = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char stat[PATH_MAX];
        snprintf(stat, sizeof(stat), "/proc/%s/stat", e->d_name);
        if (stat_field(stat, 4) != (long)w->srv.pid)
            continue;
        children++;
        background_children += stat_field(stat, NICE) == 10;
        snprintf(stat, sizeof(stat), "/proc/%s/comm", e->d_name);
        char name[32];
        read_comm(stat, name);
        assert_string_equal(name, "ust-candidate");
        assert_true(documented_thread(name));
    }
    closedir(d);
    assert_int_equal(children, 1);
    assert_int_equal(background_children, 1);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

/* n signed callbacks, each recorded (202), event ids prefix0, prefix1 ... */
static void record_n(world *w, const char *prefix, int n)
{
    for (int i = 0; i < n; i++) {
        char evt[64];
        snprintf(evt, sizeof(evt), "%s%d", prefix, i);
        record_one(w, evt);
    }
}

/* After a clean stop the .db file alone holds every acknowledged event:
 * the writer's close checkpoints although the runner's read-only connection
 * closes after it. */
static void test_a_clean_stop_leaves_every_event_in_the_db_file(void **state)
{
    world *w = *state;
    serve_world_start(w);
    record_n(w, "evt_clean_", 5);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof(wal), "%s-wal", w->log);
    unlink(wal);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log, UST_LOG_READONLY, &log, &err), 0);
    ust_log_verify_result res;
    assert_int_equal(ust_log_verify(log, &res, &err), 0);
    assert_int_equal(res.checked, 5);
    ust_log_close(log);
}

/* log backup while serve records: one file holding every acknowledged
 * event, verified. */
static void test_a_backup_while_serving_holds_every_event(void **state)
{
    world *w = *state;
    serve_world_start(w);
    record_n(w, "evt_backup_", 4);
    char copy[PATH_MAX + 16];
    snprintf(copy, sizeof(copy), "%s/backup.db", w->dir);
    char *cmd = ust_sprintf("'%s' log backup --log '%s' --out '%s' >/dev/null",
                            getenv("UST_BIN"), w->log, copy);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(system(cmd), 0); /* never over an existing file */
    ust_free(cmd);
    record_one(w, "evt_after_backup");
    ust_test_expect_log_verifies(copy, 4);
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

/* Any client can send bytes that are not UTF-8 in the target and in a
 * header value (no signature needed): export spells them losslessly, and
 * export -> import -> export gives the same file. */
static void test_export_of_what_any_client_sent_is_lossless(void **state)
{
    world *w = *state;
    serve_world_start(w);
    const char raw[] = "POST /webhooks/stripe?q=caf\xe9 HTTP/1.1\r\nHost: test\r\n"
                       "X-Raw: \xfe\xff ok\r\nContent-Length: 2\r\n\r\n{}";
    http_resp r;
    assert_true(http_once(w->srv.port, raw, sizeof(raw) - 1, &r) > 0);
    assert_int_equal(r.status, 401); /* unsigned: recorded, refused */
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    char first[PATH_MAX + 16], second[PATH_MAX + 16], db2[PATH_MAX + 16];
    snprintf(first, sizeof(first), "%s/first.jsonl", w->dir);
    snprintf(second, sizeof(second), "%s/second.jsonl", w->dir);
    snprintf(db2, sizeof(db2), "%s/second.db", w->dir);
    const char *bin = getenv("UST_BIN");
    char *cmd = ust_sprintf(
        "'%s' log export --log '%s' --out '%s' &&"
        " '%s' log import --config '%s' --log '%s' '%s' >/dev/null &&"
        " '%s' log export --log '%s' --out '%s' && cmp -s '%s' '%s'",
        bin, w->log, first, bin, w->cfg, db2, first, bin, db2, second, first, second);
    assert_int_equal(system(cmd), 0);
    ust_free(cmd);
    FILE *f = fopen(first, "rb");
    char line[8192] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_non_null(strstr(line, "\"target_base64\":"));
    assert_non_null(strstr(line, "[\"X-Raw\",{\"base64\":\"/v8gb2s=\"}]"));
}

/* A second serve on the same log and run database is refused at start,
 * naming the first one's pid; the first goes on recording. */
static void test_a_second_serve_on_the_same_files_is_refused(void **state)
{
    world *w = *state;
    serve_world_start(w);
    char errfile[PATH_MAX + 8];
    snprintf(errfile, sizeof(errfile), "%s/second.err", w->dir);
    char *cmd = ust_sprintf("timeout 60 '%s' serve --config '%s' --listen 127.0.0.1:0"
                            " --log '%s' --run '%s' 2>'%s'",
                            getenv("UST_BIN"), w->cfg, w->log, w->run, errfile);
    int status = system(cmd);
    ust_free(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    FILE *f = fopen(errfile, "rb");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    char pid[32];
    snprintf(pid, sizeof(pid), "pid %ld", (long)w->srv.pid);
    if (strstr(text, pid) == NULL || strstr(text, w->log) == NULL)
        fail_msg("unexpected message: %s", text);
    record_one(w, "evt_after_refusal");
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

/* ---- the queue between the recorder's threads ------------------------ */

/* Jobs leave in the order they came, at most max at a time; an empty queue
 * waits until its deadline (0: not at all); a stopped one gives what it
 * holds, then says it is drained. */
static void test_the_job_queue(void **state)
{
    (void)state;
    ust__jobq q;
    assert_int_equal(ust__jobq_init(&q), 0);
    ust__job jobs[5];
    memset(jobs, 0, sizeof(jobs));
    ust__job *first, *last;
    size_t n;
    assert_int_equal(ust__jobq_take(&q, 0, 0, &first, &last, &n), 0);
    assert_null(first);
    assert_int_equal(
        ust__jobq_take(&q, 0, ust_time_mono_us() + 1000, &first, &last, &n),
        0); /* due */
    jobs[0].next = &jobs[1];
    ust__jobq_put(&q, &jobs[0], &jobs[1]);
    jobs[2].next = &jobs[3];
    ust__jobq_put(&q, &jobs[2], &jobs[3]);
    ust__jobq_put(&q, &jobs[4], &jobs[4]);
    assert_int_equal(ust__jobq_take(&q, 3, INT64_MAX, &first, &last, &n), 1);
    assert_int_equal(n, 3);
    assert_ptr_equal(first, &jobs[0]);
    assert_ptr_equal(last, &jobs[2]);
    assert_null(last->next);
    assert_ptr_equal(first->next->next, &jobs[2]);
    ust__jobq_stop(&q);
    assert_int_equal(ust__jobq_take(&q, 0, INT64_MAX, &first, &last, &n), 1);
    assert_int_equal(n, 2);
    assert_ptr_equal(first, &jobs[3]);
    assert_ptr_equal(last, &jobs[4]);
    assert_int_equal(ust__jobq_take(&q, 0, INT64_MAX, &first, &last, &n), -1);
    ust__jobq_destroy(&q);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_signatures_at_the_door),
        T(test_bad_input_gets_its_status_and_the_server_stays_up),
        T(test_keep_alive_and_pipelining),
        T(test_sigkill_under_load_loses_nothing_acknowledged),
        T(test_respond_legacy_with_a_hanging_candidate),
        T(test_respond_legacy_with_a_candidate_that_exits),
        T(test_shadow_work_runs_at_background_priority),
        T(test_a_second_signal_exits_at_once),
        T(test_respond_legacy_after_a_failed_answer),
        T(test_a_clean_stop_leaves_every_event_in_the_db_file),
        T(test_a_second_serve_on_the_same_files_is_refused),
        T(test_a_backup_while_serving_holds_every_event),
        T(test_export_of_what_any_client_sent_is_lossless),
        cmocka_unit_test(test_the_job_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
