/* The plugin host: refusing plugins that cannot work, turning failures and
 * garbage into `error` decisions, and the state store's guarantees. */
#include "store_world.h" /* store_setup, store_teardown */

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/runner.h>

static void expect_refused(const char *name, const char *why)
{
    char path[PATH_MAX];
    ust_test_fixture_path(name, path);
    ust_plugin *p = NULL;
    char *err = NULL;
    assert_int_equal(ust_plugin_load(path, "x", NULL, store, &p, &err), UST_EPLUGIN);
    assert_null(p);
    assert_non_null(err);
    if (strstr(err, path) == NULL || strstr(err, why) == NULL)
        fail_msg("message \"%s\" should name the file and say \"%s\"", err, why);
    ust_free(err);
}

static void test_refuses_unusable_plugins(void **state)
{
    (void)state;
    expect_refused("misbehaving_wrong_abi", "ABI major 2, host needs 1");
    expect_refused("misbehaving_no_entry", "no ust_plugin_entry_v1 symbol");
    expect_refused("misbehaving_create_fails", "create failed: refusing to start");
    expect_refused("does_not_exist", "cannot read plugin file");
}

static int wants_raw_request(const char *path, int isolate)
{
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.isolate = isolate;
    ust_plugin *p = NULL;
    char *err = NULL;
    if (ust_plugin_open(&pc, path, "candidate", 0, store, &p, &err) != 0)
        fail_msg("%s: %s", path, err);
    int wants = ust_plugin_wants_raw_request(p);
    ust_plugin_unload(p);
    return wants;
}

/* A plugin that decides on canonical fields says so, in process and, through
 * its hello, in a child; one that does not say so gets the raw request; a
 * table from ABI 1.0, shorter by the flags, still loads. */
static void test_plugins_say_whether_they_read_the_raw_request(void **state)
{
    (void)state;
    char path[PATH_MAX];
    ust_test_plugin_path("candidate", path);
    assert_int_equal(wants_raw_request(path, 0), 0);
    assert_int_equal(wants_raw_request(path, 1), 0);
    ust_test_fixture_path("misbehaving_decide_error", path);
    assert_int_equal(wants_raw_request(path, 0), 1);
    assert_int_equal(wants_raw_request(path, 1), 1);
    ust_test_fixture_path("misbehaving_abi_1_0", path);
    assert_int_equal(wants_raw_request(path, 0), 1);
}

static void decide_twice(const char *name, const char *want_error)
{
    char path[PATH_MAX];
    ust_test_fixture_path(name, path);
    ust_plugin *p = NULL;
    char *err = NULL;
    assert_int_equal(ust_plugin_load(path, name, NULL, store, &p, &err), 0);
    ust_request req;
    memset(&req, 0, sizeof(req));
    ust_event ev;
    memset(&ev, 0, sizeof(ev));
    ust_decision d;

    ev.seq = 1; /* odd: the plugin misbehaves */
    ust_plugin_decide(p, &ev, &req, &d);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_non_null(d.error);
    if (strstr(d.error, want_error) == NULL)
        fail_msg("error \"%s\" should say \"%s\"", d.error, want_error);
    ust_decision_clear(&d);

    ev.seq = 2; /* even: a sane answer, and the failed call's write is gone */
    ust_plugin_decide(p, &ev, &req, &d);
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    assert_string_equal(d.body, "{}");
    ust_decision_clear(&d);
    ust_plugin_unload(p);
}

static void test_failures_become_error_decisions(void **state)
{
    (void)state;
    decide_twice("misbehaving_decide_error", "decide failed: database timeout");
    decide_twice("misbehaving_garbage", "verdict out of range");
    decide_twice("misbehaving_bad_json", "response body is not JSON");
    decide_twice("misbehaving_oversize", "over the size limit");
}

