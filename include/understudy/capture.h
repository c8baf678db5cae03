/* What the recorder keeps of a request: masked header values (a keyed
 * digest in place of a credential) and per-route sampling by entity. Both
 * apply before anything is written; docs/capture.md says what each costs. */
#ifndef UNDERSTUDY_CAPTURE_H
#define UNDERSTUDY_CAPTURE_H

#include <understudy/config.h>
#include <understudy/request.h>
#include <understudy/sig.h>

/* A masked value: this prefix and the hex of the first 16 bytes of
 * HMAC-SHA256(capture key, value). */
#define UST_MASK_PREFIX "hmac-sha256:"
#define UST_MASK_HEX_LEN 32

/* Replaces, in place, the value of every header named in
 * cfg->capture.mask_headers (case-insensitive) by its digest. A value that
 * already is one (a masked log exported and imported again) is kept, so the
 * digest survives the round trip. 0 or UST_ENOMEM (req left partly masked,
 * never half-written: the caller drops it). */
int ust_capture_mask(const ust_config *cfg, ust_request *req);
/* 1 when ust_capture_mask masks a header of this name. */
int ust_capture_masks(const ust_config *cfg, const char *name);
/* The one rule behind it, for a single header (a recorded answer's too):
 * *out is value's digest (ust_malloc'd) when cfg (may be NULL: nothing)
 * masks name and value is not a digest already, else NULL. 0 or
 * UST_ENOMEM. */
int ust_capture_mask_value(const ust_config *cfg, const char *name, const char *value,
                           char **out);

/* 1 when an event of route r with this identity and signature status is
 * sampled out (answered, counted, not recorded): r->sample_bp below 10000,
 * and the first 8 bytes of SHA-256(identity), big-endian, mod 10000 at or
 * above it. The same identity is in or out in every process on every
 * machine. Always 0 (recorded) for an event without an identity, and for a
 * signature that is invalid, missing or expired: that is evidence. */
int ust_capture_sampled_out(const ust_route *r, const char *identity,
                            ust_sig_status sig);

/* For log export --redact: masks req's headers as ust_capture_mask does
 * (rows recorded before masking), and applies cfg->redact as reports do:
 * to the headers it names and to the body when the body is JSON; a
 * non-empty body that is not JSON cannot be checked and is replaced by
 * UST_REDACTED_BODY. 0 or UST_ENOMEM. */
#define UST_REDACTED_BODY "[redacted: not JSON]"
int ust_capture_redact(const ust_config *cfg, ust_request *req);

#endif
