/* The in-process kind: a .so loaded into the host and called directly.
 * Everything a plugin hands back is checked and copied before the host uses
 * it: a failing plugin, garbage, or an oversize body becomes an `error`
 * decision, and its store writes are dropped. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/request.h>

#include "plugin/faults.h"
#include "plugin/event_abi.h"
#include "plugin/kind.h"
#include "plugin/wire.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The plugin table as ABI 1.0 had it: a plugin built then has no flags. */
#define API_1_0_SIZE offsetof(ust_plugin_api, flags)

typedef struct inproc inproc;

struct ust_plugin_ctx {
    inproc *plugin;
    int64_t now_us;
    char *error; /* set_error text, ust_malloc'd */
};

struct inproc {
    void *handle;
    const ust_plugin_api *api;
    void *instance;
    char *ns;
    ust_store *store;
    ust_log_fn log; /* or NULL */
    void *log_ctx;
    ust__body_memo memo;
    ust_plugin_counters *counters; /* the config's */
};

static void host_log(ust_plugin_ctx *ctx, int level, const char *msg)
{
    /* Plugins speak through the host, which names them; the caller's
     * callback decides what reaches the operator. */
    inproc *p = ctx ? ctx->plugin : NULL;
    if (p == NULL || p->log == NULL || msg == NULL)
        return;
    char *line = ust_sprintf("plugin %s: %s", p->api->name, msg);
    if (line != NULL)
        p->log(p->log_ctx, level, line);
    ust_free(line);
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

static void inproc_close(void *impl)
{
    inproc *p = impl;
    if (p == NULL)
        return;
    if (p->instance != NULL && p->api->destroy != NULL)
        p->api->destroy(p->instance);
    if (p->handle != NULL)
        dlclose(p->handle);
    ust__body_memo_free(&p->memo);
    ust_free(p->ns);
    ust_free(p);
}

/* dlopen of st->path, its entry and ABI checked, then create. The identity
 * is the file's SHA-256 (the shim, whose host has hashed it, skips that). */
static int inproc_open(const ust__plugin_start *st, void **impl,
                       char id[UST_SHA256_HEX_LEN + 1], char **err)
{
    *impl = NULL;
    const char *path = st->path;
    inproc *p = ust_calloc(1, sizeof(*p));
    if (p == NULL || (p->ns = ust_strdup(st->ns)) == NULL) {
        inproc_close(p);
        return UST_ENOMEM;
    }
    p->store = st->store;
    p->log = st->pc->log;
    p->log_ctx = st->pc->log_ctx;
    p->counters = st->pc->counters;
    int rc = 0;
    if (!st->no_identity && ust_sha256_file_hex(path, id) != 0) {
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
    char *cfg_text = ust__plugin_config_text(st->pc->config);
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
    *impl = p;
    return 0;
fail:
    inproc_close(p);
    return rc;
}

static int inproc_wants_raw_request(const void *impl)
{
    const inproc *p = impl;
    int has_flags = p->api->size >= API_1_0_SIZE + sizeof(p->api->flags);
    return !(has_flags && (p->api->flags & UST_PLUGIN_NO_RAW_REQUEST));
}

static const char *inproc_name(const void *impl)
{
    return ((const inproc *)impl)->api->name;
}

static const char *inproc_version(const void *impl)
{
    return ((const inproc *)impl)->api->version;
}

static int text_ok(const char *s)
{
    return s == NULL || ust_utf8_valid((const unsigned char *)s, strlen(s));
}

/* A response header goes to the socket as "name: value\r\n" (--respond
 * legacy, --respond upstream): a name must be a token (RFC 9110 5.1, 5.6.2)
 * and a value must hold no CR or LF, or the one who answers writes headers
 * of its own choosing. (A NUL ends the C string; over the child protocol,
 * JSON's \u0000 is refused by the parser, and an answer's head with one is
 * refused as it is read.) The token rule is request.h's, one for every
 * header the harness reads or writes. */
const char *ust__header_refusal(const char *n, const char *v)
{
    if (!ust_http_token(n, strlen(n)))
        return "a response header name is not an HTTP token";
    if (strpbrk(v, "\r\n") != NULL)
        return "a response header value holds CR or LF";
    return NULL;
}

const char *ust__status_refusal(int status)
{
    if (status < 100 || status > 599)
        return "HTTP status out of range";
    if (status < 200)
        return "a 1xx status is interim, not an answer";
    return NULL;
}

/* The cause when n names a header the harness writes itself (the framing of
 * the answer, RFC 9112 6, or a hop-by-hop header, RFC 9110 7.6.1), any case;
 * NULL for one a plugin may send. */
const char *ust__owned_header(const char *n)
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
    for (size_t i = 0; i < UST_ARRAY_SIZE(owned); i++)
        if (strcasecmp(n, owned[i][0]) == 0)
            return owned[i][1];
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The canonical text of a response body (sorted keys, compact), or NULL
 * when it is not JSON, from the plugin's memo when it is there (see
 * ust__body_memo). */
#define BODY_MEMO_MAX 512 /* longer bodies are not remembered */

void ust__body_memo_free(ust__body_memo *m)
{
    for (size_t i = 0; i < UST__BODY_MEMO; i++) {
        ust_free(m->slot[i].text);
        ust_free(m->slot[i].canon);
    }
    memset(m, 0, sizeof(*m));
}

static char *canonical_body(const char *text, ust__body_memo *memo)
{
    size_t len = strlen(text);
    if (len > BODY_MEMO_MAX)
        memo = NULL;
    size_t slot = memo != NULL ? ust_fnv1a64(text, len) % UST__BODY_MEMO : 0;
    if (memo != NULL && memo->slot[slot].text != NULL &&
        strcmp(memo->slot[slot].text, text) == 0)
        return ust_strdup(memo->slot[slot].canon);
    json_error_t jerr;
    json_t *body = ust_json_loads(text, JSON_DECODE_ANY, &jerr);
    if (body == NULL)
        return NULL;
    char *dumped = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(body);
    char *canon = ust_strdup(dumped);
    ust_free(dumped);
    if (canon != NULL && memo != NULL) {
        char *t = ust_strdup(text), *c = ust_strdup(canon);
        if (t != NULL && c != NULL) {
            ust_free(memo->slot[slot].text);
            ust_free(memo->slot[slot].canon);
            memo->slot[slot].text = t;
            memo->slot[slot].canon = c;
        } else {
            ust_free(t);
            ust_free(c);
        }
    }
    return canon;
}

/* Checks what the plugin returned and takes it into d (its strings move,
 * they are host-allocated); NULL when all is well, else a static
 * description of what is wrong. */
const char *ust__adopt(ust_plugin_decision *pd, ust_decision *d, ust__body_memo *memo)
{
    if (pd->verdict < UST_VERDICT_APPLIED || pd->verdict >= UST_VERDICT_ERROR)
        return "verdict out of range";
    const char *bad = ust__status_refusal(pd->http_status);
    if (bad != NULL)
        return bad;
    if (!text_ok(pd->entity) || !text_ok(pd->state_before) ||
        !text_ok(pd->state_after) || !text_ok(pd->reason))
        return "a string is not valid UTF-8";
    d->verdict = pd->verdict;
    d->http_status = pd->http_status;
    if (pd->response_body != NULL) {
        if (strlen(pd->response_body) > UST_PLUGIN_MAX_BODY)
            return "response body over the size limit";
        if ((d->body = canonical_body(pd->response_body, memo)) == NULL)
            return "response body is not JSON";
    }
    if (pd->n_headers > UST__DECISION_MAX_HEADERS ||
        (pd->n_headers > 0 && pd->headers == NULL))
        return "too many or missing response headers";
    if (pd->n_headers > 0) {
        d->headers = json_object();
        for (size_t i = 0; i < pd->n_headers; i++) {
            const char *n = pd->headers[i].name, *v = pd->headers[i].value;
            if (n == NULL || v == NULL || *n == '\0' || !text_ok(n) || !text_ok(v))
                return "malformed response header";
            if ((bad = ust__header_refusal(n, v)) != NULL)
                return bad;
            const char *owned = ust__owned_header(n);
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
    if (pd->n_flags > UST__DECISION_MAX_FLAGS || (pd->n_flags > 0 && pd->flags == NULL))
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

static void inproc_decide(void *impl, const ust_event *ev, const ust_request *req,
                          ust_decision *out)
{
    inproc *p = impl;
    memset(out, 0, sizeof(*out));
    ust_plugin_header stack_hdrs[32];
    ust_plugin_header *hdrs =
        req->n_headers <= 32 ? stack_hdrs : ust_calloc(req->n_headers, sizeof(*hdrs));
    if (hdrs == NULL) {
        ust__decision_error(out, 500, "out of memory", NULL);
        ust__plugin_fault(p->counters, p->ns, UST_FAULT_INTERNAL);
        return;
    }
    ust_plugin_event pe;
    ust__plugin_event_from(ev, req, &pe, hdrs);
    ust_plugin_decision pd;
    memset(&pd, 0, sizeof(pd));
    pd.size = sizeof(pd);
    ust_plugin_ctx ctx = {.plugin = p, .now_us = ev->received_at_us};
    ust_store_begin_call(p->store, p->ns);
    int rc = p->api->decide(p->instance, &ctx, &pe, &pd);
    const char *bad = NULL;
    if (rc != 0) {
        ust__decision_error(out, 500, "decide failed",
                            ctx.error ? ctx.error : "no reason given");
        ust__plugin_fault(p->counters, p->ns, UST_FAULT_DECIDE);
    } else if ((bad = ust__adopt(&pd, out, &p->memo)) != NULL) {
        ust__decision_error(out, 500, "plugin returned garbage", bad);
        ust__plugin_fault(p->counters, p->ns, UST_FAULT_BAD_DECISION);
    }
    release(&pd);
    ust_free(ctx.error);
    if (hdrs != stack_hdrs)
        ust_free(hdrs);
    if (ust_store_end_call(p->store, out->verdict != UST_VERDICT_ERROR) != 0) {
        ust__decision_error(out, 500, "state store", "out of memory");
        ust__plugin_fault(p->counters, p->ns, UST_FAULT_INTERNAL);
    }
}

/* Called directly, one event at a time: nothing to do ahead of a batch,
 * nothing to forget, never down. */
const ust__plugin_kind ust__plugin_kind_inproc = {
    UST__PLUGIN_KIND_REQUIRED(inproc),
};
