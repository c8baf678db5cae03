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

static int add_route(void *ctx, const char *key, int64_t count)
{
    ust__report_model *m = ctx;
    json_object_set_new(m->by_route, key, json_integer(count));
    return 0;
}

static int add_signature(void *ctx, const char *key, int64_t count)
{
    ust__report_model *m = ctx;
    json_object_set_new(m->by_signature, key, json_integer(count));
    return 0;
}

static int add_pair(void *ctx, const char *legacy, const char *candidate, int64_t count)
{
    ust__report_model *m = ctx;
    m->matrix[ust__report_verdict_index(legacy)]
             [ust__report_verdict_index(candidate)] += count;
    return 0;
}

/* The totals and counts read with the gate's judgement (n), and the slots
 * of the charts over the run's span. */
static int load_counts(ust__report_model *m, const ust_run_totals *n)
{
    m->events = n->events;
    m->fed = n->fed;
    m->first_at = n->first_at;
    m->last_at = n->last_at;
    m->divergences = n->divergences;
    m->follow_ons = n->follow_ons;
    /* Bars of a round width over the run's span, so the chart reads in whole
     * minutes, hours or days whether the run took seconds or a week. */
    m->bars = ust__report_bar_slots(m->first_at, m->last_at);
    m->days = ust__report_day_slots(m->first_at, m->last_at);
    m->total_buckets = ust_calloc(m->bars.n, sizeof(int64_t));
    m->total_days = ust_calloc(m->days.n, sizeof(int64_t));
    return m->total_buckets && m->total_days ? 0 : UST_ENOMEM;
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

typedef struct slot_loader {
    const ust__report_slots *slots;
    int64_t *counts;
} slot_loader;

static int add_slot(void *ctx, int64_t at, int64_t n)
{
    slot_loader *sl = ctx;
    int64_t i = (at - sl->slots->origin_us) / sl->slots->width_us;
    if (i < 0)
        i = 0;
    if (i >= (int64_t)sl->slots->n)
        i = (int64_t)sl->slots->n - 1;
    sl->counts[i] += n;
    return 0;
}

/* The divergences of cls (NULL: all) per slot, into counts (slots->n). */
static int load_slots(loader *l, const ust__report_slots *slots, const char *cls,
                      int64_t *counts)
{
    slot_loader sl = {slots, counts};
    return ust_run_divergence_buckets(l->run, cls, slots->origin_us, slots->width_us,
                                      add_slot, &sl, l->err);
}

/* The days' counts of cls (NULL: all) into days, added from its bars when
 * each bar lies within one day (a bar of at most a day is: its width divides
 * a day, and it starts at a multiple of its width), else read. */
static int load_days(loader *l, const ust__report_model *m, const char *cls,
                     const int64_t *bars, int64_t *days)
{
    if (m->days.width_us % m->bars.width_us != 0)
        return load_slots(l, &m->days, cls, days);
    for (size_t b = 0; b < m->bars.n; b++) {
        int64_t at = m->bars.origin_us + (int64_t)b * m->bars.width_us;
        days[(at - m->days.origin_us) / m->days.width_us] += bars[b];
    }
    return 0;
}

static int load_class_details(loader *l, ust__report_model *m, ust__report_class *c)
{
    c->field_sets = json_array();
    int rc =
        ust_run_class_fields(l->run, c->name, 5, add_field_set, c->field_sets, l->err);
    if (rc != 0)
        return rc;
    c->buckets = ust_calloc(m->bars.n, sizeof(int64_t));
    rc = c->buckets ? load_slots(l, &m->bars, c->name, c->buckets) : UST_ENOMEM;
    if (rc == 0 && c - m->classes < UST__REPORT_DAY_CLASSES) {
        c->days = ust_calloc(m->days.n, sizeof(int64_t));
        rc = c->days ? load_days(l, m, c->name, c->buckets, c->days) : UST_ENOMEM;
    }
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
    if (rc == 0)
        rc = load_slots(l, &m->bars, NULL, m->total_buckets);
    return rc == 0 ? load_days(l, m, NULL, m->total_buckets, m->total_days) : rc;
}

int ust__report_model_load(const ust_report_opts *o, ust__report_model *m, char **err)
{
    memset(m, 0, sizeof(*m));
    loader l = {.o = o, .err = err};
    int rc = ust__report_run_open(o, &l.run, err);
    if (rc != 0)
        return rc;
    /* The verdict is the gate's own judgement, read first; the counts of the
     * events come from its read of the decisions. */
    m->by_route = json_object();
    m->by_signature = json_object();
    ust_run_tally tally = {add_route, add_signature, add_pair, m};
    ust_run_totals totals;
    rc = m->by_route && m->by_signature
             ? ust__gate_judge(l.run, ust_run_name(l.run), o->log_path, o->triage,
                               &tally, &totals, &m->gate, err)
             : UST_ENOMEM;
    if (rc == 0)
        rc = load_meta(&l, m);
    /* The log: its chain checked meanwhile, up to the run's cursor, and the
     * run's coverage counted meanwhile too. Without its log the coverage is
     * unknown, which the report says; a log that opens but cannot be read
     * is an error. */
    char *log_path = NULL;
    if (rc == 0)
        rc = ust__report_log_open(l.run, o, &l.log, &log_path, err);
    if (rc == 0)
        rc = ust__report_chain_start(log_path, m->gate.cursor, m->meta, &m->chain);
    if (rc == 0 && l.log != NULL)
        rc = ust__report_coverage_start(l.run, log_path, &m->coverage_job, err);
    ust_free(log_path);
    if (rc == 0)
        rc = ust__report_about_load(o, m, err);
    if (rc == 0)
        rc = load_counts(m, &totals);
    if (rc == 0)
        rc = load_classes(&l, m);
    ust_log_close(l.log);
    ust_run_close(l.run);
    if (rc != 0)
        ust__report_model_clear(m);
    return rc;
}

int ust__report_run_open(const ust_report_opts *o, ust_run **out, char **err)
{
    return o->n_runs > 1 ? ust_run_open_many(o->run_paths, o->n_runs, out, err)
                         : ust_run_open(o->run_path, out, err);
}

int ust__report_log_open(ust_run *run, const ust_report_opts *o, ust_log **out,
                         char **path, char **err)
{
    return ust__report_open_log(run, o->log_path, out, path, err);
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
        ust_free(c->days);
    }
    ust_free(m->classes);
    ust_free(m->total_buckets);
    ust_free(m->total_days);
    json_decref(ust__report_chain_finish(m->chain));
    ust__report_coverage_finish(m->coverage_job, &m->coverage, &m->has_coverage, NULL);
    json_decref(m->about);
    json_decref(m->meta);
    json_decref(m->redact);
    json_decref(m->by_route);
    json_decref(m->by_signature);
    ust_gate_result_clear(&m->gate);
    memset(m, 0, sizeof(*m));
}
