/* Shared helpers for the cmocka suites: temporary directories that are
 * removed afterwards, paths of the source tree and of the built binary and
 * plugins, running the binary, and the plugin host suites' state store. */
#ifndef UST_TEST_SUPPORT_H
#define UST_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* mkdtemp under $TMPDIR (or /tmp); the path is static storage per call site. */
static inline void ust_test_tmpdir(char out[PATH_MAX])
{
    const char *base = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/understudy-test-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(out));
}

static inline void ust_test_rmdir(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A file of the source tree, e.g. "tests/data/config.json". */
static inline void ust_test_source_path(const char *rel, char out[PATH_MAX])
{
    const char *src = getenv("UST_SOURCE_DIR");
    snprintf(out, PATH_MAX, "%s/%s", src ? src : ".", rel);
}

/* A test plugin of this build: tests/plugins/<name>.so. */
static inline void ust_test_fixture_path(const char *name, char out[PATH_MAX])
{
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(out, PATH_MAX, "%s/tests/plugins/%s.so", build ? build : "build", name);
}

/* The reference plugin name ("legacy" or "candidate") of this build. */
static inline void ust_test_plugin_path(const char *name, char out[PATH_MAX])
{
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(out, PATH_MAX, "%s/src/plugins/%s/understudy-%s.so",
             build ? build : "build", name, name);
}

static inline void ust_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* A whole file's text (malloc'd). */
static inline char *ust_test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs the understudy binary with args (shell words), its output (stdout and
 * stderr) going to dir/cli.out; the exit status, the output in *out
 * (malloc'd) unless out is NULL. */
static inline int ust_test_run_cli(const char *dir, const char *args, char **out)
{
    char path[PATH_MAX], cmd[PATH_MAX * 4];
    snprintf(path, sizeof(path), "%s/cli.out", dir);
    snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>&1", getenv("UST_BIN"), args, path);
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    if (out != NULL)
        *out = ust_test_read_file(path);
    return WEXITSTATUS(status);
}

/* ---- dt2: what the event, config and wire suites check the same way ---- */
#include <understudy/config.h>
#include <understudy/event.h>

#include <sqlite3.h>

/* The config parsed from text, name the file its messages say; the test
 * fails if it does not parse. */
static inline ust_config *ust_test_parse_config(const char *text, const char *name)
{
    ust_config *cfg;
    char *err = NULL;
    assert_int_equal(ust_config_parse(text, strlen(text), name, &cfg, &err), 0);
    return cfg;
}
/* The first row sql gives on the database at path, its first n columns as
 * ints in out; the test fails if there is no row. */
static inline void ust_test_sql_row(const char *path, const char *sql, int *out, int n)
{
    sqlite3 *db;
    sqlite3_open(path, &db);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    for (int i = 0; i < n; i++)
        out[i] = sqlite3_column_int(q, i);
    sqlite3_finalize(q);
    sqlite3_close(db);
}
/* What derive gives and the plugin wire carries of an event alike: its id,
 * type, target status, intent and amount are these. */
static inline void ust_test_expect_event(const ust_event *ev, const char *event_id,
                                         const char *event_type,
                                         const char *target_status, const char *intent,
                                         int64_t amount)
{
    assert_string_equal(ev->event_id, event_id);
    assert_string_equal(ev->event_type, event_type);
    assert_string_equal(ev->target_status, target_status);
    assert_string_equal(ev->intent, intent);
    assert_true(ev->has_amount);
    assert_int_equal(ev->amount, amount);
}
/* ---- end of dt2 ---------------------------------------------------------- */

/* ---- Failing the Nth allocation (SQLite's test_malloc) -------------------
 * After ust_test_alloc_fail(n, persist) the next n allocations through the
 * seam (ust_malloc, ust_realloc and jansson's, on any thread) succeed, then
 * one is refused (persist 0) or every later one is (persist 1), until
 * ust_test_alloc_restore(), which returns how many were refused: a run that
 * refused none had all the memory it asked for. The usual loop runs an
 * operation for n = 0, 1, 2, ... until such a run. */
#include <stdatomic.h>
#include <understudy/alloc.h>

typedef struct ust_test__alloc_state {
    atomic_long budget; /* allocations still allowed; -1: not failing */
    atomic_long refused;
    int persist;
} ust_test__alloc_state;

static inline ust_test__alloc_state *ust_test__alloc(void)
{
    static ust_test__alloc_state st = {-1, 0, 0};
    return &st;
}

static inline int ust_test__alloc_refuse(void)
{
    ust_test__alloc_state *st = ust_test__alloc();
    long v = atomic_load(&st->budget);
    while (v >= 0) {
        long next = v > 0 ? v - 1 : (st->persist ? 0 : -1);
        if (atomic_compare_exchange_weak(&st->budget, &v, next)) {
            if (v > 0)
                return 0;
            atomic_fetch_add(&st->refused, 1);
            return 1;
        }
    }
    return 0;
}

static inline void *ust_test__failing_malloc(size_t n)
{
    return ust_test__alloc_refuse() ? NULL : malloc(n);
}

static inline void *ust_test__failing_realloc(void *p, size_t n)
{
    return ust_test__alloc_refuse() ? NULL : realloc(p, n);
}

static inline void ust_test_alloc_fail(long n, int persist)
{
    ust_test__alloc_state *st = ust_test__alloc();
    st->persist = persist;
    atomic_store(&st->refused, 0);
    atomic_store(&st->budget, n);
    assert_int_equal(ust_replace_allocator(ust_test__failing_malloc,
                                           ust_test__failing_realloc, free),
                     0);
}

static inline long ust_test_alloc_restore(void)
{
    ust_test__alloc_state *st = ust_test__alloc();
    atomic_store(&st->budget, -1);
    assert_int_equal(ust_replace_allocator(malloc, realloc, free), 0);
    return atomic_load(&st->refused);
}
/* ---- end of failing the Nth allocation ---------------------------------- */

/* ---- what several suites set up the same way --------------------------- */

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/log.h>

/* The signing secrets the test configs name: Stripe's as given, and the
 * standard-webhooks one every suite shares. */
static inline void ust_test_set_secrets(const char *stripe)
{
    setenv("UNDERSTUDY_STRIPE_SECRET", stripe, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
}

/* The config at path with its secrets; the test fails saying why if not. */
static inline ust_config *ust_test_load_config(const char *path)
{
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(path, &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0)
        fail_msg("config: %s", err);
    return cfg;
}

/* For a suite whose state is a calloc'd struct that begins with its
 * temporary directory (char[PATH_MAX]): removes the one, frees the other. */
static inline int ust_test_tmpdir_teardown(void **state)
{
    ust_test_rmdir(*state);
    free(*state);
    return 0;
}

/* The log file at path verifies, with checked events. */
static inline void ust_test_expect_log_verifies(const char *path, int64_t checked)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(path, UST_LOG_READONLY, &log, &err), 0);
    ust_log_verify_result res;
    assert_int_equal(ust_log_verify(log, &res, &err), 0);
    assert_int_equal(res.checked, checked);
    ust_log_close(log);
}

