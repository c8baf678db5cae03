/* Reports, triage and the gate on runs made from the design's scenarios. */
#include "replay_world.h"

#include "http/metrics.h"
#include "report/model.h"
#include "runner/rundb.h"

#include <understudy/report.h>
#include <understudy/run.h>

#include <sys/wait.h>
#include <unistd.h>

#define PAID "payment_intent.succeeded"
#define REFUNDED "charge.refunded"
#define HOSTILE "</script><img src=x onerror=alert(1)>"

/* Scenario 5 twice (two payments), a double click, and API requests whose
 * order id is a hostile payload; one holds an e-mail to redact. */
static void run_story(world *w)
{
    world_scenario_5(w);
    world_stripe(w, 3700, "evt_4", REFUNDED, "pi_1", "o1", 4200);
    world_stripe(w, 3800, "evt_5", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 10, "evt_6", PAID, "pi_2", "o2", 100);
    world_stripe(w, 20, "evt_7", REFUNDED, "pi_2", "o2", 100);
    world_stripe(w, 30, "evt_8", PAID, "pi_2", "o2", 100);
    world_double_click(w);
    world_api(w, 8000, NULL, "t1", HOSTILE, 500);
    ust_request *r =
        world_request(w, 8001, "/payments",
                      "{\"order_id\":\"o9\",\"amount\":5,\"currency\":\"eur\","
                      "\"email\":\"ann@example.com\"}");
    ust_request_add_header(r, "X-Tenant-Id", "t1");
    world_record(w);
    /* the run carries the redact list of the config it was made with */
    static const char *const rules[] = {"email"};
    world_set_redact(w, rules, 1);
    world_replay(w, "legacy", "candidate", NULL);
}

static void write_triage(world *w, const char *text, char path[PATH_MAX])
{
    snprintf(path, PATH_MAX, "%s/triage.json", w->dir);
    ust_test_write_file(path, text);
}

static void report(world *w, const ust_triage *t)
{
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/report", w->dir);
    ust_report_opts o = {
        .run_path = w->run_path, .out_dir = out, .triage = t, .max_examples = 5};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report: %s", err);
}

/* The file name of the report written last, whole (malloc'd). */
static char *report_text(world *w, const char *name)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/report/%s", w->dir, name);
    return ust_test_read_file(path);
}

/* The story replayed and reported: the report's file name (malloc'd). */
static char *story_file(world *w, const char *name)
{
    run_story(w);
    report(w, NULL);
    return report_text(w, name);
}

static void test_summary_counts_are_exact(void **state)
{
    world *w = *state;
    char *md = story_file(w, "summary.md");
    /* 12 events. applied/applied: the first paid and refund of pi_1 and pi_2,
     * and the double click (pi_3, pi_4; the second flagged). applied/rejected:
     * the late paids of pi_1 (twice) and pi_2. applied/duplicate: pi_1's
     * second refund, already refunded for the candidate. applied/invalid: the
     * two API requests without a key. */
    ust_test_expect_in(md, "12 read, 12 decided by both, 0 not fed");
    ust_test_expect_in(md, "| applied | 0 | 6 | 1 | 3 | 0 | 0 | 2 | 0 |");
    ust_test_expect_in(
        md, "| payment_intent.succeeded: applied \xe2\x86\x92 rejected | 3 | 1 |");
    ust_test_expect_in(md,
                       "| charge.refunded: applied \xe2\x86\x92 duplicate | 1 | 1 | "
                       "\\[\"verdict\"\\] |");
    ust_test_expect_in(
        md, "| payment_intent.succeeded: applied \xe2\x86\x92 applied | 1 | 0 |"
            " \\[\"flags\"\\] | **open** |");
    ust_test_expect_in(md, "| /payments: applied \xe2\x86\x92 invalid | 2 | 0 |");
    free(md);
    char *jsonl = report_text(w, "divergences.jsonl");
    size_t lines = 0;
    for (const char *p = jsonl; *p; p++)
        lines += *p == '\n';
    char *count = world_query(w, "SELECT count(*) FROM divergences");
    assert_int_equal(lines, (size_t)atoi(count));
    ust_free(count);
    ust_test_expect_not_in(jsonl, "ann@example.com");
    free(jsonl);
}

