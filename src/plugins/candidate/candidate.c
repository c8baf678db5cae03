/* The candidate reference plugin: the three decisions of the Uzbek article
 * plus the evidence (SEMANTICS.md, "candidate").
 *
 * - Identity: (provider, transaction_id) for webhooks, (route, tenant, key)
 *   for the API, claimed with state_claim (INSERT ... ON CONFLICT DO NOTHING).
 * - A state machine that rejects illegal transitions.
 * - A repeat hears the original answer; 409 only for in-progress repeats,
 *   mismatch_status for a reused key with a different payload.
 * - Semantic duplicates (one intent, two transactions) are flagged, not merged.
 *
 * State (this plugin's namespace; key parts are escaped, see pu_key; a
 * missing tenant is ""), key -> value:
 *   event|<provider>|<event_id> -> ""                      a delivery seen
 *   state|<provider>|<transaction_id> -> "<state>"
 *   key|<route>|<tenant>|<key>
 *       -> "<created_us>|<done_us>|<status>|<sha256>|<body>"
 *   paid|<provider>|<intent>|<amount>|<currency> -> "<at_us>|<transaction_id>"
 *                                                   the last move to paid
 *   exec|<tenant>|<intent>|<amount>|<currency> -> "<at_us>|<entity>"
 *                                                   the last API execution
 * The operation is modelled, not run: an execution at t completes at
 * done_us = t + op_latency_ms; until then its key is in progress. */
#include "plugin_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    int64_t semantic_window_us, key_ttl_us, op_latency_us;
    int mismatch_status;
} candidate;

/* LEGAL[from][to]; rows and columns in pu_state_index order: none, pending,
 * paid, refunded, cancelled. A first event may open a transaction in any
 * state but refunded (nothing was paid); refunded and cancelled are final. */
static const unsigned char LEGAL[5][5] = {
    /* none */ {0, 1, 1, 0, 1},
    /* pend */ {0, 0, 1, 0, 1},
    /* paid */ {0, 0, 0, 1, 0},
    /* refd */ {0, 0, 0, 0, 0},
    /* canc */ {0, 0, 0, 0, 0},
};

/* A move to paid: was the same (intent, amount, currency) paid by another
 * transaction of this provider within the window? Returns the reason to give
 * when it was (and flags the decision), NULL otherwise. Records this one. */
static const char *semantic_paid(const candidate *cand, pu_call *c)
{
    const ust_plugin_event *ev = c->ev;
    if (pu_absent(ev->intent) || pu_absent(ev->currency) || !ev->has_amount)
        return NULL;
    const char *amount = pu_fmt(c, "%lld", (long long)ev->amount);
    const char *key =
        pu_key(c, "paid", ev->provider, ev->intent, amount, ev->currency, NULL);
    const char *last = pu_get(c, key);
    const char *why = NULL;
    pu_field f[2]; /* at_us, transaction_id */
    if (last != NULL && pu_split(c, last, f, 2) == 0) {
        int64_t ago = c->now_us - pu_field_i64(c, f[0]);
        if (ago <= cand->semantic_window_us &&
            strcmp(f[1].p, ev->transaction_id) != 0) {
            pu_flag(c, "semantic_duplicate");
            why = pu_fmt(c, "same intent, amount and currency as %s:%s paid %s earlier",
                         ev->provider, f[1].p, pu_elapsed(c, ago));
        }
    }
    pu_put(c, key, pu_fmt(c, "%lld|%s", (long long)c->now_us, ev->transaction_id));
    return why;
}

static void decide_webhook(const void *instance, pu_call *c)
{
    const candidate *cand = instance;
    const ust_plugin_event *ev = c->ev;
    const char *state_key = pu_key(c, "state", ev->provider, ev->transaction_id, NULL);
    const char *before = pu_get(c, state_key);
    const char *target = ev->target_status;
    int from = pu_state_index(before);
    if (from < 0) {
        pu_fail(c, "corrupt state value");
        return;
    }

    /* Claimed before anything else, so every delivery is recorded whatever
     * is decided next. A redelivery is a duplicate even if the state moved. */
    if (!pu_claim(c, pu_key(c, "event", ev->provider, ev->event_id, NULL), "")) {
        pu_webhook_answer(c, UST_VERDICT_DUPLICATE);
        pu_states(c, before, before);
        pu_reason(c, "event %s already delivered", ev->event_id);
        return;
    }
    if (before != NULL && strcmp(before, target) == 0) {
        pu_webhook_answer(c, UST_VERDICT_DUPLICATE);
        pu_states(c, before, before);
        pu_reason(c, "transaction already %s", before);
        return;
    }
    if (!LEGAL[from][pu_state_index(target)]) {
        /* 200 all the same: the message was received, and an error would only
         * make the provider retry an event we will never accept. */
        pu_webhook_answer(c, UST_VERDICT_REJECTED);
        pu_states(c, before, before);
        pu_reason(c, "%s -> %s is not a legal transition",
                  before != NULL ? before : "(new)", target);
        return;
    }
    pu_webhook_answer(c, UST_VERDICT_APPLIED);
    pu_states(c, before, target);
    const char *why = strcmp(target, "paid") == 0 ? semantic_paid(cand, c) : NULL;
    if (why != NULL)
        pu_reason(c, "%s", why);
    else
        pu_reason(c, "%s -> %s", before != NULL ? before : "(new)", target);
    pu_put(c, state_key, target); /* last: `before` is the value this replaces */
}

/* This request executes: answer with its result, and flag it when the same
 * (tenant, intent, amount, currency) executed within the window. */
