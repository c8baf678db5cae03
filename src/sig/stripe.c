/* Stripe: Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...] over "<t>.<body>",
 * keyed with the secret string's bytes (whsec_ kept, not decoded). */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <inttypes.h>
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

#define HEADER "Stripe-Signature"

/* The MAC of "<t>.<body>" under m; m NULL (the secret could not key one)
 * fails. */
static int stripe_mac(ust__sig_mac *m, int64_t t, const ust_request *req,
                      unsigned char mac[UST__SIG_MAC_LEN])
{
    /* The signed "<t>" is the parsed number, as Stripe's libraries format it. */
    char prefix[32];
    int n = snprintf(prefix, sizeof(prefix), "%" PRId64 ".", t);
    ust__slice parts[] = {{prefix, (size_t)n}, {req->body, req->body_len}};
    return m != NULL ? ust__sig_mac_run(m, parts, 2, mac) : UST_ENOMEM;
}

static ust_sig_status stripe_verify(const ust_sig_params *p, const ust_request *req)
{
    const char *h = ust_request_header(req, HEADER);
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
    ust__sig_mac *m = ust__sig_secret_mac(p->secret);
    int rc = stripe_mac(m, t, req, mac);
    if (rc != 0)
        return UST_SIG_INVALID;

    /* Match before time: a forged signature with an old t is INVALID. */
    if (!ust__sig_hex_listed(h, "v1=", mac))
        return UST_SIG_INVALID;
    return ust__sig_expired(p, req, t) ? UST_SIG_EXPIRED : UST_SIG_VERIFIED;
}

typedef struct signed_msg {
    int64_t t;
    const ust_request *req;
} signed_msg;

static int hex_text(ust__sig_mac *m, const void *msg, char buf[UST__SIG_TEXT_CAP])
{
    const signed_msg *sm = msg;
    unsigned char mac[UST__SIG_MAC_LEN];
    int rc = stripe_mac(m, sm->t, sm->req, mac);
    if (rc == 0)
        ust_hex_encode(mac, sizeof(mac), buf);
    return rc;
}

/* t=<t>,v1=<hex>[,v1=<hex>...]: one v1 per mac, in order. */
static int stripe_sign(const ust_sig_params *p, ust__sig_mac *const *macs,
                       size_t n_macs, int64_t timestamp_s, const char *msg_id,
                       ust_request *req)
{
    (void)p;
    (void)msg_id;
    char head[32], *value;
    snprintf(head, sizeof(head), "t=%" PRId64 ",", timestamp_s);
    signed_msg sm = {timestamp_s, req};
    int rc = ust__sig_join(&value, head, ",", "v1=", macs, n_macs, hex_text, &sm);
    if (rc == 0)
        rc = ust_request_add_header(req, HEADER, value);
    ust_free(value);
    return rc;
}

const ust__sig_scheme ust__sig_stripe = {
    .info =
        {
            .secret_what = "a usable secret",
            .wrong_secret = "whsec_a_wrong_secret",
            .previous_secret = "whsec_the_previous_secret",
        },
    .headers = {HEADER, NULL},
    .key = NULL, /* the secret string's bytes, whsec_ kept */
    .verify = stripe_verify,
    .sign = stripe_sign,
};
