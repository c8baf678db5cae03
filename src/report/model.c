/* Gathering the report's model from the run database (and the raw requests
 * of the examples from the event log the run read). */
#include "report/model.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/log.h>

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define N_BUCKETS 48

typedef struct loader {
    sqlite3 *db;
    const ust_report_opts *o;
    ust_log *log; /* NULL when the log cannot be opened */
    char **err;
} loader;

int rp_verdict_index(const char *name)
{
    ust_verdict v;
    return name != NULL && ust_verdict_parse(name, &v) == 0 ? (int)v : 0;
}

const char *rp_verdict_label(int index)
{
    return index == 0 ? "not fed" : ust_verdict_name((ust_verdict)index);
}

static int db_error(loader *l, const char *what)
{
    return ust_errf(l->err, UST_EDB, "%s: %s: %s", l->o->run_path, what,
                    sqlite3_errmsg(l->db));
}

static sqlite3_stmt *prepare(loader *l, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(l, "query");
        return NULL;
    }
    return st;
}

/* 1 a row, 0 done, <0 a read that failed (with *l->err): never a partial
 * list taken for the whole. */
static int step(loader *l, sqlite3_stmt *st)
{
    return ust__db_step(st, l->o->run_path, l->err);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? ust_strdup((const char *)t) : NULL;
}

static int load_meta(loader *l, rp_model *m)
{
    sqlite3_stmt *st = prepare(l, "SELECT key, value FROM meta ORDER BY key");
    if (st == NULL)
        return UST_EDB;
    m->meta = json_object();
    int rc;
    while ((rc = step(l, st)) == 1)
        json_object_set_new(m->meta, (const char *)sqlite3_column_text(st, 0),
                            json_string((const char *)sqlite3_column_text(st, 1)));
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    json_error_t jerr;
    const char *redact = json_string_value(json_object_get(m->meta, "redact"));
    m->redact = redact ? ust_json_loads(redact, 0, &jerr) : NULL;
    if (m->redact == NULL)
        m->redact = json_array();
    return 0;
}

