/* Progress of long work: import, replay, report and gen tell their callback
 * how far they are, ending with the whole; the command line shows it on a
 * terminal, or with --progress, and never with --quiet; what they write is
 * the same either way. */
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/gen.h>
#include <understudy/log.h>
#include <understudy/progress.h>
#include <understudy/report.h>
#include <understudy/runner.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct seen {
    int64_t calls, last_done;
    double last_fraction;
    int backwards; /* done or fraction went down */
} seen;

static void record(void *data, int64_t done, double fraction)
{
    seen *s = data;
    if (s->calls > 0 && (done < s->last_done || fraction < s->last_fraction))
        s->backwards = 1;
    s->calls++;
    s->last_done = done;
    s->last_fraction = fraction;
}

typedef struct pworld {
    char dir[PATH_MAX], sample[PATH_MAX], config[PATH_MAX];
    char legacy[PATH_MAX], candidate[PATH_MAX];
    ust_config *cfg;
} pworld;

static int setup(void **state)
{
    pworld *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    ust_test_source_path("scenarios/sample.jsonl", w->sample);
    ust_test_source_path("scenarios/demo.config.json", w->config);
    ust_test_plugin_path("legacy", w->legacy);
    ust_test_plugin_path("candidate", w->candidate);
    ust_test_set_secrets("whsec_demo_stripe_secret_for_understudy");
    w->cfg = ust_test_load_config(w->config);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    pworld *w = *state;
    ust_config_free(w->cfg);
    ust_test_rmdir(w->dir);
    free(w);
    return 0;
}

static void import_sample(pworld *w, const char *log_path, seen *s)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(log_path, UST_LOG_CREATE, &log, &err), 0);
    FILE *in = fopen(w->sample, "rb");
    assert_non_null(in);
    ust_progress p = {record, s};
    int64_t n = 0;
    if (ust_log_import_progress(log, w->cfg, in, "sample.jsonl", &p, &n, &err) != 0)
        fail_msg("%s", err);
    assert_int_equal(n, 17);
    fclose(in);
    ust_log_close(log);
}

/* Import counts events; its share is the bytes read of the file's size. */
static void test_import_tells_its_progress(void **state)
{
    pworld *w = *state;
    char log_path[PATH_MAX + 16];
    snprintf(log_path, sizeof(log_path), "%s/events.db", w->dir);
    seen s = {0};
    import_sample(w, log_path, &s);
    assert_true(s.calls >= 1);
    assert_int_equal(s.last_done, 17);
    assert_true(s.last_fraction == 1.0);
    assert_false(s.backwards);

    /* From a pipe the whole is not known: no share, the count still. */
    char *cmd = ust_sprintf("cat '%s'", w->sample);
    FILE *in = popen(cmd, "r");
    ust_free(cmd);
    snprintf(log_path, sizeof(log_path), "%s/piped.db", w->dir);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(log_path, UST_LOG_CREATE, &log, &err), 0);
    seen t = {0};
    ust_progress p = {record, &t};
    assert_int_equal(ust_log_import_progress(log, w->cfg, in, "-", &p, NULL, &err), 0);
    pclose(in);
    ust_log_close(log);
    assert_int_equal(t.last_done, 17);
    assert_true(t.last_fraction < 0);
}

/* Replay counts events up to the log's head; report counts divergences. */
static void test_replay_and_report_tell_their_progress(void **state)
{
    pworld *w = *state;
    char log_path[PATH_MAX + 16], run_path[PATH_MAX + 16], out[PATH_MAX + 16];
    snprintf(log_path, sizeof(log_path), "%s/events.db", w->dir);
    snprintf(run_path, sizeof(run_path), "%s/run.db", w->dir);
    snprintf(out, sizeof(out), "%s/report", w->dir);
    seen s = {0};
    import_sample(w, log_path, &s);
    ust_replay_opts o = {.cfg = w->cfg,
                         .log_path = log_path,
                         .run_path = run_path,
                         .legacy_path = w->legacy,
                         .candidate_path = w->candidate};
    seen r = {0};
    o.progress = (ust_progress){record, &r};
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("%s", err);
    assert_int_equal(r.last_done, 17);
    assert_true(r.last_fraction == 1.0);
    assert_false(r.backwards);
    assert_true(st.divergences > 0);

    seen d = {0};
    ust_report_opts ro = {.run_path = run_path, .out_dir = out};
    ro.progress = (ust_progress){record, &d};
    if (ust_report_write(&ro, &err) != 0)
        fail_msg("%s", err);
    assert_int_equal(d.last_done, st.divergences);
    assert_true(d.last_fraction == 1.0);
    assert_false(d.backwards);
}

