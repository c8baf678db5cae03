/* GET /metrics in the Prometheus text format (0.0.4), every family with its
 * HELP and TYPE, as `promtool check metrics` wants it. Counters and
 * histograms live in memory, updated by the threads that do the work, and
 * so do the divergences by class (the runner's thread adds what each step
 * committed): a scrape reads no database. No secret, no payload, no request
 * detail ever reaches it. docs/metrics.md lists every family and what it
 * answers. */
#include "http/metrics.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/sig.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define N_REJECTED 8
static const int rejected_status[N_REJECTED] = {400, 404, 405, 408, 413, 417, 431, 503};

/* Bucket bounds, in the unit observed. A request or a commit is an fsync
 * away from its answer: 0.5 ms (a page cache that lies) to 10 s (a disk in
 * trouble). A decide runs from µs in process to timeout_ms (1 s by default)
 * in a child. A batch is 1 to MAX_BATCH (1024) events. */
static const int64_t latency_us[] = {500,     1000,    2500,    5000,    10000,
                                     25000,   50000,   100000,  250000,  500000,
                                     1000000, 2500000, 5000000, 10000000};
static const int64_t decide_us[] = {50,     100,    250,    500,     1000,
                                    2500,   5000,   10000,  25000,   50000,
                                    100000, 250000, 500000, 1000000, 2500000};
