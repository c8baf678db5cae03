/* understudy report, understudy gate */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/report.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: understudy report --run DB --out DIR [--triage FILE] [--log DB]\n"
    "                         [--progress|--quiet]\n"
    "\n"
    "Writes DIR/index.html (self-contained, safe to open), DIR/summary.md and\n"
    "DIR/divergences.jsonl (every divergence) for a run. Their verdict line is the\n"
    "gate's. --log: the event log the run read, when it is no longer where the\n"
    "run's metadata says.\n" UST_CLI_PROGRESS_HELP;

static const char gate_usage[] =
    "usage: understudy gate --run DB --triage FILE [--max-open N] [--log DB]\n"
    "\n"
    "Exit 0 when the run decided every event of its log up to the log's head and\n"
    "every divergence is accepted by the triage file (or at most N are not); 1\n"
    "otherwise, with the reason and the open classes with their counts; 2 when\n"
    "the run or the log cannot be read. --log: the event log the run read, when it\n"
    "is no longer where the run's metadata says.\n";

struct report_opts {
    const char *run, *out, *triage, *log;
    long max_open;
    int progress_flag; /* report only */
};

static int parse(const char *cmd, int argc, char **argv, const char *usage,
                 struct report_opts *o)
{
    static const struct option longopts[] = {{"run", required_argument, NULL, 'r'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"triage", required_argument, NULL, 't'},
                                             {"max-open", required_argument, NULL, 'm'},
                                             {"log", required_argument, NULL, 'l'},
                                             {"help", no_argument, NULL, 'h'},
                                             UST_CLI_PROGRESS_OPTIONS,
                                             {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof(*o));
    optind = 1;
    opterr = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            o->run = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 't':
            o->triage = optarg;
            break;
        case 'l':
            o->log = optarg;
            break;
        case 'm':
            o->max_open = strtol(optarg, &end, 10);
            if (*end != '\0' || o->max_open < 0)
                return ust_cli_fail(NULL,
                                    "--max-open needs a number of divergences >= 0");
            break;
        case 'h':
            ust_cli_usage(usage, 1);
            return -1; /* help given: the caller exits 0 */
        case UST_CLI_OPT_PROGRESS:
        case UST_CLI_OPT_QUIET:
            if (strcmp(cmd, "report") != 0)
                return ust_cli_bad_option(cmd, argv[optind - 1], usage);
            if (ust_cli_progress_flag(cmd, c, &o->progress_flag) != 0)
                return UST_EXIT_USAGE;
            break;
        default:
            return ust_cli_bad_option(cmd, argv[optind - 1], usage);
        }
    }
    if (optind < argc)
        return ust_cli_fail(ust_sprintf("unexpected argument \"%s\"", argv[optind]),
                            NULL);
    return 0;
}

static int load_triage(const char *path, ust_triage **t)
{
    char *err = NULL;
    *t = NULL;
    if (path != NULL && ust_triage_load(path, t, &err) != 0)
        return ust_cli_fail(err, "cannot load the triage file");
    return 0;
}

int ust_cli_report(int argc, char **argv)
{
    struct report_opts o;
    int rc = parse("report", argc, argv, report_usage, &o);
    if (rc != 0)
        return rc < 0 ? UST_EXIT_OK : rc;
    if (o.run == NULL || o.out == NULL)
        return ust_cli_fail(NULL,
                            "report: --run DB and --out DIR are required (try --help)");
    ust_triage *t = NULL;
    if (load_triage(o.triage, &t) != 0)
        return UST_EXIT_USAGE;
    ust_report_opts ro = {
        .run_path = o.run, .out_dir = o.out, .log_path = o.log, .triage = t};
    ust_cli_progress progress;
    ust_cli_progress_start(&progress, "report", "divergences", o.progress_flag);
    ro.progress = ust_cli_progress_sink(&progress);
    char *err = NULL;
    rc = ust_report_write(&ro, &err);
    ust_cli_progress_end(&progress, rc == 0);
    ust_triage_free(t);
    if (rc != 0)
        return ust_cli_fail(err, "report failed");
    printf("report written to %s/index.html (also summary.md, divergences.jsonl)\n",
           o.out);
    return UST_EXIT_OK;
}

int ust_cli_gate(int argc, char **argv)
{
    struct report_opts o;
    int rc = parse("gate", argc, argv, gate_usage, &o);
    if (rc != 0)
        return rc < 0 ? UST_EXIT_OK : rc;
    if (o.run == NULL || o.triage == NULL)
        return ust_cli_fail(
            NULL, "gate: --run DB and --triage FILE are required (try --help)");
    ust_triage *t = NULL;
    if (load_triage(o.triage, &t) != 0)
        return UST_EXIT_USAGE;
    ust_gate_result res;
    char *err = NULL;
    rc = ust_gate_check(o.run, o.log, t, &res, &err);
    if (rc != 0) {
        ust_triage_free(t);
        return ust_cli_fail(err, "gate failed");
    }
    for (size_t i = 0; i < res.n; i++) {
        if (res.classes[i].accepted == NULL)
            printf("open      %8lld  %s\n", (long long)res.classes[i].count,
                   res.classes[i].class_name);
        else
            printf("accepted  %8lld  %s  (%s)\n", (long long)res.classes[i].count,
                   res.classes[i].class_name, res.classes[i].accepted->owner);
    }
    for (size_t i = 0; i < res.n_stale; i++)
        printf("stale     %8s  %s  (%s): accepts no class of this run\n", "",
               res.stale[i]->class_glob, res.stale[i]->owner);
    int pass = ust_gate_pass(&res, o.max_open);
    if (res.refusal != NULL)
        printf("gate: FAIL: %s\n", res.refusal);
    printf("gate: %s: %lld divergence(s), %lld open in %zu class(es)%s\n",
           pass ? "PASS" : "FAIL", (long long)res.divergences,
           (long long)res.open_divergences, res.open_classes,
           o.max_open ? " (budget given with --max-open)" : "");
    ust_gate_result_clear(&res);
    ust_triage_free(t);
    return pass ? UST_EXIT_OK : UST_EXIT_FINDING;
}
