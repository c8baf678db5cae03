/* The url kind: a service over HTTP as a plugin. Each event's original
 * request goes to the plugin's url + the request's target (method, headers
 * in order without the hop-by-hop ones, Host the service's, body byte for
 * byte, plus Understudy-Seq and Understudy-Received-At), and the answer is
 * the decision (answer.h). A service has its own state, so with the
 * runner's journal an event is sent at most once per run: its intent is
 * committed just before it is sent (with the answers received before it),
 * its answer recorded before the decision is used, and an event sent with
 * no answer recorded is never sent again, unless the service dedups on
 * Understudy-Seq ("resend_unknown"). A kill leaves at most max_in_flight
 * events whose outcome is unknown. */
#include "plugin/faults.h"
#include "plugin/kind.h"
#include "plugin/wire.h"

#include <understudy/alloc.h>
#include <understudy/answer.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/http_client.h>

#include <stddef.h>
#include <string.h>

#define OUTCOME_UNKNOWN "outcome unknown: sent, no answer recorded (the run stopped)"
/* What a decision made of an answer to an event sent again says. */
#define RESENT                                                                         \
    "resent (resend_unknown): sent before the run stopped with no answer recorded, "   \
    "sent "                                                                            \
    "again"

/* What became of one event of a batch. */
enum { TO_SEND, ANSWERED, UNKNOWN, FAILED };

/* One event's call: its own header array (the forwarded ones and ours). */
typedef struct outgoing {
    ust_header *headers;
    char seq[24], at[32];
    char *url;
} outgoing;

/* The calls of a batch, sent where the runner may commit (batch_start):
 * each call's intent is committed just before it goes. */
typedef struct sends {
    size_t n;
    size_t *which; /* the batch index of each call */
    size_t *after; /* the call it waits for (same entity), or SIZE_MAX */
    int64_t *seqs;
    ust_http_call *calls;
    outgoing *outs;
    ust_http_result *results;
    unsigned char *journaled;    /* its answer recorded (told by the gate) */
    const unsigned char *resent; /* the batch's (pending), by batch index */
    int rc;                      /* of ust_http_client_send_gated */
} sends;

typedef struct pending {
    const ust_plugin_batch *b; /* NULL: a free slot */
    size_t n;
    unsigned char *state;
    ust_http_result *results;
    char **why;            /* FAILED: the cause */
    unsigned char *resent; /* sent again after an unknown outcome */
    sends out;
} pending;

/* An answer received whose journal row may not be committed yet: a step
 * rolled back loses the row, not the fact that the service answered. */
typedef struct kept {
    int64_t seq;
    int resent; /* the answer to a call sent again */
    ust_http_result r;
} kept;

typedef struct svc {
    const ust_plugin_config *pc;
    char ns[16];
    const ust_journal *journal;
    ust_http_client *client;
    ust_verdict_map verdicts;
    char *base;  /* the url, without a trailing '/' (the target brings its own) */
    char *host;  /* the url's authority: the Host sent */
    char *shown; /* the url without its password: the plugin's name */
    pending slots[4];
    kept *kept;
    size_t n_kept, cap_kept;
} svc;

static int copy_result(ust_http_result *dst, const ust_http_result *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->status = src->status;
    dst->failure = src->failure;
    dst->what = src->what;
    dst->body_len = src->body_len;
    if ((src->body_len && (dst->body = ust_memdup(src->body, src->body_len)) == NULL) ||
        (src->cause && (dst->cause = ust_strdup(src->cause)) == NULL) ||
        (src->n_headers &&
         (dst->headers = ust_calloc(src->n_headers, sizeof(ust_header))) == NULL)) {
        ust_http_result_clear(dst);
        return UST_ENOMEM;
    }
    for (size_t i = 0; i < src->n_headers; i++) {
        dst->headers[i].name = ust_strdup(src->headers[i].name);
        dst->headers[i].value = ust_strdup(src->headers[i].value);
        dst->n_headers++;
        if (dst->headers[i].name == NULL || dst->headers[i].value == NULL) {
            ust_http_result_clear(dst);
            return UST_ENOMEM;
        }
    }
    return 0;
}