/* The scenario rendered from start_us, appended to log. */
static inline void ust_test_append_scenario(ust_log *log, const ust_config *cfg,
                                            const ust_scenario *sc, int64_t start_us)
{
    ust_request *reqs = NULL;
    size_t n = 0;
    char *err = NULL;
    assert_int_equal(ust_scenario_render(sc, start_us, &reqs, &n, &err), 0);
    assert_int_equal(ust_log_append_requests(log, cfg, reqs, n, NULL, NULL, &err), 0);
    for (size_t i = 0; i < n; i++)
        ust_request_clear(&reqs[i]);
    ust_free(reqs);
}

/* The log at log_path replayed under cfg through the reference legacy and
 * candidate plugins into the run at run_path; a failure fails the test. */
#include <understudy/runner.h>

static inline void ust_test_replay_reference(const ust_config *cfg,
                                             const char *log_path, const char *run_path)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = {.cfg = cfg,
                         .log_path = log_path,
                         .run_path = run_path,
                         .legacy_path = lp,
                         .candidate_path = cp};
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
}

/* n generated events (seed, 2 days from 2026-11-23, the default mix) under
 * cfg written to out, and their truth to truth (NULL: none). */
#include <understudy/codec.h>
#include <understudy/gen.h>

static inline void ust_test_generate(const ust_config *cfg, uint64_t seed, int64_t n,
                                     const char *out, const char *truth)
{
    ust_gen_opts o;
    memset(&o, 0, sizeof(o));
    o.cfg = cfg;
    o.seed = seed;
    o.events = n;
    o.span_us = 2LL * 86400 * 1000000;
    ust_time_parse("2026-11-23T00:00:00Z", &o.start_us);
    ust_gen_default_mix(o.mix);
    o.out = fopen(out, "wb");
    o.truth = truth ? fopen(truth, "wb") : NULL;
    int64_t written = 0;
    char *err = NULL;
    if (ust_gen(&o, &written, &err) != 0)
        fail_msg("gen: %s", err);
    assert_int_equal(written, n);
    fclose(o.out);
    if (o.truth)
        fclose(o.truth);
}

