/* The real `understudy serve` started on 127.0.0.1 and spoken to over real
 * sockets (serve_client.h). */
#include "serve_client.h"

char server_stderr_path[PATH_MAX];

server_proc server_start_with(const char *const *args, void (*setup)(void))
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const char *bin = getenv("UST_BIN");
    assert_non_null(bin);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setup != NULL)
            setup();
        dup2(fds[1], 2);
        close(fds[0]);
        const char *argv[32] = {bin, "serve"};
        int n = 2;
        for (int i = 0; args[i] != NULL && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256];
    server_proc s = {pid, 0, 0};
    while (fgets(line, sizeof(line), f) != NULL) {
        char *admin = strstr(line, "admin on ");
        if (admin != NULL) {
            s.admin_port = atoi(strrchr(admin, ':') + 1);
            continue;
        }
        char *at = strstr(line, "listening on ");
        if (at != NULL) {
            s.port = atoi(strrchr(at, ':') + 1);
            break;
        }
        fprintf(stderr, "server: %s", line);
    }
    /* Keep draining the server's stderr in the background so it never blocks. */
    if (fork() == 0) {
        FILE *copy = server_stderr_path[0] ? fopen(server_stderr_path, "a") : NULL;
        while (fgets(line, sizeof(line), f) != NULL)
            if (copy != NULL && fputs(line, copy) >= 0)
                fflush(copy);
        _exit(0);
    }
    fclose(f);
    if (s.port == 0 || s.admin_port == 0) {
        kill(pid, SIGKILL); /* one that runs but did not say so outlives the test */
        waitpid(pid, NULL, 0);
        fail_msg("the server did not start");
    }
    return s;
}

server_proc server_start(const char *const *args)
{
    return server_start_with(args, NULL);
}

int server_stop(server_proc *s, int sig)
{
    kill(s->pid, sig);
    int status = 0;
    waitpid(s->pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int http_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the server may close on a refused request */
        c += w;
        n -= (size_t)w;
    }
}

size_t raw_exchange(int port, const char *req, char *out, size_t cap)
{
    int fd = http_connect(port);
    send_all(fd, req, strlen(req));
    size_t len = 0;
    ssize_t n;
    while (len < cap - 1 && (n = recv(fd, out + len, cap - 1 - len, 0)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(fd);
    return len;
}

int read_response(int fd, char *buf, size_t *len, size_t cap, http_resp *r)
{
    memset(r, 0, sizeof(*r));
    for (;;) {
        buf[*len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            char *cl = strstr(buf, "Content-Length: ");
            size_t body_len = cl && cl < end ? (size_t)atol(cl + 16) : 0;
            size_t head = (size_t)(end + 4 - buf);
            if (*len >= head + body_len) {
                r->status = atoi(buf + 9);
                r->closed = strstr(buf, "Connection: close") != NULL &&
                            strstr(buf, "Connection: close") < end;
                size_t copy =
                    body_len < sizeof(r->body) - 1 ? body_len : sizeof(r->body) - 1;
                memcpy(r->body, end + 4, copy);
                memmove(buf, buf + head + body_len, *len - head - body_len);
                *len -= head + body_len;
                return 1;
            }
        }
        ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (n <= 0)
            return 0;
        *len += (size_t)n;
    }
}

void expect_pipelined_answers(int fd, char *buf, size_t *len, size_t cap)
{
    http_resp r;
    assert_int_equal(read_response(fd, buf, len, cap, &r), 1);
    assert_int_equal(r.status, 202);
    assert_non_null(strstr(r.body, "\"seq\":1"));
    assert_int_equal(read_response(fd, buf, len, cap, &r), 1);
    assert_int_equal(r.status, 404);
    assert_int_equal(read_response(fd, buf, len, cap, &r), 1);
    assert_int_equal(r.status, 202);
    assert_non_null(strstr(r.body, "\"seq\":2"));
}

int http_once(int port, const char *raw, size_t raw_len, http_resp *r)
{
    int fd = http_connect(port);
    send_all(fd, raw, raw_len);
    char buf[1 << 17];
    size_t len = 0;
    int ok = read_response(fd, buf, &len, sizeof(buf), r);
    close(fd);
    return ok ? r->status : -1;
}

char *server_stripe_signature(const char *body, int64_t t, const char *secret)
{
    ust_request r;
    memset(&r, 0, sizeof(r));
    r.body = (unsigned char *)ust_strdup(body);
    r.body_len = strlen(body);
    ust_sig_params p = {UST_SCHEME_STRIPE, secret, NULL, 300};
    assert_int_equal(ust_sig_sign(&p, t, NULL, &r), 0);
    char *sig = ust_strdup(r.headers[0].value);
    ust_request_clear(&r);
    return sig;
}

void server_write_config_keys(const char *path, json_t *keys)
{
    char src[PATH_MAX];
    ust_test_source_path("tests/data/config.json", src);
    json_error_t jerr;
    json_t *doc = json_load_file(src, 0, &jerr);
    assert_non_null(doc);
    const char *key;
    json_t *value;
    json_object_foreach(keys, key, value)
    {
        json_object_set(doc, key, value);
    }
    json_decref(keys);
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    json_decref(doc);
}

void server_write_config_with(const char *path, json_t *plugins)
{
    server_write_config_keys(path, json_pack("{s:o}", "plugins", plugins));
}

json_t *server_plugins(json_t *legacy, json_t *candidate)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    if (legacy == NULL)
        legacy = json_pack("{s:s}", "path", lp);
    if (candidate == NULL)
        candidate = json_pack("{s:s}", "path", cp);
    return json_pack("{s:o,s:o}", "legacy", legacy, "candidate", candidate);
}

void server_write_config(const char *path)
{
    server_write_config_with(path, server_plugins(NULL, NULL));
}

serve_world *serve_world_new(json_t *plugins, const char *stripe_secret)
{
    serve_world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    ust_test_tmpdir(w->dir);
    snprintf(w->cfg, sizeof(w->cfg), "%s/config.json", w->dir);
    snprintf(w->log, sizeof(w->log), "%s/events.db", w->dir);
    snprintf(w->run, sizeof(w->run), "%s/run.db", w->dir);
    snprintf(w->unblock, sizeof(w->unblock), "%s/unblock", w->dir);
    if (plugins != NULL)
        server_write_config_with(w->cfg, plugins);
    ust_test_set_secrets(stripe_secret);
    return w;
}

json_t *serve_world_blocking_plugin(serve_world *w, int timeout_ms)
{
    char p[PATH_MAX];
    ust_test_fixture_path("misbehaving_block", p);
    return json_pack("{s:s,s:i,s:{s:s}}", "path", p, "timeout_ms", timeout_ms, "config",
                     "unblock_file", w->unblock);
}

void serve_world_start_with(serve_world *w, const char *const *extra)
{
    const char *args[24] = {"--config", w->cfg, "--listen", "127.0.0.1:0",
                            "--log",    w->log, "--run",    w->run};
    int n = 8;
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 23; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    w->srv = server_start(args);
}

void serve_world_start(serve_world *w)
{
    serve_world_start_with(w, NULL);
}

void serve_world_stop(serve_world *w)
{
    assert_int_equal(server_stop(&w->srv, SIGTERM), 0);
    w->srv.pid = 0;
}

void serve_world_kill(serve_world *w)
{
    if (w->srv.pid > 0)
        server_stop(&w->srv, SIGKILL);
    w->srv.pid = 0;
}

void serve_world_free(serve_world *w)
{
    serve_world_kill(w);
    ust_test_rmdir(w->dir);
    free(w);
}
