/* Counting coverage: up to five reads of the log, each in the order one
 * family of kinds needs (by seq; by event id; by transaction; by intent; by
 * idempotency key; the first says which of the others would find anything),
 * each group of events checked with a small state here. Every read stops at
 * through_seq, and the log is append-only, so the reads agree on what they
 * see while a recorder appends. docs/semantics.md says what each kind means
 * and why. */
#include <understudy/alloc.h>
#include <understudy/coverage.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

/* ---- a group's key: the key columns of the row that opened it ---------- */

enum { MAX_PARTS = 4 };

typedef struct group_key {
    char *buf; /* the parts, each NUL-terminated, one after the other */
    size_t cap;
    unsigned char present[MAX_PARTS]; /* 0: the part was NULL */
    size_t n;                         /* parts held; 0 before the first row */
} group_key;

static int part_equal(const group_key *g, size_t *off, size_t i, const char *s)
{
    const char *held = g->buf + *off;
    size_t len = strlen(held);
    *off += len + 1;
    if (!g->present[i] || s == NULL)
        return !g->present[i] && s == NULL;
    return strcmp(held, s) == 0;
}

/* 1 when parts are those of the current group; else they open a new one
 * (0), or UST_ENOMEM. A NULL part equals only a NULL part. */
static int same_group(group_key *g, const char *const *parts, size_t n)
{
    size_t off = 0, i = 0;
    while (g->n == n && i < n && part_equal(g, &off, i, parts[i]))
        i++;
    if (g->n == n && i == n)
        return 1;
    size_t need = 0;
    for (i = 0; i < n; i++)
        need += (parts[i] ? strlen(parts[i]) : 0) + 1;
    char *grown = ust_grow(g->buf, &g->cap, need, 256, 1);
    if (grown == NULL)
        return UST_ENOMEM;
    g->buf = grown;
    off = 0;
    for (i = 0; i < n; i++) {
        const char *s = parts[i] ? parts[i] : "";
        size_t len = strlen(s) + 1;
        memcpy(g->buf + off, s, len);
        off += len;
        g->present[i] = parts[i] != NULL;
    }
    g->n = n;
    return 0;
}

/* ---- the counter ------------------------------------------------------- */

typedef struct counter {
    const ust_coverage_params *p;
    ust_coverage *out;
    group_key key, sub;
    /* Moves to paid (by seq - base), from the transaction read for the
     * intent read: one bit per event. */
    unsigned char *moved_to_paid;
    int64_t base, n_bits, first_seq, last_seq;
    /* What each read by group would find, from the pass by seq: a read
     * with nothing to find is not made (a log of API requests without keys
     * is read once). */
    int64_t by_event_id, by_transaction, by_intent, by_key;
    /* the transaction read: the group's state */
    int state;             /* STATE_NONE or a state's index */
    unsigned targets_seen; /* one bit per target state */
    char **ids;            /* event ids seen in the transaction */
    size_t n_ids, cap_ids;
    int64_t last_paid_at; /* the intent read: the group's last move to paid */
    int has_last_paid;
    char first_sha[UST_SHA256_HEX_LEN + 1]; /* the key read: the first request */
    int64_t first_at;
} counter;

#define COUNT(c, kind) ((c)->out->counts[UST_COVERAGE_##kind]++)

static void mark(counter *c, int64_t seq)
{
    int64_t i = seq - c->base;
    if (i >= 0 && i < c->n_bits)
        c->moved_to_paid[i / 8] |= (unsigned char)(1u << (i % 8));
}

static int marked(const counter *c, int64_t seq)
{
    int64_t i = seq - c->base;
    return i >= 0 && i < c->n_bits && (c->moved_to_paid[i / 8] >> (i % 8)) & 1;
}