static void executed(const candidate *cand, pu_call *c, const char *body,
                     const char *before)
{
    const ust_plugin_event *ev = c->ev;
    pu_answer(c, UST_VERDICT_APPLIED, 201, body);
    /* The decision records the outcome of the operation it started. */
    pu_states(c, before, "completed");

    const char *why = NULL;
    if (!pu_absent(ev->intent)) {
        const char *tenant = ev->tenant != NULL ? ev->tenant : "";
        const char *amount = pu_fmt(c, "%lld", (long long)ev->amount);
        const char *exec_key =
            pu_key(c, "exec", tenant, ev->intent, amount, ev->currency, NULL);
        const char *last = pu_get(c, exec_key);
        pu_field f[2]; /* at_us, entity */
        if (last != NULL && pu_split(c, last, f, 2) == 0) {
            int64_t ago = c->now_us - pu_field_i64(c, f[0]);
            if (ago <= cand->semantic_window_us) {
                pu_flag(c, "semantic_duplicate");
                why = pu_fmt(c,
                             "same tenant, intent, amount and currency as %s executed "
                             "%s earlier",
                             f[1].p, pu_elapsed(c, ago));
            }
        }
        const char *entity = c->out->entity != NULL ? c->out->entity : "";
        pu_put(c, exec_key, pu_fmt(c, "%lld|%s", (long long)c->now_us, entity));
    }
    if (why != NULL)
        pu_reason(c, "%s", why);
    else
        pu_reason(c, before != NULL ? "key expired: executed again"
                                    : "key claimed: executed");
}

static void decide_api(const void *instance, pu_call *c)
{
    const candidate *cand = instance;
    const ust_plugin_event *ev = c->ev;
    if (pu_absent(ev->idempotency_key)) {
        pu_error_answer(c, UST_VERDICT_INVALID, 400, "idempotency_key_required");
        pu_reason(c, "no Idempotency-Key");
        return;
    }
    const char *key =
        pu_key(c, "key", ev->route != NULL ? ev->route : "",
               ev->tenant != NULL ? ev->tenant : "", ev->idempotency_key, NULL);
    const char *sha = pu_esc(c, ev->request_sha256);
    /* What this request leaves under the key if it executes: in progress
     * until done_us, then completed with its response. */
    const char *body = pu_payment_body(c);
    int64_t done_us = c->now_us + cand->op_latency_us;
    const char *record = pu_fmt(c, "%lld|%lld|201|%s|%s", (long long)c->now_us,
                                (long long)done_us, sha, body);

    /* The claim settles the race (INSERT ... ON CONFLICT DO NOTHING): of two
     * requests with one key, exactly one executes. */
    if (pu_claim(c, key, record)) {
        executed(cand, c, body, NULL);
        return;
    }
    const char *stored = pu_get(c, key);
    pu_field f[5]; /* created_us, done_us, status, sha256, body */
    if (stored == NULL || pu_split(c, stored, f, 5) != 0)
        return; /* the store failed, or a corrupt value: the call fails */
    int64_t created = pu_field_i64(c, f[0]);
    int in_progress = c->now_us < pu_field_i64(c, f[1]);
    const char *state = in_progress ? "in_progress" : "completed";

    if (c->now_us - created >= cand->key_ttl_us) {
        pu_put(c, key, record); /* the key lived its TTL: a new one replaces it */
        executed(cand, c, body, "expired");
    } else if (f[3].len != strlen(sha) || memcmp(f[3].p, sha, f[3].len) != 0) {
        /* Checked before in_progress: a different payload is a client error
         * whether or not the original has finished. */
        pu_error_answer(c, UST_VERDICT_CONFLICT, cand->mismatch_status,
                        "idempotency_key_reused");
        pu_states(c, state, state);
        pu_reason(c, "key reused with a different request body");
    } else if (in_progress) {
        pu_error_answer(c, UST_VERDICT_IN_PROGRESS, 409, "in_progress");
        pu_header(c, "Retry-After", "1");
        pu_states(c, state, state);
        pu_reason(c, "the original is still in progress");
    } else {
        pu_answer(c, UST_VERDICT_DUPLICATE, (int)pu_field_i64(c, f[2]), f[4].p);
        pu_header(c, "Idempotent-Replayed", "true");
        pu_states(c, state, state);
        pu_reason(c, "completed repeat: stored response replayed");
    }
}

static int candidate_create(ust_plugin_ctx *ctx, const char *config_json,
                            void **instance)
{
    candidate *cand = calloc(1, sizeof *cand);
    if (cand == NULL) {
        pu_host->set_error(ctx, "out of memory");
        return -1;
    }
    /* Upper bounds keep the microsecond arithmetic far from overflow. */
    const int64_t max_s = INT64_C(86400) * 366 * 100;
    int64_t window_s, ttl_s, latency_ms, mismatch;
    const pu_config_key keys[] = {
        {"semantic_window_s", 600, 0, max_s, &window_s},
        {"key_ttl_s", 86400, 0, max_s, &ttl_s},
        {"op_latency_ms", 500, 0, max_s * 1000, &latency_ms},
        {"mismatch_status", 422, 400, 599, &mismatch},
    };
    if (pu_config_load(ctx, config_json, keys, sizeof keys / sizeof keys[0]) != 0) {
        free(cand);
        return -1;
    }
    cand->semantic_window_us = window_s * 1000000;
    cand->key_ttl_us = ttl_s * 1000000;
    cand->op_latency_us = latency_ms * 1000;
    cand->mismatch_status = (int)mismatch;
    *instance = cand;
    return 0;
}

PU_PLUGIN("candidate", "1.0.0", candidate_create, decide_webhook, decide_api);
