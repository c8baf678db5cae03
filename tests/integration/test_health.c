/* The admin listener and what /healthz and /readyz say, end to end: the
 * real binary, real sockets, each degraded state produced for real (an
 * immutable log, a candidate that hangs, a runner held up, descriptors
 * running out) and cleared again. Every wait polls a state with a generous
 * overall limit; nothing here passes or fails on time. */
#include "serve_client.h"

#include <understudy/alloc.h>

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <sys/resource.h>

/* Polls are this many tries of POLL_MS apart: a minute and more. */
#define POLL_TRIES 1200
#define POLL_MS 50

typedef serve_world world;

/* The test config; legacy and candidate are plugin objects (references
 * taken; NULL: the shipped plugin), health an object or NULL. */
static void write_config(world *w, json_t *legacy, json_t *candidate, json_t *health)
{
    json_t *keys = json_pack("{s:{s:i},s:o}", "limits", "header_timeout_ms", 3600000,
                             "plugins", server_plugins(legacy, candidate));
    if (health != NULL)
        json_object_set_new(keys, "health", health);
    server_write_config_keys(w->cfg, keys);
}

static int setup(void **state)
{
    world *w = serve_world_new(NULL, "whsec_health_test");
    write_config(w, NULL, NULL, NULL);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    serve_world_kill(w);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "chattr -R -i '%s' 2>/dev/null", w->dir);
    if (system(cmd) != 0) { /* nothing was made immutable */
    }
    serve_world_free(w);
    return 0;
}

static int get(int port, const char *path, http_resp *r)
{
    char *raw = ust_sprintf("GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    int status = http_once(port, raw, strlen(raw), r);
    ust_free(raw);
    return status;
}

/* One unsigned POST to /payments; its status. */
static int pay(world *w, int i)
{
    char body[96];
    snprintf(body, sizeof(body),
             "{\"order_id\":\"o%d\",\"amount\":1,\"currency\":\"eur\"}", i);
    char *raw =
        ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k%d\r\n"
                    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                    i, strlen(body), body);
    http_resp r;
    int status = http_once(w->srv.port, raw, strlen(raw), &r);
    ust_free(raw);
    return status;
}

/* /healthz's reasons: whether one has this check (and its status). */
static int health_has(world *w, const char *check, int *status)
{
    http_resp r;
    *status = get(w->srv.admin_port, "/healthz", &r);
    json_error_t jerr;
    json_t *doc = json_loads(r.body, 0, &jerr);
    if (doc == NULL)
        fail_msg("/healthz: not JSON: %s", r.body);
    int found = 0;
    size_t i;
    json_t *reason;
    json_array_foreach(json_object_get(doc, "reasons"), i, reason)
    {
        const char *c = json_string_value(json_object_get(reason, "check"));
        const char *d = json_string_value(json_object_get(reason, "detail"));
        assert_non_null(c);
        assert_true(d != NULL && d[0] != '\0'); /* every reason says what */
        if (strcmp(c, check) == 0)
            found = 1;
    }
    const char *st = json_string_value(json_object_get(doc, "status"));
    assert_non_null(st);
    assert_string_equal(st, *status == 200 ? "ok" : "degraded");
    assert_int_equal(*status == 200,
                     json_array_size(json_object_get(doc, "reasons")) == 0);
    json_decref(doc);
    return found;
}

static void wait_degraded(world *w, const char *check)
{
    int status = 0;
    for (int i = 0; i < POLL_TRIES; i++) {
        if (health_has(w, check, &status)) {
            assert_int_equal(status, 503);
            return;
        }
        usleep(POLL_MS * 1000);
    }
    fail_msg("/healthz never named %s (last status %d)", check, status);
}

static void wait_healthy(world *w)
{
    int status = 0;
    for (int i = 0; i < POLL_TRIES; i++) {
        health_has(w, "", &status);
        if (status == 200)
            return;
        usleep(POLL_MS * 1000);
    }
    fail_msg("/healthz stayed %d", status);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

/* chattr on each path (NULL-terminated, every one exists); 0 when it could
 * not (not root, no CAP_LINUX_IMMUTABLE, a file system without the flag). */
static int chattr(const char *flag, const char *const *paths)
{
    for (int i = 0; paths[i] != NULL; i++) {
        assert_int_equal(access(paths[i], F_OK), 0);
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof(cmd), "chattr %s '%s' 2>/dev/null", flag, paths[i]);
        if (system(cmd) != 0)
            return 0;
    }
    return 1;
}

