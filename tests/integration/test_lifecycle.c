/* Starting and stopping, through the real binary: `serve` and `replay`
 * refuse to start (exit 2, before listening) when a plugin cannot start or
 * say its hello; a stop waits a bounded time for the live runner, and the
 * next start decides the rest, each event once. */
#include "replay_world.h"
#include "serve_client.h"

#include <understudy/array.h>
#include <understudy/clock.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct lworld {
    world *w;
    char cfg[PATH_MAX];
} lworld;

static int setup(void **state)
{
    lworld *l = calloc(1, sizeof(*l));
    l->w = world_new();
    snprintf(l->cfg, sizeof(l->cfg), "%s/config.json", l->w->dir);
    *state = l;
    return 0;
}

static int teardown(void **state)
{
    lworld *l = *state;
    world_free(l->w);
    free(l);
    return 0;
}

/* The config file the binary reads: the test config with these plugins (a
 * reference taken). */
static void write_config(lworld *l, json_t *plugins)
{
    server_write_config_with(l->cfg, plugins);
}

/* n API events in the log, in rounds (the world holds 256 requests). */
static void record_events(world *w, int n)
{
    for (int done = 0; done < n;) {
        for (; w->n < 200 && done < n; done++) {
            char key[32], order[32];
            snprintf(key, sizeof(key), "k%d", done);
            snprintf(order, sizeof(order), "o%d", done);
            world_api(w, done, key, "t1", order, 100 + done);
        }
        world_record(w);
        for (size_t i = 0; i < w->n; i++)
            ust_request_clear(&w->reqs[i]);
        w->n = 0;
    }
}

typedef struct proc {
    pid_t pid;
    int err_fd; /* its stderr */
} proc;

/* Starts `understudy CMD ARGS...` (args NULL-terminated). */
static proc spawn(const char *const *args)
{
    int err_fd = -1;
    pid_t pid = ust_test_fork_piped(2, &err_fd);
    if (pid == 0) {
        const char *argv[32] = {getenv("UST_BIN")};
        int n = 1;
        for (int i = 0; args[i] != NULL && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return (proc){pid, err_fd};
}

/* Reads its stderr to the end into *text (malloc'd), waits for it; returns
 * its exit status (128 + signal when killed). */
static int finish(proc p, char **text)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(p.err_fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (cap - len < 1024)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    close(p.err_fd);
    int status = 0;
    waitpid(p.pid, &status, 0);
    if (text != NULL)
        *text = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Fails unless text says each of the words. */
static void says(const char *text, const char *const *words)
{
    for (int i = 0; words[i] != NULL; i++)
        if (strstr(text, words[i]) == NULL)
            fail_msg("the message should say \"%s\": %s", words[i], text);
}

/* A port nothing listens on now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int can_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

/* `serve` with the config's plugins: it must exit 2 without ever accepting
 * a connection on its port (tried until it exits) and say words. */
static void serve_refuses(lworld *l, const char *const *words)
{
    int port = free_port();
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    const char *args[] = {"serve", "--config",     l->cfg,  "--listen",     listen,
                          "--log", l->w->log_path, "--run", l->w->run_path, NULL};
    proc p = spawn(args);
    int accepted = 0;
    for (;;) {
        /* Still starting (or serving, which is the failure): try the port. */
        if (can_connect(port)) {
            accepted = 1;
            kill(p.pid, SIGKILL);
            break;
        }
        siginfo_t info;
        memset(&info, 0, sizeof(info));
        if (waitid(P_PID, (id_t)p.pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == p.pid)
            break; /* it ended: finish reaps it */
        usleep(20 * 1000);
    }
    char *text = NULL;
    int status = finish(p, &text);
    if (accepted)
        fail_msg("serve accepted a connection before its plugins started: %s", text);
    assert_int_equal(status, 2);
    assert_null(strstr(text, "listening on"));
    says(text, words);
    free(text);
}

/* A candidate file that does not exist: named, with the cause. */
static void test_serve_refuses_a_missing_candidate(void **state)
{
    lworld *l = *state;
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate",
                              "path", "/nonexistent/candidate.so"));
    serve_refuses(l, (const char *[]){"plugins.candidate", "/nonexistent/candidate.so",
                                      "cannot read plugin file", NULL});
}

/* A program whose first line is not a hello, after a second's thought (a
 * wide window for a server that listens too early). */
static void test_serve_refuses_a_candidate_without_hello(void **state)
{
    lworld *l = *state;
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    write_config(l,
                 json_pack("{s:{s:s},s:{s:[s,s,s]}}", "legacy", "path", lp, "candidate",
                           "exec", "sh", "-c", "sleep 1; echo this is not a hello"));
    serve_refuses(l, (const char *[]){"plugins.candidate", "sh", "did not say hello",
                                      "this is not a hello", NULL});
}

/* An isolated library whose child exits before its hello. */
static void test_serve_refuses_a_candidate_that_exits_at_start(void **state)
{
    lworld *l = *state;
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_fixture_path("misbehaving_exit_at_start", cp);
    write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate",
                              "path", cp));
    serve_refuses(
        l, (const char *[]){"plugins.candidate", cp, "exited with status 3", NULL});
}

