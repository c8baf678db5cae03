/* The binary frames between the host and its shim, attacked on purpose: a
 * stand-in for the shim (a Python program, named by UST_PLUGIN_SHIM as a
 * test names understudy's) says hello as the shim does, answers in frames,
 * and on event 2 writes a frame that is cut short, over the size limit,
 * malformed inside, for another seq, or a decision the in-process checks
 * refuse. Each takes the child down with its reason, charged to event 2,
 * and the restarted child answers event 3. */
#include "store_world.h" /* store_setup, store_teardown */

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include <sys/stat.h>

/* FRAME_MODE (the environment) says what it does on event 2. A decision
 * frame: seq, verdict, status, state_before, state_after, entity, flags,
 * body, headers, reason, writes (src/plugin/frame.c). */
static const char fake_shim[] =
    "#!/usr/bin/env python3\n"
    "import json, os, struct, sys\n"
    "mode = os.environ.get('FRAME_MODE', '')\n"
    "inp, out = sys.stdin.buffer, sys.stdout.buffer\n"
    "init = json.loads(inp.readline())\n"
    "hello = {'type': 'hello', 'protocol': init['protocol'], 'name': 'fake-shim',\n"
    "         'version': '0', 'pipeline': True}\n"
    "if mode != 'json_hello': hello['framing'] = init.get('framing')\n"
    "NULL = struct.pack('<I', 0xffffffff)\n"
    "def s(b): return struct.pack('<I', len(b)) + b + b'\\0'\n"
    "def frame(t, body):\n"
    "    p = t + body\n"
    "    return struct.pack('<I', len(p)) + p\n"
    "def decision(seq, status=200, writes=()):\n"
    "    d = struct.pack('<qii', seq, 1, status) + NULL * 3 + struct.pack('<I', 0)\n"
    "    d += s(b'{\"seq\":%d}' % seq) + struct.pack('<I', 0) + NULL\n"
    "    d += struct.pack('<I', len(writes))\n"
    "    for k, v in writes: d += s(k) + s(v)\n"
    "    return frame(b'd', d)\n"
    "early = decision(1) if mode == 'early' else b''\n"
    "out.write((json.dumps(hello) + '\\n').encode() + early); out.flush()\n"
    "while True:\n"
    "    h = inp.read(4)\n"
    "    if len(h) < 4: break\n"
    "    p = inp.read(struct.unpack('<I', h)[0])\n"
    "    seq = struct.unpack('<q', p[1:9])[0]\n"
    "    a = decision(seq)\n"
    "    if seq == 2:\n"
    "        if mode == 'cut_short': out.write(a[:-5]); out.flush(); sys.exit(0)\n"
    "        if mode == 'oversize': a = struct.pack('<I', (4 << 20) + 1) + b'd' * 64\n"
    "        if mode == 'inner': a = frame(b'd', struct.pack('<qi', seq, 1))\n"
    "        if mode == 'string': a = a[:-8] + struct.pack('<I', 1000) + a[-4:]\n"
    "        if mode == 'trailing': a = frame(a[4:5], a[5:] + b'x')\n"
    "        if mode == 'unknown': a = frame(b'z', b'')\n"
    "        if mode == 'not_text':\n"
    "            a = frame(b'e', b'\\x01' + struct.pack('<q', seq) + s(b'\\xff'))\n"
    "        if mode == 'wrong_seq': a = decision(99)\n"
    "        if mode == 'interim': a = decision(seq, status=150)\n"
    "        if mode == 'writes': a = decision(seq, writes=[(b'k', b'v')])\n"
    "    out.write(a); out.flush()\n";

static char dir[PATH_MAX], script[PATH_MAX];

static int setup(void **state)
{
    store_setup(state);
    ust_test_tmpdir(dir);
    snprintf(script, sizeof(script), "%s/fake-shim", dir);
    ust_test_write_file(script, fake_shim);
    assert_int_equal(chmod(script, 0755), 0);
    return 0;
}

static int teardown(void **state)
{
    ust_test_rmdir(dir);
    return store_teardown(state);
}

/* An isolated .so (any file: the stand-in does not load it) whose shim is
 * the stand-in, in that mode. */
static int open_fake(const char *mode, ust_plugin_config *pc, ust_plugin **p,
                     char **err)
{
    char so[PATH_MAX], *shim = getenv("UST_PLUGIN_SHIM");
    char *saved = ust_strdup(shim);
    ust_test_plugin_path("candidate", so);
    setenv("UST_PLUGIN_SHIM", script, 1);
    setenv("FRAME_MODE", mode, 1);
    memset(pc, 0, sizeof(*pc));
    pc->isolate = 1;
    pc->timeout_ms = 10000;
    int rc = ust_plugin_open(pc, so, "candidate", 0, store, p, err);
    if (saved != NULL)
        setenv("UST_PLUGIN_SHIM", saved, 1);
    ust_free(saved);
    return rc;
}

