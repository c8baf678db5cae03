/* serve's process: its signals, its descriptor limit and the library's
 * messages on stderr. */
#ifndef UST_CLI_SIGNALS_H
#define UST_CLI_SIGNALS_H

#include <understudy/serve.h>

/* ust_serve_opts.started: from a server's start, SIGTERM and SIGINT begin
 * its orderly stop and a second one exits at once (status 1), and the
 * addresses it listens on are said on stderr; at its end (server NULL) the
 * handlers go when no signal came. */
void ust_cli_serve_started(void *ctx, ust_server *server);
/* ust_serve_opts.log: "understudy: MSG" on stderr. */
void ust_cli_say(void *ctx, int level, const char *msg);

/* The process's settings for serve, before it starts: every connection
 * holds a descriptor, and the soft limit is often 1024, so it is raised to
 * the hard limit (ust_serve sizes its connection cap by the limit it
 * finds); SIGPIPE is ignored, so a write to a pipe whose reader left is an
 * error, not the end of the process. */
void ust_cli_serve_process(void);

#endif
