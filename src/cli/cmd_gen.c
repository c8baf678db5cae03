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
    const char *config = NULL, *out = NULL, *truth = NULL, *mix = NULL, *seed = NULL;
    int progress_flag = 0;
    ust_gen_opts o;
    memset(&o, 0, sizeof(o));
    ust_gen_default_mix(o.mix);
    o.events = -1;
    o.span_us = 7LL * 86400 * 1000000;
    ust_time_parse("2026-11-23T00:00:00Z", &o.start_us);
    const ust_cli_opt opts[] = {
        UST_CLI_STR("config", &config),
        UST_CLI_CONV("events", ust_cli_conv_count, &o.events,
                     "gen: --events needs a count >= 0"),
        {"seed", UST_CLI_VALUE, &seed, ust_cli_conv_u64, &o.seed,
         "gen: --seed needs a number"},
        UST_CLI_STR("out", &out),
        UST_CLI_STR("truth", &truth),
        UST_CLI_CONV("span", ust_cli_conv_duration, &o.span_us,
                     "gen: --span needs a duration such as 7d, 36h, 90m"),
        UST_CLI_CONV("start", ust_cli_conv_time, &o.start_us,
                     "gen: --start needs an RFC 3339 time"),
        UST_CLI_STR("mix", &mix),
        UST_CLI_PROGRESS_FLAGS(&progress_flag),
        UST_CLI_END};
    int rc = ust_cli_parse("gen", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if (out == NULL || o.events < 0 || seed == NULL)
        return ust_cli_fail(
            NULL, "gen: need --config, --events, --seed and --out (try --help)");
    char *err = NULL;
    if (mix != NULL && ust_gen_parse_mix(mix, o.mix, &err) != 0)
        return ust_cli_fail(err, "bad --mix");
    ust_config *cfg = NULL;
    if (ust_cli_no_more_args("gen", argc, argv, optind) != 0 ||
        ust_cli_load_config("gen", config, 1, &cfg) != 0)
        return UST_EXIT_USAGE;
    rc = UST_EXIT_USAGE;
    o.cfg = cfg;
    if ((o.out = ust_cli_open_output(out, "wb")) == NULL ||
        (truth != NULL && (o.truth = ust_cli_open_file(truth, "wb")) == NULL))
        goto done;
    int64_t n = 0;
    ust_cli_progress progress;
    o.progress = ust_cli_progress_start(&progress, "gen", "events", progress_flag);
    if (ust_cli_progress_end(&progress, ust_gen(&o, &n, &err), &err, "gen failed") != 0)
        goto done;
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
