/* Memory in proportion to the input, through the real binary: `log import`,
 * `log export` and `report` on an event whose body is 48 MiB, and `report`
 * on an event of 500,000 headers, each run as a child whose peak resident
 * size (wait4's ru_maxrss) must stay within a few times the value's size
 * plus a fixed base. Before the values were streamed these took 5.6, 5.3
 * and 10 times the body, and 1,000 bytes a header. The inputs are generated
 * here, a piece at a time (this process stays small: a child's peak counts
 * its parent's size at the fork), and removed after. */
#include "sanitized.h"
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/log.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BODY_MIB 48
#define N_HEADERS 500000
/* What the binary takes with nothing large to hold (its libraries, SQLite's
 * cache, a report's pages), with room. */
#define BASE_KIB (48 * 1024)

/* Under ASan a 48 MiB body takes minutes, and its size means nothing
 * (sanitized.h). */
typedef struct world {
    char dir[PATH_MAX], config[PATH_MAX], jsonl[PATH_MAX], log[PATH_MAX];
} world;

/* A config of the one unsigned route, whose body limit lets the body in. */
static void write_config(world *w)
{
    char legacy[PATH_MAX], candidate[PATH_MAX];
    ust_test_plugin_path("legacy", legacy);
    ust_test_plugin_path("candidate", candidate);
    snprintf(w->config, sizeof(w->config), "%s/config.json", w->dir);
    char *text = ust_sprintf(
        "{\"log\": \"events.db\", \"run\": \"run.db\","
        " \"limits\": {\"max_body_bytes\": %d},"
        " \"routes\": [{\"path\": \"/payments\", \"kind\": \"api\", \"provider\": "
        "\"api\","
        " \"idempotency\": {\"header\": \"Idempotency-Key\","
        " \"tenant_header\": \"X-Tenant-Id\"},"
        " \"fields\": {\"amount\": \"/amount\", \"currency\": \"/currency\","
        " \"intent\": \"/order_id\"}}],"
        " \"plugins\": {\"legacy\": {\"path\": \"%s\"}, \"candidate\": {\"path\": "
        "\"%s\"}}}",
        4 * BODY_MIB << 20, legacy, candidate);
    ust_test_write_file(w->config, text);
    ust_free(text);
}

/* One interchange line: a payment without an idempotency key (the two
 * reference plugins diverge on it, so the report shows it in full) whose
 * JSON body pads its order with BODY_MIB MiB. */
static void write_line(world *w)
{
    snprintf(w->jsonl, sizeof(w->jsonl), "%s/big.jsonl", w->dir);
    FILE *f = fopen(w->jsonl, "wb");
    assert_non_null(f);
    fputs(
        "{\"v\":1,\"received_at\":\"2026-11-29T10:00:00Z\",\"remote\":\"203.0.113.7:"
        "443\","
        "\"method\":\"POST\",\"target\":\"/payments\",\"headers\":[[\"Content-Type\","
        "\"application/json\"],[\"X-Tenant-Id\",\"t1\"]],\"body\":\"{\\\"order_id\\\":"
        "\\\"o_big\\\",\\\"amount\\\":500,\\\"currency\\\":\\\"eur\\\",\\\"pad\\\":"
        "\\\"",
        f);
    static char pad[1 << 16];
    memset(pad, 'x', sizeof(pad));
    for (size_t i = 0; i < ((size_t)BODY_MIB << 20) / sizeof(pad); i++)
        assert_int_equal(fwrite(pad, 1, sizeof(pad), f), sizeof(pad));
    fputs("\\\"}\"}\n", f);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
#ifdef UST_TEST_SANITIZED
    *state = NULL;
    return 0;
#endif
    world *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    snprintf(w->log, sizeof(w->log), "%s/events.db", w->dir);
    write_config(w);
    write_line(w);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    if (w == NULL)
        return 0;
    ust_test_rmdir(w->dir);
    free(w);
    return 0;
}

/* Runs the binary with args (shell words, formatted) in a child of its own,
 * its output to dir/cli.out; the exit status must be 0. Its peak resident
 * size in KiB. */
__attribute__((format(printf, 2, 3))) static long peak_kib(const world *w,
                                                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = ust_vsprintf(fmt, ap);
    va_end(ap);
    char *cmd =
        ust_sprintf("exec '%s' %s >'%s/cli.out' 2>&1", getenv("UST_BIN"), args, w->dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/cli.out", w->dir);
        char *out = ust_test_read_file(path);
        fail_msg("understudy %s: status %d: %s", args, status, out);
    }
    print_message("understudy %s: peak %ld KiB\n", args, ru.ru_maxrss);
    ust_free(args);
    ust_free(cmd);
    return ru.ru_maxrss;
}

/* The peak is within `times` the value's size plus the base. */
static void expect_within(long kib, double times, long value_kib)
{
    long bound = (long)(times * (double)value_kib) + BASE_KIB;
    if (kib > bound)
        fail_msg("peak %ld KiB, over %ld KiB (%.1f times the value's %ld KiB and"
                 " a base of %d KiB)",
                 kib, bound, times, value_kib, BASE_KIB);
}

