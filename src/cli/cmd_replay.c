/* understudy replay */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/runner.h>

#include <getopt.h>
#include <string.h>

static const char usage[] =
    "usage: understudy replay --config FILE [--log DB] [--run DB]\n"
    "                         [--legacy PLUGIN.so] [--candidate PLUGIN.so]\n"
    "                         [--divergences FILE|-] [--progress|--quiet]\n"
    "\n"
    "Feeds every event of the log, in seq order, to the legacy and the candidate\n"
    "plugin; only the legacy decides. Decisions and divergences go to the run\n"
    "database; divergences also stream as JSON lines to --divergences. A run\n"
    "database that already holds part of the run resumes from its cursor.\n"
    "Both plugins must start and say their hello before the first event: else\n"
    "exit 2, and a run database made by that start is removed.\n"
    "--log and --run default to the config's \"log\" and "
    "\"run\".\n" UST_CLI_PROGRESS_HELP;

int ust_cli_replay(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"log", required_argument, NULL, 'l'},
        {"run", required_argument, NULL, 'r'},
        {"legacy", required_argument, NULL, 'L'},
        {"candidate", required_argument, NULL, 'C'},
        {"divergences", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        UST_CLI_PROGRESS_OPTIONS,
        {NULL, 0, NULL, 0}};
    const char *config = NULL, *div_path = NULL;
    int progress_flag = 0;
    ust_replay_opts o;
    memset(&o, 0, sizeof(o));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'l':
            o.log_path = optarg;
            break;
        case 'r':
            o.run_path = optarg;
            break;
        case 'L':
            o.legacy_path = optarg;
            break;
        case 'C':
            o.candidate_path = optarg;
            break;
        case 'd':
            div_path = optarg;
            break;
        case 'h':
            return ust_cli_usage(usage, 1);
        case UST_CLI_OPT_PROGRESS:
        case UST_CLI_OPT_QUIET:
            if (ust_cli_progress_flag("replay", c, &progress_flag) != 0)
                return UST_EXIT_USAGE;
            break;
        default:
            return ust_cli_bad_option("replay", argv[optind - 1], usage);
        }
    }
    ust_config *cfg = NULL;
    if (ust_cli_no_more_args("replay", argc, argv, optind) != 0 ||
        ust_cli_load_config("replay", config, 0, &cfg) != 0)
        return UST_EXIT_USAGE;
    char *err = NULL;
    o.cfg = cfg;
    if (o.log_path == NULL)
        o.log_path = cfg->log_path;
    if (o.run_path == NULL)
        o.run_path = cfg->run_path;
    int rc = UST_EXIT_USAGE;
    if (o.log_path == NULL || o.run_path == NULL) {
        ust_cli_fail(
            NULL,
            "replay: need --log and --run (or \"log\" and \"run\" in the config)");
        goto out;
    }
    if (div_path != NULL &&
        (o.divergences = ust_cli_open_output(div_path, "ab")) == NULL)
        goto out;
    ust_replay_stats st;
    ust_cli_progress progress;
    ust_cli_progress_start(&progress, "replay", "events", progress_flag);
    o.progress = ust_cli_progress_sink(&progress);
    int failed = ust_replay(&o, &st, &err) != 0;
    ust_cli_progress_end(&progress, !failed);
    if (failed) {
        ust_cli_fail(err, "replay failed");
        goto out;
    }
    rc = UST_EXIT_OK;
    if (progress.quiet)
        goto out;
    fprintf(
        stderr,
        "replayed %lld events after seq %lld: %lld decided by both plugins, %lld not "
        "fed (signature or route), %lld divergences\n",
        (long long)st.events, (long long)st.resumed_after, (long long)st.fed,
        (long long)st.not_fed, (long long)st.divergences);
out:
    ust_cli_close_output(o.divergences);
    ust_config_free(cfg);
    return rc;
}