static void expect_answer_to(ust_plugin *p, int64_t seq)
{
    ust_decision d;
    ust_test_decide_seq(p, seq, &d);
    char want[32];
    snprintf(want, sizeof(want), "{\"seq\":%lld}", (long long)seq);
    if (d.verdict != UST_VERDICT_APPLIED || d.body == NULL || strcmp(d.body, want) != 0)
        fail_msg("event %lld: expected the answer %s, got %s %s (%s)", (long long)seq,
                 want, ust_verdict_name(d.verdict), d.body ? d.body : "",
                 d.error ? d.error : "");
    ust_decision_clear(&d);
}

/* Event 1 answered, event 2 an error with cause, event 3 answered by the
 * child started again. */
static void expect_event_2_fails(const char *mode, const char *cause)
{
    ust_plugin_config pc;
    ust_plugin *p = NULL;
    char *err = NULL;
    if (open_fake(mode, &pc, &p, &err) != 0)
        fail_msg("open: %s", err);
    if (strcmp(mode, "early") != 0)
        expect_answer_to(p, 1);
    ust_decision d;
    ust_test_decide_seq(p, strcmp(mode, "early") != 0 ? 2 : 1, &d);
    if (d.verdict != UST_VERDICT_ERROR || d.error == NULL ||
        strstr(d.error, cause) == NULL)
        fail_msg("%s: expected an error saying \"%s\", got %s (%s)", mode, cause,
                 ust_verdict_name(d.verdict), d.error ? d.error : "no error");
    ust_decision_clear(&d);
    if (strcmp(mode, "early") != 0) /* a fresh child writes early again */
        expect_answer_to(p, 3);
    ust_plugin_unload(p);
}

static void test_a_frame_cut_short_takes_the_child_down(void **state)
{
    (void)state;
    expect_event_2_fails("cut_short", "exited with status 0 (its output ended inside"
                                      " a frame (");
}

static void test_a_frame_over_the_limit_takes_the_child_down(void **state)
{
    (void)state;
    expect_event_2_fails("oversize", "protocol error: bad frame: a frame of 4194305"
                                     " bytes, over the limit of 4194304");
}

static void test_a_malformed_frame_takes_the_child_down(void **state)
{
    (void)state;
    expect_event_2_fails("inner",
                         "protocol error: bad frame: a field runs past the end of its"
                         " frame");
    expect_event_2_fails("string", "protocol error: bad frame: a string runs past the"
                                   " end of its frame");
    expect_event_2_fails("trailing", "protocol error: bad frame: bytes after the end of"
                                     " its message");
    expect_event_2_fails("unknown",
                         "protocol error: bad frame: a frame of unknown type 0x7a");
    expect_event_2_fails("not_text",
                         "protocol error: bad frame: a string is not valid UTF-8");
}

static void test_a_frame_for_another_seq_takes_the_child_down(void **state)
{
    (void)state;
    expect_event_2_fails("wrong_seq",
                         "protocol error: an answer to seq 99 while seq 2 was asked");
    expect_event_2_fails("early",
                         "protocol error: a decision line before any event was sent");
}

/* The checks of an in-process plugin's answer, the same for a frame's. */
static void test_a_framed_decision_is_checked_as_in_process(void **state)
{
    (void)state;
    expect_event_2_fails("interim",
                         "bad decision: a 1xx status is interim, not an answer");
}

/* A decision's writes are staged with it, and kept when it is. */
static void test_a_framed_decisions_writes_are_kept(void **state)
{
    (void)state;
    ust_plugin_config pc;
    ust_plugin *p = NULL;
    char *err = NULL;
    if (open_fake("writes", &pc, &p, &err) != 0)
        fail_msg("open: %s", err);
    expect_answer_to(p, 1);
    expect_answer_to(p, 2);
    ust_plugin_unload(p);
    ust_store_begin_call(store, "candidate");
    const char *v = NULL;
    assert_int_equal(ust_store_get(store, "k", &v), 1);
    assert_string_equal(v, "v");
    ust_store_end_call(store, 0);
}

/* The host speaks frames only to a shim that takes them at its hello. */
static void test_a_shim_that_does_not_take_frames_is_refused(void **state)
{
    (void)state;
    ust_plugin_config pc;
    ust_plugin *p = NULL;
    char *err = NULL;
    assert_int_equal(open_fake("json_hello", &pc, &p, &err), UST_EPLUGIN);
    assert_null(p);
    if (strstr(err, "did not take the binary framing") == NULL)
        fail_msg("message \"%s\" should say the shim did not take the frames", err);
    ust_free(err);
}

