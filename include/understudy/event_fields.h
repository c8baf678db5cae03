#ifndef UNDERSTUDY_EVENT_FIELDS_H
#define UNDERSTUDY_EVENT_FIELDS_H

/* The canonical event's derived fields, declared once (event.h says what
 * the event is). Generated from this table: the members of ust_event and
 * ust_log_record (log.h), a route's field sources (config.h, config.c) and
 * their extraction (derive.c), the event log's columns (schema, insert,
 * decode: src/log), the chain framing (src/log/chain.c), `log export
 * --derived` (src/log/jsonl.c), the child protocol's event and its parser
 * (src/plugin/wire.c), the conversion to the plugin ABI
 * (src/plugin/event_abi.c) and a row's event view (src/runner/event_view.c).
 *
 * X(kind, member, column, wire, wire_at, export, source, since, desc)
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
 *   source  FIELDS: taken from the body or a header, where the route's
 *           "fields" object names (config.h: routes[].fields.<column>, a
 *           TEXT or an AMOUNT); DERIVED: made otherwise (derive.c)
 *   since   the event log format the field arrived in (1: every log has
 *           it). From it the log derives all a new field needs
 *           (src/log/fields.c): the format a writing open records, the
 *           ALTER TABLE that adds its column to an older SQLite or
 *           PostgreSQL log, the NULL an older log read as it is gives in
 *           its place, and its framing in a row's hash (chain.c)
 *   desc    what the field holds, one Markdown sentence or two for the
 *           docs' tables (regenerate them: sh scripts/config-doc.sh
 *           build/src/understudy; the config_doc test fails until then)
 *
 * A new field is one row here (with its desc), appended last, with since = the current
 * format + 1 (UST__LOG_FORMAT_BASE in log_internal.h, while no field is
 * later), and a TEXT or an AMOUNT (an older row has no value for it); if
 * plugins see it, its member is appended to ust_plugin_event too
 * (plugin.h, a binary contract). The order is that of the chain framing,
 * which a row's hash covers, so it never changes: a field arrived after
 * format UST__LOG_FORMAT_BASE is framed after the others and only when
 * present, so every row written before it hashes exactly as it did. */
#define UST_EVENT_FIELDS(X)                                                            \
    X(ROUTE, route, route, route, WIRE, EXPORT, DERIVED, 1,                            \
      "The route's `path`, in the config the event was recorded with.")                \
    X(TEXT, provider, provider, provider, WIRE, EXPORT, DERIVED, 1,                    \
      "The route's `provider`.")                                                       \
    X(TEXT, event_id, event_id, event_id, WIRE, EXPORT, FIELDS, 1,                     \
      "The provider's event (delivery) id; an api route has none.")                    \
    X(TEXT, identity, identity, _, NONE, EXPORT, DERIVED, 1,                           \
      "The event's identity: `PROVIDER:TRANSACTION_ID` (or `PROVIDER:EVENT_ID` "       \
      "without one) on a webhook route, `PATH:TENANT:KEY` (`-` for no tenant) on "     \
      "an api route; none when neither can be formed.")                                \
    X(SHA, request_sha256, request_sha256, request_sha256, WIRE_END, EXPORT, DERIVED,  \
      1,                                                                               \
      "SHA-256 in hex of the body: of its canonical JSON (keys sorted, no "            \
      "whitespace) when the body is JSON, else of its bytes. Two deliveries of the "   \
      "same payload with other headers have the same hash.")                           \
    X(SIG, sig, signature, _, NONE, EXPORT, DERIVED, 1,                                \
      "The signature status at arrival: `verified`, `invalid`, `missing`, "            \
      "`expired` or `unsigned`.")                                                      \
    X(CONFIG, config_hash, config_hash, _, NONE, NO_EXPORT, DERIVED, 1,                \
      "The hash of the config the row was derived under (empty when none).")           \
    X(TEXT, event_type, event_type, event_type, WIRE, NO_EXPORT, FIELDS, 1,            \
      "The provider's event type.")                                                    \
    X(TEXT, transaction_id, transaction_id, transaction_id, WIRE, NO_EXPORT, FIELDS,   \
      1,                                                                               \
      "The payment or object the event is about (the identity on a webhook "           \
      "route).")                                                                       \
    X(TEXT, target_status, target_status, target_status, WIRE, NO_EXPORT, DERIVED, 1,  \
      "The canonical state the event asks for (`pending`, `paid`, `refunded` or "      \
      "`cancelled`), through the route's `status.from` and `status.map`; none "        \
      "without a `status` block, or for a value the map does not name.")               \
    X(AMOUNT, amount, amount, amount, WIRE, NO_EXPORT, FIELDS, 1,                      \
      "The amount in minor units: a JSON integer, or a header holding a decimal "      \
      "integer (a sign allowed). A string or a fractional number in the body is "      \
      "not taken to mean minor units and is left out.")                                \
    X(TEXT, currency, currency, currency, WIRE, NO_EXPORT, FIELDS, 1,                  \
      "The currency code, as sent.")                                                   \
    X(TEXT, intent, intent, intent, WIRE, NO_EXPORT, FIELDS, 1,                        \
      "The business intent, e.g. an order id.")                                        \
    X(TEXT, idem_key, idem_key, idempotency_key, WIRE, NO_EXPORT, DERIVED, 1,          \
      "The `Idempotency-Key`, unquoted (`\"k\"` and `k` are the same key); none "      \
      "without the header, for a malformed key, or on a webhook route without an "     \
      "`idempotency` block.")                                                          \
    X(TEXT, tenant, tenant, tenant, WIRE, NO_EXPORT, DERIVED, 1,                       \
      "The tenant: the value of the route's `idempotency.tenant_header`.")

/* What ust_event and ust_log_record both own among these: the TEXT strings,
 * freed with ust_free (alloc.h) from the struct UST_EVENT_FIELDS_OWNER
 * points to, defined where UST_EVENT_FIELDS(UST_EVENT_FREE_TEXT) is used.
 * The route is each one's own business: an event borrows it from the
 * config, a row holds its path. */
#define UST_EVENT_FREE_TEXT_TEXT(p, m) ust_free((p)->m);
#define UST_EVENT_FREE_TEXT_ROUTE(p, m)
#define UST_EVENT_FREE_TEXT_SHA(p, m)
#define UST_EVENT_FREE_TEXT_SIG(p, m)
#define UST_EVENT_FREE_TEXT_AMOUNT(p, m)
#define UST_EVENT_FREE_TEXT_CONFIG(p, m)
#define UST_EVENT_FREE_TEXT(kind, m, column, wire, wire_at, export, source, since,     \
                            desc)                                                      \
    UST_EVENT_FREE_TEXT_##kind(UST_EVENT_FIELDS_OWNER, m)

#endif
