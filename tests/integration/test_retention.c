/* Retention while serving, end to end: old events come in by `log import`
 * (the real path for events that arrived long ago), the real `serve` prunes
 * them as its "retention" says, never past what its runner has decided, and
 * the log still verifies and the runner resumes after a restart. Every
 * assertion is on rows and seqs; a state is waited for, never a time. */
#include "serve_client.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>

#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <time.h>

typedef serve_world world;

static int setup(void **state)
{
    world *w = serve_world_new(NULL, "whsec_retention_test");
    /* A candidate that decides only while the unblock file exists: the
     * runner's cursor stays where the test wants it. Everything imported
     * below is two days old; what arrives over HTTP is new. The check runs
     * often so the test waits little. */
    server_write_config_keys(
        w->cfg, json_pack("{s:o,s:{s:s,s:s}}", "plugins",
                          server_plugins(NULL, serve_world_blocking_plugin(w, 600000)),
                          "retention", "keep", "1h", "every", "100ms"));
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    serve_world_kill(w);
    ust_test_write_file(w->unblock, "go"); /* an orphaned child may end too */
    serve_world_free(w);
    return 0;
}

/* ust_test_run_cli, with the output on stderr when the exit status is not
 * 0. */
static int run_cli(world *w, const char *args, char **out)
{
    char *text = NULL;
    int status = ust_test_run_cli(w->dir, args, &text);
    if (status != 0)
        fprintf(stderr, "understudy %s: %s", args, text);
    if (out != NULL)
        *out = text;
    else
        free(text);
    return status;
}

/* Imports n API requests (keys from first on) that arrived two days ago. */
static void import_old(world *w, int first, int n)
{
    char path[PATH_MAX], at[32], args[PATH_MAX * 3];
    snprintf(path, sizeof(path), "%s/old.jsonl", w->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    int64_t t = ((int64_t)time(NULL) - 2 * 86400) * 1000000;
    for (int i = first; i < first + n; i++) {
        ust_time_format(t + i * 1000000LL, at);
        fprintf(f,
                "{\"v\":1,\"received_at\":\"%s\",\"remote\":\"10.0.0.1:4000\","
                "\"method\":\"POST\",\"target\":\"/payments\",\"headers\":["
                "[\"Content-Type\",\"application/json\"],[\"X-Tenant-Id\",\"t\"],"
                "[\"Idempotency-Key\",\"old-%d\"]],\"body\":\"{\\\"order_id\\\":"
                "\\\"o%d\\\",\\\"amount\\\":100,\\\"currency\\\":\\\"eur\\\"}\"}\n",
                at, i, i);
    }
    assert_int_equal(fclose(f), 0);
    snprintf(args, sizeof(args), "log import --config '%s' --log '%s' '%s'", w->cfg,
             w->log, path);
    assert_int_equal(run_cli(w, args, NULL), 0);
}

static long long query(const char *db_path, const char *sql);

/* serve with a runner; with respond_legacy, answering with the legacy. */
static void start(world *w, int respond_legacy)
{
    const char *const legacy[] = {"--respond", "legacy", NULL};
    serve_world_start_with(w, respond_legacy ? legacy : NULL);
}

/* One new API request over HTTP, recorded as seq want_seq: answered 202
 * with its seq, or with --respond legacy the legacy's 201. */
static void post_new(world *w, int i, int want_seq, int respond_legacy)
{
    char body[128], raw[512], want[32];
    snprintf(body, sizeof(body),
             "{\"order_id\":\"n%d\",\"amount\":100,\"currency\":\"eur\"}", i);
    snprintf(raw, sizeof(raw),
             "POST /payments HTTP/1.1\r\nHost: test\r\nContent-Type: application/json"
             "\r\nX-Tenant-Id: t\r\nIdempotency-Key: new-%d\r\nContent-Length: %zu"
             "\r\n\r\n%s",
             i, strlen(body), body);
    http_resp r;
    if (respond_legacy) {
        assert_int_equal(http_once(w->srv.port, raw, strlen(raw), &r), 201);
        assert_int_equal(query(w->log, "SELECT max(seq) FROM events"), want_seq);
        return;
    }
    assert_int_equal(http_once(w->srv.port, raw, strlen(raw), &r), 202);
    snprintf(want, sizeof(want), "\"seq\":%d", want_seq);
    assert_non_null(strstr(r.body, want));
}

/* One integer from a query on a database another process may be writing
 * (-1 when it has no row or cannot be read yet). */
static long long query(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return v;
}

/* Waits (polling; generous, as the machine may be loaded) until the query
 * gives want; fails with what it gave last. */
static void wait_for(const char *db_path, const char *sql, long long want)
{
    long long v = -1;
    for (int i = 0; i < 6000; i++) {
        if ((v = query(db_path, sql)) == want)
            return;
        usleep(10 * 1000);
    }
    fail_msg("%s gave %lld, waited for %lld", sql, v, want);
}

static void expect_prune(world *w, int id, long long first, long long last)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT first_seq FROM prunes WHERE id = %d", id);
    assert_int_equal(query(w->log, sql), first);
    snprintf(sql, sizeof(sql), "SELECT last_seq FROM prunes WHERE id = %d", id);
    assert_int_equal(query(w->log, sql), last);
}

