/* understudy show */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/report.h>

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: understudy show --run DB [--log DB] SEQ\n"
    "\n"
    "Shows one event of a run in the terminal: both decisions and the fields\n"
    "that differ (legacy and candidate values side by side), the request as it\n"
    "arrived (headers in order, body raw and as JSON) with its derived fields\n"
    "and recorded answer, and the timeline of its entity, masked by the run's\n"
    "redaction rules. Control characters from payloads are shown escaped.\n"
    "--log: the event log the run read, when it is no longer where the run's\n"
    "metadata says; without a readable log the request is said to be\n"
    "unavailable and the rest is shown. Exit 0 when shown, 2 when the run has\n"
    "no event SEQ or cannot be read.\n";

int ust_cli_show(int argc, char **argv)
{
    ust_show_opts o = {0};
    const ust_cli_opt opts[] = {UST_CLI_STR("run", &o.run_path),
                                UST_CLI_STR("log", &o.log_path), UST_CLI_END};
    int rc = ust_cli_parse("show", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if (o.run_path == NULL || optind != argc - 1)
        return ust_cli_fail(NULL,
                            "show: --run DB and one SEQ are required (try --help)");
    if (ust_cli_conv_count(argv[optind], &o.seq) != 0 || o.seq == 0)
        return ust_cli_fail(ust_sprintf("show: SEQ must be an event's seq (a number >= "
                                        "1), not \"%s\"",
                                        argv[optind]),
                            NULL);
    char *err = NULL;
    int log_missing = 0;
    rc = ust_report_show(&o, stdout, &log_missing, &err);
    if (rc < 0)
        return ust_cli_fail(err, "show failed");
    if (rc == 0)
        return ust_cli_fail(ust_sprintf("show: the run %s has no event at seq %lld",
                                        o.run_path, (long long)o.seq),
                            NULL);
    if (log_missing)
        fprintf(stderr, "understudy: show: the event log cannot be read (give it with "
                        "--log DB): the request is not shown\n");
    return UST_EXIT_OK;
}
