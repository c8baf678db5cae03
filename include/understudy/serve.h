/* The live recorder: an HTTP/1.1 server that records every callback in the
 * event log, durably, before it answers, and a runner that follows the log. */
#ifndef UNDERSTUDY_SERVE_H
#define UNDERSTUDY_SERVE_H

#include <stdio.h>

#include <understudy/config.h>
#include <understudy/plugin.h> /* enum ust_log_level */

/* A running server, for ust_serve_stop. */
typedef struct ust_server ust_server;

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
    int respond_legacy; /* answer with the legacy's decision (needs run_path) */
    /* with respond_legacy: the legacy is production's handler, a url the
     * request is forwarded to; its answer is the caller's, as it came */
    int respond_upstream;
    /* What goes wrong while serving (a retention pass, a runner's step, a
     * slow stop): NULL to drop it. */
    ust_log_fn log;
    void *log_ctx;
    /* NULL, or called on ust_serve's thread with the server once both
     * listeners are bound (ust_serve_bound names them), and with NULL
     * before ust_serve frees it: between the two, ust_serve_stop(server)
     * may be called. */
    void (*started)(void *ctx, ust_server *server);
    void *started_ctx;
} ust_serve_opts;

/* ust_serve's result when the runner was left in a decide at the stop. */
#define UST_SERVE_RUNNER_LEFT 1

/* Serves until ust_serve_stop, then stops accepting, answers what is in
 * flight, lets the runner catch up for a bounded time (see follower.c) and
 * returns 0. A runner still in a decide after that is left running:
 * ust_serve returns UST_SERVE_RUNNER_LEFT with nothing freed, and the
 * caller must end the process without it (exit status 0: the run resumes
 * from its cursor). Errors at start-up (address in use, log or plugins that
 * cannot be opened or say their hello), all before the port is bound,
 * return a negative code with *err. Signals are the caller's: ust_serve
 * installs no handler and leaves SIGPIPE's disposition alone (its thread
 * blocks SIGPIPE while it runs, and the threads it starts inherit that). */
int ust_serve(const ust_serve_opts *o, char **err);

/* "HOST:PORT" the public listener (admin 0) or the admin one (1) is bound
 * to, into out (cap bytes); from the started callback on. */
void ust_serve_bound(ust_server *server, int admin, char *out, size_t cap);

/* Begins the stop of server. Async-signal-safe and thread-safe: a signal
 * handler or another thread may call it, any number of times. */
void ust_serve_stop(ust_server *server);

#endif
