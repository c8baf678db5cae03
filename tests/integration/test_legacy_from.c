/* replay --legacy-from: the legacy's decisions of an earlier run read back
 * give the divergences, decisions and metadata of a full replay byte for
 * byte, whatever the candidate, its config or the compare rules; the
 * legacy decides nothing (it keeps no state in the new run); an earlier run
 * of another log, legacy, legacy's part of the config or partition, or one
 * that did not decide the whole log, is refused with both values; a killed
 * --legacy-from replay resumes to the same result, and only with
 * --legacy-from again. */
#define _GNU_SOURCE 1 /* F_SETPIPE_SZ */
#include "replay_world.h"
#include "runner/decision_row.h"

#include <understudy/array.h>
#include <understudy/hash.h>
#include <understudy/jsonw.h>

#include <sqlite3.h>

#define GEN_EVENTS 20000

static int setup(void **state)
{
    world *w = world_new();
    /* What is read back is the legacy's part: the candidate in process
     * keeps a 20,000-event log quick under ASan. */
    w->cfg->candidate.isolate = 0;
    *state = w;
    return 0;
}

/* A generated log of n events (seed) at path, under w's config. */
static void gen_log_at(world *w, const char *path, uint64_t seed, int64_t n)
{
    world_gen_log(w, path, w->cfg, seed, n);
}

typedef struct how {
    const char *legacy, *candidate; /* plugin names */
    const char *from;               /* --legacy-from: a run in w's folder, or NULL */
    const ust_config *cfg;          /* NULL: w's */
    ust_partition partition;
    int64_t step_events; /* 0: the whole log */
    const char *log;     /* NULL: w's */
} how;

static void in_dir(const world *w, const char *name, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/%s", w->dir, name);
}

/* Replays into the run database name as h says; divergence lines into
 * *lines (malloc'd) when lines is not NULL. 0, or the refusal's code with
 * *err. */
static int replay_how(world *w, const char *name, const how *h, char **lines,
                      char **err)
{
    char lp[PATH_MAX], cp[PATH_MAX], rp[PATH_MAX], fp[PATH_MAX];
    world_plugin_path(h->legacy ? h->legacy : "legacy", lp);
    world_plugin_path(h->candidate ? h->candidate : "candidate", cp);
    in_dir(w, name, rp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.run_path = rp;
    o.commit_every = 0;
    o.cfg = h->cfg ? h->cfg : w->cfg;
    o.partition = h->partition;
    o.step_events = h->step_events;
    if (h->log != NULL)
        o.log_path = h->log;
    if (h->from != NULL) {
        in_dir(w, h->from, fp);
        o.legacy_from = fp;
    }
    ust_replay_stats st;
    return world_replay_lines(&o, lines, &st, err);
}

static char *replay_ok(world *w, const char *name, const how *h)
{
    char *lines = NULL, *err = NULL;
    if (replay_how(w, name, h, &lines, &err) != 0)
        fail_msg("replay %s: %s", name, err);
    return lines;
}

/* One text value of the run database name ("" when NULL). */
static char *query(world *w, const char *name, const char *sql)
{
    char rp[PATH_MAX];
    in_dir(w, name, rp);
    return world_query_at(rp, sql);
}

/* Everything a run database holds of its results, as text. */
static const char *const results[] = {
    "SELECT group_concat(line, char(10)) FROM (SELECT line FROM divergences ORDER BY"
    " seq)",
    "SELECT group_concat(quote(seq) || quote(entity) || quote(l_entity) || quote(fed) "
    "||"
    " quote(diverged) || quote(l_verdict) || quote(l_status) || quote(l_state_before) "
    "||"
    " quote(l_state) || quote(l_flags) || quote(l_body) || quote(l_headers) ||"
    " quote(l_reason) || quote(l_error) || quote(c_verdict) || quote(c_status) ||"
    " quote(c_state) || quote(c_body) || quote(c_headers) || quote(c_error), char(10))"
    " FROM (SELECT * FROM decisions ORDER BY seq)",
    "SELECT group_concat(key || '=' || value, char(10)) FROM (SELECT * FROM meta"
    " WHERE key NOT IN ('legacy_from') ORDER BY key)",
};

static void expect_same_results(world *w, const char *a, const char *b)
{
    for (size_t i = 0; i < UST_ARRAY_SIZE(results); i++) {
        char *x = query(w, a, results[i]), *y = query(w, b, results[i]);
        if (strcmp(x, y) != 0)
            fail_msg("%s and %s differ in: %s", a, b, results[i]);
        ust_free(x);
        ust_free(y);
    }
}

/* The legacy's state keys in the run database name. */
static int legacy_keys(world *w, const char *name)
{
    char *n = query(w, name,
                    "SELECT count(*) FROM state WHERE key >= 'legacy' || char(31) AND"
                    " key < 'legacy' || char(32)");
    int v = atoi(n);
    ust_free(n);
    return v;
}

static void test_the_results_are_a_full_replays(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, GEN_EVENTS);
    free(replay_ok(w, "earlier.db", &(how){0}));
    assert_true(legacy_keys(w, "earlier.db") > 0);
    /* The reference candidate, and one that answers every event with an
     * error (every event diverges). */
    static const char *const candidates[] = {"candidate", "misbehaving_decide_error"};
    for (size_t i = 0; i < 2; i++) {
        char *full = replay_ok(w, i ? "full1.db" : "full0.db",
                               &(how){.candidate = candidates[i]});
        char *from =
            replay_ok(w, i ? "from1.db" : "from0.db",
                      &(how){.candidate = candidates[i], .from = "earlier.db"});
        assert_true(strlen(full) > 10000);
        assert_string_equal(from, full);
        expect_same_results(w, i ? "full1.db" : "full0.db",
                            i ? "from1.db" : "from0.db");
        /* The legacy decided nothing: it left no state in the run. */
        assert_int_equal(legacy_keys(w, i ? "from1.db" : "from0.db"), 0);
        free(full);
        free(from);
    }
}