/* What the plugin's stderr lines came to (the counters' sink). */
static char said[4096];

static void sink(const char *text, size_t len, void *data)
{
    (void)data;
    size_t have = strlen(said);
    if (have + len < sizeof(said))
        memcpy(said + have, text, len);
}

static void expect_says_the_limit(const ust_decision *d, const char *size)
{
    static const char *const words[] = {"over the limit of 4194304 bytes (4 MiB)",
                                        "\"isolate\": false", "limits.max_body_bytes"};
    if (d->verdict != UST_VERDICT_ERROR || d->error == NULL)
        fail_msg("expected an error, got %s", ust_verdict_name(d->verdict));
    for (size_t i = 0; i < UST_ARRAY_SIZE(words); i++)
        if (strstr(d->error, words[i]) == NULL)
            fail_msg("the error should say \"%s\": %s", words[i], d->error);
    if (strstr(d->error, size) == NULL)
        fail_msg("the error should give the event's size (%s): %s", size, d->error);
}

/* An event whose frame is over the limit (4 MiB) given to a real isolated
 * .so (understudy's shim, the reference candidate): it was sent, the shim
 * could not read it and ended, "exited with status 0". Now it is not sent:
 * its decision names the limit, the event's size and what to do, so does a
 * line on stderr, and the child, never restarted, decides the events around
 * it, in a batch sent ahead and one by one. */
static void test_an_event_over_the_frame_limit_says_the_limit(void **state)
{
    (void)state;
    said[0] = '\0';
    ust_plugin_counters *counters = ust_plugin_counters_new(sink, NULL);
    assert_non_null(counters);
    char so[PATH_MAX], *err = NULL;
    ust_test_plugin_path("candidate", so);
    ust_plugin_config pc;
    memset(&pc, 0, sizeof(pc));
    pc.isolate = 1;
    pc.timeout_ms = 10000;
    pc.counters = counters;
    ust_plugin *p = NULL;
    if (ust_plugin_open(&pc, so, "candidate", 0, store, &p, &err) != 0)
        fail_msg("open: %s", err);
    enum { BIG = 5 << 20 };
    char *big = malloc(BIG + 1);
    assert_non_null(big);
    memset(big, 'x', BIG);
    big[BIG] = '\0';
    ust_event evs[3];
    ust_request reqs[3];
    const ust_event *ev_ptrs[3];
    const ust_request *req_ptrs[3];
    ust_decision ds[3], *outs[3];
    memset(evs, 0, sizeof(evs));
    memset(reqs, 0, sizeof(reqs));
    for (int i = 0; i < 3; i++) {
        evs[i].seq = i + 1;
        ev_ptrs[i] = &evs[i];
        req_ptrs[i] = &reqs[i];
        outs[i] = &ds[i];
    }
    evs[1].provider = big;
    ust_plugin_decide_batch(p, ev_ptrs, req_ptrs, 3, outs);
    expect_says_the_limit(&ds[1], "the event is 5242");
    for (int i = 0; i < 3; i++) {
        if (i != 1 && ds[i].error != NULL && strstr(ds[i].error, "limit") != NULL)
            fail_msg("event %d: %s", i + 1, ds[i].error);
        ust_decision_clear(&ds[i]);
    }
    evs[1].seq = 4; /* alone now */
    ust_decision d;
    ust_plugin_decide(p, &evs[1], &reqs[1], &d);
    expect_says_the_limit(&d, "the event is 5242");
    ust_decision_clear(&d);
    free(big);
    ust_plugin_unload(p);
    ust_plugin_fault_stats st;
    ust_plugin_fault_stats_get(counters, &st);
    ust_plugin_counters_free(counters);
    assert_int_equal(st.restarts[1], 0);
    assert_int_equal(st.errors[1][UST_FAULT_EXIT], 0);
    assert_int_equal(st.errors[1][UST_FAULT_CRASH], 0);
    assert_int_equal(st.errors[1][UST_FAULT_PROTOCOL], 2);
    if (strstr(said, "understudy: candidate[") == NULL ||
        strstr(said, "]: seq 2: the event is 5242") == NULL ||
        strstr(said, "]: seq 4: the event is 5242") == NULL)
        fail_msg("stderr should say it for seq 2 and 4: %s", said);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_frame_cut_short_takes_the_child_down),
        T(test_a_frame_over_the_limit_takes_the_child_down),
        T(test_a_malformed_frame_takes_the_child_down),
        T(test_a_frame_for_another_seq_takes_the_child_down),
        T(test_a_framed_decision_is_checked_as_in_process),
        T(test_a_framed_decisions_writes_are_kept),
        T(test_a_shim_that_does_not_take_frames_is_refused),
        T(test_an_event_over_the_frame_limit_says_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
