/* The shared helpers of the cmocka suites (support.h): temporary folders,
 * paths of the source and build trees, running the binary, and what several
 * suites set up or check the same way. */
#define _GNU_SOURCE 1 /* nftw */
#include "support.h"

#include <understudy/array.h>

#include <errno.h>
#include <ftw.h>
#include <unistd.h>

void ust_test_tmpdir(char out[PATH_MAX])
{
    const char *base = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/understudy-test-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(out));
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *at)
{
    (void)sb, (void)flag, (void)at;
    return remove(path);
}

void ust_test_rmdir(const char *dir)
{
    /* In this process, as `rm -rf` would: a unit suite starts none. */
    if (access(dir, F_OK) != 0 && errno == ENOENT)
        return;
    assert_int_equal(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

void ust_test_source_path(const char *rel, char out[PATH_MAX])
{
    const char *src = getenv("UST_SOURCE_DIR");
    snprintf(out, PATH_MAX, "%s/%s", src ? src : ".", rel);
}

void ust_test_fixture_path(const char *name, char out[PATH_MAX])
{
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(out, PATH_MAX, "%s/tests/plugins/%s.so", build ? build : "build", name);
}

void ust_test_plugin_path(const char *name, char out[PATH_MAX])
{
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(out, PATH_MAX, "%s/src/plugins/%s/understudy-%s.so",
             build ? build : "build", name, name);
}

void ust_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

char *ust_test_read_file(const char *path)
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

int ust_test_run_cli(const char *dir, const char *args, char **out)
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

ust_config *ust_test_parse_config(const char *text, const char *name)
{
    ust_config *cfg;
    char *err = NULL;
    assert_int_equal(ust_config_parse(text, strlen(text), name, &cfg, &err), 0);
    return cfg;
}

void ust_test_sql_row(const char *path, const char *sql, int *out, int n)
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

void ust_test_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

void ust_test_expect_event(const ust_event *ev, const char *event_id,
                           const char *event_type, const char *target_status,
                           const char *intent, int64_t amount)
{
    assert_string_equal(ev->event_id, event_id);
    assert_string_equal(ev->event_type, event_type);
    assert_string_equal(ev->target_status, target_status);
    assert_string_equal(ev->intent, intent);
    assert_true(ev->has_amount);
    assert_int_equal(ev->amount, amount);
}

void ust_test_set_secrets(const char *stripe)
{
    setenv("UNDERSTUDY_STRIPE_SECRET", stripe, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
}

ust_config *ust_test_load_config(const char *path)
{
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(path, &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0)
        fail_msg("config: %s", err);
    return cfg;
}

int ust_test_tmpdir_teardown(void **state)
{
    ust_test_rmdir(*state);
    free(*state);
    return 0;
}

void ust_test_expect_log_verifies(const char *path, int64_t checked)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(path, UST_LOG_READONLY, &log, &err), 0);
    ust_log_verify_result res;
    assert_int_equal(ust_log_verify(log, &res, &err), 0);
    assert_int_equal(res.checked, checked);
    ust_log_close(log);
}

void ust_test_append_scenario(ust_log *log, const ust_config *cfg,
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

void ust_test_replay_reference(const ust_config *cfg, const char *log_path,
                               const char *run_path)
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

void ust_test_generate(const ust_config *cfg, uint64_t seed, int64_t n, const char *out,
                       const char *truth)
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

void ust_test_import_generated(const ust_config *cfg, const char *file,
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

void ust_test_expect_in(const char *text, const char *want)
{
    if (text == NULL || strstr(text, want) == NULL)
        fail_msg("missing: %s\nin:\n%.2000s", want, text ? text : "(none)");
}

void ust_test_expect_not_in(const char *text, const char *bad)
{
    if (strstr(text, bad) != NULL)
        fail_msg("must not contain: %s", bad);
}

void ust_test_expect_str(char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("got  \"%s\"\nwant \"%s\"", got, want);
    ust_free(got);
}

pid_t ust_test_fork_piped(int fd, int *read_fd)
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

__attribute__((format(printf, 3, 4))) int ust_test_cli(const char *dir, char **out,
                                                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = ust_vsprintf(fmt, ap);
    va_end(ap);
    int rc = ust_test_run_cli(dir, args, out);
    ust_free(args);
    return rc;
}

void ust_test_report_holds_no(const char *dir, const char *run, const char *log,
                              const char *secret)
{
    sqlite3 *mdb = NULL;
    assert_int_equal(sqlite3_open_v2(run, &mdb, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    static const char sql[] = "SELECT group_concat(key || '=' || value, ' ') FROM meta";
    assert_int_equal(sqlite3_prepare_v2(mdb, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    char *meta = strdup((const char *)sqlite3_column_text(q, 0));
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
    for (size_t i = 0; i < UST_ARRAY_SIZE(pages); i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/report/%s", dir, pages[i]);
        char *text = ust_test_read_file(path);
        if (strstr(text, secret) != NULL)
            fail_msg("the report's %s holds %s", pages[i], secret);
        free(text);
    }
}
