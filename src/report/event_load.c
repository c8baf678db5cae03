/* One event for review: read from the run database and the event log, and
 * masked by the run's redaction rules before anything renders it (the
 * functions of event.h that load; event_html.c and event_text.c render). */
#include "report/event.h"
#include "report/event_load.h"
#include "report/redact_line.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/redact.h>

#include <string.h>

/* At most this many events of an entity's story are shown. */
enum { MAX_STORY = 100 };

char *ust__report_json_compact(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

int ust__report_redact_rules(ust_run *run, json_t **out, char **err)
{
    char *text = NULL;
    int rc = ust_run_meta(run, "redact", &text, err);
    if (rc < 0)
        return rc;
    json_error_t jerr;
    *out = text ? ust_json_loads(text, 0, &jerr) : NULL;
    ust_free(text);
    if (!json_is_array(*out)) {
        json_decref(*out);
        *out = json_array();
    }
    return *out ? 0 : UST_ENOMEM;
}

int ust__report_open_log(ust_run *run, const char *log_path, ust_log **out, char **path,
                         char **err)
{
    *out = NULL;
    char *named = NULL;
    if (log_path == NULL) {
        int rc = ust_run_log(run, &named, err);
        if (rc < 0)
            return rc;
    }
    const char *p = log_path ? log_path : named;
    if (p != NULL)
        ust_log_open(p, UST_LOG_READONLY, out, NULL); /* NULL: shown as missing */
    if (path != NULL)
        *path = p ? ust_strdup(p) : NULL;
    ust_free(named);
    return 0;
}

typedef struct event_loader {
    ust__report_event *e;
    const json_t *redact;
} event_loader;

static int take_divergence(void *ctx, const ust_run_divergence *d)
{
    event_loader *l = ctx;
    json_error_t jerr;
    l->e->divergence = ust_json_loads(d->line, 0, &jerr);
    ust__report_redact_line(l->e->divergence, l->redact);
    if (d->entity != NULL && l->e->entity == NULL)
        l->e->entity = ust_strdup(d->entity);
    return 0;
}

static void copy_run_event(ust__report_story_row *r, const ust_run_event *ev)
{
    r->seq = ev->seq;
    r->at = ev->received_at;
    r->event_type = ust_strdup(ev->event_type);
    r->lv = ust_strdup(ev->legacy_verdict);
    r->ls = ust_strdup(ev->legacy_state);
    r->cv = ust_strdup(ev->candidate_verdict);
    r->cs = ust_strdup(ev->candidate_state);
    r->diverged = ev->diverged;
    r->follow_on = ev->follow_on;
}

static int add_story_row(void *ctx, const ust_run_event *ev)
{
    ust__report_event *e = ctx;
    if (e->n_story == MAX_STORY) {
        e->story_truncated = 1;
        return 1;
    }
    copy_run_event(&e->story[e->n_story++], ev);
    return 0;
}

static int take_self(void *ctx, const ust_run_event *ev)
{
    copy_run_event(ctx, ev);
    return 0;
}

/* Each story row's event id, amount and currency, from the log's row. */
typedef struct story_reader {
    ust__report_event *e;
    size_t next; /* rows come in story order, some perhaps missing */
} story_reader;

static int add_story_fields(void *ctx, const ust_log_record *rec)
{
    story_reader *s = ctx;
    while (s->next < s->e->n_story && s->e->story[s->next].seq != rec->seq)
        s->next++;
    if (s->next == s->e->n_story)
        return 0;
    ust__report_story_row *r = &s->e->story[s->next++];
    r->event_id = ust_strdup(rec->event_id);
    r->currency = ust_strdup(rec->currency);
    r->amount = rec->amount;
    r->has_amount = rec->has_amount;
    return 0;
}

static int load_story(ust_run *run, ust_log *log, ust__report_event *e, char **err)
{
    e->story = ust_calloc(MAX_STORY, sizeof(*e->story));
    if (e->story == NULL)
        return UST_ENOMEM;
    int rc = ust_run_timeline(run, e->entity, MAX_STORY + 1, add_story_row, e, err);
    if (rc < 0 || log == NULL)
        return rc < 0 ? rc : 0;
    int64_t *seqs = ust_calloc(e->n_story ? e->n_story : 1, sizeof(int64_t));
    if (seqs == NULL)
        return UST_ENOMEM;
    for (size_t i = 0; i < e->n_story; i++)
        seqs[i] = e->story[i].seq;
    story_reader s = {e, 0};
    rc = ust_log_read_seqs(log, seqs, e->n_story, add_story_fields, &s, err);
    ust_free(seqs);
    return rc;
}

typedef struct request_reader {
    ust_run *run;
    ust_log *log;
    ust__report_event *e;
    const json_t *redact;
    char **err;
} request_reader;

static int take_request(void *ctx, const ust_log_record *rec)
{
    request_reader *r = ctx;
    ust__report_event *e = r->e;
    e->has_request = 1;
    e->method = ust_strdup(rec->req.method);
    e->target = ust_strdup(rec->req.target);
    e->remote = ust_strdup(rec->req.remote);
    e->received_at = rec->req.received_at_us;
    json_t *masked = json_array(); /* the values the rules masked */
    int rc =
        ust__report_message_load(&e->req, rec->req.headers, rec->req.n_headers,
                                 rec->req.body, rec->req.body_len, r->redact, masked);
    if (rc == 0)
        rc = ust__report_derived_load(e, rec, masked);
    if (rc == 0 && rec->response.status != 0) {
        e->response_status = rec->response.status;
        rc = ust__report_message_load(&e->resp, rec->response.headers,
                                      rec->response.n_headers, rec->response.body,
                                      rec->response.body_len, r->redact, NULL);
    }
    json_decref(masked);
    if (rc == 0)
        rc = ust__report_find_repeat(r->run, r->log, e, rec, r->err);
    return rc;
}

int ust__report_event_load(ust_run *run, ust_log *log, const json_t *redact,
                           int64_t seq, ust__report_event *out, char **err)
{
    memset(out, 0, sizeof(*out));
    out->seq = seq;
    int rc = ust_run_event_at(run, seq, take_self, &out->self, err);
    if (rc <= 0) {
        ust__report_event_clear(out);
        return rc;
    }
    event_loader l = {out, redact};
    ust_run_filter f = {.from = seq, .to = seq, .limit = 1};
    rc = ust_run_divergences(run, &f, take_divergence, &l, err);
    if (rc == 0 && out->entity != NULL)
        rc = load_story(run, log, out, err);
    if (rc == 0 && log != NULL) {
        request_reader r = {run, log, out, redact, err};
        rc = ust_log_read_seqs(log, &seq, 1, take_request, &r, err);
    }
    if (rc != 0) {
        ust__report_event_clear(out);
        return rc;
    }
    return 1;
}

static void clear_row(ust__report_story_row *r)
{
    ust_free(r->event_type);
    ust_free(r->lv);
    ust_free(r->ls);
    ust_free(r->cv);
    ust_free(r->cs);
    ust_free(r->event_id);
    ust_free(r->currency);
}

static void clear_pairs(ust__report_pair *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ust_free(p[i].name);
        ust_free(p[i].value);
    }
    ust_free(p);
}

static void clear_message(ust__report_message *m)
{
    ust_free(m->headers); /* its strings are in header_text */
    ust_free(m->header_text);
    ust_free(m->text);
    ust_free(m->base64);
    json_decref(m->pretty);
}

void ust__report_event_clear(ust__report_event *e)
{
    for (size_t r = 0; r < e->n_story; r++)
        clear_row(&e->story[r]);
    ust_free(e->story);
    clear_row(&e->self);
    ust_free(e->entity);
    json_decref(e->divergence);
    ust_free(e->method);
    ust_free(e->target);
    ust_free(e->remote);
    clear_message(&e->req);
    clear_message(&e->resp);
    clear_pairs(e->derived, e->n_derived);
    ust_free(e->repeats.identity);
    memset(e, 0, sizeof(*e));
}
