/* Which backend a log path names, and what a URL changes outside the log:
 * the config keeps it as written, serve's file lock leaves it alone, and a
 * message about it never shows its password. */
#include "support.h"

#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/error.h>

#include <jansson.h>

static void test_scheme_picks_the_backend(void **state)
{
    (void)state;
    assert_ptr_equal(ust__log_backend_for("postgresql://u@db/log"), &ust__log_pg);
    assert_ptr_equal(ust__log_backend_for("postgres://db/log"), &ust__log_pg);
    assert_ptr_equal(ust__log_backend_for("events.db"), &ust__log_sqlite);
    assert_ptr_equal(ust__log_backend_for("/var/lib/postgresql/events.db"),
                     &ust__log_sqlite);
    assert_ptr_equal(ust__log_backend_for("postgresql:events.db"), &ust__log_sqlite);
}

/* A public call goes to the table of the log's backend: an operation one
 * backend left out would be a call through NULL on its logs. */
static void test_every_backend_has_every_operation(void **state)
{
    (void)state;
    const ust__log_backend *backends[] = {&ust__log_sqlite, &ust__log_pg};
    for (size_t i = 0; i < 2; i++) {
        const ust__log_backend *b = backends[i];
        assert_non_null(b->name);
        assert_true(b->open && b->close && b->append && b->begin && b->commit &&
                    b->rollback);
        assert_true(b->cursor_open && b->cursor_open_before && b->cursor_next &&
                    b->cursor_close && b->read_seqs && b->scan);
        assert_true(b->verify && b->head && b->stats && b->prune_through && b->backup);
    }
}

static void test_url_message_hides_the_password(void **state)
{
    (void)state;
    ust_log *log = NULL;
    char *err = NULL;
    /* Port 1 on loopback: nothing listens, the connection is refused. */
    int rc =
        ust_log_open("postgresql://ust:s3cret@127.0.0.1:1/events?connect_timeout=5",
                     UST_LOG_READONLY, &log, &err);
    assert_int_equal(rc, UST_EDB);
    assert_null(log);
    assert_non_null(err);
    assert_non_null(strstr(err, "postgresql://ust@127.0.0.1:1/events"));
    assert_null(strstr(err, "s3cret"));
    ust_free(err);
}

static void test_url_takes_no_file_lock(void **state)
{
    (void)state;
    ust_db_lock *lock = (ust_db_lock *)&lock;
    char *err = NULL;
    assert_int_equal(ust_db_lock_take("postgresql://db/log", &lock, &err), 0);
    assert_null(lock);
    ust_db_lock_release(lock);
}

static void test_config_keeps_a_url(void **state)
{
    (void)state;
    char dir[PATH_MAX], src[PATH_MAX], path[PATH_MAX + 16];
    ust_test_tmpdir(dir);
    ust_test_source_path("tests/data/config.json", src);
    json_t *cfg_json = json_load_file(src, 0, NULL);
    assert_non_null(cfg_json);
    json_object_set_new(cfg_json, "log", json_string("postgresql://ust@db:5432/log"));
    snprintf(path, sizeof(path), "%s/config.json", dir);
    assert_int_equal(json_dump_file(cfg_json, path, 0), 0);
    json_decref(cfg_json);
    ust_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(ust_config_load(path, &cfg, &err), 0);
    assert_string_equal(cfg->log_path, "postgresql://ust@db:5432/log");
    ust_config_free(cfg);
    ust_test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scheme_picks_the_backend),
        cmocka_unit_test(test_every_backend_has_every_operation),
        cmocka_unit_test(test_url_message_hides_the_password),
        cmocka_unit_test(test_url_takes_no_file_lock),
        cmocka_unit_test(test_config_keeps_a_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
