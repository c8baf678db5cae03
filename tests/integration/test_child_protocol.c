/* Plugins in child processes, attacked on purpose: answers that do not carry
 * the seq they answer, a candidate that hangs, processes a candidate starts
 * of its own, an exit in the middle of an event, the environment a child is
 * given, and a child that floods its stderr. Each child is real: a Python
 * program speaking the protocol, or a misbehaving .so isolated in understudy's
 * shim. */
#define _GNU_SOURCE      /* sched_setaffinity */
#include "store_world.h" /* store_setup, store_teardown */

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

/* What every scripted child does first: say hello in the protocol the host
 * asks for, and answer(seq) builds a decision whose body names the seq. */
#define PY_PROLOGUE                                                                    \
    "import json, os, subprocess, sys\n"                                               \
    "def send(m):\n"                                                                   \
    "    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"                \
    "def answer(seq):\n"                                                               \
    "    return {'type': 'decision', 'seq': seq, 'decision': {'verdict': 'applied',"   \
    " 'status': 200, 'body': {'seq': seq}}}\n"                                         \
    "init = json.loads(sys.stdin.readline())\n"                                        \
    "hello = {'type': 'hello', 'protocol': init['protocol'], 'name': 'scripted',"      \
    " 'version': '0'}\n"

/* The loop over events: `each` runs with `seq` set, once per event. */
#define PY_LOOP(each)                                                                  \
    "for line in sys.stdin:\n"                                                         \
    "    seq = json.loads(line)['event']['seq']\n" each

