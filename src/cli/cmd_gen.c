/* understudy gen */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/gen.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: understudy gen --config FILE --events N --seed S --out OUT.jsonl\n"
    "                      [--truth FILE] [--span 7d] [--start TIME] [--mix "
    "KIND=W,...]\n"
    "                      [--progress|--quiet]\n"
    "\n"
    "Writes N events of synthetic traffic over the span (default a week from\n"
    "2026-11-23T00:00:00Z), in time order, the same bytes for the same seed. Kinds\n"
    "and default weights: single=70 retry=8 late_new_id=3 out_of_order=3 semantic=3\n"
    "api=8 api_retry=2 concurrent=2 invalid_signature=1. --truth writes every\n"
    "divergence a replay of the file must find ({\"seq\",\"class\",\"fields\"}).\n"
    "Signatures use the secrets in the environment, as the config names "
    "them.\n" UST_CLI_PROGRESS_HELP;

int ust_cli_gen(int argc, char **argv)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"events", required_argument, NULL, 'n'},
                                             {"seed", required_argument, NULL, 's'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"truth", required_argument, NULL, 't'},
                                             {"span", required_argument, NULL, 'p'},
                                             {"start", required_argument, NULL, 'a'},
                                             {"mix", required_argument, NULL, 'm'},
                                             {"help", no_argument, NULL, 'h'},
                                             UST_CLI_PROGRESS_OPTIONS,
                                             {NULL, 0, NULL, 0}};
    const char *config = NULL, *out = NULL, *truth = NULL, *mix = NULL;
    int progress_flag = 0;
    ust_gen_opts o;
    memset(&o, 0, sizeof(o));
    ust_gen_default_mix(o.mix);
    o.events = -1;
    o.span_us = 7LL * 86400 * 1000000;
    ust_time_parse("2026-11-23T00:00:00Z", &o.start_us);
    int have_seed = 0;
    optind = 1;
    opterr = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'n':
            o.events = strtoll(optarg, &end, 10);
            if (*end || o.events < 0)
                return ust_cli_fail(NULL, "gen: --events needs a count >= 0");
            break;
        case 's':
            o.seed = strtoull(optarg, &end, 10);
            if (*end)
                return ust_cli_fail(NULL, "gen: --seed needs a number");
            have_seed = 1;
            break;
        case 'o':
            out = optarg;
            break;
        case 't':
            truth = optarg;
            break;
        case 'm':
            mix = optarg;
            break;
        case 'p':
            if (ust_duration_parse(optarg, &o.span_us) != 0)
                return ust_cli_fail(
                    NULL, "gen: --span needs a duration such as 7d, 36h, 90m");
            break;
        case 'a':
            if (ust_time_parse(optarg, &o.start_us) != 0)
                return ust_cli_fail(NULL, "gen: --start needs an RFC 3339 time");
            break;
        case 'h':
            return ust_cli_usage(usage, 1);
        case UST_CLI_OPT_PROGRESS:
        case UST_CLI_OPT_QUIET:
            if (ust_cli_progress_flag("gen", c, &progress_flag) != 0)
                return UST_EXIT_USAGE;
            break;
        default:
            return ust_cli_bad_option("gen", argv[optind - 1], usage);
        }
    }
    if (out == NULL || o.events < 0 || !have_seed)
        return ust_cli_fail(
            NULL, "gen: need --config, --events, --seed and --out (try --help)");
    char *err = NULL;
    if (mix != NULL && ust_gen_parse_mix(mix, o.mix, &err) != 0)
        return ust_cli_fail(err, "bad --mix");
    ust_config *cfg = NULL;
    if (ust_cli_no_more_args("gen", argc, argv, optind) != 0 ||
        ust_cli_load_config("gen", config, 1, &cfg) != 0)
        return UST_EXIT_USAGE;
    int rc = UST_EXIT_USAGE;
    o.cfg = cfg;
    o.out = strcmp(out, "-") == 0 ? stdout : fopen(out, "wb");
    o.truth = truth ? fopen(truth, "wb") : NULL;
    if (o.out == NULL || (truth && o.truth == NULL)) {
        ust_cli_fail(ust_sprintf("%s: cannot open for writing", o.out ? truth : out),
                     NULL);
        goto done;
    }
    int64_t n = 0;
    ust_cli_progress progress;
    ust_cli_progress_start(&progress, "gen", "events", progress_flag);
    o.progress = ust_cli_progress_sink(&progress);
    int failed = ust_gen(&o, &n, &err) != 0;
    ust_cli_progress_end(&progress, !failed);
    if (failed) {
        ust_cli_fail(err, "gen failed");
        goto done;
    }
    if ((o.out != stdout && fclose(o.out) != 0) || (o.truth && fclose(o.truth) != 0)) {
        o.out = o.truth = NULL;
        ust_cli_fail(NULL, "gen: write failed");
        goto done;
    }
    o.out = o.truth = NULL;
    if (!progress.quiet)
        fprintf(stderr, "generated %lld events (seed %llu) to %s\n", (long long)n,
                (unsigned long long)o.seed, out);
    rc = UST_EXIT_OK;
done:
    if (o.out && o.out != stdout)
        fclose(o.out);
    if (o.truth)
        fclose(o.truth);
    ust_config_free(cfg);
    return rc;
}
