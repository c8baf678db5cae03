/* A candidate in a child process cannot hurt the legacy path: crashes,
 * timeouts, garbage and a child that exits at start each become error
 * decisions with their cause, every legacy decision is made, and the run
 * goes on. */
#include "replay_world.h"

#include <understudy/array.h>
#include <understudy/drive.h>
#include <understudy/host.h>

#include <unistd.h>

/* 240 API requests, each a new key, recorded; the candidate isolated with a
 * 200 ms timeout. */
static world *fault_world(void)
{
    world *w = world_new();
    w->cfg->candidate.isolate = 1;
    w->cfg->candidate.timeout_ms = 200;
    for (int i = 1; i <= 240; i++) {
        char key[32], order[32];
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(order, sizeof(order), "o%d", i);
        world_api(w, i, key, "t1", order, 100 + i);
    }
    world_record(w);
    return w;
}

static int setup(void **state)
{
    *state = fault_world();
    return 0;
}

/* A replay of the world's log with a test plugin as the candidate: 0 or
 * its error, with *err. */
static int replay_candidate(world *w, const char *plugin, char **err)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_fixture_path(plugin, cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.commit_every = 0; /* the runner's own batches */
    ust_replay_stats st;
    int rc = ust_replay(&o, &st, err);
    if (rc == 0)
        assert_int_equal(st.fed, 240);
    return rc;
}

static void replay_with(world *w, const char *plugin)
{
    char *err = NULL;
    if (replay_candidate(w, plugin, &err) != 0)
        fail_msg("replay: %s", err);
}

static int count(world *w, const char *where)
{
    char *sql = ust_sprintf("SELECT count(*) FROM decisions WHERE %s", where);
    char *v = world_query(w, sql);
    int n = atoi(v);
    ust_free(v);
    ust_free(sql);
    return n;
}

/* Every legacy decision was made, the candidate failed exactly at the
 * expected events with the expected cause, and each failure is a divergence. */
static void expect_faults(world *w, const char *at, int n, const char *cause)
{
    assert_int_equal(count(w, "l_verdict = 'applied'"), 240);
    char *where = ust_sprintf("c_verdict = 'error' AND (%s)", at);
    assert_int_equal(count(w, where), n);
    ust_free(where);
    char *like = ust_sprintf("c_verdict = 'error' AND c_error LIKE '%%%s%%'", cause);
    assert_int_equal(count(w, like), n);
    ust_free(like);
    char *divs = world_query(w, "SELECT count(*) FROM divergences WHERE class ="
                                " '/payments: applied \xe2\x86\x92 error'");
    assert_int_equal(atoi(divs), n);
    ust_free(divs);
}

/* A misbehaving candidate: where its faults fall, how many, their cause. */
static const struct fault_case {
    const char *plugin, *at;
    int n;
    const char *cause;
} faults[] = {
    {"misbehaving_segv_every_100", "seq % 100 = 0", 2, "killed by signal 11"},
    {"misbehaving_sleep", "seq % 50 = 0", 4, "timeout: no decision within 200 ms"},
    /* What a .so prints to its stdout lands among the shim's binary frames:
     * read as a frame's length, it is far over the limit, and the cause
     * shows the text. */
    {"misbehaving_stdout_garbage", "seq % 20 = 0", 12,
     "protocol error: bad frame: a frame of 1651663207 bytes, over the limit of"
     " 4194304 (it starts \"garbage, not\")"},
    /* A child that closes its stdout and lives on is not waited for: it is
     * killed, and the event gets an error saying its output ended. */
    {"misbehaving_close_stdout", "seq % 60 = 0", 4, "the plugin closed its output"},
    /* A child that writes 5 MiB of text: the host reads no more than the
     * length of what would be a frame, far over the limit (4 MiB), instead
     * of growing without bound, and the event gets an error saying so. */
    {"misbehaving_huge_line", "seq % 120 = 0", 2,
     "bytes, over the limit of 4194304 (it starts \"xxxxxxxxxxxx\")"},
};

/* Each of them, on a world of its own. */
static void test_each_fault_is_an_error_decision(void **state)
{
    (void)state;
    for (size_t i = 0; i < UST_ARRAY_SIZE(faults); i++) {
        world *w = fault_world();
        replay_with(w, faults[i].plugin);
        expect_faults(w, faults[i].at, faults[i].n, faults[i].cause);
        world_free(w);
    }
}

/* This process's resident set in MiB: the exec'd shim (understudy itself,
 * built like this test) starts no bigger, so 48 MiB over it is growth. */