/* pc as the candidate: the .so at path, or pc->exec when path is NULL. */
static ust_plugin *open_candidate(ust_plugin_config *pc, const char *path)
{
    ust_plugin *p = NULL;
    char *err = NULL;
    if (ust_plugin_open(pc, path, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    return p;
}

static ust_plugin *open_script_counted(ust_plugin_config *pc, const char *script,
                                       const char *arg, int64_t timeout_ms,
                                       ust_plugin_counters *counters)
{
    static char *argv[5];
    argv[0] = "python3";
    argv[1] = "-c";
    argv[2] = (char *)script;
    argv[3] = (char *)arg;
    argv[4] = NULL;
    memset(pc, 0, sizeof(*pc));
    pc->exec = argv;
    pc->timeout_ms = timeout_ms;
    pc->counters = counters;
    return open_candidate(pc, NULL);
}

static ust_plugin *open_script(ust_plugin_config *pc, const char *script,
                               const char *arg, int64_t timeout_ms)
{
    return open_script_counted(pc, script, arg, timeout_ms, NULL);
}

static ust_plugin *open_isolated(ust_plugin_config *pc, const char *name,
                                 int64_t timeout_ms)
{
    char path[PATH_MAX];
    ust_test_fixture_path(name, path);
    memset(pc, 0, sizeof(*pc));
    pc->isolate = 1;
    pc->timeout_ms = timeout_ms;
    return open_candidate(pc, path);
}

/* Events first_seq, first_seq + 1 ... as one batch (n at most 64). */
static void decide_batch(ust_plugin *p, int64_t first_seq, int n, ust_decision *ds)
{
    ust_event evs[64];
    ust_request reqs[64];
    const ust_event *ev_ptrs[64];
    const ust_request *req_ptrs[64];
    ust_decision *outs[64];
    assert_true(n <= 64);
    memset(evs, 0, sizeof(evs));
    memset(reqs, 0, sizeof(reqs));
    for (int i = 0; i < n; i++) {
        evs[i].seq = first_seq + i;
        ev_ptrs[i] = &evs[i];
        req_ptrs[i] = &reqs[i];
        outs[i] = &ds[i];
    }
    ust_plugin_decide_batch(p, ev_ptrs, req_ptrs, (size_t)n, outs);
}

static void expect_error(const ust_decision *d, const char *cause)
{
    if (d->verdict != UST_VERDICT_ERROR || d->error == NULL ||
        strstr(d->error, cause) == NULL)
        fail_msg("expected an error saying \"%s\", got verdict %s (%s)", cause,
                 ust_verdict_name(d->verdict), d->error ? d->error : "no error");
}

/* The decision answers event seq: applied, its body naming that seq. */
static void expect_answer_to(const ust_decision *d, int64_t seq)
{
    char want[32];
    snprintf(want, sizeof(want), "{\"seq\":%lld}", (long long)seq);
    if (d->verdict != UST_VERDICT_APPLIED || d->body == NULL ||
        strcmp(d->body, want) != 0)
        fail_msg("event %lld: expected the answer %s, got %s %s (%s)", (long long)seq,
                 want, ust_verdict_name(d->verdict), d->body ? d->body : "",
                 d->error ? d->error : "");
}

/* p asked to decide seq answers it. */
static void expect_decides(ust_plugin *p, int64_t seq)
{
    ust_decision d;
    ust_test_decide_seq(p, seq, &d);
    expect_answer_to(&d, seq);
    ust_decision_clear(&d);
}

/* The script's child fails its first event with cause. */
static void expect_first_event_fails(const char *script, const char *cause)
{
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, script, NULL, 10000);
    ust_decision d;
    ust_test_decide_seq(p, 1, &d);
    expect_error(&d, cause);
    ust_decision_clear(&d);
    ust_plugin_unload(p);
}

static const char answers_twice[] =
    PY_PROLOGUE "send(hello)\n" PY_LOOP("    send(answer(seq)); send(answer(seq))\n");

/* A child that answers every event twice: the second answer is a protocol
 * error on the event after (the child is restarted), never the answer to it.
 * Decided one by one and as a batch: the same. */
static void test_a_second_answer_is_a_protocol_error(void **state)
{
    (void)state;
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, answers_twice, NULL, 10000);
    for (int64_t seq = 1; seq <= 6; seq++) {
        ust_decision d;
        ust_test_decide_seq(p, seq, &d);
        if (seq % 2 == 1)
            expect_answer_to(&d, seq); /* a fresh child's first answer */
        else
            expect_error(&d, "protocol error: a second answer to seq");
        ust_decision_clear(&d);
    }
    ust_plugin_unload(p);

    p = open_script(&pc, answers_twice, NULL, 10000);
    ust_decision ds[6];
    decide_batch(p, 101, 6, ds);
    for (int i = 0; i < 6; i++) {
        if (i % 2 == 0)
            expect_answer_to(&ds[i], 101 + i);
        else
            expect_error(&ds[i], "protocol error: a second answer to seq");
        ust_decision_clear(&ds[i]);
    }
    ust_plugin_unload(p);
}

/* An answer naming another event, or none, is a protocol error. */
static void test_an_answer_to_another_seq_is_a_protocol_error(void **state)
{
    (void)state;
    static const char wrong_seq[] = PY_PROLOGUE
        "send(hello)\n" PY_LOOP("    send(answer(seq if seq != 2 else 99))\n");
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, wrong_seq, NULL, 10000);
    expect_decides(p, 1);
    ust_decision d;
    ust_test_decide_seq(p, 2, &d);
    expect_error(&d, "protocol error: an answer to seq 99 while seq 2 was asked");
    ust_decision_clear(&d);
    expect_decides(p, 3);
    ust_plugin_unload(p);

    static const char no_seq[] = PY_PROLOGUE
        "send(hello)\n" PY_LOOP("    m = answer(seq); del m['seq']; send(m)\n");
    expect_first_event_fails(no_seq,
                             "protocol error: a decision without the seq it answers");
}

/* A line written before any event was sent (here with its hello, in
 * one write): a decision guessing the first seq, or a write, is a protocol
 * error, not the answer nor a write of the first event. */
