/* src/plugins/examples/service.py started for a test: the example service on
 * 127.0.0.1, on a port it chose and names, over a SQLite database of the
 * test's; it dies with the test. */
#ifndef UST_TEST_EXAMPLE_SERVICE_H
#define UST_TEST_EXAMPLE_SERVICE_H

#include "support.h"

#include <sys/types.h>

typedef struct service {
    pid_t pid;
    int port;
    char db[PATH_MAX];
} service;

/* Starts service.py on port 0 over its database db; waits for the line
 * naming its port. */
void example_service_start(service *s);

/* Stops it with sig and reaps it. */
void example_service_stop(service *s, int sig);

#endif
