/* The binary frames between the host and its shim (src/plugin/frame.c),
 * each way: the host's decide frame read back by the shim with every field,
 * the body byte for byte and every header as an in-process plugin sees them;
 * the shim's decision frame taken by the host as the same decision, with
 * its writes. */
#include "sample_decide.h"
#include "support.h"

#include "plugin/frame.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/request.h>

/* The one frame in f: its payload, as a reader gets it (free()). */
static unsigned char *payload_of(const ust__frame_out *f, size_t *n)
{
    uint32_t len = 0;
    assert_int_equal(f->error, 0);
    assert_int_equal(ust__frame_length(f->buf, f->len, &len), 1);
    assert_int_equal(len + UST__FRAME_HEAD, f->len);
    unsigned char *p = malloc((size_t)len + 1);
    assert_non_null(p);
    memcpy(p, f->buf + UST__FRAME_HEAD, len);
    p[len] = '\0';
    *n = len;
    return p;
}

/* An event (and its request, or NULL) through a decide frame and parsed
 * back: got and greq point into p (release them, then free p). */
typedef struct read_back {
    unsigned char *p;
    size_t n;
    ust_event got;
    ust_request greq;
    ust_route groute;
} read_back;

static void decide_and_read_back(const ust_event *ev, const ust_request *req,
                                 read_back *b)
{
    ust__frame_out f = {0};
    ust__frame_decide(&f, ev, req);
    b->n = 0;
    b->p = payload_of(&f, &b->n);
    ust__frame_out_free(&f);
    assert_int_equal(ust__frame_event_parse(b->p, b->n, &b->got, &b->greq, &b->groute),
                     0);
}

static void round_trip(const char *body, size_t body_len)
{
    ust_route route;
    ust_event ev;
    ust_request req;
    ust_test_sample_decide(&route, &ev, &req, body, body_len);
    read_back b;
    decide_and_read_back(&ev, &req, &b);
    ust_event got = b.got;
    ust_request greq = b.greq;
    ust_test_expect_sample_decide(&got, &greq, &ev, &req);
    assert_string_equal(got.provider, "stripe");
    assert_string_equal(got.currency, "eur");
    assert_string_equal(got.transaction_id, "pi_1");
    assert_null(got.tenant);
    assert_int_equal(greq.n_headers, 3); /* the one that is not UTF-8 too */
    assert_string_equal(greq.headers[1].value, "\xff\xfe");
    assert_string_equal(greq.headers[2].value, "t=1,v1=ab\tcd");
    ust__frame_event_release(&got, &greq);
    free(b.p);
    req.body = NULL;
    ust_request_clear(&req);
}

static void test_a_decide_frame_reads_back_whole(void **state)
{
    (void)state;
    static const char json[] = "{\"id\":\"evt_1\",\"note\":\"caf\xc3\xa9\\n\"}";
    static const char binary[] = "\x00\xff binary";
    round_trip(json, sizeof(json) - 1);
    round_trip(binary, sizeof(binary) - 1);
}

/* Without the raw request (the plugin declined it): no body, no headers,
 * the canonical fields all the same, an API route told from a webhook. */
static void test_a_decide_frame_without_the_raw_request(void **state)
{
    (void)state;
    ust_route route = {.path = "/payments", .kind = UST_ROUTE_API};
    ust_event ev = {.seq = 9, .route = &route, .idem_key = "k-1", .tenant = "t"};
    memset(ev.request_sha256, 'b', UST_SHA256_HEX_LEN);
    read_back b;
    decide_and_read_back(&ev, NULL, &b);
    ust_event got = b.got;
    ust_request greq = b.greq;
    assert_int_equal(got.seq, 9);
    assert_int_equal(got.route->kind, UST_ROUTE_API);
    assert_string_equal(got.idem_key, "k-1");
    assert_string_equal(got.tenant, "t");
    assert_int_equal(got.has_amount, 0);
    assert_null(got.provider);
    assert_null(greq.body);
    assert_int_equal(greq.n_headers, 0);
    ust__frame_event_release(&got, &greq);
    /* Cut short by a byte, it is refused rather than read past its end. */
    assert_int_equal(ust__frame_event_parse(b.p, b.n - 1, &got, &greq, &b.groute),
                     UST_EPARSE);
    ust__frame_event_release(&got, &greq);
    free(b.p);
}

/* The shim's decision with its writes, taken by the host: the same
 * decision, the writes in order, a delete as a null value. */
static void test_a_decision_frame_is_taken_with_its_writes(void **state)
{
    (void)state;
    char *flags[] = {"a_flag", "semantic_duplicate"};
    ust_decision d = {.verdict = UST_VERDICT_IN_PROGRESS,
                      .http_status = 409,
                      .state_before = "in_progress",
                      .state_after = "in_progress",
                      .entity = "/payments:t:k",
                      .flags = flags,
                      .n_flags = 2,
                      .body = "{\"error\":\"in_progress\"}",
                      .headers = json_pack("{s:s}", "retry-after", "1"),
                      .reason = "still running"};
    ust__frame_out writes = {0};
    ust__frame_string(&writes, "k");
    ust__frame_string(&writes, "v");
    ust__frame_string(&writes, "gone");
    ust__frame_string(&writes, NULL);
    ust__frame_out f = {0};
    ust__frame_decision(&f, 42, &d, writes.buf, writes.len, 2);
    size_t n = 0;
    unsigned char *p = payload_of(&f, &n);
    ust__line line;
    ust__frame_take(p, n, &line, NULL);
    assert_string_equal(line.bad_frame, "");
    assert_null(line.bad);
    assert_true(line.is_decision && line.has_seq);
    assert_int_equal(line.seq, 42);
    ust_decision *got = &line.decision;
    assert_int_equal(got->verdict, UST_VERDICT_IN_PROGRESS);
    assert_int_equal(got->http_status, 409);
    assert_string_equal(got->state_before, "in_progress");
    assert_string_equal(got->entity, "/payments:t:k");
    assert_int_equal(got->n_flags, 2);
    assert_string_equal(got->flags[1], "semantic_duplicate");
    assert_string_equal(got->body, "{\"error\":\"in_progress\"}");
    assert_true(json_equal(got->headers, d.headers));
    assert_string_equal(got->reason, "still running");
    size_t at = 0;
    const char *k = NULL, *v = NULL;
    assert_int_equal(ust__frame_next_write(&line, &at, &k, &v), 0);
    assert_string_equal(k, "k");
    assert_string_equal(v, "v");
    assert_int_equal(ust__frame_next_write(&line, &at, &k, &v), 0);
    assert_string_equal(k, "gone");
    assert_null(v);
    assert_int_equal(ust__frame_next_write(&line, &at, &k, &v), 1);
    ust__line_clear(&line);
    json_decref(d.headers);
    ust__frame_out_free(&f);
    ust__frame_out_free(&writes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_decide_frame_reads_back_whole),
        cmocka_unit_test(test_a_decide_frame_without_the_raw_request),
        cmocka_unit_test(test_a_decision_frame_is_taken_with_its_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