/* Every event: the signature kinds and API requests without a key. */
static int each_event(void *ctx, const ust_log_scan_row *r)
{
    counter *c = ctx;
    if (c->first_seq == 0)
        c->first_seq = r->seq;
    c->last_seq = r->seq;
    if (r->sig == UST_SIG_INVALID)
        COUNT(c, signature_invalid);
    else if (r->sig == UST_SIG_MISSING)
        COUNT(c, signature_missing);
    else if (r->sig == UST_SIG_EXPIRED)
        COUNT(c, signature_expired);
    if (r->api && r->idem_key == NULL)
        COUNT(c, api_missing_key);
    if (r->api) {
        c->by_key += r->idem_key != NULL;
    } else if (r->route != NULL &&
               (r->sig == UST_SIG_VERIFIED || r->sig == UST_SIG_UNSIGNED)) {
        c->by_event_id += r->event_id != NULL;
        c->by_transaction += r->transaction_id != NULL;
        c->by_intent += r->transaction_id != NULL && r->intent != NULL &&
                        r->has_amount && r->currency != NULL &&
                        r->target_status != NULL &&
                        strcmp(r->target_status, "paid") == 0;
    }
    return 0;
}

/* By (provider, event id): every event after a group's first. */
static int each_by_event_id(void *ctx, const ust_log_scan_row *r)
{
    counter *c = ctx;
    const char *parts[] = {r->provider, r->event_id};
    int same = same_group(&c->key, parts, 2);
    if (same < 0)
        return same;
    if (same)
        COUNT(c, identical_redelivery);
    return 0;
}

/* The canonical states, and the legal moves between them: a first event
 * moves from none to pending, paid or cancelled; pending to paid or
 * cancelled; paid to refunded; refunded and cancelled are final. */
enum { STATE_NONE = -1, PENDING, PAID, REFUNDED, CANCELLED };

