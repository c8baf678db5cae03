/* The replay tests' world (replay_world.h). */
#define _GNU_SOURCE 1 /* F_SETPIPE_SZ */
#include "replay_world.h"

#include <understudy/array.h>

#include <glob.h>

world *world_new(void)
{
    world *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    snprintf(w->log_path, sizeof(w->log_path), "%s/events.db", w->dir);
    snprintf(w->run_path, sizeof(w->run_path), "%s/run.db", w->dir);
    setenv("UNDERSTUDY_STRIPE_SECRET", WORLD_STRIPE_SECRET, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", WORLD_STANDARD_SECRET, 1);
    char cfg_path[PATH_MAX];
    ust_test_source_path("tests/data/config.json", cfg_path);
    char *err = NULL;
    if (ust_config_load(cfg_path, &w->cfg, &err) != 0 ||
        ust_config_load_secrets(w->cfg, &err) != 0)
        fail_msg("config: %s", err);
    return w;
}

void world_free(world *w)
{
    for (size_t i = 0; i < w->n; i++)
        ust_request_clear(&w->reqs[i]);
    ust_config_free(w->cfg);
    ust_test_rmdir(w->dir);
    free(w);
}

int world_setup(void **state)
{
    world *w = world_new();
    w->row = *state;
    *state = w;
    return 0;
}

int world_teardown(void **state)
{
    world_free(*state);
    return 0;
}

ust_request *world_request(world *w, double t_s, const char *target, const char *body)
{
    assert_true(w->n < UST_ARRAY_SIZE(w->reqs));
    ust_request *r = &w->reqs[w->n++];
    memset(r, 0, sizeof(*r));
    r->received_at_us = (int64_t)((double)WORLD_T0 * 1e6 + t_s * 1e6);
    r->remote = ust_strdup("203.0.113.7:443");
    r->method = ust_strdup("POST");
    r->target = ust_strdup(target);
    r->body = (unsigned char *)ust_strdup(body);
    r->body_len = strlen(body);
    assert_int_equal(ust_request_add_header(r, "Content-Type", "application/json"), 0);
    return r;
}

void world_stripe_signed(world *w, double t_s, double sign_s, const char *evt,
                         const char *type, const char *pi, const char *order,
                         long amount)
{
    char *body =
        ust_sprintf("{\"id\":\"%s\",\"type\":\"%s\",\"created\":%lld,\"data\":{"
                    "\"object\":{\"id\":\"%s\",\"amount\":%ld,\"currency\":\"eur\","
                    "\"metadata\":{\"order_id\":\"%s\"}}}}",
                    evt, type, WORLD_T0 + (long long)t_s, pi, amount, order);
    ust_request *r = world_request(w, t_s, "/webhooks/stripe", body);
    ust_free(body);
    ust_sig_params p = {UST_SCHEME_STRIPE, WORLD_STRIPE_SECRET, NULL, 300};
    assert_int_equal(ust_sig_sign(&p, WORLD_T0 + (int64_t)sign_s, NULL, r), 0);
}

void world_stripe(world *w, double t_s, const char *evt, const char *type,
                  const char *pi, const char *order, long amount)
{
    world_stripe_signed(w, t_s, t_s, evt, type, pi, order, amount);
}

void world_standard(world *w, double t_s, const char *msg, const char *payment,
                    const char *status, const char *order, long amount)
{
    char *body = ust_sprintf("{\"type\":\"payment.%s\",\"data\":{\"payment_id\":\"%s\","
                             "\"status\":\"%s\",\"amount\":%ld,\"currency\":\"usd\","
                             "\"order_id\":\"%s\"}}",
                             status, payment, status, amount, order);
    ust_request *r = world_request(w, t_s, "/webhooks/standard", body);
    ust_free(body);
    ust_sig_params p = {UST_SCHEME_STANDARD_WEBHOOKS, WORLD_STANDARD_SECRET, NULL, 300};
    assert_int_equal(ust_sig_sign(&p, WORLD_T0 + (int64_t)t_s, msg, r), 0);
}

void world_api(world *w, double t_s, const char *key, const char *tenant,
               const char *order, long amount)
{
    char *body = ust_sprintf(
        "{\"order_id\":\"%s\",\"amount\":%ld,\"currency\":\"eur\"}", order, amount);
    ust_request *r = world_request(w, t_s, "/payments", body);
    ust_free(body);
    if (tenant)
        assert_int_equal(ust_request_add_header(r, "X-Tenant-Id", tenant), 0);
    if (key)
        assert_int_equal(ust_request_add_header(r, "Idempotency-Key", key), 0);
}

void world_scenario_5(world *w)
{
    world_stripe(w, 0, "evt_1", "payment_intent.succeeded", "pi_1", "o1", 4200);
    world_stripe(w, 600, "evt_2", "charge.refunded", "pi_1", "o1", 4200);
    world_stripe(w, 3600, "evt_3", "payment_intent.succeeded", "pi_1", "o1", 4200);
}

void world_double_click(world *w)
{
    world_stripe(w, 7200, "evt_9", "payment_intent.succeeded", "pi_3", "o3", 1500);
    world_stripe(w, 7203, "evt_10", "payment_intent.succeeded", "pi_4", "o3", 1500);
}

void world_record(world *w)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    if (ust_log_append_requests(log, w->cfg, w->reqs, w->n, NULL, NULL, &err) != 0)
        fail_msg("append: %s", err);
    ust_log_close(log);
}

