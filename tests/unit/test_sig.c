#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/request.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"
#include "sig_vectors.h"
#include "support.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WRONG_HEX "0000000000000000000000000000000000000000000000000000000000000000"

static ust_request make_req(const void *body, size_t len, int64_t received_s)
{
    ust_request r;
    memset(&r, 0, sizeof(r));
    r.received_at_us = received_s * 1000000;
    if (len > 0) {
        r.body = ust_memdup(body, len);
        assert_non_null(r.body);
        r.body_len = len;
    }
    return r;
}

static void add(ust_request *r, const char *name, const char *value)
{
    assert_int_equal(ust_request_add_header(r, name, value), 0);
}

static void set_header(ust_request *r, const char *name, const char *value)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcasecmp(r->headers[i].name, name) == 0) {
            ust_free(r->headers[i].value);
            r->headers[i].value = ust_strdup(value);
            assert_non_null(r->headers[i].value);
            return;
        }
    }
    fail_msg("no header %s", name);
}

static ust_sig_params params(ust_sig_scheme scheme, const char *secret)
{
    ust_sig_params p = {scheme, secret, NULL, 0};
    return p;
}

/* Verifies r under p, expects want, and clears r. */
static void expect(const ust_sig_params *p, ust_request r, ust_sig_status want)
{
    assert_int_equal(ust_sig_verify(p, &r), want);
    ust_request_clear(&r);
}

/* body received at ts and signed by p at ts (with id, where the scheme has
 * one), its n_headers headers counted; the caller clears it. */
static ust_request signed_req(const ust_sig_params *p, const char *body, int64_t ts,
                              const char *id, size_t n_headers)
{
    ust_request r = make_req(body, strlen(body), ts);
    assert_int_equal(ust_sig_sign(p, ts, id, &r), 0);
    assert_int_equal(r.n_headers, n_headers);
    return r;
}

#define N_SCHEMES UST_ARRAY_SIZE(sig_vectors)

/* ---- names ---------------------------------------------------------------- */

static void test_names_round_trip(void **state)
{
    (void)state;
    const ust_sig_status statuses[] = {UST_SIG_UNSIGNED, UST_SIG_VERIFIED,
                                       UST_SIG_INVALID, UST_SIG_MISSING,
                                       UST_SIG_EXPIRED};
    const char *snames[] = {"unsigned", "verified", "invalid", "missing", "expired"};
    for (size_t i = 0; i < 5; i++) {
        ust_sig_status s;
        assert_string_equal(ust_sig_status_name(statuses[i]), snames[i]);
        assert_int_equal(ust_sig_status_parse(snames[i], &s), 0);
        assert_int_equal(s, statuses[i]);
    }
    ust_sig_scheme s;
    assert_string_equal(ust_sig_scheme_name(UST_SCHEME_NONE), "none");
    assert_int_equal(ust_sig_scheme_parse("none", &s), 0);
    assert_int_equal(s, UST_SCHEME_NONE);
    for (size_t i = 0; i < N_SCHEMES; i++) {
        assert_string_equal(ust_sig_scheme_name(sig_vectors[i].scheme),
                            sig_vectors[i].name);
        assert_int_equal(ust_sig_scheme_parse(sig_vectors[i].name, &s), 0);
        assert_int_equal(s, sig_vectors[i].scheme);
    }
}

static void test_names_unknown(void **state)
{
    (void)state;
    ust_sig_status st = UST_SIG_VERIFIED;
    ust_sig_scheme sc = UST_SCHEME_STRIPE;
    assert_int_equal(ust_sig_status_parse("Verified", &st), UST_EINVAL);
    assert_int_equal(ust_sig_status_parse("", &st), UST_EINVAL);
    assert_int_equal(ust_sig_status_parse(NULL, &st), UST_EINVAL);
    assert_int_equal(st, UST_SIG_VERIFIED);
    assert_int_equal(ust_sig_scheme_parse("github", &sc), UST_EINVAL);
    assert_int_equal(ust_sig_scheme_parse("Stripe", &sc), UST_EINVAL);
    assert_int_equal(sc, UST_SCHEME_STRIPE);
    assert_non_null(ust_sig_status_name((ust_sig_status)99));
    assert_non_null(ust_sig_scheme_name((ust_sig_scheme)99));
}

/* ---- standard-webhooks ------------------------------------------------------ */

/* The published message with its id, timestamp and signature headers,
 * named as in names. */
static ust_request sw_req_named(const char *const names[3], const char *sig,
                                int64_t received_s)
{
    ust_request r = make_req(SW_BODY, strlen(SW_BODY), received_s);
    add(&r, names[0], SW_ID);
    add(&r, names[1], SW_TS_STR);
    add(&r, names[2], sig);
    return r;
}

