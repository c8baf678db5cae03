/* Reports, triage and the gate on runs made from the design's scenarios. */
#include "replay_world.h"

#include <understudy/report.h>

#define PAID "payment_intent.succeeded"
#define REFUNDED "charge.refunded"
#define HOSTILE "</script><img src=x onerror=alert(1)>"

static int setup(void **state)
{
    *state = world_new();
    return 0;
}

static int teardown(void **state)
{
    world_free(*state);
    return 0;
}

static char *read_all(const char *path)
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

static void must_contain(const char *text, const char *want)
{
    if (strstr(text, want) == NULL)
        fail_msg("missing: %s", want);
}

static void must_not_contain(const char *text, const char *bad)
{
    if (strstr(text, bad) != NULL)
        fail_msg("must not contain: %s", bad);
}

/* Scenario 5 twice (two payments), a double click, and API requests whose
 * order id is a hostile payload; one holds an e-mail to redact. */
static void run_story(world *w)
{
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 600, "evt_2", REFUNDED, "pi_1", "o1", 4200);
    world_stripe(w, 3600, "evt_3", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 3700, "evt_4", REFUNDED, "pi_1", "o1", 4200);
    world_stripe(w, 3800, "evt_5", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 10, "evt_6", PAID, "pi_2", "o2", 100);
    world_stripe(w, 20, "evt_7", REFUNDED, "pi_2", "o2", 100);
    world_stripe(w, 30, "evt_8", PAID, "pi_2", "o2", 100);
    world_stripe(w, 7200, "evt_9", PAID, "pi_3", "o3", 1500);
    world_stripe(w, 7203, "evt_10", PAID, "pi_4", "o3", 1500);
    world_api(w, 8000, NULL, "t1", HOSTILE, 500);
    ust_request *r =
        world_request(w, 8001, "/payments",
                      "{\"order_id\":\"o9\",\"amount\":5,\"currency\":\"eur\","
                      "\"email\":\"ann@example.com\"}");
    ust_request_add_header(r, "X-Tenant-Id", "t1");
    world_record(w);
    /* the run carries the redact list of the config it was made with */
    json_t *redact = json_pack("[s]", "email");
    json_object_set_new(w->cfg->root, "redact", redact);
    w->cfg->redact = ust_calloc(2, sizeof(char *));
    w->cfg->redact[0] = ust_strdup("email");
    w->cfg->n_redact = 1;
    world_replay(w, "legacy", "candidate", NULL);
}

static void write_triage(world *w, const char *text, char path[PATH_MAX])
{
    snprintf(path, PATH_MAX, "%s/triage.json", w->dir);
    ust_test_write_file(path, text);
}

static void report(world *w, const ust_triage *t, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/report", w->dir);
    ust_report_opts o = {.run_path = w->run_path,
                         .out_dir = out,
                         .triage = t,
                         .max_examples = 5,
                         .max_timelines = 10};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report: %s", err);
}

static void test_summary_counts_are_exact(void **state)
{
    world *w = *state;
    run_story(w);
    char out[PATH_MAX], path[PATH_MAX];
    report(w, NULL, out);
    snprintf(path, sizeof(path), "%s/summary.md", out);
    char *md = read_all(path);
    /* 12 events. applied/applied: the first paid and refund of pi_1 and pi_2,
     * and the double click (pi_3, pi_4; the second flagged). applied/rejected:
     * the late paids of pi_1 (twice) and pi_2. applied/duplicate: pi_1's
     * second refund, already refunded for the candidate. applied/invalid: the
     * two API requests without a key. */
    must_contain(md, "12 read, 12 decided by both, 0 not fed");
    must_contain(md, "| applied | 0 | 6 | 1 | 3 | 0 | 0 | 2 | 0 |");
    must_contain(md,
                 "| payment_intent.succeeded: applied \xe2\x86\x92 rejected | 3 | 1 |");
    must_contain(
        md,
        "| charge.refunded: applied \xe2\x86\x92 duplicate | 1 | 1 | [\"verdict\"] |");
    must_contain(md,
                 "| payment_intent.succeeded: applied \xe2\x86\x92 applied | 1 | 0 |"
                 " [\"flags\"] | **open** |");
    must_contain(md, "| /payments: applied \xe2\x86\x92 invalid | 2 | 0 |");
    free(md);
    snprintf(path, sizeof(path), "%s/divergences.jsonl", out);
    char *jsonl = read_all(path);
    size_t lines = 0;
    for (const char *p = jsonl; *p; p++)
        lines += *p == '\n';
    char *count = world_query(w, "SELECT count(*) FROM divergences");
    assert_int_equal(lines, (size_t)atoi(count));
    ust_free(count);
    must_not_contain(jsonl, "ann@example.com");
    free(jsonl);
}

static void test_html_escapes_and_redacts(void **state)
{
    world *w = *state;
    run_story(w);
    char out[PATH_MAX], path[PATH_MAX];
    report(w, NULL, out);
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = read_all(path);
    must_not_contain(html, "<img src=x");
    must_not_contain(html, "</script><img");
    must_contain(html, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
    must_not_contain(html, "ann@example.com");
    must_contain(html, "[redacted]");
    must_not_contain(html, WORLD_STRIPE_SECRET);
    must_contain(html, "Content-Security-Policy");
    must_contain(html, "<svg id=chart");
    /* The timeline of pi_1 holds its five events, the follow-on marked. */
    must_contain(html, "timeline of <code>stripe:pi_1</code> (5 events)");
    must_contain(html, "<tr class=follow><td class=n>5</td>");
    free(html);
}

static void test_examples_are_capped_and_in_order(void **state)
{
    world *w = *state;
    for (int i = 0; i < 8; i++) {
        char key[8];
        snprintf(key, sizeof(key), "o%d", i);
        world_api(w, i, NULL, "t1", key, 100 + i);
    }
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    char out[PATH_MAX], path[PATH_MAX];
    report(w, NULL, out);
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = read_all(path);
    must_contain(html, "example: seq 1,");
    must_contain(html, "example: seq 5,");
    must_not_contain(html, "example: seq 6,");
    free(html);
    snprintf(path, sizeof(path), "%s/divergences.jsonl", out);
    char *jsonl = read_all(path);
    must_contain(jsonl, "\"seq\":8,");
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

    assert_int_equal(ust_gate_check(w->run_path, NULL, &res, &err), 0);
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
    assert_int_equal(ust_gate_check(w->run_path, t, &res, &err), 0);
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
    assert_int_equal(ust_gate_check(w->run_path, t, &res, &err), 0);
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
    if (err == NULL || strstr(err, want) == NULL)
        fail_msg("message \"%s\" should say \"%s\"", err ? err : "", want);
    ust_free(err);
}

static void test_malformed_triage_names_the_entry(void **state)
{
    world *w = *state;
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

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_summary_counts_are_exact),         T(test_html_escapes_and_redacts),
        T(test_examples_are_capped_and_in_order), T(test_gate_follows_the_triage_file),
        T(test_malformed_triage_names_the_entry), cmocka_unit_test(test_glob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
