/* Signature headers (src/sig): every scheme's header parsing and verify on
 * the raw bytes. The input is up to three lines and then the body:
 *   line 1  the signature header: every scheme's (Stripe-Signature,
 *           webhook-signature, X-Hub-Signature-256...) gets it
 *   line 2  webhook-id          (standard-webhooks)
 *   line 3  webhook-timestamp   (standard-webhooks)
 *   rest    the body, any bytes
 * A line that is not there is a header that is absent. Every scheme of
 * tests/support/sig_vectors.h is checked, with its row's secret and arrival time
 * (the published vectors'), so the seeds verify and the fuzzer starts on
 * the accepting paths.
 * Invariants: verify never says VERIFIED under a different secret, and what
 * ust_sig_sign writes for the body always verifies. */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/request.h>
#include <understudy/sig.h>

#include "sig_vectors.h"

/* The next line of [*p, end) as a C string (free()), or NULL when there is
 * no newline left: the header is then absent and the rest is the body. */
static char *take_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (nl == NULL)
        return NULL;
    char *line = fuzz_cstr(*p, (size_t)(nl - *p));
    *p = nl + 1;
    return line;
}

static void add(ust_request *r, const char *name, const char *value)
{
    if (value != NULL && ust_request_add_header(r, name, value) != 0)
        abort();
}

static void check_scheme(const sig_vector *s, const ust_request *req)
{
    ust_sig_params p = {.scheme = s->scheme, .secret = s->secret};
    ust_sig_status st = ust_sig_verify(&p, req);
    FUZZ_CHECK(st == UST_SIG_VERIFIED || st == UST_SIG_INVALID ||
               st == UST_SIG_MISSING || st == UST_SIG_EXPIRED);
    /* A signature that checks out under another key was never checked. */
    ust_sig_params other = {.scheme = s->scheme, .secret = s->other_secret};
    ust_sig_status o = ust_sig_verify(&other, req);
    FUZZ_CHECK(o != UST_SIG_VERIFIED && o != UST_SIG_EXPIRED);
    FUZZ_CHECK((st == UST_SIG_MISSING) == (o == UST_SIG_MISSING));

    /* The same body signed by us verifies. */
    ust_request mine = {.received_at_us = req->received_at_us,
                        .body = req->body,
                        .body_len = req->body_len};
    int rc = ust_sig_sign(&p, s->received_at_s, "msg_fuzz", &mine);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(ust_sig_verify(&p, &mine) == UST_SIG_VERIFIED);
    mine.body = NULL; /* borrowed */
    mine.body_len = 0;
    ust_request_clear(&mine);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *sig = take_line(&p, end);
    char *id = sig ? take_line(&p, end) : NULL;
    char *ts = id ? take_line(&p, end) : NULL;
    size_t body_len = (size_t)(end - p);
    const size_t n = UST_ARRAY_SIZE(sig_vectors);
    for (size_t i = 0; i < n; i++) {
        ust_request req = {.received_at_us = sig_vectors[i].received_at_s * 1000000};
        for (size_t k = 0; k < n; k++)
            add(&req, sig_vectors[k].sig_header, sig);
        add(&req, "webhook-id", id);
        add(&req, "webhook-timestamp", ts);
        if (body_len > 0 && (req.body = ust_memdup(p, body_len)) == NULL)
            abort();
        req.body_len = body_len;
        check_scheme(&sig_vectors[i], &req);
        ust_request_clear(&req);
    }
    free(sig);
    free(id);
    free(ts);
    return 0;
}
