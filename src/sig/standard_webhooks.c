/* Standard Webhooks: webhook-id, webhook-timestamp and
 * webhook-signature: v1,<base64> [v1,<base64> ...] over "<id>.<ts>.<body>",
 * keyed with base64-decode(secret without its whsec_ prefix). */
#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#define SECRET_PREFIX "whsec_"

/* 0; UST_EINVAL for a secret that is not base64 or decodes to nothing;
 * UST_ENOMEM. The key is released with free_key. */
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

static void free_key(unsigned char *key, size_t key_len)
{
    if (key != NULL)
        OPENSSL_cleanse(key, key_len);
    ust_free(key);
}

int ust__standard_webhooks_secret_check(const char *secret)
{
    unsigned char *key = NULL;
    size_t key_len = 0;
    int rc = decode_secret(secret, &key, &key_len);
    free_key(key, key_len);
    return rc;
}

/* The expected signature, base64 without the "v1," tag, in *b64 (caller
 * frees). 0, UST_EINVAL (bad secret), UST_ENOMEM. */
static int standard_mac_b64(const char *secret, const char *id, int64_t t,
                            const ust_request *req, char **b64)
{
    unsigned char *key = NULL;
    size_t key_len = 0;
    int rc = decode_secret(secret, &key, &key_len);
    if (rc != 0)
        return rc;
    /* The signed "<ts>" is the parsed number, as the reference libraries do. */
    char ts[32];
    int n = snprintf(ts, sizeof(ts), "%" PRId64, t);
    ust__slice parts[] = {
        {id, strlen(id)},           {".", 1}, {ts, (size_t)n}, {".", 1},
        {req->body, req->body_len},
    };
    unsigned char mac[UST__SIG_MAC_LEN];
    rc = ust__hmac_sha256(key, key_len, parts, sizeof(parts) / sizeof(parts[0]), mac);
    free_key(key, key_len);
    if (rc != 0)
        return rc;
    *b64 = ust_base64_encode(mac, sizeof(mac));
    return *b64 != NULL ? 0 : UST_ENOMEM;
}

static int is_v1(const char *item, size_t len, const char **sig, size_t *sig_len)
{
    if (len < 3 || memcmp(item, "v1,", 3) != 0)
        return 0;
    *sig = item + 3;
    *sig_len = len - 3;
    return 1;
}

ust_sig_status ust__standard_webhooks_verify(const ust_sig_params *p,
                                             const ust_request *req)
{
    const char *id = ust_request_header(req, UST__SW_ID_HEADER);
    const char *ts = ust_request_header(req, UST__SW_TS_HEADER);
    const char *sigs = ust_request_header(req, UST__SW_SIG_HEADER);
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
    char *expected = NULL;
    if (standard_mac_b64(p->secret, id, t, req, &expected) != 0)
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
    ust_free(expected);
    if (!matched)
        return UST_SIG_INVALID;
    return ust__sig_expired(p, req, t) ? UST_SIG_EXPIRED : UST_SIG_VERIFIED;
}

int ust__standard_webhooks_sign(const ust_sig_params *p, int64_t timestamp_s,
                                const char *msg_id, ust_request *req)
{
    if (msg_id == NULL)
        return UST_EINVAL;
    char *b64 = NULL;
    int rc = standard_mac_b64(p->secret, msg_id, timestamp_s, req, &b64);
    if (rc != 0)
        return rc;
    char *ts = ust_sprintf("%" PRId64, timestamp_s);
    char *value = ust_sprintf("v1,%s", b64);
    ust_free(b64);
    if (ts == NULL || value == NULL) {
        ust_free(ts);
        ust_free(value);
        return UST_ENOMEM;
    }
    size_t before = req->n_headers;
    rc = ust_request_add_header(req, UST__SW_ID_HEADER, msg_id);
    if (rc == 0)
        rc = ust_request_add_header(req, UST__SW_TS_HEADER, ts);
    if (rc == 0)
        rc = ust_request_add_header(req, UST__SW_SIG_HEADER, value);
    if (rc != 0)
        ust__sig_drop_headers(req, before);
    ust_free(ts);
    ust_free(value);
    return rc;
}
