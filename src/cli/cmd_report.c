/* understudy report, understudy gate */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/coverage.h>
#include <understudy/report.h>
#include <understudy/run.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: understudy report --run DB [--run DB...] --out DIR [--triage FILE]\n"
    "                         [--log DB] [--progress|--quiet]\n"
    "\n"
    "Writes DIR/index.html (self-contained, safe to open), DIR/summary.md,\n"
    "DIR/summary.json (totals, verdict, coverage) and DIR/divergences.jsonl (every\n"
    "divergence) for a run. Their verdict line is the gate's; their Coverage\n"
    "section counts what the traffic exercised, from the log's events. --log: the\n"
    "event log the run read, when it is no longer where the run's metadata says.\n"
    "--run given once per partition (replay --partition K/N): the runs of every\n"
    "partition of one replay, read as one run.\n" UST_CLI_PROGRESS_HELP;

static const char gate_usage[] =
    "usage: understudy gate --run DB [--run DB...] --triage FILE [--max-open N]\n"
    "                       [--log DB] [--require-coverage KIND[,KIND...]]\n"
    "\n"
    "Exit 0 when the run decided every event of its log up to the log's head and\n"
    "every divergence is accepted by the triage file (or at most N are not); 1\n"
    "otherwise, with the reason and the open classes with their counts; 2 when\n"
    "the run or the log cannot be read. --log: the event log the run read, when it\n"
    "is no longer where the run's metadata says. --require-coverage: fail (1) too\n"
    "when the traffic up to the run's cursor held no event of a named kind (the\n"
    "report's Coverage section lists them). --run given once per partition\n"
    "(replay --partition K/N): the runs of every partition of one replay, judged\n"
    "as one run (complete when each is).\n";

/* --run, once or once per partition (its usage error says 11). */
_Static_assert(UST_RUN_MANY_MAX == 11, "the --run usage error names the limit");
typedef struct run_list {
    const char *paths[UST_RUN_MANY_MAX];
    size_t n;
} run_list;

static int add_run(const char *path, void *out)
{
    run_list *runs = out;
    if (runs->n == UST_RUN_MANY_MAX)
        return -1;
    runs->paths[runs->n++] = path;
    return 0;
}

struct report_opts {
    run_list runs;
    const char *out, *triage, *log;
    const char *require; /* gate only: --require-coverage, as given */
    int64_t max_open;
    int progress_flag; /* report only */
    ust_triage *t;     /* NULL without --triage */
};

/* What report and gate share: their options (--progress and --quiet only
 * for report), the two each needs and the triage file. UST_CLI_GO_ON, or
 * the status to exit with. */
