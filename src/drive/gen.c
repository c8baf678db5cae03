/* Synthetic traffic from a seed: a week (or any span) of callbacks with the
 * kinds of duplicates injected at chosen rates, on realistic retry schedules,
 * in time order, with a truth file naming every divergence a replay must
 * find. Deterministic: the same seed and options give the same bytes. */
#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/gen.h>
#include <understudy/hash.h>
#include <understudy/sig.h>

#include <string.h>
#include <strings.h>

const char *const ust_gen_kind_names[UST_GEN_KINDS] = {
    "single", "retry",     "late_new_id", "out_of_order",     "semantic",
    "api",    "api_retry", "concurrent",  "invalid_signature"};

static const int default_mix[UST_GEN_KINDS] = {70, 8, 3, 3, 3, 8, 2, 2, 1};

void ust_gen_default_mix(int mix[UST_GEN_KINDS])
{
    memcpy(mix, default_mix, sizeof(default_mix));
}

int ust_gen_parse_mix(const char *text, int mix[UST_GEN_KINDS], char **err)
{
    char *copy = ust_strdup(text), *save = NULL;
    if (copy == NULL)
        return UST_ENOMEM;
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        int k = 0;
        size_t name_len = eq ? (size_t)(eq - item) : 0;
        while (eq != NULL && k < UST_GEN_KINDS &&
               !(strlen(ust_gen_kind_names[k]) == name_len &&
                 strncmp(item, ust_gen_kind_names[k], name_len) == 0))
            k++;
        char *end = NULL;
        long v = eq ? strtol(eq + 1, &end, 10) : -1;
        if (eq == NULL || k == UST_GEN_KINDS || *end != '\0' || v < 0 || v > 1000000)
            rc = ust_errf(
                err, UST_EINVAL,
                "--mix: \"%s\": expected KIND=WEIGHT, KIND one of single, retry,"
                " late_new_id, out_of_order, semantic, api, api_retry, concurrent,"
                " invalid_signature",
                item);
        else
            mix[k] = (int)v;
    }
    ust_free(copy);
    return rc;
}

/* xorshift64*: small, fast, and the same everywhere. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

static int64_t uniform(rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

/* What each event exercises, by the kinds of coverage (docs/semantics.md),
 * as this generator planted it: counted at emit time from its own plan,
 * never by the coverage module, so a test can hold one against the other. */
#define GEN_COVERAGE(X)                                                                \
    X(IDENTICAL_REDELIVERY, identical_redelivery)                                      \
    X(REDELIVERY_NEW_ID, redelivery_new_id)                                            \
    X(OUT_OF_ORDER, out_of_order)                                                      \
    X(SEMANTIC_PAIR, semantic_pair)                                                    \
    X(API_COMPLETED_REPEAT, api_completed_repeat)                                      \
    X(API_CONCURRENT_REPEAT, api_concurrent_repeat)                                    \
    X(API_PAYLOAD_MISMATCH, api_payload_mismatch)                                      \
    X(API_AFTER_TTL, api_after_ttl)                                                    \
    X(API_KEY_ACROSS_TENANTS, api_key_across_tenants)                                  \
    X(API_MISSING_KEY, api_missing_key)                                                \
    X(SIGNATURE_INVALID, signature_invalid)                                            \
    X(SIGNATURE_MISSING, signature_missing)                                            \
    X(SIGNATURE_EXPIRED, signature_expired)
#define COVER_INDEX(id, name) COVER_INDEX_##id,
enum { GEN_COVERAGE(COVER_INDEX) N_COVER };
#undef COVER_INDEX
#define COVER_NAME(id, name) #name,
static const char *const cover_names[N_COVER] = {GEN_COVERAGE(COVER_NAME)};
#undef COVER_NAME
#define COVER(id) (1u << COVER_INDEX_##id)

enum { T_PAID, T_REFUNDED };
enum {
    TRUTH_NONE,
    TRUTH_REJECTED_PAID,
    TRUTH_REJECTED_REFUND,
    TRUTH_FLAG,
    TRUTH_IN_PROGRESS,
    TRUTH_REPLAYED
};

