/* Gathering the report's model from the run database (and the raw requests
 * of the examples from the event log the run read). */
#include "report/model.h"
#include "report/redact_line.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/log.h>
#include <understudy/run.h>

#include <stdlib.h>
#include <string.h>

#define N_BUCKETS 48

typedef struct loader {
    ust_run *run;
    const ust_report_opts *o;
    ust_log *log; /* NULL when the log cannot be opened */
    char **err;
} loader;

int ust__report_verdict_index(const char *name)
{
    ust_verdict v;
    return name != NULL && ust_verdict_parse(name, &v) == 0 ? (int)v : 0;
}

const char *ust__report_verdict_label(int index)
{
    return index == 0 ? "not fed" : ust_verdict_name((ust_verdict)index);
}

static int add_meta(void *ctx, const char *key, const char *value)
{
    json_object_set_new(ctx, key, json_string(value));
    return 0;
}

static int load_meta(loader *l, ust__report_model *m)
{
    m->meta = json_object();
    int rc = ust_run_meta_each(l->run, add_meta, m->meta, l->err);
    if (rc != 0)
        return rc;
    json_error_t jerr;
    const char *redact = json_string_value(json_object_get(m->meta, "redact"));
    m->redact = redact ? ust_json_loads(redact, 0, &jerr) : NULL;
    if (m->redact == NULL)
        m->redact = json_array();
    return 0;
}

static int add_count(void *ctx, const char *key, int64_t count)
{
    json_object_set_new(ctx, key, json_integer(count));
    return 0;
}

static int add_pair(void *ctx, const char *legacy, const char *candidate, int64_t count)
{
    ust__report_model *m = ctx;
    m->matrix[ust__report_verdict_index(legacy)]
             [ust__report_verdict_index(candidate)] += count;
    return 0;
}

static int load_counts(loader *l, ust__report_model *m)
{
    ust_run_totals n;
    int rc = ust_run_sum(l->run, &n, l->err);
    if (rc != 0)
        return rc;
    m->events = n.events;
    m->fed = n.fed;
    m->first_at = n.first_at;
    m->last_at = n.last_at;
    m->divergences = n.divergences;
    m->follow_ons = n.follow_ons;
    m->by_route = json_object();
    m->by_signature = json_object();
    if ((rc = ust_run_events_by(l->run, UST_RUN_BY_ROUTE, add_count, m->by_route,
                                l->err)) != 0 ||
        (rc = ust_run_events_by(l->run, UST_RUN_BY_SIGNATURE, add_count,
                                m->by_signature, l->err)) != 0 ||
        (rc = ust_run_verdict_pairs(l->run, add_pair, m, l->err)) != 0)
        return rc;
    /* Time buckets spread over the run's span, so the chart's right end is
     * its last event whether the run took seconds or a week. */
    m->n_buckets = N_BUCKETS;
    int64_t span = m->last_at - m->first_at + 1;
    m->bucket_us = span / N_BUCKETS + 1;
    m->total_buckets = ust_calloc(N_BUCKETS, sizeof(int64_t));
    return m->total_buckets ? 0 : UST_ENOMEM;
}

static void bucket_add(const ust__report_model *m, int64_t *buckets, int64_t at,
                       int64_t n)
{
    int64_t b = (at - m->first_at) / m->bucket_us;
    if (b < 0)
        b = 0;
    if (b >= (int64_t)m->n_buckets)
        b = (int64_t)m->n_buckets - 1;
    buckets[b] += n;
}

/* The raw request of an event, as JSON for display, redacted. */
static json_t *raw_request(loader *l, const ust__report_model *m, int64_t seq)
{
    if (l->log == NULL)
        return NULL;
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    json_t *out = NULL;
    if (ust_log_cursor_open(l->log, seq - 1, &cur, NULL) == 0 &&
        ust_log_cursor_next(cur, &rec, NULL) == 1 && rec.seq == seq) {
        /* The request only: a recorded answer is shown (redacted) as the
         * legacy's decision. */
        ust_response_clear(&rec.response);
        char *line = ust_jsonl_format(&rec, 0);
        json_error_t jerr;
        out = line ? ust_json_loads(line, 0, &jerr) : NULL;
        ust_free(line);
        /* A JSON body is shown parsed, so its named fields can be masked. */
        json_t *body = json_object_get(out, "body");
        json_t *parsed = json_is_string(body)
                             ? ust_json_loads(json_string_value(body), 0, &jerr)
                             : NULL;
        if (parsed != NULL) {
            ust_redact_json(parsed, m->redact);
            json_object_set_new(out, "body", parsed);
        }
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(out, "headers"), i, h)
        {
            if (ust_redact_header(m->redact, json_string_value(json_array_get(h, 0))))
                json_array_set_new(h, 1, json_string("[redacted]"));
        }
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    return out;
}

