/* Partitioned runners (replay --partition K/N): the partitions of a
 * generated week decide every event exactly once between them, and their
 * divergence lines, merged by seq, are the whole run's byte for byte; a run
 * is resumed only as the partition it began as; the gate judges a
 * partition's run complete; and the hash that splits the log is pinned. */
#include "partition_world.h"

#include <understudy/array.h>
#include <understudy/gen.h>
#include <understudy/report.h>

#define GEN_EVENTS 20000

static int setup(void **state)
{
    world *w = world_new();
    /* Partitioning is about which events a runner decides, not about
     * isolation: the candidate in process keeps this quick under ASan. */
    w->cfg->candidate.isolate = 0;
    *state = w;
    return 0;
}

typedef struct line {
    long long seq;
    char *text;
} line;

static int by_seq(const void *a, const void *b)
{
    const line *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The lines of every stream in texts, ordered by their seq, as one text. */
static char *merge_by_seq(char **texts, size_t n)
{
    line *all = NULL;
    size_t count = 0, cap = 0;
    for (size_t i = 0; i < n; i++)
        for (char *s = texts[i], *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
            if (count == cap)
                all = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof(*all));
            assert_int_equal(strncmp(s, "{\"seq\":", 7), 0);
            all[count].seq = strtoll(s + 7, NULL, 10);
            all[count].text = strndup(s, (size_t)(nl - s + 1));
            count++;
        }
    qsort(all, count, sizeof(*all), by_seq);
    size_t size = 0;
    char *merged = NULL;
    FILE *out = open_memstream(&merged, &size);
    for (size_t i = 0; i < count; i++) {
        fputs(all[i].text, out);
        free(all[i].text);
    }
    fclose(out);
    free(all);
    return merged;
}

/* How many of the runs named in names decided each seq of 1..n: every
 * count must be exactly one. */
static void expect_decided_once(world *w, const char *const *names, size_t n_names,
                                int64_t n)
{
    unsigned char *times = calloc((size_t)n + 1, 1);
    for (size_t i = 0; i < n_names; i++) {
        char rp[PATH_MAX];
        run_path(w, names[i], rp);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(rp, &db), SQLITE_OK);
        sqlite3_stmt *q = NULL;
        assert_int_equal(
            sqlite3_prepare_v2(db, "SELECT seq FROM decisions", -1, &q, NULL),
            SQLITE_OK);
        while (sqlite3_step(q) == SQLITE_ROW) {
            int64_t seq = sqlite3_column_int64(q, 0);
            assert_true(seq >= 1 && seq <= n);
            times[seq]++;
        }
        sqlite3_finalize(q);
        sqlite3_close(db);
    }
    for (int64_t seq = 1; seq <= n; seq++)
        if (times[seq] != 1)
            fail_msg("seq %lld decided by %d partitions", (long long)seq, times[seq]);
    free(times);
}

/* The gate finds the run complete: it decided its log up to its head. */
static void expect_complete(world *w, const char *name)
{
    char rp[PATH_MAX];
    run_path(w, name, rp);
    ust_gate_result res;
    char *err = NULL;
    if (ust_gate_check(rp, NULL, NULL, &res, &err) != 0)
        fail_msg("gate %s: %s", name, err);
    if (res.refusal != NULL)
        fail_msg("gate %s: %s", name, res.refusal);
    assert_int_equal(res.cursor, GEN_EVENTS);
    ust_gate_result_clear(&res);
}

/* N partitions of the generated log against the whole run. */
static void check_partitions(world *w, const char *whole, uint32_t n)
{
    char *texts[3], names[3][32];
    const char *name_of[3];
    int64_t decided = 0, passed = 0;
    for (uint32_t k = 0; k < n; k++) {
        snprintf(names[k], sizeof(names[k]), "part-%u-of-%u.db", k, n);
        name_of[k] = names[k];
        ust_replay_stats st;
        texts[k] = replay_ok(w, w->cfg, names[k], (ust_partition){k, n}, &st);
        assert_int_equal(st.events, GEN_EVENTS);
        assert_int_equal(st.events, st.fed + st.not_fed + st.outside);
        /* Each has a share, none all of it. */
        assert_true(st.fed > GEN_EVENTS / (4 * (int64_t)n));
        decided += st.fed + st.not_fed;
        passed += st.outside;
        expect_complete(w, names[k]);
    }
    assert_int_equal(decided, GEN_EVENTS);
    assert_int_equal(passed, (int64_t)(n - 1) * GEN_EVENTS);
    expect_decided_once(w, name_of, n, GEN_EVENTS);
    char *merged = merge_by_seq(texts, n);
    assert_string_equal(merged, whole);
    free(merged);
    for (uint32_t k = 0; k < n; k++)
        free(texts[k]);
}

