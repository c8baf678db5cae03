/* The comparison of two decisions as a divergence line carries it: "diff",
 * each differing field with both sides' values, and "fields", its names;
 * and the masking of those values by the run's redact rules. */
#include "support.h"

#include "report/redact_line.h"

#include <understudy/alloc.h>
#include <understudy/compare.h>
#include <understudy/redact.h>

/* The compact text of v, compared whole: names, values, key order. */
static void expect_json(json_t *v, const char *want)
{
    assert_non_null(v);
    char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (strcmp(got, want) != 0)
        fail_msg("got  %s\nwant %s", got, want);
    ust_free(got);
}

/* The diff of l and c under cfg, checked against want, and "fields" (what
 * ust_compare_decisions says) checked to be its names in its order. */
static void expect_diff(const ust_config *cfg, const ust_decision *l,
                        const ust_decision *c, const char *want)
{
    json_t *diff = ust_compare_diff(cfg, l, c);
    expect_json(diff, want);
    json_t *fields = ust_compare_decisions(cfg, l, c);
    assert_int_equal(json_array_size(fields), json_array_size(diff));
    size_t i;
    json_t *e;
    json_array_foreach(diff, i, e)
    {
        assert_true(json_equal(json_object_get(e, "field"), json_array_get(fields, i)));
    }
    json_decref(fields);
    json_decref(diff);
}

static ust_decision decision(ust_verdict v, int status, char *state)
{
    ust_decision d;
    memset(&d, 0, sizeof(d));
    d.verdict = v;
    d.http_status = status;
    d.state_after = state;
    return d;
}

/* The paid after a refund: the legacy applies it (paid), the candidate
 * refuses it (still refunded); the two states side by side. */
static void test_verdict_and_state_side_by_side(void **state)
{
    (void)state;
    ust_config cfg = {0};
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, "paid");
    ust_decision c = decision(UST_VERDICT_REJECTED, 200, "refunded");
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"verdict\",\"legacy\":\"applied\",\"candidate\":"
                "\"rejected\"},{\"field\":\"state\",\"legacy\":\"paid\","
                "\"candidate\":\"refunded\"}]");
    /* A decision with no state says null: it has a value, none. */
    ust_decision none = decision(UST_VERDICT_REJECTED, 409, NULL);
    expect_diff(&cfg, &l, &none,
                "[{\"field\":\"verdict\",\"legacy\":\"applied\",\"candidate\":"
                "\"rejected\"},{\"field\":\"status\",\"legacy\":200,\"candidate\":409},"
                "{\"field\":\"state\",\"legacy\":\"paid\",\"candidate\":null}]");
    expect_diff(&cfg, &l, &l, "[]");
}

/* Bodies by JSON Pointer, after compare.ignore: the ignored id is not a
 * difference, an ignored member inside a differing value is not shown, a
 * member one side lacks has that side's key left out, a key with '/' or
 * '~' is escaped in the name. */
static void test_body_leaves_after_the_ignore_rules(void **state)
{
    (void)state;
    char *ignore[] = {"/id", "/items/0/id"};
    ust_config cfg = {0};
    cfg.compare_ignore = ignore;
    cfg.n_compare_ignore = 2;
    ust_decision l = decision(UST_VERDICT_APPLIED, 201, "completed");
    ust_decision c = decision(UST_VERDICT_APPLIED, 201, "completed");
    l.body = "{\"a/b~\":1,\"amount\":1000,\"id\":\"pay_1\",\"items\":[{\"id\":\"x\","
             "\"n\":1}],\"meta\":{\"k\":\"v\",\"same\":true}}";
    c.body = "{\"a/b~\":2,\"amount\":1200,\"error\":\"e\",\"id\":\"pay_2\",\"items\":"
             "[{\"id\":\"y\",\"n\":2}],\"meta\":{\"same\":true}}";
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"body/a~1b~0\",\"legacy\":1,\"candidate\":2},"
                "{\"field\":\"body/amount\",\"legacy\":1000,\"candidate\":1200},"
                "{\"field\":\"body/error\",\"candidate\":\"e\"},"
                "{\"field\":\"body/items\",\"legacy\":[{\"n\":1}],\"candidate\":"
                "[{\"n\":2}]},{\"field\":\"body/meta/k\",\"legacy\":\"v\"}]");
}

/* No body on one side: the whole body differs, and only the side that has
 * one shows it. A body that is not JSON is shown as its text. */
static void test_an_absent_body_has_no_value(void **state)
{
    (void)state;
    ust_config cfg = {0};
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, NULL);
    ust_decision c = decision(UST_VERDICT_APPLIED, 200, NULL);
    c.body = "{\"error\":\"x\"}";
    expect_diff(&cfg, &l, &c, "[{\"field\":\"body\",\"candidate\":{\"error\":\"x\"}}]");
    expect_diff(&cfg, &c, &l, "[{\"field\":\"body\",\"legacy\":{\"error\":\"x\"}}]");
    l.body = "not json";
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"body\",\"legacy\":\"not json\",\"candidate\":"
                "\"{\\\"error\\\":\\\"x\\\"}\"}]");
}