static void test_html_escapes_and_redacts(void **state)
{
    world *w = *state;
    char *html = story_file(w, "index.html");
    ust_test_expect_not_in(html, "<img src=x");
    ust_test_expect_not_in(html, "</script><img");
    ust_test_expect_in(html, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
    ust_test_expect_not_in(html, "ann@example.com");
    ust_test_expect_in(html, "[redacted]");
    ust_test_expect_not_in(html, WORLD_STRIPE_SECRET);
    ust_test_expect_in(html, "Content-Security-Policy");
    ust_test_expect_in(html, "<svg id=chart");
    /* The timeline of pi_1 holds its five events, the follow-on marked. */
    ust_test_expect_in(html, "timeline of <code>stripe:pi_1</code> (5 events)");
    ust_test_expect_in(html, "<tr class=follow><td class=n>5</td>");
    free(html);
}

/* The diff's values are masked as the decisions are: a parallel repeat of
 * one key (the legacy's body against the candidate's error, Retry-After
 * compared) under rules naming a body field, a body pointer and that
 * header. What the rules do not name is shown, and an absent side stays
 * absent. */
static void test_the_diff_is_redacted_like_the_bodies(void **state)
{
    world *w = *state;
    world_api(w, 0, "k1", "t1", "o7", 1000);
    world_api(w, 0.2, "k1", "t1", "o7", 1000);
    world_record(w);
    w->cfg->compare_headers = ust_calloc(2, sizeof(char *)); /* NULL-ended */
    w->cfg->compare_headers[0] = ust_strdup("Retry-After");
    w->cfg->n_compare_headers = 1;
    static const char *const rules[] = {"payment_id", "/amount", "Retry-After"};
    w->cfg->redact = ust_calloc(4, sizeof(char *));
    for (size_t i = 0; i < 3; i++)
        w->cfg->redact[i] = ust_strdup(rules[i]);
    w->cfg->n_redact = 3;
    world_replay(w, "legacy", "candidate", NULL);
    char *stored =
        world_query(w, "SELECT json_extract(line, '$.diff') FROM divergences");
    ust_test_expect_in(stored, "\"legacy\":\"pay_2\"");
    ust_test_expect_in(stored,
                       "{\"field\":\"header:retry-after\",\"candidate\":\"1\"}");
    ust_free(stored);
    report(w, NULL);
    char *jsonl = report_text(w, "divergences.jsonl");
    json_error_t jerr;
    json_t *line = json_loads(jsonl, JSON_DISABLE_EOF_CHECK, &jerr);
    assert_non_null(line);
    char *diff = json_dumps(json_object_get(line, "diff"), JSON_COMPACT);
    static const char want[] =
        "[{\"field\":\"verdict\",\"legacy\":\"applied\",\"candidate\":"
        "\"in_progress\"},{\"field\":\"status\",\"legacy\":201,\"candidate\":409},"
        "{\"field\":\"header:retry-after\",\"candidate\":\"[redacted]\"},"
        "{\"field\":\"body/amount\",\"legacy\":\"[redacted]\"},"
        "{\"field\":\"body/currency\",\"legacy\":\"eur\"},"
        "{\"field\":\"body/error\",\"candidate\":\"in_progress\"},"
        "{\"field\":\"body/order_id\",\"legacy\":\"o7\"},"
        "{\"field\":\"body/payment_id\",\"legacy\":\"[redacted]\"},"
        "{\"field\":\"state\",\"legacy\":\"completed\",\"candidate\":"
        "\"in_progress\"}]";
    assert_string_equal(diff, want);
    ust_free(diff);
    json_decref(line);
    ust_test_expect_not_in(jsonl, "pay_2");
    ust_test_expect_not_in(jsonl, "\"retry-after\":\"1\"");
    free(jsonl);
    char *html = report_text(w, "index.html");
    ust_test_expect_not_in(html, "pay_2");
    free(html);
    /* The pages' examples hold the same line, masked the same. */
    ust__report_model m;
    memset(&m, 0, sizeof(m));
    ust_report_opts o = {.run_path = w->run_path, .max_examples = 5};
    char *err = NULL;
    if (ust__report_model_load(&o, &m, &err) != 0)
        fail_msg("model: %s", err);
    assert_int_equal(m.n_classes, 1);
    assert_int_equal(m.classes[0].n_examples, 1);
    char *example = json_dumps(
        json_object_get(m.classes[0].examples[0].divergence, "diff"), JSON_COMPACT);
    assert_string_equal(example, want);
    ust_free(example);
    ust__report_model_clear(&m);
}

static void test_examples_are_capped_and_spread(void **state)
{
    world *w = *state;
    for (int i = 0; i < 8; i++) {
        char key[8];
        snprintf(key, sizeof(key), "o%d", i);
        world_api(w, i, NULL, "t1", key, 100 + i);
    }
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    report(w, NULL);
    char *html = report_text(w, "index.html");
    /* sampled across the span: the nearest to 0, 1.75, 3.5, 5.25 and 7 s */
    ust_test_expect_in(html, "example: seq 1,");
    ust_test_expect_in(html, "example: seq 3,");
    ust_test_expect_in(html, "example: seq 4,");
    ust_test_expect_in(html, "example: seq 6,");
    ust_test_expect_in(html, "example: seq 8,");
    ust_test_expect_not_in(html, "example: seq 2,");
    ust_test_expect_not_in(html, "example: seq 5,");
    ust_test_expect_not_in(html, "example: seq 7,");
    free(html);
    char *jsonl = report_text(w, "divergences.jsonl");
    ust_test_expect_in(jsonl, "\"seq\":8,");
    free(jsonl);
}

static void test_gate_follows_the_triage_file(void **state)
{
    world *w = *state;
    run_story(w);
    char path[PATH_MAX];
    ust_triage *t = NULL;
    char *err = NULL;
    ust_gate_result res;

    assert_int_equal(ust_gate_check(w->run_path, NULL, NULL, &res, &err), 0);
    assert_true(res.open_divergences > 0);
    assert_int_equal(res.open_divergences, res.divergences);
    ust_gate_result_clear(&res);

    write_triage(
        w,
        "{\"accepted\": ["
        "{\"class\": \"payment_intent.succeeded: applied * rejected\","
        " \"reason\": \"candidate rejects paid-after-refunded: this is the fix\","
        " \"owner\": \"payments-team\", \"date\": \"2026-11-29\"},"
        "{\"class\": \"/payments: *\", \"reason\": \"keys are required now\","
        " \"owner\": \"api-team\"}]}",
        path);
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    assert_int_equal(ust_gate_check(w->run_path, NULL, t, &res, &err), 0);
    assert_true(res.open_divergences > 0); /* the flag and the refund classes */
    for (size_t i = 0; i < res.n; i++)
        if (strstr(res.classes[i].class_name, "/payments") ||
            strstr(res.classes[i].class_name,
                   "succeeded: applied \xe2\x86\x92 rejected"))
            assert_non_null(res.classes[i].accepted);
    ust_gate_result_clear(&res);
    ust_triage_free(t);

    write_triage(w,
                 "{\"accepted\": [{\"class\": \"*\", \"reason\": \"all reviewed\","
                 " \"owner\": \"cto\"}]}",
                 path);
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    assert_int_equal(ust_gate_check(w->run_path, NULL, t, &res, &err), 0);
    assert_int_equal(res.open_divergences, 0);
    ust_gate_result_clear(&res);
    ust_triage_free(t);
}

static void expect_triage_error(world *w, const char *text, const char *want)
{
    char path[PATH_MAX];
    write_triage(w, text, path);
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), UST_ECONFIG);
    assert_null(t);
    ust_test_expect_in(err, want);
    ust_free(err);
}