static const int64_t batch_events[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

void ust__metrics_init(ust__metrics *m)
{
    for (size_t r = 0; r <= UST__MAX_ROUTES; r++)
        ust_histogram_init(&m->request_us[r], latency_us, UST_ARRAY_SIZE(latency_us),
                           1e6);
    ust_histogram_init(&m->commit_us, latency_us, UST_ARRAY_SIZE(latency_us), 1e6);
    ust_histogram_init(&m->batch_events, batch_events, UST_ARRAY_SIZE(batch_events), 1);
    ust_histogram_init(&m->legacy_decide, decide_us, UST_ARRAY_SIZE(decide_us), 1e6);
    ust_histogram_init(&m->candidate_decide, decide_us, UST_ARRAY_SIZE(decide_us), 1e6);
}

void ust__metrics_rejected(ust__metrics *m, int status)
{
    for (int i = 0; i < N_REJECTED; i++)
        if (rejected_status[i] == status)
            atomic_fetch_add(&m->rejected[i], 1);
}

void ust__metrics_answered(ust__metrics *m, uint64_t started_ns, size_t route)
{
    if (started_ns == 0)
        return; /* no request was read for it (a connection over the cap) */
    size_t r = route <= UST__MAX_ROUTES ? route : 0;
    ust_histogram_observe(&m->request_us[r],
                          (int64_t)((uv_hrtime() - started_ns) / 1000));
}

void ust__class_counts_init(ust__class_counts *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
}

void ust__class_counts_destroy(ust__class_counts *c)
{
    for (size_t i = 0; i < c->n; i++)
        ust_free(c->v[i].cls);
    ust_free(c->v);
    pthread_mutex_destroy(&c->mu);
}

void ust__class_counts_partial(ust__class_counts *c)
{
    pthread_mutex_lock(&c->mu);
    c->partial = 1;
    pthread_mutex_unlock(&c->mu);
}

/* A linear search: a run has tens of classes, and a step adds a few. */
void ust__class_counts_add(ust__class_counts *c, const char *cls, int64_t n)
{
    pthread_mutex_lock(&c->mu);
    size_t i = 0;
    while (i < c->n && strcmp(c->v[i].cls, cls) != 0)
        i++;
    if (i == c->n) {
        char *copy = ust_strdup(cls);
        if (c->n == c->cap && copy != NULL) {
            size_t cap = c->cap ? c->cap * 2 : 16;
            struct ust__class_count *grown = ust_realloc(c->v, cap * sizeof(*grown));
            if (grown != NULL) {
                c->v = grown;
                c->cap = cap;
            }
        }
        if (copy == NULL || c->n == c->cap) {
            ust_free(copy);
            c->partial = 1;
            pthread_mutex_unlock(&c->mu);
            return;
        }
        c->v[c->n].cls = copy;
        c->v[c->n++].n = 0;
    }
    c->v[i].n += n;
    pthread_mutex_unlock(&c->mu);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled sample: its help, then its value. */
static void metric(FILE *f, const char *name, const char *type, const char *help,
                   long long value)
{
    family(f, name, type, help);
    fprintf(f, "%s %lld\n", name, value);
}

/* A label value into out: backslash, quote and newline escaped; cut short
 * (between characters, never inside an escape) past cap. */
static const char *label_value(char *out, size_t cap, const char *p)
{
    size_t n = 0;
    for (; p && *p && n + 3 < cap; p++) {
        if (*p == '\\' || *p == '"' || *p == '\n')
            out[n++] = '\\';
        out[n++] = *p == '\n' ? 'n' : *p;
    }
    out[n] = '\0';
    return out;
}

#define CLASSES_SHOWN 50

/* The most frequent first; a tie by class, as bytes. */
static int by_count(const void *a, const void *b)
{
    const struct ust__class_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->cls, y->cls);
}

/* Divergences by class since the run began (counted from the run database
 * at start, then as the runner commits). A class's count only grows: a
 * counter. */
static void render_classes(ust__class_counts *c, FILE *f)
{
    family(f, "understudy_divergences_by_class_total", "counter",
           "Divergences in the run database by class, since the run began (the 50"
           " most frequent classes).");
    int whole = 1;
    if (c != NULL) {
        /* A copy, so the runner's thread is not held up by the render. */
        pthread_mutex_lock(&c->mu);
        size_t n = c->n;
        struct ust__class_count *v = ust_malloc((n ? n : 1) * sizeof(*v));
        if (v != NULL)
            for (size_t i = 0; i < n; i++)
                v[i] = (struct ust__class_count){ust_strdup(c->v[i].cls), c->v[i].n};
        whole = !c->partial && v != NULL;
        pthread_mutex_unlock(&c->mu);
        if (v == NULL)
            n = 0;
        size_t kept = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i].cls != NULL)
                v[kept++] = v[i];
            else
                whole = 0;
        qsort(v, kept, sizeof(*v), by_count);
        char lv[1024];
        for (size_t i = 0; i < kept; i++) {
            if (i < CLASSES_SHOWN)
                fprintf(f, "understudy_divergences_by_class_total{class=\"%s\"} %lld\n",
                        label_value(lv, sizeof(lv), v[i].cls), (long long)v[i].n);
            ust_free(v[i].cls);
        }
        ust_free(v);
    }
    /* Counts known to miss some leave the list above partial: say so, so an
     * alert on it does not read it as the whole. */
    family(f, "understudy_divergences_by_class_complete", "gauge",
           "1 when understudy_divergences_by_class_total was read whole at this"
           " scrape, 0 when the run database could not be read.");
    fprintf(f, "understudy_divergences_by_class_complete %d\n", whole);
}