/* Rows in a table of a database the server has open, -1 when unreadable. */
static int64_t rows_in(const char *db_path, const char *table)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    char *sql = ust_sprintf("SELECT count(*) FROM %s", table);
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ust_free(sql);
    return n;
}

/* ---- the admin listener ---------------------------------------------- */

static void test_admin_listener_serves_health_and_metrics_alone(void **state)
{
    world *w = *state;
    serve_world_start_with(w, NULL);
    assert_int_not_equal(w->srv.admin_port, w->srv.port);
    http_resp r;
    assert_int_equal(get(w->srv.admin_port, "/healthz", &r), 200);
    assert_string_equal(r.body, "{\"status\":\"ok\"}");
    assert_int_equal(get(w->srv.admin_port, "/readyz", &r), 200);
    assert_int_equal(get(w->srv.admin_port, "/metrics", &r), 200);
    assert_non_null(strstr(r.body, "understudy_events_recorded_total"));
    const char post[] =
        "POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(http_once(w->srv.admin_port, post, sizeof(post) - 1, &r), 405);
    /* Nothing is recorded there, and the public side knows none of them. */
    assert_int_equal(get(w->srv.admin_port, "/payments", &r), 404);
    assert_int_equal(get(w->srv.port, "/healthz", &r), 404);
    assert_int_equal(get(w->srv.port, "/readyz", &r), 404);
    assert_int_equal(get(w->srv.port, "/metrics", &r), 404);
    assert_int_equal(pay(w, 1), 202);
    serve_world_stop(w);
}

/* --admin-listen sets the admin address; a bad one is refused at start. */
static void test_admin_listen_is_configurable(void **state)
{
    world *w = *state;
    const char *extra[] = {"--admin-listen", "127.0.0.1:0", NULL};
    serve_world_start_with(w, extra);
    http_resp r;
    assert_int_equal(get(w->srv.admin_port, "/healthz", &r), 200);
    serve_world_stop(w);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        execl(getenv("UST_BIN"), getenv("UST_BIN"), "serve", "--config", w->cfg,
              "--listen", "127.0.0.1:0", "--log", w->log, "--run", w->run,
              "--admin-listen", "nowhere", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[1024] = "";
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 2);
    assert_non_null(strstr(out, "admin"));
}

/* ---- /healthz: each degraded state, and back -------------------------- */

/* The attack: the log made immutable under a running serve. */
static void test_healthz_names_an_unwritable_log(void **state)
{
    world *w = *state;
    serve_world_start_with(w, NULL);
    assert_int_equal(pay(w, 1), 202); /* the WAL exists */
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof(wal), "%s-wal", w->log);
    const char *files[] = {w->log, wal, NULL};
    if (!chattr("+i", files)) {
        serve_world_stop(w);
        print_message("skipped: chattr +i failed (it needs root, CAP_LINUX_IMMUTABLE"
                      " and a file system with the flag, such as ext4)\n");
        skip();
    }
    assert_int_equal(pay(w, 2), 503);
    wait_degraded(w, "log_write");
    assert_true(chattr("-i", files));
    assert_int_equal(pay(w, 3), 202);
    wait_healthy(w);
    serve_world_stop(w);
}

/* The run database made immutable: the runner's steps fail, and once it
 * can write again it catches up. */
static void test_healthz_names_a_failing_runner(void **state)
{
    world *w = *state;
    serve_world_start_with(w, NULL);
    assert_int_equal(pay(w, 1), 202);
    for (int i = 0; i < POLL_TRIES && rows_in(w->run, "decisions") < 1; i++)
        usleep(POLL_MS * 1000);
    assert_int_equal(rows_in(w->run, "decisions"), 1); /* the run's WAL exists */
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof(wal), "%s-wal", w->run);
    const char *files[] = {w->run, wal, NULL};
    if (!chattr("+i", files)) {
        serve_world_stop(w);
        print_message("skipped: chattr +i failed (see above)\n");
        skip();
    }
    assert_int_equal(pay(w, 2), 202); /* recorded all the same */
    wait_degraded(w, "runner_failed");
    assert_true(chattr("-i", files));
    wait_healthy(w);
    serve_world_stop(w);
}