static void test_malformed_triage_names_the_entry(void **state)
{
    world *w = *state;
    expect_triage_error(w,
                        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\","
                        " \"owner\": \"o\", \"expires\": \"2026-13-01\"}]}",
                        "accepted[0].expires: expected YYYY-MM-DD");
    expect_triage_error(w,
                        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\","
                        " \"owner\": \"o\", \"expires\": \"2027-02-29\"}]}",
                        "accepted[0].expires: expected YYYY-MM-DD");
    expect_triage_error(w,
                        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\","
                        " \"owner\": \"o\", \"expires\": 20261231}]}",
                        "accepted[0].expires: expected a non-empty string");
    expect_triage_error(w,
                        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\","
                        " \"owner\": \"o\", \"expiers\": \"2000-01-01\"}]}",
                        "accepted[0]: unknown key \"expiers\"");
    expect_triage_error(
        w,
        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\", \"owner\":"
        " \"o\"}, {\"class\": \"b\", \"owner\": \"o\"}]}",
        "accepted[1].reason: expected a non-empty string");
    expect_triage_error(
        w,
        "{\"accepted\": [{\"class\": \"a\", \"reason\": \"r\", \"owner\":"
        " \"o\", \"date\": \"29/11/2026\"}]}",
        "accepted[0].date: expected YYYY-MM-DD");
    expect_triage_error(w, "{\"accepted\": {}}", "accepted: expected an array");
    expect_triage_error(w, "{\"accepted\": [", "triage.json:1:");
}

static void test_glob(void **state)
{
    (void)state;
    assert_true(ust_glob_match("*", ""));
    assert_true(ust_glob_match("a*c", "abbbc"));
    assert_true(
        ust_glob_match("/payments: *", "/payments: applied \xe2\x86\x92 invalid"));
    assert_false(ust_glob_match("a*c", "abcd"));
    assert_false(ust_glob_match("abc", "ab"));
    assert_true(ust_glob_match("*x*y*", "..x..y.."));
}

/* understudy gate on w's run with a triage file; its exit status, the
 * output in *out. */
static int gate_cli(world *w, const char *triage, const char *extra, char **out)
{
    char path[PATH_MAX], args[PATH_MAX * 3];
    write_triage(w, triage, path);
    snprintf(args, sizeof(args), "gate --run '%s' --triage '%s' %s", w->run_path, path,
             extra ? extra : "");
    return ust_test_run_cli(w->dir, args, out);
}

static char *summary_of(world *w, const ust_triage *t)
{
    report(w, t);
    return report_text(w, "summary.md");
}

#define ACCEPT_ALL                                                                     \
    "{\"accepted\": [{\"class\": \"*\", \"reason\": \"all reviewed\", \"owner\":"      \
    " \"cto\"}]}"

/* The gate refuses the run with reason (exit 1), and the report's verdict
 * line says the same. */
static void expect_refused(world *w, const char *reason)
{
    char *out = NULL;
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 1);
    char *want = ust_sprintf("gate: FAIL: %s\n", reason);
    ust_test_expect_in(out, want);
    ust_test_expect_not_in(out, "PASS");
    ust_free(want);
    free(out);
    char *md = summary_of(w, NULL);
    want = ust_sprintf("**Not ready for cutover**: %s; ", reason);
    ust_test_expect_in(md, want);
    ust_free(want);
    free(md);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/report/index.html", w->dir);
    char *html = ust_test_read_file(path);
    ust_test_expect_in(html,
                       "<strong class=open>not ready for cutover</strong>: the run ");
    free(html);
}

static void test_gate_refuses_a_run_that_never_started(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_record(w);
    char lp[PATH_MAX], cp[PATH_MAX];
    snprintf(lp, sizeof(lp), "%s/no-such-legacy.so", w->dir);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    ust_replay_stats st;
    char *err = NULL;
    assert_int_not_equal(ust_replay(&o, &st, &err), 0);
    ust_free(err);
    /* A start that fails leaves no run database now; one that an older
     * understudy left behind, or a start killed before its plugins said
     * hello, is a run database with its schema and no plugin metadata. */
    assert_int_not_equal(access(w->run_path, F_OK), 0);
    sqlite3 *db = NULL;
    assert_int_equal(ust__rundb_open(w->run_path, &db, &err), 0);
    sqlite3_close(db);
    expect_refused(w, "the run has no plugin metadata (it never started)");
}

static void test_gate_refuses_a_run_of_an_empty_log(void **state)
{
    world *w = *state;
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    expect_refused(w, "the run decided no event");
}

