/* The live recorder: an HTTP/1.1 server that records every callback in the
 * event log, durably, before it answers, and a runner that follows the log. */
#ifndef UNDERSTUDY_SERVE_H
#define UNDERSTUDY_SERVE_H

#include <stdio.h>

#include <understudy/config.h>

typedef struct ust_serve_opts {
    const ust_config *cfg; /* secrets loaded */
    const char *listen;    /* "127.0.0.1:8080" */
    /* /healthz, /readyz, /metrics; NULL: 127.0.0.1 on the listen port + 1
     * (port 0 when listen's is 0) */
    const char *admin_listen;
    const char *log_path;
    const char *run_path;                     /* NULL: record only, no runner */
    const char *legacy_path, *candidate_path; /* NULL: from the config */
    FILE *divergences;                        /* runner's JSON lines, or NULL */
    FILE *status;       /* "admin on ..." then "listening on ..." when up, or NULL */
    int respond_legacy; /* answer with the legacy's decision (needs run_path) */
} ust_serve_opts;

/* Serves until SIGTERM or SIGINT, then stops accepting, answers what is in
 * flight, lets the runner catch up for a bounded time (see follower.c) and
 * returns 0; a runner still in a decide after that ends the process (exit
 * status 0, the run resumable from its cursor). A second signal exits the
 * process at once. Errors at start-up (address in use, log or plugins that
 * cannot be opened or say their hello), all before the port is bound,
 * return a negative code with *err. */
int ust_serve(const ust_serve_opts *o, char **err);

#endif
