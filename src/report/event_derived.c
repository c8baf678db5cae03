/* What the log derived from an event's request, for review, and the
 * earlier transaction a semantic duplicate repeats. */
#include "report/event_load.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

static int was_masked(const json_t *masked, const char *text)
{
    size_t i;
    json_t *v;
    json_array_foreach(masked, i, v)
    {
        if (text != NULL && strcmp(json_string_value(v), text) == 0)
            return 1;
    }
    return 0;
}

/* Each derived field as text, NULL when absent; named by its log column
 * (as `log export --derived` names them). */
#define SHOW_TEXT(m) rec->m
#define SHOW_ROUTE(m) rec->m
#define SHOW_SHA(m) rec->m
#define SHOW_SIG(m) ust_sig_status_name(rec->m)
#define SHOW_AMOUNT(m)                                                                 \
    (rec->has_##m                                                                      \
         ? (snprintf(amount, sizeof(amount), "%lld", (long long)rec->m), amount)       \
         : NULL)
#define SHOW_CONFIG(m) NULL
#define IS_SHOWN_CONFIG 0
#define IS_SHOWN_TEXT 1
#define IS_SHOWN_ROUTE 1
#define IS_SHOWN_SHA 1
#define IS_SHOWN_SIG 1
#define IS_SHOWN_AMOUNT 1
#define ADD_FIELD(kind, m, column, wire, wire_at, export, source, since, desc)         \
    if (IS_SHOWN_##kind)                                                               \
        rc = rc ? rc : add_field(e, #column, SHOW_##kind(m), masked);

static int add_field(ust__report_event *e, const char *name, const char *value,
                     const json_t *masked)
{
    ust__report_pair *p = &e->derived[e->n_derived++];
    p->name = ust_strdup(name);
    if (value != NULL)
        p->value = ust_strdup(was_masked(masked, value) ? "[redacted]" : value);
    return p->name != NULL && (value == NULL || p->value != NULL) ? 0 : UST_ENOMEM;
}

int ust__report_derived_load(ust__report_event *e, const ust_log_record *rec,
                             const json_t *masked)
{
#define COUNT(kind, m, column, wire, wire_at, export, source, since, desc) +1
    e->derived = ust_calloc(0 UST_EVENT_FIELDS(COUNT), sizeof(*e->derived));
#undef COUNT
    if (e->derived == NULL)
        return UST_ENOMEM;
    char amount[32];
    int rc = 0;
    UST_EVENT_FIELDS(ADD_FIELD)
    return rc;
}

static int same(const char *a, const char *b)
{
    return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* What the candidate compares a repeat by: provider, intent, amount and
 * currency of a move to paid on a webhook route; tenant, intent, amount and
 * currency of an execution on an api route. */
typedef struct repeat_search {
    const ust_log_record *self; /* the duplicate */
    int webhook;
    int decided; /* the candidate moved the row read as this search asks */
} repeat_search;

static int candidate_moved(void *ctx, const ust_run_event *ev)
{
    repeat_search *s = ctx;
    const char *want_state = s->webhook ? "paid" : "completed";
    s->decided = ev->candidate_verdict != NULL &&
                 strcmp(ev->candidate_verdict, "applied") == 0 &&
                 same(ev->candidate_state, want_state);
    return 0;
}

static int matches(const repeat_search *s, const ust_log_record *rec)
{
    const ust_log_record *self = s->self;
    if (rec->intent == NULL || !same(rec->intent, self->intent) ||
        !same(rec->currency, self->currency) || rec->has_amount != self->has_amount ||
        rec->amount != self->amount)
        return 0;
    if (s->webhook)
        return same(rec->provider, self->provider) &&
               same(rec->target_status, "paid") &&
               !same(rec->transaction_id, self->transaction_id);
    return same(rec->route, self->route) && same(rec->tenant, self->tenant);
}

static int flagged(const ust__report_event *e)
{
    size_t i;
    json_t *flag;
    json_array_foreach(
        json_object_get(json_object_get(e->divergence, "candidate"), "flags"), i, flag)
    {
        if (same(json_string_value(flag), "semantic_duplicate"))
            return 1;
    }
    return 0;
}

/* How far back the search goes: far past any window the candidate is
 * likely run with (600 s by default), and a bound on the rows a report reads
 * for a duplicate whose earlier transaction the log no longer holds. */
#define LOOKBACK_US (86400LL * 1000000)

int ust__report_find_repeat(ust_run *run, ust_log *log, ust__report_event *e,
                            const ust_log_record *self, char **err)
{
    if (!flagged(e))
        return 0;
    repeat_search s = {self, self->provider != NULL && self->target_status != NULL, 0};
    /* Newest first: the candidate compares with the last such move before
     * this one, which was within its window since it flagged it. */
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int rc = ust_log_cursor_open_before(log, e->seq, &cur, err);
    while (rc == 0 && (rc = ust_log_cursor_next(cur, &rec, err)) == 1) {
        rc = 0;
        if (rec.req.received_at_us < self->req.received_at_us - LOOKBACK_US)
            break;
        if (!matches(&s, &rec))
            continue;
        rc = ust_run_event_at(run, rec.seq, candidate_moved, &s, err);
        if (rc < 0)
            break;
        rc = 0;
        if (s.decided) {
            e->repeats.seq = rec.seq;
            e->repeats.at = rec.req.received_at_us;
            e->repeats.identity = ust_strdup(rec.identity ? rec.identity : "");
            rc = e->repeats.identity ? 0 : UST_ENOMEM;
            break;
        }
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    return rc < 0 ? rc : 0;
}