static void test_gate_refuses_a_run_no_event_reached(void **state)
{
    world *w = *state;
    /* Signed long before they arrived: expired, recorded, never fed. */
    world_stripe_signed(w, 1000, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_stripe_signed(w, 1001, 0, "evt_2", PAID, "pi_2", "o2", 4200);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    expect_refused(w,
                   "the run fed no event to the plugins: none of its 2 had a verified "
                   "signature (check the routes' secrets)");
}

static void test_gate_refuses_a_run_short_of_its_log(void **state)
{
    world *w = *state;
    run_story(w);
    char *out = NULL;
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 0);
    ust_test_expect_in(out, "gate: PASS: ");
    free(out);
    /* The log moved: the gate cannot find its head, and says how to fix it. */
    char moved[PATH_MAX], args[PATH_MAX * 2];
    snprintf(moved, sizeof(moved), "%s/moved.db", w->dir);
    assert_int_equal(rename(w->log_path, moved), 0);
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 2);
    ust_test_expect_in(out, "pass --log DB");
    free(out);
    snprintf(args, sizeof(args), "--log '%s'", moved);
    assert_int_equal(gate_cli(w, ACCEPT_ALL, args, &out), 0);
    free(out);
    assert_int_equal(rename(moved, w->log_path), 0);
    /* Events arrived after the run: it has not decided them. */
    world_record(w); /* the same twelve requests again, seq 13..24 */
    expect_refused(w, "the run decided up to seq 12 but the log's head is 24");
    world_replay(w, "legacy", "candidate", NULL);
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 0);
    free(out);
}

/* n payments, one a second, each its own order ("o0", "o1", ...), recorded. */
static void record_payments(world *w, int n)
{
    for (int i = 0; i < n; i++) {
        char key[8];
        snprintf(key, sizeof(key), "o%d", i);
        world_stripe(w, i, key, PAID, key, key, 100);
    }
    world_record(w);
}

static void test_a_legacy_that_errs_needs_a_named_entry(void **state)
{
    world *w = *state;
    record_payments(w, 4);
    /* the legacy errs on every odd seq */
    world_replay(w, "misbehaving_decide_error", "candidate", NULL);
    /* The legacy erred on half the events: nothing of production's was
     * compared there, and "*" must not hide it. */
    char *out = NULL;
    assert_int_equal(
        gate_cli(
            w,
            "{\"accepted\": [{\"class\": \"*\", \"reason\": \"r\", \"owner\": \"o\"}]}",
            NULL, &out),
        1);
    ust_test_expect_in(out, "open             2  " PAID ": error \xe2\x86\x92 applied");
    free(out);
    assert_int_equal(
        gate_cli(w,
                 "{\"accepted\": [{\"class\": \"" PAID
                 ": error \xe2\x86\x92 applied\", \"reason\": \"r\","
                 " \"owner\": \"o\"}, {\"class\": \"*\", \"reason\": \"r\","
                 " \"owner\": \"o\"}]}",
                 NULL, &out),
        0);
    ust_test_expect_in(out, "PASS");
    free(out);
}

static void test_error_divergences_need_a_named_entry(void **state)
{
    world *w = *state;
    record_payments(w, 6);
    /* the candidate errs on every odd seq */
    world_replay(w, "legacy", "misbehaving_decide_error", NULL);
    char *err = NULL;
    const char *cls = PAID ": applied \xe2\x86\x92 error";
    /* A wildcard never accepts the candidate's errors... */
    char *out = NULL;
    assert_int_equal(
        gate_cli(
            w,
            "{\"accepted\": [{\"class\": \"*\", \"reason\": \"r\", \"owner\": \"cto\"},"
            " {\"class\": \"" PAID ": applied \xe2\x86\x92 err*\", \"reason\": \"r\","
            " \"owner\": \"o\"}]}",
            NULL, &out),
        1);
    ust_test_expect_in(out, "open             3  " PAID ": applied \xe2\x86\x92 error");
    ust_test_expect_in(out, "gate: FAIL: 6 divergence(s), 3 open in 1 class(es)");
    /* ...and an entry that accepts nothing is stale. */
    ust_test_expect_in(out,
                       "stale               " PAID ": applied \xe2\x86\x92 err*  (o):"
                       " accepts no class of this run");
    free(out);
    /* An entry naming the error class accepts it; the others are stale. */
    char path[PATH_MAX];
    write_triage(w,
                 "{\"accepted\": [{\"class\": \"" PAID ": applied \xe2\x86\x92 error\","
                 " \"reason\": \"known outage\", \"owner\": \"payments\"},"
                 " {\"class\": \"" PAID ": applied*applied\", \"reason\": \"flag\","
                 " \"owner\": \"o\"},"
                 " {\"class\": \"charge.disputed: *\", \"reason\": \"r\","
                 " \"owner\": \"disputes\"}]}",
                 path);
    ust_triage *t = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    ust_gate_result res;
    assert_int_equal(ust_gate_check(w->run_path, NULL, t, &res, &err), 0);
    assert_null(res.refusal);
    assert_int_equal(res.open_divergences, 0);
    assert_int_equal(res.n_stale, 1);
    assert_string_equal(res.stale[0]->class_glob, "charge.disputed: *");
    assert_string_equal(res.classes[1].class_name, cls);
    assert_ptr_equal(res.classes[1].accepted, &t->entries[0]);
    ust_gate_result_clear(&res);
    char *md = summary_of(w, t);
    ust_test_expect_in(md, "## Stale triage entries");
    ust_test_expect_in(md, "| charge.disputed: * | disputes |");
    free(md);
    ust_triage_free(t);
    /* The exact class may be written with "->": it is read as the arrow,
     * then compared whole. */
    assert_int_equal(
        gate_cli(w,
                 "{\"accepted\": [{\"class\": \"" PAID ": applied -> error\","
                 " \"reason\": \"known outage\", \"owner\": \"payments\"},"
                 " {\"class\": \"*\", \"reason\": \"r\", \"owner\": \"cto\"}]}",
                 NULL, &out),
        0);
    ust_test_expect_in(out, "accepted         3  " PAID
                            ": applied \xe2\x86\x92 error  (payments)");
    free(out);
    /* ...and a '*' in it still accepts none. */
    assert_int_equal(
        gate_cli(w,
                 "{\"accepted\": [{\"class\": \"" PAID ": applied -> err*\","
                 " \"reason\": \"r\", \"owner\": \"o\"},"
                 " {\"class\": \"*\", \"reason\": \"r\", \"owner\": \"cto\"}]}",
                 NULL, &out),
        1);
    ust_test_expect_in(out,
                       "open             3  " PAID ": applied \xe2\x86\x92 error\n");
    free(out);
}