static int start(const char *cmd, int argc, char **argv, struct report_opts *o)
{
    int report = strcmp(cmd, "report") == 0;
    memset(o, 0, sizeof(*o));
    const ust_cli_opt opts[] = {
        UST_CLI_CONV("run", add_run, &o->runs,
                     "--run is given at most 11 times (once per partition of one "
                     "replay)"),
        UST_CLI_STR("out", &o->out),
        UST_CLI_STR("triage", &o->triage),
        UST_CLI_CONV("max-open", ust_cli_conv_count, &o->max_open,
                     "--max-open needs a number of divergences >= 0"),
        UST_CLI_STR("log", &o->log),
        report ? (ust_cli_opt)UST_CLI_PROGRESS_FLAGS(&o->progress_flag)
               : (ust_cli_opt)UST_CLI_STR("require-coverage", &o->require),
        UST_CLI_END};
    int rc = ust_cli_parse(cmd, argc, argv, opts, report ? report_usage : gate_usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if (optind < argc)
        return ust_cli_fail(ust_sprintf("unexpected argument \"%s\"", argv[optind]),
                            NULL);
    if (o->runs.n == 0 || (report ? o->out : o->triage) == NULL)
        return ust_cli_fail(ust_sprintf("%s: --run DB and %s are required (try --help)",
                                        cmd, report ? "--out DIR" : "--triage FILE"),
                            NULL);
    char *err = NULL;
    if (o->triage != NULL && ust_triage_load(o->triage, &o->t, &err) != 0)
        return ust_cli_fail(err, "cannot load the triage file");
    return UST_CLI_GO_ON;
}

int ust_cli_report(int argc, char **argv)
{
    struct report_opts o;
    int rc = start("report", argc, argv, &o);
    if (rc != UST_CLI_GO_ON)
        return rc;
    ust_report_opts ro = {.run_path = o.runs.paths[0],
                          .run_paths = o.runs.paths,
                          .n_runs = o.runs.n,
                          .out_dir = o.out,
                          .log_path = o.log,
                          .triage = o.t,
                          .triage_path = o.triage};
    ust_cli_progress progress;
    ro.progress =
        ust_cli_progress_start(&progress, "report", "divergences", o.progress_flag);
    char *err = NULL;
    rc = ust_cli_progress_end(&progress, ust_report_write(&ro, &err), &err,
                              "report failed");
    ust_triage_free(o.t);
    if (rc != UST_EXIT_OK)
        return rc;
    printf("report written to %s/index.html (also summary.md, summary.json, "
           "divergences.jsonl)\n",
           o.out);
    return UST_EXIT_OK;
}

/* The classes of the run, then the triage entries that accepted none, with
 * what to do about them. */
static void print_classes(const ust_gate_result *res)
{
    for (size_t i = 0; i < res->n; i++) {
        const ust_gate_class *c = &res->classes[i];
        if (c->accepted != NULL)
            printf("accepted  %8lld  %s  (%s)\n", (long long)c->count, c->class_name,
                   c->accepted->owner);
        else if (c->expired != NULL)
            printf("open      %8lld  %s  (%s's entry expired after %s)\n",
                   (long long)c->count, c->class_name, c->expired->owner,
                   c->expired->expires);
        else
            printf("open      %8lld  %s\n", (long long)c->count, c->class_name);
    }
    for (size_t i = 0; i < res->n_stale; i++) {
        printf("stale     %8s  %s  (%s): accepts no class of this run", "",
               res->stale[i]->class_glob, res->stale[i]->owner);
        if (res->stale_hints[i] != NULL)
            printf("; did you mean \"%s\"?", res->stale_hints[i]);
        fputs("\n", stdout);
    }
    for (size_t i = 0; i < res->n_expired; i++)
        printf("expired   %8s  %s  (%s): expired after %s, accepts nothing\n", "",
               res->expired[i]->class_glob, res->expired[i]->owner,
               res->expired[i]->expires);
    if (res->n_stale > 0)
        printf("triage: %zu stale entr%s: remove %s or correct %s class (the arrow is "
               "U+2192, or \"->\"); %s not fail the gate, but would accept a future "
               "divergence nobody has looked at\n",
               res->n_stale, res->n_stale == 1 ? "y" : "ies",
               res->n_stale == 1 ? "it" : "them", res->n_stale == 1 ? "its" : "their",
               res->n_stale == 1 ? "it does" : "they do");
    if (res->n_expired > 0)
        printf("triage: %zu expired entr%s: the classes %s accepted are open; look at "
               "them again, then move \"expires\" on or remove the entr%s\n",
               res->n_expired, res->n_expired == 1 ? "y" : "ies",
               res->n_expired == 1 ? "it" : "they", res->n_expired == 1 ? "y" : "ies");
}

/* --require-coverage KIND[,KIND...] into want (one flag per kind). A name
 * that is no kind is a usage error listing the kinds. */
static int parse_required(const char *list, int want[UST_COVERAGE_N])
{
    char *copy = ust_strdup(list), *save = NULL;
    if (copy == NULL)
        return ust_cli_fail(NULL, "out of memory");
    int rc = 0, n = 0;
    for (char *name = strtok_r(copy, ",", &save); name != NULL && rc == 0;
         name = strtok_r(NULL, ",", &save), n++) {
        ust_coverage_kind k;
        if (ust_coverage_kind_parse(name, &k) != 0)
            rc = ust_cli_fail(ust_sprintf("gate: --require-coverage: \"%s\" is no kind;"
                                          " the kinds are %s",
                                          name, ust_coverage_kind_list()),
                              NULL);
        else
            want[k] = 1;
    }
    if (rc == 0 && n == 0)
        rc = ust_cli_fail(ust_sprintf("gate: --require-coverage needs kinds, among %s",
                                      ust_coverage_kind_list()),
                          NULL);
    ust_free(copy);
    return rc;
}

/* Says which required kinds had no event; 1 when one had none, 0 when
 * every one had some, UST_EXIT_USAGE when the coverage cannot be counted. */
static int check_required(const struct report_opts *o, const int want[UST_COVERAGE_N])
{
    ust_coverage cov;
    char *err = NULL;
    if (ust_report_coverage_runs(o->runs.paths, o->runs.n, o->log, &cov, &err) != 0)
        return ust_cli_fail(err, "gate: cannot count the coverage");
    int missing = 0;
    for (int k = 0; k < UST_COVERAGE_N; k++) {
        if (!want[k])
            continue;
        printf("coverage  %8lld  %s\n", (long long)cov.counts[k],
               ust_coverage_kind_name((ust_coverage_kind)k));
        if (cov.counts[k] == 0) {
            printf("gate: FAIL: the traffic held no %s event (%s exercises it)\n",
                   ust_coverage_kind_name((ust_coverage_kind)k),
                   ust_coverage_kind_scenario((ust_coverage_kind)k));
            missing = 1;
        }
    }
    return missing;
}

int ust_cli_gate(int argc, char **argv)
{
    ust_gate_result res;
    struct report_opts o;
    int rc = start("gate", argc, argv, &o);
    if (rc != UST_CLI_GO_ON)
        return rc;
    int want[UST_COVERAGE_N] = {0};
    if (o.require != NULL && (rc = parse_required(o.require, want)) != 0) {
        ust_triage_free(o.t);
        return rc;
    }
    char *err = NULL;
    rc = ust_gate_check_runs(o.runs.paths, o.runs.n, o.log, o.t, &res, &err);
    if (rc != 0) {
        ust_triage_free(o.t);
        return ust_cli_fail(err, "gate failed");
    }
    print_classes(&res);
    int pass = ust_gate_pass(&res, o.max_open);
    int uncovered = o.require != NULL ? check_required(&o, want) : 0;
    if (uncovered == UST_EXIT_USAGE) {
        ust_gate_result_clear(&res);
        ust_triage_free(o.t);
        return UST_EXIT_USAGE;
    }
    if (res.refusal != NULL)
        printf("gate: FAIL: %s\n", res.refusal);
    printf("gate: %s: %lld divergence(s), %lld open in %zu class(es)%s\n",
           pass && !uncovered ? "PASS" : "FAIL", (long long)res.divergences,
           (long long)res.open_divergences, res.open_classes,
           o.max_open ? " (budget given with --max-open)" : "");
    ust_gate_result_clear(&res);
    ust_triage_free(o.t);
    return pass && !uncovered ? UST_EXIT_OK : UST_EXIT_FINDING;
}
