/* The sample "decide" event of the wire and frame suites (sample_decide.h). */
#include "sample_decide.h"

void ust_test_sample_decide(ust_route *route, ust_event *ev, ust_request *req,
                            const char *body, size_t body_len)
{
    *route = (ust_route){.path = "/webhooks/stripe", .kind = UST_ROUTE_WEBHOOK};
    *ev = (ust_event){.seq = 7,
                      .received_at_us = 1795946400123456,
                      .route = route,
                      .provider = "stripe",
                      .event_id = "evt_\"1\"",
                      .event_type = "charge.refunded",
                      .transaction_id = "pi_1",
                      .target_status = "refunded",
                      .currency = "eur",
                      .intent = "order_1",
                      .amount = -5,
                      .has_amount = 1};
    memset(ev->request_sha256, 'a', UST_SHA256_HEX_LEN);
    memset(req, 0, sizeof(*req));
    req->body = (unsigned char *)body;
    req->body_len = body_len;
    ust_request_add_header(req, "Content-Type", "application/json");
    ust_request_add_header(req, "X-Odd", "\xff\xfe");
    ust_request_add_header(req, "Stripe-Signature", "t=1,v1=ab\tcd");
}

void ust_test_expect_sample_decide(const ust_event *got, const ust_request *greq,
                                   const ust_event *sent, const ust_request *req)
{
    assert_int_equal(got->seq, 7);
    assert_int_equal(got->received_at_us, sent->received_at_us);
    assert_string_equal(got->route->path, "/webhooks/stripe");
    assert_int_equal(got->route->kind, UST_ROUTE_WEBHOOK);
    ust_test_expect_event(got, "evt_\"1\"", "charge.refunded", "refunded", "order_1",
                          -5);
    assert_null(got->idem_key);
    assert_string_equal(got->request_sha256, sent->request_sha256);
    assert_int_equal(greq->body_len, req->body_len);
    assert_memory_equal(greq->body, req->body, req->body_len);
}
