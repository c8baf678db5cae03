/* The canonical event: what a plugin decides on, derived from a raw request
 * by one pure function of (request, config, secrets). The same at record,
 * import and replay. */
#ifndef UNDERSTUDY_EVENT_H
#define UNDERSTUDY_EVENT_H

#include <jansson.h>
#include <stdint.h>

#include <understudy/config.h>
#include <understudy/hash.h>
#include <understudy/request.h>
#include <understudy/sig.h>

/* The canonical event's derived fields, declared once. Generated from this
 * table: the members of ust_event and ust_log_record (log.h), the event
 * log's columns (schema, insert, decode: src/log), the chain framing
 * (src/log/chain.c), `log export --derived` (src/log/jsonl.c), the child
 * protocol's event and its parser (src/plugin/wire.c), the conversion to
 * the plugin ABI (src/plugin/event_abi.c) and a row's event view
 * (src/runner/event_view.c).
 *
 * X(kind, member, column, wire, wire_at, export)
 *   kind    what the value is, which says how each encoding holds it:
 *           TEXT   char *, owned, NULL when absent
 *           ROUTE  the route: ust_event borrows it from the config, a row
 *                  holds its path; "route_kind" and "route" on the wire
 *           SHA    SHA-256 hex (char[65]), always present
 *           SIG    ust_sig_status, stored and framed by its name
 *           AMOUNT int64_t with has_<member>; NULL (null) when absent
 *           CONFIG the hash of the config a row was derived under ("" when
 *                  none): a field of the row, not of the event
 *   member  the name in ust_event and ust_log_record
 *   column  the column of the log's events table (and `log export` key)
 *   wire    the key in the child protocol's event and the member of
 *           ust_plugin_event (plugin.h: a binary contract, a new field is
 *           appended there by hand); _ when not sent
 *   wire_at WIRE: sent in table order; WIRE_END: sent after the others (as
 *           protocol 1 placed it); NONE: not sent to plugins
 *   export  EXPORT: written by `log export --derived`; NO_EXPORT
 *
 * The order is that of the log's columns and of the chain framing, which a
 * row's hash covers: it never changes, and a new field goes last (existing
 * rows were hashed without it: see ust__log_row_digest). */
#define UST_EVENT_FIELDS(X)                                                            \
    X(ROUTE, route, route, route, WIRE, EXPORT)                                        \
    X(TEXT, provider, provider, provider, WIRE, EXPORT)                                \
    X(TEXT, event_id, event_id, event_id, WIRE, EXPORT) /* api: NULL */                \
    /* webhooks: "<provider>:<transaction_id>" (or ":<event_id>" without one);         \
     * api: "<path>:<tenant or ->:<key>"; NULL when neither can be formed */           \
    X(TEXT, identity, identity, _, NONE, EXPORT)                                       \
    X(SHA, request_sha256, request_sha256, request_sha256, WIRE_END, EXPORT)           \
    X(SIG, sig, signature, _, NONE, EXPORT)                                            \
    X(CONFIG, config_hash, config_hash, _, NONE, NO_EXPORT)                            \
    X(TEXT, event_type, event_type, event_type, WIRE, NO_EXPORT)                       \
    X(TEXT, transaction_id, transaction_id, transaction_id, WIRE, NO_EXPORT)           \
    /* canonical state after mapping */                                                \
    X(TEXT, target_status, target_status, target_status, WIRE, NO_EXPORT)              \
    X(AMOUNT, amount, amount, amount, WIRE, NO_EXPORT) /* minor units */               \
    X(TEXT, currency, currency, currency, WIRE, NO_EXPORT)                             \
    X(TEXT, intent, intent, intent, WIRE, NO_EXPORT)                                   \
    /* unquoted Idempotency-Key */                                                     \
    X(TEXT, idem_key, idem_key, idempotency_key, WIRE, NO_EXPORT)                      \
    X(TEXT, tenant, tenant, tenant, WIRE, NO_EXPORT)

/* A field's member in ust_event (a row's: UST__ROW_MEMBER, log.h). */
#define UST__EVENT_MEMBER_TEXT(m) char *m;
#define UST__EVENT_MEMBER_ROUTE(m) const ust_route *m; /* NULL: unknown route */
#define UST__EVENT_MEMBER_SHA(m) char m[UST_SHA256_HEX_LEN + 1];
#define UST__EVENT_MEMBER_SIG(m) ust_sig_status m;
#define UST__EVENT_MEMBER_AMOUNT(m)                                                    \
    int64_t m;                                                                         \
    int has_##m;
#define UST__EVENT_MEMBER_CONFIG(m)
#define UST__EVENT_MEMBER(kind, m, column, wire, wire_at, export)                      \
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

/* Request hash: SHA-256 of the body's canonical JSON (keys sorted, compact);
 * a non-JSON body (or one nested too deep) hashes as raw bytes. *is_json tells
 * which (may be NULL). 0 or UST_ENOMEM. */
int ust_request_hash(const unsigned char *body, size_t len,
                     char hex[UST_SHA256_HEX_LEN + 1], int *is_json);

/* Canonical JSON text of v (keys sorted, compact), caller frees with free(). */
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
