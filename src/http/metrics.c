/* GET /metrics in the Prometheus text format (0.0.4), every family with its
 * HELP and TYPE, as `promtool check metrics` wants it. Counters and
 * histograms live in memory, updated by the threads that do the work; two
 * families read a database at the scrape (the runner's lag in seconds, the
 * divergences by class). No secret, no payload, no request detail ever
 * reaches it. docs/metrics.md lists every family and what it answers. */
#include "http/http_internal.h"
#include "runner/rundb.h"

#include <understudy/clock.h>
#include <understudy/alloc.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

void ust__metrics_init(ust__metrics *m)
{
    for (size_t r = 0; r <= UST__MAX_ROUTES; r++)
        ust_histogram_init(&m->request_us[r], latency_us, N_OF(latency_us), 1e6);
    ust_histogram_init(&m->commit_us, latency_us, N_OF(latency_us), 1e6);
    ust_histogram_init(&m->batch_events, batch_events, N_OF(batch_events), 1);
    ust_histogram_init(&m->legacy_decide, decide_us, N_OF(decide_us), 1e6);
    ust_histogram_init(&m->candidate_decide, decide_us, N_OF(decide_us), 1e6);
}

void ust__metrics_rejected(ust__server *s, int status)
{
    for (int i = 0; i < N_REJECTED; i++)
        if (rejected_status[i] == status)
            atomic_fetch_add(&s->metrics.rejected[i], 1);
}

