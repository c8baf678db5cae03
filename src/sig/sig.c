#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

static const char *const status_names[] = {
    [UST_SIG_UNSIGNED] = "unsigned", [UST_SIG_VERIFIED] = "verified",
    [UST_SIG_INVALID] = "invalid",   [UST_SIG_MISSING] = "missing",
    [UST_SIG_EXPIRED] = "expired",
};

/* The table of schemes, from UST_SIG_SCHEME_MAP: names and implementations. */
static const char *const scheme_names[] = {[UST_SCHEME_NONE] = "none",
#define NAME(id, name, impl) [UST_SCHEME_##id] = name,
                                           UST_SIG_SCHEME_MAP(NAME)
#undef NAME
};

static const ust__sig_scheme *const schemes[] = {[UST_SCHEME_NONE] = NULL,
#define IMPL(id, name, impl) [UST_SCHEME_##id] = &ust__sig_##impl,
                                                 UST_SIG_SCHEME_MAP(IMPL)
#undef IMPL
};

#define N_STATUS UST_ARRAY_SIZE(status_names)
#define N_SCHEME UST_ARRAY_SIZE(scheme_names)

/* Callers print a name; an out-of-range value must not crash them. */
static const char *name_at(const char *const *names, size_t n, unsigned i)
{
    return i < n ? names[i] : "unknown";
}

static int name_find(const char *const *names, size_t n, const char *name,
                     unsigned *out)
{
    if (name == NULL || out == NULL)
        return UST_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (unsigned)i;
            return 0;
        }
    }
    return UST_EINVAL;
}

/* ust_sig_status_name / _parse and ust_sig_scheme_name / _parse: the same
 * two functions over each name table. */
#define NAMED_ENUM(type, names, n)                                                     \
    const char *type##_name(type v)                                                    \
    {                                                                                  \
        return name_at(names, n, (unsigned)v);                                         \
    }                                                                                  \
    int type##_parse(const char *name, type *out)                                      \
    {                                                                                  \
        unsigned i;                                                                    \
        int rc = name_find(names, n, name, &i);                                        \
        if (rc == 0)                                                                   \
            *out = (type)i;                                                            \
        return rc;                                                                     \
    }
NAMED_ENUM(ust_sig_status, status_names, N_STATUS)
NAMED_ENUM(ust_sig_scheme, scheme_names, N_SCHEME)
#undef NAMED_ENUM

static const ust__sig_scheme *scheme_of(ust_sig_scheme s)
{
    return (unsigned)s < N_SCHEME ? schemes[s] : NULL;
}

const ust_sig_scheme_info *ust_sig_scheme_info_of(ust_sig_scheme s)
{
    const ust__sig_scheme *d = scheme_of(s);
    return d != NULL ? &d->info : NULL;
}

const char *ust__sig_named_header(const ust__sig_scheme *d, const char *configured)
{
    return configured != NULL && configured[0] != '\0' ? configured : d->headers[0];
}

/* The HMAC key secret stands for under d, in *key / *key_len (released
 * with ust__sig_free_key). */
static int scheme_key(const ust__sig_scheme *d, const char *secret, unsigned char **key,
                      size_t *key_len)
{
    *key = NULL;
    *key_len = 0;
    if (secret == NULL || secret[0] == '\0')
        return UST_EINVAL;
    if (d->key != NULL)
        return d->key(secret, key, key_len);
    *key_len = strlen(secret);
    *key = ust_memdup(secret, *key_len);
    return *key != NULL ? 0 : UST_ENOMEM;
}

void ust__sig_free_key(unsigned char *key, size_t key_len)
{
    if (key != NULL)
        OPENSSL_cleanse(key, key_len);
    ust_free(key);
}

int ust_sig_secret_check(ust_sig_scheme scheme, const char *secret)
{
    const ust__sig_scheme *d = scheme_of(scheme);
    if (d == NULL)
        return UST_EINVAL;
    unsigned char *key;
    size_t key_len;
    int rc = scheme_key(d, secret, &key, &key_len);
    ust__sig_free_key(key, key_len);
    return rc;
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
    const ust__sig_scheme *d = scheme_of(p->scheme);
    if (d == NULL || (req->body == NULL && req->body_len > 0))
        return UST_SIG_INVALID;
    return d->verify(p, req);
}

int ust_sig_reads_header(ust_sig_scheme scheme, const char *hex_header,
                         const char *name)
{
    const ust__sig_scheme *d = scheme_of(scheme);
    if (d == NULL)
        return 0;
    if (d->info.named_header)
        return strcasecmp(name, ust__sig_named_header(d, hex_header)) == 0;
    for (size_t i = 0; d->headers[i] != NULL; i++)
        if (strcasecmp(name, d->headers[i]) == 0)
            return 1;
    return 0;
}

struct ust_sig_signer {
    const ust__sig_scheme *d;
    ust_sig_params p;
    size_t n_macs;
    ust__sig_mac *macs[];
};

