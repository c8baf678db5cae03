/* A small world for replay tests: a log in a temporary directory, signed
 * requests built at chosen times, a replay through the real plugins, and
 * queries on the run database. */
#ifndef UST_TEST_REPLAY_WORLD_H
#define UST_TEST_REPLAY_WORLD_H

#include "support.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/gen.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORLD_T0 1795946400LL /* 2026-11-29T10:00:00Z */
#define WORLD_STRIPE_SECRET "whsec_test_stripe"
#define WORLD_STANDARD_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

typedef struct world {
    char dir[PATH_MAX], log_path[PATH_MAX], run_path[PATH_MAX];
    ust_config *cfg;
    ust_request reqs[256];
    size_t n;
} world;

static inline world *world_new(void)
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

static inline void world_free(world *w)
{
    for (size_t i = 0; i < w->n; i++)
        ust_request_clear(&w->reqs[i]);
    ust_config_free(w->cfg);
    ust_test_rmdir(w->dir);
    free(w);
}

/* A fresh world before each test and its end after it, for cmocka. */
static inline int world_setup(void **state)
{
    *state = world_new();
    return 0;
}

static inline int world_teardown(void **state)
{
    world_free(*state);
    return 0;
}

static inline ust_request *world_request(world *w, double t_s, const char *target,
                                         const char *body)
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

/* A Stripe event at t_s seconds after T0, signed at sign_s (usually t_s). */
static inline void world_stripe_signed(world *w, double t_s, double sign_s,
                                       const char *evt, const char *type,
                                       const char *pi, const char *order, long amount)
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

static inline void world_stripe(world *w, double t_s, const char *evt, const char *type,
                                const char *pi, const char *order, long amount)
{
    world_stripe_signed(w, t_s, t_s, evt, type, pi, order, amount);
}

static inline void world_standard(world *w, double t_s, const char *msg,
                                  const char *payment, const char *status,
                                  const char *order, long amount)
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

/* An API request; key is the raw header value (NULL: no header). */
static inline void world_api(world *w, double t_s, const char *key, const char *tenant,
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

/* Appends every request built so far to the log (once). */
static inline void world_record(world *w)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    if (ust_log_append_requests(log, w->cfg, w->reqs, w->n, NULL, NULL, &err) != 0)
        fail_msg("append: %s", err);
    ust_log_close(log);
}

/* A fresh log of every scenario (scenarios/[0-9]*.json, in name order),
 * rendered one after the other UST_SCENARIO_SPACING_US apart from T0; the
 * world's own requests are not used. */
static inline void world_record_scenarios(world *w)
{
    char dir[PATH_MAX], out[PATH_MAX];
    ust_test_source_path("scenarios", dir);
    snprintf(out, sizeof(out), "%s/scenarios.log", w->dir);
    char *cmd = ust_sprintf("ls '%s'/[0-9]*.json > '%s'", dir, out);
    assert_int_equal(system(cmd), 0);
    ust_free(cmd);
    unlink(w->log_path);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    FILE *list = fopen(out, "r");
    char path[PATH_MAX];
    int64_t start = WORLD_T0 * 1000000;
    while (fgets(path, sizeof(path), list) != NULL) {
        path[strcspn(path, "\n")] = '\0';
        ust_scenario *sc = NULL;
        if (ust_scenario_load(path, w->cfg, &sc, &err) != 0)
            fail_msg("%s", err);
        ust_test_append_scenario(log, w->cfg, sc, start);
        ust_scenario_free(sc);
        start += UST_SCENARIO_SPACING_US;
    }
    fclose(list);
    ust_log_close(log);
}

/* Options of a replay of w's log into its run database, committing every 7
 * events (so runs cross many commits); lp and cp must outlive it. */
static inline ust_replay_opts world_opts(world *w, const char *lp, const char *cp,
                                         FILE *divergences)
{
    return (ust_replay_opts){.cfg = w->cfg,
                             .log_path = w->log_path,
                             .run_path = w->run_path,
                             .legacy_path = lp,
                             .candidate_path = cp,
                             .divergences = divergences,
                             .commit_every = 7};
}