/* --respond legacy with the answers database immutable: the legacy's
 * decision cannot be recorded, the request is answered 503, /healthz names
 * answers_write and /metrics counts it; writable again, the next request is
 * answered by the legacy and /healthz is ok. */
static void test_healthz_names_unwritable_answers(void **state)
{
    world *w = *state;
    const char *const legacy[] = {"--respond", "legacy", NULL};
    serve_world_start_with(w, legacy);
    int answered = pay(w, 1); /* the legacy's status; the answers' WAL exists */
    assert_true(answered >= 200 && answered < 300);
    char answers[PATH_MAX + 16], wal[PATH_MAX + 32];
    snprintf(answers, sizeof(answers), "%s.answers", w->run);
    snprintf(wal, sizeof(wal), "%s-wal", answers);
    assert_int_equal(access(wal, F_OK), 0);
    const char *files[] = {answers, wal, NULL};
    if (!chattr("+i", files)) {
        serve_world_stop(w);
        print_message("skipped: chattr +i failed (see above)\n");
        skip();
    }
    assert_int_equal(pay(w, 2), 503); /* recorded, not decided */
    wait_degraded(w, "answers_write");
    http_resp r;
    assert_int_equal(get(w->srv.admin_port, "/metrics", &r), 200);
    assert_non_null(strstr(r.body, "\nunderstudy_answers_write_failures_total 1\n"));
    assert_true(chattr("-i", files));
    assert_int_equal(pay(w, 3), answered);
    int status;
    assert_false(health_has(w, "answers_write", &status));
    wait_healthy(w);
    serve_world_stop(w);
}

/* A candidate that hangs: three timeouts in a row take it down; once it
 * answers again, after its back-off, it is up. */
static void test_healthz_names_a_candidate_in_back_off(void **state)
{
    world *w = *state;
    write_config(w, NULL, serve_world_blocking_plugin(w, 200), NULL);
    serve_world_start_with(w, NULL);
    int i = 0, status = 0, down = 0;
    for (int tries = 0; tries < POLL_TRIES && !down; tries++) {
        assert_int_equal(pay(w, ++i), 202);
        down = health_has(w, "candidate_down", &status);
        if (!down)
            usleep(POLL_MS * 1000);
    }
    assert_true(down);
    assert_int_equal(status, 503);
    assert_true(i >= 3); /* not before its third timeout */
    touch(w->unblock);
    /* Events bring it back: the next ones wait out the back-off, then one
     * restarts it. */
    for (int tries = 0; tries < POLL_TRIES; tries++) {
        assert_int_equal(pay(w, ++i), 202);
        health_has(w, "", &status);
        if (status == 200)
            break;
        usleep(POLL_MS * 1000);
    }
    assert_int_equal(status, 200);
    serve_world_stop(w);
}

/* A runner held up by a candidate deciding slowly (within its timeout):
 * past health.max_lag_s it is named; once it catches up it is not. */
static void test_healthz_names_a_runner_that_lags(void **state)
{
    world *w = *state;
    write_config(w, NULL, serve_world_blocking_plugin(w, 600000),
                 json_pack("{s:i}", "max_lag_s", 1));
    serve_world_start_with(w, NULL);
    int status;
    assert_false(health_has(w, "runner_lag", &status));
    assert_int_equal(pay(w, 1), 202);
    assert_int_equal(pay(w, 2), 202);
    wait_degraded(w, "runner_lag");
    assert_false(health_has(w, "candidate_down", &status)); /* slow, not down */
    /* Killed and started again, it still lags behind the same events. */
    server_stop(&w->srv, SIGKILL);
    serve_world_start_with(w, NULL);
    wait_degraded(w, "runner_lag");
    touch(w->unblock);
    wait_healthy(w);
    serve_world_stop(w);
}