static void test_partitions_together_are_the_whole_run(void **state)
{
    world *w = *state;
    gen_log(w, w->cfg, GEN_EVENTS);
    ust_replay_stats st;
    char *whole = replay_ok(w, w->cfg, "whole.db", (ust_partition){0, 0}, &st);
    assert_int_equal(st.outside, 0);
    /* Every kind of divergence the generator plants is there to split. */
    assert_true(strlen(whole) > 100000);
    assert_non_null(strstr(whole, "in_progress"));
    assert_non_null(strstr(whole, "\"flags\""));
    assert_non_null(strstr(whole, "charge.refunded"));
    check_partitions(w, whole, 2);
    check_partitions(w, whole, 3);
    free(whole);
}

/* Why the intent comes first: partitioned by the identity alone, the two
 * transactions of one order (a semantic duplicate) are split, and the
 * candidate's flag on the second is lost. */
static void test_identity_alone_splits_an_order(void **state)
{
    world *w = *state;
    gen_log(w, w->cfg, 3000);
    ust_replay_stats st;
    char *whole = replay_ok(w, w->cfg, "whole.db", (ust_partition){0, 0}, &st);
    json_t *root = json_deep_copy(w->cfg->root);
    json_object_set_new(root, "partition_by", json_string("identity"));
    char *text = json_dumps(root, 0);
    json_decref(root);
    ust_config *cfg = ust_test_parse_config(text, "identity.json");
    free(text);
    cfg->candidate.isolate = 0;
    char *texts[2] = {replay_ok(w, cfg, "i0.db", (ust_partition){0, 2}, &st),
                      replay_ok(w, cfg, "i1.db", (ust_partition){1, 2}, &st)};
    char *merged = merge_by_seq(texts, 2);
    assert_string_not_equal(merged, whole);
    /* The flags are what is lost. */
    size_t whole_flags = 0, merged_flags = 0;
    for (const char *s = whole; (s = strstr(s, "[\"flags\"]")) != NULL; s++)
        whole_flags++;
    for (const char *s = merged; (s = strstr(s, "[\"flags\"]")) != NULL; s++)
        merged_flags++;
    assert_true(merged_flags < whole_flags);
    free(merged);
    free(texts[0]);
    free(texts[1]);
    free(whole);
    ust_config_free(cfg);
}

/* Resumed as another partition (or as the whole log), a run is refused and
 * left as it was; resumed as itself, it goes on. */
static void test_resume_as_another_partition_is_refused(void **state)
{
    world *w = *state;
    gen_log(w, w->cfg, 500);
    ust_replay_stats st;
    free(replay_ok(w, w->cfg, "p0.db", (ust_partition){0, 2}, &st));
    free(replay_ok(w, w->cfg, "whole.db", (ust_partition){0, 0}, &st));
    char *err = NULL;
    assert_int_equal(
        replay_as(w, w->cfg, "p0.db", (ust_partition){1, 2}, NULL, &st, &err),
        UST_EINVAL);
    assert_non_null(strstr(err, "this run decided partition 0/2 of the log, not "
                                "partition 1/2 of it"));
    ust_free(err), err = NULL;
    assert_int_equal(
        replay_as(w, w->cfg, "p0.db", (ust_partition){0, 3}, NULL, &st, &err),
        UST_EINVAL);
    ust_free(err), err = NULL;
    assert_int_equal(
        replay_as(w, w->cfg, "p0.db", (ust_partition){0, 0}, NULL, &st, &err),
        UST_EINVAL);
    assert_non_null(strstr(err, "not the whole log"));
    assert_non_null(strstr(err, "pass --partition 0/2"));
    ust_free(err), err = NULL;
    assert_int_equal(
        replay_as(w, w->cfg, "whole.db", (ust_partition){0, 2}, NULL, &st, &err),
        UST_EINVAL);
    assert_non_null(strstr(err, "this run decided the whole log, not partition 0/2"));
    ust_free(err), err = NULL;
    /* The refused run still says what it was. */
    char rp[PATH_MAX];
    run_path(w, "p0.db", rp);
    int n[1];
    ust_test_sql_row(rp,
                     "SELECT count(*) FROM meta WHERE key = 'partition' AND"
                     " value = '0/2'",
                     n, 1);
    assert_int_equal(n[0], 1);
    ust_test_sql_row(rp,
                     "SELECT count(*) FROM meta WHERE key = 'partition_by' AND"
                     " value = '[\"intent\",\"identity\"]'",
                     n, 1);
    assert_int_equal(n[0], 1);
    run_path(w, "whole.db", rp);
    ust_test_sql_row(rp, "SELECT count(*) FROM meta WHERE key LIKE 'partition%'", n, 1);
    assert_int_equal(n[0], 0);
    assert_int_equal(
        replay_as(w, w->cfg, "p0.db", (ust_partition){0, 2}, NULL, &st, &err), 0);
    assert_int_equal(st.events, 0);
}