void world_record_scenarios(world *w)
{
    char pattern[PATH_MAX];
    ust_test_source_path("scenarios/[0-9]*.json", pattern);
    glob_t found; /* in name order, as the files are numbered */
    assert_int_equal(glob(pattern, 0, NULL, &found), 0);
    unlink(w->log_path);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    int64_t start = WORLD_T0 * 1000000;
    for (size_t i = 0; i < found.gl_pathc; i++) {
        ust_scenario *sc = NULL;
        if (ust_scenario_load(found.gl_pathv[i], w->cfg, &sc, &err) != 0)
            fail_msg("%s", err);
        ust_test_append_scenario(log, w->cfg, sc, start);
        ust_scenario_free(sc);
        start += UST_SCENARIO_SPACING_US;
    }
    globfree(&found);
    ust_log_close(log);
}

ust_replay_opts world_opts(world *w, const char *lp, const char *cp, FILE *divergences)
{
    return (ust_replay_opts){.cfg = w->cfg,
                             .log_path = w->log_path,
                             .run_path = w->run_path,
                             .legacy_path = lp,
                             .candidate_path = cp,
                             .divergences = divergences,
                             .commit_every = 7};
}

ust_replay_stats world_run(const ust_replay_opts *o)
{
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    return st;
}

void world_plugin_path(const char *name, char out[PATH_MAX])
{
    if (strcmp(name, "legacy") == 0 || strcmp(name, "candidate") == 0)
        ust_test_plugin_path(name, out);
    else
        ust_test_fixture_path(name, out);
}

ust_replay_stats world_replay(world *w, const char *legacy, const char *candidate,
                              char **lines)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    world_plugin_path(legacy, lp);
    world_plugin_path(candidate, cp);
    size_t size = 0;
    char *buf = NULL;
    FILE *out = lines ? open_memstream(&buf, &size) : NULL;
    ust_replay_opts o = world_opts(w, lp, cp, out);
    ust_replay_stats st = world_run(&o);
    if (out) {
        fclose(out);
        *lines = buf;
    }
    return st;
}

void world_set_redact(world *w, const char *const *rules, size_t n)
{
    json_t *arr = json_array();
    w->cfg->redact = ust_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(arr, json_string(rules[i]));
        w->cfg->redact[i] = ust_strdup(rules[i]);
    }
    json_object_set_new(w->cfg->root, "redact", arr);
    w->cfg->n_redact = n;
}

int world_replay_lines(const ust_replay_opts *o, char **lines, ust_replay_stats *st,
                       char **err)
{
    size_t size = 0;
    char *buf = NULL;
    ust_replay_opts with = *o;
    with.divergences = open_memstream(&buf, &size);
    int rc = ust_replay(&with, st, err);
    fclose(with.divergences);
    if (lines != NULL)
        *lines = buf;
    else
        free(buf);
    return rc;
}

char *world_query_at(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    char *out = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = ust_strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out ? out : ust_strdup("");
}

char *world_query(world *w, const char *sql)
{
    return world_query_at(w->run_path, sql);
}

int world_cursor_at(const char *path)
{
    char *cursor = world_query_at(path, "SELECT last_seq FROM cursor");
    int at = atoi(cursor);
    ust_free(cursor);
    return at;
}

void world_gen_log(world *w, const char *log_path, const ust_config *cfg, uint64_t seed,
                   int64_t n)
{
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/gen.jsonl", w->dir);
    ust_test_generate(cfg, seed, n, out, NULL);
    unlink(log_path);
    ust_test_import_generated(cfg, out, log_path);
}

void world_kill_a_replay(const ust_replay_opts *opts, int how)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fcntl(fds[1], F_SETPIPE_SZ, 4096);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        ust_replay_opts o = *opts;
        o.divergences = fdopen(fds[1], "w");
        ust_replay_stats st;
        for (;;) /* until killed */
            ust_replay(&o, &st, NULL);
    }
    close(fds[1]);
    if (how == 0) {
        char c;
        assert_int_equal(read(fds[0], &c, 1), 1); /* a commit happened; then stall */
        for (int i = 0; i < 200; i++) {
            if (world_cursor_at(opts->run_path) > 0)
                break;
            usleep(10000);
        }
    } else {
        usleep(how * 15000);
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
}

void world_exec(world *w, const char *sql)
{
    ust_test_sql(w->run_path, sql);
}

char *world_verdicts(world *w, const char *side)
{
    char *sql =
        ust_sprintf("SELECT group_concat(coalesce(%c_verdict, 'not_fed:' ||"
                    " signature), ',') FROM (SELECT * FROM decisions ORDER BY seq)",
                    side[0]);
    char *v = world_query(w, sql);
    ust_free(sql);
    return v;
}

char *world_divergences(world *w)
{
    return world_query(
        w, "SELECT group_concat(seq || '|' || class || '|' || fields || '|'"
           " || follow_on, ';') FROM (SELECT * FROM divergences ORDER BY seq)");
}

void world_expect_same_run_without_errors(world *w, const char *want)
{
    char *got = world_divergences(w);
    assert_string_equal(got, want);
    ust_free(got);
    char *errors =
        world_query(w, "SELECT count(*) FROM decisions WHERE c_verdict = 'error'");
    assert_string_equal(errors, "0");
    ust_free(errors);
}
