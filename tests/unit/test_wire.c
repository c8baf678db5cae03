/* The protocol's text: the JSON writer, and a "decide" message written on
 * the host's side read back as the child reads it. */
#include "sample_decide.h"
#include "support.h"

#include "plugin/wire.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/jsonw.h>

#include <string.h>

/* As the child reads a message: NUL bytes allowed in strings. */
static json_t *parsed(const ust_jsonw *w)
{
    json_error_t jerr;
    json_t *j = json_loadb(w->buf, w->len, JSON_ALLOW_NUL, &jerr);
    if (j == NULL)
        fail_msg("not JSON (%s): %s", jerr.text, w->buf);
    return j;
}

static void test_strings_come_back_as_they_were(void **state)
{
    (void)state;
    static const char *const samples[] = {
        "",
        "plain",
        "quote \" backslash \\ slash /",
        "controls \b\f\n\r\t \x01 \x1f end",
        "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x92\xb3",
        "</script><img src=x onerror=alert(1)>",
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(samples); i++) {
        ust_jsonw w = {0};
        ust_jsonw_array(&w);
        ust_jsonw_string(&w, samples[i]);
        ust_jsonw_end_array(&w);
        assert_int_equal(w.error, 0);
        json_t *j = parsed(&w);
        assert_string_equal(json_string_value(json_array_get(j, 0)), samples[i]);
        json_decref(j);
        ust_jsonw_free(&w);
    }
}

static void test_nesting_numbers_and_literals(void **state)
{
    (void)state;
    ust_jsonw w = {0};
    ust_jsonw_object(&w);
    ust_jsonw_key(&w, "min");
    ust_jsonw_int(&w, INT64_MIN);
    ust_jsonw_key(&w, "max");
    ust_jsonw_int(&w, INT64_MAX);
    ust_jsonw_key(&w, "zero");
    ust_jsonw_int(&w, 0);
    ust_jsonw_key(&w, "list");
    ust_jsonw_array(&w);
    ust_jsonw_bool(&w, 1);
    ust_jsonw_bool(&w, 0);
    ust_jsonw_null(&w);
    ust_jsonw_array(&w);
    ust_jsonw_end_array(&w);
    ust_jsonw_object(&w);
    ust_jsonw_end_object(&w);
    ust_jsonw_raw(&w, "{\"a\":[1]}", 9);
    char *const two[] = {"x", "y\""};
    ust_jsonw_strings(&w, two, 2);
    json_t *v = json_pack("{s:i,s:[s]}", "z", 1, "a", "b");
    ust_jsonw_value(&w, v);
    json_decref(v);
    ust_jsonw_end_array(&w);
    ust_jsonw_key(&w, "s");
    ust_jsonw_string(&w, NULL);
    ust_jsonw_end_object(&w);
    json_t *got = parsed(&w);
    json_error_t jerr;
    json_t *want = json_loads(
        "{\"min\":-9223372036854775808,\"max\":9223372036854775807,"
        "\"zero\":0,\"list\":[true,false,null,[],{},{\"a\":[1]},[\"x\",\"y\\\"\"],"
        "{\"z\":1,\"a\":[\"b\"]}],"
        "\"s\":null}",
        0, &jerr);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    /* Reset writes again from the start. */
    ust_jsonw_reset(&w);
    ust_jsonw_int(&w, -42);
    assert_string_equal(w.buf, "-42");
    ust_jsonw_free(&w);
}

static void test_a_string_that_is_not_utf8_is_an_error(void **state)
{
    (void)state;
    ust_jsonw w = {0};
    ust_jsonw_array(&w);
    ust_jsonw_stringn(&w, "a\xff", 2);
    ust_jsonw_end_array(&w);
    assert_int_equal(w.error, UST_EPARSE);
    json_t *j = parsed(&w); /* still JSON: null in its place */
    assert_true(json_is_null(json_array_get(j, 0)));
    json_decref(j);
    ust_jsonw_free(&w);
}

/* Host writes, child reads: every field arrives, the body byte for byte
 * (base64 when it is not UTF-8), a header that is not UTF-8 left out. */
static void round_trip(const char *body, size_t body_len)
{
    ust_route route;
    ust_event ev;
    ust_request req;
    ust_test_sample_decide(&route, &ev, &req, body, body_len);
    ust_jsonw w = {0};
    ust__wire_decide(&w, &ev, &req);
    assert_int_equal(w.error, 0);
    json_t *msg = parsed(&w);
    assert_string_equal(json_string_value(json_object_get(msg, "type")), "decide");
    ust_event got;
    ust_request greq;
    ust_route groute;
    assert_int_equal(
        ust__wire_event_parse(json_object_get(msg, "event"), &got, &greq, &groute), 0);
    ust_test_expect_sample_decide(&got, &greq, &ev, &req);
    assert_int_equal(greq.n_headers, 2);
    assert_string_equal(greq.headers[1].value, "t=1,v1=ab\tcd");
    ust__wire_event_release(&got, &greq);
    json_decref(msg);
    ust_jsonw_free(&w);
    req.body = NULL;
    ust_request_clear(&req);
}

static void test_a_decide_message_reads_back_whole(void **state)
{
    (void)state;
    static const char json[] = "{\"id\":\"evt_1\",\"note\":\"caf\xc3\xa9\\n\"}";
    static const char binary[] = "\x00\xff binary";
    round_trip(json, sizeof(json) - 1);
    round_trip(binary, sizeof(binary) - 1);
    static const char with_nul[] = "a\x00"
                                   "b, UTF-8 with a NUL";
    round_trip(with_nul, sizeof(with_nul) - 1);
}

/* For a plugin that declined the raw request, the message has neither body
 * nor headers, and the child reads the canonical fields all the same. */
static void test_a_decide_message_without_the_raw_request(void **state)
{
    (void)state;
    ust_route route = {.path = "/payments", .kind = UST_ROUTE_API};
    ust_event ev = {.seq = 9, .route = &route, .idem_key = "k-1", .tenant = "t"};
    memset(ev.request_sha256, 'b', UST_SHA256_HEX_LEN);
    ust_jsonw w = {0};
    ust__wire_decide(&w, &ev, NULL);
    assert_int_equal(w.error, 0);
    json_t *msg = parsed(&w);
    json_t *event = json_object_get(msg, "event");
    assert_null(json_object_get(event, "body"));
    assert_null(json_object_get(event, "body_base64"));
    assert_null(json_object_get(event, "headers"));
    ust_event got;
    ust_request greq;
    ust_route groute;
    assert_int_equal(ust__wire_event_parse(event, &got, &greq, &groute), 0);
    assert_int_equal(got.seq, 9);
    assert_int_equal(got.route->kind, UST_ROUTE_API);
    assert_string_equal(got.idem_key, "k-1");
    assert_string_equal(got.request_sha256, ev.request_sha256);
    assert_null(greq.body);
    assert_int_equal(greq.body_len, 0);
    assert_int_equal(greq.n_headers, 0);
    ust__wire_event_release(&got, &greq);
    json_decref(msg);
    ust_jsonw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_come_back_as_they_were),
        cmocka_unit_test(test_nesting_numbers_and_literals),
        cmocka_unit_test(test_a_string_that_is_not_utf8_is_an_error),
        cmocka_unit_test(test_a_decide_message_reads_back_whole),
        cmocka_unit_test(test_a_decide_message_without_the_raw_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