/* The split is part of what a run means: the hash of a key is the first 8
 * bytes of its SHA-256, big-endian, mod N, here and on every machine. */
static void test_the_partition_of_a_key_is_fixed(void **state)
{
    (void)state;
    /* sha256("order_42") begins b7c8b17c6fb92694. */
    assert_int_equal(ust_partition_of("order_42", 2), 0);
    assert_int_equal(ust_partition_of("order_42", 3), 2);
    assert_int_equal(ust_partition_of("order_42", 1000), 556);
    assert_int_equal(ust_partition_of("order_42", 65536), 9876);
    /* sha256("stripe:pi_7") begins 3afbd76c031ecfb9. */
    assert_int_equal(ust_partition_of("stripe:pi_7", 1000), 657);
    assert_int_equal(ust_partition_of("/payments:tenant-3:key-9", 1000), 703);
    /* No key: partition 0, whatever N. */
    assert_int_equal(ust_partition_of(NULL, 3), 0);
    assert_int_equal(ust_partition_of("order_42", 1), 0);
}

static void test_partition_text(void **state)
{
    (void)state;
    ust_partition p;
    char *err = NULL;
    assert_int_equal(ust_partition_parse("1/2", &p, &err), 0);
    assert_int_equal(p.k, 1);
    assert_int_equal(p.n, 2);
    char buf[32];
    ust_partition_format(&p, buf);
    assert_string_equal(buf, "1/2");
    assert_int_equal(ust_partition_parse("0/1", &p, &err), 0);
    assert_int_equal(ust_partition_parse("65535/65536", &p, &err), 0);
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"2/2", "K counts from 0, so it is below N: 0/2 to 1/2"},
        {"1/0", "N is the number of partitions, from 1 to 65536"},
        {"0/65537", "from 1 to 65536"},
        {"1", "expected K/N"},
        {"1/2/3", "expected K/N"},
        {"-1/2", "expected K/N"},
        {"+1/2", "expected K/N"},
        {" 1/2", "expected K/N"},
        {"1/", "expected K/N"},
        {"/2", "expected K/N"},
        {"4294967297/2", "expected K/N"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        assert_int_equal(ust_partition_parse(bad[i].text, &p, &err), UST_EINVAL);
        if (strstr(err, bad[i].says) == NULL)
            fail_msg("%s: %s", bad[i].text, err);
        ust_free(err), err = NULL;
    }
}

#define ROUTES                                                                         \
    "\"routes\": [{\"path\": \"/p\", \"kind\": \"api\", \"provider\": \"api\"}]"

static ust_config *config_with(const char *partition_by, char **err)
{
    char *text = ust_sprintf("{" ROUTES ", \"partition_by\": %s}", partition_by);
    ust_config *cfg = NULL;
    int rc = ust_config_parse(text, strlen(text), "cfg.json", &cfg, err);
    ust_free(text);
    assert_true(rc == 0 ? cfg != NULL : cfg == NULL);
    return cfg;
}