/* The legacy too. */
static void test_serve_refuses_a_missing_legacy(void **state)
{
    lworld *l = *state;
    char cp[PATH_MAX];
    ust_test_plugin_path("candidate", cp);
    write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path",
                              "/nonexistent/legacy.so", "candidate", "path", cp));
    serve_refuses(l,
                  (const char *[]){"plugins.legacy", "/nonexistent/legacy.so", NULL});
}

static int replay_status(lworld *l, char **text)
{
    const char *args[] = {"replay",       "--config", l->cfg,         "--log",
                          l->w->log_path, "--run",    l->w->run_path, NULL};
    return finish(spawn(args), text);
}

/* `replay` refuses too, and leaves no run database behind: a gate or a
 * report finds nothing that looks like a run. */
static void test_replay_refuses_a_candidate_that_cannot_start(void **state)
{
    lworld *l = *state;
    record_events(l->w, 5);
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    const char *cases[][2] = {
        {"misbehaving_create_fails", "refusing to start: no database configured"},
        {"misbehaving_exit_at_start", "exited with status 3"},
        {NULL, "cannot read plugin file"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(cases); i++) {
        if (cases[i][0] != NULL)
            ust_test_fixture_path(cases[i][0], cp);
        else
            snprintf(cp, sizeof(cp), "%s/nonexistent.so", l->w->dir);
        write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp,
                                  "candidate", "path", cp));
        char *text = NULL;
        assert_int_equal(replay_status(l, &text), 2);
        says(text, (const char *[]){"plugins.candidate", cp, cases[i][1], NULL});
        free(text);
        assert_int_equal(access(l->w->run_path, F_OK), -1);
    }
}

/* A run database that holds a run is kept when a later start fails. */
static void test_replay_keeps_an_existing_run_when_a_plugin_fails(void **state)
{
    lworld *l = *state;
    record_events(l->w, 5);
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate",
                              "path", cp));
    assert_int_equal(replay_status(l, NULL), 0);
    write_config(l, json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate",
                              "path", "/nonexistent/candidate.so"));
    assert_int_equal(replay_status(l, NULL), 2);
    char *n = world_query(l->w, "SELECT count(*) FROM decisions");
    assert_string_equal(n, "5");
    ust_free(n);
}

/* The names in dir, sorted, one a line (caller frees). */
static char *listing(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    char *text = NULL;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            assert_int_equal(ust_str_append(&text, &len, name, strlen(name)), 0);
            assert_int_equal(ust_str_append(&text, &len, "\n", 1), 0);
        }
        free(names[i]);
    }
    free(names);
    return text ? text : ust_strdup("");
}

/* Every event of the log at path, seq and hash (its chain covers the rest). */
static char *events_of(const char *path)
{
    return world_query_at(
        path, "SELECT count(*) || ':' || group_concat(seq || '=' || hex(hash),"
              " ',') FROM (SELECT seq, hash FROM events ORDER BY seq)");
}

/* `serve` on log and run (and a divergences file), its candidate `candidate`
 * (an exec argv), --respond respond: it must exit 2 saying why. */
static void serve_fails_to_start(lworld *l, const char *log, const char *run,
                                 const char *div, json_t *candidate,
                                 const char *respond, const char *why)
{
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    write_config(l, json_pack("{s:{s:s},s:{s:o}}", "legacy", "path", lp, "candidate",
                              "exec", candidate));
    const char *args[] = {
        "serve", "--config", l->cfg,      "--listen", "127.0.0.1:0",   "--log", log,
        "--run", run,        "--respond", respond,    "--divergences", div,     NULL};
    char *text = NULL;
    assert_int_equal(finish(spawn(args), &text), 2);
    says(text, (const char *[]){"plugins.candidate", "did not say hello", why, NULL});
    free(text);
}

/* A serve whose candidate cannot start, in an empty folder: it exits 2 with
 * the cause, and the folder is empty again (it left events.db,
 * RUN.answers and two .lock files): nothing of a start that failed stays.
 * A program that does not exist and one that exits at once; --respond ack
 * and legacy (which makes RUN.answers). */