static void forget_kept(svc *s)
{
    for (size_t i = 0; i < s->n_kept; i++)
        ust_http_result_clear(&s->kept[i].r);
    s->n_kept = 0;
}

static const kept *find_kept(const svc *s, int64_t seq)
{
    for (size_t i = 0; i < s->n_kept; i++)
        if (s->kept[i].seq == seq)
            return &s->kept[i];
    return NULL;
}

static int keep(svc *s, int64_t seq, int resent, const ust_http_result *r)
{
    if (find_kept(s, seq) != NULL)
        return 0;
    kept *grown = ust_grow(s->kept, &s->cap_kept, s->n_kept + 1, 64, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    s->kept = grown;
    int rc = copy_result(&s->kept[s->n_kept].r, r);
    if (rc == 0) {
        s->kept[s->n_kept].resent = resent;
        s->kept[s->n_kept++].seq = seq;
    }
    return rc;
}

static void free_sends(sends *o)
{
    for (size_t j = 0; j < o->n; j++) {
        if (o->results != NULL)
            ust_http_result_clear(&o->results[j]);
        if (o->outs != NULL) {
            ust_free(o->outs[j].headers);
            ust_free(o->outs[j].url);
        }
    }
    ust_free(o->which); /* the block of all seven arrays (alloc_sends) */
    memset(o, 0, sizeof(*o));
}

/* The seven arrays of n calls in one zeroed block, each at an offset
 * aligned for any type: one allocation to fail and one to free, not seven. */
static int alloc_sends(sends *o, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    const size_t sizes[] = {
        sizeof(*o->which), sizeof(*o->after),   sizeof(*o->seqs),     sizeof(*o->calls),
        sizeof(*o->outs),  sizeof(*o->results), sizeof(*o->journaled)};
    size_t at[UST_ARRAY_SIZE(sizes)], total = 0;
    for (size_t i = 0; i < UST_ARRAY_SIZE(sizes); i++) {
        at[i] = total;
        total += (n * sizes[i] + align - 1) / align * align;
    }
    char *block = ust_calloc(1, total);
    if (block == NULL)
        return UST_ENOMEM;
    o->which = (void *)(block + at[0]);
    o->after = (void *)(block + at[1]);
    o->seqs = (void *)(block + at[2]);
    o->calls = (void *)(block + at[3]);
    o->outs = (void *)(block + at[4]);
    o->results = (void *)(block + at[5]);
    o->journaled = (void *)(block + at[6]);
    return 0;
}

static void free_slot(pending *p)
{
    free_sends(&p->out);
    for (size_t i = 0; i < p->n; i++) {
        if (p->results != NULL)
            ust_http_result_clear(&p->results[i]);
        if (p->why != NULL)
            ust_free(p->why[i]);
    }
    ust_free(p->state);
    ust_free(p->results);
    ust_free(p->why);
    ust_free(p->resent);
    memset(p, 0, sizeof(*p));
}

static pending *slot_for(svc *s, const ust_plugin_batch *b)
{
    for (size_t i = 0; i < UST_ARRAY_SIZE(s->slots); i++)
        if (s->slots[i].b == b)
            return &s->slots[i];
    return NULL;
}

static void url_close(void *impl)
{
    svc *s = impl;
    if (s == NULL)
        return;
    for (size_t i = 0; i < UST_ARRAY_SIZE(s->slots); i++)
        free_slot(&s->slots[i]);
    forget_kept(s);
    ust_free(s->kept);
    ust_http_client_free(s->client);
    ust_free(s->base);
    ust_free(s->host);
    ust_free(s->shown);
    ust_free(s);
}

/* A run that starts from seq 0 puts the service back to its first state;
 * one that cannot is refused (its answers would depend on a past run). */
static int reset_service(svc *s, char **err)
{
    int fresh = s->journal->fresh(s->journal->ctx, s->ns, err);
    if (fresh <= 0)
        return fresh;
    ust_http_call call = {.method = s->pc->reset.method,
                          .url = s->pc->reset.url,
                          .timeout_ms = s->pc->timeout_ms};
    ust_http_result r;
    int rc = ust_http_client_send(s->client, &call, &r);
    char *url = rc == 0 ? ust_http_url_shown(call.url) : NULL;
    if (rc == 0 && url == NULL)
        rc = UST_ENOMEM;
    if (rc == 0 && r.failure != 0)
        rc = ust_errf(err, UST_EPLUGIN, "reset %s %s failed: %s", call.method, url,
                      r.cause);
    else if (rc == 0 && (r.status < 200 || r.status > 299))
        rc = ust_errf(err, UST_EPLUGIN, "reset %s %s failed: the service answered %d",
                      call.method, url, r.status);
    ust_free(url);
    ust_http_result_clear(&r);
    return rc;
}

static int url_open(const ust__plugin_start *st, void **impl,
                    char id[UST_SHA256_HEX_LEN + 1], char **err)
{
    *impl = NULL;
    svc *s = ust_calloc(1, sizeof(*s));
    if (s == NULL)
        return UST_ENOMEM;
    s->pc = st->pc;
    s->journal = st->journal;
    snprintf(s->ns, sizeof(s->ns), "%s", st->ns);
    char what[64];
    snprintf(what, sizeof(what), "plugins.%s.verdicts", st->ns);
    int rc = ust_verdict_map_parse(st->pc->verdicts, what, &s->verdicts, err);
    if (rc == 0)
        rc = ust_http_url_split(st->pc->url, &s->base, &s->host, err);
    if (rc == 0 && (s->shown = ust_http_url_shown(st->pc->url)) == NULL)
        rc = UST_ENOMEM;
    if (rc == 0)
        rc = ust_http_client_new(&s->client, err);
    if (rc == 0)
        rc = ust_http_client_proxy(s->client, st->pc->proxy);
    if (rc == 0 && s->journal != NULL && st->pc->reset.url != NULL)
        rc = reset_service(s, err);
    if (rc != 0) {
        url_close(s);
        return rc;
    }
    /* Its identity for the run: what names the service. Its code is not
     * understudy's to hash; a run resumed against another url is refused. */
    ust_sha256_hex(st->pc->url, strlen(st->pc->url), id);
    *impl = s;
    return 0;
}

/* The run database and the report name the plugin by it: never the
 * url's password. */
static const char *url_name(const void *impl)
{
    return ((const svc *)impl)->shown;
}

static const char *url_version(const void *impl)
{
    (void)impl;
    return "http";
}

static int url_wants_raw_request(const void *impl)
{
    (void)impl;
    return 1;
}

static int url_journaled(const void *impl)
{
    return ((const svc *)impl)->journal != NULL;
}

static int build(svc *s, const ust_event *ev, const ust_request *req, outgoing *o,
                 ust_http_call *call)
{
    memset(o, 0, sizeof(*o));
    size_t n = 0;
    int rc = ust_http_forward_headers(req, s->host, &o->headers, &n);
    if (rc != 0)
        return rc;
    ust_header *grown = ust_realloc(o->headers, (n + 2) * sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    o->headers = grown;
    snprintf(o->seq, sizeof(o->seq), "%lld", (long long)ev->seq);
    ust_time_format(req->received_at_us, o->at);
    o->headers[n++] = (ust_header){"Understudy-Seq", o->seq};
    o->headers[n++] = (ust_header){"Understudy-Received-At", o->at};
    const char *target =
        req->target != NULL && req->target[0] == '/' ? req->target : "/";
    if ((o->url = ust_sprintf("%s%s", s->base, target)) == NULL)
        return UST_ENOMEM;
    *call = (ust_http_call){req->method ? req->method : "POST",
                            o->url,
                            o->headers,
                            n,
                            req->body,
                            req->body_len,
                            s->pc->timeout_ms};
    return 0;
}

static int same_entity(const ust_event *a, const ust_event *b)
{
    if (a->identity == NULL || b->identity == NULL)
        return a->identity == b->identity;
    return strcmp(a->identity, b->identity) == 0;
}

/* Records the answers of calls k (their decisions are made later, in this
 * transaction), keeping each against a rollback. */
static int record_answers(svc *s, sends *o, const size_t *k, size_t n, char **err)
{
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < n; j++) {
        if (o->journaled[k[j]])
            continue;
        rc = s->journal->answer(s->journal->ctx, s->ns, o->seqs[k[j]],
                                &o->results[k[j]], err);
        if (rc == 0)
            rc = keep(s, o->seqs[k[j]], o->resent[o->which[k[j]]], &o->results[k[j]]);
        o->journaled[k[j]] = rc == 0;
    }
    return rc;
}

typedef struct gate_ctx {
    svc *s;
    sends *o;
    char *err; /* why the journal refused */
} gate_ctx;

/* Just before calls start: the answers received so far and their intents,
 * committed together. A kill then leaves as unknown only the calls on
 * their way, never more than max_in_flight. */
static int before_send(void *ctx, const size_t *starting, size_t n_starting,
                       const size_t *answered, size_t n_answered)
{
    gate_ctx *g = ctx;
    int rc = record_answers(g->s, g->o, answered, n_answered, &g->err);
    int64_t seqs[64]; /* max_in_flight is at most 64 (config.c) */
    size_t n = 0;
    for (size_t j = 0; rc == 0 && j < n_starting; j++) {
        seqs[n++] = g->o->seqs[starting[j]];
        if (n == UST_ARRAY_SIZE(seqs) || j + 1 == n_starting) {
            rc = g->s->journal->intend(g->s->journal->ctx, g->s->ns, seqs, n, &g->err);
            n = 0;
        }
    }
    /* That commit holds every answer recorded before it. */
    if (rc == 0)
        forget_kept(g->s);
    return rc;
}

/* Builds the calls of the events of b still to send, each entity's in seq
 * order, and sends them, each intent committed just before its call. */
static void start_sends(svc *s, const ust_plugin_batch *b, pending *p)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += p->state[i] == TO_SEND;
    if (n == 0)
        return;
    sends *o = &p->out;
    gate_ctx g = {s, o, NULL};
    int rc = alloc_sends(o, n);
    o->resent = p->resent;
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        if (p->state[i] != TO_SEND)
            continue;
        size_t k = o->n++;
        o->which[k] = i;
        o->seqs[k] = b->evs[i]->seq;
        o->after[k] = SIZE_MAX;
        /* Wait for the entity's previous event; another entity's may overlap. */
        for (size_t j = k; j-- > 0;)
            if (same_entity(b->evs[o->which[j]], b->evs[i])) {
                o->after[k] = j;
                break;
            }
        rc = build(s, b->evs[i], b->reqs[i], &o->outs[k], &o->calls[k]);
    }
    if (rc == 0) {
        size_t most = s->pc->max_in_flight > 0 ? (size_t)s->pc->max_in_flight : 1;
        ust_http_gate gate = {before_send, &g};
        o->rc =
            ust_http_client_send_gated(s->client, o->calls, o->n, o->after, most,
                                       s->journal != NULL ? &gate : NULL, o->results);
        /* The last answers, recorded now: the next batch's first commit
         * holds them. */
        for (size_t k = 0; o->rc == 0 && s->journal != NULL && k < o->n; k++)
            if (!o->journaled[k] && record_answers(s, o, &k, 1, &g.err) != 0)
                break; /* collect_sends says it for each */
    }
    if (rc != 0) {
        for (size_t i = 0; i < b->n; i++)
            if (p->state[i] == TO_SEND) {
                p->state[i] = FAILED;
                p->why[i] = ust_sprintf("not sent: %s", ust_strerror(rc));
            }
        free_sends(o);
    } else if (o->rc != 0 && g.err != NULL) {
        /* The journal refused an intent: what was not sent is not, and what
         * was is unknown (collect_sends). */
        for (size_t k = 0; k < o->n; k++)
            p->why[o->which[k]] = ust_sprintf("outcome unknown: %s", g.err);
    }
    ust_free(g.err);
}

