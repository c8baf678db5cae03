/* Loading a plugin and calling it. Everything a plugin hands back is checked
 * and copied before the host uses it: a failing plugin, garbage, or an
 * oversize body becomes an `error` decision, and its store writes are dropped. */
#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include "plugin/child.h"
#include "plugin/wire.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The plugin table as ABI 1.0 had it: a plugin built then has no flags. */
#define API_1_0_SIZE offsetof(ust_plugin_api, flags)

struct ust_plugin_ctx {
    ust_plugin *plugin;
    int64_t now_us;
    char *error; /* set_error text, ust_malloc'd */
};

struct ust_plugin {
    void *handle;
    const ust_plugin_api *api;
    void *instance;
    char *path, *ns;
    char sha256[UST_SHA256_HEX_LEN + 1];
    ust_store *store;
    ust__child *child; /* out of process: decide goes over the protocol */
};

static void host_log(ust_plugin_ctx *ctx, int level, const char *msg)
{
    /* Plugins speak through the host: warnings and errors reach the operator
     * with the plugin's name; debug chatter does not. */
    if (level >= UST_LOG_WARN && msg != NULL)
        fprintf(stderr, "understudy: plugin %s: %s\n",
                ctx && ctx->plugin ? ctx->plugin->api->name : "?", msg);
}

static void host_set_error(ust_plugin_ctx *ctx, const char *msg)
{
    if (ctx == NULL)
        return;
    ust_free(ctx->error);
    ctx->error = ust_strdup(msg ? msg : "unspecified error");
}

static int64_t host_now_us(ust_plugin_ctx *ctx)
{
    return ctx->now_us;
}

static int host_state_get(ust_plugin_ctx *ctx, const char *key, const char **value)
{
    *value = NULL;
    return key ? ust_store_get(ctx->plugin->store, key, value) : UST_EINVAL;
}

static int host_state_put(ust_plugin_ctx *ctx, const char *key, const char *value)
{
    return ust_store_put(ctx->plugin->store, key, value);
}

static int host_state_delete(ust_plugin_ctx *ctx, const char *key)
{
    return ust_store_delete(ctx->plugin->store, key);
}

static int host_state_claim(ust_plugin_ctx *ctx, const char *key, const char *value)
{
    return ust_store_claim(ctx->plugin->store, key, value);
}

static const ust_host_api host_api = {
    .size = sizeof(ust_host_api),
    .abi_major = UST_PLUGIN_ABI_MAJOR,
    .abi_minor = UST_PLUGIN_ABI_MINOR,
    .alloc = ust_malloc,
    .free = ust_free,
    .strdup = ust_strdup,
    .log = host_log,
    .set_error = host_set_error,
    .now_us = host_now_us,
    .state_get = host_state_get,
    .state_put = host_state_put,
    .state_delete = host_state_delete,
    .state_claim = host_state_claim,
};

void ust_plugin_unload(ust_plugin *p)
{
    if (p == NULL)
        return;
    ust__child_close(p->child);
    if (p->instance != NULL && p->api->destroy != NULL)
        p->api->destroy(p->instance);
    if (p->handle != NULL)
        dlclose(p->handle);
    ust_free(p->path);
    ust_free(p->ns);
    ust_free(p);
}

/* hash_file: the file's SHA-256 for the run's identity (the host's side);
 * a forked shim skips it, which keeps OpenSSL, whose locks other threads of
 * the host may have held at the fork, out of the child's start. */
