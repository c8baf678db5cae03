/* Webhook signature schemes, verified on the raw body bytes with OpenSSL HMAC
 * and a constant-time compare. Any one of several listed signatures is
 * accepted (secret rotation). Time is the event's received_at, never the wall
 * clock: a capture from last month verifies as it did when it arrived. */
#ifndef UNDERSTUDY_SIG_H
#define UNDERSTUDY_SIG_H

#include <stdint.h>

#include <understudy/request.h>

typedef enum ust_sig_status {
    UST_SIG_UNSIGNED = 0, /* the route has no scheme */
    UST_SIG_VERIFIED,
    UST_SIG_INVALID, /* present but malformed, or no listed signature matches */
    UST_SIG_MISSING, /* the signature header (or a header it needs) is absent */
    UST_SIG_EXPIRED  /* matches, but its timestamp is outside the tolerance */
} ust_sig_status;

typedef enum ust_sig_scheme {
    UST_SCHEME_NONE = 0,
    UST_SCHEME_STRIPE,            /* "stripe" */
    UST_SCHEME_STANDARD_WEBHOOKS, /* "standard-webhooks" */
    UST_SCHEME_HMAC_SHA256_HEX    /* "hmac-sha256-hex" (GitHub style) */
} ust_sig_scheme;

#define UST_SIG_DEFAULT_TOLERANCE_S 300
#define UST_SIG_DEFAULT_HEX_HEADER "X-Hub-Signature-256"

typedef struct ust_sig_params {
    ust_sig_scheme scheme;
    const char *secret;  /* borrowed; the secret as configured (whsec_ kept) */
    const char *header;  /* hmac-sha256-hex only: header name; NULL = default */
    int64_t tolerance_s; /* 0 = UST_SIG_DEFAULT_TOLERANCE_S */
} ust_sig_params;

/* "verified", "invalid", "missing", "expired", "unsigned". */
const char *ust_sig_status_name(ust_sig_status s);
/* 0, or UST_EINVAL for an unknown name. */
int ust_sig_status_parse(const char *name, ust_sig_status *out);

/* "stripe", "standard-webhooks", "hmac-sha256-hex"; NONE gives "none". */
const char *ust_sig_scheme_name(ust_sig_scheme s);
/* 0, or UST_EINVAL for an unknown name. */
int ust_sig_scheme_parse(const char *name, ust_sig_scheme *out);

/* 1 when verifying under scheme reads the header name (case-insensitive);
 * hex_header is the hmac-sha256-hex header as in ust_sig_params (NULL =
 * default). Such a header must be stored as it arrived: masked, no replay
 * or verify could check the signature again. */
int ust_sig_reads_header(ust_sig_scheme scheme, const char *hex_header,
                         const char *name);

/* 0 when secret can key scheme's signatures; UST_EINVAL when it cannot (empty,
 * scheme NONE, or for standard-webhooks not base64 after an optional whsec_,
 * or decoding to nothing); UST_ENOMEM. Checked at start, so a bad secret is
 * refused once rather than every delivery being recorded invalid. */
int ust_sig_secret_check(ust_sig_scheme scheme, const char *secret);

/* Verifies req (headers, raw body, received_at_us) under p. A scheme of NONE
 * gives UST_SIG_UNSIGNED. A timestamp more than tolerance_s before or after
 * received_at is UST_SIG_EXPIRED (we reject far-future timestamps too). */
ust_sig_status ust_sig_verify(const ust_sig_params *p, const ust_request *req);

/* Adds to req the header(s) that sign req->body under p at unix time
 * timestamp_s. msg_id is the standard-webhooks webhook-id (required there,
 * ignored elsewhere). Used by the traffic driver and the tests.
 * 0, UST_EINVAL (bad secret, scheme NONE, missing msg_id), UST_ENOMEM. */
int ust_sig_sign(const ust_sig_params *p, int64_t timestamp_s, const char *msg_id,
                 ust_request *req);

#endif