static void test_a_decision_before_any_event_is_a_protocol_error(void **state)
{
    (void)state;
    static const char early[] = PY_PROLOGUE
        "sys.stdout.write(json.dumps(hello) + '\\n' + json.dumps(answer(1)) + '\\n')\n"
        "sys.stdout.flush()\n" PY_LOOP("    send(answer(seq))\n");
    expect_first_event_fails(early, "protocol error: a decision line before any event");

    /* A write before any event is not staged with the first event's. */
    static const char early_put[] = PY_PROLOGUE
        "sys.stdout.write(json.dumps(hello) + '\\n' + json.dumps({'type': 'put',"
        " 'key': 'k', 'value': 'unasked'}) + '\\n')\n"
        "sys.stdout.flush()\n" PY_LOOP("    send(answer(seq))\n");
    expect_first_event_fails(early_put, "protocol error: a put line before any event");
    ust_store_begin_call(store, "candidate");
    const char *v = NULL;
    assert_int_equal(ust_store_get(store, "k", &v), 0);
    ust_store_end_call(store, 0);
}

/* A child that answers events before it has read them (it guesses their
 * seqs) has its answers taken, and the runner may then release the events
 * at once: what the child reads afterwards is still each event as it was
 * queued, never what its memory holds by then (the link keeps no pointer to
 * an event). Here the events are changed, not freed, once answered; the
 * child reports the seqs it read. */
static void
test_events_answered_before_they_are_read_reach_the_child_whole(void **state)
{
    (void)state;
    static const char guesses[] =
        PY_PROLOGUE "hello['pipeline'] = True\n"
                    "send(hello)\n"
                    "seen = []\n" PY_LOOP(
                        "    if seq == 1:\n"
                        "        sys.stdout.write(''.join(json.dumps(answer(s)) + '\\n'"
                        " for s in range(1, 41))); sys.stdout.flush()\n"
                        "    elif seq == 1000:\n"
                        "        m = answer(seq); m['decision']['body'] = seen\n"
                        "        send(m)\n"
                        "    else:\n"
                        "        seen.append(seq)\n");
    /* One core for the runner and the link's thread, the latter in the
     * background: the runner takes the answers already read and releases
     * the events before the link's thread runs again. */
    cpu_set_t was, one;
    assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &was)) {
            CPU_SET(cpu, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    static char *argv[] = {"python3", "-c", (char *)guesses, NULL};
    pc.exec = argv;
    pc.timeout_ms = 10000;
    ust_plugin *p = NULL;
    char *err = NULL;
    if (ust_plugin_open(&pc, NULL, "candidate", UST_PLUGIN_BACKGROUND, store, &p,
                        &err) != 0)
        fail_msg("open: %s", err);
    expect_decides(p, 1);
    enum { N = 39 };
    ust_event evs[N];
    ust_request reqs[N];
    const ust_event *ev_ptrs[N];
    const ust_request *req_ptrs[N];
    ust_decision ds[N], *outs[N];
    memset(evs, 0, sizeof(evs));
    memset(reqs, 0, sizeof(reqs));
    for (int i = 0; i < N; i++) {
        evs[i].seq = 2 + i;
        ev_ptrs[i] = &evs[i];
        req_ptrs[i] = &reqs[i];
        outs[i] = &ds[i];
    }
    ust_plugin_decide_batch(p, ev_ptrs, req_ptrs, N, outs);
    for (int i = 0; i < N; i++) {
        expect_answer_to(&ds[i], 2 + i);
        ust_decision_clear(&ds[i]);
        evs[i].seq = 4242; /* released, and reused */
    }
    ust_decision d;
    ust_test_decide_seq(p, 1000, &d);
    char want[512] = "[";
    for (int i = 0; i < N; i++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%d", i ? "," : "",
                 2 + i);
    strcat(want, "]");
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    assert_string_equal(d.body, want);
    ust_decision_clear(&d);
    ust_plugin_unload(p);
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
}

/* A program that writes 5 MiB with no end of line: the host stops reading
 * at its line limit (4 MiB) instead of growing without bound, and the event
 * gets an error saying so. (An isolated .so's shim speaks binary frames:
 * test_isolation has the same for it.) */
static void test_a_line_over_the_limit_is_refused(void **state)
{
    (void)state;
    static const char huge[] = PY_PROLOGUE "send(hello)\n" PY_LOOP(
        "    sys.stdout.write('x' * (5 << 20)); sys.stdout.flush()\n");
    expect_first_event_fails(huge, "a line over the size limit");
}

/* A hello in two writes, the second only once the host has read the first
 * (nothing left in the pipe: FIONREAD on the child's stdout, polled for at
 * most 10 s), so the host's first read ends inside the line, as Python's
 * print(..., flush=True) can make it by accident. */
#define PY_SPLIT_HELLO                                                                 \
    "import fcntl, struct, termios, time\n"                                            \
    "def unread():\n"                                                                  \
    "    return struct.unpack('i', fcntl.ioctl(1, termios.FIONREAD, b'0000'))[0]\n"    \
    "def send_split(m):\n"                                                             \
    "    text = (json.dumps(m) + '\\n').encode()\n"                                    \
    "    os.write(1, text[:9])\n"                                                      \
    "    give_up = time.monotonic() + 10\n"                                            \
    "    while unread() > 0 and time.monotonic() < give_up:\n"                         \
    "        time.sleep(0.001)\n"                                                      \
    "    os.write(1, text[9:])\n"                                                      \
    "send_split(hello)\n"

/* The hello split across two reads of the host: the start succeeds (it was
 * "did not say hello: bad hello": the link took its empty array of lines
 * for a failure to allocate one). */
static void test_a_hello_split_across_reads_starts(void **state)
{
    (void)state;
    static const char split[] =
        PY_PROLOGUE PY_SPLIT_HELLO PY_LOOP("    send(answer(seq))\n");
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, split, NULL, 10000);
    expect_decides(p, 1);
    expect_decides(p, 2);
    ust_plugin_unload(p);
}