void ust__metrics_answered(ust__server *s, const ust__slot *slot)
{
    if (slot->started_ns == 0)
        return; /* no request was read for it (a connection over the cap) */
    size_t r = slot->route <= UST__MAX_ROUTES ? slot->route : 0;
    ust_histogram_observe(&s->metrics.request_us[r],
                          (int64_t)((uv_hrtime() - slot->started_ns) / 1000));
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
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

/* Divergences by class, read from the run database at each scrape (the
 * runner writes them there, across restarts; the index on class keeps this
 * cheap). A class's count only grows: a counter. */
static void render_classes(ust__server *s, FILE *f)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    family(f, "understudy_divergences_by_class_total", "counter",
           "Divergences in the run database by class, since the run began (the 50"
           " most frequent classes).");
    int row = -1;
    if (s->o->run_path != NULL &&
        sqlite3_open_v2(s->o->run_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
                           "SELECT class, count(*) FROM divergences GROUP BY class"
                           " ORDER BY 2 DESC LIMIT 50",
                           -1, &st, NULL) == SQLITE_OK) {
        char lv[1024];
        while ((row = ust__db_step(st, "divergences", NULL)) == 1)
            fprintf(
                f, "understudy_divergences_by_class_total{class=\"%s\"} %lld\n",
                label_value(lv, sizeof(lv), (const char *)sqlite3_column_text(st, 0)),
                (long long)sqlite3_column_int64(st, 1));
    } else if (s->o->run_path == NULL) {
        row = 0; /* no run: the empty list is the whole list */
    }
    /* A read that failed leaves the list above partial: say so, so an alert
     * on it does not read it as the whole. */
    family(f, "understudy_divergences_by_class_complete", "gauge",
           "1 when understudy_divergences_by_class_total was read whole at this"
           " scrape, 0 when the run database could not be read.");
    fprintf(f, "understudy_divergences_by_class_complete %d\n", row == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Seconds since the oldest event the runner has not decided arrived, by
 * the wall clock rather than the newest event's time: if traffic stops while
 * the runner is stuck, the newest event's time stands still and so would the
 * lag; this keeps growing, which is what an alert on a stuck runner needs.
 * The same figure /healthz judges (health.c keeps it in memory). */
static double lag_seconds(ust__server *s)
{
    int64_t oldest = ust__health_oldest_undecided_us(s);
    if (oldest == 0)
        return 0;
    int64_t now = ust_time_wall_us();
    return now > oldest ? (double)(now - oldest) / 1e6 : 0;
}

static void render_recorder(ust__server *s, FILE *f)
{
    ust__metrics *m = &s->metrics;
    const ust_config *cfg = s->o->cfg;
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
    family(f, "understudy_connections_open", "gauge", "Client connections open now.");
    fprintf(f, "understudy_connections_open %zu\n", s->n_conns);
    family(f, "understudy_commit_duration_seconds", "histogram",
           "Seconds an append transaction of the event log took, fsync included"
           " (group commit: one a batch).");
    ust_histogram_write(f, "understudy_commit_duration_seconds", "", &m->commit_us);
    family(f, "understudy_commit_batch_events", "histogram",
           "Events in one append transaction of the event log.");
    ust_histogram_write(f, "understudy_commit_batch_events", "", &m->batch_events);
    family(f, "understudy_append_failures_total", "counter",
           "Append transactions that failed (their requests were answered 503).");
    fprintf(f, "understudy_append_failures_total %lld\n",
            (long long)atomic_load(&m->append_failures));
    family(f, "understudy_answers_write_failures_total", "counter",
           "Batches whose legacy decisions could not be recorded under --respond "
           "legacy (their requests were answered 503).");
    fprintf(f, "understudy_answers_write_failures_total %lld\n",
            (long long)atomic_load(&m->answers_write_failures));
}

static void render_runner(ust__server *s, FILE *f)
{
    ust__metrics *m = &s->metrics;
    long long head = atomic_load(&m->last_seq), ran = atomic_load(&m->runner_seq);
    family(f, "understudy_log_head_seq", "gauge",
           "Seq of the newest event this process made durable (0: none yet).");
    fprintf(f, "understudy_log_head_seq %lld\n", head);
    family(f, "understudy_runner_lag_events", "gauge",
           "Durable events the runner has not decided yet.");
    fprintf(f, "understudy_runner_lag_events %lld\n", head > ran ? head - ran : 0);
    family(f, "understudy_runner_lag_seconds", "gauge",
           "Seconds since the oldest event the runner has not decided arrived"
           " (wall clock; 0 when caught up).");
    fprintf(f, "understudy_runner_lag_seconds %.6f\n", lag_seconds(s));
    family(f, "understudy_runner_events_total", "counter",
           "Events the runner read from the log and decided (or skipped as not fed).");
    fprintf(f, "understudy_runner_events_total %lld\n",
            (long long)atomic_load(&m->runner_events));
    family(f, "understudy_divergences_total", "counter",
           "Divergences the runner of this process found.");
    fprintf(f, "understudy_divergences_total %lld\n",
            (long long)atomic_load(&m->divergences));
}

static void render_plugins(FILE *f, ust__metrics *m)
{
    static const char *const roles[2] = {"legacy", "candidate"};
    family(f, "understudy_plugin_decide_duration_seconds", "histogram",
           "Seconds in decide an event, by plugin (the candidate's: its batch's"
           " time spread over the batch's events).");
    ust_histogram_write(f, "understudy_plugin_decide_duration_seconds",
                        "plugin=\"legacy\"", &m->legacy_decide);
    ust_histogram_write(f, "understudy_plugin_decide_duration_seconds",
                        "plugin=\"candidate\"", &m->candidate_decide);
    ust_plugin_fault_stats fs;
    ust_plugin_fault_stats_get(&fs);
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
    ust_plugin_stderr_stats es;
    ust_plugin_stderr_stats_get(&es);
    family(f, "understudy_plugin_stderr_dropped_bytes_total", "counter",
           "Bytes plugin children wrote to stderr over their budget.");
    fprintf(f, "understudy_plugin_stderr_dropped_bytes_total %llu\n",
            (unsigned long long)es.dropped_bytes);
    family(f, "understudy_plugin_stderr_dropped_lines_total", "counter",
           "Lines plugin children wrote to stderr over their budget.");
    fprintf(f, "understudy_plugin_stderr_dropped_lines_total %llu\n",
            (unsigned long long)es.dropped_lines);
}

char *ust__metrics_render(ust__server *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    render_recorder(s, f);
    render_runner(s, f);
    render_plugins(f, &s->metrics);
    render_classes(s, f);
    fclose(f);
    char *out = ust_strdup(buf);
    free(buf);
    return out;
}
