/* One event under review (src/report/event*.c): the diff side by side, the
 * request as it arrived and masked, the entity's story, a semantic
 * duplicate's earlier transaction, and `understudy show`. */
#include "replay_world.h"

#include "report/event.h"
#include "report/event_load.h"
#include "report/redact_line.h"

#include <understudy/report.h>
#include <understudy/run.h>

#define PAID "payment_intent.succeeded"

/* Where want first stands in text; the test fails when it does not. */
static size_t offset_of(const char *text, const char *want)
{
    const char *at = strstr(text, want);
    if (at == NULL)
        fail_msg("missing: %s", want);
    return (size_t)(at - text);
}

/* The run carries the redaction rules of the config it was made with. */
/* Scenario 5 (seq 1-3: paid, refunded, paid again with a new id), a double
 * click (seq 4-5), and an API request without a key (seq 6) whose headers
 * arrive in an order that is not sorted, one of them secret, its body
 * holding an e-mail and an order id the rules mask. */
static void run_world(world *w)
{
    world_scenario_5(w);
    world_double_click(w);
    ust_request *r =
        world_request(w, 8001, "/payments",
                      "{\"order_id\":\"o-secret-9\",\"amount\":5,\"currency\":\"eur\","
                      "\"email\":\"ann@example.com\"}");
    ust_request_add_header(r, "X-Zeta", "first");
    ust_request_add_header(r, "X-Secret", "s3cr3t-token");
    ust_request_add_header(r, "X-Alpha", "second");
    ust_request_add_header(r, "X-Zeta", "third");
    ust_request_add_header(r, "X-Tenant-Id", "t1");
    world_record(w);
    static const char *const rules[] = {"email", "order_id", "x-secret"};
    world_set_redact(w, rules, 3);
    world_replay(w, "legacy", "candidate", NULL);
}

/* The event at seq as the report loads it (the run's rules, its log). */
static void load(world *w, int64_t seq, ust__report_event *e)
{
    ust_run *run = NULL;
    char *err = NULL;
    assert_int_equal(ust_run_open(w->run_path, &run, &err), 0);
    json_t *rules = NULL;
    ust_log *log = NULL;
    assert_int_equal(ust__report_redact_rules(run, &rules, &err), 0);
    assert_int_equal(ust__report_open_log(run, NULL, &log, NULL, &err), 0);
    assert_non_null(log);
    if (ust__report_event_load(run, log, rules, seq, e, &err) != 1)
        fail_msg("load %lld: %s", (long long)seq, err ? err : "no such event");
    json_decref(rules);
    ust_log_close(log);
    ust_run_close(run);
}

/* The event rendered as HTML or text (malloc'd). Not inlined: GCC would
 * take the stream's buffer for a local that dangles. */
__attribute__((noinline)) static char *render(const ust__report_event *e, int html)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (html)
        ust__report_event_html(f, e, 1);
    else
        ust__report_event_text(f, e);
    fclose(f);
    return buf;
}

/* The diff as compare writes it (the same names as "fields"); masked as
 * the loader masks a divergence line, here by hand. */
static void set_diff(ust__report_event *e, const char *json)
{
    json_error_t jerr;
    json_t *diff = json_loads(json, 0, &jerr);
    assert_non_null(diff);
    json_object_set_new(e->divergence, "diff", diff);
}

static const char PAID_AFTER_REFUND_DIFF[] =
    "[{\"field\":\"verdict\",\"legacy\":\"applied\",\"candidate\":\"rejected\"},"
    "{\"field\":\"state\",\"legacy\":\"paid\",\"candidate\":\"refunded\"},"
    "{\"field\":\"header:retry-after\",\"candidate\":\"1\"}]";

static void test_the_diff_shows_both_values_in_one_row(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 3, &e);
    assert_non_null(e.divergence);
    set_diff(&e, PAID_AFTER_REFUND_DIFF);
    char *html = render(&e, 1);
    ust_test_expect_in(html, "<table class=diff>");
    ust_test_expect_in(html,
                       "<tr><th>state</th><td class=legacy><code>&quot;paid&quot;"
                       "</code></td><td class=candidate><code>&quot;refunded&quot;"
                       "</code></td></tr>");
    ust_test_expect_in(html, "<tr><th>header:retry-after</th><td class=legacy><span "
                             "class=absent>(absent)</span></td>");
    /* the full decisions stay, folded */
    ust_test_expect_in(html, "<details><summary>both decisions in full</summary>");
    ust_test_expect_in(html, "id=seq-3 ");
    free(html);
    ust__report_event_clear(&e);
}