static void test_a_failed_serve_leaves_no_file(void **state)
{
    lworld *l = *state;
    char dir[PATH_MAX], log[PATH_MAX], run[PATH_MAX], div[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/empty", l->w->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(log, sizeof(log), "%s/events.db", dir);
    snprintf(run, sizeof(run), "%s/live-run.db", dir);
    snprintf(div, sizeof(div), "%s/divergences.jsonl", dir);
    const char *responds[] = {"ack", "legacy"};
    for (size_t i = 0; i < 2; i++) {
        serve_fails_to_start(l, log, run, div,
                             json_pack("[s]", "/nonexistent/candidate"), responds[i],
                             "exited with status 127");
        ust_test_expect_str(listing(dir), "");
        serve_fails_to_start(l, log, run, div,
                             json_pack("[s,s,s]", "sh", "-c", "exit 0"), responds[i],
                             "exited with status 0");
        ust_test_expect_str(listing(dir), "");
    }
}

/* With a log (and a divergences file) that were there before, the failed
 * start leaves them: the same files in the folder, the same events, the
 * same lines. */
static void test_a_failed_serve_keeps_what_was_there(void **state)
{
    lworld *l = *state;
    record_events(l->w, 5);
    char div[PATH_MAX], run[PATH_MAX];
    snprintf(div, sizeof(div), "%s/divergences.jsonl", l->w->dir);
    snprintf(run, sizeof(run), "%s/live-run.db", l->w->dir);
    ust_test_write_file(div, "{\"seq\":1}\n");
    write_config(l, json_object()); /* rewritten by the start, there before it */
    char *before = listing(l->w->dir), *events = events_of(l->w->log_path);
    assert_non_null(strstr(events, "5:"));
    serve_fails_to_start(l, l->w->log_path, run, div,
                         json_pack("[s]", "/nonexistent/candidate"), "legacy",
                         "exited with status 127");
    ust_test_expect_str(listing(l->w->dir), before);
    ust_test_expect_str(events_of(l->w->log_path), events);
    ust_test_expect_log_verifies(l->w->log_path, 5);
    ust_test_expect_str(ust_test_read_file(div), "{\"seq\":1}\n");
    free(before);
    ust_free(events);
}

/* replay with a candidate that cannot start: no run database (see above)
 * and no divergences file of its making; one that was there stays. */
static void test_a_failed_replay_leaves_no_divergences_file(void **state)
{
    lworld *l = *state;
    record_events(l->w, 5);
    char lp[PATH_MAX], div[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    snprintf(div, sizeof(div), "%s/divergences.jsonl", l->w->dir);
    write_config(l, json_pack("{s:{s:s},s:{s:[s]}}", "legacy", "path", lp, "candidate",
                              "exec", "/nonexistent/candidate"));
    const char *args[] = {
        "replay", "--config",     l->cfg,          "--log", l->w->log_path,
        "--run",  l->w->run_path, "--divergences", div,     NULL};
    assert_int_equal(finish(spawn(args), NULL), 2);
    assert_int_equal(access(div, F_OK), -1);
    assert_int_equal(access(l->w->run_path, F_OK), -1);
    ust_test_write_file(div, "kept\n");
    assert_int_equal(finish(spawn(args), NULL), 2);
    ust_test_expect_str(ust_test_read_file(div), "kept\n");
}

static int64_t now_ms(void)
{
    return ust_time_mono_us() / 1000;
}

/* Starts serve on the world's log and run; returns once it listens. */
static proc serve_start(lworld *l)
{
    const char *args[] = {"serve",        "--config", l->cfg,         "--listen",
                          "127.0.0.1:0",  "--log",    l->w->log_path, "--run",
                          l->w->run_path, NULL};
    proc p = spawn(args);
    char line[512];
    size_t len = 0;
    while (len < sizeof(line) - 1 && read(p.err_fd, line + len, 1) == 1) {
        if (line[len++] != '\n')
            continue;
        line[len] = '\0';
        if (strstr(line, "listening on") != NULL)
            return p;
        fprintf(stderr, "server: %s", line);
        len = 0;
    }
    fail_msg("serve did not start");
    return p;
}

static int64_t decided(lworld *l)
{
    char *v = world_query(l->w, "SELECT count(*) FROM decisions");
    int64_t n = atoll(v);
    ust_free(v);
    return n;
}

/* The run's decisions are exactly seq 1..n, once each, its cursor at n, and
 * none of the candidate's is an error (nothing was cut short). */
static void run_is_whole(lworld *l, int64_t n)
{
    char *v =
        world_query(l->w, "SELECT count(*) || ' ' || count(DISTINCT seq) || ' ' ||"
                          " coalesce(min(seq), 0) || ' ' || coalesce(max(seq), 0) ||"
                          " ' ' || (SELECT last_seq FROM cursor) || ' ' ||"
                          " count(*) FILTER (WHERE c_verdict = 'error')"
                          " FROM decisions");
    char want[128];
    snprintf(want, sizeof(want), "%lld %lld %d %lld %lld 0", (long long)n, (long long)n,
             n > 0, (long long)n, (long long)n);
    assert_string_equal(v, want);
    ust_free(v);
}

/* A restarted serve decides the rest of the log; then a stop. */
static void serve_until_all_decided(lworld *l, int64_t n)
{
    proc p = serve_start(l);
    int64_t give_up = now_ms() + 120 * 1000; /* a broken resume, not a slow one */
    while (decided(l) < n && now_ms() < give_up)
        usleep(100 * 1000);
    kill(p.pid, SIGTERM);
    assert_int_equal(finish(p, NULL), 0);
    run_is_whole(l, n);
}

/* n events in the log, and a config whose candidate is the test plugin
 * `name`, with timeout_ms and its config {key: DIR/file} (the path in
 * path). */
static void slow_world(lworld *l, int n, const char *name, int timeout_ms,
                       const char *key, const char *file, char path[PATH_MAX])
{
    record_events(l->w, n);
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_fixture_path(name, cp);
    snprintf(path, PATH_MAX, "%s/%s", l->w->dir, file);
    write_config(l, json_pack("{s:{s:s},s:{s:s,s:i,s:{s:s}}}", "legacy", "path", lp,
                              "candidate", "path", cp, "timeout_ms", timeout_ms,
                              "config", key, path));
}

/* serve, stopped as soon as it listens: it must exit 0. Its stderr in
 * *text; returns how long the stop took (for the record, not a condition). */
static int64_t serve_and_stop(lworld *l, char **text)
{
    proc p = serve_start(l);
    int64_t t0 = now_ms();
    kill(p.pid, SIGTERM);
    assert_int_equal(finish(p, text), 0);
    return now_ms() - t0;
}

/* A candidate slow within its timeout (50 ms a decide) and a backlog of 600
 * events (30 s of it): the stop does not wait for the backlog. It exits 0
 * with part of the run decided and committed, the cursor where the decided
 * events end; the next start decides the rest, each event once. */
static void test_a_stop_does_not_wait_for_the_backlog(void **state)
{
    lworld *l = *state;
    enum { BACKLOG = 600 };
    char slow[PATH_MAX];
    slow_world(l, BACKLOG, "misbehaving_slow", 10000, "slow_file", "slow", slow);
    ust_test_write_file(slow, "");
    char *text = NULL;
    int64_t ms = serve_and_stop(l, &text);
    int64_t n = decided(l);
    if (n >= BACKLOG)
        fail_msg("the stop waited for the whole backlog: %s", text);
    print_message("decided before the stop ended: %lld of %d, in %lld ms\n",
                  (long long)n, BACKLOG, (long long)ms);
    free(text);
    run_is_whole(l, n);
    unlink(slow); /* the same candidate, quick now */
    serve_until_all_decided(l, BACKLOG);
}

/* A candidate stuck in one decide, well within its timeout (a minute): the
 * stop gives up on the runner, exits 0 with nothing of that step committed,
 * and the next start decides everything, once. */
static void test_a_stop_leaves_a_hung_runner_behind(void **state)
{
    lworld *l = *state;
    enum { EVENTS = 20 };
    char unblock[PATH_MAX];
    slow_world(l, EVENTS, "misbehaving_block", 60000, "unblock_file", "unblock",
               unblock);
    char *text = NULL;
    int64_t ms = serve_and_stop(l, &text);
    print_message("the stop left the runner behind after %lld ms\n", (long long)ms);
    says(text, (const char *[]){"exiting without it", NULL});
    /* The log was closed as on any stop: its WAL checkpointed into the .db,
     * or, when the runner's read held that back, the stop says to keep the
     * -wal beside it (before, it said nothing and left every event there). */
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof(wal), "%s-wal", l->w->log_path);
    struct stat sb;
    if (stat(wal, &sb) == 0 && sb.st_size > 0)
        says(text, (const char *[]){"still holds events", "keep the two files together",
                                    NULL});
    free(text);
    run_is_whole(l, 0);
    ust_test_write_file(unblock, "go");
    serve_until_all_decided(l, EVENTS);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_serve_refuses_a_missing_candidate),
        T(test_serve_refuses_a_candidate_without_hello),
        T(test_serve_refuses_a_candidate_that_exits_at_start),
        T(test_serve_refuses_a_missing_legacy),
        T(test_replay_refuses_a_candidate_that_cannot_start),
        T(test_replay_keeps_an_existing_run_when_a_plugin_fails),
        T(test_a_failed_serve_leaves_no_file),
        T(test_a_failed_serve_keeps_what_was_there),
        T(test_a_failed_replay_leaves_no_divergences_file),
        T(test_a_stop_does_not_wait_for_the_backlog),
        T(test_a_stop_leaves_a_hung_runner_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
