/* gen: the same seed gives the same bytes, and a replay of what it wrote
 * finds exactly the divergences its truth file predicts (the 10,000,000
 * event week of the README was checked the same way, by hand), and the
 * report's coverage counts exactly what its truth file says gen planted. */
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/gen.h>
#include <understudy/coverage.h>
#include <understudy/log.h>
#include <understudy/report.h>
#include <understudy/runner.h>

#include <sqlite3.h>
#include <unistd.h>

typedef struct world {
    char dir[PATH_MAX];
} world;

static int setup(void **state)
{
    world *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    ust_test_set_secrets("whsec_gen_test");
    *state = w;
    return 0;
}

static ust_config *load(const char *rel)
{
    char path[PATH_MAX];
    ust_test_source_path(rel, path);
    return ust_test_load_config(path);
}

static void test_same_seed_same_bytes(void **state)
{
    world *w = *state;
    ust_config *cfg = load("tests/data/config.json");
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    snprintf(a, sizeof(a), "%s/a.jsonl", w->dir);
    snprintf(b, sizeof(b), "%s/b.jsonl", w->dir);
    snprintf(c, sizeof(c), "%s/c.jsonl", w->dir);
    ust_test_generate(cfg, 42, 5000, a, NULL);
    ust_test_generate(cfg, 42, 5000, b, NULL);
    ust_test_generate(cfg, 43, 5000, c, NULL);
    char *x = ust_test_read_file(a), *y = ust_test_read_file(b),
         *z = ust_test_read_file(c);
    assert_string_equal(x, y);
    assert_string_not_equal(x, z);
    free(x), free(y), free(z);
    ust_config_free(cfg);
}

/* The truth file's last line, {"coverage": {...}}, cut off want; the test
 * fails without it. */
static json_t *take_coverage_line(char *want)
{
    size_t len = strlen(want);
    assert_true(len > 1 && want[len - 1] == '\n');
    want[len - 1] = '\0';
    char *last = strrchr(want, '\n');
    last = last ? last + 1 : want;
    json_error_t jerr;
    json_t *line = json_loads(last, 0, &jerr);
    assert_non_null(line);
    json_t *cov = json_incref(json_object_get(line, "coverage"));
    json_decref(line);
    assert_non_null(cov);
    *last = '\0'; /* the divergences, each line with its newline */
    return cov;
}

/* The run's coverage as summary.json has it equals the truth file's, kind
 * for kind, in the report's order. */
static void check_coverage(world *w, const char *run, const json_t *truth)
{
    char out[PATH_MAX], path[PATH_MAX];
    snprintf(out, sizeof(out), "%s/report", w->dir);
    snprintf(path, sizeof(path), "%s/summary.json", out);
    ust_report_opts ro = {.run_path = run, .out_dir = out};
    char *err = NULL;
    if (ust_report_write(&ro, &err) != 0)
        fail_msg("report: %s", err);
    json_error_t jerr;
    json_t *summary = json_load_file(path, 0, &jerr);
    assert_non_null(summary);
    json_t *got = json_object_get(summary, "coverage");
    assert_int_equal(json_object_size(got), UST_COVERAGE_N);
    assert_int_equal(json_object_size(truth), UST_COVERAGE_N);
    const char *kind;
    json_t *v;
    int k = 0;
    json_object_foreach(got, kind, v)
    {
        assert_string_equal(kind, ust_coverage_kind_name((ust_coverage_kind)k++));
        json_t *want = json_object_get(truth, kind);
        if (!json_is_integer(want) || json_integer_value(want) != json_integer_value(v))
            fail_msg("coverage %s: counted %lld, gen planted %lld", kind,
                     (long long)json_integer_value(v),
                     (long long)json_integer_value(want));
    }
    /* gen plants every kind its mix has: none of those may read 0 */
    static const char *const planted[] = {
        "identical_redelivery", "redelivery_new_id",    "out_of_order",
        "semantic_pair",        "api_completed_repeat", "api_concurrent_repeat",
        "signature_invalid"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(planted); i++)
        assert_true(json_integer_value(json_object_get(got, planted[i])) > 0);
    assert_int_equal(json_integer_value(json_object_get(summary, "events")),
                     json_integer_value(json_object_get(summary, "fed")) +
                         json_integer_value(json_object_get(got, "signature_invalid")));
    json_decref(summary);
}

/* Generates, imports, replays and compares the run's divergences with the
 * truth file, line for line, and its coverage with the truth's counts. */
static void check_truth(world *w, const char *config, int64_t events)
{
    ust_config *cfg = load(config);
    char out[PATH_MAX], truth[PATH_MAX], log_path[PATH_MAX], run[PATH_MAX];
    snprintf(out, sizeof(out), "%s/gen.jsonl", w->dir);
    snprintf(truth, sizeof(truth), "%s/truth.jsonl", w->dir);
    snprintf(log_path, sizeof(log_path), "%s/events.db", w->dir);
    snprintf(run, sizeof(run), "%s/run.db", w->dir);
    unlink(log_path);
    unlink(run);
    ust_test_generate(cfg, 7, events, out, truth);
    /* The truth is about decisions, not isolation: the candidate in process
     * keeps this quick under the sanitizers. */
    cfg->candidate.isolate = 0;
    ust_test_import_generated(cfg, out, log_path);
    ust_test_replay_reference(cfg, log_path, run);
    sqlite3 *db;
    sqlite3_open(run, &db);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(
        db,
        "SELECT group_concat('{\"seq\":' || seq || ',\"class\":\"' || class"
        " || '\",\"fields\":' || fields || '}', char(10)) FROM"
        " (SELECT * FROM divergences ORDER BY seq)",
        -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    char *got = ust_sprintf("%s\n", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
    char *want = ust_test_read_file(truth);
    json_t *coverage = take_coverage_line(want);
    check_coverage(w, run, coverage);
    json_decref(coverage);
    assert_true(strlen(want) > 1000); /* every kind was injected */
    assert_non_null(strstr(want, "in_progress"));
    assert_non_null(strstr(want, "charge.refunded"));
    assert_non_null(strstr(want, "[\"flags\"]"));
    assert_string_equal(got, want);
    ust_free(got);
    free(want);
    ust_config_free(cfg);
}

static void test_replay_finds_exactly_the_truth(void **state)
{
    check_truth(*state, "tests/data/config.json", 20000);
}

static void test_truth_follows_the_compared_headers(void **state)
{
    /* The demo config also compares Retry-After and Idempotent-Replayed. */
    check_truth(*state, "scenarios/demo.config.json", 8000);
}

static void test_bad_mix_is_refused(void **state)
{
    (void)state;
    int mix[UST_GEN_KINDS];
    ust_gen_default_mix(mix);
    char *err = NULL;
    assert_int_equal(ust_gen_parse_mix("retry=5,semantic=0", mix, &err), 0);
    assert_int_equal(mix[1], 5);
    assert_int_equal(mix[4], 0);
    assert_int_equal(ust_gen_parse_mix("retries=5", mix, &err), UST_EINVAL);
    assert_non_null(strstr(err, "\"retries=5\""));
    ust_free(err);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ust_test_tmpdir_teardown)
    const struct CMUnitTest tests[] = {
        T(test_same_seed_same_bytes),
        T(test_replay_finds_exactly_the_truth),
        T(test_truth_follows_the_compared_headers),
        T(test_bad_mix_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
