/* `serve --respond upstream` in front of a real service on 127.0.0.1
 * (tests/data/upstream_service.py, which logs every request it gets): the
 * world the in-line path's tests start, and what they read back. */
#ifndef UST_TEST_UPSTREAM_WORLD_H
#define UST_TEST_UPSTREAM_WORLD_H

#include "serve_client.h"

#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <time.h>

typedef struct upstream_world {
    serve_world *sw;
    pid_t svc;
    int svc_port;
    char svc_log[PATH_MAX];
} upstream_world;

upstream_world *upstream_world_new(void);

/* Starts the service on port (0: a free one) and reads the port it says. */
void upstream_service_start(upstream_world *w, int port);

void upstream_service_kill(upstream_world *w);

void upstream_world_free(upstream_world *w);

/* The config: the service as the legacy's url, and keys (a reference
 * taken; NULL: none) set over tests/data/config.json's top level. */
void upstream_write_config(upstream_world *w, json_t *keys);

void upstream_serve(upstream_world *w);

/* The requests that reached the service (each logs one line). */
int upstream_reached(const upstream_world *w);

sqlite3 *upstream_open_db(const char *path);

/* Waits (a generous bound, for a loaded machine) until the run database's
 * cursor reaches seq. */
void upstream_runner_reaches(const upstream_world *w, int seq);

#endif
