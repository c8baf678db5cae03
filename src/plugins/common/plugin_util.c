/* Helpers shared by the reference plugins; see plugin_util.h. */
#include "plugin_util.h"

#include <jansson.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ust_host_api *pu_host;

/* A struct from the other side is usable when its size covers the field. */
#define PU_COVERS(s, type, field)                                                      \
    ((s)->size >= offsetof(type, field) + sizeof((s)->field))

int pu_bind_host(const ust_host_api *host)
{
    if (host == NULL || !PU_COVERS(host, ust_host_api, state_claim) ||
        host->abi_major != UST_PLUGIN_ABI_MAJOR)
        return -1;
    pu_host = host;
    return 0;
}

/* ---- the plugin --------------------------------------------------------- */

static int webhook_invalid(pu_call *c);
static int api_invalid(pu_call *c);

int pu_decide(void *instance, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
              ust_plugin_decision *out)
{
    pu_call c;
    switch (pu_begin(&c, ctx, ev, out)) {
    case PU_ROUTE_WEBHOOK:
        if (!webhook_invalid(&c))
            pu_plugin_routes.webhook(instance, &c);
        break;
    case PU_ROUTE_API:
        if (!api_invalid(&c))
            pu_plugin_routes.api(instance, &c);
        break;
    default:
        break;
    }
    return pu_finish(&c);
}

void pu_destroy(void *instance)
{
    free(instance);
}

UST_PLUGIN_EXPORT const ust_plugin_api *UST_PLUGIN_ENTRY(const ust_host_api *host)
{
    return pu_bind_host(host) == 0 ? &pu_plugin_api : NULL;
}

/* ---- config ------------------------------------------------------------ */

int pu_config_load(ust_plugin_ctx *ctx, const char *config_json,
                   const pu_config_key *keys, size_t n_keys)
{
    char msg[200];
    json_error_t jerr;
    json_t *root = json_loads(config_json != NULL ? config_json : "{}", 0, &jerr);
    if (root == NULL || !json_is_object(root)) {
        pu_host->set_error(ctx, "config: expected a JSON object");
        json_decref(root);
        return -1;
    }
    for (size_t i = 0; i < n_keys; i++) {
        json_t *v = json_object_get(root, keys[i].name);
        if (v == NULL) {
            *keys[i].out = keys[i].def;
            continue;
        }
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
        if (!json_is_integer(v) || n < keys[i].min || n > keys[i].max) {
            (void)snprintf(
                msg, sizeof msg, "config key %s: expected an integer from %lld to %lld",
                keys[i].name, (long long)keys[i].min, (long long)keys[i].max);
            pu_host->set_error(ctx, msg);
            json_decref(root);
            return -1;
        }
        *keys[i].out = n;
    }
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v)
    {
        size_t i = 0;
        while (i < n_keys && strcmp(keys[i].name, name) != 0)
            i++;
        if (i == n_keys) {
            (void)snprintf(msg, sizeof msg, "config key %s is not used by this plugin",
                           name);
            pu_host->log(ctx, UST_LOG_WARN, msg);
        }
    }
    json_decref(root);
    return 0;
}

/* ---- one decide call --------------------------------------------------- */

/* Scratch that did not fit in pu_call.mem; freed by pu_finish. */
struct pu_block {
    pu_block *next;
    char data[];
};

int pu_begin(pu_call *c, ust_plugin_ctx *ctx, const ust_plugin_event *ev,
             ust_plugin_decision *out)
{
    c->ctx = ctx;
    c->ev = ev;
    c->out = out;
    c->error = NULL;
    c->used = 0;
    c->blocks = NULL;
    if (!PU_COVERS(ev, ust_plugin_event, request_sha256) ||
        !PU_COVERS(out, ust_plugin_decision, reason)) {
        pu_fail(c, "host event or decision struct is older than this plugin");
        return PU_ROUTE_INVALID;
    }
    c->now_us = pu_host->now_us(ctx);
    if (ev->route_kind != NULL && strcmp(ev->route_kind, "webhook") == 0)
        return PU_ROUTE_WEBHOOK;
    if (ev->route_kind != NULL && strcmp(ev->route_kind, "api") == 0)
        return PU_ROUTE_API;
    pu_error_answer(c, UST_VERDICT_INVALID, 400, "unknown_route_kind");
    pu_reason(c, "route kind is neither webhook nor api");
    return PU_ROUTE_INVALID;
}

int pu_finish(pu_call *c)
{
    while (c->blocks != NULL) {
        pu_block *next = c->blocks->next;
        free(c->blocks);
        c->blocks = next;
    }
    if (c->error == NULL)
        return 0;
    pu_host->set_error(c->ctx, c->error);
    return -1;
}

void pu_fail(pu_call *c, const char *why)
{
    if (c->error == NULL)
        c->error = why;
}

