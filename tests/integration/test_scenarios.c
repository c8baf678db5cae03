/* Every scenario both ways: rendered and replayed (the exact expected
 * outcome), and live through `understudy serve` on 127.0.0.1 (the same
 * outcome where timing allows, the documented weaker check where not); and
 * the article's test, five parallel requests with one key, live. */
#include "http_service.h"
#include "serve_client.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/runner.h>

#include <dirent.h>
#include <sqlite3.h>

typedef struct world {
    char dir[PATH_MAX], log[PATH_MAX], run[PATH_MAX], cfg_path[PATH_MAX];
    ust_config *cfg;
    ust_scenario *sc[64];
    size_t n;
    char legacy[PATH_MAX], candidate[PATH_MAX];
    server_proc srv; /* killed by teardown if a test fails while it runs */
} world;

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int scenario_file(const struct dirent *d)
{
    return d->d_name[0] >= '0' && d->d_name[0] <= '9' &&
           strstr(d->d_name, ".json") != NULL;
}

static int setup(void **state)
{
    world *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    snprintf(w->log, sizeof(w->log), "%s/events.db", w->dir);
    snprintf(w->run, sizeof(w->run), "%s/run.db", w->dir);
    ust_test_plugin_path("legacy", w->legacy);
    ust_test_plugin_path("candidate", w->candidate);
    ust_test_source_path("scenarios/demo.config.json", w->cfg_path);
    ust_test_set_secrets("whsec_scenario_test");
    w->cfg = ust_test_load_config(w->cfg_path);
    char *err = NULL;
    char dir[PATH_MAX];
    ust_test_source_path("scenarios", dir);
    struct dirent **names;
    int n = scandir(dir, &names, scenario_file, by_name);
    assert_true(n >= 19);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (ust_scenario_load(path, w->cfg, &w->sc[w->n++], &err) != 0)
            fail_msg("%s", err);
        free(names[i]);
    }
    free(names);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    if (w->srv.pid > 0)
        server_stop(&w->srv, SIGKILL);
    for (size_t i = 0; i < w->n; i++)
        ust_scenario_free(w->sc[i]);
    ust_config_free(w->cfg);
    ust_test_rmdir(w->dir);
    free(w);
    return 0;
}

static void replay(world *w)
{
    ust_replay_opts o = {.cfg = w->cfg,
                         .log_path = w->log,
                         .run_path = w->run,
                         .legacy_path = w->legacy,
                         .candidate_path = w->candidate};
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
}

/* Every scenario rendered into a fresh log, then replayed. */
static void render_and_replay(world *w)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log, UST_LOG_CREATE, &log, &err), 0);
    for (size_t i = 0; i < w->n; i++)
        ust_test_append_scenario(log, w->cfg, w->sc[i],
                                 1795946400000000LL +
                                     (int64_t)i * UST_SCENARIO_SPACING_US);
    ust_log_close(log);
    replay(w);
}

/* ust_scenario_check of the world's run (made live or not) with its report
 * in dir/check.txt: its return, and *err. */
static int check_run(world *w, int live, char **err)
{
    char out_path[PATH_MAX];
    snprintf(out_path, sizeof(out_path), "%s/check.txt", w->dir);
    FILE *out = fopen(out_path, "w");
    int rc = ust_scenario_check(w->sc, w->n, w->run, live, out, err);
    fclose(out);
    return rc;
}

/* The check passes; else its report is shown and the test fails saying why. */
static void expect_check_holds(world *w, int live, const char *why)
{
    char *err = NULL;
    if (check_run(w, live, &err) != 0) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "cat '%s/check.txt'", w->dir);
        assert_int_equal(system(cmd), 0);
        fail_msg("%s", why);
    }
}

static void test_rendered_and_replayed_exactly(void **state)
{
    world *w = *state;
    render_and_replay(w);
    expect_check_holds(w, 0, "the scenarios' expected outcomes do not hold");
}

/* A read that fails partway (SQLite's integer overflow, from the 4th
 * divergence on) fails the check: the divergences after it are not taken
 * as absent. */
static void test_a_read_error_fails_the_check(void **state)
{
    world *w = *state;
    render_and_replay(w);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(w->run, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "ALTER TABLE divergences RENAME TO divergences_t;"
                     "CREATE VIEW divergences AS SELECT seq, received_at, CASE WHEN"
                     " seq > (SELECT seq FROM divergences_t ORDER BY seq LIMIT 1"
                     " OFFSET 2) THEN abs(-9223372036854775807 - 1) ELSE class END"
                     " AS class, fields, entity, follow_on, line FROM divergences_t",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    char *err = NULL;
    assert_int_equal(check_run(w, 0, &err), UST_EDB);
    assert_non_null(strstr(err, "integer overflow"));
    ust_free(err);
}

static void test_live_through_serve(void **state)
{
    world *w = *state;
    const char *args[] = {"--config", w->cfg_path, "--listen",    "127.0.0.1:0",
                          "--log",    w->log,      "--run",       w->run,
                          "--legacy", w->legacy,   "--candidate", w->candidate,
                          NULL};
    w->srv = server_start(args);
    char url[64], out_path[PATH_MAX];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", w->srv.port);
    snprintf(out_path, sizeof(out_path), "%s/drive.txt", w->dir);
    FILE *out = fopen(out_path, "w");
    ust_drive_summary sum;
    char *err = NULL;
    /* A day of offsets in a few seconds: what depends on elapsed time is
     * marked timing_sensitive in the scenarios and checked the weaker way. */
    assert_int_equal(ust_scenario_drive(w->sc, w->n, url, 20000, out, &sum, &err), 0);
    fclose(out);
    assert_int_equal(sum.errors, 0);
    assert_int_equal(sum.s5xx, 0);
    assert_int_equal(sum.s4xx, 3); /* expired, invalid and missing signatures: 401 */
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
    expect_check_holds(w, 1, "the live run does not match the scenarios");
    /* The article's test, scenario 12: five parallel requests with one key.
     * The legacy executed more than once; the candidate exactly once, and
     * answered every other one 409 in_progress or with the replayed answer. */
    int row[4];
    ust_test_sql_row(w->run,
                     "SELECT sum(l_verdict = 'applied'), sum(c_verdict = 'applied'),"
                     " sum((c_verdict = 'in_progress' AND c_status = 409) OR"
                     " c_verdict = 'duplicate'), count(*) FROM decisions d JOIN"
                     " (SELECT 1) WHERE entity = '/payments:t1:k-s12'",
                     row, 4);
    assert_int_equal(row[3], 5);
    assert_true(row[0] > 1);
    assert_int_equal(row[1], 1);
    assert_int_equal(row[2], 4);
}

/* Nobody listening: every request is counted an error and its line says
 * -1, none is taken for an answer. */
static void test_drive_to_a_closed_port_counts_every_request_an_error(void **state)
{
    world *w = *state;
    char url[64], *text = NULL;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ust_test_closed_port());
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ust_drive_summary sum;
    char *err = NULL;
    assert_int_equal(ust_scenario_drive(w->sc, 2, url, 20000, out, &sum, &err), 0);
    fclose(out);
    assert_true(sum.sent >= 4);
    assert_int_equal(sum.errors, sum.sent);
    assert_int_equal(sum.s2xx + sum.s4xx + sum.s5xx, 0);
    assert_non_null(strstr(text, "step  0   -1 "));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rendered_and_replayed_exactly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_live_through_serve, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_drive_to_a_closed_port_counts_every_request_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_read_error_fails_the_check, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