static void test_store_namespaces_and_atomic_calls(void **state)
{
    (void)state;
    const char *v = NULL;
    ust_store_begin_call(store, "legacy");
    assert_int_equal(ust_store_claim(store, "k", "1"), 1);
    assert_int_equal(ust_store_claim(store, "k", "2"), 0); /* sees its own write */
    assert_int_equal(ust_store_get(store, "k", &v), 1);
    assert_string_equal(v, "1");
    assert_int_equal(ust_store_end_call(store, 1), 0);

    ust_store_begin_call(store, "candidate"); /* another namespace: nothing there */
    assert_int_equal(ust_store_get(store, "k", &v), 0);
    assert_int_equal(ust_store_put(store, "k", "c"), 0);
    assert_int_equal(ust_store_end_call(store, 0), 0); /* dropped */

    ust_store_begin_call(store, "candidate");
    assert_int_equal(ust_store_get(store, "k", &v), 0);
    assert_int_equal(ust_store_end_call(store, 1), 0);

    ust_store_begin_call(store, "legacy");
    assert_int_equal(ust_store_delete(store, "k"), 0);
    assert_int_equal(ust_store_get(store, "k", &v), 0);
    assert_int_equal(ust_store_put(store, "j", "x"), 0);
    assert_int_equal(ust_store_end_call(store, 1), 0);

    /* Flushed state is what a fresh store (a resumed run) sees. */
    char *err = NULL;
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(ust_store_flush(store, &err), 0);
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    ust_store *fresh = NULL;
    assert_int_equal(ust_store_open(db, &fresh, &err), 0);
    ust_store_begin_call(fresh, "legacy");
    assert_int_equal(ust_store_get(fresh, "k", &v), 0);
    assert_int_equal(ust_store_get(fresh, "j", &v), 1);
    assert_string_equal(v, "x");
    ust_store_end_call(fresh, 0);
    ust_store_begin_call(fresh, "candidate");
    assert_int_equal(ust_store_get(fresh, "j", &v), 0);
    ust_store_end_call(fresh, 0);
    ust_store_close(fresh);
}

static void flush(ust_store *s)
{
    char *err = NULL;
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(ust_store_flush(s, &err), 0);
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
}

/* More keys than the cache holds, and more bytes of overwritten values than
 * its arena keeps: the cache empties after a flush, and every value read
 * afterwards is the latest one, from the database. */
