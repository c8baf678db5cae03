/* The canonical event: what a plugin decides on, derived from a raw request
 * by one pure function of (request, config, secrets). The same at record,
 * import and replay. */
#ifndef UNDERSTUDY_EVENT_H
#define UNDERSTUDY_EVENT_H

#include <jansson.h>
#include <stdint.h>

#include <understudy/config.h>
#include <understudy/event_fields.h>
#include <understudy/hash.h>
#include <understudy/request.h>
#include <understudy/sig.h>

/* A field's member in ust_event (a row's: UST__ROW_MEMBER, log.h). */
#define UST__EVENT_MEMBER_TEXT(m) char *m;
#define UST__EVENT_MEMBER_ROUTE(m) const ust_route *m; /* NULL: unknown route */
#define UST__EVENT_MEMBER_SHA(m) char m[UST_SHA256_HEX_LEN + 1];
#define UST__EVENT_MEMBER_SIG(m) ust_sig_status m;
#define UST__EVENT_MEMBER_AMOUNT(m)                                                    \
    int64_t m;                                                                         \
    int has_##m;
#define UST__EVENT_MEMBER_CONFIG(m)
#define UST__EVENT_MEMBER(kind, m, column, wire, wire_at, export, source, since, desc) \
    UST__EVENT_MEMBER_##kind(m)

typedef struct ust_event {
    int64_t seq;
    int64_t received_at_us;
    /* The derived fields; strings owned (ust_malloc), NULL when absent. */
    UST_EVENT_FIELDS(UST__EVENT_MEMBER)
    int body_is_json;
} ust_event;

/* Derives ev from req. Never fails on bad input (a non-JSON body leaves the
 * body fields NULL and hashes the raw bytes); 0 or UST_ENOMEM. seq is set to 0. */
int ust_event_derive(const ust_config *cfg, const ust_request *req, ust_event *ev,
                     char **err);
void ust_event_clear(ust_event *ev);

/* Replay trusts the signature status recorded at arrival (the chain protects
 * it) and need not check it again, nor hold the secrets to. */
enum { UST_DERIVE_SKIP_SIGNATURE = 1 };
/* ust_event_derive with flags; SKIP_SIGNATURE leaves ev->sig UNSIGNED. */
int ust_event_derive_ex(const ust_config *cfg, const ust_request *req, unsigned flags,
                        ust_event *ev, char **err);

/* The partition key of ev under cfg (replay --partition): the value of
 * the first of cfg->partition_by that ev has, not empty (borrowed from ev),
 * or NULL when it has none of them. */
const char *ust_event_partition_key(const ust_config *cfg, const ust_event *ev);
/* The index of the event's text field of that column name (provider,
 * event_id, identity, ...: the names partition_by may give), or -1. */
int ust_event_text_column(const char *column);
/* Those names, comma-separated, for a message. */
const char *ust_event_text_columns(void);

/* Request hash: SHA-256 of the body's canonical JSON (keys sorted, compact);
 * a non-JSON body (or one nested too deep) hashes as raw bytes. *is_json tells
 * which (may be NULL). 0 or UST_ENOMEM. */
int ust_request_hash(const unsigned char *body, size_t len,
                     char hex[UST_SHA256_HEX_LEN + 1], int *is_json);

/* Canonical JSON text of v (keys sorted, compact), caller frees with ust_free(). */
char *ust_json_canonical(const json_t *v);

/* RFC 6901 JSON Pointer lookup; borrowed result or NULL. "" is the root. */
json_t *ust_json_pointer(json_t *root, const char *pointer);
/* The container the pointer's last token names a member of (borrowed, or
 * NULL), and that token unescaped into last (cap bytes): what removing or
 * masking the value at a pointer needs. */
json_t *ust_json_pointer_parent(json_t *root, const char *pointer, char *last,
                                size_t cap);

/* Idempotency-Key header value to the key: an RFC 8941 sf-string ("..." with
 * \" and \\ escapes) or an unquoted token give the same key. 0; UST_EPARSE for
 * an empty or malformed value; UST_ENOMEM. *out is freed by the caller. */
int ust_idem_key_parse(const char *value, char **out);

#endif
