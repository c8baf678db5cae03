/* What `serve --respond upstream` keeps of production's answers, against the
 * real binary in front of a real service (upstream_world.h): the answer is
 * on disk (synced) before the caller gets a byte of it, a clean stop leaves
 * RUN.answers whole without its -wal, and a header capture.mask_headers
 * names is stored masked everywhere while the caller gets it as it came. */
#define _GNU_SOURCE /* memmem */
#include "http/server.h"
#include "sanitized.h"
#include "upstream_world.h"

#include <understudy/alloc.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

static int setup(void **state)
{
    *state = upstream_world_new();
    return 0;
}

static int teardown(void **state)
{
    upstream_world_free(*state);
    return 0;
}

/* One request for case c on its own connection; the whole answer (to the
 * connection's end) into buf, NUL-ended; its length. */
static size_t ask(const upstream_world *w, const char *c, char *buf, size_t cap)
{
    static const char body[] =
        "{\"order_id\":\"o1\",\"amount\":100,\"currency\":\"eur\"}";
    char *raw = ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nX-Case: %s\r\n"
                            "Content-Type: application/json\r\nConnection: close\r\n"
                            "Content-Length: %zu\r\n\r\n%s",
                            c, strlen(body), body);
    size_t len = raw_exchange(w->sw->srv.port, raw, buf, cap);
    ust_free(raw);
    return len;
}

/* ---- durable before relayed ------------------------------------------- */

static int count_tasks(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* strace attached to every thread of pid (and those it starts), writing
 * the calls traced to file; returns strace's pid once each thread there is
 * attached (strace says so per thread). */
static pid_t strace_attach(pid_t pid, const char *file)
{
    int threads = count_tasks(pid);
    char target[16];
    snprintf(target, sizeof(target), "%d", (int)pid);
    int err_fd = -1;
    pid_t st = ust_test_fork_piped(2, &err_fd);
    if (st == 0) {
        execlp("strace", "strace", "-f", "-yy", "-s", "48", "-e",
               "trace=fdatasync,fsync,write,writev,sendto,sendmsg,recvfrom", "-o", file,
               "-p", target, (char *)NULL);
        _exit(127);
    }
    FILE *f = fdopen(err_fd, "r");
    char line[256];
    int attached = 0;
    while (attached < threads && fgets(line, sizeof(line), f) != NULL)
        attached += strstr(line, "attached") != NULL;
    assert_int_equal(attached, threads);
    /* strace's later lines go nowhere; it must not block writing them. */
    if (fork() == 0) {
        while (fgets(line, sizeof(line), f) != NULL)
            ;
        _exit(0);
    }
    fclose(f);
    return st;
}

/* The trace's lines, in the order the calls happened. */
typedef struct trace {
    char **line;
    size_t n;
} trace;

static void trace_read(const char *file, trace *t)
{
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    memset(t, 0, sizeof(*t));
    char buf[4096];
    while (fgets(buf, sizeof(buf), f) != NULL) {
        t->line = realloc(t->line, (t->n + 1) * sizeof(*t->line));
        t->line[t->n++] = strdup(buf);
    }
    fclose(f);
    /* A call another thread's call interrupted is split in two lines, its
     * arguments on the first ("<unfinished ...>") and what it read on the
     * second ("<... NAME resumed>"): each line gets the other's half, so a
     * search for the descriptor and the bytes together finds the call, and
     * returned_at still sees where it began and where it returned. */
    for (size_t i = 0; i < t->n; i++) {
        char *cut = strstr(t->line[i], " <unfinished ...>");
        for (size_t j = i + 1; cut != NULL && j < t->n; j++) {
            char *rest = strstr(t->line[j], " resumed>");
            if (atoi(t->line[j]) != atoi(t->line[i]) || rest == NULL)
                continue;
            rest += strlen(" resumed>");
            char *begun = NULL, *returned = NULL;
            assert_true(asprintf(&begun, "%.*s%.*s <unfinished ...>\n",
                                 (int)(cut - t->line[i]), t->line[i],
                                 (int)strcspn(rest, "\n"), rest) > 0);
            assert_true(asprintf(&returned, "%.*s %.*s%s", (int)(rest - t->line[j]),
                                 t->line[j], (int)(cut - t->line[i]), t->line[i],
                                 rest) > 0);
            free(t->line[i]);
            free(t->line[j]);
            t->line[i] = begun;
            t->line[j] = returned;
            break;
        }
    }
}

static void trace_free(trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->line[i]);
    free(t->line);
}

