/* A child's decision line as the host takes it (ust__wire_decision_parse):
 * what it accepts is what the line says. The cases came from the fuzz
 * target tests/fuzz/fuzz_decision_line.c; each input is in its corpus. */
#include "support.h"

#include "plugin/wire.h"

#include <understudy/host.h>

static const char *parse(const char *text, ust_decision *d)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    assert_non_null(j);
    const char *bad = ust__wire_decision_parse(j, d);
    json_decref(j);
    return bad;
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
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_status_beyond_int_is_refused_not_wrapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
