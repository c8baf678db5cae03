/* An HTTP answer read as a decision (answer.h): the one reading a service
 * plugin, an in-line legacy and production's recorded answers share. */
#include "support.h"

#include <understudy/answer.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include <string.h>

static void decide(int status, const ust_header *h, size_t nh, const char *body,
                   const ust_verdict_map *map, ust_decision *d)
{
    ust_http_answer a = {status, h, nh, (const unsigned char *)body,
                         body ? strlen(body) : 0};
    assert_int_equal(ust_http_answer_decide(&a, map, d), 0);
}

static void test_the_status_decides_without_understudy_headers(void **state)
{
    (void)state;
    static const struct {
        int status;
        ust_verdict verdict;
    } cases[] = {{200, UST_VERDICT_APPLIED},     {201, UST_VERDICT_APPLIED},
                 {409, UST_VERDICT_IN_PROGRESS}, {422, UST_VERDICT_CONFLICT},
                 {400, UST_VERDICT_INVALID},     {404, UST_VERDICT_INVALID},
                 {500, UST_VERDICT_ERROR},       {503, UST_VERDICT_ERROR}};
    for (size_t i = 0; i < UST_ARRAY_SIZE(cases); i++) {
        ust_decision d;
        decide(cases[i].status, NULL, 0, "{\"b\":1, \"a\":2}", NULL, &d);
        assert_int_equal(d.verdict, cases[i].verdict);
        assert_int_equal(d.http_status, cases[i].status);
        if (cases[i].verdict == UST_VERDICT_ERROR) {
            char want[64];
            snprintf(want, sizeof(want), "the service answered %d", cases[i].status);
            assert_string_equal(d.error, want);
        } else
            assert_string_equal(d.body, "{\"a\":2,\"b\":1}");
        ust_decision_clear(&d);
    }
}

static void test_understudy_headers_make_the_decision_and_are_not_kept(void **state)
{
    (void)state;
    const ust_header h[] = {
        {"Content-Type", "application/json"},
        {"Understudy-Verdict", "duplicate"},
        {"understudy-entity", "stripe:pi_1"},
        {"Understudy-State-Before", "paid"},
        {"Understudy-State", "paid"},
        {"Understudy-Flags", " semantic_duplicate, late ,"},
        {"Understudy-Reason", "seen before"},
        {"Connection", "keep-alive"},
        {"Content-Length", "2"},
        {"Idempotent-Replayed", "true"},
    };
    ust_decision d;
    decide(200, h, UST_ARRAY_SIZE(h), "{}", NULL, &d);
    assert_int_equal(d.verdict, UST_VERDICT_DUPLICATE);
    assert_string_equal(d.entity, "stripe:pi_1");
    assert_string_equal(d.state_before, "paid");
    assert_string_equal(d.state_after, "paid");
    assert_string_equal(d.reason, "seen before");
    assert_int_equal(d.n_flags, 2);
    assert_string_equal(d.flags[0], "late");
    assert_string_equal(d.flags[1], "semantic_duplicate");
    /* Kept: the service's own headers, lower-case; not the framing, not ours. */
    assert_int_equal(json_object_size(d.headers), 2);
    assert_string_equal(json_string_value(json_object_get(d.headers, "content-type")),
                        "application/json");
    assert_string_equal(
        json_string_value(json_object_get(d.headers, "idempotent-replayed")), "true");
    ust_decision_clear(&d);
}

static void test_the_verdicts_map_comes_before_the_defaults(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *v = json_loads("{\"200\":\"duplicate\",\"503\":\"in_progress\"}", 0, &jerr);
    ust_verdict_map map;
    char *err = NULL;
    assert_int_equal(ust_verdict_map_parse(v, "plugins.legacy.verdicts", &map, &err),
                     0);
    json_decref(v);
    ust_decision d;
    decide(200, NULL, 0, NULL, &map, &d);
    assert_int_equal(d.verdict, UST_VERDICT_DUPLICATE);
    assert_null(d.body);
    ust_decision_clear(&d);
    decide(503, NULL, 0, NULL, &map, &d);
    assert_int_equal(d.verdict, UST_VERDICT_IN_PROGRESS);
    ust_decision_clear(&d);
    decide(201, NULL, 0, NULL, &map, &d);
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    ust_decision_clear(&d);
}