static ust_request sw_req(const char *sig, int64_t received_s)
{
    static const char *const names[] = {"webhook-id", "webhook-timestamp",
                                        "webhook-signature"};
    return sw_req_named(names, sig, received_s);
}

static void test_sw_published_vector(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    expect(&p, sw_req(SW_SIG, SW_TS), UST_SIG_VERIFIED);

    /* Header names are case-insensitive. */
    static const char *const mixed[] = {"Webhook-Id", "WEBHOOK-TIMESTAMP",
                                        "Webhook-Signature"};
    expect(&p, sw_req_named(mixed, SW_SIG, SW_TS), UST_SIG_VERIFIED);

    /* Signing the same message reproduces the published headers exactly. */
    ust_request r = signed_req(&p, SW_BODY, SW_TS, SW_ID, 3);
    assert_string_equal(ust_request_header(&r, "webhook-id"), SW_ID);
    assert_string_equal(ust_request_header(&r, "webhook-timestamp"), SW_TS_STR);
    assert_string_equal(ust_request_header(&r, "webhook-signature"), SW_SIG);
    ust_request_clear(&r);
}

static void test_sw_published_bad_variant(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    expect(&p, sw_req(SW_SIG_BAD, SW_TS), UST_SIG_INVALID);
}

static void test_sw_tampering(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);

    ust_request r = sw_req(SW_SIG, SW_TS);
    r.body[10] ^= 1;
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    ust_request_clear(&r);

    r = sw_req(SW_SIG, SW_TS);
    set_header(&r, "webhook-timestamp", "1614265331");
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    ust_request_clear(&r);

    r = sw_req(SW_SIG, SW_TS);
    set_header(&r, "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK");
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    ust_request_clear(&r);

    /* A different, well-formed secret. */
    ust_sig_params wrong =
        params(UST_SCHEME_STANDARD_WEBHOOKS, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx");
    expect(&wrong, sw_req(SW_SIG, SW_TS), UST_SIG_INVALID);
}

static void test_sw_secret_prefix_optional(void **state)
{
    (void)state;
    /* The reference libraries accept the secret with or without whsec_. */
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET + 6);
    expect(&p, sw_req(SW_SIG, SW_TS), UST_SIG_VERIFIED);
}

/* The default tolerance, both ways, for a request made by make with the
 * signature header value sig signed at ts. */
static void expect_tolerance(const ust_sig_params *p,
                             ust_request (*make)(const char *, int64_t),
                             const char *sig, int64_t ts)
{
    const struct {
        int64_t received_s;
        ust_sig_status want;
    } cases[] = {
        {ts + 300, UST_SIG_VERIFIED},       {ts - 300, UST_SIG_VERIFIED},
        {ts + 301, UST_SIG_EXPIRED},        {ts - 301, UST_SIG_EXPIRED},
        {ts + 86400 * 30, UST_SIG_EXPIRED},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(cases); i++)
        expect(p, make(sig, cases[i].received_s), cases[i].want);
}

static void test_sw_time(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    expect_tolerance(&p, sw_req, SW_SIG, SW_TS);
    /* Match first, then time: a forged signature on an old message is
     * INVALID, not EXPIRED. */
    expect(&p, sw_req(SW_SIG_BAD, SW_TS + 86400), UST_SIG_INVALID);
    /* A configured tolerance replaces the default. */
    p.tolerance_s = 10;
    expect(&p, sw_req(SW_SIG, SW_TS + 11), UST_SIG_EXPIRED);
    expect(&p, sw_req(SW_SIG, SW_TS + 10), UST_SIG_VERIFIED);
}

static void test_sw_rotation(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    expect(&p, sw_req(SW_SIG_BAD " v2,whatever v1a,xyz  " SW_SIG, SW_TS),
           UST_SIG_VERIFIED);
    /* Only v1 entries count: the right MAC under another version does not. */
    expect(&p, sw_req("v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", SW_TS),
           UST_SIG_INVALID);
}

static void test_sw_missing(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    const char *names[] = {"webhook-id", "webhook-timestamp", "webhook-signature"};
    const char *values[] = {SW_ID, SW_TS_STR, SW_SIG};
    for (size_t skip = 0; skip < 3; skip++) {
        ust_request r = make_req(SW_BODY, strlen(SW_BODY), SW_TS);
        for (size_t i = 0; i < 3; i++)
            if (i != skip)
                add(&r, names[i], values[i]);
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_MISSING);
        ust_request_clear(&r);
    }
}

