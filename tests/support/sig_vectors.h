/* The signature schemes' test vectors, one row per scheme of
 * UST_SIG_SCHEME_MAP: test_sig checks every scheme against its row and
 * fuzz_sig_header fuzzes every row (its dictionary is made from the rows by
 * tests/fuzz/sig_header_dict.c). A scheme added to the map without a row
 * here does not compile: the table names SIG_VECTOR_<impl>. */
#ifndef UST_TEST_SIG_VECTORS_H
#define UST_TEST_SIG_VECTORS_H

#include <stdint.h>

#include <understudy/sig.h>

/* Standard Webhooks' published vector (standard-webhooks repo, library tests). */
#define SW_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SW_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SW_TS 1614265330
#define SW_TS_STR "1614265330"
#define SW_BODY "{\"test\": 2432232314}"
#define SW_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define SW_SIG_BAD "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="

/* GitHub's documented vector (docs "Validating webhook deliveries"). */
#define GH_SECRET "It's a Secret to Everybody"
#define GH_BODY "Hello, World!"
#define GH_HEX "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
#define GH_HEX_UPPER "757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17"

/* Stripe publishes no vector; this one was produced independently of our code:
 *   printf '%s'
 * '1700000000.{"id":"evt_1NxUnderstudy","object":"event","type":"payment_intent.succeeded"}'
 * \ | openssl dgst -sha256 -hmac 'whsec_understudy_test_secret_0001' (OpenSSL 3.0.19).
 * The key is the secret string, whsec_ included. */
#define ST_SECRET "whsec_understudy_test_secret_0001"
#define ST_TS 1700000000
#define ST_BODY                                                                        \
    "{\"id\":\"evt_1NxUnderstudy\",\"object\":\"event\",\"type\":\"payment_intent."    \
    "succeeded\"}"
#define ST_HEX "90c539043289e4774fd1ec570ede4fc0946c05a72b117297366c0fd2e5dc5f8f"
#define ST_HEADER_VALUE "t=1700000000,v1=" ST_HEX

typedef struct sig_vector {
    ust_sig_scheme scheme;
    const char *name;         /* the name config files use */
    const char *secret;       /* its published vector's, where there is one */
    const char *other_secret; /* one character off secret */
    const char *rotated_from; /* a previous secret signing beside secret */
    int64_t received_at_s;    /* the vector's arrival: it verifies then */
    const char *sig_header;   /* the header the signature is in */
    const char *words[5];     /* its format's words, for the fuzz dictionary */
} sig_vector;

#define SIG_VECTOR_stripe                                                              \
    .name = "stripe", .secret = ST_SECRET,                                             \
    .other_secret = "whsec_understudy_test_secret_0002",                               \
    .rotated_from = "whsec_previous_stripe", .received_at_s = ST_TS,                   \
    .sig_header = "Stripe-Signature", .words = {"t=", "v1=", "v0=", ","}
#define SIG_VECTOR_standard_webhooks                                                   \
    .name = "standard-webhooks", .secret = SW_SECRET,                                  \
    .other_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx",                          \
    .rotated_from = "whsec_cHJldmlvdXMga2V5", .received_at_s = SW_TS,                  \
    .sig_header = "webhook-signature", .words = {"v1,", " ", "whsec_"}
#define SIG_VECTOR_hmac_hex                                                            \
    .name = "hmac-sha256-hex", .secret = GH_SECRET,                                    \
    .other_secret = "It's a Secret to Everybodz",                                      \
    .rotated_from = "previous hex secret", .received_at_s = ST_TS,                     \
    .sig_header = "X-Hub-Signature-256", .words = {"sha256="}

/* In UST_SIG_SCHEME_MAP's order. */
static const sig_vector sig_vectors[] = {
#define SIG_VECTOR_ROW(id, name_, impl) {.scheme = UST_SCHEME_##id, SIG_VECTOR_##impl},
    UST_SIG_SCHEME_MAP(SIG_VECTOR_ROW)
#undef SIG_VECTOR_ROW
};

#endif