static char *scratch(pu_call *c, size_t n)
{
    if (n <= sizeof c->mem - c->used) {
        char *p = c->mem + c->used;
        c->used += n;
        return p;
    }
    pu_block *b = malloc(sizeof *b + n);
    if (b == NULL) {
        pu_fail(c, "out of memory");
        return NULL;
    }
    b->next = c->blocks;
    c->blocks = b;
    return b->data;
}

/* A small vsnprintf for the only conversions the plugins use (%s, %d, %lld,
 * %%): formatting runs several times per event and glibc's vsnprintf was the
 * largest cost of a decision. Returns the full length, writes at most cap-1
 * bytes plus NUL. NULL for %s prints "(null)" like glibc. */
static size_t render(char *dst, size_t cap, const char *fmt, va_list ap)
{
    size_t n = 0;
    char num[24];
    for (const char *f = fmt; *f != '\0';) {
        const char *s = f;
        while (*f != '\0' && *f != '%') /* a run of literal text */
            f++;
        size_t len = (size_t)(f - s);
        if (len == 0) {
            f++;
            if (*f == 's') {
                s = va_arg(ap, const char *);
                s = s != NULL ? s : "(null)";
                len = strlen(s);
            } else if (*f == 'd' || (f[0] == 'l' && f[1] == 'l' && f[2] == 'd')) {
                long long v = *f == 'd' ? va_arg(ap, int) : va_arg(ap, long long);
                unsigned long long u =
                    v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
                char *p = num + sizeof num;
                do {
                    *--p = (char)('0' + u % 10);
                    u /= 10;
                } while (u != 0);
                if (v < 0)
                    *--p = '-';
                s = p;
                len = (size_t)(num + sizeof num - p);
                f += *f == 'l' ? 2 : 0;
            } else if (*f == '\0') {
                break;
            } else {
                s = f; /* "%%" and anything unsupported print as the character */
                len = 1;
            }
            f++;
        }
        if (n < cap)
            memcpy(dst + n, s, len < cap - n ? len : cap - n);
        n += len;
    }
    if (cap > 0)
        dst[n < cap ? n : cap - 1] = '\0';
    return n;
}

static const char *vfmt(pu_call *c, const char *fmt, va_list ap)
{
    /* Format straight into the arena's free space; only a long result is
     * formatted twice. */
    va_list again;
    va_copy(again, ap);
    size_t room = sizeof c->mem - c->used;
    size_t n = render(c->mem + c->used, room, fmt, ap);
    char *p = NULL;
    if (n < room) {
        p = c->mem + c->used;
        c->used += n + 1;
    } else if ((p = scratch(c, n + 1)) != NULL) {
        render(p, n + 1, fmt, again);
    }
    va_end(again);
    return p != NULL ? p : "";
}

const char *pu_fmt(pu_call *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vfmt(c, fmt, ap);
    va_end(ap);
    return s;
}

static size_t esc_len(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += *s == '%' || *s == '|' ? 3 : 1;
    return n;
}

static char *esc_into(char *p, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '%' || *s == '|') {
            *p++ = '%';
            *p++ = *s == '%' ? '2' : '7';
            *p++ = *s == '%' ? '5' : 'C';
        } else {
            *p++ = *s;
        }
    }
    return p;
}

const char *pu_esc(pu_call *c, const char *s)
{
    if (s == NULL)
        return "";
    char *p = scratch(c, esc_len(s) + 1);
    if (p == NULL)
        return "";
    *esc_into(p, s) = '\0';
    return p;
}

const char *pu_key(pu_call *c, const char *tag, ...)
{
    va_list ap;
    size_t n = strlen(tag) + 1;
    va_start(ap, tag);
    for (const char *s = va_arg(ap, const char *); s != NULL;
         s = va_arg(ap, const char *))
        n += 1 + esc_len(s);
    va_end(ap);
    char *key = scratch(c, n);
    if (key == NULL)
        return "";
    char *p = stpcpy(key, tag);
    va_start(ap, tag);
    for (const char *s = va_arg(ap, const char *); s != NULL;
         s = va_arg(ap, const char *)) {
        *p++ = '|';
        p = esc_into(p, s);
    }
    va_end(ap);
    *p = '\0';
    return key;
}

const char *pu_elapsed(pu_call *c, int64_t us)
{
    if (us >= 1000000 || us <= -1000000)
        return pu_fmt(c, "%lld s", (long long)(us / 1000000));
    return pu_fmt(c, "%lld ms", (long long)(us / 1000));
}

/* ---- store ------------------------------------------------------------- */

const char *pu_get(pu_call *c, const char *key)
{
    const char *value = NULL;
    int rc = pu_host->state_get(c->ctx, key, &value);
    if (rc < 0)
        pu_fail(c, "state_get failed");
    return rc == 1 ? value : NULL;
}