/* err holds each of the texts, or the test fails showing it. */
static void expect_refused(int rc, char **err, const char *const *texts, size_t n)
{
    assert_int_equal(rc, UST_EINVAL);
    for (size_t i = 0; i < n; i++)
        if (strstr(*err, texts[i]) == NULL)
            fail_msg("%s\nwithout: %s", *err, texts[i]);
    ust_free(*err);
    *err = NULL;
}

static char *meta(world *w, const char *name, const char *key)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT value FROM meta WHERE key = '%s'", key);
    return query(w, name, sql);
}

static void test_another_log_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "earlier.db", &(how){0}));
    /* The same length, other events: the head's hash differs. */
    char other[PATH_MAX];
    in_dir(w, "other.db", other);
    gen_log_at(w, other, 8, 300);
    char *err = NULL, *had = meta(w, "earlier.db", "log_head_sha256");
    char *have = NULL;
    int64_t seq = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(other, UST_LOG_READONLY, &log, &err), 0);
    assert_int_equal(ust_log_head(log, &seq, hex, &err), 0);
    ust_log_close(log);
    have = hex;
    int rc =
        replay_how(w, "new.db", &(how){.from = "earlier.db", .log = other}, NULL, &err);
    const char *texts[] = {"another log", had, have, "at seq 300"};
    expect_refused(rc, &err, texts, 4);
    char rp[PATH_MAX];
    in_dir(w, "new.db", rp);
    assert_int_equal(access(rp, F_OK), -1); /* the refused run is not left */
    ust_free(had);
    /* A log that grew past what the earlier run decided: refused too. */
    gen_log_at(w, other, 7, 301);
    rc =
        replay_how(w, "new.db", &(how){.from = "earlier.db", .log = other}, NULL, &err);
    const char *grown[] = {"another log", "ends at seq 300", "this one at seq 301"};
    expect_refused(rc, &err, grown, 3);
}

static void test_another_legacy_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "earlier.db", &(how){0}));
    char *had = meta(w, "earlier.db", "legacy_sha256");
    char cp[PATH_MAX], have[UST_SHA256_HEX_LEN + 1];
    world_plugin_path("candidate", cp);
    assert_int_equal(ust_sha256_file_hex(cp, have), 0);
    char *err = NULL;
    int rc = replay_how(
        w, "new.db", &(how){.legacy = "candidate", .from = "earlier.db"}, NULL, &err);
    const char *texts[] = {"another legacy's file", "legacy_sha256", had, have};
    expect_refused(rc, &err, texts, 4);
    ust_free(had);
}