/* An entry past its expires day accepts nothing: its classes are open, and
 * the gate and both reports list it apart from the stale ones. The dates
 * are far from today so the test never depends on it. */
static void test_an_expired_entry_accepts_nothing(void **state)
{
    world *w = *state;
    run_story(w);
    char *out = NULL;
    assert_int_equal(gate_cli(w,
                              "{\"accepted\": [{\"class\": \"*\", \"reason\": \"r\","
                              " \"owner\": \"cto\", \"expires\": \"2999-12-31\"}]}",
                              NULL, &out),
                     0);
    ust_test_expect_in(out, "gate: PASS");
    ust_test_expect_not_in(out, "expired");
    free(out);
    const char *expired = "{\"accepted\": [{\"class\": \"*\", \"reason\": \"r\","
                          " \"owner\": \"cto\", \"expires\": \"2000-01-01\"}]}";
    assert_int_equal(gate_cli(w, expired, NULL, &out), 1);
    ust_test_expect_in(out,
                       "open             3  " PAID ": applied \xe2\x86\x92 rejected"
                       "  (cto's entry expired after 2000-01-01)");
    ust_test_expect_in(out, "expired             *  (cto): expired after 2000-01-01,"
                            " accepts nothing");
    ust_test_expect_in(out,
                       "triage: 1 expired entry: the classes it accepted are open");
    ust_test_expect_not_in(out, "stale");
    ust_test_expect_in(out, "gate: FAIL: ");
    free(out);
    char path[PATH_MAX];
    write_triage(w, expired, path);
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    assert_true(t->entries[0].expired);
    assert_null(ust_triage_match(t, PAID ": applied \xe2\x86\x92 rejected"));
    char *md = summary_of(w, t);
    ust_test_expect_in(md, "**Not ready for cutover**");
    ust_test_expect_in(md, "## Expired triage entries");
    ust_test_expect_in(md, "| * | cto | 2000-01-01 |");
    ust_test_expect_not_in(md, "## Stale triage entries");
    free(md);
    char html_path[PATH_MAX];
    snprintf(html_path, sizeof(html_path), "%s/report/index.html", w->dir);
    char *html = ust_test_read_file(html_path);
    ust_test_expect_in(html, "<li><code>*</code> (cto), expired after 2000-01-01</li>");
    free(html);
    ust_triage_free(t);
}

/* "->" is the arrow of class names, and a named error class may be written
 * with it: the error-class rule compares the pattern as read. */
static void test_an_ascii_arrow_is_the_arrow(void **state)
{
    world *w = *state;
    run_story(w);
    char path[PATH_MAX];
    write_triage(w,
                 "{\"accepted\": [{\"class\": \"" PAID ": applied -> rejected\","
                 " \"reason\": \"r\", \"owner\": \"o\"}]}",
                 path);
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    assert_string_equal(t->entries[0].class_glob,
                        PAID ": applied \xe2\x86\x92 rejected");
    ust_gate_result res;
    assert_int_equal(ust_gate_check(w->run_path, NULL, t, &res, &err), 0);
    int accepted = 0;
    for (size_t i = 0; i < res.n; i++)
        if (strcmp(res.classes[i].class_name, PAID ": applied \xe2\x86\x92 rejected") ==
            0)
            accepted = res.classes[i].accepted == &t->entries[0];
    assert_true(accepted);
    assert_int_equal(res.n_stale, 0);
    ust_gate_result_clear(&res);
    ust_triage_free(t);
}

/* A pattern that matches nothing because its arrow was typed otherwise is
 * told the spelling it meant, by the gate and the reports. */
static void test_a_stale_entry_is_told_the_arrow(void **state)
{
    world *w = *state;
    run_story(w);
    const char *triage =
        "{\"accepted\": [{\"class\": \"" PAID ": applied => rejected\","
        " \"reason\": \"r\", \"owner\": \"o\"},"
        " {\"class\": \"charge.disputed: *\", \"reason\": \"r\", \"owner\": \"d\"}]}";
    char *out = NULL;
    assert_int_equal(gate_cli(w, triage, NULL, &out), 1);
    ust_test_expect_in(out, "stale               " PAID
                            ": applied => rejected  (o): accepts no"
                            " class of this run; did you mean \"" PAID
                            ": applied \xe2\x86\x92 rejected\"?\n");
    /* a class that is gone gets no suggestion */
    ust_test_expect_in(out, "charge.disputed: *  (d): accepts no class of this run\n");
    ust_test_expect_in(out,
                       "triage: 2 stale entries: remove them or correct their class");
    free(out);
    char path[PATH_MAX];
    write_triage(w, triage, path);
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    char *md = summary_of(w, t);
    ust_test_expect_in(md, "| " PAID ": applied =&gt; rejected | o | " PAID
                           ": applied \xe2\x86\x92 rejected |\n");
    ust_test_expect_in(md, "| charge.disputed: * | d |\n");
    free(md);
    char html_path[PATH_MAX];
    snprintf(html_path, sizeof(html_path), "%s/report/index.html", w->dir);
    char *html = ust_test_read_file(html_path);
    ust_test_expect_in(
        html, "<li><code>" PAID ": applied =&gt; rejected</code> (o): did you "
              "mean <code>" PAID ": applied \xe2\x86\x92 rejected</code>?</li>");
    free(html);
    ust_triage_free(t);
}

