/* understudy show: one event of a run, as text. */
#include "report/event.h"

#include <understudy/alloc.h>
#include <understudy/report.h>

int ust_report_show(const ust_show_opts *o, FILE *out, int *log_missing, char **err)
{
    ust_run *run = NULL;
    int rc = ust_run_open(o->run_path, &run, err);
    if (rc != 0)
        return rc;
    ust_log *log = NULL;
    json_t *redact = NULL;
    ust__report_event e;
    rc = ust_run_begin(run, err);
    if (rc == 0)
        rc = ust__report_redact_rules(run, &redact, err);
    if (rc == 0)
        rc = ust__report_open_log(run, o->log_path, &log, NULL, err);
    if (rc == 0)
        rc = ust__report_event_load(run, log, redact, o->seq, &e, err);
    if (rc == 1) {
        *log_missing = log == NULL;
        ust__report_event_text(out, &e);
        ust__report_event_clear(&e);
    }
    json_decref(redact);
    ust_log_close(log);
    ust_run_end(run);
    ust_run_close(run);
    return rc;
}