/* A candidate that exits at every 10th event, each of its starts saying its
 * hello in two reads: 100 events, 10 exits, every restart succeeds (the
 * soak that found the split hello logged 69 failed restarts), and every
 * other event is answered. */
static void test_restarts_with_split_hellos_never_fail(void **state)
{
    (void)state;
    static const char exits[] =
        PY_PROLOGUE PY_SPLIT_HELLO PY_LOOP("    if seq % 10 == 0:\n"
                                           "        os._exit(0)\n"
                                           "    send(answer(seq))\n");
    ust_plugin_counters *counters = ust_plugin_counters_new(NULL, NULL);
    assert_non_null(counters);
    ust_plugin_config pc;
    ust_plugin *p = open_script_counted(&pc, exits, NULL, 10000, counters);
    for (int64_t seq = 1; seq <= 100; seq++) {
        ust_decision d;
        ust_test_decide_seq(p, seq, &d);
        if (seq % 10 == 0)
            expect_error(&d, "exited with status 0");
        else
            expect_answer_to(&d, seq);
        ust_decision_clear(&d);
    }
    ust_plugin_unload(p);
    ust_plugin_fault_stats st;
    ust_plugin_fault_stats_get(counters, &st);
    ust_plugin_counters_free(counters);
    assert_int_equal(st.errors[1][UST_FAULT_START], 0);
    assert_int_equal(st.errors[1][UST_FAULT_DOWN], 0);
    assert_int_equal(st.errors[1][UST_FAULT_EXIT], 10);
    assert_int_equal(st.restarts[1], 9); /* after seq 10, 20, ... 90 */
}

/* A child of protocol 1 (answers without seq) is refused at start, with a
 * message that says why, instead of failing every event. */
static void test_a_version_1_child_is_refused_at_start(void **state)
{
    (void)state;
    static const char v1[] = PY_PROLOGUE
        "hello['protocol'] = 1\nsend(hello)\n" PY_LOOP("    send(answer(seq))\n");
    static char *argv[] = {"python3", "-c", (char *)v1, NULL};
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.exec = argv;
    pc.timeout_ms = 10000;
    ust_plugin *p = NULL;
    char *err = NULL;
    assert_int_equal(ust_plugin_open(&pc, NULL, "candidate", 0, store, &p, &err),
                     UST_EPLUGIN);
    assert_null(p);
    if (strstr(err, "its hello says protocol 1") == NULL)
        fail_msg("message \"%s\" should say which protocol the child speaks", err);
    ust_free(err);
}

