/* tests/http_service.py started for a test: a real HTTP service on
 * 127.0.0.1, on a port it chose and reports, stopped (SIGKILL) at the end. */
#ifndef UST_TEST_HTTP_SERVICE_H
#define UST_TEST_HTTP_SERVICE_H

#include "support.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct ust_test_service {
    pid_t pid;
    int port;
    char base[64]; /* "http://127.0.0.1:PORT" */
} ust_test_service;

/* argv: extra arguments for the service, NULL-terminated (NULL: none). */
void ust_test_service_start(ust_test_service *s, const char *const *argv);

void ust_test_service_stop(ust_test_service *s);

/* A port nothing listens on: bound, then closed. */
int ust_test_closed_port(void);

/* A socket listening on 127.0.0.1 (a port of its own, in *port) that never
 * answers: a stand-in for a proxy, to see whether anything connected to
 * it. Non-blocking, for ust_test_listener_accepted. */
int ust_test_listener(int *port);

/* How many connections reached the listener since the last call (each
 * accepted and closed): the kernel completes a connection before any
 * accept, so one made and given up is counted too. */
int ust_test_listener_accepted(int fd);

/* A stand-in proxy (a listener) named by every proxy variable libcurl reads
 * in this process's environment, its children's too, no_proxy unset; the
 * listener's socket, for ust_test_listener_accepted. */
int ust_test_env_proxy(void);

void ust_test_env_proxy_clear(void);

#endif