static void test_gen_tells_its_progress(void **state)
{
    pworld *w = *state;
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/gen.jsonl", w->dir);
    ust_gen_opts o;
    memset(&o, 0, sizeof(o));
    ust_gen_default_mix(o.mix);
    o.cfg = w->cfg;
    o.seed = 3;
    o.events = 500;
    o.span_us = 86400LL * 1000000;
    o.start_us = 1795392000000000LL;
    o.out = fopen(out, "wb");
    seen g = {0};
    o.progress = (ust_progress){record, &g};
    int64_t n = 0;
    char *err = NULL;
    assert_int_equal(ust_gen(&o, &n, &err), 0);
    fclose(o.out);
    assert_int_equal(n, 500);
    assert_int_equal(g.last_done, 500);
    assert_true(g.last_fraction == 1.0);
    assert_false(g.backwards);
}

/* Runs the binary with args in the folder sub of the world's (created);
 * stderr into err. The exit status. */
static int run(pworld *w, const char *sub, const char *args, char *err, size_t cap)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/stderr.txt", w->dir);
    char *cmd =
        ust_sprintf("mkdir -p '%s/%s' && cd '%s/%s' && '%s' %s >/dev/null 2>'%s'",
                    w->dir, sub, w->dir, sub, getenv("UST_BIN"), args, path);
    int status = system(cmd);
    ust_free(cmd);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    err[fread(err, 1, cap - 1, f)] = '\0';
    fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The file rel in the world's folder, whole (malloc'd). */
static char *slurp(pworld *w, const char *rel)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", w->dir, rel);
    if (access(path, F_OK) != 0)
        fail_msg("%s: missing", path);
    return ust_test_read_file(path);
}

static void assert_same_file(pworld *w, const char *a, const char *b)
{
    char *x = slurp(w, a), *y = slurp(w, b);
    if (strcmp(x, y) != 0)
        fail_msg("%s and %s differ", a, b);
    free(x);
    free(y);
}

static void expect_said(const char *err, const char *want)
{
    if (strstr(err, want) == NULL)
        fail_msg("wanted \"%s\" on stderr, got: %s", want, err);
}

/* args (freed here) succeed in the folder sub, run plain (mode 0), with
 * --progress (1) or with --quiet (2): --progress says progress; summary, when
 * the command has one, stays but with --quiet; nothing else is said. */
static void expect_mode_says(pworld *w, const char *sub, int mode, char *args,
                             const char *progress, const char *summary)
{
    char err[16384];
    assert_int_equal(run(w, sub, args, err, sizeof(err)), 0);
    ust_free(args);
    if (mode == 1)
        expect_said(err, progress);
    if (summary == NULL ? mode != 1 : mode == 2)
        assert_string_equal(err, "");
    else if (summary != NULL)
        expect_said(err, summary);
}

/* The four commands, each plain, with --progress and with --quiet (stderr
 * is a file here, not a terminal): --progress ends with a line of the
 * count, --quiet says nothing at all, and the outputs are the same bytes. */
