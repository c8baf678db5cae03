/* Gathering the report's model from the run database (and the raw requests
 * of the examples from the event log the run read). */
#include "report/model.h"

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

/* An example found: its seq, time and the kind of its reason (run.h). */
typedef struct sample {
    int64_t seq, at;
    char *reason;
} sample;

static int take_sample(void *ctx, const ust_run_reasoned *r)
{
    sample *s = ctx;
    s->seq = r->d.seq;
    s->at = r->d.received_at;
    s->reason = r->kind ? ust_strdup(r->kind) : NULL;
    return r->kind && s->reason == NULL ? UST_ENOMEM : 0;
}

static int by_time(const void *a, const void *b)
{
    const sample *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The divergences nearest cap evenly spaced times from the class's first to
 * its last, each a different one, in time order: a class that ran all week
 * shows its Monday and its Sunday, not its first five minutes. */
static int sample_examples(loader *l, ust__report_class *c, size_t cap, sample *samples,
                           int64_t *seqs, size_t *n)
{
    int rc = 0;
    int64_t span = c->last_at - c->first_at;
    for (size_t k = 0; rc == 0 && k < cap; k++) {
        int64_t at =
            cap > 1
                ? c->first_at + (int64_t)((double)span * (double)k / (double)(cap - 1))
                : c->first_at;
        rc = ust_run_class_nearest(l->run, c->name, at, seqs, *n, take_sample,
                                   &samples[*n], l->err);
        if (rc == 1) {
            seqs[*n] = samples[*n].seq;
            ++*n;
            rc = 0;
        }
    }
    qsort(samples, *n, sizeof(*samples), by_time);
    return rc;
}

/* The samples first, then each example in full. */
static int load_examples(loader *l, const ust__report_model *m, ust__report_class *c,
                         size_t cap)
{
    c->examples = ust_calloc(cap, sizeof(*c->examples));
    c->example_reasons = ust_calloc(cap, sizeof(*c->example_reasons));
    sample *samples = ust_calloc(cap, sizeof(*samples));
    int64_t *seqs = ust_calloc(cap, sizeof(*seqs));
    size_t n = 0;
    int rc = c->examples && c->example_reasons && samples && seqs
                 ? sample_examples(l, c, cap, samples, seqs, &n)
                 : UST_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        c->examples[k].seq = samples[k].seq;
        c->example_reasons[k] = samples[k].reason;
    }
    c->n_examples = n;
    ust_free(samples);
    ust_free(seqs);
    for (size_t k = 0; rc == 0 && k < c->n_examples; k++) {
        ust__report_event *e = &c->examples[k];
        rc = ust__report_event_load(l->run, l->log, m->redact, e->seq, e, l->err);
        rc = rc < 0 ? rc : 0;
    }
    return rc;
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
    if (rc == 0)
        rc = ust__report_log_open(l.run, o, &l.log, err);
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

int ust__report_log_open(ust_run *run, const ust_report_opts *o, ust_log **out,
                         char **err)
{
    *out = NULL;
    char *named = NULL;
    int rc = 0;
    if (o->log_path == NULL && (rc = ust_run_log(run, &named, err)) > 0)
        rc = 0;
    const char *log_path = o->log_path ? o->log_path : named;
    if (rc == 0 && log_path != NULL)
        ust_log_open(log_path, UST_LOG_READONLY, out, NULL); /* examples only */
    ust_free(named);
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
            ust__report_event_clear(&c->examples[k]);
            ust_free(c->example_reasons[k]);
        }
        ust_free(c->examples);
        ust_free(c->example_reasons);
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
