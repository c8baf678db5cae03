/* tests/http_service.py started for a test, and sockets that stand in for a
 * proxy (http_service.h). */
#include "http_service.h"

#include <understudy/array.h>

/* Every proxy variable libcurl reads. */
static const char *const ust_test_proxy_vars[] = {
    "http_proxy", "https_proxy", "all_proxy", "HTTPS_PROXY", "ALL_PROXY"};

void ust_test_service_start(ust_test_service *s, const char *const *argv)
{
    char script[PATH_MAX];
    ust_test_source_path("tests/http_service.py", script);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const char *args[32] = {"python3", script};
    size_t n = 2;
    for (size_t i = 0; argv != NULL && argv[i] != NULL && n < 31; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        /* Gone with the test, even one that failed before stopping it, and
         * holding none of its output (ctest waits for that). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execvp("python3", (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    s->port = 0;
    assert_int_equal(fscanf(f, "%d", &s->port), 1);
    fclose(f);
    assert_true(s->port > 0);
    snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
}

void ust_test_service_stop(ust_test_service *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}

int ust_test_closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(0x7f000001)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

int ust_test_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(0x7f000001)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

int ust_test_listener_accepted(int fd)
{
    int n = 0;
    for (int c; (c = accept(fd, NULL, NULL)) >= 0; n++)
        close(c);
    return n;
}

int ust_test_env_proxy(void)
{
    int port = 0;
    int fd = ust_test_listener(&port);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    for (size_t i = 0; i < UST_ARRAY_SIZE(ust_test_proxy_vars); i++)
        setenv(ust_test_proxy_vars[i], url, 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");
    return fd;
}

void ust_test_env_proxy_clear(void)
{
    for (size_t i = 0; i < UST_ARRAY_SIZE(ust_test_proxy_vars); i++)
        unsetenv(ust_test_proxy_vars[i]);
}