static void render_recorder(ust__metrics *m, const ust__metrics_view *v, FILE *f)
{
    const ust_config *cfg = v->cfg;
    size_t n_routes = cfg->n_routes < UST__MAX_ROUTES ? cfg->n_routes : UST__MAX_ROUTES;
    family(f, "understudy_events_recorded_total", "counter",
           "Events durably recorded (their commit reached the disk), by route and"
           " signature status.");
    char lv[512], labels[600];
    for (size_t r = 0; r < n_routes; r++)
        for (int sig = 0; sig < UST__SIG_STATES; sig++)
            fprintf(f,
                    "understudy_events_recorded_total{route=\"%s\",signature=\"%s\"}"
                    " %lld\n",
                    label_value(lv, sizeof(lv), cfg->routes[r].path),
                    ust_sig_status_name((ust_sig_status)sig),
                    (long long)atomic_load(&m->recorded[r][sig]));
    family(f, "understudy_events_sampled_out_total", "counter",
           "Events a route's sample left out: answered 202, not recorded, by route.");
    for (size_t r = 0; r < n_routes; r++)
        fprintf(f, "understudy_events_sampled_out_total{route=\"%s\"} %lld\n",
                label_value(lv, sizeof(lv), cfg->routes[r].path),
                (long long)atomic_load(&m->sampled_out[r]));
    family(f, "understudy_requests_refused_total", "counter",
           "Requests answered with an error before recording, by HTTP status.");
    for (int i = 0; i < N_REJECTED; i++)
        fprintf(f, "understudy_requests_refused_total{status=\"%d\"} %lld\n",
                rejected_status[i], (long long)atomic_load(&m->rejected[i]));
    family(f, "understudy_request_duration_seconds", "histogram",
           "Seconds from a request's first byte read to its answer written, by"
           " route (\"none\": no route, /healthz, /metrics).");
    for (size_t r = 0; r <= n_routes; r++) {
        snprintf(
            labels, sizeof(labels), "route=\"%s\"",
            label_value(lv, sizeof(lv), r == 0 ? "none" : cfg->routes[r - 1].path));
        ust_histogram_write(f, "understudy_request_duration_seconds", labels,
                            &m->request_us[r]);
    }
    metric(f, "understudy_connections_open", "gauge", "Client connections open now.",
           (long long)v->connections);
    metric(f, "understudy_answer_bytes_owed", "gauge",
           "Bytes of answers owed to clients and not yet written (those still being"
           " decided counted at their largest), each with the memory it holds in"
           " serve beyond them: limits.max_owed_bytes_total bounds it.",
           (long long)v->owed_bytes);
    metric(f, "understudy_answers_owed", "gauge",
           "Answers owed to clients and not yet written.", (long long)v->answers_owed);
    metric(f, "understudy_connections_held_back", "gauge",
           "Client connections not read while they are owed too many answer bytes"
           " (limits.max_owed_bytes) or every connection is (max_owed_bytes_total).",
           (long long)v->held_back);
    family(f, "understudy_commit_duration_seconds", "histogram",
           "Seconds an append transaction of the event log took, fsync included"
           " (group commit: one a batch).");
    ust_histogram_write(f, "understudy_commit_duration_seconds", "", &m->commit_us);
    family(f, "understudy_commit_batch_events", "histogram",
           "Events in one append transaction of the event log.");
    ust_histogram_write(f, "understudy_commit_batch_events", "", &m->batch_events);
    metric(f, "understudy_append_failures_total", "counter",
           "Append transactions that failed (their requests were answered 503).",
           (long long)atomic_load(&m->append_failures));
    metric(f, "understudy_answers_write_failures_total", "counter",
           "Batches whose legacy decisions could not be recorded under --respond "
           "legacy (their requests were answered 503).",
           (long long)atomic_load(&m->answers_write_failures));
}

/* The lag in seconds is by the wall clock since the oldest event the runner
 * has not decided arrived, rather than the newest event's time: if traffic
 * stops while the runner is stuck, the newest event's time stands still and
 * so would the lag; this keeps growing, which is what an alert on a stuck
 * runner needs. The same figure /healthz judges (health.c keeps it). */
