/* Helpers shared by the two reference plugins (compiled into each .so, never
 * exported): config parsing, a per-call scratch arena, store access, and the
 * answer shapes both plugins must give ("What both answer", SEMANTICS.md).
 *
 * Errors are sticky per call: a helper that fails (out of memory, store
 * error, corrupt state) records why in the pu_call and the plugin carries on;
 * pu_finish then makes decide fail, and the host discards the call's store
 * writes, so the half-built decision never counts. That keeps each plugin's
 * decision logic free of error plumbing. */
#ifndef UST_PLUGIN_UTIL_H
#define UST_PLUGIN_UTIL_H

#include <understudy/plugin.h>

#include <stdint.h>

/* The host's table, set once by pu_bind_host. Not decision state. */
extern const ust_host_api *pu_host;

/* 0 when host speaks our ABI major and its table has every function we call. */
int pu_bind_host(const ust_host_api *host);

/* ---- the plugin --------------------------------------------------------- */

typedef struct pu_call pu_call;

/* The ABI's table of a reference plugin (both decide on canonical fields
 * only) and the functions its decide calls by the event's route; defined
 * once, in the plugin's own file, by PU_PLUGIN. plugin_util.c's entry point
 * returns the table; its destroy frees the instance create made. decide
 * first makes the checks both plugins share, so they refuse the same events
 * (400 answered) and set the same entity: a webhook needs provider, event
 * id, transaction id and a known target status (entity
 * "<provider>:<transaction_id>"); an API request amount and currency (the
 * key is each plugin's business; entity "<route>:<tenant or ->:<key>" when
 * it has one). webhook and api see only the events that pass. */
typedef struct pu_routes {
    void (*webhook)(const void *instance, pu_call *c);
    void (*api)(const void *instance, pu_call *c);
} pu_routes;

extern const ust_plugin_api pu_plugin_api;
extern const pu_routes pu_plugin_routes;

int pu_decide(void *instance, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
              ust_plugin_decision *out);
void pu_destroy(void *instance);

/* clang-format off */
#define PU_PLUGIN(NAME, VERSION, CREATE, WEBHOOK, API)                        \
    const pu_routes pu_plugin_routes = {(WEBHOOK), (API)};                    \
    const ust_plugin_api pu_plugin_api = {                                    \
        .size = sizeof(ust_plugin_api), .abi_major = UST_PLUGIN_ABI_MAJOR,    \
        .name = (NAME), .version = (VERSION), .create = (CREATE),             \
        .decide = pu_decide, .destroy = pu_destroy,                           \
        .flags = UST_PLUGIN_NO_RAW_REQUEST}
/* clang-format on */

/* ---- config ------------------------------------------------------------ */

/* One integer key of the plugin's config object. */
typedef struct pu_config_key {
    const char *name;
    int64_t def, min, max;
    int64_t *out;
} pu_config_key;

/* Parses config_json (NULL means {}) and fills every key's *out. Nonzero with
 * host->set_error naming the key when a value has the wrong type or range.
 * Unknown keys are logged as warnings: a typo should not pass silently. */
int pu_config_load(ust_plugin_ctx *ctx, const char *config_json,
                   const pu_config_key *keys, size_t n_keys);

/* ---- one decide call --------------------------------------------------- */

typedef struct pu_block pu_block;

struct pu_call {
    ust_plugin_ctx *ctx;
    const ust_plugin_event *ev;
    ust_plugin_decision *out;
    int64_t now_us;    /* the event's received_at: the only clock */
    const char *error; /* first failure of the call, NULL while all is well */
    size_t used;       /* scratch arena: mem, then malloc'd blocks */
    pu_block *blocks;
    char mem[1024];
};

enum pu_route { PU_ROUTE_INVALID = 0, PU_ROUTE_WEBHOOK, PU_ROUTE_API };

/* Starts a call. Returns the route kind; PU_ROUTE_INVALID when the event
 * cannot be decided (then an `invalid` answer is already in out, or c->error
 * is set when the host's structs are too old for us). Always pu_finish. */
int pu_begin(pu_call *c, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
             ust_plugin_decision *out);
/* Frees the scratch; 0, or nonzero with host->set_error when a step failed. */
int pu_finish(pu_call *c);
void pu_fail(pu_call *c, const char *why);

/* Scratch strings, valid until pu_finish. Never NULL: "" after a failure.
 * pu_fmt and pu_reason understand only %s, %d, %lld and %% (a fast subset of
 * printf; the format attribute still checks the arguments). */
const char *pu_fmt(pu_call *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s with '%' and '|' percent-encoded, so it can be a field of a store key or
 * of a "a|b|c" value without ambiguity. NULL gives "". */
const char *pu_esc(pu_call *c, const char *s);
/* Store key "tag|part|part...": parts escaped; NULL-terminated list. */
const char *pu_key(pu_call *c, const char *tag, ...);
/* "3 s" or "250 ms", for reasons. */
const char *pu_elapsed(pu_call *c, int64_t us);

/* ---- store (the plugin's namespace in the host's store) ---------------- */

/* The value, or NULL when absent. Borrowed until decide returns. */
const char *pu_get(pu_call *c, const char *key);
/* 1 when this call inserted key, 0 when it existed. */
int pu_claim(pu_call *c, const char *key, const char *value);
void pu_put(pu_call *c, const char *key, const char *value);

/* A stored "a|b|c" value split in n fields; the last takes the rest of the
 * text, so it may contain '|'. 0, or -1 (and the call fails: corrupt state). */
typedef struct pu_field {
    const char *p;
    size_t len;
} pu_field;
int pu_split(pu_call *c, const char *value, pu_field *fields, size_t n);
int64_t pu_field_i64(pu_call *c, pu_field f);

/* ---- the event --------------------------------------------------------- */

/* NULL and "" are both "the event does not have it". */
int pu_absent(const char *s);
/* 0 none (NULL), 1 pending, 2 paid, 3 refunded, 4 cancelled, -1 unknown. */
int pu_state_index(const char *state);

/* ---- the decision ------------------------------------------------------ */

/* Webhook answer: 200 {"received":true} (applied, duplicate, rejected). */
void pu_webhook_answer(pu_call *c, ust_verdict v);
/* {"error":"<code>"}; code is a plain identifier (no escaping needed). */
void pu_error_answer(pu_call *c, ust_verdict v, int status, const char *code);
void pu_answer(pu_call *c, ust_verdict v, int status, const char *body);
/* The API's 201 body for an execution by this event (scratch string):
 * {"amount":..,"currency":..,"order_id":..,"payment_id":"pay_<seq>"}. */
const char *pu_payment_body(pu_call *c);

void pu_states(pu_call *c, const char *before, const char *after);
void pu_header(pu_call *c, const char *name, const char *value);
void pu_flag(pu_call *c, const char *flag);
void pu_reason(pu_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