static void test_sw_malformed(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    const char *bad_ts[] = {"1614265330a", "", "-1614265330", "+1614265330",
                            "16142653300000000000"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad_ts); i++) {
        ust_request r = sw_req(SW_SIG, SW_TS);
        set_header(&r, "webhook-timestamp", bad_ts[i]);
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
        ust_request_clear(&r);
    }
    const char *bad_sig[] = {"", "v1",
                             "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1,",
                             "v1:g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="};
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad_sig); i++) {
        expect(&p, sw_req(bad_sig[i], SW_TS), UST_SIG_INVALID);
    }
}

static void test_sw_bad_secret(void **state)
{
    (void)state;
    const char *bad[] = {"whsec_not*base64!", "whsec_abc", "whsec_", ""};
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, bad[i]);
        expect(&p, sw_req(SW_SIG, SW_TS), UST_SIG_INVALID);
        /* Sign refuses and leaves the request untouched. */
        ust_request r = make_req(SW_BODY, strlen(SW_BODY), SW_TS);
        add(&r, "Content-Type", "application/json");
        assert_int_equal(ust_sig_sign(&p, SW_TS, SW_ID, &r), UST_EINVAL);
        assert_int_equal(r.n_headers, 1);
        ust_request_clear(&r);
    }
}

static void test_sw_sign_needs_msg_id(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET);
    ust_request r = make_req(SW_BODY, strlen(SW_BODY), SW_TS);
    assert_int_equal(ust_sig_sign(&p, SW_TS, NULL, &r), UST_EINVAL);
    assert_int_equal(r.n_headers, 0);
    ust_request_clear(&r);
}

/* ---- stripe ----------------------------------------------------------------- */

static ust_request st_req(const char *header_value, int64_t received_s)
{
    ust_request r = make_req(ST_BODY, strlen(ST_BODY), received_s);
    add(&r, "Stripe-Signature", header_value);
    return r;
}

static void test_stripe_vector(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    /* The hard-coded header, computed by the openssl CLI, verifies. */
    expect(&p, st_req(ST_HEADER_VALUE, ST_TS), UST_SIG_VERIFIED);

    /* And signing produces that exact header. */
    ust_request r = signed_req(&p, ST_BODY, ST_TS, NULL, 1);
    assert_string_equal(ust_request_header(&r, "stripe-signature"), ST_HEADER_VALUE);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
    ust_request_clear(&r);

    /* Upper-case hex and spaces after commas are accepted. */
    expect(&p,
           st_req("t=1700000000, "
                  "v1=90C539043289E4774FD1EC570EDE4FC0946C05A72B117297366C0FD2E5DC5F8F",
                  ST_TS),
           UST_SIG_VERIFIED);
}

static void test_stripe_tampering(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);

    ust_request r = st_req(ST_HEADER_VALUE, ST_TS);
    r.body[r.body_len - 2] ^= 0x20;
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    ust_request_clear(&r);

    expect(&p, st_req("t=1700000001,v1=" ST_HEX, ST_TS), UST_SIG_INVALID);

    ust_sig_params wrong =
        params(UST_SCHEME_STRIPE, "whsec_understudy_test_secret_0002");
    expect(&wrong, st_req(ST_HEADER_VALUE, ST_TS), UST_SIG_INVALID);

    /* The key is the whole secret string: dropping whsec_ changes it. */
    ust_sig_params stripped = params(UST_SCHEME_STRIPE, ST_SECRET + 6);
    expect(&stripped, st_req(ST_HEADER_VALUE, ST_TS), UST_SIG_INVALID);
}

static void test_stripe_time(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    expect_tolerance(&p, st_req, ST_HEADER_VALUE, ST_TS);
    /* received_at is in microseconds and floored to the second. */
    ust_request r = st_req(ST_HEADER_VALUE, ST_TS);
    r.received_at_us = (int64_t)(ST_TS + 300) * 1000000 + 999999;
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
    r.received_at_us = (int64_t)(ST_TS + 301) * 1000000;
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_EXPIRED);
    ust_request_clear(&r);
    /* Forged signature with an old timestamp: INVALID, not EXPIRED. */
    expect(&p, st_req("t=1700000000,v1=" WRONG_HEX, ST_TS + 86400), UST_SIG_INVALID);
    p.tolerance_s = 10;
    expect(&p, st_req(ST_HEADER_VALUE, ST_TS - 11), UST_SIG_EXPIRED);
}

static void test_stripe_rotation(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    expect(&p, st_req("t=1700000000,v1=" WRONG_HEX ",v0=" ST_HEX ",v1=" ST_HEX, ST_TS),
           UST_SIG_VERIFIED);
    /* Only v1 counts: the right MAC under v0 alone is not enough. */
    expect(&p, st_req("t=1700000000,v0=" ST_HEX ",v1=" WRONG_HEX, ST_TS),
           UST_SIG_INVALID);
}