/* The first line at or after from holding every one of a and b (b may be
 * NULL); t->n when none. */
static size_t find(const trace *t, size_t from, const char *a, const char *b)
{
    for (size_t i = from; i < t->n; i++)
        if (strstr(t->line[i], a) != NULL && (b == NULL || strstr(t->line[i], b)))
            return i;
    return t->n;
}

/* Where the call that line i began returned: i itself, or the line that
 * resumed it when another thread's call came between. */
static size_t returned_at(const trace *t, size_t i)
{
    if (strstr(t->line[i], "<unfinished ...>") == NULL)
        return i;
    int pid = atoi(t->line[i]);
    for (size_t j = i + 1; j < t->n; j++)
        if (atoi(t->line[j]) == pid && strstr(t->line[j], "resumed>") != NULL)
            return j;
    return t->n;
}

/* The service's answer was read, then RUN.answers synced (fdatasync or
 * fsync of its file or its -wal, returned), and only then was the first
 * byte of the answer written to the caller's socket. */
static void test_answer_synced_before_relay(void **state)
{
    upstream_world *w = *state;
    if (access("/usr/bin/strace", X_OK) != 0 && access("/bin/strace", X_OK) != 0) {
        fprintf(stderr, "strace is not installed (apt-get install strace): the"
                        " syscall order cannot be checked\n");
        skip();
    }
    upstream_service_start(w, 0);
    upstream_write_config(w, NULL);
    upstream_serve(w);
    char file[PATH_MAX + 16];
    snprintf(file, sizeof(file), "%s/strace.out", w->sw->dir);
    pid_t st = strace_attach(w->sw->srv.pid, file);
    static char got[1 << 16];
    ask(w, "json", got, sizeof(got));
    assert_int_equal(strncmp(got, "HTTP/1.1 200 OK\r\n", 17), 0);
    /* strace detaches before the stop: the answer's write is in the trace
     * already (the client has read it), and a sanitized serve's leak check
     * at exit stops its threads with ptrace, which a tracer would refuse. */
    kill(st, SIGINT);
    int status = 0;
    waitpid(st, &status, 0);
    serve_world_stop(w->sw);
    trace t;
    trace_read(file, &t);
    char svc[32], listen[32];
    snprintf(svc, sizeof(svc), "->127.0.0.1:%d]", w->svc_port);
    snprintf(listen, sizeof(listen), "[127.0.0.1:%d->", w->sw->srv.port);
    /* The service's answer coming in on the connection to its port. */
    size_t in = find(&t, 0, svc, "\"HTTP/1.1 200 OK");
    assert_true(in < t.n);
    /* The answer going out on the connection accepted on serve's port. */
    size_t out = find(&t, in, listen, "\"HTTP/1.1 200 OK");
    assert_true(out < t.n);
    size_t synced = t.n;
    for (size_t i = in; i < out && synced == t.n; i++)
        if ((strstr(t.line[i], "fdatasync(") || strstr(t.line[i], "fsync(")) &&
            strstr(t.line[i], ".answers") && returned_at(&t, i) < out)
            synced = i;
    if (synced == t.n)
        fail_msg("RUN.answers was not synced between the service's answer (trace"
                 " line %zu) and the answer's write to the caller (line %zu)",
                 in + 1, out + 1);
    trace_free(&t);
}

/* ---- a clean stop checkpoints ----------------------------------------- */

static void test_clean_stop_leaves_no_answers_wal(void **state)
{
    upstream_world *w = *state;
    upstream_service_start(w, 0);
    upstream_write_config(w, NULL);
    upstream_serve(w);
    static char got[1 << 16];
    ask(w, "json", got, sizeof(got));
    assert_int_equal(strncmp(got, "HTTP/1.1 200 OK\r\n", 17), 0);
    upstream_runner_reaches(w, 1);
    serve_world_stop(w->sw);
    /* Nothing deleted: the -wal is gone or empty, so the file alone holds
     * the answer. */
    char path[PATH_MAX + 16], wal[PATH_MAX + 24];
    snprintf(path, sizeof(path), "%s.answers", w->sw->run);
    snprintf(wal, sizeof(wal), "%s-wal", path);
    struct stat sb;
    if (stat(wal, &sb) == 0 && sb.st_size != 0)
        fail_msg("%s holds %lld bytes after SIGTERM", wal, (long long)sb.st_size);
    sqlite3 *db = upstream_open_db(path);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT status FROM responses WHERE seq = 1"
                                        " AND (SELECT verdict FROM answers WHERE seq"
                                        " = 1) = 'applied'",
                                        -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 200);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* ---- masked where stored ---------------------------------------------- */

