/* Stripe: Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...] over "<t>.<body>",
 * keyed with the secret string's bytes (whsec_ kept, not decoded). */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

/* Splits "key=value" at the first '='; 0 when there is none. */
static int split_kv(const char *item, size_t len, const char **val, size_t *val_len,
                    size_t *key_len)
{
    const char *eq = memchr(item, '=', len);
    if (eq == NULL)
        return 0;
    *key_len = (size_t)(eq - item);
    *val = eq + 1;
    *val_len = len - *key_len - 1;
    return 1;
}

static int key_is(const char *item, size_t key_len, const char *key)
{
    return key_len == strlen(key) && memcmp(item, key, key_len) == 0;
}

static int stripe_mac(const char *secret, int64_t t, const ust_request *req,
                      unsigned char mac[UST__SIG_MAC_LEN])
{
    /* The signed "<t>" is the parsed number, as Stripe's libraries format it. */
    char prefix[32];
    int n = snprintf(prefix, sizeof(prefix), "%" PRId64 ".", t);
    ust__slice parts[] = {{prefix, (size_t)n}, {req->body, req->body_len}};
    return ust__hmac_sha256((const unsigned char *)secret, strlen(secret), parts, 2,
                            mac);
}

ust_sig_status ust__stripe_verify(const ust_sig_params *p, const ust_request *req)
{
    const char *h = ust_request_header(req, UST__STRIPE_HEADER);
    if (h == NULL)
        return UST_SIG_MISSING;
    if (p->secret == NULL || p->secret[0] == '\0')
        return UST_SIG_INVALID;

    /* First pass: exactly one t, at least one v1; other entries (v0, future
     * versions, stray items) are ignored. */
    int64_t t = 0;
    int have_t = 0;
    size_t n_v1 = 0;
    const char *cur = h, *item, *val;
    size_t len, val_len, key_len;
    while (ust__sig_next_item(&cur, ',', &item, &len)) {
        if (!split_kv(item, len, &val, &val_len, &key_len))
            continue;
        if (key_is(item, key_len, "t")) {
            /* Two t entries: ambiguous which one was signed. */
            if (have_t || ust__sig_parse_timestamp(val, val_len, &t) != 0)
                return UST_SIG_INVALID;
            have_t = 1;
        } else if (key_is(item, key_len, "v1")) {
            n_v1++;
        }
    }
    if (!have_t || n_v1 == 0)
        return UST_SIG_INVALID;

    unsigned char mac[UST__SIG_MAC_LEN];
    if (stripe_mac(p->secret, t, req, mac) != 0)
        return UST_SIG_INVALID;

    /* Match before time: a forged signature with an old t is INVALID. */
    int matched = 0;
    cur = h;
    while (!matched && ust__sig_next_item(&cur, ',', &item, &len)) {
        unsigned char cand[UST__SIG_MAC_LEN];
        if (split_kv(item, len, &val, &val_len, &key_len) &&
            key_is(item, key_len, "v1") &&
            ust__sig_hex_decode_mac(val, val_len, cand) == 0 &&
            CRYPTO_memcmp(cand, mac, sizeof(mac)) == 0)
            matched = 1;
    }
    if (!matched)
        return UST_SIG_INVALID;
    return ust__sig_expired(p, req, t) ? UST_SIG_EXPIRED : UST_SIG_VERIFIED;
}

int ust__stripe_sign(const ust_sig_params *p, int64_t timestamp_s, ust_request *req)
{
    unsigned char mac[UST__SIG_MAC_LEN];
    char hex[2 * UST__SIG_MAC_LEN + 1];
    int rc = stripe_mac(p->secret, timestamp_s, req, mac);
    if (rc != 0)
        return rc;
    ust_hex_encode(mac, sizeof(mac), hex);
    char *value = ust_sprintf("t=%" PRId64 ",v1=%s", timestamp_s, hex);
    if (value == NULL)
        return UST_ENOMEM;
    rc = ust_request_add_header(req, UST__STRIPE_HEADER, value);
    ust_free(value);
    return rc;
}
