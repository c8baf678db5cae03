/* Starting the real `understudy serve` on 127.0.0.1 and talking HTTP/1.1 to
 * it over real sockets, for the recorder's integration tests. */
#ifndef UST_TEST_SERVE_CLIENT_H
#define UST_TEST_SERVE_CLIENT_H

#include "support.h"

#include <understudy/alloc.h>
#include <understudy/request.h>
#include <understudy/sig.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct server_proc {
    pid_t pid;
    int port;
    int admin_port; /* /healthz, /readyz, /metrics */
} server_proc;

/* When set (a path), the server's stderr after its "listening on" line is
 * appended there instead of dropped, for a test that reads what it said. */
extern char server_stderr_path[PATH_MAX];

/* Starts the binary with args (NULL-terminated, after "serve"); waits for
 * its "listening on HOST:PORT" line, after the "admin on HOST:PORT" one.
 * setup, when not NULL, runs in the child before the exec. */
server_proc server_start_with(const char *const *args, void (*setup)(void));

server_proc server_start(const char *const *args);

/* Sends sig and waits; returns the exit status (or 128 + signal). */
int server_stop(server_proc *s, int sig);

int http_connect(int port);

void send_all(int fd, const void *p, size_t n);

/* What the socket carried for one request (that asks to close) on a fresh
 * connection, to its end, into out NUL-ended (cut at cap - 1); its length. */
size_t raw_exchange(int port, const char *req, char *out, size_t cap);

typedef struct http_resp {
    int status;
    char body[1 << 16]; /* a scrape of /metrics is some 16 KiB */
    int closed;         /* "Connection: close" seen */
} http_resp;

/* Reads one response from fd (buffered in buf/len between calls). 0 at EOF. */
int read_response(int fd, char *buf, size_t *len, size_t cap, http_resp *r);

/* One request on a fresh connection; the response's status, body in r. */
/* The answers to a payment, a GET /healthz and a second payment sent on one
 * connection, in order: 202 with seq 1, 404 (/healthz is on the admin
 * listener only), 202 with seq 2. buf and *len keep what was read past them. */
void expect_pipelined_answers(int fd, char *buf, size_t *len, size_t cap);

int http_once(int port, const char *raw, size_t raw_len, http_resp *r);

/* The Stripe-Signature value for body, signed at t with secret (ust_free). */
char *server_stripe_signature(const char *body, int64_t t, const char *secret);

/* tests/data/config.json with each member of keys set over it (a reference
 * taken), written to path. */
void server_write_config_keys(const char *path, json_t *keys);

/* tests/data/config.json with these "plugins" (a reference taken), written
 * to path. */
void server_write_config_with(const char *path, json_t *plugins);

/* A "plugins" object: legacy and candidate as given (plugin objects,
 * references taken; NULL: the reference plugin of this build). */
json_t *server_plugins(json_t *legacy, json_t *candidate);

/* tests/data/config.json with the reference plugins of this build. */
void server_write_config(const char *path);

/* A temporary folder holding a config, the log and the run database; the
 * server is started on them with serve_world_start, and killed if still up
 * when the world is freed. The routes' secrets are set in the environment. */
typedef struct serve_world {
    char dir[PATH_MAX], cfg[PATH_MAX], log[PATH_MAX], run[PATH_MAX];
    char unblock[PATH_MAX]; /* the blocking plugin decides once this exists */
    server_proc srv;
} serve_world;

/* The config is tests/data/config.json with these "plugins" (a reference
 * taken); NULL: none is written, the test writes its own. */
serve_world *serve_world_new(json_t *plugins, const char *stripe_secret);

/* The blocking test plugin: every decide waits for w->unblock to exist. */
json_t *serve_world_blocking_plugin(serve_world *w, int timeout_ms);

/* serve on the world's config, log and run database, then extra (NULL
 * ended; NULL: none). */
void serve_world_start_with(serve_world *w, const char *const *extra);

void serve_world_start(serve_world *w);

/* Stops the server with SIGTERM; it must exit 0. */
void serve_world_stop(serve_world *w);

/* Kills the server if it is still up (a failed test's). */
void serve_world_kill(serve_world *w);

void serve_world_free(serve_world *w);

#endif