/* Headers the config compares, as each decision carries them; a header one
 * decision does not send has no value on that side. */
static void test_headers_side_by_side(void **state)
{
    (void)state;
    char *headers[] = {"Retry-After", "Idempotent-Replayed", "X-Same"};
    ust_config cfg = {0};
    cfg.compare_headers = headers;
    cfg.n_compare_headers = 3;
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, NULL);
    ust_decision c = decision(UST_VERDICT_APPLIED, 200, NULL);
    l.headers = json_pack("{s:s,s:s}", "idempotent-replayed", "false", "x-same", "1");
    c.headers = json_pack("{s:s,s:s,s:s}", "retry-after", "1", "idempotent-replayed",
                          "true", "x-same", "1");
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"header:retry-after\",\"candidate\":\"1\"},"
                "{\"field\":\"header:idempotent-replayed\",\"legacy\":\"false\","
                "\"candidate\":\"true\"}]");
    json_decref(l.headers);
    json_decref(c.headers);
}

static void test_flags_side_by_side(void **state)
{
    (void)state;
    ust_config cfg = {0};
    char *lf[] = {"late"}, *cf[] = {"late", "semantic_duplicate"};
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, "paid");
    ust_decision c = decision(UST_VERDICT_APPLIED, 200, "paid");
    l.flags = lf;
    l.n_flags = 1;
    c.flags = cf;
    c.n_flags = 2;
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"flags\",\"legacy\":[\"late\"],\"candidate\":"
                "[\"late\",\"semantic_duplicate\"]}]");
    l.n_flags = 0;
    expect_diff(&cfg, &l, &c,
                "[{\"field\":\"flags\",\"legacy\":[],\"candidate\":"
                "[\"late\",\"semantic_duplicate\"]}]");
}

/* At most 16 entries once the bodies are walked: the names and the values
 * stop at the same place, since they are one list. */
static void test_the_body_cap_holds_for_names_and_values(void **state)
{
    (void)state;
    ust_config cfg = {0};
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, "paid");
    ust_decision c = decision(UST_VERDICT_REJECTED, 200, "refunded");
    json_t *a = json_object(), *b = json_object();
    for (int i = 0; i < 30; i++) {
        char key[8];
        snprintf(key, sizeof(key), "k%02d", i);
        json_object_set_new(a, key, json_integer(i));
        json_object_set_new(b, key, json_integer(-i - 1));
    }
    l.body = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
    c.body = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *diff = ust_compare_diff(&cfg, &l, &c);
    /* verdict, 15 body leaves (k00..k14), then state after the cap */
    assert_int_equal(json_array_size(diff), 17);
    expect_json(json_array_get(diff, 15),
                "{\"field\":\"body/k14\",\"legacy\":14,\"candidate\":-15}");
    expect_json(json_object_get(json_array_get(diff, 16), "field"), "\"state\"");
    char *text = json_dumps(diff, JSON_COMPACT);
    expect_diff(&cfg, &l, &c, text);
    ust_free(text);
    json_decref(diff);
    ust_free(l.body);
    ust_free(c.body);
    json_decref(a);
    json_decref(b);
}

/* A body path is named whole however long, so the name still says where
 * its value is (and which field names a redact rule sees on the way). */
static void test_a_long_path_is_named_whole(void **state)
{
    (void)state;
    ust_config cfg = {0};
    char key[700];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    ust_decision l = decision(UST_VERDICT_APPLIED, 200, NULL);
    ust_decision c = decision(UST_VERDICT_APPLIED, 200, NULL);
    l.body = ust_sprintf("{\"%s\":{\"email\":\"a@b.c\"}}", key);
    c.body = ust_sprintf("{\"%s\":{\"email\":\"d@e.f\"}}", key);
    json_t *diff = ust_compare_diff(&cfg, &l, &c);
    char *want = ust_sprintf("body/%s/email", key);
    const char *field =
        json_string_value(json_object_get(json_array_get(diff, 0), "field"));
    assert_non_null(field);
    assert_string_equal(field, want);
    json_t *rules = json_pack("[s]", "email");
    assert_int_equal(ust_redact_at(json_object_get(json_array_get(diff, 0), "legacy"),
                                   field + 4, rules),
                     1);
    json_decref(rules);
    ust_free(want);
    json_decref(diff);
    ust_free(l.body);
    ust_free(c.body);
}

/* ---- redaction -------------------------------------------------------- */

/* A value found at a pointer is masked as it would be inside its document:
 * by a pointer rule naming it or what holds it, by a field name on the way
 * to it or inside it. */