static int load(const char *path, const char *ns, json_t *config, ust_store *store,
                int hash_file, ust_plugin **out, char **err)
{
    *out = NULL;
    ust_plugin *p = ust_calloc(1, sizeof(*p));
    if (p == NULL || (p->path = ust_strdup(path)) == NULL ||
        (p->ns = ust_strdup(ns)) == NULL) {
        ust_plugin_unload(p);
        return UST_ENOMEM;
    }
    p->store = store;
    int rc = 0;
    if (hash_file && ust_sha256_file_hex(path, p->sha256) != 0) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: cannot read plugin file", path);
        goto fail;
    }
    /* A name without a '/' would be looked up on the loader's search path,
     * not taken from the working directory as the file just hashed was. */
    char *here = strchr(path, '/') == NULL ? ust_sprintf("./%s", path) : NULL;
    p->handle = dlopen(here != NULL ? here : path, RTLD_NOW | RTLD_LOCAL);
    ust_free(here);
    if (p->handle == NULL) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: cannot load: %s", path, dlerror());
        goto fail;
    }
    ust_plugin_entry_fn entry =
        (ust_plugin_entry_fn)(uintptr_t)dlsym(p->handle, UST_PLUGIN_ENTRY_NAME);
    if (entry == NULL) {
        rc = ust_errf(err, UST_EPLUGIN,
                      "%s: no %s symbol: not an understudy plugin of ABI major %d",
                      path, UST_PLUGIN_ENTRY_NAME, UST_PLUGIN_ABI_MAJOR);
        goto fail;
    }
    const ust_plugin_api *api = entry(&host_api);
    if (api == NULL) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: the plugin refused this host (ABI %d.%d)",
                      path, UST_PLUGIN_ABI_MAJOR, UST_PLUGIN_ABI_MINOR);
        goto fail;
    }
    if (api->abi_major != UST_PLUGIN_ABI_MAJOR) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: plugin ABI major %u, host needs %d", path,
                      api->abi_major, UST_PLUGIN_ABI_MAJOR);
        goto fail;
    }
    if (api->size < API_1_0_SIZE || api->name == NULL || api->version == NULL ||
        api->create == NULL || api->decide == NULL || api->destroy == NULL) {
        rc = ust_errf(err, UST_EPLUGIN,
                      "%s: incomplete plugin table (name, version, create, decide and "
                      "destroy are required)",
                      path);
        goto fail;
    }
    p->api = api;
    char *cfg_text = ust__plugin_config_text(config);
    ust_plugin_ctx ctx = {.plugin = p};
    int crc = cfg_text ? api->create(&ctx, cfg_text, &p->instance) : -1;
    ust_free(cfg_text);
    if (crc != 0) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: create failed: %s", path,
                      ctx.error ? ctx.error : "no reason given");
        p->instance = NULL;
    }
    ust_free(ctx.error);
    if (rc != 0)
        goto fail;
    *out = p;
    return 0;
fail:
    ust_plugin_unload(p);
    return rc;
}

int ust_plugin_load(const char *path, const char *ns, json_t *config, ust_store *store,
                    ust_plugin **out, char **err)
{
    return load(path, ns, config, store, 1, out, err);
}

int ust__plugin_load_forked(const char *path, const char *ns, json_t *config,
                            ust_store *store, ust_plugin **out, char **err)
{
    return load(path, ns, config, store, 0, out, err);
}

void ust_plugin_discard(ust_plugin *p)
{
    if (p != NULL && p->child != NULL)
        ust__child_discard(p->child);
}

const char *ust_plugin_down(const ust_plugin *p)
{
    return p != NULL && p->child != NULL ? ust__child_down(p->child) : NULL;
}

int ust_plugin_wants_raw_request(const ust_plugin *p)
{
    if (p->child != NULL)
        return ust__child_wants_raw_request(p->child);
    int has_flags = p->api->size >= API_1_0_SIZE + sizeof(p->api->flags);
    return !(has_flags && (p->api->flags & UST_PLUGIN_NO_RAW_REQUEST));
}

const char *ust_plugin_name(const ust_plugin *p)
{
    return p->child ? ust__child_name(p->child) : p->api->name;
}

const char *ust_plugin_version(const ust_plugin *p)
{
    return p->child ? ust__child_version(p->child) : p->api->version;
}

static int open_plugin(const ust_plugin_config *pc, const char *path, const char *ns,
                       unsigned flags, ust_store *store, ust_plugin **out, char **err)
{
    if (path != NULL && !pc->isolate)
        return ust_plugin_load(path, ns, pc->config, store, out, err);
    if (path == NULL && pc->exec == NULL)
        return ust_errf(err, UST_EPLUGIN, "neither a path nor exec");
    ust_plugin *p = ust_calloc(1, sizeof(*p));
    if (p == NULL || (p->path = ust_strdup(path ? path : pc->exec[0])) == NULL ||
        (p->ns = ust_strdup(ns)) == NULL) {
        ust_plugin_unload(p);
        return UST_ENOMEM;
    }
    p->store = store;
    /* What identifies the code: the library, or the last argument of exec
     * that names a file (the script), else the command itself. A library
     * that cannot be read is refused here rather than by a forked child. */
    const char *file = path;
    for (int i = 0; file == NULL && pc->exec[i] != NULL; i++)
        if (pc->exec[i + 1] == NULL)
            file = pc->exec[i];
    /* A program's script is named from the folder it runs in (its config's). */
    char *in_dir = path == NULL && file[0] != '/' && pc->dir != NULL
                       ? ust_sprintf("%s/%s", pc->dir, file)
                       : NULL;
    int rc = 0;
    if (ust_sha256_file_hex(in_dir != NULL ? in_dir : file, p->sha256) != 0) {
        if (path != NULL)
            rc = ust_errf(err, UST_EPLUGIN, "%s: cannot read plugin file", path);
        else
            ust_sha256_hex(file, strlen(file), p->sha256);
    }
    ust_free(in_dir);
    if (rc == 0)
        rc = ust__child_open(pc, path, ns, flags, store, &p->child, err);
    if (rc != 0) {
        ust_plugin_unload(p);
        return rc;
    }
    *out = p;
    return 0;
}