static void test_the_commands_show_progress_when_asked(void **state)
{
    pworld *w = *state;
    /* The same file names in a folder per mode: a run names its log. */
    static const char *const modes[] = {"", "--progress", "--quiet"};
    static const char *const subs[] = {"plain", "progress", "quiet"};
    /* Reports say when they were made: one time for all three, so they can
     * be the same bytes. */
    setenv("SOURCE_DATE_EPOCH", "1796000000", 1);
    char err[16384];
    for (int m = 0; m < 3; m++) {
        const char *sub = subs[m];
        expect_mode_says(w, sub, m,
                         ust_sprintf("log import --config '%s' --log events.db %s '%s'",
                                     w->config, modes[m], w->sample),
                         "import: 17 events in ", NULL);
        expect_mode_says(
            w, sub, m,
            ust_sprintf("replay --config '%s' --log events.db --run run.db"
                        " --legacy '%s' --candidate '%s' --divergences div.jsonl %s",
                        w->config, w->legacy, w->candidate, modes[m]),
            "replay: 17 events in ", "replayed 17 events");
        expect_mode_says(w, sub, m,
                         ust_sprintf("report --run run.db --out report %s", modes[m]),
                         "report: 7 divergences in ", NULL);
        expect_mode_says(w, sub, m,
                         ust_sprintf("gen --config '%s' --events 300 --seed 5 --out "
                                     "gen.jsonl --truth truth.jsonl %s",
                                     w->config, modes[m]),
                         "gen: 300 events in ", "generated 300 events");

        /* The log's events, as bytes, to compare. */
        assert_int_equal(run(w, sub, "log export --log events.db --out export.jsonl",
                             err, sizeof(err)),
                         0);
    }
    static const char *const outputs[] = {"export.jsonl",
                                          "div.jsonl",
                                          "report/index.html",
                                          "report/summary.md",
                                          "report/divergences.jsonl",
                                          "gen.jsonl",
                                          "truth.jsonl"};
    for (int m = 1; m < 3; m++)
        for (size_t k = 0; k < UST_ARRAY_SIZE(outputs); k++) {
            char a[64], b[64];
            snprintf(a, sizeof(a), "plain/%s", outputs[k]);
            snprintf(b, sizeof(b), "%s/%s", subs[m], outputs[k]);
            assert_same_file(w, a, b);
        }

    assert_int_equal(run(w, "plain", "gen --progress --quiet", err, sizeof(err)), 2);
    expect_said(err, "--progress and --quiet");
    unsetenv("SOURCE_DATE_EPOCH");
}

/* Everything the binary writes to a terminal (stdout and stderr on a
 * pseudo-terminal), until it exits; its exit status in *status. */
static char *on_a_terminal(pworld *w, const char *args, int *status)
{
    char *cmd = ust_sprintf("cd '%s' && exec '%s' %s", w->dir, getenv("UST_BIN"), args);
    int fd = -1;
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    ust_free(cmd);
    size_t cap = 65536, len = 0;
    char *text = ust_malloc(cap);
    for (;;) {
        ssize_t n = read(fd, text + len, cap - 1 - len);
        if (n <= 0) /* EIO once the child has closed the terminal */
            break;
        len += (size_t)n;
        if (len == cap - 1)
            break;
    }
    text[len] = '\0';
    close(fd);
    assert_int_equal(waitpid(pid, status, 0), pid);
    return text;
}

/* On a terminal progress is on by default, updated in place, and --quiet
 * still silences it. */
static void test_a_terminal_shows_progress_by_default(void **state)
{
    pworld *w = *state;
    int status = 0;
    char *args =
        ust_sprintf("log import --config '%s' --log t.db '%s'", w->config, w->sample);
    char *text = on_a_terminal(w, args, &status);
    ust_free(args);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (strstr(text, "import: 17 events in ") == NULL)
        fail_msg("no progress on a terminal: %s", text);
    ust_free(text);
    args = ust_sprintf("log import --config '%s' --log q.db --quiet '%s'", w->config,
                       w->sample);
    text = on_a_terminal(w, args, &status);
    ust_free(args);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_null(strstr(text, "import: "));
    ust_free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_import_tells_its_progress, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_replay_and_report_tell_their_progress,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_gen_tells_its_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_commands_show_progress_when_asked,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_terminal_shows_progress_by_default,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