/* tests/data/config.json with one text in it replaced, loaded from w's
 * folder (ust_config_free); the candidate in process, as w's. */
static ust_config *config_with(world *w, const char *text_in, const char *replaced_by)
{
    char src[PATH_MAX], path[PATH_MAX];
    ust_test_source_path("tests/data/config.json", src);
    char *text = ust_test_read_file(src);
    char *at = strstr(text, text_in);
    assert_non_null(at);
    char *changed = ust_sprintf("%.*s%s%s", (int)(at - text), text, replaced_by,
                                at + strlen(text_in));
    assert_non_null(changed);
    in_dir(w, "config.json", path);
    ust_test_write_file(path, changed);
    ust_free(changed);
    free(text);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(path, &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0)
        fail_msg("config: %s", err);
    cfg->candidate.isolate = 0;
    return cfg;
}

/* The inner loop changes the candidate, its config, or what the comparison
 * ignores: none of it is the legacy's, so the earlier run's decisions serve,
 * and the results are a full replay's under the new config. */
static void test_the_candidates_config_or_compare_may_change(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 2000);
    char *earlier = replay_ok(w, "earlier.db", &(how){0});
    static const char *const changes[][2] = {
        {"\"semantic_window_s\": 600", "\"semantic_window_s\": 1"},
        {"\"key_ttl_s\": 86400", "\"key_ttl_s\": 1"},
        {"\"compare\": {\"ignore\": []}",
         "\"compare\": {\"ignore\": [\"\"], \"headers\": [\"Retry-After\"]}"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(changes); i++) {
        ust_config *cfg = config_with(w, changes[i][0], changes[i][1]);
        assert_string_not_equal(cfg->hash, w->cfg->hash);
        assert_string_equal(cfg->legacy_hash, w->cfg->legacy_hash);
        char full_db[32], from_db[32];
        snprintf(full_db, sizeof(full_db), "full%zu.db", i);
        snprintf(from_db, sizeof(from_db), "from%zu.db", i);
        char *full = replay_ok(w, full_db, &(how){.cfg = cfg});
        char *from = replay_ok(w, from_db, &(how){.cfg = cfg, .from = "earlier.db"});
        assert_string_equal(from, full);
        expect_same_results(w, full_db, from_db);
        assert_string_not_equal(full, earlier); /* the change mattered */
        free(full);
        free(from);
        ust_config_free(cfg);
    }
    free(earlier);
}

/* A route (what events are and how they verify) or the legacy's own config
 * changes what the legacy decides: refused, naming both hashes. */
static void test_a_route_or_the_legacys_config_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "earlier.db", &(how){0}));
    static const char *const changes[][2] = {
        {"\"tolerance_s\": 300", "\"tolerance_s\": 301"},
        {"\"config\": {}", "\"config\": {\"op_latency_ms\": 501}"},
    };
    char *had = meta(w, "earlier.db", "legacy_config_sha256");
    assert_string_equal(had, w->cfg->legacy_hash);
    for (size_t i = 0; i < UST_ARRAY_SIZE(changes); i++) {
        ust_config *cfg = config_with(w, changes[i][0], changes[i][1]);
        char *err = NULL;
        int rc = replay_how(w, "new.db", &(how){.cfg = cfg, .from = "earlier.db"}, NULL,
                            &err);
        const char *texts[] = {"another config for the legacy", "legacy_config_sha256",
                               had, cfg->legacy_hash};
        expect_refused(rc, &err, texts, 4);
        ust_config_free(cfg);
    }
    ust_free(had);
}

/* A run made before runs recorded the legacy's config hash: refused, saying
 * to replay it once in full. */
static void test_a_run_without_the_legacys_config_hash_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "old.db", &(how){0}));
    char old[PATH_MAX];
    in_dir(w, "old.db", old);
    ust_test_sql(old, "DELETE FROM meta WHERE key = 'legacy_config_sha256'");
    char *err = NULL;
    int rc = replay_how(w, "new.db", &(how){.from = "old.db"}, NULL, &err);
    const char *texts[] = {"records no legacy_config_sha256", w->cfg->legacy_hash,
                           "replay it once in full with this version"};
    expect_refused(rc, &err, texts, 3);
}

