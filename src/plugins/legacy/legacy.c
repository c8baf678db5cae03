/* The legacy reference plugin: payment webhooks and an Idempotency-Key API
 * "made idempotent" the way the Uzbek article's author first did it
 * (SEMANTICS.md, "legacy"). Its bugs are deliberate: the harness needs a
 * realistic old implementation to find divergences against.
 *
 * - Webhooks: a unique key on (provider, event_id); a new event id sets the
 *   transaction's state with no transition check.
 * - API: check, then act. A repeat that arrives before the original completed
 *   finds no key and executes again. Payload mismatch ignored; keys never
 *   expire.
 *
 * State (this plugin's namespace; key parts are escaped, see pu_key; a
 * missing tenant is ""), key -> value:
 *   event|<provider>|<event_id> -> ""              a delivery seen
 *   state|<provider>|<transaction_id> -> "<state>" pending|paid|refunded|cancelled
 *   key|<route>|<tenant>|<key> -> "<done_us>|<status>|<body>"
 * The business operation is not run, it is modelled: an execution at t
 * "completes" at done_us = t + op_latency_ms, and a lookup before done_us
 * finds nothing, just as a SELECT would while the original is still running. */
#include "plugin_util.h"

#include <stdlib.h>

typedef struct legacy {
    int64_t op_latency_us;
} legacy;

static void decide_webhook(const void *instance, pu_call *c)
{
    (void)instance; /* the legacy keeps no webhook settings */
    const ust_plugin_event *ev = c->ev;
    const char *state_key = pu_key(c, "state", ev->provider, ev->transaction_id, NULL);
    const char *before = pu_get(c, state_key);

    /* The unique index on the delivery id: the only duplicate it knows. */
    if (!pu_claim(c, pu_key(c, "event", ev->provider, ev->event_id, NULL), "")) {
        pu_webhook_answer(c, UST_VERDICT_DUPLICATE);
        pu_states(c, before, before);
        pu_reason(c, "event %s already received", ev->event_id);
        return;
    }
    /* No transition check: whatever the provider says now wins. */
    pu_webhook_answer(c, UST_VERDICT_APPLIED);
    pu_states(c, before, ev->target_status);
    pu_put(c, state_key, ev->target_status);
    pu_reason(c, "new event %s: state set to %s", ev->event_id, ev->target_status);
}

static void decide_api(const void *instance, pu_call *c)
{
    const legacy *l = instance;
    const ust_plugin_event *ev = c->ev;
    if (pu_absent(ev->idempotency_key)) {
        /* Nothing to look up: it just runs, every time. */
        pu_answer(c, UST_VERDICT_APPLIED, 201, pu_payment_body(c));
        pu_reason(c, "no Idempotency-Key: executed without protection");
        return;
    }
    const char *key =
        pu_key(c, "key", ev->route != NULL ? ev->route : "",
               ev->tenant != NULL ? ev->tenant : "", ev->idempotency_key, NULL);
    const char *stored = pu_get(c, key);
    pu_field f[3]; /* done_us, status, body */
    if (stored != NULL && pu_split(c, stored, f, 3) == 0 &&
        c->now_us >= pu_field_i64(c, f[0])) {
        /* Payload not compared: a different request gets the old answer. */
        pu_answer(c, UST_VERDICT_DUPLICATE, (int)pu_field_i64(c, f[1]), f[2].p);
        pu_states(c, "completed", "completed");
        pu_reason(c, "key found: stored response returned");
        return;
    }
    /* Check, then act: no completed key yet, so the operation runs, even when
     * the original with this key is still running (a double charge). */
    const char *body = pu_payment_body(c);
    pu_answer(c, UST_VERDICT_APPLIED, 201, body);
    pu_states(c, NULL, "completed");
    if (stored == NULL) {
        int64_t done_us = c->now_us + l->op_latency_us;
        pu_put(c, key, pu_fmt(c, "%lld|201|%s", (long long)done_us, body));
        pu_reason(c, "key not found: executed");
    } else {
        /* The original completes first and its stored response is kept. */
        pu_reason(c, "key not found (the original has not completed): executed again");
    }
}

static int legacy_create(ust_plugin_ctx *ctx, const char *config_json, void **instance)
{
    legacy *l = calloc(1, sizeof *l);
    if (l == NULL) {
        pu_host->set_error(ctx, "out of memory");
        return -1;
    }
    int64_t op_latency_ms;
    const pu_config_key keys[] = {
        {"op_latency_ms", 500, 0, INT64_C(1000) * 86400 * 366, &op_latency_ms},
    };
    if (pu_config_load(ctx, config_json, keys, sizeof keys / sizeof keys[0]) != 0) {
        free(l);
        return -1;
    }
    l->op_latency_us = op_latency_ms * 1000;
    *instance = l;
    return 0;
}

PU_PLUGIN("legacy", "1.0.0", legacy_create, decide_webhook, decide_api);