/* Descriptors near the limit: the server runs under a low RLIMIT_NOFILE
 * with many inherited; connections take it past 90 %, and closing them
 * brings it back. */
#define FD_LIMIT 256
#define FD_INHERITED 150
static void low_fd_limit(void)
{
    struct rlimit rl = {FD_LIMIT, FD_LIMIT};
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int i = 0; i < FD_INHERITED; i++)
        open("/dev/null", O_RDONLY); /* inherited across the exec */
}

static void test_healthz_names_descriptors_near_the_limit(void **state)
{
    world *w = *state;
    const char *args[] = {"--config", w->cfg,  "--listen", "127.0.0.1:0", "--log",
                          w->log,     "--run", w->run,     NULL};
    w->srv = server_start_with(args, low_fd_limit);
    int status;
    assert_false(health_has(w, "descriptors", &status));
    assert_int_equal(status, 200);
    /* Connections, one at a time, until it says so: 150 inherited and what
     * serve opens itself leave a few dozen below 90 % of 256. */
    int fds[80], want = 0, near = 0;
    while (!near && want < 80) {
        fds[want++] = http_connect(w->srv.port);
        near = health_has(w, "descriptors", &status);
    }
    wait_degraded(w, "descriptors");
    for (int i = 0; i < want; i++)
        close(fds[i]);
    wait_healthy(w);
    serve_world_stop(w);
}

/* ---- /readyz ---------------------------------------------------------- */

/* Ready while serving; 503 once stopping, while an answer is still owed (a
 * legacy that is slow to decide it). */
static void test_readyz_says_stopping(void **state)
{
    world *w = *state;
    write_config(w, serve_world_blocking_plugin(w, 600000), NULL, NULL);
    const char *extra[] = {"--respond", "legacy", NULL};
    serve_world_start_with(w, extra);
    http_resp r;
    assert_int_equal(get(w->srv.admin_port, "/readyz", &r), 200);
    assert_string_equal(r.body, "{\"status\":\"ready\"}");
    char body[] = "{\"order_id\":\"o1\",\"amount\":1,\"currency\":\"eur\"}";
    char *raw =
        ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k1\r\n"
                    "Content-Type: application/json\r\nContent-Length: %zu"
                    "\r\n\r\n%s",
                    strlen(body), body);
    int fd = http_connect(w->srv.port);
    send_all(fd, raw, strlen(raw));
    ust_free(raw);
    for (int i = 0; i < POLL_TRIES && rows_in(w->log, "events") < 1; i++)
        usleep(POLL_MS * 1000);
    assert_int_equal(rows_in(w->log, "events"), 1); /* committed; its answer is owed */
    kill(w->srv.pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < POLL_TRIES && status != 503; i++) {
        status = get(w->srv.admin_port, "/readyz", &r);
        if (status != 503)
            usleep(POLL_MS * 1000);
    }
    assert_int_equal(status, 503);
    assert_string_equal(r.body, "{\"status\":\"stopping\"}");
    /* A monitor's connection, open and silent, does not hold the stop back
     * (header_timeout_ms is an hour here). */
    int idle = http_connect(w->srv.admin_port);
    touch(w->unblock);
    char buf[8192];
    size_t len = 0;
    assert_int_equal(read_response(fd, buf, &len, sizeof(buf), &r), 1);
    close(fd);
    int wst;
    waitpid(w->srv.pid, &wst, 0);
    w->srv.pid = 0;
    assert_true(WIFEXITED(wst));
    assert_int_equal(WEXITSTATUS(wst), 0);
    close(idle);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_admin_listener_serves_health_and_metrics_alone),
        T(test_admin_listen_is_configurable),
        T(test_healthz_names_an_unwritable_log),
        T(test_healthz_names_a_failing_runner),
        T(test_healthz_names_unwritable_answers),
        T(test_healthz_names_a_candidate_in_back_off),
        T(test_healthz_names_a_runner_that_lags),
        T(test_healthz_names_descriptors_near_the_limit),
        T(test_readyz_says_stopping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
