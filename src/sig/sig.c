#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <string.h>
#include <strings.h>

static const char *const status_names[] = {
    [UST_SIG_UNSIGNED] = "unsigned", [UST_SIG_VERIFIED] = "verified",
    [UST_SIG_INVALID] = "invalid",   [UST_SIG_MISSING] = "missing",
    [UST_SIG_EXPIRED] = "expired",
};

static const char *const scheme_names[] = {
    [UST_SCHEME_NONE] = "none",
    [UST_SCHEME_STRIPE] = "stripe",
    [UST_SCHEME_STANDARD_WEBHOOKS] = "standard-webhooks",
    [UST_SCHEME_HMAC_SHA256_HEX] = "hmac-sha256-hex",
};

#define N_STATUS (sizeof(status_names) / sizeof(status_names[0]))
#define N_SCHEME (sizeof(scheme_names) / sizeof(scheme_names[0]))

const char *ust_sig_status_name(ust_sig_status s)
{
    /* Callers print the result; an out-of-range value must not crash them. */
    if ((unsigned)s >= N_STATUS)
        return "unknown";
    return status_names[s];
}

int ust_sig_status_parse(const char *name, ust_sig_status *out)
{
    if (name == NULL || out == NULL)
        return UST_EINVAL;
    for (size_t i = 0; i < N_STATUS; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (ust_sig_status)i;
            return 0;
        }
    }
    return UST_EINVAL;
}

const char *ust_sig_scheme_name(ust_sig_scheme s)
{
    if ((unsigned)s >= N_SCHEME)
        return "unknown";
    return scheme_names[s];
}

int ust_sig_scheme_parse(const char *name, ust_sig_scheme *out)
{
    if (name == NULL || out == NULL)
        return UST_EINVAL;
    for (size_t i = 0; i < N_SCHEME; i++) {
        if (strcmp(name, scheme_names[i]) == 0) {
            *out = (ust_sig_scheme)i;
            return 0;
        }
    }
    return UST_EINVAL;
}

int ust_sig_secret_check(ust_sig_scheme scheme, const char *secret)
{
    if (secret == NULL || secret[0] == '\0')
        return UST_EINVAL;
    switch (scheme) {
    case UST_SCHEME_STRIPE:
    case UST_SCHEME_HMAC_SHA256_HEX:
        return 0; /* keyed with the secret's bytes as they are */
    case UST_SCHEME_STANDARD_WEBHOOKS:
        return ust__standard_webhooks_secret_check(secret);
    case UST_SCHEME_NONE:
        break;
    }
    return UST_EINVAL;
}

ust_sig_status ust_sig_verify(const ust_sig_params *p, const ust_request *req)
{
    /* Fail closed on anything that is not a well-formed call: a request that
     * cannot be checked is never reported as verified. A NULL secret is
     * handled by each scheme after its header check, so a request without
     * the header still reads MISSING. */
    if (p == NULL || req == NULL)
        return UST_SIG_INVALID;
    if (p->scheme == UST_SCHEME_NONE)
        return UST_SIG_UNSIGNED;
    if (req->body == NULL && req->body_len > 0)
        return UST_SIG_INVALID;
    switch (p->scheme) {
    case UST_SCHEME_STRIPE:
        return ust__stripe_verify(p, req);
    case UST_SCHEME_STANDARD_WEBHOOKS:
        return ust__standard_webhooks_verify(p, req);
    case UST_SCHEME_HMAC_SHA256_HEX:
        return ust__hmac_hex_verify(p, req);
    case UST_SCHEME_NONE:
        break;
    }
    return UST_SIG_INVALID;
}

int ust_sig_reads_header(ust_sig_scheme scheme, const char *hex_header,
                         const char *name)
{
    switch (scheme) {
    case UST_SCHEME_STRIPE:
        return strcasecmp(name, UST__STRIPE_HEADER) == 0;
    case UST_SCHEME_STANDARD_WEBHOOKS:
        return strcasecmp(name, UST__SW_ID_HEADER) == 0 ||
               strcasecmp(name, UST__SW_TS_HEADER) == 0 ||
               strcasecmp(name, UST__SW_SIG_HEADER) == 0;
    case UST_SCHEME_HMAC_SHA256_HEX:
        return strcasecmp(name, hex_header ? hex_header : UST_SIG_DEFAULT_HEX_HEADER) ==
               0;
    case UST_SCHEME_NONE:
        break;
    }
    return 0;
}

