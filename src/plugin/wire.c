#include "plugin/wire.h"
#include "plugin/decision_json.h"
#include "plugin/event_abi.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

/* A derived field of the event as the protocol sends it, under its wire key. */
#define WIRE_OUT_TEXT(m, key) ust_jsonw_member_string(w, #key, ev->m);
#define WIRE_OUT_SHA(m, key) ust_jsonw_member_string(w, #key, ev->m);
#define WIRE_OUT_ROUTE(m, key)                                                         \
    ust_jsonw_member_string(w, #key "_kind", ust__route_kind_name(ev->m));             \
    ust_jsonw_member_string(w, #key, ev->m ? ev->m->path : NULL);
#define WIRE_OUT_AMOUNT(m, key)                                                        \
    ust_jsonw_key(w, #key);                                                            \
    if (ev->has_##m)                                                                   \
        ust_jsonw_int(w, ev->m);                                                       \
    else                                                                               \
        ust_jsonw_null(w);
/* The fields sent in table order, then those sent after them. */
#define WIRE_FIRST_WIRE(kind, m, key) WIRE_OUT_##kind(m, key)
#define WIRE_FIRST_WIRE_END(kind, m, key)
#define WIRE_FIRST_NONE(kind, m, key)
#define WIRE_FIRST(kind, m, column, wire, wire_at, export, source, since, desc)        \
    WIRE_FIRST_##wire_at(kind, m, wire)
#define WIRE_LAST_WIRE(kind, m, key)
#define WIRE_LAST_WIRE_END(kind, m, key) WIRE_OUT_##kind(m, key)
#define WIRE_LAST_NONE(kind, m, key)
#define WIRE_LAST(kind, m, column, wire, wire_at, export, source, since, desc)         \
    WIRE_LAST_##wire_at(kind, m, wire)

void ust__wire_decide(ust_jsonw *w, const ust_event *ev, const ust_request *req)
{
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "type", "decide");
    ust_jsonw_key(w, "event");
    ust_jsonw_object(w);
    ust_jsonw_member_int(w, "seq", ev->seq);
    ust_jsonw_member_int(w, "received_at_us", ev->received_at_us);
    UST_EVENT_FIELDS(WIRE_FIRST)
    UST_EVENT_FIELDS(WIRE_LAST)
    if (req == NULL) { /* the plugin declined the raw request */
        ust_jsonw_end_object(w);
        ust_jsonw_end_object(w);
        return;
    }
    if (ust_utf8_valid(req->body, req->body_len)) {
        ust_jsonw_key(w, "body");
        ust_jsonw_stringn(w, req->body ? (const char *)req->body : "", req->body_len);
    } else {
        char *b64 = ust_base64_encode(req->body, req->body_len);
        ust_jsonw_key(w, "body_base64");
        ust_jsonw_string(w, b64 ? b64 : "");
        ust_free(b64);
    }
    ust_jsonw_key(w, "headers");
    ust_jsonw_array(w);
    for (size_t i = 0; i < req->n_headers; i++) {
        const char *name = req->headers[i].name, *value = req->headers[i].value;
        /* A header that is not UTF-8 cannot be a JSON string: left out. */
        if (!ust_utf8_valid((const unsigned char *)name, strlen(name)) ||
            !ust_utf8_valid((const unsigned char *)value, strlen(value)))
            continue;
        ust_jsonw_array(w);
        ust_jsonw_string(w, name);
        ust_jsonw_string(w, value);
        ust_jsonw_end_array(w);
    }
    ust_jsonw_end_array(w);
    ust_jsonw_end_object(w);
    ust_jsonw_end_object(w);
}

char *ust__plugin_config_text(const json_t *config)
{
    char *text = config ? json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *copy = ust_strdup(text ? text : "{}");
    ust_free(text);
    return copy;
}

static char *borrow(json_t *j, const char *key)
{
    return (char *)json_string_value(json_object_get(j, key));
}

/* A derived field of the event read from its wire key; strings borrowed. */
#define WIRE_IN_TEXT(m, key) ev->m = borrow(j, #key);
#define WIRE_IN_SHA(m, key) wire_hex(ev->m, sizeof(ev->m), borrow(j, #key));
#define WIRE_IN_ROUTE(m, key) ev->m = wire_route(j, #key, #key "_kind", route);
#define WIRE_IN_AMOUNT(m, key)                                                         \
    ev->has_##m = json_is_integer(json_object_get(j, #key));                           \
    ev->m = json_integer_value(json_object_get(j, #key));
#define WIRE_IN_WIRE(kind, m, key) WIRE_IN_##kind(m, key)
#define WIRE_IN_WIRE_END(kind, m, key) WIRE_IN_##kind(m, key)
#define WIRE_IN_NONE(kind, m, key)
#define WIRE_IN(kind, m, column, wire, wire_at, export, source, since, desc)           \
    WIRE_IN_##wire_at(kind, m, wire)

static void wire_hex(char *out, size_t cap, const char *hex)
{
    snprintf(out, cap, "%s", hex ? hex : "");
}

/* The route from its path and kind, into the caller's route. */
static const ust_route *wire_route(json_t *j, const char *key, const char *kind_key,
                                   ust_route *route)
{
    const char *path = json_string_value(json_object_get(j, key));
    const char *kind = json_string_value(json_object_get(j, kind_key));
    if (path == NULL)
        return NULL;
    route->path = (char *)path;
    route->kind = kind && strcmp(kind, "api") == 0 ? UST_ROUTE_API : UST_ROUTE_WEBHOOK;
    return route;
}

int ust__wire_event_parse(json_t *j, ust_event *ev, ust_request *req, ust_route *route)
{
    memset(ev, 0, sizeof(*ev));
    memset(req, 0, sizeof(*req));
    memset(route, 0, sizeof(*route));
    if (!json_is_object(j))
        return UST_EPARSE;
    ev->seq = json_integer_value(json_object_get(j, "seq"));
    ev->received_at_us = json_integer_value(json_object_get(j, "received_at_us"));
    req->received_at_us = ev->received_at_us;
    UST_EVENT_FIELDS(WIRE_IN)
    json_t *body = json_object_get(j, "body");
    json_t *b64 = json_object_get(j, "body_base64");
    if (json_is_string(body)) {
        req->body_len = json_string_length(body);
        req->body = ust_memdup(json_string_value(body), req->body_len + 1);
        if (req->body == NULL)
            return UST_ENOMEM;
    } else if (json_is_string(b64) &&
               ust_base64_decode(json_string_value(b64), json_string_length(b64),
                                 &req->body, &req->body_len) != 0) {
        return UST_EPARSE;
    }
    json_t *headers = json_object_get(j, "headers");
    req->headers = ust_calloc(json_array_size(headers) + 1, sizeof(ust_header));
    if (req->headers == NULL)
        return UST_ENOMEM;
    size_t i;
    json_t *pair;
    json_array_foreach(headers, i, pair)
    {
        char *n = (char *)json_string_value(json_array_get(pair, 0));
        char *v = (char *)json_string_value(json_array_get(pair, 1));
        if (n && v)
            req->headers[req->n_headers++] = (ust_header){n, v};
    }
    return 0;
}

void ust__wire_event_release(ust_event *ev, ust_request *req)
{
    ust_free(req->body);
    ust_free(req->headers);
    memset(ev, 0, sizeof(*ev));
    memset(req, 0, sizeof(*req));
}

/* A decision field as the protocol sends it, under its wire key. */
#define WIRE_DECISION_VERDICT UST__DECISION_JSON_VERDICT
#define WIRE_DECISION_STATUS UST__DECISION_JSON_STATUS
#define WIRE_DECISION_TEXT UST__DECISION_JSON_TEXT
#define WIRE_DECISION_ENTITY UST__DECISION_JSON_ENTITY
#define WIRE_DECISION_FLAGS UST__DECISION_JSON_FLAGS
/* The body goes as its text, as it is, so the child does not parse it only
 * to print it again (the parent checks it either way). */
#define WIRE_DECISION_BODY(m, key)                                                     \
    if (d->m != NULL)                                                                  \
        ust_jsonw_member_string(w, #key, d->m);
#define WIRE_DECISION_HEADERS(m, key)                                                  \
    if (d->m != NULL) {                                                                \
        ust_jsonw_key(w, #key);                                                        \
        ust_jsonw_value(w, d->m);                                                      \
    }
#define WIRE_DECISION_REASON UST__DECISION_JSON_REASON
#define WIRE_DECISION_ERROR(m, key)
#define WIRE_DECISION(kind, m, column, wire, abi, divergence, div_at)                  \
    WIRE_DECISION_##kind(m, wire)

void ust__wire_decision(ust_jsonw *w, int64_t seq, const ust_decision *d,
                        const char *writes)
{
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "type", "decision");
    ust_jsonw_member_int(w, "seq", seq);
    ust_jsonw_key(w, "decision");
    ust_jsonw_object(w);
    UST_DECISION_FIELDS(WIRE_DECISION)
    ust_jsonw_end_object(w);
    if (writes != NULL) {
        ust_jsonw_key(w, "writes");
        ust_jsonw_raw(w, writes, strlen(writes));
    }
    ust_jsonw_end_object(w);
}

static const char *parse_verdict(json_t *v, ust_verdict *out)
{
    const char *verdict = json_string_value(v);
    return verdict == NULL || ust_verdict_parse(verdict, out) != 0 ? "unknown verdict"
                                                                   : NULL;
}

static const char *parse_status(json_t *v, int *out)
{
    if (!json_is_integer(v))
        return "status is not an integer";
    /* Checked before the cast: 2^32 + 200 would come out as 200. */
    json_int_t http_status = json_integer_value(v);
    if (http_status < 100 || http_status > 599)
        return "HTTP status out of range";
    *out = (int)http_status;
    return NULL;
}

/* The body's text under key, or (as a plugin may send it) a JSON value under
 * "body"; ust_free()'d by the caller. */
static const char *parse_body(json_t *j, const char *key, char **out)
{
    json_t *text = json_object_get(j, key), *value = json_object_get(j, "body");
    if (json_is_string(text))
        *out = ust_strdup(json_string_value(text));
    else if (value != NULL && !json_is_null(value))
        *out = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    return NULL;
}

/* Borrowed into hv (room for WIRE_MAX_HEADERS). */
#define WIRE_MAX_HEADERS UST__DECISION_MAX_HEADERS
static const char *parse_headers(json_t *v, ust_plugin_header *hv,
                                 ust_plugin_header **out, size_t *n)
{
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val)
    {
        if (*n == WIRE_MAX_HEADERS || !json_is_string(val))
            return "malformed response headers";
        hv[*n].name = k;
        hv[(*n)++].value = json_string_value(val);
    }
    *out = *n ? hv : NULL;
    return NULL;
}

/* Borrowed into fv (room for WIRE_MAX_FLAGS). */
#define WIRE_MAX_FLAGS UST__DECISION_MAX_FLAGS
static const char *parse_flags(json_t *v, char **fv, char ***out, size_t *n)
{
    size_t i;
    json_t *f;
    json_array_foreach(v, i, f)
    {
        if (*n == WIRE_MAX_FLAGS || !json_is_string(f))
            return "malformed flags";
        fv[(*n)++] = (char *)json_string_value(f);
    }
    *out = *n ? fv : NULL;
    return NULL;
}

static char *host_dup(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? ust_strdup(s) : NULL;
}

/* A decision field from its wire key into pd's member for it, in two passes
 * (flags and the strings second), the order in which the checks have always
 * named a decision's first fault. A failure leaves bad set. */
#define PARSE_WITH(call)                                                               \
    if ((bad = (call)) != NULL)                                                        \
        goto done;
#define PARSE_VERDICT(abi, key)                                                        \
    PARSE_WITH(parse_verdict(json_object_get(j, #key), &pd.abi))
#define PARSE_STATUS(abi, key)                                                         \
    PARSE_WITH(parse_status(json_object_get(j, #key), &pd.abi))
#define PARSE_BODY(abi, key) PARSE_WITH(parse_body(j, #key, &pd.abi))
#define PARSE_HEADERS(abi, key)                                                        \
    PARSE_WITH(parse_headers(json_object_get(j, #key), hv, &pd.abi, &pd.n_##abi))
#define PARSE_FLAGS(abi, key)                                                          \
    PARSE_WITH(parse_flags(json_object_get(j, #key), fv, &pd.abi, &pd.n_##abi))
#define PARSE_TEXT(abi, key) pd.abi = host_dup(j, #key);
#define PARSE_1_VERDICT PARSE_VERDICT
#define PARSE_1_STATUS PARSE_STATUS
#define PARSE_1_BODY PARSE_BODY
#define PARSE_1_HEADERS PARSE_HEADERS
#define PARSE_1_FLAGS(abi, key)
#define PARSE_1_TEXT(abi, key)
#define PARSE_1_ENTITY(abi, key)
#define PARSE_1_REASON(abi, key)
#define PARSE_1_ERROR(abi, key)
#define PARSE_2_VERDICT(abi, key)
#define PARSE_2_STATUS(abi, key)
#define PARSE_2_BODY(abi, key)
#define PARSE_2_HEADERS(abi, key)
#define PARSE_2_FLAGS PARSE_FLAGS
#define PARSE_2_TEXT PARSE_TEXT
#define PARSE_2_ENTITY PARSE_TEXT
#define PARSE_2_REASON PARSE_TEXT
#define PARSE_2_ERROR(abi, key)
#define PARSE_1(kind, m, column, wire, abi, divergence, div_at)                        \
    PARSE_1_##kind(abi, wire)
#define PARSE_2(kind, m, column, wire, abi, divergence, div_at)                        \
    PARSE_2_##kind(abi, wire)

/* What the parse put in pd that is the host's to free. */
#define UNPARSE_BODY(abi) ust_free(pd.abi);
#define UNPARSE_TEXT(abi) ust_free(pd.abi);
#define UNPARSE_VERDICT(abi)
#define UNPARSE_STATUS(abi)
#define UNPARSE_HEADERS(abi)
#define UNPARSE_FLAGS(abi)
#define UNPARSE_ENTITY UNPARSE_TEXT
#define UNPARSE_REASON UNPARSE_TEXT
#define UNPARSE_ERROR(abi)
#define UNPARSE(kind, m, column, wire, abi, divergence, div_at) UNPARSE_##kind(abi)

const char *ust__wire_decision_parse(json_t *j, ust_decision *d)
{
    return ust__wire_decision_parse_memo(j, d, NULL);
}

const char *ust__wire_decision_parse_memo(json_t *j, ust_decision *d,
                                          ust__body_memo *memo)
{
    memset(d, 0, sizeof(*d));
    if (!json_is_object(j))
        return "the decision is not an object";
    ust_plugin_decision pd;
    memset(&pd, 0, sizeof(pd));
    ust_plugin_header hv[WIRE_MAX_HEADERS];
    char *fv[WIRE_MAX_FLAGS];
    const char *bad = NULL;
    UST_DECISION_FIELDS(PARSE_1)
    UST_DECISION_FIELDS(PARSE_2)
    bad = ust__adopt(&pd, d, memo);
    if (bad != NULL)
        ust_decision_clear(d);
done:
    UST_DECISION_FIELDS(UNPARSE)
    return bad;
}