int ust_plugin_open(const ust_plugin_config *pc, const char *path, const char *ns,
                    unsigned flags, ust_store *store, ust_plugin **out, char **err)
{
    *out = NULL;
    if (path == NULL)
        path = pc->path;
    char *why = NULL;
    int rc = open_plugin(pc, path, ns, flags, store, out, &why);
    /* Which plugin of the config, then the cause (which names the file). */
    if (rc != 0)
        ust_errf(err, rc, "plugins.%s: cannot start: %s", ns,
                 why ? why : ust_strerror(rc));
    ust_free(why);
    return rc;
}

const char *ust_plugin_file_sha256(const ust_plugin *p)
{
    return p->sha256;
}

static void event_for_plugin(const ust_event *ev, const ust_request *req,
                             ust_plugin_event *pe, ust_plugin_header *hdrs)
{
    memset(pe, 0, sizeof(*pe));
    pe->size = sizeof(*pe);
    pe->seq = ev->seq;
    pe->received_at_us = ev->received_at_us;
    pe->route_kind =
        ev->route ? (ev->route->kind == UST_ROUTE_API ? "api" : "webhook") : NULL;
    pe->route = ev->route ? ev->route->path : NULL;
    pe->provider = ev->provider;
    pe->event_id = ev->event_id;
    pe->event_type = ev->event_type;
    pe->transaction_id = ev->transaction_id;
    pe->target_status = ev->target_status;
    pe->amount = ev->amount;
    pe->has_amount = ev->has_amount;
    pe->currency = ev->currency;
    pe->intent = ev->intent;
    pe->idempotency_key = ev->idem_key;
    pe->tenant = ev->tenant;
    pe->request_sha256 = ev->request_sha256;
    pe->body = req->body;
    pe->body_len = req->body_len;
    for (size_t i = 0; i < req->n_headers; i++) {
        hdrs[i].name = req->headers[i].name;
        hdrs[i].value = req->headers[i].value;
    }
    pe->headers = hdrs;
    pe->n_headers = req->n_headers;
}

static int text_ok(const char *s)
{
    return s == NULL || ust_utf8_valid((const unsigned char *)s, strlen(s));
}

/* A response header goes to the socket as "name: value\r\n" (--respond
 * legacy): a name must be a token (RFC 9110 5.1, 5.6.2) and a value must
 * hold no CR or LF, or the plugin writes headers of its own choosing. (A
 * NUL ends the C string; over the child protocol, JSON's \u0000 is refused
 * by the parser.) */
static int header_name_ok(const char *n)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    for (const unsigned char *p = (const unsigned char *)n; *p; p++)
        if (*p > 0x7f || !(isalnum(*p) || strchr(tchar, *p) != NULL))
            return 0;
    return *n != '\0';
}

static int header_value_ok(const char *v)
{
    return strpbrk(v, "\r\n") == NULL;
}

/* The cause when n names a header the harness writes itself (the framing of
 * the answer, RFC 9112 6, or a hop-by-hop header, RFC 9110 7.6.1), any case;
 * NULL for one a plugin may send. */