static long own_rss_mib(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%ld %ld", &size, &resident) != 2)
        fail_msg("cannot read /proc/self/statm");
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

/* A child that leaks 96 MiB every 80th event, allowed 48 MiB over what it
 * starts with: it is stopped and restarted each time, the event whose answer
 * showed the growth is an error with the cause (which one is up to the pipe:
 * the child may be ahead), and everything else is decided as usual. The
 * limit under test is memory alone: touching 96 MiB takes longer than the
 * fixture's 200 ms timeout on a loaded machine, and a decide cut short by the
 * timeout never shows its growth, so this test allows a minute. */
static void test_a_child_over_its_memory_limit(void **state)
{
    world *w = *state;
    long limit = own_rss_mib() + 48;
    w->cfg->candidate.max_rss_mb = limit;
    w->cfg->candidate.timeout_ms = 60000;
    replay_with(w, "misbehaving_grow");
    w->cfg->candidate.max_rss_mb = 512;
    /* Which events get the error is up to the pipe; each error is one growth,
     * after which the child starts over. */
    int over = count(w, "c_verdict = 'error'");
    assert_true(over >= 1 && over <= 3);
    char cause[64];
    snprintf(cause, sizeof(cause), "over max_rss_mb %ld", limit);
    expect_faults(w, "1", over, cause);
}

/* A candidate that cannot start at all stops the run before its first
 * event: the error names the plugin, its file and the cause, and no event
 * is decided (nothing that looks like a run is left behind). */
static void test_a_child_that_exits_at_start(void **state)
{
    world *w = *state;
    char *err = NULL;
    assert_int_equal(replay_candidate(w, "misbehaving_exit_at_start", &err),
                     UST_EPLUGIN);
    assert_non_null(strstr(err, "plugins.candidate: cannot start"));
    assert_non_null(strstr(err, "misbehaving_exit_at_start.so"));
    assert_non_null(strstr(err, "exited with status 3"));
    ust_free(err);
    assert_int_equal(access(w->run_path, F_OK), -1);
}

/* A candidate that started once, crashes on its first event and cannot
 * start again: restarts back off (1, 2, 4 ... events), every event is an
 * error, the tries say why, the events between say the plugin is down. */
static void test_a_child_that_cannot_start_again(void **state)
{
    world *w = *state;
    char marker[PATH_MAX];
    snprintf(marker, sizeof(marker), "%s/started", w->dir);
    json_decref(w->cfg->candidate.config);
    w->cfg->candidate.config = json_pack("{s:s}", "marker_file", marker);
    replay_with(w, "misbehaving_exit_on_restart");
    assert_int_equal(count(w, "l_verdict = 'applied'"), 240);
    assert_int_equal(count(w, "c_verdict = 'error'"), 240);
    assert_int_equal(count(w, "seq = 1 AND c_error LIKE '%killed by signal 11%'"), 1);
    assert_true(count(w, "c_error LIKE '%exited with status 3%'") >= 5);
    assert_true(count(w, "c_error LIKE '%is down%'") > 100);
}

/* Every scenario, rendered, replayed once with the C candidate and once with
 * an example in another language: the same divergences, seq for seq. */
static void matches_the_c_candidate(world *w, const char *interpreter,
                                    const char *script_rel)
{
    char probe[64];
    snprintf(probe, sizeof(probe), "%s -e 1 >/dev/null 2>&1 || %s -c 1 >/dev/null 2>&1",
             interpreter, interpreter);
    if (system(probe) != 0)
        fail_msg("%s is needed: make test installs it", interpreter);
    char lp[PATH_MAX], cp[PATH_MAX], script[PATH_MAX];
    char *err = NULL;
    world_record_scenarios(w);

    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.commit_every = 0; /* the runner's own batches */
    ust_replay_stats st;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    char *c_run = world_divergences(w);
    assert_true(strlen(c_run) > 0);

    unlink(w->run_path);
    ust_test_source_path(script_rel, script);
    char *argv[] = {(char *)interpreter, script, NULL};
    char *so_path = w->cfg->candidate.path;
    w->cfg->candidate.exec = argv;
    w->cfg->candidate.path = NULL;
    o.candidate_path = NULL;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    w->cfg->candidate.exec = NULL;
    w->cfg->candidate.path = so_path;
    world_expect_same_run_without_errors(w, c_run);
    ust_free(c_run);
}

static void test_python_candidate_matches_the_c_one(void **state)
{
    matches_the_c_candidate(*state, "python3", "src/plugins/examples/candidate.py");
}

static void test_node_candidate_matches_the_c_one(void **state)
{
    matches_the_c_candidate(*state, "node", "src/plugins/examples/candidate.js");
}

/* /metrics counts each fault under its cause, and the restarts after them:
 * replayed with a plugin that fails n times one way, the candidate's count
 * for that cause is n, no other cause moves, nor the legacy's; the child is
 * restarted before each next event (none after event 240). The counters are
 * the run's: fresh ones start at zero whatever ran before in this process,
 * and the legacy's own (another object) see none of the candidate's. */
static void counted_as(world *w, const char *plugin, ust_plugin_fault kind, int n,
                       int restarts)
{
    ust_plugin_counters *mine = ust_plugin_counters_new(NULL, NULL);
    ust_plugin_counters *legacy = ust_plugin_counters_new(NULL, NULL);
    assert_non_null(mine);
    assert_non_null(legacy);
    w->cfg->candidate.counters = mine;
    w->cfg->legacy.counters = legacy;
    replay_with(w, plugin);
    w->cfg->candidate.counters = w->cfg->legacy.counters = NULL;
    ust_plugin_fault_stats after, legacy_after;
    ust_plugin_fault_stats_get(mine, &after);
    ust_plugin_fault_stats_get(legacy, &legacy_after);
    for (int f = 0; f < UST_FAULT_COUNT; f++) {
        uint64_t grew = after.errors[1][f];
        if (grew != (f == (int)kind ? (uint64_t)n : 0))
            fail_msg("%s: %s errors grew by %llu", plugin,
                     ust_plugin_fault_name((ust_plugin_fault)f),
                     (unsigned long long)grew);
        assert_int_equal(after.errors[0][f], 0);
        assert_int_equal(legacy_after.errors[0][f], 0);
        assert_int_equal(legacy_after.errors[1][f], 0);
    }
    assert_int_equal(after.restarts[1], restarts);
    assert_int_equal(after.restarts[0], 0);
    assert_int_equal(legacy_after.restarts[0] + legacy_after.restarts[1], 0);
    ust_plugin_counters_free(mine);
    ust_plugin_counters_free(legacy);
}

static void test_a_crash_is_counted_as_one(void **state)
{
    counted_as(*state, "misbehaving_segv_every_100", UST_FAULT_CRASH, 2, 2);
}

static void test_a_timeout_is_counted_as_one(void **state)
{
    counted_as(*state, "misbehaving_sleep", UST_FAULT_TIMEOUT, 4, 4);
}

static void test_a_closed_output_is_counted_as_an_exit(void **state)
{
    counted_as(*state, "misbehaving_close_stdout", UST_FAULT_EXIT, 4, 3);
}

static void test_garbage_is_counted_as_a_protocol_error(void **state)
{
    counted_as(*state, "misbehaving_stdout_garbage", UST_FAULT_PROTOCOL, 12, 11);
}

/* Every candidate decision of a run, each field quoted (NULL apart from ''). */
static char *candidate_decisions(world *w)
{
    return world_query(w, "SELECT group_concat(seq || '|' || quote(entity) || '|' ||"
                          " quote(c_verdict) || '|' || quote(c_status) || '|' ||"
                          " quote(c_state_before) || '|' || quote(c_state) || '|' ||"
                          " quote(c_flags) || '|' || quote(c_body) || '|' ||"
                          " quote(c_headers) || '|' || quote(c_reason) || '|' ||"
                          " quote(c_error), char(10)) FROM"
                          " (SELECT * FROM decisions ORDER BY seq)");
}

/* A generated log (the default mix: webhooks signed and not, API requests
 * with bodies and headers) replayed with the candidate isolated, as
 * shipped, its shim talking binary frames, and in process: the same
 * divergence lines byte for byte, the same candidate decision on every
 * event, and none an error. */
static void test_an_isolated_candidate_decides_as_in_process(void **state)
{
    world *w = *state;
    world_gen_log(w, w->log_path, w->cfg, 7, 3000);
    char *isolated_lines = NULL, *in_process_lines = NULL;
    w->cfg->candidate.isolate = 1;
    world_replay(w, "legacy", "candidate", &isolated_lines);
    char *isolated = candidate_decisions(w);
    char *errors =
        world_query(w, "SELECT count(*) FROM decisions WHERE c_verdict = 'error'");
    assert_string_equal(errors, "0");
    ust_free(errors);
    unlink(w->run_path);
    w->cfg->candidate.isolate = 0;
    world_replay(w, "legacy", "candidate", &in_process_lines);
    char *in_process = candidate_decisions(w);
    assert_true(strlen(isolated_lines) > 1000);
    assert_string_equal(isolated_lines, in_process_lines);
    assert_string_equal(isolated, in_process);
    free(isolated_lines);
    free(in_process_lines);
    ust_free(isolated);
    ust_free(in_process);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, world_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_fault_is_an_error_decision),
        T(test_a_child_over_its_memory_limit),
        T(test_a_child_that_exits_at_start),
        T(test_a_child_that_cannot_start_again),
        T(test_python_candidate_matches_the_c_one),
        T(test_node_candidate_matches_the_c_one),
        T(test_a_crash_is_counted_as_one),
        T(test_a_timeout_is_counted_as_one),
        T(test_a_closed_output_is_counted_as_an_exit),
        T(test_garbage_is_counted_as_a_protocol_error),
        T(test_an_isolated_candidate_decides_as_in_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
