/* Derivation of the canonical event: one pure function of (request, config,
 * secrets), run at record, import and replay alike. The body is parsed once;
 * field values are read as borrowed views and copied only into the event. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include "event/event_internal.h"

#include <stdio.h>
#include <string.h>

/* Borrowed text of a field source: a header value, a JSON string, or a JSON
 * integer written in decimal into num (ids are sometimes numbers). NULL when
 * absent or of another type. */
static const char *field_view(const char *src, const ust_request *req, json_t *body,
                              char num[32])
{
    if (src == NULL)
        return NULL;
    if (strncmp(src, UST__HEADER_PREFIX, UST__HEADER_PREFIX_LEN) == 0)
        return ust_request_header(req, src + UST__HEADER_PREFIX_LEN);
    json_t *v = ust_json_pointer(body, src);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        (void)snprintf(num, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return num;
    }
    return NULL;
}

/* Copy of a field into *out (left NULL when absent). 0 or UST_ENOMEM. */
static int field_text(const char *src, const ust_request *req, json_t *body, char **out)
{
    char num[32];
    const char *v = field_view(src, req, body, num);
    if (v == NULL)
        return 0;
    *out = ust_strdup(v);
    return *out == NULL ? UST_ENOMEM : 0;
}

/* Strict decimal int64 (a header carrying an amount). */
static int parse_int64(const char *s, int64_t *out)
{
    int neg = *s == '-';
    if (neg)
        s++;
    if (*s == '\0')
        return -1;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Minor units as a JSON integer only: a string or a float amount is not
 * trusted to mean minor units, so it leaves has_amount 0. */
static void field_amount(const char *src, const ust_request *req, json_t *body,
                         int64_t *amount, int *has_amount)
{
    if (src == NULL)
        return;
    if (strncmp(src, UST__HEADER_PREFIX, UST__HEADER_PREFIX_LEN) == 0) {
        const char *h = ust_request_header(req, src + UST__HEADER_PREFIX_LEN);
        if (h != NULL && parse_int64(h, amount) == 0)
            *has_amount = 1;
        return;
    }
    json_t *v = ust_json_pointer(body, src);
    if (json_is_integer(v)) {
        *amount = (int64_t)json_integer_value(v);
        *has_amount = 1;
    }
}

static int derive_status(const ust_route *r, const ust_request *req, json_t *body,
                         ust_event *ev)
{
    char num[32];
    const char *v = field_view(r->status_from, req, body, num);
    if (v == NULL)
        return 0;
    const char *state = NULL;
    if (r->n_status_map > 0) {
        for (size_t i = 0; i < r->n_status_map; i++)
            if (strcmp(r->status_map[i].from, v) == 0) {
                state = r->status_map[i].state;
                break;
            }
    } else if (ust_state_is_valid(v)) {
        state = v;
    }
    if (state == NULL)
        return 0;
    ev->target_status = ust_strdup(state);
    return ev->target_status == NULL ? UST_ENOMEM : 0;
}

static int derive_api(const ust_route *r, const ust_request *req, ust_event *ev)
{
    if (r->idem_header != NULL) {
        const char *h = ust_request_header(req, r->idem_header);
        /* A malformed key is as good as none: the plugins decide what a
         * request without a usable key means. */
        if (h != NULL && ust_idem_key_parse(h, &ev->idem_key) == UST_ENOMEM)
            return UST_ENOMEM;
    }
    if (r->tenant_header != NULL) {
        const char *t = ust_request_header(req, r->tenant_header);
        if (t != NULL && (ev->tenant = ust_strdup(t)) == NULL)
            return UST_ENOMEM;
    }
    return 0;
}

static int derive_identity(const ust_route *r, ust_event *ev)
{
    if (r->kind == UST_ROUTE_API) {
        if (ev->idem_key == NULL)
            return 0;
        ev->identity = ust_sprintf("%s:%s:%s", r->path,
                                   ev->tenant != NULL ? ev->tenant : "-", ev->idem_key);
    } else {
        const char *id = ev->transaction_id != NULL ? ev->transaction_id : ev->event_id;
        if (id == NULL)
            return 0;
        ev->identity = ust_sprintf("%s:%s", r->provider, id);
    }
    return ev->identity == NULL ? UST_ENOMEM : 0;
}

static ust_sig_status derive_sig(const ust_route *r, const ust_request *req)
{
    if (r->scheme == UST_SCHEME_NONE)
        return UST_SIG_UNSIGNED;
    /* Secrets not loaded (r->secret NULL): ust_sig_verify fails closed
     * (missing or invalid), never verified. */
    ust_sig_params p;
    p.scheme = r->scheme;
    p.secret = r->secret;
    p.header = r->sig_header;
    p.tolerance_s = r->tolerance_s;
    return ust_sig_verify(&p, req);
}

/* A field of source FIELDS from where the route's "fields" says (a TEXT or
 * an AMOUNT); the others are derived below. */
#define FROM_SOURCE_TEXT(m)                                                            \
    if (field_text(f->m, req, body, &ev->m) != 0)                                      \
        return UST_ENOMEM;
#define FROM_SOURCE_AMOUNT(m) field_amount(f->m, req, body, &ev->m, &ev->has_##m);
#define FROM_SOURCE_FIELDS(kind, m) FROM_SOURCE_##kind(m)
#define FROM_SOURCE_DERIVED(kind, m)
#define FROM_SOURCE(kind, m, column, wire, wire_at, export, source, since, desc)       \
    FROM_SOURCE_##source(kind, m)

static int derive_fields(const ust_route *r, const ust_request *req, json_t *body,
                         ust_event *ev)
{
    const ust_route_fields *f = &r->fields;
    if ((ev->provider = ust_strdup(r->provider)) == NULL)
        return UST_ENOMEM;
    UST_EVENT_FIELDS(FROM_SOURCE)
    if (derive_status(r, req, body, ev) != 0 || derive_api(r, req, ev) != 0 ||
        derive_identity(r, ev) != 0)
        return UST_ENOMEM;
    return 0;
}

int ust_event_derive(const ust_config *cfg, const ust_request *req, ust_event *ev,
                     char **err)
{
    return ust_event_derive_ex(cfg, req, 0, ev, err);
}

static int derive_parsed(const ust_config *cfg, const ust_request *req, unsigned flags,
                         ust_event *ev, char **err);

int ust_event_derive_ex(const ust_config *cfg, const ust_request *req, unsigned flags,
                        ust_event *ev, char **err)
{
    /* The body's tree lives only in here (the event copies what it keeps):
     * carved from an arena and let go at once. */
    ust_json_arena arena;
    ust_json_arena_open(&arena);
    int rc = derive_parsed(cfg, req, flags, ev, err);
    ust_json_arena_close(&arena);
    return rc;
}

static int derive_parsed(const ust_config *cfg, const ust_request *req, unsigned flags,
                         ust_event *ev, char **err)
{
    memset(ev, 0, sizeof(*ev));
    ev->received_at_us = req->received_at_us;
    ev->sig = UST_SIG_UNSIGNED;
    json_t *body;
    if (ust__body_parse(req->body, req->body_len, &body) != 0)
        return ust_errf(err, UST_ENOMEM, "out of memory");
    int rc = 0;
    if (body != NULL) {
        ev->body_is_json = 1;
        rc = ust__json_hash(body, ev->request_sha256);
    } else {
        ust_sha256_hex(req->body_len > 0 ? (const void *)req->body : "", req->body_len,
                       ev->request_sha256);
    }
    const ust_route *r = ust_config_route(cfg, req->target);
    if (rc == 0 && r != NULL) {
        ev->route = r;
        rc = derive_fields(r, req, body, ev);
        if (rc == 0 && !(flags & UST_DERIVE_SKIP_SIGNATURE))
            ev->sig = derive_sig(r, req);
    }
    /* No json_decref: the body's tree is the arena's (ust_event_derive_ex),
     * freed whole when it closes. */
    if (rc != 0) {
        ust_event_clear(ev);
        return ust_errf(err, UST_ENOMEM, "out of memory");
    }
    return 0;
}

/* Frees the event's strings; the route is the config's. */
void ust_event_clear(ust_event *ev)
{
    if (ev == NULL)
        return;
#define UST_EVENT_FIELDS_OWNER ev
    UST_EVENT_FIELDS(UST_EVENT_FREE_TEXT)
#undef UST_EVENT_FIELDS_OWNER
    memset(ev, 0, sizeof(*ev));
}
