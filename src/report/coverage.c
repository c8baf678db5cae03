/* A run's coverage: the events of the log it read, up to its cursor,
 * counted with the params its metadata recorded. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/run.h>

#include <pthread.h>

/* Where the run stopped and the params its metadata recorded (absent: a
 * run made before coverage, counted by default). */
static int run_params(ust_run *run, int64_t *cursor, ust_coverage_params *p, char **err)
{
    char *meta = NULL;
    int rc = ust_run_cursor(run, cursor, err);
    if (rc == 0 && (rc = ust_run_meta(run, "coverage", &meta, err)) > 0)
        rc = 0;
    if (rc == 0)
        rc = ust_coverage_params_parse(meta, p, err);
    ust_free(meta);
    return rc;
}

int ust__report_coverage(ust_run *run, ust_log *log, ust_coverage *out, char **err)
{
    int64_t cursor = 0;
    ust_coverage_params p;
    int rc = run_params(run, &cursor, &p, err);
    if (rc != 0)
        return rc;
    rc = ust_coverage_count(log, &p, cursor, out, err);
    ust_coverage_params_clear(&p);
    return rc;
}

/* The count on a thread of its own, over a connection of its own to the
 * log: it reads the log up to five times, half of a report's time, and
 * nothing else the report reads waits for it but the pages that show it. */
struct ust__report_coverage_job {
    char *log_path;
    int64_t cursor;
    ust_coverage_params p;
    pthread_t thread;
    int started, rc;
    char *err;
    ust_coverage out;
};

static void count_job(ust__report_coverage_job *j)
{
    ust_log *log = NULL;
    char *why = NULL;
    j->rc = ust_log_open(j->log_path, UST_LOG_READONLY, &log, &why);
    if (j->rc != 0)
        ust_errf(&j->err, j->rc, "%s: cannot read the event log for coverage: %s",
                 j->log_path, why ? why : "?");
    else
        j->rc = ust_coverage_count(log, &j->p, j->cursor, &j->out, &j->err);
    ust_free(why);
    ust_log_close(log);
}

static void *count_thread(void *arg)
{
    count_job(arg);
    return NULL;
}

int ust__report_coverage_start(ust_run *run, const char *log_path,
                               ust__report_coverage_job **out, char **err)
{
    *out = NULL;
    ust__report_coverage_job *j = ust_calloc(1, sizeof(*j));
    if (j == NULL || (j->log_path = ust_strdup(log_path)) == NULL) {
        ust_free(j);
        return UST_ENOMEM;
    }
    int rc = run_params(run, &j->cursor, &j->p, err);
    if (rc != 0) {
        ust_free(j->log_path);
        ust_free(j);
        return rc;
    }
    /* Without a thread, the count runs when it is waited for. */
    j->started = pthread_create(&j->thread, NULL, count_thread, j) == 0;
    *out = j;
    return 0;
}

int ust__report_coverage_finish(ust__report_coverage_job *j, ust_coverage *out,
                                int *counted, char **err)
{
    *counted = 0;
    if (j == NULL)
        return 0;
    if (j->started)
        pthread_join(j->thread, NULL);
    else
        count_job(j);
    int rc = j->rc;
    if (rc == 0) {
        *out = j->out;
        *counted = 1;
    } else if (err != NULL && *err == NULL) {
        *err = j->err;
        j->err = NULL;
    }
    ust_free(j->err);
    ust_coverage_params_clear(&j->p);
    ust_free(j->log_path);
    ust_free(j);
    return rc;
}

int ust_report_coverage(const char *run_path, const char *log_path, ust_coverage *out,
                        char **err)
{
    return ust_report_coverage_runs(&run_path, 1, log_path, out, err);
}

int ust_report_coverage_runs(const char *const *run_paths, size_t n_runs,
                             const char *log_path, ust_coverage *out, char **err)
{
    ust_run *run = NULL;
    int rc = ust_run_open_many(run_paths, n_runs, &run, err);
    const char *run_path = rc == 0 ? ust_run_name(run) : NULL;
    char *named = NULL;
    if (rc == 0 && log_path == NULL && (rc = ust_run_log(run, &named, err)) == 0)
        rc = ust_errf(err, UST_EINVAL,
                      "%s: the run does not name the event log it read: pass --log DB",
                      run_path);
    if (rc > 0)
        rc = 0;
    ust_log *log = NULL;
    char *why = NULL;
    if (rc == 0 &&
        ust_log_open(log_path ? log_path : named, UST_LOG_READONLY, &log, &why) != 0)
        rc = ust_errf(err, UST_EIO,
                      "%s: cannot read the event log for coverage (pass --log DB for "
                      "one that moved): %s",
                      run_path, why ? why : "?");
    if (rc == 0)
        rc = ust__report_coverage(run, log, out, err);
    ust_free(why);
    ust_free(named);
    ust_log_close(log);
    ust_run_close(run);
    return rc;
}