int pu_claim(pu_call *c, const char *key, const char *value)
{
    int rc = pu_host->state_claim(c->ctx, key, value);
    if (rc < 0)
        pu_fail(c, "state_claim failed");
    return rc == 1;
}

void pu_put(pu_call *c, const char *key, const char *value)
{
    if (pu_host->state_put(c->ctx, key, value) < 0)
        pu_fail(c, "state_put failed");
}

int pu_split(pu_call *c, const char *value, pu_field *fields, size_t n)
{
    const char *p = value;
    for (size_t i = 0; i + 1 < n; i++) {
        const char *bar = strchr(p, '|');
        if (bar == NULL) {
            pu_fail(c, "corrupt state value");
            memset(fields, 0, n * sizeof *fields);
            for (size_t j = 0; j < n; j++)
                fields[j].p = "";
            return -1;
        }
        fields[i].p = p;
        fields[i].len = (size_t)(bar - p);
        p = bar + 1;
    }
    fields[n - 1].p = p;
    fields[n - 1].len = strlen(p);
    return 0;
}

int64_t pu_field_i64(pu_call *c, pu_field f)
{
    int64_t v = 0;
    size_t i = f.len > 0 && f.p[0] == '-' ? 1 : 0;
    if (i == f.len || f.len - i > 18) { /* 18 digits cannot overflow */
        pu_fail(c, "corrupt state value");
        return 0;
    }
    for (; i < f.len; i++) {
        if (f.p[i] < '0' || f.p[i] > '9') {
            pu_fail(c, "corrupt state value");
            return 0;
        }
        v = v * 10 + (f.p[i] - '0');
    }
    return f.len > 0 && f.p[0] == '-' ? -v : v;
}

/* ---- the event --------------------------------------------------------- */

int pu_absent(const char *s)
{
    return s == NULL || *s == '\0';
}

int pu_state_index(const char *state)
{
    static const char *const names[] = {"pending", "paid", "refunded", "cancelled"};
    if (state == NULL)
        return 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(state, names[i]) == 0)
            return i + 1;
    return -1;
}

static char *host_dup(pu_call *c, const char *s)
{
    if (s == NULL)
        return NULL;
    char *d = pu_host->strdup(s);
    if (d == NULL)
        pu_fail(c, "out of memory");
    return d;
}

/* 1 after answering an invalid event 400 with code; 0 when code is NULL. */
static int refuse(pu_call *c, const char *code, const char *why)
{
    if (code == NULL)
        return 0;
    pu_error_answer(c, UST_VERDICT_INVALID, 400, code);
    pu_reason(c, "%s: %s", why, code);
    return 1;
}

static int webhook_invalid(pu_call *c)
{
    const ust_plugin_event *ev = c->ev;
    if (!pu_absent(ev->provider) && !pu_absent(ev->transaction_id))
        c->out->entity =
            host_dup(c, pu_fmt(c, "%s:%s", ev->provider, ev->transaction_id));
    const char *code = NULL;
    if (pu_absent(ev->provider))
        code = "provider_required";
    else if (pu_absent(ev->event_id))
        code = "event_id_required";
    else if (pu_absent(ev->transaction_id))
        code = "transaction_id_required";
    else if (pu_absent(ev->target_status))
        code = "target_status_required";
    else if (pu_state_index(ev->target_status) <= 0)
        code = "target_status_unknown";
    return refuse(c, code, "the webhook cannot be processed");
}

/* 1 when s is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF),
 * the same rule jansson applies to every string it accepts. */