static void test_headers_are_listed_in_arrival_order(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 6, &e);
    char *html = render(&e, 1);
    ust_test_expect_in(html, "<table class=headers>");
    size_t first = offset_of(html, "<td><code>first</code>");
    size_t second = offset_of(html, "<td><code>second</code>");
    size_t third = offset_of(html, "<td><code>third</code>");
    assert_true(first < second && second < third);
    ust_test_expect_in(html, "<code>POST /payments</code>");
    /* the derived fields, by their log column */
    ust_test_expect_in(html,
                       "<tr><td><code>signature</code></td><td><code>unsigned</code>");
    ust_test_expect_in(html, "<tr><td><code>tenant</code></td><td><code>t1</code>");
    free(html);
    ust__report_event_clear(&e);
}

static void test_redacted_values_never_appear(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 6, &e);
    set_diff(&e, "[{\"field\":\"body/email\",\"legacy\":\"ann@example.com\"}]");
    /* the loader masks a diff as it reads the line: the same, here */
    json_t *rules = json_pack("[sss]", "email", "order_id", "x-secret");
    ust__report_redact_line(e.divergence, rules);
    char *html = render(&e, 1);
    char *text = render(&e, 0);
    const char *outputs[] = {html, text};
    for (int i = 0; i < 2; i++) {
        ust_test_expect_not_in(outputs[i], "s3cr3t-token");
        ust_test_expect_not_in(outputs[i],
                               "o-secret-9"); /* the body and the derived intent */
        ust_test_expect_in(outputs[i], "[redacted]");
        /* the raw body is withheld whole, saying why */
        ust_test_expect_in(outputs[i], "redaction rules mask a field of it");
    }
    free(html);
    free(text);
    json_decref(rules);
    ust__report_event_clear(&e);
}

static void test_a_diff_value_of_a_masked_member_is_masked(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *line = json_loads(
        "{\"legacy\":{\"body\":{\"card\":{\"number\":\"4242\"},\"email\":\"a@b\"},"
        "\"headers\":{\"x-secret\":\"k\"}},\"candidate\":{\"body\":{}},"
        "\"diff\":[{\"field\":\"body/card/number\",\"legacy\":\"4242\"},"
        "{\"field\":\"body/email\",\"legacy\":\"a@b\"},"
        "{\"field\":\"header:x-secret\",\"legacy\":\"k\"},"
        "{\"field\":\"body/other\",\"legacy\":1}]}",
        0, &jerr);
    assert_non_null(line);
    ust__report_event e;
    memset(&e, 0, sizeof(e));
    e.seq = 1;
    e.divergence = line;
    /* what take_divergence does to each line it reads */
    json_t *rules = json_pack("[sss]", "card", "email", "X-Secret");
    ust__report_redact_line(line, rules);
    char *text = render(&e, 0);
    ust_test_expect_not_in(text, "4242");
    ust_test_expect_not_in(text, "a@b");
    ust_test_expect_not_in(text, "\"k\"");
    ust_test_expect_in(text, "body/other");
    free(text);
    json_decref(rules);
    ust__report_event_clear(&e);
}

static void test_the_story_has_event_ids_and_distinct_headings(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 3, &e);
    char *html = render(&e, 1);
    ust_test_expect_in(html,
                       "<details open><summary>timeline of <code>stripe:pi_1</code>"
                       " (3 events)</summary>");
    ust_test_expect_in(html, "<th>legacy state</th>");
    ust_test_expect_in(html, "<th>candidate state</th>");
    ust_test_expect_in(html, "<td>evt_1</td>");
    ust_test_expect_in(html, "<td>evt_2</td>");
    ust_test_expect_in(html, "<td class=n>4200 eur</td>");
    ust_test_expect_in(html, "<strong>this divergence</strong>");
    free(html);
    ust__report_event_clear(&e);
}

static void test_a_semantic_duplicate_links_the_transaction_it_repeats(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 5, &e);
    assert_int_equal(e.repeats.seq, 4);
    char *html = render(&e, 1);
    ust_test_expect_in(html,
                       "semantic duplicate of <a href=\"#seq-4\"><code>stripe:pi_3"
                       "</code></a> (seq 4");
    free(html);
    ust__report_event_clear(&e);
    /* the first of the two repeats nothing */
    load(w, 4, &e);
    assert_int_equal(e.repeats.seq, 0);
    ust__report_event_clear(&e);
}

