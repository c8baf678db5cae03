/* understudy serve */
#include "cli/cli.h"
#include "cli/signals.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/log.h>
#include <understudy/serve.h>

#include <getopt.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: understudy serve --config FILE [--listen ADDR] [--admin-listen ADDR]\n"
    "                        [--log DB] [--run DB]\n"
    "                        [--respond ack|legacy|upstream] [--legacy SO]\n"
    "                        [--candidate SO]\n"
    "                        [--divergences FILE|-]\n"
    "\n"
    "Records every callback to a configured route in the event log, durably\n"
    "(synchronous=FULL, group commit), before answering 202 with its seq; a\n"
    "webhook whose signature is invalid, missing or expired is recorded and\n"
    "answered 401. With a run database, a runner follows the log and feeds each\n"
    "event to the legacy and the candidate off the request path.\n"
    "--respond legacy (needs --run): the legacy plugin's decision is the answer,\n"
    "made right after the commit and recorded in RUN.answers; the candidate is\n"
    "decided later by the runner and can neither change nor delay an answer.\n"
    "--respond upstream (needs --run): the legacy is production's handler\n"
    "(plugins.legacy.url): each request is forwarded to it after the commit and\n"
    "its answer goes back as it came, recorded first in RUN.answers as the\n"
    "legacy's decision; 502 when it is down, 504 past its timeout_ms.\n"
    "GET /healthz (what is wrong, 503 when anything is), GET /readyz and\n"
    "GET /metrics (Prometheus text) are served on the admin listener only:\n"
    "--admin-listen or \"admin_listen\", by default 127.0.0.1 on the --listen\n"
    "port + 1 (see docs/health.md).\n"
    "SIGTERM or SIGINT: stop accepting, answer what is in flight, let the\n"
    "runner catch up for at most 5 s, then end its batch in progress (left\n"
    "behind after 5 s more), exit 0; the next start resumes from the run's\n"
    "cursor. A second signal exits at once. Both plugins must start and say\n"
    "their hello before the port is bound: else exit 2.\n"
    "--listen, --log and --run default to the config's \"listen\", \"log\", \"run\".\n"
    "One serve per log and run database: a second one on the same files exits 2,\n"
    "naming the first one's pid (a lock on LOG.lock and RUN.lock).\n";

int ust_cli_serve(int argc, char **argv)
{
    const char *config = NULL, *respond = "ack", *div_path = NULL;
    ust_serve_opts o;
    memset(&o, 0, sizeof(o));
    const ust_cli_opt opts[] = {UST_CLI_STR("config", &config),
                                UST_CLI_STR("listen", &o.listen),
                                UST_CLI_STR("admin-listen", &o.admin_listen),
                                UST_CLI_RUN_FILES(o),
                                UST_CLI_STR("respond", &respond),
                                UST_CLI_STR("divergences", &div_path),
                                UST_CLI_END};
    int parsed = ust_cli_parse("serve", argc, argv, opts, usage);
    if (parsed != UST_CLI_GO_ON)
        return parsed;
    if (ust_cli_no_more_args("serve", argc, argv, optind) != 0)
        return UST_EXIT_USAGE;
    if (strcmp(respond, "ack") != 0 && strcmp(respond, "legacy") != 0 &&
        strcmp(respond, "upstream") != 0)
        return ust_cli_fail(
            ust_sprintf("serve: --respond %s: expected ack, legacy or upstream",
                        respond),
            NULL);
    o.respond_upstream = strcmp(respond, "upstream") == 0;
    o.respond_legacy = o.respond_upstream || strcmp(respond, "legacy") == 0;
    char *err = NULL;
    ust_config *cfg = NULL;
    ust_db_lock *log_lock = NULL, *run_lock = NULL;
    ust_cli_appended div = {0};
    if (ust_cli_load_config("serve", config, 1, &cfg) != 0)
        return UST_EXIT_USAGE;
    if (ust_config_load_mask_key(cfg, &err) != 0) {
        ust_config_free(cfg);
        return ust_cli_fail(err, "masking key missing");
    }
    int rc = UST_EXIT_USAGE;
    if (o.listen == NULL)
        o.listen = cfg->listen;
    if (o.admin_listen == NULL)
        o.admin_listen = cfg->admin_listen;
    if (o.log_path == NULL)
        o.log_path = cfg->log_path;
    if (o.run_path == NULL)
        o.run_path = cfg->run_path;
    if (o.listen == NULL || o.log_path == NULL) {
        ust_cli_fail(NULL,
                     "serve: need --listen and --log (or \"listen\" and \"log\" in the"
                     " config)");
        goto out;
    }
    if (div_path != NULL &&
        (o.divergences = ust_cli_appended_open(&div, div_path)) == NULL)
        goto out;
    o.cfg = cfg;
    /* A second serve on the same files would race the first's runner. */
    if (ust_db_lock_take(o.log_path, &log_lock, &err) != 0 ||
        (o.run_path != NULL && ust_db_lock_take(o.run_path, &run_lock, &err) != 0)) {
        ust_cli_fail(err, "serve: cannot start");
        goto out;
    }
    o.log = ust_cli_say;
    o.started = ust_cli_serve_started;
    ust_cli_serve_process();
    int served = ust_serve(&o, &err);
    if (served == UST_SERVE_RUNNER_LEFT)
        _exit(0); /* the run resumes from its cursor; the runner dies with us */
    if (served != 0) {
        ust_cli_fail(err, "serve failed");
        goto out;
    }
    rc = UST_EXIT_OK;
out:
    /* ust_serve returns an error only for a start that failed (before it
     * listened): it removed the databases it made, and the files made here
     * go too (docs/running.md). */
    if (rc == UST_EXIT_OK) {
        ust_db_lock_release(run_lock);
        ust_db_lock_release(log_lock);
    } else {
        ust_db_lock_discard(run_lock);
        ust_db_lock_discard(log_lock);
    }
    ust_cli_appended_close(&div, rc != UST_EXIT_OK);
    ust_config_free(cfg);
    return rc;
}