/* The answers of the calls sent: each journaled (before its decision is
 * made) and kept, then the batch's. */
static void collect_sends(svc *s, pending *p)
{
    sends *o = &p->out;
    for (size_t k = 0; k < o->n; k++) {
        size_t i = o->which[k];
        if (o->rc != 0) {
            /* Some may have gone out before the failure. */
            p->state[i] = FAILED;
            if (p->why[i] == NULL)
                p->why[i] =
                    ust_sprintf("outcome unknown: the host failed while sending (%s)",
                                ust_strerror(o->rc));
            continue;
        }
        char *jerr = NULL;
        int jrc = 0;
        if (s->journal != NULL && !o->journaled[k])
            jrc = record_answers(s, o, &k, 1, &jerr);
        if (jrc != 0) {
            /* Sent, but its answer is not recorded: not used either. */
            p->state[i] = FAILED;
            p->why[i] = ust_sprintf("sent, but the answer could not be journaled: %s",
                                    jerr ? jerr : ust_strerror(jrc));
        } else {
            p->results[i] = o->results[k];
            memset(&o->results[k], 0, sizeof(o->results[k]));
            p->state[i] = ANSWERED;
        }
        ust_free(jerr);
    }
    free_sends(o);
}

/* A recorded request HTTP/1.1 would read as something else (a CR LF in a
 * value, a method with a space: a second request at the service) is not
 * sent; import refuses one, but a log written before it did is read too.
 * Nor is one whose target's path is not its route's: the row was not
 * written as recorded, and libcurl resolves dot segments, so a target
 * "/../../admin/users" went to the service's /admin/users, outside the
 * url's prefix. Nonzero with *why (NULL when out of memory) when req must
 * not go out. */