static void expect_rows(world *w, long long first, long long last)
{
    assert_int_equal(query(w->log, "SELECT min(seq) FROM events"), first);
    assert_int_equal(query(w->log, "SELECT max(seq) FROM events"), last);
    assert_int_equal(query(w->log, "SELECT count(*) FROM events"), last - first + 1);
}

static void expect_verified(world *w, const char *want)
{
    char args[PATH_MAX + 32];
    char *out = NULL;
    snprintf(args, sizeof(args), "log verify --log '%s'", w->log);
    assert_int_equal(run_cli(w, args, &out), 0);
    if (strstr(out, want) == NULL)
        fail_msg("log verify said: %s (wanted \"%s\")", out, want);
    free(out);
}

#define CURSOR "SELECT last_seq FROM cursor WHERE id = 1"

/* Old events go once the runner has decided them, and not before: rows
 * above the runner's cursor stay however old they are, and so does the row
 * at the cursor, which a restarted runner checks it resumes from. With
 * --respond legacy the legacy has answered every event long before the
 * hanging candidate is decided, and that changes nothing. */
static void runner_holds_retention_back(world *w, int respond_legacy)
{
    char args[PATH_MAX * 3];
    /* A run that decided seqs 1..5, then 5 more old events it has not. */
    import_old(w, 1, 5);
    ust_test_write_file(w->unblock, "go");
    snprintf(args, sizeof(args), "replay --config '%s' --log '%s' --run '%s'", w->cfg,
             w->log, w->run);
    assert_int_equal(run_cli(w, args, NULL), 0);
    assert_int_equal(query(w->run, CURSOR), 5);
    assert_int_equal(remove(w->unblock), 0);
    import_old(w, 6, 5);

    /* The candidate hangs on seq 6: every row is older than keep, yet only
     * those below the cursor go. */
    start(w, respond_legacy);
    if (respond_legacy) { /* the legacy answered them all */
        char answers[PATH_MAX + 16];
        snprintf(answers, sizeof(answers), "%s.answers", w->run);
        wait_for(answers, CURSOR, 10);
    }
    wait_for(w->log, "SELECT count(*) FROM prunes", 1);
    expect_prune(w, 1, 1, 4);
    expect_rows(w, 5, 10);
    assert_int_equal(query(w->run, CURSOR), 5);

    /* Once the runner decided them, they go too, but for the cursor's row. */
    ust_test_write_file(w->unblock, "go");
    wait_for(w->run, CURSOR, 10);
    wait_for(w->log, "SELECT count(*) FROM prunes", 2);
    expect_prune(w, 2, 5, 9);
    expect_rows(w, 10, 10);
    serve_world_stop(w);
    expect_verified(w, "pruned: 2 prune(s), events through seq 9 removed");

    /* Restarted, the runner resumes from the row kept for it, new events
     * are decided, and only the old row goes: the new ones are within
     * keep. */
    start(w, respond_legacy);
    post_new(w, 1, 11, respond_legacy);
    post_new(w, 2, 12, respond_legacy);
    wait_for(w->run, CURSOR, 12);
    wait_for(w->log, "SELECT count(*) FROM prunes", 3);
    expect_prune(w, 3, 10, 10);
    serve_world_stop(w);
    expect_rows(w, 11, 12);
    assert_int_equal(query(w->run, "SELECT count(*) FROM decisions"), 12);
    expect_verified(w, "pruned: 3 prune(s), events through seq 10 removed");
}

static void test_retention_keeps_what_the_runner_has_not_decided(void **state)
{
    runner_holds_retention_back(*state, 0);
}

static void test_retention_with_respond_legacy(void **state)
{
    runner_holds_retention_back(*state, 1);
}

/* Without a run database there is no runner to wait for: retention then
 * goes by age alone, and a new event stays. */
static void test_retention_without_a_runner_goes_by_age(void **state)
{
    world *w = *state;
    json_error_t jerr;
    json_t *doc = json_load_file(w->cfg, 0, &jerr);
    assert_non_null(doc);
    json_object_del(doc, "run"); /* the example names one */
    assert_int_equal(json_dump_file(doc, w->cfg, 0), 0);
    json_decref(doc);
    import_old(w, 1, 5);
    const char *args[] = {"--config", w->cfg, "--listen", "127.0.0.1:0",
                          "--log",    w->log, NULL};
    w->srv = server_start(args);
    post_new(w, 1, 6, 0);
    wait_for(w->log, "SELECT count(*) FROM prunes", 1);
    expect_prune(w, 1, 1, 5);
    serve_world_stop(w);
    expect_rows(w, 6, 6);
    expect_verified(w, "pruned: 1 prune(s), events through seq 5 removed");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_retention_keeps_what_the_runner_has_not_decided),
        T(test_retention_with_respond_legacy),
        T(test_retention_without_a_runner_goes_by_age),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