static void test_another_partition_or_an_unfinished_run_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "earlier.db", &(how){0}));
    char *err = NULL;
    int rc = replay_how(w, "new.db", &(how){.from = "earlier.db", .partition = {0, 2}},
                        NULL, &err);
    const char *texts[] = {"another partition", "is none", "is 0/2"};
    expect_refused(rc, &err, texts, 3);
    /* An earlier run that stopped at seq 100 of 300. */
    free(replay_ok(w, "part.db", &(how){.step_events = 100}));
    rc = replay_how(w, "new.db", &(how){.from = "part.db"}, NULL, &err);
    const char *unfinished[] = {"decided seq 1 to 100 of its log's 300",
                                "finish it first"};
    expect_refused(rc, &err, unfinished, 2);
}

/* A run made before the rows kept the legacy's own entity cannot be read
 * back whole: refused as it is, and once resumed (its older rows then have
 * the column, empty). */
static void test_a_run_without_l_entity_is_refused(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "old.db", &(how){0}));
    char old[PATH_MAX];
    in_dir(w, "old.db", old);
    ust_test_sql(old, "ALTER TABLE decisions DROP COLUMN l_entity");
    char *err = NULL;
    int rc = replay_how(w, "new.db", &(how){.from = "old.db"}, NULL, &err);
    const char *texts[] = {"cannot be read back", "l_entity"};
    expect_refused(rc, &err, texts, 2);
    free(replay_ok(w, "old.db", &(how){0})); /* resumed: nothing new to decide */
    rc = replay_how(w, "new.db", &(how){.from = "old.db"}, NULL, &err);
    const char *resumed[] = {"decisions up to seq 300 were written before", "l_entity"};
    expect_refused(rc, &err, resumed, 2);
}

/* A run begun with --legacy-from holds no legacy state: resumed without it,
 * the legacy would decide the rest missing the state of the first part. */
static void test_resumed_only_as_it_began(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    free(replay_ok(w, "earlier.db", &(how){0}));
    free(replay_ok(w, "from.db", &(how){.from = "earlier.db", .step_events = 100}));
    char *err = NULL;
    int rc = replay_how(w, "from.db", &(how){0}, NULL, &err);
    const char *texts[] = {"read the legacy's decisions from", "earlier.db",
                           "resume it with --legacy-from"};
    expect_refused(rc, &err, texts, 3);
    free(replay_ok(w, "own.db", &(how){.step_events = 100}));
    rc = replay_how(w, "own.db", &(how){.from = "earlier.db"}, NULL, &err);
    const char *own[] = {"decided its events itself", "without --legacy-from"};
    expect_refused(rc, &err, own, 2);
    /* Resumed as they began, both come to the earlier run's results. */
    free(replay_ok(w, "from.db", &(how){.from = "earlier.db"}));
    free(replay_ok(w, "own.db", &(how){0}));
    expect_same_results(w, "earlier.db", "from.db");
    expect_same_results(w, "earlier.db", "own.db");
}

/* Kills a --legacy-from replay into name once it blocks writing divergence
 * lines into a full pipe, after a commit and with most of the log to go. */
static void kill_a_replay(world *w, const char *name, const how *h)
{
    char lp[PATH_MAX], cp[PATH_MAX], rp[PATH_MAX], fp[PATH_MAX];
    world_plugin_path("legacy", lp);
    world_plugin_path(h->candidate, cp);
    in_dir(w, name, rp);
    in_dir(w, h->from, fp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.run_path = rp;
    o.legacy_from = fp;
    world_kill_a_replay(&o, 0);
}

static void test_a_killed_replay_resumes_to_the_same_result(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 3000);
    free(replay_ok(w, "earlier.db", &(how){0}));
    how h = {.candidate = "misbehaving_decide_error", .from = "earlier.db"};
    free(replay_ok(w, "full.db", &(how){.candidate = h.candidate}));
    kill_a_replay(w, "from.db", &h);
    char *cursor = query(w, "from.db", "SELECT last_seq FROM cursor");
    int at = atoi(cursor);
    ust_free(cursor);
    if (at <= 0 || at >= 3000)
        fail_msg("the kill should land mid-run, the cursor is at %d", at);
    free(replay_ok(w, "from.db", &h));
    expect_same_results(w, "full.db", "from.db");
}

