/* The event both encodings of a "decide" message are tested with (the JSON
 * line of wire.c, the binary frame of frame.c), and the canonical fields
 * every decoding of it must give back. */
#ifndef UST_TEST_SAMPLE_DECIDE_H
#define UST_TEST_SAMPLE_DECIDE_H

#include "support.h"

#include <understudy/request.h>

#include <string.h>

/* A Stripe refund on a webhook route, with a quote in its id, a negative
 * amount and three headers (one of them not UTF-8); req's body is borrowed
 * from body: set req->body to NULL before ust_request_clear. */
void ust_test_sample_decide(ust_route *route, ust_event *ev, ust_request *req,
                            const char *body, size_t body_len);

/* What a decoding of the sample sent gives back: its canonical fields, and
 * the body byte for byte. */
void ust_test_expect_sample_decide(const ust_event *got, const ust_request *greq,
                                   const ust_event *sent, const ust_request *req);

#endif