static int refuse_unsendable(const ust_event *ev, const ust_request *req, char **why)
{
    char *fault = NULL;
    int rc = ust_request_check(req, &fault);
    if (rc != 0)
        *why = ust_sprintf("not sent: the recorded request is not valid HTTP: %s",
                           fault ? fault : ust_strerror(rc));
    ust_free(fault);
    const char *t = req->target != NULL ? req->target : "";
    size_t path_len = strcspn(t, "?#");
    if (rc == 0 && ev->route != NULL &&
        (strlen(ev->route->path) != path_len ||
         strncmp(t, ev->route->path, path_len) != 0)) {
        *why = ust_sprintf("not sent: the recorded target's path is not its route's"
                           " (%s): the log's row was not written as recorded",
                           ev->route->path);
        rc = UST_EPARSE;
    }
    return rc;
}

static void url_batch_start(void *impl, ust_plugin_batch *b)
{
    svc *s = impl;
    pending *p = slot_for(s, b);
    if (p == NULL)
        p = slot_for(s, NULL);
    if (p == NULL) { /* more batches on their way than the runner keeps */
        p = &s->slots[0];
    }
    free_slot(p);
    p->b = b;
    p->n = b->n;
    p->state = ust_calloc(b->n ? b->n : 1, 1);
    p->results = ust_calloc(b->n ? b->n : 1, sizeof(*p->results));
    p->why = ust_calloc(b->n ? b->n : 1, sizeof(*p->why));
    p->resent = ust_calloc(b->n ? b->n : 1, 1);
    if (p->state == NULL || p->results == NULL || p->why == NULL || p->resent == NULL) {
        free_slot(p);
        p->b = b; /* finish makes each an error */
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        int64_t seq = b->evs[i]->seq;
        const kept *k = find_kept(s, seq);
        int found = 0;
        char *err = NULL;
        if (k != NULL) {
            found =
                copy_result(&p->results[i], &k->r) == 0 ? 2 + k->resent : UST_ENOMEM;
            /* The step that recorded it was rolled back: record it again. */
            if (found >= 2 && s->journal != NULL &&
                s->journal->answer(s->journal->ctx, s->ns, seq, &k->r, &err) != 0)
                found = UST_EDB;
        } else if (s->journal != NULL)
            found = s->journal->find(s->journal->ctx, s->ns, seq, &p->results[i], &err);
        p->resent[i] = found == 3; /* its answer is to the call sent again */
        if (found == 2 || found == 3)
            p->state[i] = ANSWERED;
        else if (found == 1 && !s->pc->resend_unknown)
            p->state[i] = UNKNOWN;
        else if (found < 0) {
            p->state[i] = FAILED;
            p->why[i] = ust_sprintf("the journal cannot be read: %s",
                                    err ? err : ust_strerror(found));
        } else if (refuse_unsendable(b->evs[i], b->reqs[i], &p->why[i]) != 0)
            p->state[i] = FAILED;
        else if (found == 1)
            p->resent[i] = 1; /* to send again: the service dedups on its seq */
        ust_free(err);
    }
    start_sends(s, b, p);
}