/* The command line: --legacy-from, and a refusal that says what differs. */
static void test_the_command_line(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    char cfg[PATH_MAX], lp[PATH_MAX], cp[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    ust_test_source_path("tests/data/config.json", cfg);
    world_plugin_path("legacy", lp);
    world_plugin_path("candidate", cp);
    in_dir(w, "a.db", a);
    in_dir(w, "b.db", b);
    const char *cmd = "replay --config '%s' --log '%s' --run '%s' --legacy '%s' "
                      "--candidate '%s' --quiet --legacy-from '%s'";
    char *out = NULL;
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "replay --config '%s' --log '%s' --run '%s' --legacy "
                                  "'%s' --candidate '%s' --quiet",
                                  cfg, w->log_path, a, lp, cp),
                     0);
    free(out);
    assert_int_equal(ust_test_cli(w->dir, &out, cmd, cfg, w->log_path, b, lp, cp, a),
                     0);
    free(out);
    expect_same_results(w, "a.db", "b.db");
    char *want = meta(w, "b.db", "legacy_from");
    assert_string_equal(want, a);
    ust_free(want);
    assert_int_not_equal(
        ust_test_cli(w->dir, &out, cmd, cfg, w->log_path, "c.db", cp, cp, a), 0);
    if (strstr(out, "another legacy's file") == NULL)
        fail_msg("%s", out);
    free(out);
}

/* tests/data/config.json with each of the n pairs' first text replaced by
 * the second, written to name in w's folder. */
static void config_file(world *w, const char *name, const char *const (*pairs)[2],
                        size_t n)
{
    char src[PATH_MAX], path[PATH_MAX];
    ust_test_source_path("tests/data/config.json", src);
    char *text = ust_test_read_file(src);
    for (size_t i = 0; i < n; i++) {
        char *at = strstr(text, pairs[i][0]);
        assert_non_null(at);
        char *changed = ust_sprintf("%.*s%s%s", (int)(at - text), text, pairs[i][1],
                                    at + strlen(pairs[i][0]));
        assert_non_null(changed);
        free(text);
        text = strdup(changed);
        ust_free(changed);
    }
    in_dir(w, name, path);
    ust_test_write_file(path, text);
    free(text);
}

/* Through the binary, the run and the log named by the config: a config
 * that differs from the earlier run's only in where things are (run, log,
 * listen) reads the legacy back, to the full replay's results; one whose
 * legacy block differs is refused. A run that recorded the hash with the
 * places in (as runs did before they were left out) is read too. */
