#include "plugin/wire.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

void ust__wire_decide(ust_jsonw *w, const ust_event *ev, const ust_request *req)
{
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "type", "decide");
    ust_jsonw_key(w, "event");
    ust_jsonw_object(w);
    ust_jsonw_member_int(w, "seq", ev->seq);
    ust_jsonw_member_int(w, "received_at_us", ev->received_at_us);
    ust_jsonw_member_string(
        w, "route_kind",
        ev->route ? ev->route->kind == UST_ROUTE_API ? "api" : "webhook" : NULL);
    ust_jsonw_member_string(w, "route", ev->route ? ev->route->path : NULL);
    ust_jsonw_member_string(w, "provider", ev->provider);
    ust_jsonw_member_string(w, "event_id", ev->event_id);
    ust_jsonw_member_string(w, "event_type", ev->event_type);
    ust_jsonw_member_string(w, "transaction_id", ev->transaction_id);
    ust_jsonw_member_string(w, "target_status", ev->target_status);
    ust_jsonw_key(w, "amount");
    if (ev->has_amount)
        ust_jsonw_int(w, ev->amount);
    else
        ust_jsonw_null(w);
    ust_jsonw_member_string(w, "currency", ev->currency);
    ust_jsonw_member_string(w, "intent", ev->intent);
    ust_jsonw_member_string(w, "idempotency_key", ev->idem_key);
    ust_jsonw_member_string(w, "tenant", ev->tenant);
    ust_jsonw_member_string(w, "request_sha256", ev->request_sha256);
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
    const char *path = json_string_value(json_object_get(j, "route"));
    const char *kind = json_string_value(json_object_get(j, "route_kind"));
    if (path != NULL) {
        route->path = (char *)path;
        route->kind =
            kind && strcmp(kind, "api") == 0 ? UST_ROUTE_API : UST_ROUTE_WEBHOOK;
        ev->route = route;
    }
    ev->provider = borrow(j, "provider");
    ev->event_id = borrow(j, "event_id");
    ev->event_type = borrow(j, "event_type");
    ev->transaction_id = borrow(j, "transaction_id");
    ev->target_status = borrow(j, "target_status");
    ev->currency = borrow(j, "currency");
    ev->intent = borrow(j, "intent");
    ev->idem_key = borrow(j, "idempotency_key");
    ev->tenant = borrow(j, "tenant");
    json_t *amount = json_object_get(j, "amount");
    ev->has_amount = json_is_integer(amount);
    ev->amount = json_integer_value(amount);
    const char *sha = json_string_value(json_object_get(j, "request_sha256"));
    snprintf(ev->request_sha256, sizeof(ev->request_sha256), "%s", sha ? sha : "");
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

void ust__wire_decision(ust_jsonw *w, int64_t seq, const ust_decision *d,
                        const char *writes)
{
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "type", "decision");
    ust_jsonw_member_int(w, "seq", seq);
    ust_jsonw_key(w, "decision");
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "verdict", ust_verdict_name(d->verdict));
    ust_jsonw_member_int(w, "status", d->http_status);
    ust_jsonw_member_string(w, "state_before", d->state_before);
    ust_jsonw_member_string(w, "state_after", d->state_after);
    ust_jsonw_member_string(w, "entity", d->entity);
    ust_jsonw_key(w, "flags");
    ust_jsonw_strings(w, d->flags, d->n_flags);
    /* The body goes as "body_json", its text as it is, so the child does not
     * parse it only to print it again (the parent checks it either way). */
    if (d->body != NULL)
        ust_jsonw_member_string(w, "body_json", d->body);
    if (d->headers != NULL) {
        ust_jsonw_key(w, "headers");
        ust_jsonw_value(w, d->headers);
    }
    if (d->reason != NULL)
        ust_jsonw_member_string(w, "reason", d->reason);
    ust_jsonw_end_object(w);
    if (writes != NULL) {
        ust_jsonw_key(w, "writes");
        ust_jsonw_raw(w, writes, strlen(writes));
    }
    ust_jsonw_end_object(w);
}

static char *host_dup(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? ust_strdup(s) : NULL;
}

const char *ust__wire_decision_parse(json_t *j, ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    if (!json_is_object(j))
        return "the decision is not an object";
    ust_plugin_decision pd;
    memset(&pd, 0, sizeof(pd));
    const char *verdict = json_string_value(json_object_get(j, "verdict"));
    ust_verdict v;
    if (verdict == NULL || ust_verdict_parse(verdict, &v) != 0)
        return "unknown verdict";
    pd.verdict = v;
    json_t *status = json_object_get(j, "status");
    if (!json_is_integer(status))
        return "status is not an integer";
    /* Checked before the cast: 2^32 + 200 would come out as 200. */
    json_int_t http_status = json_integer_value(status);
    if (http_status < 100 || http_status > 599)
        return "HTTP status out of range";
    pd.http_status = (int)http_status;
    json_t *body = json_object_get(j, "body");
    json_t *body_json = json_object_get(j, "body_json");
    if (json_is_string(body_json))
        pd.response_body = ust_strdup(json_string_value(body_json));
    else if (body != NULL && !json_is_null(body))
        pd.response_body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    json_t *headers = json_object_get(j, "headers");
    ust_plugin_header hv[64];
    size_t nh = 0;
    const char *k;
    json_t *val;
    json_object_foreach(headers, k, val)
    {
        if (nh == 64 || !json_is_string(val)) {
            ust_free(pd.response_body);
            return "malformed response headers";
        }
        hv[nh].name = k;
        hv[nh++].value = json_string_value(val);
    }
    pd.headers = nh ? hv : NULL;
    pd.n_headers = nh;
    char *flags[32];
    size_t nf = 0, i;
    json_t *f;
    json_array_foreach(json_object_get(j, "flags"), i, f)
    {
        if (nf == 32 || !json_is_string(f)) {
            ust_free(pd.response_body);
            return "malformed flags";
        }
        flags[nf++] = (char *)json_string_value(f);
    }
    pd.flags = nf ? flags : NULL;
    pd.n_flags = nf;
    pd.entity = host_dup(j, "entity");
    pd.state_before = host_dup(j, "state_before");
    pd.state_after = host_dup(j, "state_after");
    pd.reason = host_dup(j, "reason");
    const char *bad = ust__adopt(&pd, d);
    ust_free(pd.response_body);
    ust_free(pd.entity);
    ust_free(pd.state_before);
    ust_free(pd.state_after);
    ust_free(pd.reason);
    if (bad != NULL)
        ust_decision_clear(d);
    return bad;
}