/* text holds neither cookie value of the service's "created" answer, and
 * holds a digest. */
static void masked_only(const char *what, const char *text, size_t len)
{
    if (memmem(text, len, "a=1", 3) != NULL || memmem(text, len, "b=2", 3) != NULL)
        fail_msg("%s holds the Set-Cookie in clear: %.*s", what, (int)len, text);
    if (memmem(text, len, "hmac-sha256:", 12) == NULL)
        fail_msg("%s holds no masked value: %.*s", what, (int)len, text);
}

/* The one column of sql's one row, into buf (bytes, NUL-ended): its length. */
static size_t column(const char *path, const char *sql, char *buf, size_t cap)
{
    sqlite3 *db = upstream_open_db(path);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    size_t len = (size_t)sqlite3_column_bytes(q, 0);
    assert_true(len < cap);
    memcpy(buf, sqlite3_column_blob(q, 0), len);
    buf[len] = '\0';
    sqlite3_finalize(q);
    sqlite3_close(db);
    return len;
}

static void test_set_cookie_masked_where_stored(void **state)
{
    upstream_world *w = *state;
    upstream_service_start(w, 0);
    json_t *capture = json_pack("{s:[s,s,s]}", "mask_headers", "Authorization",
                                "Cookie", "Set-Cookie");
    upstream_write_config(w, json_pack("{s:o}", "capture", capture));
    upstream_serve(w);
    /* The caller gets the service's cookies as they came. */
    static char got[1 << 16];
    size_t len = ask(w, "created", got, sizeof(got));
    assert_int_equal(strncmp(got, "HTTP/1.1 201 Created\r\n", 22), 0);
    assert_non_null(memmem(got, len, "\r\nSet-Cookie: a=1; Path=/\r\n", 27));
    assert_non_null(memmem(got, len, "\r\nSet-Cookie: b=2; HttpOnly\r\n", 29));
    upstream_runner_reaches(w, 1);
    serve_world_stop(w->sw);
    char answers[PATH_MAX + 16], buf[8192];
    snprintf(answers, sizeof(answers), "%s.answers", w->sw->run);
    /* RUN.answers: the service's answer, and the decision read from it. */
    len = column(answers, "SELECT headers FROM responses WHERE seq = 1", buf,
                 sizeof(buf));
    masked_only("RUN.answers' responses", buf, len);
    len =
        column(answers, "SELECT headers FROM answers WHERE seq = 1", buf, sizeof(buf));
    masked_only("RUN.answers' decision", buf, len);
    /* The run database's legacy decision, copied by the live runner. */
    len = column(w->sw->run, "SELECT l_headers FROM decisions WHERE seq = 1", buf,
                 sizeof(buf));
    masked_only("the run database's legacy decision", buf, len);
    /* log export --answers. */
    char out_path[PATH_MAX + 16];
    snprintf(out_path, sizeof(out_path), "%s/week.jsonl", w->sw->dir);
    char *out = NULL;
    assert_int_equal(ust_test_cli(w->sw->dir, &out,
                                  "log export --log '%s' --answers '%s' --out '%s'",
                                  w->sw->log, answers, out_path),
                     0);
    free(out);
    FILE *f = fopen(out_path, "r");
    assert_non_null(f);
    len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_non_null(memmem(buf, len, "Set-Cookie", 10));
    masked_only("log export --answers", buf, len);
}

/* ---- answers owed are bounded ----------------------------------------- */

#define BIG_ANSWER (8 << 20)
#define PIPELINED 32
#define OWED_LIMIT (20 << 20)

/* serve's resident memory, in bytes. */
static long long rss_of(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long long kb = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atoll(line + 6);
    fclose(f);
    assert_true(kb > 0);
    return kb * 1024;
}