static void test_stripe_missing(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    ust_request r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
    add(&r, "X-Hub-Signature-256", "sha256=" GH_HEX);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_MISSING);
    ust_request_clear(&r);
    /* Header lookup is case-insensitive. */
    r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
    add(&r, "stripe-signature", ST_HEADER_VALUE);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
    ust_request_clear(&r);
}

static void test_stripe_malformed(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    const char *bad[] = {
        "",
        "v1=" ST_HEX,                           /* no t */
        "t=1700000000",                         /* no v1 */
        "t=17000000x0,v1=" ST_HEX,              /* non-numeric t */
        "t=,v1=" ST_HEX,                        /* empty t */
        "t=-1700000000,v1=" ST_HEX,             /* signed t */
        "t=1700000000,t=1700000000,v1=" ST_HEX, /* ambiguous t */
        "t=1700000000;v1=" ST_HEX,              /* wrong separator */
        "t=1700000000,v1=" ST_HEX "00",         /* too long */
        "t=1700000000,v1=zz" ST_HEX,            /* not hex */
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        expect(&p, st_req(bad[i], ST_TS), UST_SIG_INVALID);
    }
}

/* ---- hmac-sha256-hex -------------------------------------------------------- */

static ust_request gh_req(const char *name, const char *value, int64_t received_s)
{
    ust_request r = make_req(GH_BODY, strlen(GH_BODY), received_s);
    add(&r, name, value);
    return r;
}

static void test_hex_published_vector(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    expect(&p, gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, 1700000000),
           UST_SIG_VERIFIED);

    expect(&p, gh_req("x-hub-signature-256", "sha256=" GH_HEX_UPPER, 1700000000),
           UST_SIG_VERIFIED);

    ust_request r = signed_req(&p, GH_BODY, 0, NULL, 1);
    assert_string_equal(r.headers[0].name, UST_SIG_DEFAULT_HEX_HEADER);
    assert_string_equal(r.headers[0].value, "sha256=" GH_HEX);
    ust_request_clear(&r);
}

static void test_hex_tampering(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    ust_request r = gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, 0);
    r.body[0] = 'h';
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    ust_request_clear(&r);

    ust_sig_params wrong =
        params(UST_SCHEME_HMAC_SHA256_HEX, "It's a secret to everybody");
    expect(&wrong, gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, 0), UST_SIG_INVALID);
}

static void test_hex_no_timestamp(void **state)
{
    (void)state;
    /* No timestamp in this scheme: a capture verifies whenever it arrived,
     * and the tolerance plays no part. */
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    p.tolerance_s = 1;
    const int64_t when[] = {0, 1, 1700000000, 4102444800};
    for (size_t i = 0; i < 4; i++) {
        expect(&p, gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, when[i]),
               UST_SIG_VERIFIED);
    }
}

static void test_hex_custom_header(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    p.header = "X-Signature";
    expect(&p, gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, 0), UST_SIG_MISSING);
    expect(&p, gh_req("x-signature", "sha256=" GH_HEX, 0), UST_SIG_VERIFIED);
    ust_request r = make_req(GH_BODY, strlen(GH_BODY), 0);
    assert_int_equal(ust_sig_sign(&p, 0, NULL, &r), 0);
    assert_string_equal(r.headers[0].name, "X-Signature");
    ust_request_clear(&r);
}

static void test_hex_rotation(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    expect(&p,
           gh_req("X-Hub-Signature-256",
                  "sha256=" WRONG_HEX ", sha1=abc, sha256=" GH_HEX, 0),
           UST_SIG_VERIFIED);
}

static void test_hex_missing_and_malformed(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET);
    expect(&p, gh_req("X-Hub-Signature", "sha1=0123", 0), UST_SIG_MISSING);
    const char *bad[] = {
        "",
        GH_HEX,               /* no prefix */
        "sha1=" GH_HEX,       /* other algorithm */
        "sha256=",            /* empty */
        "sha256=" GH_HEX "0", /* too long */
        "sha256=57107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1g",
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        expect(&p, gh_req("X-Hub-Signature-256", bad[i], 0), UST_SIG_INVALID);
    }
}

/* ---- every scheme ----------------------------------------------------------- */

static void test_unsigned_route(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_NONE, NULL);
    ust_request r = make_req(GH_BODY, strlen(GH_BODY), 0);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_UNSIGNED);
    add(&r, "Stripe-Signature", ST_HEADER_VALUE);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_UNSIGNED);
    /* Nothing to sign with. */
    assert_int_equal(ust_sig_sign(&p, 0, NULL, &r), UST_EINVAL);
    p.secret = "s";
    assert_int_equal(ust_sig_sign(&p, 0, NULL, &r), UST_EINVAL);
    assert_int_equal(r.n_headers, 1);
    ust_request_clear(&r);
}