static void test_a_value_at_a_pointer_is_masked_as_in_its_document(void **state)
{
    (void)state;
    json_t *rules = json_pack("[s,s,s]", "email", "/card/number", "a/b");
    json_t *v = json_string("x");
    assert_int_equal(ust_redact_at(v, "/customer/email", rules), 1);
    assert_int_equal(ust_redact_at(v, "/card/number", rules), 1);
    assert_int_equal(ust_redact_at(v, "/card/number/last4", rules), 1);
    assert_int_equal(ust_redact_at(v, "/email/x", rules), 1);
    assert_int_equal(ust_redact_at(v, "/a~1b", rules), 1);
    assert_int_equal(ust_redact_at(v, "/card/numbers", rules), 0);
    assert_int_equal(ust_redact_at(v, "/emails", rules), 0);
    assert_int_equal(ust_redact_at(v, "/a/b", rules), 0);
    json_decref(v);
    json_t *card = json_pack("{s:s,s:{s:s}}", "number", "4242", "holder", "email", "e");
    assert_int_equal(ust_redact_at(card, "/card", rules), 0);
    expect_json(card,
                "{\"number\":\"[redacted]\",\"holder\":{\"email\":\"[redacted]\"}}");
    json_decref(card);
    json_t *whole = json_pack("{s:{s:s}}", "card", "number", "4242");
    assert_int_equal(ust_redact_at(whole, "", rules), 0);
    expect_json(whole, "{\"card\":{\"number\":\"[redacted]\"}}");
    json_decref(whole);
    json_decref(rules);
}

/* A divergence line's diff is masked with its decisions: a body value under
 * a redacted field, a redacted header, on both sides; an absent side stays
 * absent; what the rules do not name is left as it is. */
static void test_a_divergence_line_is_masked_whole(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *line = json_loads(
        "{\"seq\":1,\"fields\":[\"header:x-card\",\"body/card\",\"body/email\","
        "\"body/"
        "n\",\"state\"],\"diff\":[{\"field\":\"header:x-card\",\"legacy\":\"42\","
        "\"candidate\":\"43\"},{\"field\":\"body/"
        "card\",\"legacy\":{\"number\":\"4242\","
        "\"exp\":1},\"candidate\":{\"number\":\"4343\",\"exp\":2}},{\"field\":"
        "\"body/email\",\"legacy\":\"a@b.c\"},{\"field\":\"body/n\",\"legacy\":1,"
        "\"candidate\":2},{\"field\":\"state\",\"legacy\":\"paid\",\"candidate\":null}]"
        ","
        "\"legacy\":{\"body\":{\"card\":{\"exp\":1,\"number\":\"4242\"},\"email\":"
        "\"a@b.c\",\"n\":1},\"headers\":{\"x-card\":\"42\"}},\"candidate\":{\"body\":"
        "{\"card\":{\"exp\":2,\"number\":\"4343\"},\"n\":2},\"headers\":{\"x-card\":"
        "\"43\",\"x-other\":\"1\"}}}",
        0, &jerr);
    assert_non_null(line);
    json_t *rules = json_pack("[s,s,s]", "email", "/card/number", "X-Card");
    ust__report_redact_line(line, rules);
    expect_json(json_object_get(line, "diff"),
                "[{\"field\":\"header:x-card\",\"legacy\":\"[redacted]\",\"candidate\":"
                "\"[redacted]\"},{\"field\":\"body/card\",\"legacy\":{\"number\":"
                "\"[redacted]\",\"exp\":1},\"candidate\":{\"number\":\"[redacted]\","
                "\"exp\":2}},{\"field\":\"body/email\",\"legacy\":\"[redacted]\"},"
                "{\"field\":\"body/n\",\"legacy\":1,\"candidate\":2},{\"field\":"
                "\"state\",\"legacy\":\"paid\",\"candidate\":null}]");
    expect_json(json_object_get(line, "legacy"),
                "{\"body\":{\"card\":{\"exp\":1,\"number\":\"[redacted]\"},\"email\":"
                "\"[redacted]\",\"n\":1},\"headers\":{\"x-card\":\"[redacted]\"}}");
    expect_json(json_object_get(json_object_get(line, "candidate"), "headers"),
                "{\"x-card\":\"[redacted]\",\"x-other\":\"1\"}");
    json_decref(rules);
    json_decref(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_and_state_side_by_side),
        cmocka_unit_test(test_body_leaves_after_the_ignore_rules),
        cmocka_unit_test(test_an_absent_body_has_no_value),
        cmocka_unit_test(test_headers_side_by_side),
        cmocka_unit_test(test_flags_side_by_side),
        cmocka_unit_test(test_the_body_cap_holds_for_names_and_values),
        cmocka_unit_test(test_a_long_path_is_named_whole),
        cmocka_unit_test(test_a_value_at_a_pointer_is_masked_as_in_its_document),
        cmocka_unit_test(test_a_divergence_line_is_masked_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