/* Counts the causes of n decisions of a hung candidate: every one an error,
 * a timeout or "down"; the first three time out, the fourth is down. */
static void count_hung(const ust_decision *ds, int n, int *timeouts, int *down)
{
    *timeouts = *down = 0;
    for (int i = 0; i < n; i++) {
        const ust_decision *d = &ds[i];
        assert_int_equal(d->verdict, UST_VERDICT_ERROR);
        if (strstr(d->error, "timeout: no decision within 50 ms") != NULL)
            ++*timeouts;
        else if (strstr(d->error, "is down after 3 timeouts in a row") != NULL)
            ++*down;
        else
            fail_msg("event %d: unexpected cause %s", i + 1, d->error);
        if (i < 3)
            assert_int_equal(*timeouts, i + 1);
        if (i == 3)
            assert_int_equal(*down, 1);
    }
}

/* A candidate that hangs forever: after three timeouts in a row it is down,
 * and the events of its back-off are answered at once; each restart after
 * that that times out again sends it down again, for twice as long. Counts
 * of causes, not times: 3, then one a back-off round (1, 2, 4, 8, 16
 * events), 8 in 40 events. One by one (a program), and as a batch sent
 * ahead to a child that pipelines (an isolated .so, as the live runner
 * decides). */
static void test_a_hung_candidate_is_down_after_three_timeouts(void **state)
{
    (void)state;
    enum { N = 40 };
    static const char hangs[] =
        PY_PROLOGUE "send(hello)\n" PY_LOOP("    pass # never answers\n");
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, hangs, NULL, 50);
    ust_decision ds[N];
    for (int i = 0; i < N; i++)
        ust_test_decide_seq(p, i + 1, &ds[i]);
    ust_plugin_unload(p);
    int timeouts, down;
    count_hung(ds, N, &timeouts, &down);
    assert_int_equal(timeouts + down, N);
    assert_int_equal(timeouts, 8);
    for (int i = 0; i < N; i++)
        ust_decision_clear(&ds[i]);

    p = open_isolated(&pc, "misbehaving_block", 50); /* no unblock_file: forever */
    decide_batch(p, 1, N, ds);
    ust_plugin_unload(p);
    count_hung(ds, N, &timeouts, &down);
    assert_int_equal(timeouts + down, N);
    assert_int_equal(timeouts, 8);
    for (int i = 0; i < N; i++)
        ust_decision_clear(&ds[i]);
}

/* Gone: no such process, or a zombie about to be reaped by init. */
static int process_gone(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
}

static void expect_gone_soon(pid_t pid)
{
    /* Generous: a loaded machine may take its time to deliver a SIGKILL. */
    for (int i = 0; i < 2000 && !process_gone(pid); i++)
        usleep(10000);
    if (!process_gone(pid)) {
        kill(pid, SIGKILL);
        fail_msg("process %d, started by the plugin, outlived it", (int)pid);
    }
}

static pid_t grandchild_of(const ust_decision *d)
{
    int pid = 0;
    if (d->body == NULL || sscanf(d->body, "{\"grandchild\":%d}", &pid) != 1 ||
        pid <= 0)
        fail_msg("no grandchild in %s (%s)", d->body ? d->body : "no body",
                 d->error ? d->error : "");
    return (pid_t)pid;
}

/* What a child starts (holding its stdout and stderr) dies with it: when the
 * host closes the plugin, and when the child exits in the middle of an
 * event, which is then recorded with its exit status, not as a timeout. */
