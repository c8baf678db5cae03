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
    "                         [--divergences FILE|-] [--partition K/N]\n"
    "                         [--legacy-from EARLIER_RUN.db]\n"
    "                         [--progress|--quiet]\n"
    "\n"
    "Feeds every event of the log, in seq order, to the legacy and the candidate\n"
    "plugin; only the legacy decides. Decisions and divergences go to the run\n"
    "database; divergences also stream as JSON lines to --divergences. A run\n"
    "database that already holds part of the run resumes from its cursor.\n"
    "Both plugins must start and say their hello before the first event: else\n"
    "exit 2, and a run database made by that start is removed.\n"
    "--partition K/N (K from 0 to N-1) decides only the events whose key (the\n"
    "config's \"partition_by\": the intent, else the identity) hashes to K;\n"
    "the others are passed over. Each partition has its own run database.\n"
    "--legacy-from reads the legacy's decisions from an earlier run of the same\n"
    "log, legacy, config and partition instead of deciding them again (refused,\n"
    "saying what differs, otherwise): the candidate alone decides.\n"
    "--log and --run default to the config's \"log\" and "
    "\"run\".\n" UST_CLI_PROGRESS_HELP;

int ust_cli_replay(int argc, char **argv)
{
    const char *config = NULL, *div_path = NULL, *partition = NULL;
    int progress_flag = 0;
    ust_replay_opts o;
    memset(&o, 0, sizeof(o));
    const ust_cli_opt opts[] = {UST_CLI_STR("config", &config),
                                UST_CLI_RUN_FILES(o),
                                UST_CLI_STR("divergences", &div_path),
                                UST_CLI_STR("partition", &partition),
                                UST_CLI_STR("legacy-from", &o.legacy_from),
                                UST_CLI_PROGRESS_FLAGS(&progress_flag),
                                UST_CLI_END};
    int rc = ust_cli_parse("replay", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    ust_config *cfg = NULL;
    ust_cli_appended div = {0};
    if (ust_cli_no_more_args("replay", argc, argv, optind) != 0 ||
        ust_cli_load_config("replay", config, 0, &cfg) != 0)
        return UST_EXIT_USAGE;
    char *err = NULL;
    if (partition != NULL && ust_partition_parse(partition, &o.partition, &err) != 0) {
        ust_config_free(cfg);
        return ust_cli_fail(err, "replay: bad --partition");
    }
    o.cfg = cfg;
    if (o.log_path == NULL)
        o.log_path = cfg->log_path;
    if (o.run_path == NULL)
        o.run_path = cfg->run_path;
    rc = UST_EXIT_USAGE;
    if (o.log_path == NULL || o.run_path == NULL) {
        ust_cli_fail(
            NULL,
            "replay: need --log and --run (or \"log\" and \"run\" in the config)");
        goto out;
    }
    if (div_path != NULL &&
        (o.divergences = ust_cli_appended_open(&div, div_path)) == NULL)
        goto out;
    ust_replay_stats st;
    ust_cli_progress progress;
    o.progress = ust_cli_progress_start(&progress, "replay", "events", progress_flag);
    rc = ust_cli_progress_end(&progress, ust_replay(&o, &st, &err), &err,
                              "replay failed");
    if (rc != UST_EXIT_OK || progress.quiet)
        goto out;
    fprintf(stderr,
            "replayed %lld events after seq %lld: %lld decided by both plugins, %lld "
            "not fed (signature or route), ",
            (long long)st.events, (long long)st.resumed_after, (long long)st.fed,
            (long long)st.not_fed);
    if (o.partition.n > 0)
        fprintf(stderr, "%lld of other partitions, ", (long long)st.outside);
    fprintf(stderr, "%lld divergences\n", (long long)st.divergences);
out:
    ust_cli_appended_close(&div, rc != UST_EXIT_OK);
    ust_config_free(cfg);
    return rc;
}