int ust_sig_sign(const ust_sig_params *p, int64_t timestamp_s, const char *msg_id,
                 ust_request *req)
{
    if (p == NULL || req == NULL || p->secret == NULL || p->secret[0] == '\0')
        return UST_EINVAL;
    if (req->body == NULL && req->body_len > 0)
        return UST_EINVAL;
    /* Only timestamps that verify can parse back are signed. */
    if (timestamp_s < 0 || timestamp_s > UST__SIG_MAX_TIMESTAMP)
        return UST_EINVAL;
    switch (p->scheme) {
    case UST_SCHEME_STRIPE:
        return ust__stripe_sign(p, timestamp_s, req);
    case UST_SCHEME_STANDARD_WEBHOOKS:
        return ust__standard_webhooks_sign(p, timestamp_s, msg_id, req);
    case UST_SCHEME_HMAC_SHA256_HEX:
        return ust__hmac_hex_sign(p, req);
    case UST_SCHEME_NONE:
        break;
    }
    return UST_EINVAL;
}

int ust__hmac_sha256(const unsigned char *key, size_t key_len, const ust__slice *parts,
                     size_t n_parts, unsigned char out[UST__SIG_MAC_LEN])
{
    /* EVP_MAC streams the parts, so the body is never copied next to its
     * prefix; the HMAC_* functions are deprecated on OpenSSL 3. */
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    int rc = UST_ENOMEM;
    size_t out_len = 0;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    if (ctx == NULL || key_len == 0 || !EVP_MAC_init(ctx, key, key_len, params))
        goto done;
    for (size_t i = 0; i < n_parts; i++)
        if (parts[i].len > 0 && !EVP_MAC_update(ctx, parts[i].ptr, parts[i].len))
            goto done;
    if (!EVP_MAC_final(ctx, out, &out_len, UST__SIG_MAC_LEN) ||
        out_len != UST__SIG_MAC_LEN)
        goto done;
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return rc;
}

int ust__sig_parse_timestamp(const char *s, size_t len, int64_t *out)
{
    /* 18 digits keep any value below INT64_MAX, and received_at - t cannot
     * overflow either. */
    if (len == 0 || len > 18)
        return UST_EPARSE;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return UST_EPARSE;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int ust__sig_expired(const ust_sig_params *p, const ust_request *req, int64_t t)
{
    /* A negative tolerance is a configuration mistake; treat it as unset
     * rather than expiring everything. */
    int64_t tol = p->tolerance_s > 0 ? p->tolerance_s : UST_SIG_DEFAULT_TOLERANCE_S;
    int64_t us = req->received_at_us;
    int64_t now = us / 1000000;
    if (us % 1000000 < 0)
        now--; /* floor, not truncation, before the epoch */
    int64_t d = now - t;
    if (d < 0)
        d = -d;
    /* Both directions: Stripe's libraries only reject old timestamps; we also
     * reject ones far in the future, which a correct sender never produces. */
    return d > tol;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ust__sig_hex_decode_mac(const char *s, size_t len,
                            unsigned char out[UST__SIG_MAC_LEN])
{
    if (len != 2 * UST__SIG_MAC_LEN)
        return UST_EPARSE;
    for (size_t i = 0; i < UST__SIG_MAC_LEN; i++) {
        int hi = hex_value(s[2 * i]);
        int lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return UST_EPARSE;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

void ust__sig_drop_headers(ust_request *req, size_t n_headers)
{
    while (req->n_headers > n_headers) {
        req->n_headers--;
        ust_free(req->headers[req->n_headers].name);
        ust_free(req->headers[req->n_headers].value);
    }
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

int ust__sig_next_item(const char **cursor, char sep, const char **item, size_t *len)
{
    const char *s = *cursor;
    if (s == NULL)
        return 0;
    const char *e = strchr(s, sep);
    size_t n = e != NULL ? (size_t)(e - s) : strlen(s);
    *cursor = e != NULL ? e + 1 : NULL;
    while (n > 0 && is_ows(*s)) {
        s++;
        n--;
    }
    while (n > 0 && is_ows(s[n - 1]))
        n--;
    *item = s;
    *len = n;
    return 1;
}