static void test_the_places_are_not_the_legacys_config(void **state)
{
    world *w = *state;
    gen_log_at(w, w->log_path, 7, 300);
    static const char *const first[][2] = {
        {"\"../../var/live-run.db\"", "\"first.db\""},
        {"\"../../var/events.db\"", "\"events.db\""},
    };
    static const char *const second[][2] = {
        {"\"../../var/live-run.db\"", "\"second.db\""},
        {"\"../../var/events.db\"", "\"./events.db\""},
        {"\"127.0.0.1:8080\"", "\"127.0.0.1:9090\""},
    };
    static const char *const other_legacy[][2] = {
        {"\"../../var/live-run.db\"", "\"third.db\""},
        {"\"../../var/events.db\"", "\"events.db\""},
        {"\"config\": {}", "\"config\": {\"op_latency_ms\": 501}"},
    };
    config_file(w, "first.json", first, 2);
    config_file(w, "second.json", second, 3);
    config_file(w, "third.json", other_legacy, 3);
    char lp[PATH_MAX], cp[PATH_MAX];
    world_plugin_path("legacy", lp);
    world_plugin_path("candidate", cp);
    const char *cmd =
        "replay --config '%s/%s' --legacy '%s' --candidate '%s' --quiet%s";
    char *out = NULL;
    assert_int_equal(ust_test_cli(w->dir, &out, cmd, w->dir, "first.json", lp, cp, ""),
                     0);
    free(out);
    char *from = ust_sprintf(" --legacy-from '%s/first.db'", w->dir);
    if (ust_test_cli(w->dir, &out, cmd, w->dir, "second.json", lp, cp, from) != 0)
        fail_msg("%s", out);
    free(out);
    for (size_t i = 0; i < 2; i++) {
        char *x = query(w, "first.db", results[i]),
             *y = query(w, "second.db", results[i]);
        assert_string_equal(x, y);
        ust_free(x);
        ust_free(y);
    }
    assert_int_equal(
        ust_test_cli(w->dir, &out, cmd, w->dir, "third.json", lp, cp, from), 2);
    ust_test_expect_in(out, "first.db: another config for the legacy");
    free(out);

    /* The hash as runs recorded it before: the same config's, places in. */
    char path[PATH_MAX];
    in_dir(w, "first.json", path);
    ust_config *cfg = ust_test_load_config(path);
    char *sql = ust_sprintf("UPDATE meta SET value = '%s' WHERE key = "
                            "'legacy_config_sha256'",
                            cfg->legacy_hash_with_places);
    assert_string_not_equal(cfg->legacy_hash_with_places, cfg->legacy_hash);
    in_dir(w, "first.db", path);
    ust_test_sql(path, sql);
    ust_free(sql);
    ust_config_free(cfg);
    if (ust_test_cli(w->dir, &out,
                     "replay --config '%s/first.json' --run '%s/fourth.db'"
                     " --legacy '%s' --candidate '%s' --quiet%s",
                     w->dir, w->dir, lp, cp, from) != 0)
        fail_msg("%s", out);
    free(out);
    ust_free(from);
}

/* The divergence line's text of d (ust_free). */
static char *decision_line(const ust_decision *d)
{
    ust_jsonw jw = {0};
    ust_decision_write_json(&jw, d);
    assert_int_equal(jw.error, 0);
    return jw.buf;
}

/* A decision stored in a row and read back writes the same divergence
 * line: every field, the headers in the plugin's order (not sorted). */
static void test_a_stored_decision_reads_back_whole(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE t(id INTEGER" UST__DECISION_COLUMN_DEFS() ")",
                     NULL, NULL, NULL),
        SQLITE_OK);
    ust_decision d = {.verdict = UST_VERDICT_DUPLICATE, .http_status = 409};
    d.state_before = ust_strdup("{\"a\":1}");
    d.state_after = ust_strdup("{\"a\":2}");
    d.entity = ust_strdup("order:o1");
    d.flags = ust_calloc(2, sizeof(char *));
    d.flags[d.n_flags++] = ust_strdup("late");
    d.flags[d.n_flags++] = ust_strdup("replayed");
    d.body = ust_strdup("{\"z\":1,\"a\":[true,null]}");
    d.headers = json_object();
    json_object_set_new(d.headers, "x-trace", json_string("t"));
    json_object_set_new(d.headers, "retry-after", json_string("5"));
    d.reason = ust_strdup("seen before");
    d.error = ust_strdup("timeout");
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO t(id, " UST__DECISION_COLUMN_NAMES
                                        ") VALUES(0" UST__DECISION_MARKS ")",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ust__decision_bind(st, 1, &d);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT " UST__DECISION_COLUMN_NAMES " FROM t",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    ust_decision back;
    assert_int_equal(ust__decision_read(st, 0, d.entity, &back), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    char *want = decision_line(&d), *got = decision_line(&back);
    assert_string_equal(got, want);
    ust_free(want);
    ust_free(got);
    ust_decision_clear(&d);
    ust_decision_clear(&back);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, world_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_stored_decision_reads_back_whole),
        T(test_another_log_is_refused),
        T(test_another_legacy_is_refused),
        T(test_the_candidates_config_or_compare_may_change),
        T(test_a_route_or_the_legacys_config_is_refused),
        T(test_a_run_without_the_legacys_config_hash_is_refused),
        T(test_another_partition_or_an_unfinished_run_is_refused),
        T(test_resumed_only_as_it_began),
        T(test_a_run_without_l_entity_is_refused),
        T(test_the_command_line),
        T(test_the_places_are_not_the_legacys_config),
        T(test_a_killed_replay_resumes_to_the_same_result),
        T(test_the_results_are_a_full_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