static void test_text_escapes_control_characters(void **state)
{
    world *w = *state;
    run_world(w);
    ust__report_event e;
    load(w, 3, &e);
    set_diff(&e, "[{\"field\":\"state\",\"legacy\":\"paid\",\"candidate\":"
                 "\"refunded\"},{\"field\":\"body/note\",\"legacy\":\"\\u001b[2J\","
                 "\"candidate\":\"\\u009b31m\"}]");
    char *text = render(&e, 0);
    ust_test_expect_in(text, "differences:");
    ust_test_expect_in(text, "state");
    ust_test_expect_in(text, "\"paid\"");
    ust_test_expect_in(text, "\"refunded\"");
    ust_test_expect_not_in(text, "\x1b");
    ust_test_expect_not_in(text, "\xc2\x9b");
    ust_test_expect_in(text, "\\u001B[2J"); /* JSON text escapes C0 itself */
    ust_test_expect_in(text, "\\u009b31m");
    free(text);
    ust__report_event_clear(&e);
}

/* The binary: a header holding an escape sequence, a body that is not
 * UTF-8, and a seq the run does not have. */
static void test_show_in_the_terminal(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    ust_request *r = world_request(w, 10, "/payments", "x");
    ust_free(r->body);
    r->body = ust_memdup("\xff\x1b[31mred\x00", 10);
    r->body_len = 10;
    ust_request_add_header(r, "X-Note", "\x1b]0;pwned\x07");
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    char *out = NULL, *args = ust_sprintf("show --run '%s' 2", w->run_path);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 0);
    ust_test_expect_not_in(out, "\x1b");
    ust_test_expect_not_in(out, "\x07");
    ust_test_expect_in(out, "\\x1b]0;pwned\\x07");
    ust_test_expect_in(out, "not UTF-8 text, or holds NUL bytes: its bytes in base64");
    ust_test_expect_in(out, "/xtbMzFtcmVkAA=="); /* base64 of the body */
    free(out);
    ust_free(args);
    args = ust_sprintf("show --run '%s' 99", w->run_path);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 2);
    ust_test_expect_in(out, "has no event at seq 99");
    free(out);
    ust_free(args);
    /* without its log, what the run has, and the request said unavailable */
    args = ust_sprintf("show --run '%s' --log '%s/none.db' 1", w->run_path, w->dir);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 0);
    ust_test_expect_in(out, "request: unavailable");
    ust_test_expect_in(out, "legacy:    applied, state paid");
    ust_test_expect_in(out, "the request is not shown");
    free(out);
    ust_free(args);
}

/* A request recorded with production's answer shows that answer, masked. */
static void test_the_recorded_answer_is_shown_masked(void **state)
{
    world *w = *state;
    world_api(w, 0, "k1", "t1", "o1", 100);
    ust_response resp = {0};
    resp.status = 201;
    ust_header h[] = {{"X-Secret", "answer-secret"},
                      {"Content-Type", "application/json"}};
    resp.headers = h;
    resp.n_headers = 2;
    resp.body =
        (unsigned char *)"{\"payment_id\":\"p1\",\"email\":\"bob@example.com\"}";
    resp.body_len = strlen((const char *)resp.body);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    assert_int_equal(
        ust_log_append_exchanges(log, w->cfg, w->reqs, &resp, 1, NULL, NULL, &err), 0);
    ust_log_close(log);
    static const char *const rules[] = {"email", "x-secret"};
    world_set_redact(w, rules, 2);
    world_replay(w, "legacy", "candidate", NULL);
    ust__report_event e;
    load(w, 1, &e);
    assert_int_equal(e.response_status, 201);
    char *html = render(&e, 1);
    ust_test_expect_in(html, "<h4>recorded answer: 201</h4>");
    ust_test_expect_in(html, "&quot;payment_id&quot;: &quot;p1&quot;");
    ust_test_expect_not_in(html, "answer-secret");
    ust_test_expect_not_in(html, "bob@example.com");
    free(html);
    ust__report_event_clear(&e);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
    const struct CMUnitTest tests[] = {
        T(test_the_diff_shows_both_values_in_one_row),
        T(test_headers_are_listed_in_arrival_order),
        T(test_redacted_values_never_appear),
        cmocka_unit_test(test_a_diff_value_of_a_masked_member_is_masked),
        T(test_the_story_has_event_ids_and_distinct_headings),
        T(test_a_semantic_duplicate_links_the_transaction_it_repeats),
        T(test_text_escapes_control_characters),
        T(test_show_in_the_terminal),
        T(test_the_recorded_answer_is_shown_masked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
