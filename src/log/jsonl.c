/* The interchange format: one event per line, raw body bytes preserved
 * (`body` when they are valid UTF-8, else `body_base64`). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

static int required_string(json_t *obj, const char *key, const char **out, char **err)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return ust_errf(err, UST_EPARSE, "missing field \"%s\"", key);
    if (!json_is_string(v))
        return ust_errf(err, UST_EPARSE, "field \"%s\": expected a string", key);
    *out = json_string_value(v);
    return 0;
}

static int parse_body(json_t *obj, ust_request *req, char **err)
{
    json_t *text = json_object_get(obj, "body");
    json_t *b64 = json_object_get(obj, "body_base64");
    if (text != NULL && b64 != NULL)
        return ust_errf(err, UST_EPARSE,
                        "both \"body\" and \"body_base64\": expected one");
    if (text == NULL && b64 == NULL)
        return ust_errf(err, UST_EPARSE, "missing field \"body\" (or \"body_base64\")");
    if (text != NULL) {
        if (!json_is_string(text))
            return ust_errf(err, UST_EPARSE, "field \"body\": expected a string");
        size_t n = json_string_length(text);
        if (n > 0) {
            req->body = ust_memdup(json_string_value(text), n);
            if (req->body == NULL)
                return UST_ENOMEM;
        }
        req->body_len = n;
        return 0;
    }
    if (!json_is_string(b64))
        return ust_errf(err, UST_EPARSE, "field \"body_base64\": expected a string");
    int rc = ust_base64_decode(json_string_value(b64), json_string_length(b64),
                               &req->body, &req->body_len);
    if (rc == UST_EPARSE)
        return ust_errf(err, rc, "field \"body_base64\": not valid base64");
    return rc;
}

int ust_jsonl_parse(const char *line, size_t len, ust_request *req, char **err)
{
    memset(req, 0, sizeof(*req));
    json_error_t jerr;
    json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (obj == NULL)
        return ust_errf(err, UST_EPARSE, "not JSON: %s (column %d)", jerr.text,
                        jerr.column);
    int rc = 0;
    const char *received_at, *method, *target, *remote = "-";
    json_t *v = json_object_get(obj, "v");
    if (!json_is_object(obj)) {
        rc = ust_errf(err, UST_EPARSE, "expected a JSON object");
    } else if (v == NULL || !json_is_integer(v) || json_integer_value(v) != 1) {
        rc = ust_errf(err, UST_EPARSE, "field \"v\": expected 1");
    } else if ((rc = required_string(obj, "received_at", &received_at, err)) == 0 &&
               (rc = required_string(obj, "method", &method, err)) == 0 &&
               (rc = required_string(obj, "target", &target, err)) == 0 &&
               (json_object_get(obj, "remote") == NULL ||
                (rc = required_string(obj, "remote", &remote, err)) == 0)) {
        if (ust_time_parse(received_at, &req->received_at_us) != 0)
            rc = ust_errf(err, UST_EPARSE,
                          "field \"received_at\": expected an RFC 3339 time such as "
                          "2026-11-29T10:00:00.123456Z, got \"%s\"",
                          received_at);
        else if (method[0] == '\0' || target[0] != '/')
            rc = ust_errf(err, UST_EPARSE, "%s",
                          method[0] == '\0'
                              ? "field \"method\": expected a method"
                              : "field \"target\": expected a path starting with /");
        else if ((req->remote = ust_strdup(remote)) == NULL ||
                 (req->method = ust_strdup(method)) == NULL ||
                 (req->target = ust_strdup(target)) == NULL)
            rc = UST_ENOMEM;
        else if (json_object_get(obj, "headers") == NULL)
            rc = ust_errf(err, UST_EPARSE, "missing field \"headers\"");
        else if ((rc = ust__headers_load(json_object_get(obj, "headers"), req, err)) ==
                 0)
            rc = parse_body(obj, req, err);
    }
    json_decref(obj);
    if (rc != 0)
        ust_request_clear(req);
    return rc;
}

char *ust_jsonl_format(const ust_log_record *rec, int with_derived)
{
    const ust_request *r = &rec->req;
    char when[32];
    ust_time_format(r->received_at_us, when);
    json_t *o = json_object();
    json_t *harr = ust__headers_json(r);
    if (o == NULL || harr == NULL) {
        json_decref(o);
        json_decref(harr);
        return NULL;
    }
    json_object_set_new(o, "v", json_integer(1));
    json_object_set_new(o, "seq", json_integer(rec->seq));
    json_object_set_new(o, "received_at", json_string(when));
    json_object_set_new(o, "remote", json_string(r->remote ? r->remote : "-"));
    json_object_set_new(o, "method", json_string(r->method));
    json_object_set_new(o, "target", json_string(r->target));
    json_object_set_new(o, "headers", harr);
    const char *body = r->body ? (const char *)r->body : "";
    if (ust_utf8_valid(r->body, r->body_len)) {
        json_object_set_new(o, "body", json_stringn(body, r->body_len));
    } else {
        char *b64 = ust_base64_encode(r->body, r->body_len);
        json_object_set_new(o, "body_base64", b64 ? json_string(b64) : NULL);
        ust_free(b64);
    }
    if (with_derived) {
        if (rec->route)
            json_object_set_new(o, "route", json_string(rec->route));
        if (rec->provider)
            json_object_set_new(o, "provider", json_string(rec->provider));
        if (rec->event_id)
            json_object_set_new(o, "event_id", json_string(rec->event_id));
        if (rec->identity)
            json_object_set_new(o, "identity", json_string(rec->identity));
        json_object_set_new(o, "request_sha256", json_string(rec->request_sha256));
        json_object_set_new(o, "signature", json_string(ust_sig_status_name(rec->sig)));
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (text == NULL)
        return NULL;
    char *out = ust_strdup(text);
    free(text);
    return out;
}