/* A value of serve's /metrics (-1 when it has no such sample). */
static long long metric(const upstream_world *w, const char *name)
{
    http_resp r;
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n"
                              "Connection: close\r\n\r\n";
    if (http_once(w->sw->srv.admin_port, get, sizeof(get) - 1, &r) != 200)
        return -1;
    char want[96];
    snprintf(want, sizeof(want), "\n%s ", name);
    const char *at = strstr(r.body, want);
    return at ? atoll(at + strlen(want)) : -1;
}

/* A connection to serve whose receive buffer is rcvbuf bytes, so that the
 * kernel takes few answers off serve's hands when the client does not read. */
static int reluctant_client(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* One connection pipelines requests for 8 MiB answers and reads none:
 * serve forwards only as many as limits.max_owed_bytes lets it owe, stops
 * reading the connection, and its memory stays flat (a generous bound,
 * not a time: without the limit every answer piles up in it); then the
 * client reads, and gets every answer, in order. */
static void test_pipelined_answers_are_bounded(void **state)
{
    upstream_world *w = *state;
    upstream_service_start(w, 0);
    upstream_write_config(w,
                          json_pack("{s:{s:i,s:i,s:i,s:i}}", "limits", "max_body_bytes",
                                    1048576, "max_headers", 64, "header_timeout_ms",
                                    60000, "max_owed_bytes", OWED_LIMIT));
    upstream_serve(w);
    long long base = rss_of(w->sw->srv.pid);
    int fd = reluctant_client(w->sw->srv.port, 16 << 10);
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    static const char body[] = "{\"order_id\":\"o1\",\"amount\":100}";
    for (int i = 0; i < PIPELINED; i++) {
        char *raw = ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\n"
                                "X-Body-Bytes: %d\r\nContent-Type: application/json\r\n"
                                "Content-Length: %zu\r\n\r\n%s",
                                BIG_ANSWER, strlen(body), body);
        send_all(fd, raw, strlen(raw));
        ust_free(raw);
    }
    /* Until serve holds back the connection with every answer it forwarded
     * built (owed: those answers, nothing reserved for one to come), its
     * memory within a bound all the while. */
    time_t until = time(NULL) + 120;
    int n = 0;
    for (;;) {
        long long growth = rss_of(w->sw->srv.pid) - base;
#ifdef UST_TEST_SANITIZED /* RSS is shadow and quarantine there */
        growth = 0;
#endif
        if (growth > 120LL << 20)
            fail_msg("serve grew %lld MiB with %d answers reaching the service",
                     growth >> 20, upstream_reached(w));
        n = upstream_reached(w);
        long long held = metric(w, "understudy_connections_held_back");
        long long owed = metric(w, "understudy_answer_bytes_owed");
        if (held == 1 && owed >= (long long)n * BIG_ANSWER &&
            owed < (long long)n * (BIG_ANSWER + 4096))
            break;
        if (time(NULL) >= until)
            fail_msg("held back %lld, owed %lld, %d reached the service", held, owed,
                     n);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Answers built while under the limit, and the one that went over it. */
    assert_in_range(n, 1, OWED_LIMIT / BIG_ANSWER + 1);
    /* The client reads: every answer, in order. */
    size_t cap = BIG_ANSWER + (64 << 10), len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    static http_resp r;
    for (int i = 1; i <= PIPELINED; i++) {
        assert_int_equal(read_response(fd, buf, &len, cap, &r), 1);
        assert_int_equal(r.status, 200);
        char want[32];
        snprintf(want, sizeof(want), "{\"seq\":\"%d\",", i);
        if (strncmp(r.body, want, strlen(want)) != 0)
            fail_msg("answer %d begins %.24s", i, r.body);
    }
    free(buf);
    close(fd);
    assert_int_equal(upstream_reached(w), PIPELINED);
    assert_int_equal(metric(w, "understudy_answer_bytes_owed"), 0);
    serve_world_stop(w->sw);
}

/* ---- tiny answers count what they hold -------------------------------- */

#define TINY_LIMIT (16 << 20)
/* What an answer owed holds in serve at the least beyond its bytes (its
 * slot and its write request), and the least its bytes are (`--respond
 * ack`'s 202 with the seq). */
#define HELD_AT_LEAST (sizeof(ust__slot) + sizeof(uv_write_t))
#define TINY_AT_LEAST 64

/* As much of the requests in block (len bytes, sent round and round from
 * *at) as the sockets take now. */
static void send_what_fits(int fd, const char *block, size_t len, size_t *at)
{
    ssize_t n;
    while ((n = send(fd, block + *at, len - *at, MSG_NOSIGNAL)) > 0)
        *at = (*at + (size_t)n) % len;
    assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* One connection pipelines requests for tiny answers (`--respond ack`) and
 * reads none. Each answer owed holds some 300 bytes of serve's memory
 * beyond its ~100: counting its bytes alone, limits.max_owed_bytes held
 * back a connection only once serve had grown 4x the limit. At every scrape
 * the bytes owed count at least that memory for every answer owed, serve's
 * growth is within what they count (and a little more), and within 2x the
 * limit (not timed: until it holds the connection back at the limit, with
 * the answers built). */
static void test_tiny_pipelined_answers_count_their_memory(void **state)
{
    upstream_world *w = *state;
    server_write_config_keys(
        w->sw->cfg,
        json_pack("{s:{s:i,s:i},s:o}", "limits", "header_timeout_ms", 60000,
                  "max_owed_bytes", TINY_LIMIT, "plugins", server_plugins(NULL, NULL)));
    /* No run database (the config's nor --run): no runner, whose own
     * memory grows with the events. */
    json_t *doc = json_load_file(w->sw->cfg, 0, NULL);
    assert_non_null(doc);
    json_object_del(doc, "run");
    assert_int_equal(json_dump_file(doc, w->sw->cfg, 0), 0);
    json_decref(doc);
    const char *args[] = {"--config", w->sw->cfg, "--listen", "127.0.0.1:0",
                          "--log",    w->sw->log, NULL};
    w->sw->srv = server_start(args);
    long long base = rss_of(w->sw->srv.pid);
    int fd = reluctant_client(w->sw->srv.port, 4 << 10);
    assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    static const char req[] = "POST /payments HTTP/1.1\r\nHost: t\r\n"
                              "Content-Length: 2\r\n\r\n{}";
    char block[256 * (sizeof(req) - 1)];
    for (size_t i = 0; i < sizeof(block); i += sizeof(req) - 1)
        memcpy(block + i, req, sizeof(req) - 1);
    size_t at = 0;
    long long answers = 0, owed = 0, held = 0, growth = 0;
    time_t until = time(NULL) + 120;
    for (;;) {
        send_what_fits(fd, block, sizeof(block), &at);
        answers = metric(w, "understudy_answers_owed");
        owed = metric(w, "understudy_answer_bytes_owed");
        held = metric(w, "understudy_connections_held_back");
        growth = rss_of(w->sw->srv.pid) - base;
#ifdef UST_TEST_SANITIZED /* RSS is shadow and quarantine there */
        growth = 0;
#endif
        assert_true(answers >= 0 && owed >= 0);
        if (owed < answers * (long long)(HELD_AT_LEAST + TINY_AT_LEAST))
            fail_msg("%lld answers owed counted as %lld bytes", answers, owed);
        /* What is counted covers what serve holds for the answers (with
         * room for what it holds besides, the log's cache and buffers). */
        if (growth > owed + TINY_LIMIT / 2 || growth > 2LL * TINY_LIMIT)
            fail_msg("serve grew %lld KiB owing %lld answers (%lld KiB counted)",
                     growth >> 10, answers, owed >> 10);
        /* Held back at the limit, with (about) every answer built: as many
         * as the limit holds of answers four times the least. */
        if (held == 1 && owed >= TINY_LIMIT &&
            answers >= TINY_LIMIT / (UST__ANSWER_OVERHEAD + 4 * TINY_AT_LEAST))
            break;
        if (time(NULL) >= until)
            fail_msg("held back %lld, %lld answers owed in %lld bytes", held, answers,
                     owed);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    print_message("%lld answers owed, %lld bytes counted, serve grew %lld KiB: "
                  "%lld bytes an answer\n",
                  answers, owed, growth >> 10, answers ? growth / answers : 0);
    /* The client goes: nothing is owed any more. */
    close(fd);
    until = time(NULL) + 60;
    while (metric(w, "understudy_answers_owed") != 0 ||
           metric(w, "understudy_answer_bytes_owed") != 0) {
        if (time(NULL) >= until)
            fail_msg("answers still owed to a client gone");
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    serve_world_stop(w->sw);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_answer_synced_before_relay),
        T(test_clean_stop_leaves_no_answers_wal),
        T(test_set_cookie_masked_where_stored),
        T(test_pipelined_answers_are_bounded),
        T(test_tiny_pipelined_answers_count_their_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
