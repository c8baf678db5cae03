/* A plugin that misbehaves in one way, chosen at build time (MISBEHAVE_*)
 * (or is merely old: ABI_1_0, a table from before it grew),
 * so the tests can check that the host refuses it or turns its answers into
 * `error` decisions without crashing. Every other event it answers sanely,
 * so the tests also see that one bad answer does not poison the next. */
#include <understudy/plugin.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ust_host_api *host;

#if defined(MISBEHAVE_SEGV_EVERY_100) || defined(MISBEHAVE_SLEEP) ||                   \
    defined(MISBEHAVE_STDOUT_GARBAGE) || defined(MISBEHAVE_EXIT_AT_START) ||           \
    defined(MISBEHAVE_CLOSE_STDOUT) || defined(MISBEHAVE_HUGE_LINE) ||                 \
    defined(MISBEHAVE_FORK_GRANDCHILD) || defined(MISBEHAVE_EXIT_ON_RESTART)
#include <signal.h>
#include <unistd.h>
#endif

#if defined(MISBEHAVE_BLOCK) || defined(MISBEHAVE_ENV_DUMP) ||                         \
    defined(MISBEHAVE_EXIT_ON_RESTART) || defined(MISBEHAVE_SLOW) ||                   \
    defined(MISBEHAVE_HOST_MEMORY)
#include <fcntl.h>
#include <unistd.h>
/* The string member `key` of the config text (no escapes), into buf. */
static void config_string(const char *config_json, const char *key, char *buf,
                          size_t cap)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\":\"", key);
    const char *at = strstr(config_json, quoted);
    buf[0] = '\0';
    if (at != NULL) {
        at += strlen(quoted);
        size_t n = strcspn(at, "\"");
        if (n >= cap)
            n = cap - 1;
        memcpy(buf, at, n);
        buf[n] = '\0';
    }
}
#endif

#if defined(MISBEHAVE_BLOCK) || defined(MISBEHAVE_EXIT_ON_RESTART) ||                  \
    defined(MISBEHAVE_SLOW)
/* The file its config names: BLOCK blocks every decide until its
 * "unblock_file" exists (a candidate that hangs, for as long as the test
 * wants); EXIT_ON_RESTART creates its "marker_file" at its first start,
 * crashes on its first event and exits at every later start (a candidate
 * that started once and cannot start again); SLOW sleeps 50 ms a decide
 * while its "slow_file" exists. */
#if defined(MISBEHAVE_BLOCK)
#define CONFIG_FILE_KEY "unblock_file"
#elif defined(MISBEHAVE_EXIT_ON_RESTART)
#define CONFIG_FILE_KEY "marker_file"
#else
#define CONFIG_FILE_KEY "slow_file"
#endif
static char config_file[512];
#endif

#ifdef MISBEHAVE_ENV_DUMP
/* Writes its environment, a variable a line, to the file named in its
 * config: what a plugin's process can read. */
extern char **environ;
static void dump_env(const char *config_json)
{
    char path[512];
    config_string(config_json, "env_file", path, sizeof(path));
    FILE *f = fopen(path, "w");
    for (char **e = environ; f != NULL && *e != NULL; e++)
        fprintf(f, "%s\n", *e);
    if (f != NULL)
        fclose(f);
}
#endif

#ifdef MISBEHAVE_HOST_MEMORY
/* Reads what its config says the host holds in memory at "address" (a
 * number), through /proc/self/mem, and writes to "probe_file" the binary its
 * process runs and what it found there: a plugin in a fork of the host would
 * read the host's memory, one in a process of its own cannot. */
#include <stdint.h>
static void probe_host(const char *config_json)
{
    char path[512], address[64], exe[512] = "", seen[64] = "";
    config_string(config_json, "probe_file", path, sizeof(path));
    config_string(config_json, "address", address, sizeof(address));
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    int mem = open("/proc/self/mem", O_RDONLY);
    uintptr_t at = (uintptr_t)strtoull(address, NULL, 0);
    ssize_t got = mem >= 0 ? pread(mem, seen, sizeof(seen) - 1, (off_t)at) : -1;
    seen[got > 0 ? got : 0] = '\0';
    for (ssize_t i = 0; i < got; i++)
        if (seen[i] < ' ' || seen[i] > '~')
            seen[i] = '.'; /* one line, whatever was there */
    if (mem >= 0)
        close(mem);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%s\n%s\n", exe, seen);
        fclose(f);
    }
}
#endif