static void test_partition_by_is_checked(void **state)
{
    (void)state;
    char *err = NULL;
    ust_config *cfg = ust_test_parse_config("{" ROUTES "}", "cfg.json");
    assert_int_equal(cfg->n_partition_by, 2);
    assert_string_equal(cfg->partition_by[0], "intent");
    assert_string_equal(cfg->partition_by[1], "identity");
    ust_config_free(cfg);
    cfg = config_with("\"transaction_id\"", &err);
    assert_int_equal(cfg->n_partition_by, 1);
    assert_string_equal(cfg->partition_by[0], "transaction_id");
    ust_config_free(cfg);
    cfg = config_with("[\"tenant\", \"intent\", \"identity\"]", &err);
    assert_int_equal(cfg->n_partition_by, 3);
    ust_config_free(cfg);
    static const struct {
        const char *value, *says;
    } bad[] = {
        {"\"order_id\"", "cfg.json: partition_by: expected a field of the event, one "
                         "of provider, event_id, identity, event_type, "
                         "transaction_id, target_status, currency, intent, idem_key, "
                         "tenant"},
        {"[\"intent\", \"order\"]", "cfg.json: partition_by[1]: expected a field of "
                                    "the event, one of provider,"},
        {"[]", "cfg.json: partition_by: expected a field name or a non-empty array"},
        {"3", "cfg.json: partition_by: expected a field name or a non-empty array"},
        {"\"amount\"", "expected a field of the event"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        assert_null(config_with(bad[i].value, &err));
        if (strstr(err, bad[i].says) == NULL)
            fail_msg("%s: %s", bad[i].value, err);
        ust_free(err), err = NULL;
    }
}

/* The key is the first field present and not empty; an event with none
 * (an unknown route, an API call with no key and no order) is partition
 * 0's, here of 3, where an empty key would hash to 1. */
static void test_an_event_without_key_is_partition_0s(void **state)
{
    world *w = *state;
    world_request(w, 1, "/nowhere", "{}");
    world_request(w, 2, "/payments", "{\"amount\":100,\"currency\":\"eur\"}");
    world_request(w, 3, "/payments",
                  "{\"order_id\":\"\",\"amount\":100,\"currency\":\"eur\"}");
    world_api(w, 4, "key-9", "tenant-3", "", 100); /* identity, empty intent */
    world_record(w);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_READONLY, &log, &err), 0);
    ust_log_cursor *cur = NULL;
    assert_int_equal(ust_log_cursor_open(log, 0, &cur, &err), 0);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ust_log_cursor_next(cur, &rec, &err), 1);
        ust_event ev;
        assert_int_equal(ust_event_view(w->cfg, &rec, &ev), 1);
        assert_null(ust_event_partition_key(w->cfg, &ev));
        ust_log_record_clear(&rec);
    }
    assert_int_equal(ust_log_cursor_next(cur, &rec, &err), 1);
    ust_event ev;
    assert_int_equal(ust_event_view(w->cfg, &rec, &ev), 1);
    assert_string_equal(ust_event_partition_key(w->cfg, &ev),
                        "/payments:tenant-3:key-9");
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
    ust_replay_stats st;
    free(replay_ok(w, w->cfg, "p0.db", (ust_partition){0, 3}, &st));
    assert_int_equal(st.fed + st.not_fed, 3);
    free(replay_ok(w, w->cfg, "p1.db", (ust_partition){1, 3}, &st));
    /* "/payments:tenant-3:key-9" is partition 1 of 3 (test above). */
    assert_int_equal(st.fed + st.not_fed, 1);
    assert_int_equal(st.outside, 3);
    char rp[PATH_MAX];
    run_path(w, "p0.db", rp);
    int n[2];
    ust_test_sql_row(rp, "SELECT min(seq), max(seq) FROM decisions", n, 2);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 3);
}

/* The command line: K/N out of range is a usage error saying what to give;
 * a partition's summary counts the events it passed over. */
static void test_the_command_line(void **state)
{
    world *w = *state;
    gen_log(w, w->cfg, 300);
    char cfg[PATH_MAX], lp[PATH_MAX], cp[PATH_MAX], rp[PATH_MAX];
    ust_test_source_path("tests/data/config.json", cfg);
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    run_path(w, "cli.db", rp);
    char *out = NULL;
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "replay --config '%s' --log '%s' --run '%s' "
                                  "--legacy '%s' --candidate '%s' --partition 2/2",
                                  cfg, w->log_path, rp, lp, cp),
                     2);
    assert_non_null(strstr(out, "understudy: --partition 2/2: K counts from 0, so it "
                                "is below N: 0/2 to 1/2\n"));
    assert_int_equal(access(rp, F_OK), -1);
    free(out);
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "replay --config '%s' --log '%s' --run '%s' "
                                  "--legacy '%s' --candidate '%s' --partition 1/2",
                                  cfg, w->log_path, rp, lp, cp),
                     0);
    ust_replay_stats st;
    free(replay_ok(w, w->cfg, "lib.db", (ust_partition){1, 2}, &st));
    char *want =
        ust_sprintf("replayed 300 events after seq 0: %lld decided by both "
                    "plugins, %lld not fed (signature or route), %lld of "
                    "other partitions, ",
                    (long long)st.fed, (long long)st.not_fed, (long long)st.outside);
    if (strstr(out, want) == NULL)
        fail_msg("%s", out);
    ust_free(want);
    free(out);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, world_teardown)
    const struct CMUnitTest tests[] = {
        T(test_the_partition_of_a_key_is_fixed),
        T(test_partition_text),
        T(test_partition_by_is_checked),
        T(test_an_event_without_key_is_partition_0s),
        T(test_resume_as_another_partition_is_refused),
        T(test_the_command_line),
        T(test_identity_alone_splits_an_order),
        T(test_partitions_together_are_the_whole_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
