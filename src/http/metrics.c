/* GET /metrics in Prometheus text format. Counters only: no secret, no
 * payload, no request detail ever reaches it. */
#include "http/http_internal.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#define N_REJECTED 8
static const int rejected_status[N_REJECTED] = {400, 404, 405, 408, 413, 417, 431, 503};

void ust__metrics_rejected(ust__server *s, int status)
{
    for (int i = 0; i < N_REJECTED; i++)
        if (rejected_status[i] == status)
            atomic_fetch_add(&s->metrics.rejected[i], 1);
}

/* Divergences by class, read from the run database at each scrape (the
 * runner writes them there; the index on class keeps this cheap). */
static void render_classes(ust__server *s, FILE *f)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (s->o->run_path == NULL ||
        sqlite3_open_v2(s->o->run_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT class, count(*) FROM divergences GROUP BY class"
                           " ORDER BY 2 DESC LIMIT 50",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    fputs("# TYPE understudy_divergences_by_class gauge\n", f);
    int row;
    while ((row = ust__db_step(st, "divergences", NULL)) == 1) {
        fputs("understudy_divergences_by_class{class=\"", f);
        /* label values escape backslash, quote and newline */
        for (const char *p = (const char *)sqlite3_column_text(st, 0); p && *p; p++) {
            if (*p == '\\' || *p == '"')
                fputc('\\', f);
            if (*p == '\n')
                fputs("\\n", f);
            else
                fputc(*p, f);
        }
        fprintf(f, "\"} %lld\n", (long long)sqlite3_column_int64(st, 1));
    }
    /* A read that failed leaves the list above partial: say so, so an alert
     * on it does not read it as the whole. */
    fprintf(f,
            "# TYPE understudy_divergences_by_class_complete gauge\n"
            "understudy_divergences_by_class_complete %d\n",
            row == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

char *ust__metrics_render(ust__server *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    ust__metrics *m = &s->metrics;
    const ust_config *cfg = s->o->cfg;
    fputs("# HELP understudy_events_recorded_total Events durably recorded.\n"
          "# TYPE understudy_events_recorded_total counter\n",
          f);
    for (size_t r = 0; r < cfg->n_routes && r < UST__MAX_ROUTES; r++)
        for (int sig = 0; sig < UST__SIG_STATES; sig++)
            fprintf(f,
                    "understudy_events_recorded_total{route=\"%s\",signature=\"%s\"} "
                    "%lld\n",
                    cfg->routes[r].path, ust_sig_status_name((ust_sig_status)sig),
                    (long long)atomic_load(&m->recorded[r][sig]));
    fputs("# HELP understudy_events_sampled_out_total Events a route's sample left"
          " out: answered 202, not recorded.\n"
          "# TYPE understudy_events_sampled_out_total counter\n",
          f);
    for (size_t r = 0; r < cfg->n_routes && r < UST__MAX_ROUTES; r++)
        fprintf(f, "understudy_events_sampled_out_total{route=\"%s\"} %lld\n",
                cfg->routes[r].path, (long long)atomic_load(&m->sampled_out[r]));
    fputs("# HELP understudy_requests_refused_total Requests answered with an error"
          " before recording.\n# TYPE understudy_requests_refused_total counter\n",
          f);
    for (int i = 0; i < N_REJECTED; i++)
        fprintf(f, "understudy_requests_refused_total{status=\"%d\"} %lld\n",
                rejected_status[i], (long long)atomic_load(&m->rejected[i]));
    long long commits = atomic_load(&m->commits);
    fprintf(f,
            "# TYPE understudy_commits_total counter\nunderstudy_commits_total %lld\n"
            "# TYPE understudy_commit_events_total counter\n"
            "understudy_commit_events_total %lld\n"
            "# TYPE understudy_commit_seconds_total counter\n"
            "understudy_commit_seconds_total %.6f\n"
            "# TYPE understudy_commit_seconds_max gauge\n"
            "understudy_commit_seconds_max %.6f\n"
            "# TYPE understudy_append_failures_total counter\n"
            "understudy_append_failures_total %lld\n",
            commits, (long long)atomic_load(&m->committed_events),
            atomic_load(&m->commit_us_total) / 1e6,
            atomic_load(&m->commit_us_max) / 1e6,
            (long long)atomic_load(&m->append_failures));
    long long last = atomic_load(&m->last_seq), ran = atomic_load(&m->runner_seq);
    fprintf(
        f,
        "# TYPE understudy_log_head_seq gauge\nunderstudy_log_head_seq %lld\n"
        "# TYPE understudy_runner_lag_events gauge\nunderstudy_runner_lag_events %lld\n"
        "# TYPE understudy_runner_events_total counter\n"
        "understudy_runner_events_total %lld\n"
        "# TYPE understudy_divergences_total counter\n"
        "understudy_divergences_total %lld\n",
        last, last > ran ? last - ran : 0, (long long)atomic_load(&m->runner_events),
        (long long)atomic_load(&m->divergences));
    /* Seconds in decide over the events decided: the mean is their ratio. */
    fprintf(f,
            "# TYPE understudy_plugin_decide_seconds_total counter\n"
            "understudy_plugin_decide_seconds_total{plugin=\"legacy\"} %.6f\n"
            "understudy_plugin_decide_seconds_total{plugin=\"candidate\"} %.6f\n",
            atomic_load(&m->legacy_decide_us) / 1e6,
            atomic_load(&m->candidate_decide_us) / 1e6);
    ust_plugin_stderr_stats es;
    ust_plugin_stderr_stats_get(&es);
    fprintf(f,
            "# HELP understudy_plugin_stderr_dropped_bytes_total Bytes plugin children"
            " wrote to stderr over their budget.\n"
            "# TYPE understudy_plugin_stderr_dropped_bytes_total counter\n"
            "understudy_plugin_stderr_dropped_bytes_total %llu\n"
            "# TYPE understudy_plugin_stderr_dropped_lines_total counter\n"
            "understudy_plugin_stderr_dropped_lines_total %llu\n",
            (unsigned long long)es.dropped_bytes, (unsigned long long)es.dropped_lines);
    render_classes(s, f);
    fclose(f);
    char *out = ust_strdup(buf);
    free(buf);
    return out;
}
