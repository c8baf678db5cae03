/* Shared by the signature schemes: one HMAC-SHA256 over a list of byte
 * slices (so "<t>.<body>" is never copied), timestamp and hex parsing, the
 * tolerance check, and the table entry each scheme defines. */
#ifndef UNDERSTUDY_SIG_INTERNAL_H
#define UNDERSTUDY_SIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <understudy/request.h>
#include <understudy/sig.h>

#define UST__SIG_MAC_LEN ((size_t)32)

typedef struct ust__slice {
    const void *ptr;
    size_t len;
} ust__slice;

/* A unix timestamp in seconds: 1 to 18 ASCII digits, nothing else (no sign,
 * no spaces), so it always fits an int64_t. 0 or UST_EPARSE. */
int ust__sig_parse_timestamp(const char *s, size_t len, int64_t *out);

/* 1 when t is more than the tolerance before or after the request's
 * received_at (whole seconds, floored). */
int ust__sig_expired(const ust_sig_params *p, const ust_request *req, int64_t t);

/* Hex (either case) of exactly UST__SIG_MAC_LEN bytes. 0 or UST_EPARSE. */
int ust__sig_hex_decode_mac(const char *s, size_t len,
                            unsigned char out[UST__SIG_MAC_LEN]);

/* 1 when an item of the comma-separated list is tag followed by the hex of
 * mac (compared in constant time). */
int ust__sig_hex_listed(const char *list, const char *tag,
                        const unsigned char mac[UST__SIG_MAC_LEN]);

/* Frees the headers added to req after it had n_headers of them, so a sign
 * that fails half way leaves req as it was. */
void ust__sig_drop_headers(ust_request *req, size_t n_headers);

/* Iterates a sep-separated list in a NUL-terminated header value: sets *item
 * and *len to the next item with SP / HTAB trimmed at both ends (possibly
 * empty) and advances *cursor. Returns 0 once the list is exhausted; start
 * with *cursor = value. */
int ust__sig_next_item(const char **cursor, char sep, const char **item, size_t *len);

/* Largest timestamp ust__sig_parse_timestamp accepts; sign refuses larger. */
#define UST__SIG_MAX_TIMESTAMP INT64_C(999999999999999999)

/* An HMAC-SHA256 keyed once (OpenSSL's EVP_MAC_CTX): signing many messages
 * reuses the key and the digest lookup. */
typedef struct evp_mac_ctx_st ust__sig_mac;

/* 0, UST_EINVAL for an empty key, UST_ENOMEM. Freed with ust__sig_mac_free. */
int ust__sig_mac_new(const unsigned char *key, size_t key_len, ust__sig_mac **out);
void ust__sig_mac_free(ust__sig_mac *m);
/* A MAC keyed with key (key_len > 0), borrowed from the calling thread's
 * cache of recent keys: not freed by the caller, valid until this thread
 * asks for another key. NULL when it cannot be made (out of memory). */
ust__sig_mac *ust__sig_keyed_mac(const unsigned char *key, size_t key_len);
/* The same, keyed with the bytes of secret (not NULL, not empty). */
ust__sig_mac *ust__sig_secret_mac(const char *secret);
/* The MAC of the concatenation of parts. 0 or UST_ENOMEM. */
int ust__sig_mac_run(ust__sig_mac *m, const ust__slice *parts, size_t n_parts,
                     unsigned char out[UST__SIG_MAC_LEN]);

/* Cleanses and frees a key from ust__sig_scheme.key (NULL is fine). */
void ust__sig_free_key(unsigned char *key, size_t key_len);

/* The text of one signature (hex, base64) of msg under m, in buf. 0 or
 * UST_ENOMEM. */
#define UST__SIG_TEXT_CAP 96
typedef int (*ust__sig_text_fn)(ust__sig_mac *m, const void *msg,
                                char buf[UST__SIG_TEXT_CAP]);

/* *value = head, then for each mac: sep (not before the first), tag and
 * text(mac, msg). The caller frees *value, which is NULL on failure. 0 or
 * UST_ENOMEM. */
int ust__sig_join(char **value, const char *head, const char *sep, const char *tag,
                  ust__sig_mac *const *macs, size_t n_macs, ust__sig_text_fn text,
                  const void *msg);

/* One scheme: its entry in UST_SIG_SCHEME_MAP points at one of these.
 * verify and sign get p and req not NULL and a consistent body. */
typedef struct ust__sig_scheme {
    ust_sig_scheme_info info;
    /* The headers the scheme reads (NULL-terminated); with info.named_header
     * the first is the default the route's "header" replaces. */
    const char *headers[4];
    /* The HMAC key a secret stands for, in *key (ust_free'd, cleansed by the
     * caller); NULL: the secret's bytes as they are. 0, UST_EINVAL (the
     * secret cannot key the scheme), UST_ENOMEM. */
    int (*key)(const char *secret, unsigned char **key, size_t *key_len);
    /* Answers INVALID for a NULL or unusable secret, after its MISSING check. */
    ust_sig_status (*verify)(const ust_sig_params *p, const ust_request *req);
    /* Adds the header(s) carrying one signature per mac, in order; on failure
     * req is left as it was. timestamp_s is in [0, MAX]; msg_id is not NULL
     * when info.needs_msg_id. */
    int (*sign)(const ust_sig_params *p, ust__sig_mac *const *macs, size_t n_macs,
                int64_t timestamp_s, const char *msg_id, ust_request *req);
} ust__sig_scheme;

#define UST__SIG_DECLARE(id, name, impl) extern const ust__sig_scheme ust__sig_##impl;
UST_SIG_SCHEME_MAP(UST__SIG_DECLARE)
#undef UST__SIG_DECLARE

/* The header p's scheme reads when it names one (the default for an unset
 * or empty p->header). */
const char *ust__sig_named_header(const ust__sig_scheme *d, const char *configured);

#endif