static void fail(const svc *s, ust_decision *out, const char *cause, ust_plugin_fault f)
{
    ust__decision_error(out, 500, cause ? cause : "out of memory", NULL);
    ust__plugin_fault(s->pc->counters, s->ns, f);
}

/* A decision made of an event sent again says so: in its error, or
 * before its reason (neither is compared). */
static void say_resent(ust_decision *out)
{
    char **text = out->verdict == UST_VERDICT_ERROR ? &out->error : &out->reason;
    char *said =
        *text != NULL ? ust_sprintf("%s; %s", RESENT, *text) : ust_strdup(RESENT);
    if (said != NULL) {
        ust_free(*text);
        *text = said;
    }
}

static void decide_one(svc *s, const pending *p, size_t i, ust_decision *out)
{
    if (p->state == NULL) {
        fail(s, out, "out of memory", UST_FAULT_INTERNAL);
        return;
    }
    const ust_http_result *r = &p->results[i];
    switch (p->state[i]) {
    case UNKNOWN:
        fail(s, out, OUTCOME_UNKNOWN, UST_FAULT_EXIT);
        return;
    case FAILED:
        fail(s, out, p->why[i], UST_FAULT_INTERNAL);
        return;
    case TO_SEND:
        fail(s, out, "not sent", UST_FAULT_INTERNAL);
        return;
    default:
        break;
    }
    if (r->failure != 0) {
        fail(s, out, r->cause,
             r->failure == UST_ETIMEOUT ? UST_FAULT_TIMEOUT : UST_FAULT_EXIT);
        return;
    }
    ust_http_answer a = {r->status, r->headers, r->n_headers, r->body, r->body_len};
    if (ust_http_answer_decide(&a, &s->verdicts, out) != 0) {
        fail(s, out, "out of memory", UST_FAULT_INTERNAL);
        return;
    }
    if (out->verdict == UST_VERDICT_ERROR)
        ust__plugin_fault(s->pc->counters, s->ns, UST_FAULT_BAD_DECISION);
}