static void test_a_childs_own_processes_die_with_it(void **state)
{
    (void)state;
    ust_plugin_config pc;
    /* timeout_ms far longer than the test waits: an exit must not be
     * mistaken for one. */
    ust_plugin *p = open_isolated(&pc, "misbehaving_fork_grandchild", 60000);
    ust_decision d;
    ust_test_decide_seq(p, 1, &d);
    pid_t first = grandchild_of(&d);
    ust_decision_clear(&d);
    ust_test_decide_seq(p, 2, &d); /* the child exits with status 3 */
    expect_error(&d, "exited with status 3");
    ust_decision_clear(&d);
    expect_gone_soon(first);
    ust_test_decide_seq(p, 1, &d); /* restarted: a new grandchild */
    pid_t second = grandchild_of(&d);
    ust_decision_clear(&d);
    ust_plugin_unload(p);
    expect_gone_soon(second);

    static const char spawns[] = PY_PROLOGUE "send(hello)\n" PY_LOOP(
        "    if seq == 2: os._exit(3)\n"
        "    sleeper = subprocess.Popen(['sleep', '600'])\n"
        "    send({'type': 'decision', 'seq': seq, 'decision': {'verdict': 'applied',"
        " 'status': 200, 'body': {'grandchild': sleeper.pid}}})\n");
    p = open_script(&pc, spawns, NULL, 60000);
    ust_test_decide_seq(p, 1, &d);
    first = grandchild_of(&d);
    ust_decision_clear(&d);
    ust_test_decide_seq(p, 2, &d);
    expect_error(&d, "exited with status 3");
    ust_decision_clear(&d);
    expect_gone_soon(first);
    ust_test_decide_seq(p, 3, &d);
    second = grandchild_of(&d);
    ust_decision_clear(&d);
    ust_plugin_unload(p);
    expect_gone_soon(second);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("%s: not written", path);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Every line of env (NAME=VALUE\n...) whose name is name. */
static int has_var(const char *env, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = env; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
        if (strncmp(l, name, n) == 0 && l[n] == '=')
            return 1;
    return 0;
}

static void expect_scrubbed(const char *env_file)
{
    static const char *const secrets[] = {"UNDERSTUDY_STRIPE_SECRET",
                                          "UNDERSTUDY_STANDARD_SECRET"};
    static const char *const kept[] = {"UNDERSTUDY_TEST_PLAIN", "PATH"};
    char *env = read_text(env_file);
    for (size_t i = 0; i < UST_ARRAY_SIZE(secrets); i++)
        assert_false(has_var(env, secrets[i]));
    for (size_t i = 0; i < UST_ARRAY_SIZE(kept); i++)
        assert_true(has_var(env, kept[i]));
    free(env);
    unlink(env_file);
}

/* A child's environment holds no variable a route names as secret_env,
 * a program or understudy's shim around a .so, and every other variable. */
static void test_secrets_do_not_reach_a_child(void **state)
{
    (void)state;
    ust_test_set_secrets("whsec_not_for_plugins");
    setenv("UNDERSTUDY_TEST_PLAIN", "visible", 1);
    char cfg_path[PATH_MAX], dir[PATH_MAX], env_file[PATH_MAX];
    ust_test_source_path("tests/data/config.json", cfg_path);
    ust_test_tmpdir(dir);
    snprintf(env_file, sizeof(env_file), "%s/env", dir);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(cfg_path, &cfg, &err) != 0)
        fail_msg("config: %s", err);

    static const char dumps[] =
        PY_PROLOGUE "open(sys.argv[1], 'w').write(''.join(k + '=' + v + '\\n'"
                    " for k, v in os.environ.items()))\n"
                    "send(hello)\n" PY_LOOP("    send(answer(seq))\n");
    static char *argv[] = {"python3", "-c", (char *)dumps, NULL, NULL};
    argv[3] = env_file;
    ust_plugin_config *pc = &cfg->candidate;
    char *so = pc->path;
    pc->path = NULL;
    pc->exec = argv;
    ust_plugin *p = NULL;
    if (ust_plugin_open(pc, NULL, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    ust_plugin_unload(p);
    pc->exec = NULL;
    expect_scrubbed(env_file);

    char path[PATH_MAX];
    ust_test_fixture_path("misbehaving_env_dump", path);
    json_t *plugin_config = pc->config;
    pc->config = json_pack("{s:s}", "env_file", env_file);
    pc->isolate = 1;
    if (ust_plugin_open(pc, path, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    ust_plugin_unload(p);
    json_decref(pc->config);
    pc->config = plugin_config;
    pc->path = so;
    expect_scrubbed(env_file);
    ust_config_free(cfg);
    ust_test_rmdir(dir);
}

/* Something only the host's memory holds. */
static char host_marker[] = "host-memory-marker-7f3a";

/* An isolated .so runs in a process of its own: the understudy binary's
 * shim, exec'd, not a fork of the host. It cannot read what the host holds
 * in memory (a fork would have a copy of it all, secrets included). */
static void test_an_isolated_plugin_runs_in_a_process_of_its_own(void **state)
{
    (void)state;
    char dir[PATH_MAX], probe[PATH_MAX], path[PATH_MAX];
    ust_test_tmpdir(dir);
    snprintf(probe, sizeof(probe), "%s/probe", dir);
    ust_test_fixture_path("misbehaving_host_memory", path);
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.isolate = 1;
    pc.timeout_ms = 5000;
    char address[32];
    snprintf(address, sizeof(address), "%#lx", (unsigned long)(uintptr_t)host_marker);
    pc.config = json_pack("{s:s,s:s}", "probe_file", probe, "address", address);
    ust_plugin *p = NULL;
    char *err = NULL;
    /* The probe works: in process, the plugin reads the marker. */
    pc.isolate = 0;
    if (ust_plugin_open(&pc, path, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    ust_plugin_unload(p);
    char *text = read_text(probe);
    assert_non_null(strstr(text, host_marker));
    free(text);
    pc.isolate = 1;
    if (ust_plugin_open(&pc, path, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    ust_plugin_unload(p);
    json_decref(pc.config);
    text = read_text(probe);
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    *nl = '\0';
    char shim[PATH_MAX];
    assert_non_null(realpath(getenv("UST_PLUGIN_SHIM"), shim));
    assert_string_equal(text, shim); /* its process runs understudy, not this test */
    assert_null(strstr(nl + 1, host_marker));
    assert_non_null(strstr(host_marker, "marker")); /* the host still holds it */
    free(text);
    unlink(probe);
    ust_test_rmdir(dir);
}

/* What the sink was given, whole lines. */
static struct {
    char *text;
    size_t len, cap;
} sunk;

static void sink(const char *text, size_t len, void *data)
{
    (void)data;
    if (sunk.len + len + 1 > sunk.cap) {
        sunk.cap = (sunk.len + len + 1) * 2;
        sunk.text = realloc(sunk.text, sunk.cap);
    }
    memcpy(sunk.text + sunk.len, text, len);
    sunk.len += len;
    sunk.text[sunk.len] = '\0';
}

/* A child that writes 2 MB to its stderr at once: the host forwards each
 * line with the plugin's name, at most its budget (64 KiB, and more only as
 * minutes pass), cuts a line at 4 KiB, and counts every byte it dropped:
 * forwarded + dropped = written. */
static void test_a_flood_on_stderr_is_capped_and_counted(void **state)
{
    (void)state;
    static const char floods[] = PY_PROLOGUE "send(hello)\n" PY_LOOP(
        "    sys.stderr.buffer.write(b'L' * 10000 + b'\\n' + b''.join(b'line %05d ' % i"
        " + b'x' * 88 + b'\\n' for i in range(20000)))\n"
        "    sys.stderr.flush()\n"
        "    send(answer(seq))\n");
    const uint64_t written = 10001 + 20000 * 100;
    ust_plugin_stderr_stats before, after;
    ust_plugin_counters *counters = ust_plugin_counters_new(sink, NULL);
    assert_non_null(counters);
    ust_plugin_stderr_stats_get(counters, &before);
    ust_plugin_config pc;
    ust_plugin *p = open_script_counted(&pc, floods, NULL, 60000, counters);
    expect_decides(p, 1);
    ust_plugin_unload(p);
    ust_plugin_stderr_stats_get(counters, &after);
    ust_plugin_counters_free(counters);

    static const char prefix[] = "understudy: candidate[scripted]: ";
    uint64_t forwarded = 0, lines = 0, notes = 0;
    size_t first_len = 0;
    for (char *l = sunk.text; l != NULL && *l;) {
        char *nl = strchr(l, '\n');
        assert_non_null(nl);
        if (strncmp(l, prefix, sizeof(prefix) - 1) != 0)
            fail_msg("a line without the plugin's name: %.80s", l);
        char *payload = l + sizeof(prefix) - 1;
        size_t n = (size_t)(nl - payload);
        if (payload[0] == 'L' || strncmp(payload, "line ", 5) == 0) {
            if (lines++ == 0)
                first_len = n;
            forwarded += n + 1;
        } else if (strstr(payload, "over its budget") != NULL) {
            notes++;
        } else {
            fail_msg("unexpected line: %.80s", payload);
        }
        l = nl + 1;
    }
    free(sunk.text);
    memset(&sunk, 0, sizeof(sunk));
    assert_int_equal(first_len, 4096); /* the long line, cut */
    assert_true(notes >= 1);
    assert_int_equal(after.forwarded_bytes - before.forwarded_bytes, forwarded);
    assert_int_equal(after.forwarded_lines - before.forwarded_lines, lines);
    assert_int_equal(forwarded + (after.dropped_bytes - before.dropped_bytes), written);
    assert_true(after.dropped_lines - before.dropped_lines >= 15000);
    /* 64 KiB of burst; the refill, 64 KiB a minute, would need minutes more. */
    assert_true(forwarded >= 60000 && forwarded < 256 * 1024);
}

/* A child that closes its stdin and exits while the host writes to it: the
 * write fails with EPIPE, not a SIGPIPE that ends the host, and the library
 * leaves SIGPIPE's disposition as the program set it (here the default). */
static void test_writing_to_a_child_gone_raises_no_sigpipe(void **state)
{
    (void)state;
    static const char closes_stdin[] = PY_PROLOGUE "os.close(0)\n"
                                                   "send(hello)\n"
                                                   "import time; time.sleep(0.3)\n";
    struct sigaction dfl, now;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    assert_int_equal(sigaction(SIGPIPE, &dfl, NULL), 0);
    ust_plugin_config pc;
    ust_plugin *p = open_script(&pc, closes_stdin, NULL, 10000);
    ust_decision ds[64];
    decide_batch(p, 1, 64, ds);
    for (int i = 0; i < 64; i++) {
        assert_int_equal(ds[i].verdict, UST_VERDICT_ERROR);
        ust_decision_clear(&ds[i]);
    }
    ust_plugin_unload(p);
    assert_int_equal(sigaction(SIGPIPE, NULL, &now), 0);
    assert_true(now.sa_handler == SIG_DFL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, store_setup, store_teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_second_answer_is_a_protocol_error),
        T(test_an_answer_to_another_seq_is_a_protocol_error),
        T(test_a_decision_before_any_event_is_a_protocol_error),
        T(test_a_line_over_the_limit_is_refused),
        T(test_events_answered_before_they_are_read_reach_the_child_whole),
        T(test_a_hello_split_across_reads_starts),
        T(test_restarts_with_split_hellos_never_fail),
        T(test_a_version_1_child_is_refused_at_start),
        T(test_a_hung_candidate_is_down_after_three_timeouts),
        T(test_a_childs_own_processes_die_with_it),
        T(test_secrets_do_not_reach_a_child),
        T(test_an_isolated_plugin_runs_in_a_process_of_its_own),
        T(test_a_flood_on_stderr_is_capped_and_counted),
        T(test_writing_to_a_child_gone_raises_no_sigpipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
