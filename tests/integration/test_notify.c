/* systemd's Type=notify protocol, as systemd speaks it: the test owns the
 * notification socket (a unix datagram socket named by NOTIFY_SOCKET),
 * starts the real `understudy serve` and reads what it sends. */
#include "serve_client.h"

#include <sys/stat.h>
#include <sys/un.h>

typedef struct world {
    serve_world *s;
    struct sockaddr_un addr;
    int sock;
} world;

static int setup(void **state)
{
    world *w = calloc(1, sizeof(*w));
    w->s = serve_world_new(server_plugins(NULL, NULL), "whsec_notify_test");

    w->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(w->sock >= 0);
    w->addr.sun_family = AF_UNIX;
    int n =
        snprintf(w->addr.sun_path, sizeof(w->addr.sun_path), "%s/notify", w->s->dir);
    assert_true(n > 0 && (size_t)n < sizeof(w->addr.sun_path));
    assert_int_equal(bind(w->sock, (struct sockaddr *)&w->addr, sizeof(w->addr)), 0);
    /* A bound for a broken server only; nothing here depends on timing. */
    struct timeval tv = {60, 0};
    setsockopt(w->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setenv("NOTIFY_SOCKET", w->addr.sun_path, 1);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    serve_world_kill(w->s);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    close(w->sock);
    serve_world_free(w->s);
    free(w);
    return 0;
}

/* The next datagram, as a string; fails the test if none comes. */
static void next_message(world *w, char *buf, size_t cap)
{
    ssize_t n = recv(w->sock, buf, cap - 1, 0);
    if (n < 0)
        fail_msg("no notification from the server");
    buf[n] = '\0';
}

static void test_ready_once_listening_and_stopping_at_stop(void **state)
{
    world *w = *state;
    serve_world_start(w->s);
    char msg[512];
    next_message(w, msg, sizeof(msg));
    assert_non_null(strstr(msg, "READY=1"));
    assert_non_null(strstr(msg, "STATUS=recording on 127.0.0.1:"));
    /* Ready means it answers: a request now gets its answer. */
    const char req[] = "GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    http_resp r;
    assert_int_equal(http_once(w->s->srv.port, req, sizeof(req) - 1, &r), 404);
    kill(w->s->srv.pid, SIGTERM);
    next_message(w, msg, sizeof(msg));
    assert_string_equal(msg, "STOPPING=1");
    assert_int_equal(server_stop(&w->s->srv, 0), 0);
    w->s->srv.pid = 0;
}

static void watchdog_pings(world *w)
{
    serve_world_start(w->s);
    char msg[512];
    next_message(w, msg, sizeof(msg));
    assert_non_null(strstr(msg, "READY=1"));
    for (int i = 0; i < 3; i++) {
        next_message(w, msg, sizeof(msg));
        assert_string_equal(msg, "WATCHDOG=1");
    }
    assert_int_equal(server_stop(&w->s->srv, SIGTERM), 0);
    w->s->srv.pid = 0;
}

static void test_watchdog_pings_from_the_loop(void **state)
{
    world *w = *state;
    setenv("WATCHDOG_USEC", "200000", 1);
    watchdog_pings(w);
}

static void test_watchdog_pings_when_the_pid_is_ours(void **state)
{
    world *w = *state;
    setenv("WATCHDOG_USEC", "200000", 1);
    /* systemd names the main process; the server is exec'd from this pid's
     * child, so the pid is set in the child's environment by a shell. */
    char bin[PATH_MAX];
    snprintf(bin, sizeof(bin), "%s", getenv("UST_BIN"));
    char script[PATH_MAX * 2];
    snprintf(script, sizeof(script), "%s/serve.sh", w->s->dir);
    char text[PATH_MAX * 4];
    snprintf(text, sizeof(text),
             "#!/bin/sh\nexport WATCHDOG_PID=$$\nexec '%s' \"$@\"\n", bin);
    ust_test_write_file(script, text);
    assert_int_equal(chmod(script, 0700), 0);
    setenv("UST_BIN", script, 1);
    watchdog_pings(w);
    setenv("UST_BIN", bin, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ready_once_listening_and_stopping_at_stop,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_pings_from_the_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_pings_when_the_pid_is_ours, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