static void expect_hint(const char *pattern, int classes_have_arrow, const char *want)
{
    char *hint = NULL;
    assert_int_equal(ust_triage_arrow_hint(pattern, classes_have_arrow, &hint), 0);
    if (want == NULL && hint != NULL)
        fail_msg("\"%s\": no hint expected, got \"%s\"", pattern, hint);
    if (want != NULL && (hint == NULL || strcmp(hint, want) != 0))
        fail_msg("\"%s\": expected \"%s\", got \"%s\"", pattern, want,
                 hint ? hint : "(none)");
    ust_free(hint);
}

static void test_arrow_hints(void **state)
{
    (void)state;
    const char *meant = PAID ": applied \xe2\x86\x92 rejected";
    expect_hint(PAID ": applied => rejected", 1, meant);
    expect_hint(PAID ": applied-->rejected", 0, meant);
    expect_hint(PAID ": applied > rejected", 1, meant);
    expect_hint(PAID ": applied\xe2\x86\x92rejected", 1, meant);
    expect_hint(PAID ": applied  \xe2\x86\x92 rejected", 1, meant);
    /* no arrow at all, when the run's classes have one */
    expect_hint(PAID ": applied rejected", 1, meant);
    expect_hint(PAID ": applied, rejected", 0, NULL);
    expect_hint("/payments: * = *", 1, "/payments: * \xe2\x86\x92 *");
    /* spelt right (the class is gone), or not two verdicts */
    expect_hint(meant, 1, NULL);
    expect_hint("charge.disputed: *", 1, NULL);
    expect_hint(PAID ": applied => paid", 1, NULL);
    expect_hint("</script> x", 1, NULL);
}

/* A column that fails at step time from its fourth row on (SQLite's integer
 * overflow): a read error made for real, partway through a result. */
#define FAILING(col)                                                                   \
    "CASE WHEN seq > 3 THEN abs(-9223372036854775807 - 1) ELSE " col " END"

static void test_a_read_error_fails_the_gate_and_the_report(void **state)
{
    world *w = *state;
    run_story(w);
    char *out = NULL;
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 0);
    free(out);
    /* decisions: the gate counts rows (they read fine), the report's
     * timelines read the state columns, which fail. */
    world_exec(w,
               "ALTER TABLE decisions RENAME TO decisions_t;"
               "CREATE VIEW decisions AS SELECT seq, received_at, route, provider,"
               " event_type, entity, signature, fed, diverged, l_verdict, l_status,"
               " l_state_before, " FAILING(
                   "l_state") " AS l_state, l_flags, l_body,"
                              " l_headers, l_reason, l_error, c_verdict, c_status, "
                              "c_state_before,"
                              " c_state, c_flags, c_body, c_headers, c_reason, c_error"
                              " FROM decisions_t;");
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 0);
    free(out);
    char dir[PATH_MAX], args[PATH_MAX * 3];
    snprintf(dir, sizeof(dir), "%s/report", w->dir);
    snprintf(args, sizeof(args), "report --run '%s' --out '%s'", w->run_path, dir);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 2);
    ust_test_expect_in(out, "integer overflow");
    free(out);
    /* divergences: every class past the third row fails to read. */
    world_exec(w, "DROP VIEW decisions; ALTER TABLE decisions_t RENAME TO decisions;"
                  "ALTER TABLE divergences RENAME TO divergences_t;"
                  "CREATE VIEW divergences AS SELECT seq, received_at,"
                  " " FAILING("class") " AS class, fields, entity, follow_on, line"
                                       " FROM divergences_t;");
    assert_int_equal(gate_cli(w, ACCEPT_ALL, NULL, &out), 2);
    ust_test_expect_in(out, "integer overflow");
    ust_test_expect_not_in(out, "PASS");
    free(out);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 2);
    free(out);
}