static void url_batch_finish(void *impl, ust_plugin_batch *b, ust_decision **outs)
{
    svc *s = impl;
    pending *p = slot_for(s, b);
    if (p == NULL || p->n != b->n) {
        /* Never started: a caller's mistake, never a second send. */
        for (size_t i = 0; i < b->n; i++)
            fail(s, outs[i], "a batch finished that was not started",
                 UST_FAULT_INTERNAL);
        return;
    }
    collect_sends(s, p);
    for (size_t i = 0; i < b->n; i++) {
        decide_one(s, p, i, outs[i]);
        if (p->resent != NULL && p->resent[i])
            say_resent(outs[i]);
    }
    free_slot(p);
}

static void url_decide(void *impl, const ust_event *ev, const ust_request *req,
                       ust_decision *out)
{
    const ust_event *evs[1] = {ev};
    const ust_request *reqs[1] = {req};
    ust_decision *outs[1] = {out};
    ust_plugin_batch b = {evs, reqs, 1, 0, 0};
    url_batch_start(impl, &b);
    url_batch_finish(impl, &b, outs);
}

/* A step rolled back: batches on their way are dropped; what the service
 * answered is kept (it happened, and it is not sent again). */
static void url_discard(void *impl)
{
    svc *s = impl;
    for (size_t i = 0; i < UST_ARRAY_SIZE(s->slots); i++) {
        if (s->slots[i].b != NULL && s->slots[i].state != NULL)
            collect_sends(s, &s->slots[i]); /* journaled: they were sent */
        free_slot(&s->slots[i]);
    }
}

const ust__plugin_kind ust__plugin_kind_url = {
    UST__PLUGIN_KIND_REQUIRED(url),
    UST__PLUGIN_KIND_BATCHED(url),
    .journaled = url_journaled,
};