static int utf8_valid(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s != 0) {
        unsigned long cp = *s;
        size_t n;
        unsigned long min;
        if (cp < 0x80) {
            s++;
            continue;
        } else if ((cp & 0xE0) == 0xC0) {
            n = 1, min = 0x80, cp &= 0x1F;
        } else if ((cp & 0xF0) == 0xE0) {
            n = 2, min = 0x800, cp &= 0x0F;
        } else if ((cp & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, cp &= 0x07;
        } else {
            return 0;
        }
        for (size_t i = 1; i <= n; i++) { /* stops at the NUL: it is no 10xxxxxx */
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        s += n + 1;
    }
    return 1;
}

static int api_invalid(pu_call *c)
{
    const ust_plugin_event *ev = c->ev;
    if (!pu_absent(ev->idempotency_key))
        c->out->entity = host_dup(
            c, pu_fmt(c, "%s:%s:%s", ev->route != NULL ? ev->route : "",
                      pu_absent(ev->tenant) ? "-" : ev->tenant, ev->idempotency_key));
    const char *code = NULL;
    if (!ev->has_amount)
        code = "amount_required";
    else if (pu_absent(ev->currency))
        code = "currency_required";
    /* They are echoed in the JSON response body, which must be valid. */
    else if (!utf8_valid(ev->currency))
        code = "currency_not_utf8";
    else if (ev->intent != NULL && !utf8_valid(ev->intent))
        code = "intent_not_utf8";
    return refuse(c, code, "the request cannot be executed");
}

/* ---- the decision ------------------------------------------------------ */

void pu_answer(pu_call *c, ust_verdict v, int status, const char *body)
{
    c->out->verdict = v;
    c->out->http_status = status;
    c->out->response_body = host_dup(c, body);
}

void pu_webhook_answer(pu_call *c, ust_verdict v)
{
    pu_answer(c, v, 200, "{\"received\":true}");
}

void pu_error_answer(pu_call *c, ust_verdict v, int status, const char *code)
{
    pu_answer(c, v, status, pu_fmt(c, "{\"error\":\"%s\"}", code));
}

/* One byte of a JSON string as jansson's dump writes it: ", \\ and the short
 * control escapes, other controls as \\u00XX, everything else (UTF-8
 * included) as is. Returns the length written to esc. */
static size_t json_esc(unsigned char ch, char esc[6])
{
    static const char hex[] = "0123456789ABCDEF";
    const char *short_esc = NULL;
    switch (ch) {
    case '"':
        short_esc = "\\\"";
        break;
    case '\\':
        short_esc = "\\\\";
        break;
    case '\b':
        short_esc = "\\b";
        break;
    case '\f':
        short_esc = "\\f";
        break;
    case '\n':
        short_esc = "\\n";
        break;
    case '\r':
        short_esc = "\\r";
        break;
    case '\t':
        short_esc = "\\t";
        break;
    default:
        break;
    }
    if (short_esc != NULL) {
        esc[0] = short_esc[0];
        esc[1] = short_esc[1];
        return 2;
    }
    if (ch < 0x20) {
        esc[0] = '\\';
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[ch >> 4];
        esc[5] = hex[ch & 15];
        return 6;
    }
    esc[0] = (char)ch;
    return 1;
}

/* s (valid UTF-8) as a JSON string literal, as a scratch string. */
static const char *json_str(pu_call *c, const char *s)
{
    char esc[6];
    size_t n = 2;
    for (const char *p = s; *p != '\0'; p++)
        n += json_esc((unsigned char)*p, esc);
    char *out = scratch(c, n + 1);
    if (out == NULL)
        return "null";
    char *o = out;
    *o++ = '"';
    for (const char *p = s; *p != '\0'; p++) {
        size_t k = json_esc((unsigned char)*p, esc);
        memcpy(o, esc, k);
        o += k;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

const char *pu_payment_body(pu_call *c)
{
    /* Written by hand, not built with jansson: json_pack + json_dumpb cost
     * ~2 us per body, more than the rest of a decision. Keys in sorted order,
     * compact, as json_dumps(JSON_COMPACT | JSON_SORT_KEYS) would give. */
    const ust_plugin_event *ev = c->ev;
    return pu_fmt(
        c,
        "{\"amount\":%lld,\"currency\":%s,\"order_id\":%s,\"payment_id\":\"pay_%lld\"}",
        (long long)ev->amount, json_str(c, ev->currency),
        ev->intent != NULL ? json_str(c, ev->intent) : "null", (long long)ev->seq);
}

void pu_states(pu_call *c, const char *before, const char *after)
{
    c->out->state_before = host_dup(c, before);
    c->out->state_after = host_dup(c, after);
}

/* A host-allocated array of n elements of size bytes, one longer: old's
 * elements copied, old freed. NULL (the call failed) when out of memory. */
static void *host_grow(pu_call *c, void *old, size_t n, size_t size)
{
    void *grown = pu_host->alloc((n + 1) * size);
    if (grown == NULL) {
        pu_fail(c, "out of memory");
        return NULL;
    }
    if (n > 0)
        memcpy(grown, old, n * size);
    if (old != NULL)
        pu_host->free(old);
    return grown;
}

void pu_header(pu_call *c, const char *name, const char *value)
{
    ust_plugin_decision *out = c->out;
    ust_plugin_header *h = host_grow(c, out->headers, out->n_headers, sizeof *h);
    if (h == NULL)
        return;
    h[out->n_headers].name = host_dup(c, name);
    h[out->n_headers].value = host_dup(c, value);
    out->headers = h;
    out->n_headers++;
}

void pu_flag(pu_call *c, const char *flag)
{
    ust_plugin_decision *out = c->out;
    char **f = host_grow(c, out->flags, out->n_flags, sizeof *f);
    if (f == NULL)
        return;
    f[out->n_flags] = host_dup(c, flag);
    out->flags = f;
    out->n_flags++;
}

void pu_reason(pu_call *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vfmt(c, fmt, ap);
    va_end(ap);
    if (c->out->reason != NULL)
        pu_host->free(c->out->reason);
    c->out->reason = host_dup(c, s);
}