static void test_a_wrong_verdicts_map_names_its_entry(void **state)
{
    (void)state;
    static const char *const maps[][2] = {
        {"{\"abc\":\"applied\"}",
         "plugins.legacy.verdicts: \"abc\" is not an HTTP status"},
        {"{\"200\":\"error\"}",
         "plugins.legacy.verdicts.200: not a verdict (applied, "
         "duplicate, rejected, conflict, in_progress or invalid)"},
        {"[1]", "plugins.legacy.verdicts: must be an object of HTTP status to verdict"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(maps); i++) {
        json_error_t jerr;
        json_t *v = json_loads(maps[i][0], 0, &jerr);
        ust_verdict_map map;
        char *err = NULL;
        assert_int_equal(
            ust_verdict_map_parse(v, "plugins.legacy.verdicts", &map, &err),
            UST_ECONFIG);
        assert_string_equal(err, maps[i][1]);
        ust_free(err);
        json_decref(v);
    }
}

static void test_a_body_that_is_not_json_is_kept_as_a_string(void **state)
{
    (void)state;
    ust_decision d;
    decide(200, NULL, 0, "ok \"fine\"", NULL, &d);
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    assert_string_equal(d.body, "\"ok \\\"fine\\\"\"");
    ust_decision_clear(&d);
    ust_http_answer bin = {200, NULL, 0, (const unsigned char *)"\xff\xfe", 2};
    assert_int_equal(ust_http_answer_decide(&bin, NULL, &d), 0);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_string_equal(d.error, "the answer's body is not UTF-8 text");
    ust_decision_clear(&d);
}

static void test_a_malformed_answer_is_an_error_with_its_cause(void **state)
{
    (void)state;
    const ust_header bad_verdict[] = {{"Understudy-Verdict", "maybe"}};
    ust_decision d;
    decide(200, bad_verdict, 1, NULL, NULL, &d);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_string_equal(d.error, "Understudy-Verdict is not a verdict");
    ust_decision_clear(&d);
    const ust_header bad_name[] = {{"Bad Header", "x"}};
    decide(200, bad_name, 1, NULL, NULL, &d);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_string_equal(d.error, "the answer is refused: a response header "
                                 "name is not an HTTP token");
    ust_decision_clear(&d);
    /* What a relay must not pass on is refused, Understudy-* headers too:
     * the one rule --respond upstream relays by. */
    const ust_header bare_cr[] = {{"Understudy-Reason", "foo\rSet-Cookie: a=1"}};
    decide(200, bare_cr, 1, NULL, NULL, &d);
    assert_string_equal(d.error, "the answer is refused: a response header "
                                 "value holds CR or LF");
    ust_decision_clear(&d);
    ust_http_answer odd = {999, NULL, 0, NULL, 0};
    assert_string_equal(ust_http_answer_refusal(&odd), "HTTP status out of range");
    odd.status = 101;
    assert_non_null(ust_http_answer_refusal(&odd));
    odd.status = 503; /* production's own failure: relayed as it came */
    assert_null(ust_http_answer_refusal(&odd));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_status_decides_without_understudy_headers),
        cmocka_unit_test(test_understudy_headers_make_the_decision_and_are_not_kept),
        cmocka_unit_test(test_the_verdicts_map_comes_before_the_defaults),
        cmocka_unit_test(test_a_wrong_verdicts_map_names_its_entry),
        cmocka_unit_test(test_a_body_that_is_not_json_is_kept_as_a_string),
        cmocka_unit_test(test_a_malformed_answer_is_an_error_with_its_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