/* The generated events in file imported, as gen.jsonl, under cfg into a
 * new log at log_path. */
static inline void ust_test_import_generated(const ust_config *cfg, const char *file,
                                             const char *log_path)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(log_path, UST_LOG_CREATE, &log, &err), 0);
    FILE *in = fopen(file, "rb");
    if (ust_log_import(log, cfg, in, "gen.jsonl", NULL, &err) != 0)
        fail_msg("import: %s", err);
    fclose(in);
    ust_log_close(log);
}

/* text (NULL: none) holds want, or the test fails naming it and showing the
 * start of text. */
static inline void ust_test_expect_in(const char *text, const char *want)
{
    if (text == NULL || strstr(text, want) == NULL)
        fail_msg("missing: %s\nin:\n%.2000s", want, text ? text : "(none)");
}

/* text holds no bad. */
static inline void ust_test_expect_not_in(const char *text, const char *bad)
{
    if (strstr(text, bad) != NULL)
        fail_msg("must not contain: %s", bad);
}

/* got (malloc'd, freed here) is want, or the test fails showing both. */
static inline void ust_test_expect_str(char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("got  \"%s\"\nwant \"%s\"", got, want);
    ust_free(got);
}

/* For the plugin host's suites (define UST_TEST_STORE before including this
 * file): the state store on an in-memory database, opened before each test
 * by store_setup and closed after it by store_teardown. */
#ifdef UST_TEST_STORE
#include <understudy/host.h>
#include <understudy/runner.h>

#include <sqlite3.h>

static sqlite3 *db;
static ust_store *store;

static int store_setup(void **state)
{
    (void)state;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    char *err = NULL;
    assert_int_equal(ust_store_open(db, &store, &err), 0);
    return 0;
}

static int store_teardown(void **state)
{
    (void)state;
    ust_store_close(store);
    sqlite3_close(db);
    return 0;
}

/* Decides an event that has only its seq (no fields, no request): what a
 * test of the protocol around a plugin needs, whatever it decides. */
static inline void ust_test_decide_seq(ust_plugin *p, int64_t seq, ust_decision *d)
{
    ust_event ev;
    memset(&ev, 0, sizeof(ev));
    ust_request req;
    memset(&req, 0, sizeof(req));
    ev.seq = seq;
    ust_plugin_decide(p, &ev, &req, d);
}
#endif

/* ---- dt1: a child whose output the test reads, a formatted command --- */
#include <understudy/alloc.h>

#include <unistd.h>

/* Forks; in the child (0 returned) fd (1 or 2) is the write end of a new
 * pipe, in the parent (the pid returned) *read_fd is its read end. */
static inline pid_t ust_test_fork_piped(int fd, int *read_fd)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], fd);
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    close(fds[1]);
    *read_fd = fds[0];
    return pid;
}

/* ust_test_run_cli with its arguments formatted as printf does fmt. */
__attribute__((format(printf, 3, 4))) static inline int
ust_test_cli(const char *dir, char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = ust_vsprintf(fmt, ap);
    va_end(ap);
    int rc = ust_test_run_cli(dir, args, out);
    ust_free(args);
    return rc;
}

/* Neither the run database at run (its meta: the plugins' names and
 * versions) nor its report (index.html, summary.md) holds secret, such as
 * a service url's password: the report is made into dir/report. */
static inline void ust_test_report_holds_no(const char *dir, const char *run,
                                            const char *log, const char *secret)
{
    char *meta = NULL;
    sqlite3 *mdb = NULL;
    assert_int_equal(sqlite3_open_v2(run, &mdb, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    static const char sql[] = "SELECT group_concat(key || '=' || value, ' ') FROM meta";
    assert_int_equal(sqlite3_prepare_v2(mdb, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    meta = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(mdb);
    if (strstr(meta, secret) != NULL)
        fail_msg("the run database's meta holds %s: %s", secret, meta);
    free(meta);
    char *out = NULL;
    if (ust_test_cli(dir, &out,
                     "report --run '%s' --log '%s' --out '%s/report' --quiet", run, log,
                     dir) != 0)
        fail_msg("report: %s", out);
    free(out);
    static const char *const pages[] = {"index.html", "summary.md"};
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/report/%s", dir, pages[i]);
        char *text = ust_test_read_file(path);
        if (strstr(text, secret) != NULL)
            fail_msg("the report's %s holds %s", pages[i], secret);
        free(text);
    }
}

#endif