static void render_runner(ust__metrics *m, const ust__metrics_view *v, FILE *f)
{
    long long head = atomic_load(&m->last_seq), ran = atomic_load(&m->runner_seq);
    metric(f, "understudy_log_head_seq", "gauge",
           "Seq of the newest event this process made durable (0: none yet).", head);
    metric(f, "understudy_runner_lag_events", "gauge",
           "Durable events the runner has not decided yet.",
           head > ran ? head - ran : 0);
    family(f, "understudy_runner_lag_seconds", "gauge",
           "Seconds since the oldest event the runner has not decided arrived"
           " (wall clock; 0 when caught up).");
    fprintf(f, "understudy_runner_lag_seconds %.6f\n", v->lag_seconds);
    metric(f, "understudy_runner_events_total", "counter",
           "Events the runner read from the log and decided (or skipped as not fed).",
           (long long)atomic_load(&m->runner_events));
    metric(f, "understudy_divergences_total", "counter",
           "Divergences the runner of this process found.",
           (long long)atomic_load(&m->divergences));
    metric(f, "understudy_runner_state_cache_bytes", "gauge",
           "Bytes the runner's state store cache held after its last step (keys,"
           " values and its table; 0 without a runner).",
           (long long)atomic_load(&m->state_cache_bytes));
    metric(f, "understudy_runner_state_cache_limit_bytes", "gauge",
           "The state store cache's bound (cache.state_mb): emptied after a commit"
           " that leaves it over.",
           (long long)v->cfg->cache.state_mb << 20);
}

static void render_plugins(FILE *f, ust__metrics *m, const ust_config *cfg)
{
    static const char *const roles[2] = {"legacy", "candidate"};
    family(f, "understudy_plugin_decide_duration_seconds", "histogram",
           "Seconds in decide an event, by plugin (the candidate's: its batch's"
           " time spread over the batch's events).");
    ust_histogram_write(f, "understudy_plugin_decide_duration_seconds",
                        "plugin=\"legacy\"", &m->legacy_decide);
    ust_histogram_write(f, "understudy_plugin_decide_duration_seconds",
                        "plugin=\"candidate\"", &m->candidate_decide);
    /* Each plugin's row from its own config's counters; the stderr totals
     * once per counters (the command line gives both plugins the same). */
    const ust_plugin_counters *lc = cfg->legacy.counters, *cc = cfg->candidate.counters;
    ust_plugin_fault_stats fs, cs;
    ust_plugin_fault_stats_get(lc, &fs);
    ust_plugin_fault_stats_get(cc, &cs);
    memcpy(fs.errors[1], cs.errors[1], sizeof(fs.errors[1]));
    fs.restarts[1] = cs.restarts[1];
    family(f, "understudy_plugin_errors_total", "counter",
           "Decisions that became an error, by plugin and cause (timeout, crash,"
           " exit, protocol, bad_decision, rss, decide, down, start, internal).");
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < UST_FAULT_COUNT; c++)
            fprintf(f,
                    "understudy_plugin_errors_total{plugin=\"%s\",cause=\"%s\"} %llu\n",
                    roles[r], ust_plugin_fault_name((ust_plugin_fault)c),
                    (unsigned long long)fs.errors[r][c]);
    family(f, "understudy_plugin_restarts_total", "counter",
           "Plugin child processes started again (after a fault, a back-off or a"
           " step rolled back), by plugin.");
    for (int r = 0; r < 2; r++)
        fprintf(f, "understudy_plugin_restarts_total{plugin=\"%s\"} %llu\n", roles[r],
                (unsigned long long)fs.restarts[r]);
    ust_plugin_stderr_stats es, more;
    ust_plugin_stderr_stats_get(lc, &es);
    ust_plugin_stderr_stats_get(cc != lc ? cc : NULL, &more);
    es.dropped_bytes += more.dropped_bytes;
    es.dropped_lines += more.dropped_lines;
    metric(f, "understudy_plugin_stderr_dropped_bytes_total", "counter",
           "Bytes plugin children wrote to stderr over their budget.",
           (long long)es.dropped_bytes);
    metric(f, "understudy_plugin_stderr_dropped_lines_total", "counter",
           "Lines plugin children wrote to stderr over their budget.",
           (long long)es.dropped_lines);
}

char *ust__metrics_render(ust__metrics *m, const ust__metrics_view *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    render_recorder(m, v, f);
    render_runner(m, v, f);
    render_plugins(f, m, v->cfg);
    render_classes(v->classes, f);
    fclose(f);
    char *out = ust_strdup(buf);
    free(buf);
    return out;
}