static void import_once(world *w)
{
    if (access(w->log, F_OK) != 0)
        peak_kib(w, "log import --quiet --config '%s' --log '%s' '%s'", w->config,
                 w->log, w->jsonl);
}

static void test_import_holds_a_large_line_a_few_times(void **state)
{
    world *w = *state;
    if (w == NULL)
        skip();
    unlink(w->log);
    long kib = peak_kib(w, "log import --quiet --config '%s' --log '%s' '%s'",
                        w->config, w->log, w->jsonl);
    expect_within(kib, 3.5, BODY_MIB * 1024);
}

static void test_export_writes_a_large_body_as_it_reads_it(void **state)
{
    world *w = *state;
    if (w == NULL)
        skip();
    import_once(w);
    long kib =
        peak_kib(w, "log export --log '%s' --out '%s/out.jsonl'", w->log, w->dir);
    expect_within(kib, 3, BODY_MIB * 1024);
    /* What it wrote imports as the same line (export's bytes are
     * test_import's and test_log's to check). */
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof(cmd), "test $(wc -l <'%s/out.jsonl') -eq 1", w->dir);
    assert_int_equal(system(cmd), 0);
}

static void test_report_shows_a_large_body_in_proportion(void **state)
{
    world *w = *state;
    if (w == NULL)
        skip();
    import_once(w);
    peak_kib(w, "replay --config '%s' --log '%s' --run '%s/run.db'", w->config, w->log,
             w->dir);
    long kib = peak_kib(w, "report --run '%s/run.db' --log '%s' --out '%s/report'",
                        w->dir, w->log, w->dir);
    expect_within(kib, 5, BODY_MIB * 1024);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof(cmd), "grep -q 'body as JSON' '%s/report/index.html'", w->dir);
    assert_int_equal(system(cmd), 0);
}

/* The payment with N_HEADERS headers more, appended in a child (this
 * process stays small); the bytes of its headers. */
static long append_many_headers(const world *w, const char *log_path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *err = NULL;
        ust_config *cfg = NULL;
        ust_log *log = NULL;
        ust_request r;
        memset(&r, 0, sizeof(r));
        r.received_at_us = 1795946400LL * 1000000;
        r.remote = ust_strdup("203.0.113.7:443");
        r.method = ust_strdup("POST");
        r.target = ust_strdup("/payments");
        r.body = (unsigned char *)ust_strdup(
            "{\"order_id\":\"o_hdr\",\"amount\":500,\"currency\":\"eur\"}");
        r.body_len = strlen((char *)r.body);
        int rc = ust_request_add_header(&r, "X-Tenant-Id", "t1");
        for (size_t i = 1; rc == 0 && i <= N_HEADERS; i++) {
            char name[16], value[16];
            snprintf(name, sizeof(name), "X-H%07zu", i);
            snprintf(value, sizeof(value), "v%07zu", i);
            rc = ust_request_add_header(&r, name, value);
        }
        rc = rc != 0 || ust_config_load(w->config, &cfg, &err) != 0 ||
             ust_log_open(log_path, UST_LOG_CREATE, &log, &err) != 0 ||
             ust_log_append_requests(log, cfg, &r, 1, NULL, NULL, &err) != 0;
        if (rc != 0)
            fprintf(stderr, "append: %s\n", err ? err : "?");
        ust_log_close(log);
        _exit(rc);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return (long)N_HEADERS * (long)(strlen("X-H0000001") + strlen("v0000001"));
}

static void test_report_of_many_headers_costs_a_few_hundred_bytes_each(void **state)
{
    world *w = *state;
    if (w == NULL)
        skip();
    char log_path[PATH_MAX + 16];
    snprintf(log_path, sizeof(log_path), "%s/headers.db", w->dir);
    long bytes = append_many_headers(w, log_path);
    peak_kib(w, "replay --config '%s' --log '%s' --run '%s/hrun.db'", w->config,
             log_path, w->dir);
    long kib = peak_kib(w, "report --run '%s/hrun.db' --log '%s' --out '%s/hreport'",
                        w->dir, log_path, w->dir);
    /* A header is two strings and a pointer to each in the log's record,
     * and again in the page's model: about 100 bytes of bookkeeping for its
     * 18 here, so the bound is per header, not a multiple of its bytes. */
    print_message("%d headers, %ld bytes of them: %ld bytes a header at the peak\n",
                  N_HEADERS, bytes, kib * 1024 / N_HEADERS);
    if (kib > (long)N_HEADERS * 400 / 1024 + BASE_KIB)
        fail_msg("peak %ld KiB for %d headers: over 400 bytes a header and a base of"
                 " %d KiB",
                 kib, N_HEADERS, BASE_KIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_holds_a_large_line_a_few_times),
        cmocka_unit_test(test_export_writes_a_large_body_as_it_reads_it),
        cmocka_unit_test(test_report_shows_a_large_body_in_proportion),
        cmocka_unit_test(test_report_of_many_headers_costs_a_few_hundred_bytes_each),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
