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
    "                         [--divergences FILE|-]\n"
    "\n"
    "Feeds every event of the log, in seq order, to the legacy and the candidate\n"
    "plugin; only the legacy decides. Decisions and divergences go to the run\n"
    "database; divergences also stream as JSON lines to --divergences. A run\n"
    "database that already holds part of the run resumes from its cursor.\n"
    "--log and --run default to the config's \"log\" and \"run\".\n";

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
        {NULL, 0, NULL, 0}};
    const char *config = NULL, *div_path = NULL;
    ust_replay_opts o;
    memset(&o, 0, sizeof(o));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'l': o.log_path = optarg; break;
        case 'r': o.run_path = optarg; break;
        case 'L': o.legacy_path = optarg; break;
        case 'C': o.candidate_path = optarg; break;
        case 'd': div_path = optarg; break;
        case 'h': return ust_cli_usage(usage, 1);
        default:
            fprintf(stderr, "understudy replay: unknown or incomplete option \"%s\"\n",
                    argv[optind - 1]);
            return ust_cli_usage(usage, 0);
        }
    }
    if (optind < argc)
        return ust_cli_fail(ust_sprintf("replay: unexpected argument \"%s\"", argv[optind]),
                            NULL);
    if (config == NULL)
        return ust_cli_fail(NULL, "replay: --config FILE is required (try --help)");
    char *err = NULL;
    ust_config *cfg = NULL;
    if (ust_config_load(config, &cfg, &err) != 0)
        return ust_cli_fail(err, "cannot load the config");
    o.cfg = cfg;
    if (o.log_path == NULL)
        o.log_path = cfg->log_path;
    if (o.run_path == NULL)
        o.run_path = cfg->run_path;
    int rc = UST_EXIT_USAGE;
    if (o.log_path == NULL || o.run_path == NULL) {
        ust_cli_fail(NULL, "replay: need --log and --run (or \"log\" and \"run\" in the config)");
        goto out;
    }
    if (div_path != NULL) {
        o.divergences = strcmp(div_path, "-") == 0 ? stdout : fopen(div_path, "ab");
        if (o.divergences == NULL) {
            ust_cli_fail(ust_sprintf("%s: cannot open for writing", div_path), NULL);
            goto out;
        }
    }
    ust_replay_stats st;
    if (ust_replay(&o, &st, &err) != 0) {
        ust_cli_fail(err, "replay failed");
        goto out;
    }
    fprintf(stderr,
            "replayed %lld events after seq %lld: %lld decided by both plugins, %lld not "
            "fed (signature or route), %lld divergences\n",
            (long long)st.events, (long long)st.resumed_after, (long long)st.fed,
            (long long)st.not_fed, (long long)st.divergences);
    rc = UST_EXIT_OK;
out:
    if (o.divergences != NULL && o.divergences != stdout)
        fclose(o.divergences);
    ust_config_free(cfg);
    return rc;
}