static const char *owned_header(const char *n)
{
    static const char *const owned[][2] = {
        {"Content-Length",
         "Content-Length is a framing or hop-by-hop header the harness owns"},
        {"Transfer-Encoding",
         "Transfer-Encoding is a framing or hop-by-hop header the harness owns"},
        {"Connection", "Connection is a framing or hop-by-hop header the harness owns"},
        {"Keep-Alive", "Keep-Alive is a framing or hop-by-hop header the harness owns"},
        {"Upgrade", "Upgrade is a framing or hop-by-hop header the harness owns"},
        {"TE", "TE is a framing or hop-by-hop header the harness owns"},
        {"Trailer", "Trailer is a framing or hop-by-hop header the harness owns"},
        {"Proxy-Connection",
         "Proxy-Connection is a framing or hop-by-hop header the harness owns"},
    };
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (strcasecmp(n, owned[i][0]) == 0)
            return owned[i][1];
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The canonical text of a response body (sorted keys, compact), or NULL
 * when it is not JSON. Plugins answer with few distinct bodies, so the last
 * ones seen are remembered: parsing and dumping each body again was a tenth
 * of replay's time. The canonical text is a function of the text alone, so
 * the memo changes nothing but the time. (A lock, not thread-local slots:
 * a plugin's link thread ends, and its slots would leak.) */
#define BODY_MEMO 64
#define BODY_MEMO_MAX 512 /* longer bodies are not remembered */

/* The memo's lock. Isolated plugins are forked from a process whose other
 * threads may hold it at that moment, and a forked shim uses it: it is taken
 * around every fork, so the child never starts with it held. */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static void memo_lock_take(void)
{
    pthread_mutex_lock(&memo_lock);
}
static void memo_lock_give(void)
{
    pthread_mutex_unlock(&memo_lock);
}
static void memo_lock_guard_forks(void)
{
    pthread_atfork(memo_lock_take, memo_lock_give, memo_lock_give);
}

static char *canonical_body(const char *text)
{
    static pthread_once_t guarded = PTHREAD_ONCE_INIT;
    pthread_once(&guarded, memo_lock_guard_forks);
    static struct {
        char *text, *canon;
    } memo[BODY_MEMO];
    size_t len = strlen(text);
    size_t slot = 0;
    if (len <= BODY_MEMO_MAX) {
        slot = ust_fnv1a64(text, len) % BODY_MEMO;
        pthread_mutex_lock(&memo_lock);
        char *hit = memo[slot].text != NULL && strcmp(memo[slot].text, text) == 0
                        ? ust_strdup(memo[slot].canon)
                        : NULL;
        pthread_mutex_unlock(&memo_lock);
        if (hit != NULL)
            return hit;
    }
    json_error_t jerr;
    json_t *body = ust_json_loads(text, JSON_DECODE_ANY, &jerr);
    if (body == NULL)
        return NULL;
    char *dumped = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(body);
    char *canon = ust_strdup(dumped);
    ust_free(dumped);
    if (canon != NULL && len <= BODY_MEMO_MAX) {
        char *t = ust_strdup(text), *c = ust_strdup(canon);
        if (t != NULL && c != NULL) {
            pthread_mutex_lock(&memo_lock);
            char *old_t = memo[slot].text, *old_c = memo[slot].canon;
            memo[slot].text = t;
            memo[slot].canon = c;
            pthread_mutex_unlock(&memo_lock);
            t = old_t, c = old_c;
        }
        ust_free(t);
        ust_free(c);
    }
    return canon;
}

/* Checks what the plugin returned and takes it into d (its strings move,
 * they are host-allocated); NULL when all is well, else a static
 * description of what is wrong. */
const char *ust__adopt(ust_plugin_decision *pd, ust_decision *d)
{
    if (pd->verdict < UST_VERDICT_APPLIED || pd->verdict >= UST_VERDICT_ERROR)
        return "verdict out of range";
    if (pd->http_status < 100 || pd->http_status > 599)
        return "HTTP status out of range";
    if (pd->http_status < 200)
        return "a 1xx status is interim, not an answer";
    if (!text_ok(pd->entity) || !text_ok(pd->state_before) ||
        !text_ok(pd->state_after) || !text_ok(pd->reason))
        return "a string is not valid UTF-8";
    d->verdict = pd->verdict;
    d->http_status = pd->http_status;
    if (pd->response_body != NULL) {
        if (strlen(pd->response_body) > UST_PLUGIN_MAX_BODY)
            return "response body over the size limit";
        if ((d->body = canonical_body(pd->response_body)) == NULL)
            return "response body is not JSON";
    }
    if (pd->n_headers > 64 || (pd->n_headers > 0 && pd->headers == NULL))
        return "too many or missing response headers";
    if (pd->n_headers > 0) {
        d->headers = json_object();
        for (size_t i = 0; i < pd->n_headers; i++) {
            const char *n = pd->headers[i].name, *v = pd->headers[i].value;
            if (n == NULL || v == NULL || *n == '\0' || !text_ok(n) || !text_ok(v))
                return "malformed response header";
            if (!header_name_ok(n))
                return "a response header name is not an HTTP token";
            if (!header_value_ok(v))
                return "a response header value holds CR or LF";
            const char *owned = owned_header(n);
            if (owned != NULL)
                return owned;
            char lower[128];
            size_t len = strlen(n);
            if (len >= sizeof(lower))
                return "response header name too long";
            for (size_t k = 0; k <= len; k++)
                lower[k] = (char)tolower((unsigned char)n[k]);
            json_object_set_new(d->headers, lower, json_string(v));
        }
    }
    if (pd->n_flags > 32 || (pd->n_flags > 0 && pd->flags == NULL))
        return "too many or missing flags";
    if (pd->n_flags > 0) {
        d->flags = ust_calloc(pd->n_flags, sizeof(char *));
        if (d->flags == NULL)
            return "out of memory";
        for (size_t i = 0; i < pd->n_flags; i++) {
            if (pd->flags[i] == NULL || !text_ok(pd->flags[i]))
                return "malformed flag";
            d->flags[d->n_flags++] = ust_strdup(pd->flags[i]);
        }
        qsort(d->flags, d->n_flags, sizeof(char *), cmp_str);
    }
    d->entity = pd->entity, pd->entity = NULL;
    d->state_before = pd->state_before, pd->state_before = NULL;
    d->state_after = pd->state_after, pd->state_after = NULL;
    d->reason = pd->reason, pd->reason = NULL;
    return NULL;
}

static void release(ust_plugin_decision *pd)
{
    ust_free(pd->response_body);
    for (size_t i = 0; pd->headers && i < pd->n_headers; i++) {
        ust_free((void *)pd->headers[i].name);
        ust_free((void *)pd->headers[i].value);
    }
    ust_free(pd->headers);
    ust_free(pd->entity);
    ust_free(pd->state_before);
    ust_free(pd->state_after);
    for (size_t i = 0; pd->flags && i < pd->n_flags; i++)
        ust_free(pd->flags[i]);
    ust_free(pd->flags);
    ust_free(pd->reason);
}

static void make_error(ust_decision *d, const char *why, const char *detail)
{
    ust_decision_clear(d);
    d->verdict = UST_VERDICT_ERROR;
    d->http_status = 500;
    d->error = detail ? ust_sprintf("%s: %s", why, detail) : ust_strdup(why);
}

void ust_plugin_decide(ust_plugin *p, const ust_event *ev, const ust_request *req,
                       ust_decision *out)
{
    if (p->child != NULL) {
        ust__child_decide(p->child, ev, req, out);
        return;
    }
    memset(out, 0, sizeof(*out));
    ust_plugin_header stack_hdrs[32];
    ust_plugin_header *hdrs =
        req->n_headers <= 32 ? stack_hdrs : ust_calloc(req->n_headers, sizeof(*hdrs));
    if (hdrs == NULL) {
        make_error(out, "out of memory", NULL);
        ust__plugin_fault(p->ns, UST_FAULT_INTERNAL);
        return;
    }
    ust_plugin_event pe;
    event_for_plugin(ev, req, &pe, hdrs);
    ust_plugin_decision pd;
    memset(&pd, 0, sizeof(pd));
    pd.size = sizeof(pd);
    ust_plugin_ctx ctx = {.plugin = p, .now_us = ev->received_at_us};
    ust_store_begin_call(p->store, p->ns);
    int rc = p->api->decide(p->instance, &ctx, &pe, &pd);
    const char *bad = NULL;
    if (rc != 0) {
        make_error(out, "decide failed", ctx.error ? ctx.error : "no reason given");
        ust__plugin_fault(p->ns, UST_FAULT_DECIDE);
    } else if ((bad = ust__adopt(&pd, out)) != NULL) {
        make_error(out, "plugin returned garbage", bad);
        ust__plugin_fault(p->ns, UST_FAULT_BAD_DECISION);
    }
    release(&pd);
    ust_free(ctx.error);
    if (hdrs != stack_hdrs)
        ust_free(hdrs);
    if (ust_store_end_call(p->store, out->verdict != UST_VERDICT_ERROR) != 0) {
        make_error(out, "state store", "out of memory");
        ust__plugin_fault(p->ns, UST_FAULT_INTERNAL);
    }
}

void ust_plugin_decide_batch(ust_plugin *p, const ust_event *const *evs,
                             const ust_request *const *reqs, size_t n,
                             ust_decision **outs)
{
    if (p->child != NULL) {
        ust__child_decide_batch(p->child, evs, reqs, n, outs);
        return;
    }
    for (size_t i = 0; i < n; i++)
        ust_plugin_decide(p, evs[i], reqs[i], outs[i]);
}

void ust_plugin_batch_start(ust_plugin *p, ust_plugin_batch *b)
{
    if (p->child != NULL)
        ust__child_batch_start(p->child, b);
}

void ust_plugin_batch_finish(ust_plugin *p, ust_plugin_batch *b, ust_decision **outs)
{
    if (p->child != NULL) {
        ust__child_batch_finish(p->child, b, outs);
        return;
    }
    for (size_t i = 0; i < b->n; i++)
        ust_plugin_decide(p, b->evs[i], b->reqs[i], outs[i]);
}
