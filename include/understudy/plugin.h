/* understudy plugin ABI, major version 1. Self-contained: a plugin author
 * needs this header and nothing else.
 *
 * A plugin is a shared library exporting one function, UST_PLUGIN_ENTRY
 * (ust_plugin_entry_v1). The host calls it once after dlopen with its table
 * of host functions and gets the plugin's table back. Every struct that
 * crosses starts with its size and grows only by appending fields, so either
 * side can be newer than the other: read a field only when `size` covers it.
 *
 * Ownership, everywhere: what the host passes in is borrowed for the call
 * only (copy what you keep); what the plugin hands back is allocated with
 * host->alloc (or host->strdup) and becomes the host's.
 *
 * Time: a plugin must not read the wall clock. host->now_us() is the received_at
 * of the event being decided, so a replay decides exactly as the live run did.
 * State: a plugin keeps nothing between events in its own memory that affects
 * decisions; it keeps it in the host's store (its own namespace), whose writes
 * during one decide are applied together when decide returns 0, or not at all.
 */
#ifndef UNDERSTUDY_PLUGIN_H
#define UNDERSTUDY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UST_PLUGIN_ABI_MAJOR 1
#define UST_PLUGIN_ABI_MINOR 1
#define UST_PLUGIN_ENTRY ust_plugin_entry_v1
#define UST_PLUGIN_ENTRY_NAME "ust_plugin_entry_v1"

#if defined(__GNUC__)
#define UST_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define UST_PLUGIN_EXPORT
#endif

/* The verdict vocabulary; one word each in every output. */
typedef enum ust_verdict {
    UST_VERDICT_APPLIED = 1, /* the effect happened */
    UST_VERDICT_DUPLICATE,   /* a repeat: stored response, no effect */
    UST_VERDICT_REJECTED,    /* illegal transition: no effect */
    UST_VERDICT_CONFLICT,    /* same key, different payload */
    UST_VERDICT_IN_PROGRESS, /* repeat while the original is still running */
    UST_VERDICT_INVALID,     /* the event cannot be processed */
    UST_VERDICT_ERROR        /* the plugin failed (set by the host) */
} ust_verdict;

/* Opaque per-call context: identifies the plugin and the event being decided. */
typedef struct ust_plugin_ctx ust_plugin_ctx;

typedef struct ust_plugin_header {
    const char *name;
    const char *value;
} ust_plugin_header;

/* The canonical event. Borrowed for the decide call. Strings are
 * NUL-terminated UTF-8 or NULL when the event does not have that field. */
typedef struct ust_plugin_event {
    size_t size; /* sizeof(ust_plugin_event) as the host knows it */
    int64_t seq;
    int64_t received_at_us;
    const char *route_kind; /* "webhook" or "api" */
    const char *route;      /* the route path, e.g. "/payments" */
    const char *provider;
    const char *event_id; /* the provider's delivery/event id */
    const char *event_type;
    const char *transaction_id; /* the provider's transaction id */
    const char *target_status;  /* "pending", "paid", "refunded", "cancelled" */
    int64_t amount;             /* minor units; valid when has_amount */
    int has_amount;
    const char *currency;
    const char *intent;          /* order id or similar user intent */
    const char *idempotency_key; /* unquoted */
    const char *tenant;
    const char *request_sha256; /* canonical-JSON hash of the body */
    const unsigned char *body;
    size_t body_len;
    const ust_plugin_header *headers;
    size_t n_headers;
} ust_plugin_event;

/* The decision, filled by decide. The host zeroes it and sets size before the
 * call. Every pointer the plugin stores here comes from host->alloc or
 * host->strdup and is freed by the host. */
typedef struct ust_plugin_decision {
    size_t size;
    ust_verdict verdict;
    int http_status;     /* 200 to 599: a 1xx is an error decision */
    char *response_body; /* JSON text, or NULL */
    /* Response headers (array and strings host-allocated). None of the
     * host's framing: Content-Length, Transfer-Encoding, Connection,
     * Keep-Alive, Upgrade, TE, Trailer or Proxy-Connection, in any case,
     * makes the decision an error. */
    ust_plugin_header *headers;
    size_t n_headers;
    char *entity;       /* e.g. "stripe:pi_1" or "/payments:t1:key" */
    char *state_before; /* NULL when the entity had no state */
    char *state_after;
    char **flags; /* e.g. "semantic_duplicate"; host-allocated */
    size_t n_flags;
    char *reason; /* one human sentence, optional */
} ust_plugin_decision;

enum ust_log_level { UST_LOG_DEBUG = 0, UST_LOG_INFO, UST_LOG_WARN, UST_LOG_ERROR };

/* What the host offers. Store functions return 0 on success, 1 where noted,
 * negative on failure (then decide should return nonzero). */
typedef struct ust_host_api {
    size_t size;
    uint32_t abi_major, abi_minor;
    void *(*alloc)(size_t n);
    void (*free)(void *p);
    char *(*strdup)(const char *s);
    void (*log)(ust_plugin_ctx *ctx, int level, const char *msg);
    /* Error text for a failing create or decide (copied). */
    void (*set_error)(ust_plugin_ctx *ctx, const char *msg);
    /* The event's received_at: the only clock a plugin reads. */
    int64_t (*now_us)(ust_plugin_ctx *ctx);
    /* Value of key in this plugin's namespace: 1 and *value (borrowed until
     * decide returns; sees this decide's own writes), or 0 when absent. */
    int (*state_get)(ust_plugin_ctx *ctx, const char *key, const char **value);
    int (*state_put)(ust_plugin_ctx *ctx, const char *key, const char *value);
    int (*state_delete)(ust_plugin_ctx *ctx, const char *key);
    /* Insert if absent: 1 when this call created the key, 0 when it existed
     * (the ON CONFLICT DO NOTHING primitive). */
    int (*state_claim)(ust_plugin_ctx *ctx, const char *key, const char *value);
} ust_host_api;

typedef struct ust_plugin_api {
    size_t size;
    uint32_t abi_major; /* must be UST_PLUGIN_ABI_MAJOR */
    const char *name;
    const char *version;
    /* config_json: the plugin's config object as JSON text (borrowed).
     * 0 and *instance, or nonzero with host->set_error(ctx, why). */
    int (*create)(ust_plugin_ctx *ctx, const char *config_json, void **instance);
    /* 0 with *out filled; nonzero (with set_error) makes an `error` decision
     * and discards this call's store writes. */
    int (*decide)(void *instance, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
                  ust_plugin_decision *out);
    void (*destroy)(void *instance);
    /* Appended in ABI 1.1; read only when size covers it. UST_PLUGIN_* bits. */
    uint32_t flags;
} ust_plugin_api;

/* decide reads neither ev->body nor ev->headers: it decides on the canonical
 * fields (request_sha256 stands for the body). The host may then leave them
 * out (body NULL, no headers); in a child process that spares each event
 * the copy, the escaping and the child's parse of the raw request, most of
 * an isolated decide's cost. */
#define UST_PLUGIN_NO_RAW_REQUEST 1u

/* The one exported symbol. Returns the plugin's table (static storage) or
 * NULL when it cannot work with this host. */
typedef const ust_plugin_api *(*ust_plugin_entry_fn)(const ust_host_api *host);
UST_PLUGIN_EXPORT const ust_plugin_api *UST_PLUGIN_ENTRY(const ust_host_api *host);

#ifdef __cplusplus
}
#endif
#endif