/* An event waiting for its time. */
typedef struct pending {
    int64_t at;
    uint64_t tie; /* creation order: equal times leave in a fixed order */
    int api, type, bad_signature, truth;
    unsigned cover; /* COVER() bits: the kinds of coverage it exercises */
    int64_t evt, pi, order, amount, key;
} pending;

typedef struct heap {
    pending *v;
    size_t n, cap;
} heap;

static int before(const pending *a, const pending *b)
{
    return a->at != b->at ? a->at < b->at : a->tie < b->tie;
}

static int heap_push(heap *h, pending p)
{
    pending *grown = ust_grow(h->v, &h->cap, h->n + 1, 1024, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    h->v = grown;
    size_t i = h->n++;
    while (i > 0 && before(&p, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = p;
    return 0;
}

static pending heap_pop(heap *h)
{
    pending top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

typedef struct gen {
    const ust_gen_opts *o;
    rng r;
    heap h;
    uint64_t tie;
    int64_t ids; /* every id is fresh: cases never collide by accident */
    const ust_route *stripe, *api;
    int compares_retry_after, compares_replayed;
    char *buf; /* one output line */
    size_t cap;
    /* Keyed once, for the route's secret and for the forged one: a one-shot
     * HMAC() per event looked the digest up again every time. */
    ust_sig_signer *valid, *forged;
    int api_keyed;            /* the api route reads the Idempotency-Key gen sends */
    int64_t covered[N_COVER]; /* events emitted of each kind */
} gen;

static int add(gen *g, pending p)
{
    p.tie = g->tie++;
    return heap_push(&g->h, p);
}

/* A retry schedule like Stripe's: minutes to days after the first try. */
static int64_t retry_delay_us(gen *g)
{
    static const int64_t steps_s[] = {60,       300,       1800,     3600,
                                      6 * 3600, 24 * 3600, 72 * 3600};
    int64_t base = steps_s[next(&g->r) % 7];
    return (base + uniform(&g->r, 0, base / 2)) * 1000000;
}

/* The events of one case that starts at `at`; returns how many. */
static int plan_case(gen *g, int kind, int64_t at)
{
    pending p;
    memset(&p, 0, sizeof(p));
    p.at = at;
    p.evt = ++g->ids;
    p.pi = ++g->ids;
    p.order = ++g->ids;
    p.amount = uniform(&g->r, 100, 99999);
    int rc = 0, n = 1;
    switch (kind) {
    case 0: /* single */
        rc = add(g, p);
        break;
    case 1: /* identical retry: the same event again, later */
        rc = add(g, p);
        p.at += retry_delay_us(g);
        p.cover = COVER(IDENTICAL_REDELIVERY);
        if (rc == 0)
            rc = add(g, p), n = 2;
        break;
    case 2: /* paid, refunded, then a late paid with a new id */
        rc = add(g, p);
        p.type = T_REFUNDED, p.evt = ++g->ids,
        p.at += uniform(&g->r, 60, 3600) * 1000000;
        if (rc == 0)
            rc = add(g, p);
        p.type = T_PAID, p.evt = ++g->ids, p.at += retry_delay_us(g);
        p.truth = TRUTH_REJECTED_PAID;
        /* paid was seen under another id, and refunded is final */
        p.cover = COVER(REDELIVERY_NEW_ID) | COVER(OUT_OF_ORDER);
        if (rc == 0)
            rc = add(g, p), n = 3;
        break;
    case 3: /* out of order: the refund first */
        p.type = T_REFUNDED, p.truth = TRUTH_REJECTED_REFUND;
        p.cover = COVER(OUT_OF_ORDER); /* nothing was paid */
        rc = add(g, p);
        p.type = T_PAID, p.truth = TRUTH_NONE, p.evt = ++g->ids, p.cover = 0;
        p.at += uniform(&g->r, 1, 60) * 1000000;
        if (rc == 0)
            rc = add(g, p), n = 2;
        break;
    case 4: /* semantic duplicate: another transaction, same order, seconds later */
        rc = add(g, p);
        p.evt = ++g->ids, p.pi = ++g->ids, p.truth = TRUTH_FLAG;
        int64_t gap_us = uniform(&g->r, 1, 30) * 1000000;
        p.at += gap_us;
        if (gap_us <= g->o->cfg->coverage.semantic_window_s * 1000000)
            p.cover = COVER(SEMANTIC_PAIR);
        if (rc == 0)
            rc = add(g, p), n = 2;
        break;
    case 5: /* an API call with a key */
    case 6: /* and its retry after completion */
    case 7: /* and a concurrent repeat */
        p.api = 1, p.key = p.evt;
        p.cover = g->api_keyed ? 0 : COVER(API_MISSING_KEY);
        rc = add(g, p);
        if (kind == 5)
            break;
        int64_t after_us;
        if (kind == 6) {
            after_us = uniform(&g->r, 2, 600) * 1000000;
            p.truth = g->compares_replayed ? TRUTH_REPLAYED : TRUTH_NONE;
        } else {
            after_us = uniform(&g->r, 10, 300) * 1000; /* within op_latency_ms (500) */
            p.truth = TRUTH_IN_PROGRESS;
        }
        p.at += after_us;
        /* the same body and key again: a repeat, by how long after */
        if (g->api_keyed)
            p.cover = after_us < g->o->cfg->coverage.op_latency_ms * 1000
                          ? COVER(API_CONCURRENT_REPEAT)
                          : COVER(API_COMPLETED_REPEAT);
        if (g->api_keyed && after_us > g->o->cfg->coverage.key_ttl_s * 1000000)
            p.cover |= COVER(API_AFTER_TTL);
        if (rc == 0)
            rc = add(g, p), n = 2;
        break;
    default: /* a forged signature: recorded, never decided */
        p.bad_signature = 1;
        p.cover = COVER(SIGNATURE_INVALID);
        rc = add(g, p);
        break;
    }
    return rc == 0 ? n : rc;
}

/* Appends s to the line, escaping it as the inside of a JSON string. Our
 * bodies are ASCII built here, so quotes are the only character to escape. */
static void put(gen *g, size_t *len, const char *s, int escape)
{
    size_t n = strlen(s), need = *len + 2 * n + 1;
    if (need > g->cap) {
        g->cap = need * 2;
        g->buf = ust_realloc(g->buf, g->cap);
    }
    if (!escape) {
        memcpy(g->buf + *len, s, n + 1);
        *len += n;
        return;
    }
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            g->buf[(*len)++] = '\\';
        g->buf[(*len)++] = *s;
    }
    g->buf[*len] = '\0';
}

/* What each planted divergence is, by its truth: the class it lands in and
 * the fields it differs in (NULL: those of an in_progress answer, which
 * depend on whether Retry-After is compared). */
static const struct {
    const char *class_name, *fields;
} truths[] = {
    [TRUTH_REJECTED_PAID] = {"payment_intent.succeeded: applied \xe2\x86\x92 rejected",
                             "[\"verdict\",\"state\"]"},
    [TRUTH_REJECTED_REFUND] = {"charge.refunded: applied \xe2\x86\x92 rejected",
                               "[\"verdict\",\"state\"]"},
    [TRUTH_FLAG] = {"payment_intent.succeeded: applied \xe2\x86\x92 applied",
                    "[\"flags\"]"},
    [TRUTH_IN_PROGRESS] = {"/payments: applied \xe2\x86\x92 in_progress", NULL},
    [TRUTH_REPLAYED] = {"/payments: duplicate \xe2\x86\x92 duplicate",
                        "[\"header:idempotent-replayed\"]"},
};

static void write_truth(gen *g, int64_t seq, int truth)
{
    const char *fields = truths[truth].fields;
    if (truth == TRUTH_IN_PROGRESS)
        fields = g->compares_retry_after
                     ? "[\"verdict\",\"status\",\"header:retry-after\",\"body/amount\","
                       "\"body/currency\",\"body/error\",\"body/order_id\",\"body/"
                       "payment_id\","
                       "\"state\"]"
                     : "[\"verdict\",\"status\",\"body/amount\",\"body/"
                       "currency\",\"body/error\","
                       "\"body/order_id\",\"body/payment_id\",\"state\"]";
    fprintf(g->o->truth, "{\"seq\":%lld,\"class\":\"%s\",\"fields\":%s}\n",
            (long long)seq, truths[truth].class_name, fields);
}

/* Appends the signature header(s) of body, made by the route's scheme, as
 * JSON pairs. */
static int sign(gen *g, const pending *p, const char *body, size_t *len)
{
    ust_request r;
    memset(&r, 0, sizeof(r));
    r.body = (unsigned char *)body; /* borrowed: cleared before the request is */
    r.body_len = strlen(body);
    int rc = ust_sig_signer_sign(p->bad_signature ? g->forged : g->valid,
                                 p->at / 1000000, NULL, &r);
    for (size_t i = 0; rc == 0 && i < r.n_headers; i++) {
        put(g, len, ",[\"", 0);
        put(g, len, r.headers[i].name, 1);
        put(g, len, "\",\"", 0);
        put(g, len, r.headers[i].value, 1);
        put(g, len, "\"]", 0);
    }
    r.body = NULL;
    ust_request_clear(&r);
    return rc;
}

static int emit(gen *g, const pending *p, int64_t seq)
{
    char body[512], sigh[256], when[32];
    ust_time_format(p->at, when);
    size_t len = 0;
    g->buf[0] = '\0';
    char head[256];
    snprintf(
        head, sizeof(head),
        "{\"v\":1,\"seq\":%lld,\"received_at\":\"%s\",\"remote\":\"203.0.113.9:443\","
        "\"method\":\"POST\",\"target\":\"%s\",\"headers\":[[\"Content-Type\","
        "\"application/json\"]",
        (long long)seq, when, p->api ? g->api->path : g->stripe->path);
    put(g, &len, head, 0);
    if (p->api) {
        snprintf(body, sizeof(body),
                 "{\"order_id\":\"order_%lld\",\"amount\":%lld,\"currency\":\"eur\"}",
                 (long long)p->order, (long long)p->amount);
        snprintf(
            sigh, sizeof(sigh),
            ",[\"X-Tenant-Id\",\"tenant-%lld\"],[\"Idempotency-Key\",\"key-%lld\"]",
            (long long)(p->key % 7), (long long)p->key);
        put(g, &len, sigh, 0);
    } else {
        snprintf(
            body, sizeof(body),
            "{\"id\":\"evt_%lld\",\"object\":\"event\",\"type\":\"%s\",\"created\":%"
            "lld,"
            "\"data\":{\"object\":{\"id\":\"pi_%lld\",\"object\":\"payment_intent\","
            "\"amount\":%lld,\"currency\":\"eur\",\"metadata\":{\"order_id\":"
            "\"order_%lld\"}}}}",
            (long long)p->evt,
            p->type == T_PAID ? "payment_intent.succeeded" : "charge.refunded",
            (long long)(p->at / 1000000), (long long)p->pi, (long long)p->amount,
            (long long)p->order);
        int rc = sign(g, p, body, &len);
        if (rc != 0)
            return rc;
    }
    put(g, &len, "],\"body\":\"", 0);
    put(g, &len, body, 1);
    put(g, &len, "\"}\n", 0);
    if (fwrite(g->buf, 1, len, g->o->out) != len)
        return UST_EIO;
    if (g->o->truth != NULL && p->truth != TRUTH_NONE)
        write_truth(g, seq, p->truth);
    for (int k = 0; k < N_COVER; k++)
        g->covered[k] += (p->cover >> k) & 1;
    return 0;
}

/* The truth file's last line: the events emitted of each kind of
 * coverage, every kind in a fixed order. */
static void write_coverage(const gen *g)
{
    fputs("{\"coverage\":{", g->o->truth);
    for (int k = 0; k < N_COVER; k++)
        fprintf(g->o->truth, "%s\"%s\":%lld", k ? "," : "", cover_names[k],
                (long long)g->covered[k]);
    fputs("}}\n", g->o->truth);
}

static int compares(const ust_config *cfg, const char *header)
{
    for (size_t i = 0; i < cfg->n_compare_headers; i++)
        if (strcasecmp(cfg->compare_headers[i], header) == 0)
            return 1;
    return 0;
}

int ust_gen(const ust_gen_opts *o, int64_t *written, char **err)
{
    gen g;
    memset(&g, 0, sizeof(g));
    g.o = o;
    g.r.s = o->seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < o->cfg->n_routes; i++) {
        const ust_route *r = &o->cfg->routes[i];
        if (r->scheme == UST_SCHEME_STRIPE && g.stripe == NULL)
            g.stripe = r;
        if (r->kind == UST_ROUTE_API && g.api == NULL)
            g.api = r;
    }
    if (g.stripe == NULL || g.api == NULL || g.stripe->secret == NULL)
        return ust_errf(
            err, UST_ECONFIG,
            "%s: gen needs a stripe route (with its secret in the environment)"
            " and an api route",
            o->cfg->file);
    g.api_keyed = g.api->idem_header != NULL &&
                  strcasecmp(g.api->idem_header, "Idempotency-Key") == 0;
    g.compares_retry_after = compares(o->cfg, "Retry-After");
    g.compares_replayed = compares(o->cfg, "Idempotent-Replayed");
    g.buf = ust_malloc(g.cap = 4096);
    ust_sig_params sp = {g.stripe->scheme, g.stripe->secret, g.stripe->sig_header,
                         g.stripe->tolerance_s};
    int rc = ust_sig_signer_new(&sp, NULL, 0, &g.valid);
    sp.secret = "whsec_forged";
    if (rc == 0)
        rc = ust_sig_signer_new(&sp, NULL, 0, &g.forged);
    int total_weight = 0;
    for (int k = 0; k < UST_GEN_KINDS; k++)
        total_weight += o->mix[k];
    if (total_weight == 0 || g.buf == NULL || rc != 0) {
        ust_free(g.buf);
        ust_sig_signer_free(g.valid);
        ust_sig_signer_free(g.forged);
        return total_weight ? (rc != 0 ? rc : UST_ENOMEM)
                            : ust_errf(err, UST_EINVAL, "--mix: every weight is 0");
    }
    /* Cases start evenly spread over the span (with jitter); their later
     * events wait in the heap until their time comes. */
    int64_t planned = 0, seq = 0,
            mean_gap = o->span_us / (o->events > 0 ? o->events : 1);
    int64_t clock = o->start_us;
    while (rc == 0 && seq < o->events) {
        /* Plan a case unless everything still to be written is planned. */
        if (planned < o->events && (g.h.n == 0 || g.h.v[0].at >= clock)) {
            int roll = (int)(next(&g.r) % (uint64_t)total_weight), kind = 0;
            while (roll >= o->mix[kind])
                roll -= o->mix[kind++];
            int n = plan_case(&g, kind, clock);
            if (n < 0)
                rc = n;
            else
                planned += n;
            clock += uniform(&g.r, 1, 2 * mean_gap > 1 ? 2 * mean_gap : 1) * n;
            continue;
        }
        pending p = heap_pop(&g.h);
        rc = emit(&g, &p, ++seq);
        if (rc == 0)
            ust_progress_tell(&o->progress, seq, (double)seq / (double)o->events);
    }
    if (rc == 0 && o->truth != NULL)
        write_coverage(&g);
    ust_free(g.h.v);
    ust_free(g.buf);
    ust_sig_signer_free(g.valid);
    ust_sig_signer_free(g.forged);
    if (written != NULL)
        *written = seq;
    if (rc == UST_EIO)
        return ust_errf(err, rc, "gen: write failed");
    return rc;
}