static void test_store_cache_empties_when_full(void **state)
{
    (void)state;
    enum { KEYS = 300000, OVERWRITES = 20000 };
    char k[32], v[32];
    for (int i = 0; i < KEYS; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        ust_store_begin_call(store, "legacy");
        assert_int_equal(ust_store_put(store, k, v), 0);
        assert_int_equal(ust_store_end_call(store, 1), 0);
        if (i % 10000 == 9999)
            flush(store);
    }
    flush(store);
    static char big[4096];
    for (int i = 0; i < OVERWRITES; i++) {
        memset(big, 'a' + i % 26, sizeof(big) - 16);
        snprintf(big + sizeof(big) - 16, 16, "%d", i);
        ust_store_begin_call(store, "candidate");
        assert_int_equal(ust_store_put(store, "big", big), 0);
        if (i == 7)
            assert_int_equal(ust_store_delete(store, "k7"), 0); /* not its namespace */
        assert_int_equal(ust_store_end_call(store, 1), 0);
        if (i % 1000 == 999)
            flush(store);
    }
    const char *got = NULL;
    ust_store_begin_call(store, "legacy");
    for (int i = 0; i < KEYS; i += 9973) {
        snprintf(k, sizeof(k), "k%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        assert_int_equal(ust_store_get(store, k, &got), 1);
        assert_string_equal(got, v);
    }
    assert_int_equal(ust_store_get(store, "k7", &got), 1);
    assert_int_equal(ust_store_get(store, "big", &got), 0);
    ust_store_end_call(store, 0);
    ust_store_begin_call(store, "candidate");
    assert_int_equal(ust_store_get(store, "big", &got), 1);
    assert_string_equal(got, big);
    ust_store_end_call(store, 0);
}

/* A run database from before the namespace joined the key: its state is
 * converted on open, and the resumed run reads every value in its own
 * namespace and nowhere else. */
static void test_store_converts_a_run_from_the_older_layout(void **state)
{
    (void)state;
    sqlite3 *old = NULL;
    assert_int_equal(sqlite3_open(":memory:", &old), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(
            old,
            "CREATE TABLE state(ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT"
            " NOT NULL, PRIMARY KEY(ns, key)) WITHOUT ROWID;"
            "INSERT INTO state VALUES('legacy', 'event|stripe|evt_1', ''),"
            " ('legacy', 'state|stripe|pi_1', 'paid'),"
            " ('candidate', 'state|stripe|pi_1', 'refunded')",
            NULL, NULL, NULL),
        SQLITE_OK);
    ust_store *s = NULL;
    char *err = NULL;
    assert_int_equal(ust_store_open(old, &s, &err), 0);
    const char *v = NULL;
    ust_store_begin_call(s, "legacy");
    assert_int_equal(ust_store_get(s, "state|stripe|pi_1", &v), 1);
    assert_string_equal(v, "paid");
    assert_int_equal(ust_store_get(s, "event|stripe|evt_1", &v), 1);
    assert_string_equal(v, "");
    ust_store_end_call(s, 0);
    ust_store_begin_call(s, "candidate");
    assert_int_equal(ust_store_get(s, "state|stripe|pi_1", &v), 1);
    assert_string_equal(v, "refunded");
    assert_int_equal(ust_store_get(s, "event|stripe|evt_1", &v), 0);
    ust_store_end_call(s, 0);
    assert_int_equal(ust_store_ns_empty(s, "candidate"), 0);
    assert_int_equal(ust_store_ns_empty(s, "candidat"), 1); /* a prefix is not it */
    assert_int_equal(ust_store_ns_empty(s, "other"), 1);
    ust_store_close(s);
    /* Opened again: already in the new layout, nothing to convert. */
    assert_int_equal(ust_store_open(old, &s, &err), 0);
    ust_store_begin_call(s, "legacy");
    assert_int_equal(ust_store_get(s, "state|stripe|pi_1", &v), 1);
    ust_store_end_call(s, 0);
    ust_store_close(s);
    sqlite3_close(old);
}

/* What a log callback was told. */
static struct {
    int level, calls;
    char msg[256];
} told;

static void remember(void *ctx, int level, const char *msg)
{
    assert_ptr_equal(ctx, &told);
    told.level = level;
    told.calls++;
    snprintf(told.msg, sizeof(told.msg), "%s", msg);
}

/* The host prints nothing: a plugin's warning goes to the config's log
 * callback, named after the plugin; without one it is dropped. */
static void test_a_plugins_warning_goes_to_the_log_callback(void **state)
{
    (void)state;
    char path[PATH_MAX];
    ust_test_plugin_path("legacy", path);
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.config = json_pack("{s:i}", "no_such_key", 1);
    pc.log = remember;
    pc.log_ctx = &told;
    ust_plugin *p = NULL;
    char *err = NULL;
    if (ust_plugin_open(&pc, path, "legacy", 0, store, &p, &err) != 0)
        fail_msg("%s: %s", path, err);
    ust_plugin_unload(p);
    assert_int_equal(told.calls, 1);
    assert_int_equal(told.level, UST_LOG_WARN);
    assert_string_equal(
        told.msg, "plugin legacy: config key no_such_key is not used by this plugin");
    pc.log = NULL;
    if (ust_plugin_open(&pc, path, "legacy", 0, store, &p, &err) != 0)
        fail_msg("%s: %s", path, err);
    ust_plugin_unload(p);
    assert_int_equal(told.calls, 1);
    json_decref(pc.config);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refuses_unusable_plugins, store_setup,
                                        store_teardown),
        cmocka_unit_test_setup_teardown(test_failures_become_error_decisions,
                                        store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_store_namespaces_and_atomic_calls,
                                        store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_store_cache_empties_when_full, store_setup,
                                        store_teardown),
        cmocka_unit_test(test_store_converts_a_run_from_the_older_layout),
        cmocka_unit_test_setup_teardown(
            test_plugins_say_whether_they_read_the_raw_request, store_setup,
            store_teardown),
        cmocka_unit_test_setup_teardown(test_a_plugins_warning_goes_to_the_log_callback,
                                        store_setup, store_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