static void test_null_secret(void **state)
{
    (void)state;
    ust_request r = st_req(ST_HEADER_VALUE, ST_TS);
    ust_sig_params p = params(UST_SCHEME_STRIPE, NULL);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    assert_int_equal(ust_sig_sign(&p, ST_TS, NULL, &r), UST_EINVAL);
    ust_request_clear(&r);

    r = sw_req(SW_SIG, SW_TS);
    p = params(UST_SCHEME_STANDARD_WEBHOOKS, NULL);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    assert_int_equal(ust_sig_sign(&p, SW_TS, SW_ID, &r), UST_EINVAL);
    ust_request_clear(&r);

    r = gh_req("X-Hub-Signature-256", "sha256=" GH_HEX, 0);
    p = params(UST_SCHEME_HMAC_SHA256_HEX, NULL);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
    assert_int_equal(ust_sig_sign(&p, 0, NULL, &r), UST_EINVAL);
    assert_int_equal(r.n_headers, 1);
    ust_request_clear(&r);

    /* No params at all fails closed too. */
    r = make_req(NULL, 0, 0);
    assert_int_equal(ust_sig_verify(NULL, &r), UST_SIG_INVALID);
    ust_request_clear(&r);
}

static void test_sign_rejects_bad_timestamp(void **state)
{
    (void)state;
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    ust_request r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
    assert_int_equal(ust_sig_sign(&p, -1, NULL, &r), UST_EINVAL);
    assert_int_equal(ust_sig_sign(&p, INT64_MAX, NULL, &r), UST_EINVAL);
    assert_int_equal(r.n_headers, 0);
    ust_request_clear(&r);
}

/* Binary body with NULs and CRLF: the MAC covers body_len bytes, not a C
 * string, so a change after the first NUL must be caught. */
static const unsigned char binary_body[] = {
    '{', '"', 'a', '"', 0, '\r', '\n', 0, 0, '\r', '\n', 'x', 0xff, '}', '\r', '\n'};

static void round_trip(ust_sig_scheme scheme, const char *secret, const void *body,
                       size_t len)
{
    const int64_t ts = 1750000000;
    ust_sig_params p = params(scheme, secret);
    ust_request r = make_req(body, len, ts + 7);
    assert_int_equal(ust_sig_sign(&p, ts, "msg_round_trip", &r), 0);
    assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
    if (len > 0) {
        r.body[len - 1] ^= 0x01;
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
        r.body[len - 1] ^= 0x01;
        r.body_len--;
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
        r.body_len++;
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
    }
    ust_request_clear(&r);
}

static void test_round_trip_all_schemes(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SCHEMES; i++) {
        round_trip(sig_vectors[i].scheme, sig_vectors[i].secret, binary_body,
                   sizeof(binary_body));
        round_trip(sig_vectors[i].scheme, sig_vectors[i].secret, ST_BODY,
                   strlen(ST_BODY));
        round_trip(sig_vectors[i].scheme, sig_vectors[i].secret, NULL, 0);
    }
}

static void test_binary_body_after_nul(void **state)
{
    (void)state;
    /* Flip a byte after the first NUL: every scheme must notice. */
    for (size_t i = 0; i < N_SCHEMES; i++) {
        ust_sig_params p = params(sig_vectors[i].scheme, sig_vectors[i].secret);
        ust_request r = make_req(binary_body, sizeof(binary_body), 1750000000);
        assert_int_equal(ust_sig_sign(&p, 1750000000, "msg_1", &r), 0);
        r.body[8] = 'X'; /* after the first NUL */
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_INVALID);
        ust_request_clear(&r);
    }
}

/* Allocation failures: the Nth ust_malloc / ust_realloc fails. Sign reports
 * UST_ENOMEM and leaves the request as it was (no half-added headers); verify
 * fails closed. ASan checks that nothing leaks on the way out. */
static void test_allocation_failures(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SCHEMES; i++) {
        ust_sig_params p = params(sig_vectors[i].scheme, sig_vectors[i].secret);
        int rc = UST_ENOMEM;
        for (long n = 0; rc == UST_ENOMEM; n++) {
            assert_true(n < 100);
            ust_request r = make_req(binary_body, sizeof(binary_body), 1750000000);
            add(&r, "Content-Type", "application/octet-stream");
            ust_test_alloc_fail(n, 1);
            rc = ust_sig_sign(&p, 1750000000, "msg_1", &r);
            ust_test_alloc_restore();
            if (rc == UST_ENOMEM) {
                assert_int_equal(r.n_headers, 1);
                assert_string_equal(r.headers[0].name, "Content-Type");
            } else {
                assert_int_equal(rc, 0);
                /* Now verify with allocations failing: never VERIFIED
                 * unless it could really check. */
                for (long m = 0; m < 4; m++) {
                    ust_test_alloc_fail(m, 1);
                    ust_sig_status st = ust_sig_verify(&p, &r);
                    ust_test_alloc_restore();
                    assert_true(st == UST_SIG_VERIFIED || st == UST_SIG_INVALID);
                }
                assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
            }
            ust_request_clear(&r);
        }
    }
}

