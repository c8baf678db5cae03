/* Standard Webhooks: webhook-id, webhook-timestamp and
 * webhook-signature: v1,<base64> [v1,<base64> ...] over "<id>.<ts>.<body>",
 * keyed with base64-decode(secret without its whsec_ prefix). */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#define SECRET_PREFIX "whsec_"
#define ID_HEADER "webhook-id"
#define TS_HEADER "webhook-timestamp"
#define SIG_HEADER "webhook-signature"

/* 0; UST_EINVAL for a secret that is not base64 or decodes to nothing;
 * UST_ENOMEM. The key is released with ust__sig_free_key. */
static int decode_secret(const char *secret, unsigned char **key, size_t *key_len)
{
    size_t plen = strlen(SECRET_PREFIX);
    if (strncmp(secret, SECRET_PREFIX, plen) == 0)
        secret += plen;
    int rc = ust_base64_decode(secret, strlen(secret), key, key_len);
    if (rc == UST_ENOMEM)
        return rc;
    if (rc != 0 || *key_len == 0) {
        ust_free(*key);
        *key = NULL;
        return UST_EINVAL;
    }
    return 0;
}

/* The signed "<id>.<ts>.<body>" under m, as base64 in buf. */
typedef struct signed_msg {
    const char *id;
    int64_t t;
    const ust_request *req;
} signed_msg;

static int b64_text(ust__sig_mac *m, const void *msg, char buf[UST__SIG_TEXT_CAP])
{
    const signed_msg *sm = msg;
    /* The signed "<ts>" is the parsed number, as the reference libraries do. */
    char ts[32];
    int n = snprintf(ts, sizeof(ts), "%" PRId64, sm->t);
    ust__slice parts[] = {
        {sm->id, strlen(sm->id)},           {".", 1}, {ts, (size_t)n}, {".", 1},
        {sm->req->body, sm->req->body_len},
    };
    unsigned char mac[UST__SIG_MAC_LEN];
    int rc = ust__sig_mac_run(m, parts, UST_ARRAY_SIZE(parts), mac);
    if (rc != 0)
        return rc;
    char *b64 = ust_base64_encode(mac, sizeof(mac));
    if (b64 == NULL)
        return UST_ENOMEM;
    snprintf(buf, UST__SIG_TEXT_CAP, "%s", b64);
    ust_free(b64);
    return 0;
}

/* The expected signature, base64 without the "v1," tag, in buf. 0,
 * UST_EINVAL (bad secret), UST_ENOMEM. */
static int standard_mac_b64(const char *secret, const char *id, int64_t t,
                            const ust_request *req, char buf[UST__SIG_TEXT_CAP])
{
    unsigned char *key = NULL;
    size_t key_len = 0;
    int rc = decode_secret(secret, &key, &key_len);
    ust__sig_mac *m = rc == 0 ? ust__sig_keyed_mac(key, key_len) : NULL;
    ust__sig_free_key(key, key_len);
    signed_msg sm = {id, t, req};
    if (rc == 0)
        rc = m != NULL ? b64_text(m, &sm, buf) : UST_ENOMEM;
    return rc;
}

static int is_v1(const char *item, size_t len, const char **sig, size_t *sig_len)
{
    if (len < 3 || memcmp(item, "v1,", 3) != 0)
        return 0;
    *sig = item + 3;
    *sig_len = len - 3;
    return 1;
}

static ust_sig_status sw_verify(const ust_sig_params *p, const ust_request *req)
{
    const char *id = ust_request_header(req, ID_HEADER);
    const char *ts = ust_request_header(req, TS_HEADER);
    const char *sigs = ust_request_header(req, SIG_HEADER);
    if (id == NULL || ts == NULL || sigs == NULL)
        return UST_SIG_MISSING;
    if (p->secret == NULL)
        return UST_SIG_INVALID;

    int64_t t;
    if (ust__sig_parse_timestamp(ts, strlen(ts), &t) != 0)
        return UST_SIG_INVALID;
    const char *cur = sigs, *item, *sig;
    size_t len, sig_len, n_v1 = 0;
    while (ust__sig_next_item(&cur, ' ', &item, &len))
        if (is_v1(item, len, &sig, &sig_len))
            n_v1++;
    if (n_v1 == 0)
        return UST_SIG_INVALID;

    /* A bad secret, like a failed allocation, fails closed. */
    char expected[UST__SIG_TEXT_CAP];
    if (standard_mac_b64(p->secret, id, t, req, expected) != 0)
        return UST_SIG_INVALID;
    /* Compare the base64 text, as the reference libraries do: the encoding of
     * 32 bytes is always 44 characters, so only same-length entries can
     * match. Match before time: a forged old signature is INVALID. */
    size_t exp_len = strlen(expected);
    int matched = 0;
    cur = sigs;
    while (!matched && ust__sig_next_item(&cur, ' ', &item, &len))
        if (is_v1(item, len, &sig, &sig_len) && sig_len == exp_len &&
            CRYPTO_memcmp(sig, expected, exp_len) == 0)
            matched = 1;
    if (!matched)
        return UST_SIG_INVALID;
    return ust__sig_expired(p, req, t) ? UST_SIG_EXPIRED : UST_SIG_VERIFIED;
}

/* webhook-id, webhook-timestamp and webhook-signature: v1,<b64>[ v1,<b64>...],
 * one per mac, in order. */
static int sw_sign(const ust_sig_params *p, ust__sig_mac *const *macs, size_t n_macs,
                   int64_t timestamp_s, const char *msg_id, ust_request *req)
{
    (void)p;
    char ts[32], *value;
    snprintf(ts, sizeof(ts), "%" PRId64, timestamp_s);
    signed_msg sm = {msg_id, timestamp_s, req};
    int rc = ust__sig_join(&value, "", " ", "v1,", macs, n_macs, b64_text, &sm);
    if (rc != 0)
        return rc;
    size_t before = req->n_headers;
    rc = ust_request_add_header(req, ID_HEADER, msg_id);
    if (rc == 0)
        rc = ust_request_add_header(req, TS_HEADER, ts);
    if (rc == 0)
        rc = ust_request_add_header(req, SIG_HEADER, value);
    if (rc != 0)
        ust__sig_drop_headers(req, before);
    ust_free(value);
    return rc;
}

const ust__sig_scheme ust__sig_standard_webhooks = {
    .info =
        {
            .needs_msg_id = 1,
            .secret_what = "a Standard Webhooks secret (whsec_ followed by base64)",
            /* Base64, or it could not key the scheme at all. */
            .wrong_secret = "whsec_d3Jvbmcgc2VjcmV0IGZvciB0ZXN0cw==",
            .previous_secret = NULL, /* the driver has always sent one signature */
        },
    .headers = {ID_HEADER, TS_HEADER, SIG_HEADER, NULL},
    .key = decode_secret,
    .verify = sw_verify,
    .sign = sw_sign,
};
