/* understudy drive */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/log.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: understudy drive --config FILE (--render OUT.jsonl | --check RUN.db "
    "[--live]\n"
    "                        | --target URL [--speed X]) SCENARIO.json...\n"
    "\n"
    "--render  writes the scenarios as interchange JSONL, one after another (30 days\n"
    "          apart), times from the steps' offsets, signed for those times\n"
    "--check   compares a run made from them (rendered into a fresh log, or driven\n"
    "          live with --live) with each step's expected verdicts and divergences;\n"
    "          prints every mismatch, exit 1 if there is any\n"
    "--target  sends them over HTTP to a running `understudy serve`\n"
    "Secrets come from the environment variables the config names.\n";

/* The first scenario starts here, so rendered files are the same every time. */
#define RENDER_START_US 1795946400000000LL /* 2026-11-29T10:00:00Z */

static int drive_target(ust_scenario *const *sc, size_t n, const char *url,
                        double speed)
{
    ust_drive_summary sum;
    char *err = NULL;
    if (ust_scenario_drive(sc, n, url, speed, stdout, &sum, &err) != 0)
        return ust_cli_fail(err, "drive failed");
    return sum.errors ? UST_EXIT_FINDING : UST_EXIT_OK;
}

static int render(ust_scenario *const *sc, size_t n, const char *path)
{
    FILE *f = ust_cli_open_output(path, "wb");
    if (f == NULL)
        return UST_EXIT_USAGE;
    int64_t seq = 1;
    int rc = UST_EXIT_OK;
    for (size_t i = 0; i < n && rc == UST_EXIT_OK; i++) {
        ust_request *reqs = NULL;
        size_t count = 0;
        char *err = NULL;
        if (ust_scenario_render(sc[i],
                                RENDER_START_US + (int64_t)i * UST_SCENARIO_SPACING_US,
                                &reqs, &count, &err) != 0) {
            rc = ust_cli_fail(err, "render failed");
            break;
        }
        for (size_t k = 0; k < count; k++) {
            ust_log_record rec;
            memset(&rec, 0, sizeof(rec));
            rec.seq = seq++;
            rec.req = reqs[k];
            char *line = ust_jsonl_format(&rec, 0);
            if (line == NULL || fprintf(f, "%s\n", line) < 0)
                rc = ust_cli_fail(NULL, "render: write failed");
            ust_free(line);
            ust_request_clear(&reqs[k]);
        }
        ust_free(reqs);
    }
    if (f != stdout && fclose(f) != 0 && rc == UST_EXIT_OK)
        rc = ust_cli_fail(NULL, "render: write failed");
    if (rc == UST_EXIT_OK && f != stdout)
        fprintf(stderr, "rendered %lld events from %zu scenario(s) to %s\n",
                (long long)(seq - 1), n, path);
    return rc;
}

int ust_cli_drive(int argc, char **argv)
{
    const char *config = NULL, *render_to = NULL, *check = NULL, *target = NULL;
    double speed = 1;
    int live = 0;
    const ust_cli_opt opts[] = {
        UST_CLI_STR("config", &config),
        UST_CLI_STR("render", &render_to),
        UST_CLI_STR("check", &check),
        UST_CLI_STR("target", &target),
        UST_CLI_CONV("speed", ust_cli_conv_double, &speed, NULL),
        UST_CLI_FLAG("live", &live),
        UST_CLI_END};
    int rc = ust_cli_parse("drive", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if ((!!render_to + !!check + !!target) != 1 || optind >= argc)
        return ust_cli_fail(NULL,
                            "drive: need exactly one of --render, --check, --target,"
                            " and scenario files (try --help)");
    if (speed <= 0)
        return ust_cli_fail(NULL, "drive: --speed must be positive");
    char *err = NULL;
    ust_config *cfg = NULL;
    /* Rendering and sending sign the requests: they need the secrets. */
    if (ust_cli_load_config("drive", config, check == NULL, &cfg) != 0)
        return UST_EXIT_USAGE;
    size_t n = (size_t)(argc - optind);
    ust_scenario **sc = ust_calloc(n, sizeof(*sc));
    rc = sc ? UST_EXIT_OK : UST_EXIT_USAGE;
    for (size_t i = 0; rc == UST_EXIT_OK && i < n; i++)
        if (ust_scenario_load(argv[optind + (int)i], cfg, &sc[i], &err) != 0)
            rc = ust_cli_fail(err, "cannot load a scenario");
    if (rc == UST_EXIT_OK) {
        if (render_to)
            rc = render(sc, n, render_to);
        else if (target)
            rc = drive_target(sc, n, target, speed);
        else {
            int r = ust_scenario_check(sc, n, check, live, stdout, &err);
            rc = r < 0 ? ust_cli_fail(err, "check failed")
                 : r   ? UST_EXIT_FINDING
                       : UST_EXIT_OK;
        }
    }
    for (size_t i = 0; sc && i < n; i++)
        ust_scenario_free(sc[i]);
    ust_free(sc);
    ust_config_free(cfg);
    return rc;
}