/* A MAC OpenSSL refuses to run: an HMAC context never given a key, as a
 * context whose re-initialisation failed would be. */
static ust__sig_mac *unkeyed_mac(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    assert_non_null(mac);
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    assert_non_null(ctx);
    return ctx;
}

static int mac_text(ust__sig_mac *m, const void *msg, char buf[UST__SIG_TEXT_CAP])
{
    unsigned char mac[UST__SIG_MAC_LEN];
    ust__slice part = {msg, strlen(msg)};
    int rc = ust__sig_mac_run(m, &part, 1, mac);
    if (rc == 0)
        snprintf(buf, UST__SIG_TEXT_CAP, "%02x", mac[0]);
    return rc;
}

/* A signature that cannot be made half way through the header (its second
 * MAC refused): the join fails with no value for its caller to free, and
 * each scheme's sign fails leaving the request as it was. */
static void test_sign_fails_when_a_mac_cannot_run(void **state)
{
    (void)state;
    ust__sig_mac *macs[2] = {NULL, unkeyed_mac()};
    assert_int_equal(ust__sig_mac_new((const unsigned char *)"k", 1, &macs[0]), 0);
    char *value = (char *)"left over";
    assert_int_equal(ust__sig_join(&value, "t=1,", ",", "v1=", macs, 2, mac_text, "m"),
                     UST_ENOMEM);
    assert_null(value);

    static const ust__sig_scheme *const impls[] = {
#define IMPL(id, name, impl) &ust__sig_##impl,
        UST_SIG_SCHEME_MAP(IMPL)
#undef IMPL
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(impls); i++) {
        ust_sig_params p = params(sig_vectors[i].scheme, sig_vectors[i].secret);
        ust_request r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
        add(&r, "Content-Type", "application/json");
        assert_int_not_equal(impls[i]->sign(&p, macs, 2, ST_TS, "msg_1", &r), 0);
        assert_int_equal(r.n_headers, 1);
        ust_request_clear(&r);
    }
    ust__sig_mac_free(macs[0]);
    ust__sig_mac_free(macs[1]);
}

/* The start-time check agrees with the verifier: what it accepts keys a
 * signature that verifies; what it refuses could never verify. */
static void test_secret_check(void **state)
{
    (void)state;
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET), 0);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STANDARD_WEBHOOKS, SW_SECRET + 6),
                     0);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STANDARD_WEBHOOKS, ST_SECRET),
                     UST_EINVAL);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STANDARD_WEBHOOKS, "whsec_"),
                     UST_EINVAL);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STRIPE, ST_SECRET), 0);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_HMAC_SHA256_HEX, GH_SECRET), 0);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STRIPE, ""), UST_EINVAL);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_STRIPE, NULL), UST_EINVAL);
    assert_int_equal(ust_sig_secret_check(UST_SCHEME_NONE, "x"), UST_EINVAL);
}

/* ---- the table ------------------------------------------------------------- */

/* Every scheme has an entry whose driver secrets key it, and the choices
 * string config errors print names them all. */
static void test_scheme_table(void **state)
{
    (void)state;
    assert_null(ust_sig_scheme_info_of(UST_SCHEME_NONE));
    assert_null(ust_sig_scheme_info_of((ust_sig_scheme)99));
    char choices[256] = "";
    for (size_t i = 0; i < N_SCHEMES; i++)
        snprintf(choices + strlen(choices), sizeof(choices) - strlen(choices),
                 "\"%s\", ", sig_vectors[i].name);
    assert_string_equal(UST_SIG_SCHEME_CHOICES,
                        strcat(choices, "\"none\"")); /* none last */
    for (size_t i = 0; i < N_SCHEMES; i++) {
        const ust_sig_scheme_info *si = ust_sig_scheme_info_of(sig_vectors[i].scheme);
        assert_non_null(si);
        assert_non_null(si->secret_what);
        assert_int_equal(ust_sig_secret_check(sig_vectors[i].scheme, si->wrong_secret),
                         0);
        if (si->previous_secret != NULL)
            assert_int_equal(
                ust_sig_secret_check(sig_vectors[i].scheme, si->previous_secret), 0);
    }
    assert_true(ust_sig_scheme_info_of(UST_SCHEME_STANDARD_WEBHOOKS)->needs_msg_id);
    assert_true(ust_sig_scheme_info_of(UST_SCHEME_HMAC_SHA256_HEX)->named_header);
    assert_false(ust_sig_scheme_info_of(UST_SCHEME_STRIPE)->named_header);
}