static int load_counts(loader *l, rp_model *m)
{
    sqlite3_stmt *st = prepare(l, "SELECT count(*), coalesce(sum(fed), 0),"
                                  " min(received_at), max(received_at) FROM decisions");
    if (st == NULL)
        return UST_EDB;
    int rc = step(l, st);
    if (rc == 1) {
        m->events = sqlite3_column_int64(st, 0);
        m->fed = sqlite3_column_int64(st, 1);
        m->first_at = sqlite3_column_int64(st, 2);
        m->last_at = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    st = prepare(l, "SELECT count(*), coalesce(sum(follow_on), 0) FROM divergences");
    if (st == NULL)
        return UST_EDB;
    rc = step(l, st);
    if (rc == 1) {
        m->divergences = sqlite3_column_int64(st, 0);
        m->follow_ons = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    const char *groups[][2] = {{"route", "by_route"}, {"signature", "by_signature"}};
    for (size_t g = 0; g < 2; g++) {
        char *sql =
            ust_sprintf("SELECT coalesce(%s, '(unrouted)'), count(*) FROM decisions"
                        " GROUP BY 1 ORDER BY 1",
                        groups[g][0]);
        st = sql ? prepare(l, sql) : NULL;
        ust_free(sql);
        if (st == NULL)
            return UST_EDB;
        json_t *o = json_object();
        while ((rc = step(l, st)) == 1)
            json_object_set_new(o, (const char *)sqlite3_column_text(st, 0),
                                json_integer(sqlite3_column_int64(st, 1)));
        sqlite3_finalize(st);
        if (g == 0)
            m->by_route = o;
        else
            m->by_signature = o;
        if (rc != 0)
            return rc;
    }
    st = prepare(l,
                 "SELECT l_verdict, c_verdict, count(*) FROM decisions GROUP BY 1, 2");
    if (st == NULL)
        return UST_EDB;
    while ((rc = step(l, st)) == 1) {
        int a = rp_verdict_index((const char *)sqlite3_column_text(st, 0));
        int b = rp_verdict_index((const char *)sqlite3_column_text(st, 1));
        m->matrix[a][b] += sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    /* Time buckets spread over the run's span, so the chart's right end is
     * its last event whether the run took seconds or a week. */
    m->n_buckets = N_BUCKETS;
    int64_t span = m->last_at - m->first_at + 1;
    m->bucket_us = span / N_BUCKETS + 1;
    m->total_buckets = ust_calloc(N_BUCKETS, sizeof(int64_t));
    return m->total_buckets ? 0 : UST_ENOMEM;
}

static void bucket_add(const rp_model *m, int64_t *buckets, int64_t at, int64_t n)
{
    int64_t b = (at - m->first_at) / m->bucket_us;
    if (b < 0)
        b = 0;
    if (b >= (int64_t)m->n_buckets)
        b = (int64_t)m->n_buckets - 1;
    buckets[b] += n;
}

/* The raw request of an event, as JSON for display, redacted. */
static json_t *raw_request(loader *l, const rp_model *m, int64_t seq)
{
    if (l->log == NULL)
        return NULL;
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    json_t *out = NULL;
    if (ust_log_cursor_open(l->log, seq - 1, &cur, NULL) == 0 &&
        ust_log_cursor_next(cur, &rec, NULL) == 1 && rec.seq == seq) {
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

static int load_examples(loader *l, const rp_model *m, rp_class *c, size_t cap)
{
    sqlite3_stmt *st = prepare(l, "SELECT seq, line FROM divergences WHERE class = ?1"
                                  " ORDER BY seq LIMIT ?2");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_text(st, 1, c->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)cap);
    c->examples = ust_calloc(cap, sizeof(*c->examples));
    if (c->examples == NULL) {
        sqlite3_finalize(st);
        return UST_ENOMEM;
    }
    int rc = 0;
    while (c->n_examples < cap && (rc = step(l, st)) == 1) {
        rp_example *e = &c->examples[c->n_examples++];
        e->seq = sqlite3_column_int64(st, 0);
        json_error_t jerr;
        e->divergence =
            ust_json_loads((const char *)sqlite3_column_text(st, 1), 0, &jerr);
        ust_redact_json(
            json_object_get(json_object_get(e->divergence, "legacy"), "body"),
            m->redact);
        ust_redact_json(
            json_object_get(json_object_get(e->divergence, "candidate"), "body"),
            m->redact);
        e->request = raw_request(l, m, e->seq);
    }
    sqlite3_finalize(st);
    return c->n_examples == cap ? 0 : rc;
}

static int load_timeline(loader *l, rp_timeline *t)
{
    enum { MAX_ROWS = 100 };
    sqlite3_stmt *st =
        prepare(l, "SELECT d.seq, d.received_at, d.event_type, d.l_verdict, d.l_state, "
                   "d.c_verdict,"
                   " d.c_state, d.diverged, coalesce(v.follow_on, 0) FROM decisions d"
                   " LEFT JOIN divergences v ON v.seq = d.seq WHERE d.entity = ?1"
                   " ORDER BY d.seq LIMIT ?2");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_text(st, 1, t->entity, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, MAX_ROWS + 1);
    t->rows = ust_calloc(MAX_ROWS, sizeof(*t->rows));
    if (t->rows == NULL) {
        sqlite3_finalize(st);
        return UST_ENOMEM;
    }
    int rc;
    while ((rc = step(l, st)) == 1) {
        if (t->n == MAX_ROWS) {
            t->truncated = 1;
            rc = 0;
            break;
        }
        rp_row *r = &t->rows[t->n++];
        r->seq = sqlite3_column_int64(st, 0);
        r->at = sqlite3_column_int64(st, 1);
        r->event_type = col_dup(st, 2);
        r->lv = col_dup(st, 3);
        r->ls = col_dup(st, 4);
        r->cv = col_dup(st, 5);
        r->cs = col_dup(st, 6);
        r->diverged = sqlite3_column_int(st, 7);
        r->follow_on = sqlite3_column_int(st, 8);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The entities where the class's divergences started (not follow-ons). */
static int load_timelines(loader *l, rp_class *c, size_t cap)
{
    sqlite3_stmt *st =
        prepare(l, "SELECT entity FROM divergences WHERE class = ?1 AND"
                   " entity IS NOT NULL GROUP BY entity ORDER BY min(seq)"
                   " LIMIT ?2");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_text(st, 1, c->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)cap);
    c->timelines = ust_calloc(cap, sizeof(*c->timelines));
    int rc = c->timelines ? 0 : UST_ENOMEM;
    while (rc == 0 && c->n_timelines < cap && (rc = step(l, st)) == 1) {
        rp_timeline *t = &c->timelines[c->n_timelines++];
        t->entity = col_dup(st, 0);
        rc = load_timeline(l, t);
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_class_details(loader *l, rp_model *m, rp_class *c)
{
    sqlite3_stmt *st =
        prepare(l, "SELECT DISTINCT fields FROM divergences WHERE class = ?1"
                   " LIMIT 5");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_text(st, 1, c->name, -1, SQLITE_STATIC);
    c->field_sets = json_array();
    int rc;
    while ((rc = step(l, st)) == 1) {
        json_error_t jerr;
        json_t *f = ust_json_loads((const char *)sqlite3_column_text(st, 0), 0, &jerr);
        if (f != NULL)
            json_array_append_new(c->field_sets, f);
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    st = prepare(l, "SELECT received_at, count(*) FROM divergences WHERE class = ?1"
                    " GROUP BY (received_at - ?2) / ?3");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_text(st, 1, c->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, m->first_at);
    sqlite3_bind_int64(st, 3, m->bucket_us);
    c->buckets = ust_calloc(m->n_buckets, sizeof(int64_t));
    rc = c->buckets ? 1 : UST_ENOMEM;
    while (rc == 1 && (rc = step(l, st)) == 1)
        bucket_add(m, c->buckets, sqlite3_column_int64(st, 0),
                   sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    rc = load_examples(l, m, c, l->o->max_examples ? l->o->max_examples : 5);
    if (rc == 0)
        rc = load_timelines(l, c, l->o->max_timelines ? l->o->max_timelines : 10);
    return rc;
}

static int load_classes(loader *l, rp_model *m)
{
    size_t detail = l->o->max_classes ? l->o->max_classes : 100;
    sqlite3_stmt *st = prepare(l, "SELECT class, count(*), min(received_at),"
                                  " max(received_at), sum(follow_on) FROM divergences"
                                  " GROUP BY class ORDER BY 2 DESC, 1");
    if (st == NULL)
        return UST_EDB;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && (rc = step(l, st)) == 1) {
        rc = 0;
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int64_t count = sqlite3_column_int64(st, 1);
        const ust_triage_entry *acc = ust_triage_match(l->o->triage, name ? name : "");
        /* Beyond the cap a class is counted, not kept: bounded memory. */
        if (m->n_classes >= detail) {
            m->n_classes++;
            continue;
        }
        if (m->n_classes == cap) {
            cap = cap ? cap * 2 : 16;
            rp_class *grown = ust_realloc(m->classes, cap * sizeof(*grown));
            if (grown == NULL) {
                rc = UST_ENOMEM;
                break;
            }
            m->classes = grown;
        }
        rp_class *c = &m->classes[m->n_classes++];
        memset(c, 0, sizeof(*c));
        m->n_detailed = m->n_classes;
        c->name = ust_strdup(name);
        c->count = count;
        c->first_at = sqlite3_column_int64(st, 2);
        c->last_at = sqlite3_column_int64(st, 3);
        c->follow_ons = sqlite3_column_int64(st, 4);
        c->accepted = acc;
        if (c->name == NULL)
            rc = UST_ENOMEM;
    }
    sqlite3_finalize(st);
    for (size_t i = 0; rc == 0 && i < m->n_detailed; i++)
        rc = load_class_details(l, m, &m->classes[i]);
    if (rc != 0)
        return rc;
    st = prepare(l, "SELECT received_at, count(*) FROM divergences"
                    " GROUP BY (received_at - ?1) / ?2");
    if (st == NULL)
        return UST_EDB;
    sqlite3_bind_int64(st, 1, m->first_at);
    sqlite3_bind_int64(st, 2, m->bucket_us);
    while ((rc = step(l, st)) == 1)
        bucket_add(m, m->total_buckets, sqlite3_column_int64(st, 0),
                   sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    return rc;
}

int rp_model_load(const ust_report_opts *o, rp_model *m, char **err)
{
    memset(m, 0, sizeof(*m));
    loader l = {.o = o, .err = err};
    if (sqlite3_open_v2(o->run_path, &l.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(l.db);
        return ust_errf(err, UST_EIO, "%s: cannot open run database", o->run_path);
    }
    /* The verdict is the gate's own judgement, read first. */
    int rc = ust_gate_check(o->run_path, o->log_path, o->triage, &m->gate, err);
    if (rc == 0)
        rc = load_meta(&l, m);
    const char *named = json_string_value(json_object_get(m->meta, "log_file"));
    const char *log_path =
        o->log_path ? o->log_path
        : named     ? named
                    : json_string_value(json_object_get(m->meta, "log_path"));
    if (rc == 0 && log_path != NULL)
        ust_log_open(log_path, UST_LOG_READONLY, &l.log, NULL); /* examples only */
    if (rc == 0)
        rc = load_counts(&l, m);
    if (rc == 0)
        rc = load_classes(&l, m);
    ust_log_close(l.log);
    sqlite3_close(l.db);
    if (rc != 0)
        rp_model_clear(m);
    return rc;
}

void rp_model_clear(rp_model *m)
{
    for (size_t i = 0; i < m->n_detailed; i++) {
        rp_class *c = &m->classes[i];
        ust_free(c->name);
        json_decref(c->field_sets);
        for (size_t k = 0; k < c->n_examples; k++) {
            json_decref(c->examples[k].divergence);
            json_decref(c->examples[k].request);
        }
        ust_free(c->examples);
        for (size_t k = 0; k < c->n_timelines; k++) {
            rp_timeline *t = &c->timelines[k];
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