void ust_sig_signer_free(ust_sig_signer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_macs; i++)
        ust__sig_mac_free(s->macs[i]);
    ust_free(s);
}

int ust_sig_signer_new(const ust_sig_params *p, const char *const *secrets,
                       size_t n_secrets, ust_sig_signer **out)
{
    *out = NULL;
    if (p == NULL)
        return UST_EINVAL;
    if (n_secrets == 0) {
        secrets = &p->secret;
        n_secrets = 1;
    }
    const ust__sig_scheme *d = scheme_of(p->scheme);
    if (d == NULL || secrets == NULL)
        return UST_EINVAL;
    ust_sig_signer *s = ust_calloc(1, sizeof(*s) + n_secrets * sizeof(s->macs[0]));
    if (s == NULL)
        return UST_ENOMEM;
    s->d = d;
    s->p = *p;
    int rc = 0;
    for (; rc == 0 && s->n_macs < n_secrets; s->n_macs++) {
        unsigned char *key;
        size_t key_len;
        rc = scheme_key(d, secrets[s->n_macs], &key, &key_len);
        if (rc == 0)
            rc = ust__sig_mac_new(key, key_len, &s->macs[s->n_macs]);
        ust__sig_free_key(key, key_len);
    }
    if (rc != 0) {
        ust_sig_signer_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int ust_sig_signer_sign(ust_sig_signer *s, int64_t timestamp_s, const char *msg_id,
                        ust_request *req)
{
    if (s == NULL || req == NULL || (req->body == NULL && req->body_len > 0))
        return UST_EINVAL;
    /* Only timestamps that verify can parse back are signed. */
    if (timestamp_s < 0 || timestamp_s > UST__SIG_MAX_TIMESTAMP)
        return UST_EINVAL;
    if (s->d->info.needs_msg_id && msg_id == NULL)
        return UST_EINVAL;
    return s->d->sign(&s->p, s->macs, s->n_macs, timestamp_s, msg_id, req);
}

int ust_sig_sign_with(const ust_sig_params *p, const char *const *secrets,
                      size_t n_secrets, int64_t timestamp_s, const char *msg_id,
                      ust_request *req)
{
    if (p == NULL || req == NULL || secrets == NULL || n_secrets == 0)
        return UST_EINVAL;
    /* The cheap refusals first, so they do not depend on keying. */
    const ust_sig_scheme_info *info = ust_sig_scheme_info_of(p->scheme);
    if (info == NULL || (req->body == NULL && req->body_len > 0) || timestamp_s < 0 ||
        timestamp_s > UST__SIG_MAX_TIMESTAMP || (info->needs_msg_id && msg_id == NULL))
        return UST_EINVAL;
    ust_sig_signer *s;
    int rc = ust_sig_signer_new(p, secrets, n_secrets, &s);
    if (rc == 0)
        rc = ust_sig_signer_sign(s, timestamp_s, msg_id, req);
    ust_sig_signer_free(s);
    return rc;
}

int ust_sig_sign(const ust_sig_params *p, int64_t timestamp_s, const char *msg_id,
                 ust_request *req)
{
    if (p == NULL)
        return UST_EINVAL;
    return ust_sig_sign_with(p, &p->secret, 1, timestamp_s, msg_id, req);
}

int ust__sig_join(char **value, const char *head, const char *sep, const char *tag,
                  ust__sig_mac *const *macs, size_t n_macs, ust__sig_text_fn text,
                  const void *msg)
{
    /* Set on every path: the schemes free *value whatever the outcome. */
    *value = NULL;
    char *v = ust_strdup(head);
    for (size_t i = 0; v != NULL && i < n_macs; i++) {
        char buf[UST__SIG_TEXT_CAP];
        int rc = text(macs[i], msg, buf);
        if (rc != 0) {
            ust_free(v);
            return rc;
        }
        char *longer = ust_sprintf("%s%s%s%s", v, i > 0 ? sep : "", tag, buf);
        ust_free(v);
        v = longer;
    }
    *value = v;
    return v != NULL ? 0 : UST_ENOMEM;
}

void ust__sig_mac_free(ust__sig_mac *m)
{
    EVP_MAC_CTX_free(m);
}

int ust__sig_mac_new(const unsigned char *key, size_t key_len, ust__sig_mac **out)
{
    /* EVP_MAC streams the parts, so the body is never copied next to its
     * prefix; the HMAC_* functions are deprecated on OpenSSL 3. */
    *out = NULL;
    if (key_len == 0)
        return UST_EINVAL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac); /* the context holds its own reference */
    if (ctx == NULL || !EVP_MAC_init(ctx, key, key_len, params)) {
        EVP_MAC_CTX_free(ctx);
        return UST_ENOMEM;
    }
    *out = ctx;
    return 0;
}

/* Keying an HMAC costs more than MACing a webhook's body: OpenSSL looks
 * HMAC and SHA256 up in its provider tables and hashes the padded key
 * twice. Each thread keeps the few keys it verified with last, keyed
 * contexts ready; a context is used by its own thread only. The key bytes
 * are kept to recognise the key and cleansed when the slot is reused or
 * the thread ends. */
#define MAC_CACHE_SLOTS 4

typedef struct mac_slot {
    unsigned char *key;
    size_t key_len;
    ust__sig_mac *mac;
} mac_slot;

typedef struct mac_cache {
    mac_slot slot[MAC_CACHE_SLOTS];
    size_t next; /* the slot a new key takes */
} mac_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_made;
/* Also the thread's reference to its cache while it lives (the key's value
 * is only read by the destructor at thread exit). */
static _Thread_local mac_cache *thread_cache;

static void slot_clear(mac_slot *s)
{
    ust__sig_free_key(s->key, s->key_len);
    ust__sig_mac_free(s->mac);
    memset(s, 0, sizeof(*s));
}

static void cache_free(void *arg)
{
    mac_cache *c = arg;
    for (size_t i = 0; i < MAC_CACHE_SLOTS; i++)
        slot_clear(&c->slot[i]);
    ust_free(c);
    thread_cache = NULL;
}

static void cache_key_make(void)
{
    cache_key_made = pthread_key_create(&cache_key, cache_free) == 0;
}

/* The calling thread's cache; NULL when it cannot have one. */
static mac_cache *cache_of_thread(void)
{
    if (thread_cache != NULL)
        return thread_cache;
    pthread_once(&cache_once, cache_key_make);
    if (!cache_key_made)
        return NULL;
    mac_cache *c = ust_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    if (pthread_setspecific(cache_key, c) != 0) {
        ust_free(c);
        return NULL;
    }
    return thread_cache = c;
}

ust__sig_mac *ust__sig_keyed_mac(const unsigned char *key, size_t key_len)
{
    mac_cache *c = cache_of_thread();
    if (c == NULL || key_len == 0)
        return NULL;
    for (size_t i = 0; i < MAC_CACHE_SLOTS; i++) {
        mac_slot *s = &c->slot[i];
        if (s->mac != NULL && s->key_len == key_len &&
            memcmp(s->key, key, key_len) == 0)
            return s->mac;
    }
    mac_slot *s = &c->slot[c->next];
    slot_clear(s);
    if ((s->key = ust_memdup(key, key_len)) == NULL)
        return NULL;
    s->key_len = key_len;
    if (ust__sig_mac_new(key, key_len, &s->mac) != 0) {
        slot_clear(s);
        return NULL;
    }
    c->next = (c->next + 1) % MAC_CACHE_SLOTS;
    return s->mac;
}

ust__sig_mac *ust__sig_secret_mac(const char *secret)
{
    return ust__sig_keyed_mac((const unsigned char *)secret, strlen(secret));
}

int ust__sig_mac_run(ust__sig_mac *m, const ust__slice *parts, size_t n_parts,
                     unsigned char out[UST__SIG_MAC_LEN])
{
    /* A NULL key re-initialises with the key and digest set at creation. */
    size_t out_len = 0;
    if (!EVP_MAC_init(m, NULL, 0, NULL))
        return UST_ENOMEM;
    for (size_t i = 0; i < n_parts; i++)
        if (parts[i].len > 0 && !EVP_MAC_update(m, parts[i].ptr, parts[i].len))
            return UST_ENOMEM;
    if (!EVP_MAC_final(m, out, &out_len, UST__SIG_MAC_LEN) ||
        out_len != UST__SIG_MAC_LEN)
        return UST_ENOMEM;
    return 0;
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

int ust__sig_hex_decode_mac(const char *s, size_t len,
                            unsigned char out[UST__SIG_MAC_LEN])
{
    if (len != 2 * UST__SIG_MAC_LEN)
        return UST_EPARSE;
    for (size_t i = 0; i < UST__SIG_MAC_LEN; i++) {
        int hi = ust_hex_digit((unsigned char)s[2 * i]);
        int lo = ust_hex_digit((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return UST_EPARSE;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int ust__sig_hex_listed(const char *list, const char *tag,
                        const unsigned char mac[UST__SIG_MAC_LEN])
{
    size_t tag_len = strlen(tag), len;
    const char *cur = list, *item;
    int matched = 0;
    while (!matched && ust__sig_next_item(&cur, ',', &item, &len)) {
        unsigned char cand[UST__SIG_MAC_LEN];
        if (len >= tag_len && memcmp(item, tag, tag_len) == 0 &&
            ust__sig_hex_decode_mac(item + tag_len, len - tag_len, cand) == 0 &&
            CRYPTO_memcmp(cand, mac, UST__SIG_MAC_LEN) == 0)
            matched = 1;
    }
    return matched;
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