static int state_index(const char *s)
{
    static const char *const names[] = {"pending", "paid", "refunded", "cancelled"};
    for (int i = 0; s != NULL && i < 4; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return STATE_NONE;
}

static int legal(int from, int to)
{
    switch (from) {
    case STATE_NONE:
        return to == PENDING || to == PAID || to == CANCELLED;
    case PENDING:
        return to == PAID || to == CANCELLED;
    case PAID:
        return to == REFUNDED;
    default:
        return 0;
    }
}

static void forget_ids(counter *c)
{
    for (size_t i = 0; i < c->n_ids; i++)
        ust_free(c->ids[i]);
    c->n_ids = 0;
}

static int id_seen(const counter *c, const char *id)
{
    for (size_t i = 0; i < c->n_ids; i++)
        if (strcmp(c->ids[i], id) == 0)
            return 1;
    return 0;
}

static int remember_id(counter *c, const char *id)
{
    char **grown = ust_grow(c->ids, &c->cap_ids, c->n_ids + 1, 8, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    c->ids = grown;
    if ((c->ids[c->n_ids] = ust_strdup(id)) == NULL)
        return UST_ENOMEM;
    c->n_ids++;
    return 0;
}

/* By (provider, transaction), in arrival order: the transaction's state
 * machine (out_of_order), a new id for a target state it had already
 * (redelivery_new_id), and where it moved to paid (for semantic_pair). */
static int each_by_transaction(void *ctx, const ust_log_scan_row *r)
{
    counter *c = ctx;
    const char *parts[] = {r->provider, r->transaction_id};
    int same = same_group(&c->key, parts, 2);
    if (same < 0)
        return same;
    if (!same) {
        c->state = STATE_NONE;
        c->targets_seen = 0;
        forget_ids(c);
    }
    int target = state_index(r->target_status);
    if (target == STATE_NONE)
        return 0; /* no canonical state: neither a move nor a redelivery of one */
    if (r->event_id != NULL && (c->targets_seen & (1u << target)) &&
        !id_seen(c, r->event_id))
        COUNT(c, redelivery_new_id);
    if (target != c->state) {
        if (!legal(c->state, target)) {
            COUNT(c, out_of_order); /* and the state stays as it was */
        } else {
            c->state = target;
            if (target == PAID)
                mark(c, r->seq);
        }
    }
    c->targets_seen |= 1u << target;
    return r->event_id != NULL && !id_seen(c, r->event_id) ? remember_id(c, r->event_id)
                                                           : 0;
}

/* By (provider, intent, amount, currency), in arrival time: a move to paid
 * within the window after another transaction's (each transaction moves
 * to paid at most once, so the group's previous move is another's). */
static int each_by_intent(void *ctx, const ust_log_scan_row *r)
{
    counter *c = ctx;
    if (!marked(c, r->seq))
        return 0;
    char amount[24];
    snprintf(amount, sizeof(amount), "%lld", (long long)r->amount);
    const char *parts[] = {r->provider, r->intent, amount, r->currency};
    int same = same_group(&c->key, parts, 4);
    if (same < 0)
        return same;
    if (!same)
        c->has_last_paid = 0;
    if (c->has_last_paid &&
        r->received_at_us - c->last_paid_at <= c->p->semantic_window_s * 1000000)
        COUNT(c, semantic_pair);
    c->last_paid_at = r->received_at_us;
    c->has_last_paid = 1;
    return 0;
}

/* By (route, key), then tenant, in arrival order: each tenant's first
 * request after another tenant's (api_key_across_tenants), and every later
 * request of one (route, tenant, key) against its first. */
static int each_by_key(void *ctx, const ust_log_scan_row *r)
{
    counter *c = ctx;
    const char *parts[] = {r->route, r->idem_key};
    int same_key = same_group(&c->key, parts, 2);
    if (same_key < 0)
        return same_key;
    if (!same_key)
        c->sub.n = 0; /* a new key: its first tenant opens a new subgroup */
    const char *tenant[] = {r->tenant};
    int same_tenant = same_group(&c->sub, tenant, 1);
    if (same_tenant < 0)
        return same_tenant;
    if (!same_tenant) {
        if (same_key)
            COUNT(c, api_key_across_tenants);
        snprintf(c->first_sha, sizeof(c->first_sha), "%s",
                 r->request_sha256 ? r->request_sha256 : "");
        c->first_at = r->received_at_us;
        return 0;
    }
    int64_t after_us = r->received_at_us - c->first_at;
    if (strcmp(c->first_sha, r->request_sha256 ? r->request_sha256 : "") != 0)
        COUNT(c, api_payload_mismatch);
    else if (after_us < c->p->op_latency_ms * 1000)
        COUNT(c, api_concurrent_repeat);
    else
        COUNT(c, api_completed_repeat);
    if (after_us > c->p->key_ttl_s * 1000000)
        COUNT(c, api_after_ttl);
    return 0;
}

static int scan(ust_log *log, counter *c, ust_log_scan_opts o,
                int (*each)(void *, const ust_log_scan_row *), char **err)
{
    c->key.n = c->sub.n = 0;
    return ust_log_scan(log, &o, each, c, err);
}

int ust_coverage_count(ust_log *log, const ust_coverage_params *p, int64_t through_seq,
                       ust_coverage *out, char **err)
{
    memset(out, 0, sizeof(*out));
    counter c;
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.out = out;
    ust_log_scan_opts every = {.through_seq = through_seq, .api_routes = p->api_routes};
    ust_log_scan_opts hooks = every;
    hooks.select = UST_LOG_SCAN_WEBHOOKS;
    hooks.accepted_only = 1; /* webhook kinds count verified events only */
    int rc = scan(log, &c, every, each_event, err);
    if (rc == 0 && c.first_seq > 0) {
        c.base = c.first_seq;
        c.n_bits = c.last_seq - c.first_seq + 1; /* the events there are */
        c.moved_to_paid = ust_calloc((size_t)(c.n_bits / 8 + 1), 1);
        if (c.moved_to_paid == NULL)
            rc = UST_ENOMEM;
    }
    if (rc == 0 && c.by_event_id > 0) {
        hooks.order = UST_LOG_SCAN_EVENT_ID;
        rc = scan(log, &c, hooks, each_by_event_id, err);
    }
    if (rc == 0 && c.by_transaction > 0) {
        hooks.order = UST_LOG_SCAN_TRANSACTION;
        rc = scan(log, &c, hooks, each_by_transaction, err);
    }
    if (rc == 0 && c.by_intent > 0) {
        hooks.order = UST_LOG_SCAN_INTENT;
        hooks.target_status = "paid";
        rc = scan(log, &c, hooks, each_by_intent, err);
    }
    if (rc == 0 && c.by_key > 0) {
        ust_log_scan_opts keyed = every;
        keyed.order = UST_LOG_SCAN_KEY;
        keyed.select = UST_LOG_SCAN_API;
        rc = scan(log, &c, keyed, each_by_key, err);
    }
    forget_ids(&c);
    ust_free(c.ids);
    ust_free(c.key.buf);
    ust_free(c.sub.buf);
    ust_free(c.moved_to_paid);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}