typedef struct class_loader {
    loader *l;
    const ust__report_model *m;
    ust__report_class *c;
} class_loader;

static int add_example(void *ctx, const ust_run_divergence *d)
{
    class_loader *cl = ctx;
    ust__report_example *e = &cl->c->examples[cl->c->n_examples++];
    e->seq = d->seq;
    json_error_t jerr;
    e->divergence = ust_json_loads(d->line, 0, &jerr);
    ust__report_redact_line(e->divergence, cl->m->redact);
    e->request = raw_request(cl->l, cl->m, e->seq);
    return 0;
}

static int load_examples(loader *l, const ust__report_model *m, ust__report_class *c,
                         size_t cap)
{
    c->examples = ust_calloc(cap, sizeof(*c->examples));
    if (c->examples == NULL)
        return UST_ENOMEM;
    class_loader cl = {l, m, c};
    ust_run_filter f = {.class_name = c->name, .limit = cap};
    return ust_run_divergences(l->run, &f, add_example, &cl, l->err);
}

enum { MAX_ROWS = 100 };

static int add_row(void *ctx, const ust_run_event *e)
{
    ust__report_timeline *t = ctx;
    if (t->n == MAX_ROWS) {
        t->truncated = 1;
        return 1;
    }
    ust__report_row *r = &t->rows[t->n++];
    r->seq = e->seq;
    r->at = e->received_at;
    r->event_type = ust_strdup(e->event_type);
    r->lv = ust_strdup(e->legacy_verdict);
    r->ls = ust_strdup(e->legacy_state);
    r->cv = ust_strdup(e->candidate_verdict);
    r->cs = ust_strdup(e->candidate_state);
    r->diverged = e->diverged;
    r->follow_on = e->follow_on;
    return 0;
}

static int add_timeline(void *ctx, const char *entity)
{
    class_loader *cl = ctx;
    ust__report_timeline *t = &cl->c->timelines[cl->c->n_timelines++];
    t->entity = ust_strdup(entity);
    t->rows = ust_calloc(MAX_ROWS, sizeof(*t->rows));
    if (t->rows == NULL)
        return UST_ENOMEM;
    int rc =
        ust_run_timeline(cl->l->run, t->entity, MAX_ROWS + 1, add_row, t, cl->l->err);
    return rc == 1 ? 0 : rc;
}

/* The entities where the class's divergences started (not follow-ons). */
static int load_timelines(loader *l, ust__report_class *c, size_t cap)
{
    c->timelines = ust_calloc(cap, sizeof(*c->timelines));
    if (c->timelines == NULL)
        return UST_ENOMEM;
    class_loader cl = {l, NULL, c};
    return ust_run_class_entities(l->run, c->name, cap, add_timeline, &cl, l->err);
}

static int add_field_set(void *ctx, const char *fields)
{
    json_error_t jerr;
    json_t *f = ust_json_loads(fields, 0, &jerr);
    if (f != NULL)
        json_array_append_new(ctx, f);
    return 0;
}

typedef struct bucket_loader {
    const ust__report_model *m;
    int64_t *buckets;
} bucket_loader;

static int add_bucket(void *ctx, int64_t at, int64_t n)
{
    bucket_loader *b = ctx;
    bucket_add(b->m, b->buckets, at, n);
    return 0;
}

static int load_buckets(loader *l, const ust__report_model *m, const char *cls,
                        int64_t *buckets)
{
    bucket_loader b = {m, buckets};
    return ust_run_divergence_buckets(l->run, cls, m->first_at, m->bucket_us,
                                      add_bucket, &b, l->err);
}

static int load_class_details(loader *l, ust__report_model *m, ust__report_class *c)
{
    c->field_sets = json_array();
    int rc =
        ust_run_class_fields(l->run, c->name, 5, add_field_set, c->field_sets, l->err);
    if (rc != 0)
        return rc;
    c->buckets = ust_calloc(m->n_buckets, sizeof(int64_t));
    rc = c->buckets ? load_buckets(l, m, c->name, c->buckets) : UST_ENOMEM;
    if (rc == 0)
        rc = load_examples(l, m, c, l->o->max_examples ? l->o->max_examples : 5);
    if (rc == 0)
        rc = load_timelines(l, c, l->o->max_timelines ? l->o->max_timelines : 10);
    return rc;
}

