/* A run's coverage: the events of the log it read, up to its cursor,
 * counted with the params its metadata recorded. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/run.h>

int ust__report_coverage(ust_run *run, ust_log *log, ust_coverage *out, char **err)
{
    int64_t cursor = 0;
    char *meta = NULL;
    int rc = ust_run_cursor(run, &cursor, err);
    if (rc == 0 && (rc = ust_run_meta(run, "coverage", &meta, err)) > 0)
        rc = 0; /* absent (0): a run made before coverage, counted by default */
    ust_coverage_params p;
    if (rc == 0)
        rc = ust_coverage_params_parse(meta, &p, err);
    ust_free(meta);
    if (rc != 0)
        return rc;
    rc = ust_coverage_count(log, &p, cursor, out, err);
    ust_coverage_params_clear(&p);
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
