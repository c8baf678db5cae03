/* Shared by the signature schemes: one HMAC-SHA256 over a list of byte
 * slices (so "<t>.<body>" is never copied), timestamp and hex parsing, the
 * tolerance check, and the per-scheme entry points ust_sig_verify and
 * ust_sig_sign dispatch to. */
#ifndef UNDERSTUDY_SIG_INTERNAL_H
#define UNDERSTUDY_SIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <understudy/request.h>
#include <understudy/sig.h>

#define UST__SIG_MAC_LEN ((size_t)32)

/* The headers each scheme reads (ust_sig_reads_header answers from these). */
#define UST__STRIPE_HEADER "Stripe-Signature"
#define UST__SW_ID_HEADER "webhook-id"
#define UST__SW_TS_HEADER "webhook-timestamp"
#define UST__SW_SIG_HEADER "webhook-signature"

typedef struct ust__slice {
    const void *ptr;
    size_t len;
} ust__slice;

/* HMAC-SHA256 of the concatenation of parts under key. key_len must be > 0.
 * 0, or UST_ENOMEM when OpenSSL fails (it only fails to allocate). */
int ust__hmac_sha256(const unsigned char *key, size_t key_len, const ust__slice *parts,
                     size_t n_parts, unsigned char out[UST__SIG_MAC_LEN]);

/* A unix timestamp in seconds: 1 to 18 ASCII digits, nothing else (no sign,
 * no spaces), so it always fits an int64_t. 0 or UST_EPARSE. */
int ust__sig_parse_timestamp(const char *s, size_t len, int64_t *out);

/* 1 when t is more than the tolerance before or after the request's
 * received_at (whole seconds, floored). */
int ust__sig_expired(const ust_sig_params *p, const ust_request *req, int64_t t);

/* Hex (either case) of exactly UST__SIG_MAC_LEN bytes. 0 or UST_EPARSE. */
int ust__sig_hex_decode_mac(const char *s, size_t len,
                            unsigned char out[UST__SIG_MAC_LEN]);

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

/* The schemes. p and req are not NULL and the body is consistent. verify
 * answers INVALID for a NULL or unusable secret (after its MISSING check);
 * sign gets a non-empty secret and a timestamp in [0, MAX]. */
ust_sig_status ust__stripe_verify(const ust_sig_params *p, const ust_request *req);
int ust__stripe_sign(const ust_sig_params *p, int64_t timestamp_s, ust_request *req);

ust_sig_status ust__standard_webhooks_verify(const ust_sig_params *p,
                                             const ust_request *req);
/* 0 when secret decodes to a key, UST_EINVAL, UST_ENOMEM. */
int ust__standard_webhooks_secret_check(const char *secret);
int ust__standard_webhooks_sign(const ust_sig_params *p, int64_t timestamp_s,
                                const char *msg_id, ust_request *req);

ust_sig_status ust__hmac_hex_verify(const ust_sig_params *p, const ust_request *req);
int ust__hmac_hex_sign(const ust_sig_params *p, ust_request *req);

#endif
