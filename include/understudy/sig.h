/* Webhook signature schemes, verified on the raw body bytes with OpenSSL HMAC
 * and a constant-time compare. Any one of several listed signatures is
 * accepted (secret rotation). Time is the event's received_at, never the wall
 * clock: a capture from last month verifies as it did when it arrived. */
#ifndef UNDERSTUDY_SIG_H
#define UNDERSTUDY_SIG_H

#include <stddef.h>
#include <stdint.h>

#include <understudy/request.h>

typedef enum ust_sig_status {
    UST_SIG_UNSIGNED = 0, /* the route has no scheme */
    UST_SIG_VERIFIED,
    UST_SIG_INVALID, /* present but malformed, or no listed signature matches */
    UST_SIG_MISSING, /* the signature header (or a header it needs) is absent */
    UST_SIG_EXPIRED  /* matches, but its timestamp is outside the tolerance */
} ust_sig_status;

/* The signature schemes, one line each: the enum value, the name config
 * files use, and the implementation in src/sig (a const ust__sig_scheme
 * named ust__sig_<impl>, defined in the scheme's own file). Adding a scheme
 * is one line here and one file there. */
#define UST_SIG_SCHEME_MAP(X)                                                          \
    X(STRIPE, "stripe", stripe)                                                        \
    X(STANDARD_WEBHOOKS, "standard-webhooks", standard_webhooks)                       \
    X(HMAC_SHA256_HEX, "hmac-sha256-hex", hmac_hex)

typedef enum ust_sig_scheme {
    UST_SCHEME_NONE = 0,
#define UST__SIG_ENUM(id, name, impl) UST_SCHEME_##id,
    UST_SIG_SCHEME_MAP(UST__SIG_ENUM)
#undef UST__SIG_ENUM
} ust_sig_scheme;

/* Every scheme name, quoted, "none" last: for "expected one of ..." errors. */
#define UST__SIG_QUOTED(id, name, impl) "\"" name "\", "
#define UST_SIG_SCHEME_CHOICES UST_SIG_SCHEME_MAP(UST__SIG_QUOTED) "\"none\""

#define UST_SIG_DEFAULT_TOLERANCE_S 300
#define UST_SIG_DEFAULT_HEX_HEADER "X-Hub-Signature-256"

/* What config validation and the traffic driver need to know of a scheme,
 * so neither names one. */
typedef struct ust_sig_scheme_info {
    /* The route's "header" key names the signature header (else it is fixed). */
    int named_header;
    /* Signing needs a message id (a scenario step's webhook_id). */
    int needs_msg_id;
    /* What a secret must be, for the error refusing one at start. */
    const char *secret_what;
    /* Secrets the driver signs with: one the scheme can key with that is
     * not the route's ("invalid" steps), and a previous one whose signature
     * goes first ("rotated" steps; NULL: the header carries one signature,
     * the current one). */
    const char *wrong_secret;
    const char *previous_secret;
} ust_sig_scheme_info;

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
/* The scheme's entry; NULL for NONE or a value out of range. */
const ust_sig_scheme_info *ust_sig_scheme_info_of(ust_sig_scheme s);

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

/* As ust_sig_sign, with one signature per secret, in order, in the scheme's
 * header(s) (p->secret is not used): {previous, current} is a sender
 * rotating its secret. n_secrets is 1 or more. */
int ust_sig_sign_with(const ust_sig_params *p, const char *const *secrets,
                      size_t n_secrets, int64_t timestamp_s, const char *msg_id,
                      ust_request *req);

/* A signer keyed once, for signing many messages under the same secrets
 * (the traffic generator signs a week of events): ust_sig_sign_with without
 * deriving the key again each time. secrets as there; NULL with n_secrets 0
 * means p->secret alone. p's strings are borrowed for the signer's life. Not
 * for use by two threads at once. 0, UST_EINVAL, UST_ENOMEM. */
typedef struct ust_sig_signer ust_sig_signer;
int ust_sig_signer_new(const ust_sig_params *p, const char *const *secrets,
                       size_t n_secrets, ust_sig_signer **out);
int ust_sig_signer_sign(ust_sig_signer *s, int64_t timestamp_s, const char *msg_id,
                        ust_request *req);
void ust_sig_signer_free(ust_sig_signer *s);

#endif