static void test_a_cursor_that_cannot_be_read_is_not_a_fresh_run(void **state)
{
    world *w = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(w->run_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE VIEW cursor AS SELECT 1 AS id,"
                                  " abs(-9223372036854775807 - 1) AS last_seq",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    int64_t seq = -1;
    char *err = NULL;
    assert_int_equal(ust__rundb_cursor(db, &seq, &err), UST_EDB);
    ust_test_expect_in(err, "cursor: integer overflow");
    ust_free(err);
    err = NULL;
    assert_int_equal(sqlite3_exec(db,
                                  "DROP VIEW cursor; CREATE TABLE cursor(id INTEGER"
                                  " PRIMARY KEY, last_seq INTEGER NOT NULL);"
                                  "INSERT INTO cursor VALUES(1, 'twelve')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(ust__rundb_cursor(db, &seq, &err), UST_EDB);
    ust_test_expect_in(err, "cursor: last_seq is not a number");
    ust_free(err);
    sqlite3_close(db);
    /* A resumed replay refuses it rather than start again from seq 1. */
    ust_test_rmdir(w->run_path);
    run_story(w);
    world_exec(w, "UPDATE cursor SET last_seq = 'twelve'");
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    ust_replay_stats st;
    err = NULL;
    assert_int_equal(ust_replay(&o, &st, &err), UST_EDB);
    ust_test_expect_in(err, "cursor: last_seq is not a number");
    ust_free(err);
}

static void test_reports_escape_markdown_and_bidi(void **state)
{
    world *w = *state;
    /* The class comes from the event type: a CR, an image, a link, and a
     * right-to-left override (U+202E) and isolate (U+2066). */
    const char *type = "pay\\r| x |![x](http://evil.example/t.png)[l](http://e.example)"
                       "\xe2\x80\xae"
                       "fdp.exe\xe2\x81\xa6";
    char *body = ust_sprintf(
        "{\"id\":\"evt_1\",\"type\":\"%s\",\"created\":%lld,\"data\":{\"object\":"
        "{\"id\":\"pi_1\",\"amount\":1,\"currency\":\"eur\",\"metadata\":"
        "{\"order_id\":\"o1\"}}}}",
        type, WORLD_T0);
    ust_request *r = world_request(w, 0, "/webhooks/stripe", body);
    ust_free(body);
    ust_sig_params p = {UST_SCHEME_STRIPE, WORLD_STRIPE_SECRET, NULL, 300};
    assert_int_equal(ust_sig_sign(&p, WORLD_T0, NULL, r), 0);
    world_record(w);
    /* the candidate errs on seq 1: a divergence, whatever its type */
    world_replay(w, "legacy", "misbehaving_decide_error", NULL);
    report(w, NULL);
    char *md = report_text(w, "summary.md");
    ust_test_expect_not_in(md, "\r");
    ust_test_expect_not_in(md, "![");
    ust_test_expect_not_in(md, "\xe2\x80\xae");
    ust_test_expect_not_in(md, "\xe2\x81\xa6");
    ust_test_expect_in(
        md, "| pay \\| x \\|\\!\\[x\\](http://evil.example/t.png)\\[l\\]"
            "(http://e.example){U+202E}fdp.exe{U+2066}: invalid \xe2\x86\x92 error |");
    /* every row of the classes table still has its five cells */
    const char *row = strstr(md, "| pay ");
    assert_non_null(row);
    const char *end = strchr(row, '\n');
    size_t bars = 0;
    for (const char *q = row; q < end; q++)
        bars += *q == '|' && q[-1] != '\\';
    assert_int_equal(bars, 6);
    free(md);
    char *html = report_text(w, "index.html");
    ust_test_expect_not_in(html, "\xe2\x80\xae");
    ust_test_expect_not_in(html, "\xe2\x81\xa6");
    ust_test_expect_in(html, "{U+202E}fdp.exe{U+2066}");
    free(html);
    char *jsonl = report_text(w, "divergences.jsonl");
    ust_test_expect_not_in(jsonl, "\xe2\x80\xae");
    ust_test_expect_not_in(jsonl, "\xe2\x81\xa6");
    ust_test_expect_in(jsonl, "\\u202Efdp.exe\\u2066");
    /* still JSON, with the same text */
    json_error_t jerr;
    json_t *first = json_loadb(jsonl, strcspn(jsonl, "\n"), 0, &jerr);
    assert_non_null(first);
    assert_non_null(strstr(json_string_value(json_object_get(first, "event_type")),
                           "\xe2\x80\xae"
                           "fdp.exe"));
    json_decref(first);
    free(jsonl);
}

static void count_class(void *ctx, const char *cls, int64_t n)
{
    ust__class_counts_add(ctx, cls, n);
}

/* /metrics lists divergences by class as counted from the run database; a
 * read that fails partway says the list is partial. */
static void test_metrics_say_when_the_classes_are_partial(void **state)
{
    world *w = *state;
    run_story(w);
    ust__metrics m;
    memset(&m, 0, sizeof(m));
    ust__metrics_init(&m);
    ust__class_counts classes;
    ust__class_counts_init(&classes);
    ust__metrics_view v = {.cfg = w->cfg, .classes = &classes};
    ust_run_counts *rc = NULL;
    char *err = NULL;
    assert_int_equal(ust_run_counts_open(w->run_path, &rc, &err), 0);
    assert_int_equal(
        ust_run_counts_classes(rc, 0, INT64_MAX, count_class, &classes, &err), 0);
    ust_run_counts_close(rc);
    char *text = ust__metrics_render(&m, &v);
    ust_test_expect_in(text, "understudy_divergences_by_class_complete 1\n");
    ust_free(text);
    world_exec(w, "ALTER TABLE divergences RENAME TO divergences_t;"
                  "CREATE VIEW divergences AS SELECT seq, received_at,"
                  " " FAILING("class") " AS class, fields, entity, follow_on, line"
                                       " FROM divergences_t;");
    assert_int_equal(ust_run_counts_open(w->run_path, &rc, &err), 0);
    assert_true(ust_run_counts_classes(rc, 0, INT64_MAX, count_class, &classes, &err) <
                0);
    assert_non_null(err);
    ust_free(err);
    ust_run_counts_close(rc);
    ust__class_counts_partial(&classes);
    text = ust__metrics_render(&m, &v);
    ust_test_expect_in(text, "understudy_divergences_by_class_complete 0\n");
    ust_free(text);
    ust__class_counts_destroy(&classes);
}

/* The run's readers (run.h): a filter selects by class, seq range and
 * count; a callback's nonzero stops a read and is its result. */
typedef struct seen {
    int64_t seqs[64];
    size_t n;
    int stop_at; /* stop (returning 7) at this many rows; 0: never */
} seen;

static int see_divergence(void *ctx, const ust_run_divergence *d)
{
    seen *s = ctx;
    s->seqs[s->n++] = d->seq;
    return s->stop_at != 0 && (int)s->n == s->stop_at ? 7 : 0;
}

static int see_event(void *ctx, const ust_run_event *e)
{
    seen *s = ctx;
    s->seqs[s->n++] = e->seq;
    assert_string_equal(e->legacy_verdict, "applied");
    return 0;
}

static void test_the_run_reads_what_a_filter_selects(void **state)
{
    world *w = *state;
    run_story(w);
    ust_run *run = NULL;
    char *err = NULL;
    assert_int_equal(ust_run_open(w->run_path, &run, &err), 0);
    ust_run_totals n;
    assert_int_equal(ust_run_sum(run, &n, &err), 0);
    assert_int_equal(n.events, 12);
    seen all = {0};
    ust_run_filter f = {0};
    assert_int_equal(ust_run_divergences(run, &f, see_divergence, &all, &err), 0);
    assert_int_equal((int64_t)all.n, n.divergences);
    assert_true(all.n >= 3);
    seen range = {0};
    f = (ust_run_filter){.from = all.seqs[1], .to = all.seqs[2]};
    assert_int_equal(ust_run_divergences(run, &f, see_divergence, &range, &err), 0);
    assert_int_equal(range.n, 2);
    assert_int_equal(range.seqs[0], all.seqs[1]);
    seen one = {0};
    f = (ust_run_filter){.class_name = "/payments: applied \xe2\x86\x92 invalid",
                         .limit = 1};
    assert_int_equal(ust_run_divergences(run, &f, see_divergence, &one, &err), 0);
    assert_int_equal(one.n, 1);
    seen stopped = {.stop_at = 2};
    f = (ust_run_filter){0};
    assert_int_equal(ust_run_divergences(run, &f, see_divergence, &stopped, &err), 7);
    assert_int_equal(stopped.n, 2);
    seen at = {0};
    assert_int_equal(ust_run_event_at(run, 1, see_event, &at, &err), 1);
    assert_int_equal(ust_run_event_at(run, 1000, see_event, &at, &err), 0);
    assert_int_equal(at.n, 1);
    ust_run_close(run);
}

/* What a tally hears, in the order it hears it. */
typedef struct heard {
    char keys[16][64];
    int64_t counts[16];
    size_t n;
    int64_t pairs;
} heard;

static int hear_key(void *ctx, const char *key, int64_t count)
{
    heard *h = ctx;
    assert_true(h->n < 16);
    snprintf(h->keys[h->n], sizeof(h->keys[0]), "%s", key);
    h->counts[h->n++] = count;
    return 0;
}

static int hear_pair(void *ctx, const char *legacy, const char *candidate,
                     int64_t count)
{
    heard *h = ctx;
    /* The pairs the rows below hold: one not fed (NULL, NULL), twice
     * applied/applied, once applied/invalid. */
    if (legacy == NULL)
        assert_null(candidate);
    else
        assert_string_equal(legacy, "applied");
    h->pairs += count * (legacy == NULL                      ? 1
                         : strcmp(candidate, "applied") == 0 ? 10
                                                             : 100);
    return 0;
}

/* The report's counts of the events come from one read of the decisions:
 * per route and per signature in byte order (as SQLite's ORDER BY gave
 * them), a NULL route as "(unrouted)", the pairs of verdicts with NULL for
 * an event not fed, and the run's totals beside them. */
static void test_a_tally_counts_the_decisions_in_one_read(void **state)
{
    world *w = *state;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/tally.db", w->dir);
    sqlite3 *db = NULL;
    char *err = NULL;
    assert_int_equal(ust__rundb_open(path, &db, &err), 0);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO decisions(seq, received_at, route, signature, fed,"
                     " diverged, l_verdict, c_verdict) VALUES"
                     " (1, 50, '/zeta', 'verified', 1, 0, 'applied', 'applied'),"
                     " (2, 20, NULL, 'missing', 0, 0, NULL, NULL),"
                     " (3, 90, '/alpha', 'verified', 1, 1, 'applied', 'invalid'),"
                     " (4, 70, '/zeta', 'unsigned', 1, 0, 'applied', 'applied');"
                     "INSERT INTO divergences(seq, received_at, class, fields, entity,"
                     " follow_on, line) VALUES (3, 90, 'c', '[]', NULL, 1, '{}');",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    ust_run *run = NULL;
    assert_int_equal(ust_run_open(path, &run, &err), 0);
    /* One ctx for the three: the routes first, then the signatures. */
    heard all = {0};
    ust_run_tally t = {hear_key, hear_key, hear_pair, &all};
    ust_run_totals n;
    assert_int_equal(ust_run_tally_read(run, &n, &t, &err), 0);
    ust_run_close(run);
    assert_int_equal(n.events, 4);
    assert_int_equal(n.fed, 3);
    assert_int_equal(n.first_at, 20);
    assert_int_equal(n.last_at, 90);
    assert_int_equal(n.divergences, 1);
    assert_int_equal(n.follow_ons, 1);
    assert_int_equal(all.n, 6);
    static const char *const keys[] = {"(unrouted)", "/alpha",   "/zeta",
                                       "missing",    "unsigned", "verified"};
    static const int64_t counts[] = {1, 1, 2, 1, 1, 2};
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(all.keys[i], keys[i]);
        assert_int_equal(all.counts[i], counts[i]);
    }
    assert_int_equal(all.pairs, 1 + 2 * 10 + 100);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
    const struct CMUnitTest tests[] = {
        T(test_summary_counts_are_exact),
        T(test_html_escapes_and_redacts),
        T(test_examples_are_capped_and_spread),
        T(test_the_diff_is_redacted_like_the_bodies),
        T(test_gate_follows_the_triage_file),
        T(test_malformed_triage_names_the_entry),
        cmocka_unit_test(test_glob),
        T(test_gate_refuses_a_run_that_never_started),
        T(test_gate_refuses_a_run_of_an_empty_log),
        T(test_gate_refuses_a_run_short_of_its_log),
        T(test_error_divergences_need_a_named_entry),
        T(test_a_legacy_that_errs_needs_a_named_entry),
        T(test_gate_refuses_a_run_no_event_reached),
        T(test_a_read_error_fails_the_gate_and_the_report),
        T(test_a_cursor_that_cannot_be_read_is_not_a_fresh_run),
        T(test_reports_escape_markdown_and_bidi),
        T(test_metrics_say_when_the_classes_are_partial),
        T(test_the_run_reads_what_a_filter_selects),
        T(test_a_tally_counts_the_decisions_in_one_read),
        T(test_an_expired_entry_accepts_nothing),
        T(test_an_ascii_arrow_is_the_arrow),
        T(test_a_stale_entry_is_told_the_arrow),
        cmocka_unit_test(test_arrow_hints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