static void test_reads_header(void **state)
{
    (void)state;
    assert_true(ust_sig_reads_header(UST_SCHEME_STRIPE, NULL, "stripe-signature"));
    assert_false(ust_sig_reads_header(UST_SCHEME_STRIPE, NULL, "webhook-id"));
    assert_true(ust_sig_reads_header(UST_SCHEME_STANDARD_WEBHOOKS, NULL, "Webhook-Id"));
    assert_true(
        ust_sig_reads_header(UST_SCHEME_STANDARD_WEBHOOKS, NULL, "webhook-timestamp"));
    assert_true(
        ust_sig_reads_header(UST_SCHEME_STANDARD_WEBHOOKS, NULL, "webhook-signature"));
    assert_true(
        ust_sig_reads_header(UST_SCHEME_HMAC_SHA256_HEX, NULL, "x-hub-signature-256"));
    assert_false(ust_sig_reads_header(UST_SCHEME_HMAC_SHA256_HEX, "X-Sig",
                                      "x-hub-signature-256"));
    assert_true(ust_sig_reads_header(UST_SCHEME_HMAC_SHA256_HEX, "X-Sig", "x-sig"));
    assert_false(ust_sig_reads_header(UST_SCHEME_NONE, NULL, "stripe-signature"));
}

/* One signature per secret, in order: each secret verifies on its own (a
 * receiver on either side of a rotation), a third does not. */
static void test_sign_with_several_secrets(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SCHEMES; i++) {
        ust_sig_params p = params(sig_vectors[i].scheme, sig_vectors[i].secret);
        const char *secrets[] = {sig_vectors[i].rotated_from, sig_vectors[i].secret};
        ust_request r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
        assert_int_equal(ust_sig_sign_with(&p, secrets, 2, ST_TS, "msg_1", &r), 0);
        assert_int_equal(ust_sig_verify(&p, &r), UST_SIG_VERIFIED);
        ust_sig_params old = params(sig_vectors[i].scheme, sig_vectors[i].rotated_from);
        assert_int_equal(ust_sig_verify(&old, &r), UST_SIG_VERIFIED);
        ust_sig_params other = params(sig_vectors[i].scheme,
                                      ust_sig_scheme_info_of(p.scheme)->wrong_secret);
        assert_int_equal(ust_sig_verify(&other, &r), UST_SIG_INVALID);
        ust_request_clear(&r);
    }
    /* Stripe's header: one t, then the v1 entries in the secrets' order. */
    ust_sig_params p = params(UST_SCHEME_STRIPE, ST_SECRET);
    const char *two[] = {ST_SECRET, "whsec_previous_stripe"};
    ust_request r = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
    assert_int_equal(ust_sig_sign_with(&p, two, 2, ST_TS, NULL, &r), 0);
    const char *h = ust_request_header(&r, "Stripe-Signature");
    assert_non_null(h);
    assert_int_equal(strncmp(h, ST_HEADER_VALUE ",v1=", strlen(ST_HEADER_VALUE) + 4),
                     0);
    assert_int_equal(strlen(h), strlen(ST_HEADER_VALUE) + 4 + 64);
    ust_request_clear(&r);
    assert_int_equal(ust_sig_sign_with(&p, two, 0, ST_TS, NULL, &r), UST_EINVAL);
}

/* A signer keyed once gives, message after message, what a one-shot sign
 * gives. */
static void test_signer_reuse(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SCHEMES; i++) {
        ust_sig_params p = params(sig_vectors[i].scheme, sig_vectors[i].secret);
        ust_sig_signer *s = NULL;
        assert_int_equal(ust_sig_signer_new(&p, NULL, 0, &s), 0);
        for (int k = 0; k < 3; k++) {
            const char *body = k == 1 ? GH_BODY : ST_BODY;
            ust_request a = make_req(body, strlen(body), ST_TS + k);
            ust_request b = make_req(body, strlen(body), ST_TS + k);
            assert_int_equal(ust_sig_signer_sign(s, ST_TS + k, "msg_2", &a), 0);
            assert_int_equal(ust_sig_sign(&p, ST_TS + k, "msg_2", &b), 0);
            assert_int_equal(a.n_headers, b.n_headers);
            for (size_t h = 0; h < a.n_headers; h++) {
                assert_string_equal(a.headers[h].name, b.headers[h].name);
                assert_string_equal(a.headers[h].value, b.headers[h].value);
            }
            expect(&p, a, UST_SIG_VERIFIED);
            ust_request_clear(&b);
        }
        ust_sig_signer_free(s);
    }
    /* A secret the scheme cannot key with is refused when keying. */
    ust_sig_params bad = params(UST_SCHEME_STANDARD_WEBHOOKS, "whsec_not*base64!");
    ust_sig_signer *s = (ust_sig_signer *)&bad;
    assert_int_equal(ust_sig_signer_new(&bad, NULL, 0, &s), UST_EINVAL);
    assert_null(s);
}