typedef struct classes_loader {
    loader *l;
    ust__report_model *m;
    size_t detail, cap;
} classes_loader;

static int add_class(void *ctx, const ust_run_class *rc)
{
    classes_loader *cl = ctx;
    ust__report_model *m = cl->m;
    /* Beyond the cap a class is counted, not kept: bounded memory. */
    if (m->n_classes >= cl->detail) {
        m->n_classes++;
        return 0;
    }
    ust__report_class *grown =
        ust__report_grow(m->classes, &cl->cap, m->n_classes, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    m->classes = grown;
    ust__report_class *c = &m->classes[m->n_classes++];
    memset(c, 0, sizeof(*c));
    m->n_detailed = m->n_classes;
    c->name = ust_strdup(rc->name);
    c->count = rc->count;
    c->first_at = rc->first_at;
    c->last_at = rc->last_at;
    c->follow_ons = rc->follow_ons;
    c->accepted = ust_triage_match(cl->l->o->triage, rc->name ? rc->name : "");
    return c->name ? 0 : UST_ENOMEM;
}

static int load_classes(loader *l, ust__report_model *m)
{
    classes_loader cl = {l, m, l->o->max_classes ? l->o->max_classes : 100, 0};
    int rc = ust_run_classes(l->run, add_class, &cl, l->err);
    for (size_t i = 0; rc == 0 && i < m->n_detailed; i++)
        rc = load_class_details(l, m, &m->classes[i]);
    if (rc != 0)
        return rc;
    return load_buckets(l, m, NULL, m->total_buckets);
}

int ust__report_model_load(const ust_report_opts *o, ust__report_model *m, char **err)
{
    memset(m, 0, sizeof(*m));
    loader l = {.o = o, .err = err};
    int rc = ust_run_open(o->run_path, &l.run, err);
    if (rc != 0)
        return rc;
    /* The verdict is the gate's own judgement, read first. */
    rc = ust__gate_judge(l.run, o->run_path, o->log_path, o->triage, &m->gate, err);
    if (rc == 0)
        rc = load_meta(&l, m);
    char *named = NULL;
    if (rc == 0 && o->log_path == NULL && (rc = ust_run_log(l.run, &named, err)) > 0)
        rc = 0;
    const char *log_path = o->log_path ? o->log_path : named;
    if (rc == 0 && log_path != NULL)
        ust_log_open(log_path, UST_LOG_READONLY, &l.log, NULL); /* examples only */
    ust_free(named);
    if (rc == 0)
        rc = load_counts(&l, m);
    if (rc == 0)
        rc = load_classes(&l, m);
    ust_log_close(l.log);
    ust_run_close(l.run);
    if (rc != 0)
        ust__report_model_clear(m);
    return rc;
}

void *ust__report_grow(void *items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return items;
    size_t grown_cap = *cap ? *cap * 2 : 16;
    void *grown = ust_realloc(items, grown_cap * size);
    if (grown != NULL)
        *cap = grown_cap;
    return grown;
}

void ust__report_model_clear(ust__report_model *m)
{
    for (size_t i = 0; i < m->n_detailed; i++) {
        ust__report_class *c = &m->classes[i];
        ust_free(c->name);
        json_decref(c->field_sets);
        for (size_t k = 0; k < c->n_examples; k++) {
            json_decref(c->examples[k].divergence);
            json_decref(c->examples[k].request);
        }
        ust_free(c->examples);
        for (size_t k = 0; k < c->n_timelines; k++) {
            ust__report_timeline *t = &c->timelines[k];
            for (size_t r = 0; r < t->n; r++) {
                ust_free(t->rows[r].event_type);
                ust_free(t->rows[r].lv);
                ust_free(t->rows[r].ls);
                ust_free(t->rows[r].cv);
                ust_free(t->rows[r].cs);
            }
            ust_free(t->rows);
            ust_free(t->entity);
        }
        ust_free(c->timelines);
        ust_free(c->buckets);
    }
    ust_free(m->classes);
    ust_free(m->total_buckets);
    json_decref(m->meta);
    json_decref(m->redact);
    json_decref(m->by_route);
    json_decref(m->by_signature);
    ust_gate_result_clear(&m->gate);
    memset(m, 0, sizeof(*m));
}
