/* A child's decision line as the host takes it (ust__wire_decision_parse):
 * what it accepts is what the line says. The cases came from the fuzz
 * target tests/fuzz/fuzz_decision_line.c; each input is in its corpus. */
#include "support.h"

#include "plugin/wire.h"

#include <understudy/array.h>
#include <understudy/host.h>

static const char *parse_memo(const char *text, ust_decision *d, ust__body_memo *memo)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    assert_non_null(j);
    const char *bad = ust__wire_decision_parse_memo(j, d, memo);
    json_decref(j);
    return bad;
}

static const char *parse(const char *text, ust_decision *d)
{
    return parse_memo(text, d, NULL);
}

/* A status past INT_MAX used to be cast to int: 2^32 + 200 came out as a
 * 200 decision (corpus: decision_line/status_wraps_int). */
static void test_a_status_beyond_int_is_refused_not_wrapped(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"verdict\":\"applied\",\"status\":4294967496}",
        "{\"verdict\":\"applied\",\"status\":-4294966896}",
        "{\"verdict\":\"applied\",\"status\":9223372036854775807}",
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(lines); i++) {
        ust_decision d;
        const char *bad = parse(lines[i], &d);
        if (bad == NULL)
            fail_msg("%s accepted as status %d", lines[i], d.http_status);
        assert_string_equal(bad, "HTTP status out of range");
        ust_decision_clear(&d);
    }
    ust_decision d;
    assert_null(parse("{\"verdict\":\"applied\",\"status\":599}", &d));
    assert_int_equal(d.http_status, 599);
    ust_decision_clear(&d);
}

/* The body memo is the plugin's own: two plugins' memos, each body seen
 * again after others took its slot, give the body as parsed without one; a
 * body too long to remember, or not JSON, leaves the memo as it was. */
static void test_a_plugins_body_memo_changes_nothing_but_the_time(void **state)
{
    (void)state;
    ust__body_memo a, b, empty;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&empty, 0, sizeof(empty));
    char line[256];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 200; i++) {
            snprintf(line, sizeof(line),
                     "{\"verdict\":\"applied\",\"status\":200,"
                     "\"body_json\":\"{ \\\"z\\\": %d, \\\"a\\\": [1, 2] }\"}",
                     i);
            ust_decision plain, da, db;
            assert_null(parse(line, &plain));
            assert_null(parse_memo(line, &da, &a));
            assert_null(parse_memo(line, &db, i % 2 ? &b : &a));
            assert_string_equal(da.body, plain.body);
            assert_string_equal(db.body, plain.body);
            ust_decision_clear(&plain);
            ust_decision_clear(&da);
            ust_decision_clear(&db);
        }
    }
    char long_line[2048];
    int n = snprintf(long_line, sizeof(long_line),
                     "{\"verdict\":\"applied\",\"status\":200,\"body_json\":\"[0");
    for (int i = 0; i < 300; i++)
        n += snprintf(long_line + n, sizeof(long_line) - (size_t)n, ",1");
    snprintf(long_line + n, sizeof(long_line) - (size_t)n, "]\"}");
    ust_decision d;
    assert_null(parse_memo(long_line, &d, &empty));
    ust_decision_clear(&d);
    assert_string_equal(parse_memo("{\"verdict\":\"applied\",\"status\":200,"
                                   "\"body_json\":\"{not json\"}",
                                   &d, &empty),
                        "response body is not JSON");
    ust_decision_clear(&d);
    for (size_t i = 0; i < UST__BODY_MEMO; i++)
        assert_null(empty.slot[i].text);
    ust__body_memo_free(&a);
    ust__body_memo_free(&b);
    ust__body_memo_free(&empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_status_beyond_int_is_refused_not_wrapped),
        cmocka_unit_test(test_a_plugins_body_memo_changes_nothing_but_the_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