/* Verifiers keep keyed MACs of the secrets they used last, per thread: with
 * more secrets in turn than they keep, a request verifies under the secret
 * that signed it and under no other, in any order, and a thread that
 * verified lets its keys go when it ends (ASan: nothing leaks). */
static void verify_under_many_secrets(void)
{
    static const char *const secrets[] = {
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_dGhlIHNlY29uZCBzZWNyZXQ=",
        "whsec_YSB0aGlyZCBvbmU=",
        "whsec_Zm91cnRoIHNlY3JldCBrZXk=",
        "whsec_ZmlmdGggc2VjcmV0IGtleQ==",
        "whsec_c2l4dGggc2VjcmV0IGtleQ==",
    };
    const size_t n = UST_ARRAY_SIZE(secrets);
    for (size_t k = 0; k < N_SCHEMES; k++) {
        ust_request signed_by[6];
        for (size_t i = 0; i < n; i++) {
            ust_sig_params p = params(sig_vectors[k].scheme, secrets[i]);
            signed_by[i] = make_req(ST_BODY, strlen(ST_BODY), ST_TS);
            assert_int_equal(ust_sig_sign(&p, ST_TS, "msg_many", &signed_by[i]), 0);
        }
        for (size_t round = 0; round < 3; round++)
            for (size_t j = 0; j < n; j++) {
                ust_sig_params p = params(sig_vectors[k].scheme, secrets[j]);
                for (size_t i = 0; i < n; i++) {
                    size_t at = (i + round * j) % n;
                    assert_int_equal(ust_sig_verify(&p, &signed_by[at]),
                                     at == j ? UST_SIG_VERIFIED : UST_SIG_INVALID);
                }
            }
        for (size_t i = 0; i < n; i++)
            ust_request_clear(&signed_by[i]);
    }
}

static void *verify_on_a_thread(void *arg)
{
    (void)arg;
    verify_under_many_secrets();
    return NULL;
}

static void test_verify_many_secrets_in_turn(void **state)
{
    (void)state;
    verify_under_many_secrets();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, verify_on_a_thread, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_names_unknown),
        cmocka_unit_test(test_sw_published_vector),
        cmocka_unit_test(test_sw_published_bad_variant),
        cmocka_unit_test(test_sw_tampering),
        cmocka_unit_test(test_sw_secret_prefix_optional),
        cmocka_unit_test(test_sw_time),
        cmocka_unit_test(test_sw_rotation),
        cmocka_unit_test(test_sw_missing),
        cmocka_unit_test(test_sw_malformed),
        cmocka_unit_test(test_sw_bad_secret),
        cmocka_unit_test(test_sw_sign_needs_msg_id),
        cmocka_unit_test(test_stripe_vector),
        cmocka_unit_test(test_stripe_tampering),
        cmocka_unit_test(test_stripe_time),
        cmocka_unit_test(test_stripe_rotation),
        cmocka_unit_test(test_stripe_missing),
        cmocka_unit_test(test_stripe_malformed),
        cmocka_unit_test(test_hex_published_vector),
        cmocka_unit_test(test_hex_tampering),
        cmocka_unit_test(test_hex_no_timestamp),
        cmocka_unit_test(test_hex_custom_header),
        cmocka_unit_test(test_hex_rotation),
        cmocka_unit_test(test_hex_missing_and_malformed),
        cmocka_unit_test(test_unsigned_route),
        cmocka_unit_test(test_null_secret),
        cmocka_unit_test(test_sign_rejects_bad_timestamp),
        cmocka_unit_test(test_round_trip_all_schemes),
        cmocka_unit_test(test_binary_body_after_nul),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_sign_fails_when_a_mac_cannot_run),
        cmocka_unit_test(test_secret_check),
        cmocka_unit_test(test_scheme_table),
        cmocka_unit_test(test_reads_header),
        cmocka_unit_test(test_sign_with_several_secrets),
        cmocka_unit_test(test_signer_reuse),
        cmocka_unit_test(test_verify_many_secrets_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