/* Runs the replay o describes; a refusal fails the test with its message. */
static inline ust_replay_stats world_run(const ust_replay_opts *o)
{
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    return st;
}

/* A plugin's path: the reference ones by name ("legacy", "candidate"), the
 * others from tests/plugins (e.g. "misbehaving_decide_error", a candidate
 * that errs on every odd seq). */
static inline void world_plugin_path(const char *name, char out[PATH_MAX])
{
    if (strcmp(name, "legacy") == 0 || strcmp(name, "candidate") == 0)
        ust_test_plugin_path(name, out);
    else
        ust_test_fixture_path(name, out);
}

/* Replays into run_path with the plugins named (as world_plugin_path finds
 * them); divergence lines into *lines (malloc'd) when lines is not NULL. */
static inline ust_replay_stats world_replay(world *w, const char *legacy,
                                            const char *candidate, char **lines)
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

/* w's config redacts the n rules, as if its file had listed them under
 * "redact" (the run made with it carries them). */
static inline void world_set_redact(world *w, const char *const *rules, size_t n)
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

/* Runs the replay o describes, its divergence lines into *lines (malloc'd;
 * NULL: dropped). 0, or the refusal's code with *err. */
static inline int world_replay_lines(const ust_replay_opts *o, char **lines,
                                     ust_replay_stats *st, char **err)
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

/* One text value from the run database, "" when NULL; caller frees. */
static inline char *world_query_at(const char *path, const char *sql)
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

static inline char *world_query(world *w, const char *sql)
{
    return world_query_at(w->run_path, sql);
}

/* The last event the run at path has decided (0: none yet). */
static inline int world_cursor_at(const char *path)
{
    char *cursor = world_query_at(path, "SELECT last_seq FROM cursor");
    int at = atoi(cursor);
    ust_free(cursor);
    return at;
}

/* A log of n generated events (seed, 2 days from 2026-11-23) at log_path,
 * derived under cfg. */
static inline void world_gen_log(world *w, const char *log_path, const ust_config *cfg,
                                 uint64_t seed, int64_t n)
{
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/gen.jsonl", w->dir);
    ust_test_generate(cfg, seed, n, out, NULL);
    unlink(log_path);
    ust_test_import_generated(cfg, out, log_path);
}

/* Kills a replay of o (in a child, over and over until killed, its
 * divergence lines into a pipe) at a point decided by how: 0 = while it is
 * blocked writing divergence lines into the full pipe, after a commit and
 * with most of the log still to go; 1 and up = after a short while, which
 * may land inside a transaction. Where _GNU_SOURCE is defined before any
 * include (F_SETPIPE_SZ). */
#ifdef F_SETPIPE_SZ
static inline void world_kill_a_replay(const ust_replay_opts *opts, int how)
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
#endif

/* Runs sql on the database at path (to break it on purpose, or fix it). */
static inline void world_exec_at(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* Runs sql on the run database. */
static inline void world_exec(world *w, const char *sql)
{
    world_exec_at(w->run_path, sql);
}

/* "applied,duplicate,..." of one side over every event, in seq order. */
static inline char *world_verdicts(world *w, const char *side)
{
    char *sql =
        ust_sprintf("SELECT group_concat(coalesce(%c_verdict, 'not_fed:' ||"
                    " signature), ',') FROM (SELECT * FROM decisions ORDER BY seq)",
                    side[0]);
    char *v = world_query(w, sql);
    ust_free(sql);
    return v;
}

/* "seq|class|fields|follow_on" of every divergence, ';'-separated. */
static inline char *world_divergences(world *w)
{
    return world_query(
        w, "SELECT group_concat(seq || '|' || class || '|' || fields || '|'"
           " || follow_on, ';') FROM (SELECT * FROM divergences ORDER BY seq)");
}

/* w's divergences (as world_divergences gives them) are want and the
 * candidate erred nowhere: another way of running it decided alike. */
static inline void world_expect_same_run_without_errors(world *w, const char *want)
{
    char *got = world_divergences(w);
    assert_string_equal(got, want);
    ust_free(got);
    char *errors =
        world_query(w, "SELECT count(*) FROM decisions WHERE c_verdict = 'error'");
    assert_string_equal(errors, "0");
    ust_free(errors);
}

#endif