static int create(ust_plugin_ctx *ctx, const char *config_json, void **instance)
{
    (void)config_json;
#ifdef MISBEHAVE_EXIT_AT_START
    _exit(3); /* isolated, this ends the child before its hello */
#endif
#ifdef MISBEHAVE_CREATE_FAILS
    (void)instance;
    host->set_error(ctx, "refusing to start: no database configured");
    return -1;
#else
    (void)ctx;
#if defined(MISBEHAVE_BLOCK) || defined(MISBEHAVE_EXIT_ON_RESTART) ||                  \
    defined(MISBEHAVE_SLOW)
    config_string(config_json, CONFIG_FILE_KEY, config_file, sizeof(config_file));
#endif
#ifdef MISBEHAVE_ENV_DUMP
    dump_env(config_json);
#endif
#ifdef MISBEHAVE_HOST_MEMORY
    probe_host(config_json);
#endif
#ifdef MISBEHAVE_EXIT_ON_RESTART
    int fd = open(config_file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        _exit(3); /* started before: isolated, this ends the child before its hello */
    close(fd);
#endif
    *instance = (void *)&host;
    return 0;
#endif
}

static int decide(void *instance, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
                  ust_plugin_decision *out)
{
    (void)instance;
#ifdef MISBEHAVE_BLOCK
    while (access(config_file, F_OK) != 0)
        usleep(10000);
#endif
#ifdef MISBEHAVE_EXIT_ON_RESTART
    raise(SIGSEGV);
#endif
#ifdef MISBEHAVE_SLOW
    if (access(config_file, F_OK) == 0)
        usleep(50 * 1000);
#endif
#ifdef MISBEHAVE_SEGV_EVERY_100
    if (ev->seq % 100 == 0)
        raise(SIGSEGV);
#endif
#ifdef MISBEHAVE_SLEEP
    if (ev->seq % 50 == 0)
        sleep(3); /* far past the test's timeout_ms */
#endif
#ifdef MISBEHAVE_STDOUT_GARBAGE
    if (ev->seq % 20 == 0 && write(1, "garbage, not a protocol line\n", 29) != 29)
        return 1;
#endif
#ifdef MISBEHAVE_HUGE_LINE
    if (ev->seq % 120 == 0) { /* 5 MiB with no end of line */
        static char chunk[1 << 16];
        memset(chunk, 'x', sizeof(chunk));
        for (int i = 0; i < 80; i++)
            if (write(1, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
                return 1;
    }
#endif
#ifdef MISBEHAVE_CLOSE_STDOUT
    if (ev->seq % 60 == 0)
        close(1); /* and lives on: its answers go nowhere */
#endif
#ifdef MISBEHAVE_FORK_GRANDCHILD
    /* Event 1 starts a process of its own that sleeps on, holding the
     * child's stdout and stderr, and names it in the answer; event 2 ends
     * the child mid-event with status 3. */
    if (ev->seq == 1) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        char body[64];
        snprintf(body, sizeof(body), "{\"grandchild\":%d}", (int)pid);
        out->verdict = UST_VERDICT_APPLIED;
        out->http_status = 200;
        out->response_body = host->strdup(body);
        return 0;
    }
    if (ev->seq == 2)
        _exit(3);
#endif
#ifdef MISBEHAVE_GROW
    if (ev->seq % 80 == 0) { /* 96 MiB, touched and kept: a leak */
        static char *volatile leaked;
        size_t n = (size_t)96 << 20;
        char *leak = malloc(n);
        if (leak != NULL)
            memset(leak, 1, n);
        leaked = leak;
        (void)leaked;
    }
#endif
    const char *seen = NULL;
    int touched = host->state_get(ctx, "touched", &seen);
    /* Writes made before failing must not survive the failed call. */
    host->state_put(ctx, "touched", "yes");
    if (ev->seq % 2 == 1) {
#if defined(MISBEHAVE_DECIDE_ERROR)
        host->set_error(ctx, "database timeout");
        return 1;
#elif defined(MISBEHAVE_GARBAGE)
        out->verdict = (ust_verdict)99;
        out->http_status = 200;
        return 0;
#elif defined(MISBEHAVE_BAD_JSON)
        out->verdict = UST_VERDICT_APPLIED;
        out->http_status = 200;
        out->response_body = host->strdup("{\"received\": tru");
        return 0;
#elif defined(MISBEHAVE_OVERSIZE)
        size_t n = 1 << 20;
        char *body = host->alloc(n + 3);
        body[0] = '"';
        memset(body + 1, 'x', n);
        body[n + 1] = '"';
        body[n + 2] = '\0';
        out->verdict = UST_VERDICT_APPLIED;
        out->http_status = 200;
        out->response_body = body;
        return 0;
#elif defined(MISBEHAVE_HEADER_INJECTION)
        /* A header that would write another (seq 1, 5, ...), or a name
         * that is not a token (seq 3, 7, ...). */
        ust_plugin_header *h = host->alloc(sizeof(*h));
        h->name = host->strdup(ev->seq % 4 == 1 ? "X-Ok" : "X Bad:");
        h->value = host->strdup(ev->seq % 4 == 1 ? "1\r\nSet-Cookie: injected=1" : "1");
        out->headers = h;
        out->n_headers = 1;
        out->verdict = UST_VERDICT_APPLIED;
        out->http_status = 200;
        out->response_body = host->strdup("{}");
        return 0;
#elif defined(MISBEHAVE_FRAMING)
        /* Framing the harness owns, by seq: 1, a 204 with two lengths and
         * chunked; 3, an interim 101; 5 and 11, a hop-by-hop header in
         * lower and mixed case; 7, a 204 with a body, and 9 a 304 with
         * one (sane: the harness sends neither the body nor a length). */
        static const struct {
            int status;
            const char *name[2], *value[2];
        } framing[] = {
            {204, {"Content-Length", "Transfer-Encoding"}, {"0", "chunked"}},
            {101, {NULL, NULL}, {NULL, NULL}},
            {200, {"keep-alive", NULL}, {"timeout=5", NULL}},
            {204, {"X-Ok", NULL}, {"1", NULL}},
            {304, {NULL, NULL}, {NULL, NULL}},
            {200, {"PROXY-Connection", NULL}, {"keep-alive", NULL}},
        };
        size_t i = (size_t)(ev->seq / 2) % (sizeof(framing) / sizeof(framing[0]));
        size_t n = framing[i].name[0] == NULL ? 0 : framing[i].name[1] == NULL ? 1 : 2;
        if (n > 0) {
            ust_plugin_header *h = host->alloc(n * sizeof(*h));
            for (size_t k = 0; k < n; k++) {
                h[k].name = host->strdup(framing[i].name[k]);
                h[k].value = host->strdup(framing[i].value[k]);
            }
            out->headers = h;
            out->n_headers = n;
        }
        out->verdict = UST_VERDICT_APPLIED;
        out->http_status = framing[i].status;
        out->response_body = host->strdup("{\"x\":1}");
        return 0;
#endif
    }
    out->verdict = UST_VERDICT_APPLIED;
    out->http_status = 200;
    out->response_body = host->strdup(touched == 1 ? "{\"touched\":true}" : "{}");
    return 0;
}

static void destroy(void *instance)
{
    (void)instance;
}

static const ust_plugin_api api = {
#ifdef MISBEHAVE_ABI_1_0
    /* Built before the table grew: it ends before `flags`. */
    .size = offsetof(ust_plugin_api, flags),
#else
    .size = sizeof(ust_plugin_api),
#endif
#ifdef MISBEHAVE_WRONG_ABI
    .abi_major = UST_PLUGIN_ABI_MAJOR + 1,
#else
    .abi_major = UST_PLUGIN_ABI_MAJOR,
#endif
    .name = "misbehaving",
    .version = "0.0.1",
    .create = create,
    .decide = decide,
    .destroy = destroy,
#ifdef MISBEHAVE_ABI_1_0
    /* Past its size: a host must not read it. */
    .flags = UST_PLUGIN_NO_RAW_REQUEST,
#endif
};

#ifdef MISBEHAVE_NO_ENTRY
/* Exported under a name the host does not look for. */
UST_PLUGIN_EXPORT const ust_plugin_api *ust_plugin_entry_v0(const ust_host_api *h);
UST_PLUGIN_EXPORT const ust_plugin_api *ust_plugin_entry_v0(const ust_host_api *h)
#else
UST_PLUGIN_EXPORT const ust_plugin_api *UST_PLUGIN_ENTRY(const ust_host_api *h)
#endif
{
    host = h;
    return &api;
}
