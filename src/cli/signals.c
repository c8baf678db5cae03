/* serve's signals. The library installs none: the first SIGTERM or SIGINT
 * asks the server for its orderly stop (ust_serve_stop is
 * async-signal-safe); the stop ends by waiting for the writer to drain and
 * the runner to catch up, and a second signal meanwhile leaves at once.
 * Nothing unstored was ever acknowledged, so leaving loses nothing. */
#include "cli/signals.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static _Atomic(ust_server *) current;
static atomic_int in_handler; /* handlers between reading current and done */
static atomic_int signalled;

static void say(const char *text, size_t len)
{
    ssize_t w = write(2, text, len);
    (void)w;
}

static void on_signal(int signum)
{
    int saved = errno;
    if (atomic_exchange(&signalled, 1)) {
        static const char msg[] = "understudy: second signal, exiting at once\n";
        say(msg, sizeof(msg) - 1);
        _exit(1);
    }
    atomic_fetch_add(&in_handler, 1);
    /* "understudy: signal N: finishing what is in flight", with no stdio */
    char msg[96] = "understudy: signal ";
    size_t n = strlen(msg);
    char digits[12];
    size_t d = 0;
    for (unsigned v = (unsigned)signum; d == 0 || v > 0; v /= 10)
        digits[d++] = (char)('0' + v % 10);
    while (d > 0)
        msg[n++] = digits[--d];
    static const char rest[] = ": finishing what is in flight\n";
    memcpy(msg + n, rest, sizeof(rest) - 1);
    say(msg, n + sizeof(rest) - 1);
    ust_server *s = atomic_load(&current);
    if (s != NULL)
        ust_serve_stop(s);
    atomic_fetch_sub(&in_handler, 1);
    errno = saved;
}

static void handle(void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void ust_cli_serve_started(void *ctx, ust_server *server)
{
    (void)ctx;
    if (server != NULL) {
        atomic_store(&current, server);
        handle(on_signal);
        /* The admin line first: "listening on" is the last word of a start. */
        char name[96];
        ust_serve_bound(server, 1, name, sizeof(name));
        fprintf(stderr, "admin on %s (/healthz, /readyz, /metrics)\n", name);
        ust_serve_bound(server, 0, name, sizeof(name));
        fprintf(stderr, "listening on %s\n", name);
        fflush(stderr);
        return;
    }
    /* The server is about to go: no handler may still be on its way to it. */
    atomic_store(&current, NULL);
    while (atomic_load(&in_handler) > 0)
        sched_yield();
    if (!atomic_load(&signalled))
        handle(SIG_DFL);
}

void ust_cli_say(void *ctx, int level, const char *msg)
{
    (void)ctx;
    (void)level;
    fprintf(stderr, "understudy: %s\n", msg);
}

void ust_cli_serve_process(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        setrlimit(RLIMIT_NOFILE, &raised); /* else the cap fits the lower limit */
    }
    /* The library's threads block SIGPIPE; this covers the CLI's own
     * writes too (a --divergences or stderr pipe whose reader left). */
    signal(SIGPIPE, SIG_IGN);
}
