/* The interchange format: one event per line, every byte preserved: a
 * string field is `x` when its bytes are valid UTF-8, else `x_base64` (the
 * body as `body` / `body_base64`, a header name or value as a string or
 * {"base64": ...}). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/jsonw.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ust__jsonl_text_load(json_t *v, int is_base64, char **out, const char **why)
{
    *out = NULL;
    if (!json_is_string(v)) {
        *why = "expected a string";
        return UST_EPARSE;
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    unsigned char *bytes = NULL;
    if (is_base64) {
        int rc = ust_base64_decode(s, n, &bytes, &n);
        if (rc != 0) {
            *why = "not valid base64";
            return rc;
        }
        s = (const char *)bytes;
    }
    /* The log holds C strings: a NUL would cut the value short, silently. */
    int rc = 0;
    if (n > 0 && memchr(s, '\0', n) != NULL) {
        *why = "holds a NUL byte";
        rc = UST_EPARSE;
    } else if ((*out = ust_strndup(n > 0 ? s : "", n)) == NULL) {
        rc = UST_ENOMEM;
    }
    ust_free(bytes);
    return rc;
}

/* key or key_base64 (exactly one), as a string the caller frees. Absent: a
 * NULL *out when optional (0), else an error. The key's names are only
 * formatted into a message when there is one to give. */
static int text_field(json_t *obj, const char *key, const char *b64key, int required,
                      char **out, char **err)
{
    json_t *text = json_object_get(obj, key), *b64 = json_object_get(obj, b64key);
    *out = NULL;
    if (text != NULL && b64 != NULL)
        return ust_errf(err, UST_EPARSE, "both \"%s\" and \"%s\": expected one", key,
                        b64key);
    if (text == NULL && b64 == NULL)
        return required ? ust_errf(err, UST_EPARSE, "missing field \"%s\"", key) : 0;
    const char *why = NULL;
    int rc = ust__jsonl_text_load(text ? text : b64, b64 != NULL, out, &why);
    if (rc == UST_EPARSE)
        return ust_errf(err, rc, "field \"%s\": %s", text ? key : b64key, why);
    return rc;
}
#define TEXT_FIELD(obj, key, required, out, err)                                       \
    text_field(obj, key, key "_base64", required, out, err)

/* "body" or "body_base64" (exactly one) of obj into *body; where prefixes
 * the field's name in errors ("" or "response."). Absent: an empty body
 * when optional, else an error. */
static int parse_body(json_t *obj, const char *where, int required,
                      unsigned char **body, size_t *body_len, char **err)
{
    json_t *text = json_object_get(obj, "body");
    json_t *b64 = json_object_get(obj, "body_base64");
    if (text != NULL && b64 != NULL)
        return ust_errf(err, UST_EPARSE,
                        "both \"%sbody\" and \"%sbody_base64\": expected one", where,
                        where);
    if (text == NULL && b64 == NULL)
        return required ? ust_errf(err, UST_EPARSE,
                                   "missing field \"%sbody\" (or \"%sbody_base64\")",
                                   where, where)
                        : 0;
    if (text != NULL) {
        if (!json_is_string(text))
            return ust_errf(err, UST_EPARSE, "field \"%sbody\": expected a string",
                            where);
        size_t n = json_string_length(text);
        /* A long body leaves the line's tree as it is, not copied: a line's
         * import holds its text once, not twice. */
        if (n > 0 && (*body = ust_json_arena_keep(json_string_value(text))) == NULL &&
            (*body = ust_memdup(json_string_value(text), n)) == NULL)
            return UST_ENOMEM;
        *body_len = n;
        return 0;
    }
    if (!json_is_string(b64))
        return ust_errf(err, UST_EPARSE, "field \"%sbody_base64\": expected a string",
                        where);
    int rc = ust_base64_decode(json_string_value(b64), json_string_length(b64), body,
                               body_len);
    if (rc == UST_EPARSE)
        return ust_errf(err, rc, "field \"%sbody_base64\": not valid base64", where);
    return rc;
}

/* The optional "response": {"status", "headers", "body" | "body_base64"},
 * production's answer to the request. Checked whole: an unknown key is a
 * typo, not something to drop. */
static int parse_response(json_t *obj, ust_response *resp, char **err)
{
    json_t *r = json_object_get(obj, "response");
    if (r == NULL || json_is_null(r))
        return 0;
    if (!json_is_object(r))
        return ust_errf(err, UST_EPARSE,
                        "field \"response\": expected an object with \"status\","
                        " \"headers\" and \"body\" (or \"body_base64\")");
    const char *key;
    json_t *v;
    json_object_foreach(r, key, v)
    {
        if (strcmp(key, "status") != 0 && strcmp(key, "headers") != 0 &&
            strcmp(key, "body") != 0 && strcmp(key, "body_base64") != 0)
            return ust_errf(err, UST_EPARSE,
                            "field \"response\": unknown key \"%s\" (expected"
                            " status, headers, body or body_base64)",
                            key);
    }
    json_t *status = json_object_get(r, "status");
    if (!json_is_integer(status) || json_integer_value(status) < 100 ||
        json_integer_value(status) > 599)
        return ust_errf(err, UST_EPARSE,
                        "field \"response.status\": expected an HTTP"
                        " status, an integer from 100 to 599");
    resp->status = (int)json_integer_value(status);
    json_t *headers = json_object_get(r, "headers");
    if (headers != NULL) {
        ust_request held; /* the loader fills a request's headers */
        memset(&held, 0, sizeof(held));
        char *why = NULL;
        int rc = ust__headers_load(headers, &held, &why);
        resp->headers = held.headers;
        resp->n_headers = held.n_headers;
        if (rc != 0) {
            rc = ust_errf(err, rc, "response.%s", why ? why : ust_strerror(rc));
            ust_free(why);
            return rc;
        }
    }
    return parse_body(r, "response.", 0, &resp->body, &resp->body_len, err);
}

int ust_jsonl_parse(const char *line, size_t len, ust_request *req, char **err)
{
    ust_response resp;
    memset(&resp, 0, sizeof(resp));
    int rc = ust_jsonl_parse_exchange(line, len, req, &resp, err);
    ust_response_clear(&resp);
    return rc;
}

static int parse_exchange_tree(const char *line, size_t len, ust_request *req,
                               ust_response *resp, char **err);

/* What a url plugin would send on, and --respond legacy relay: a request
 * line and headers that HTTP/1.1 reads as they are (ust_request_check). */
static int check_exchange(const ust_request *req, const ust_response *resp, char **err)
{
    char *why = NULL;
    int rc = ust_request_check(req, &why);
    if (rc == 0 && (rc = ust_headers_check(resp->headers, resp->n_headers, &why)) != 0)
        rc = ust_errf(err, rc, "response.%s", why ? why : ust_strerror(rc));
    else if (rc != 0)
        rc = ust_errf(err, rc, "%s", why ? why : ust_strerror(rc));
    ust_free(why);
    return rc;
}

int ust_jsonl_parse_exchange(const char *line, size_t len, ust_request *req,
                             ust_response *resp, char **err)
{
    memset(req, 0, sizeof(*req));
    memset(resp, 0, sizeof(*resp));
    /* The line's tree lives only in here: carved from an arena, let go at
     * once (what the request keeps is copied out with ust_malloc). */
    ust_json_arena arena;
    ust_json_arena_open(&arena);
    int rc = parse_exchange_tree(line, len, req, resp, err);
    ust_json_arena_close(&arena);
    if (rc == 0)
        rc = check_exchange(req, resp, err);
    if (rc != 0) {
        ust_request_clear(req);
        ust_response_clear(resp);
    }
    return rc;
}

static int parse_exchange_tree(const char *line, size_t len, ust_request *req,
                               ust_response *resp, char **err)
{
    json_error_t jerr;
    json_t *obj =
        ust_json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (obj == NULL && json_error_code(&jerr) == json_error_out_of_memory)
        return ust_errf(err, UST_ENOMEM, "out of memory");
    if (obj == NULL)
        return ust_errf(err, UST_EPARSE, "not JSON: %s (column %d)", jerr.text,
                        jerr.column);
    int rc = 0;
    char *received_at = NULL;
    json_t *v = json_object_get(obj, "v");
    if (!json_is_object(obj)) {
        rc = ust_errf(err, UST_EPARSE, "expected a JSON object");
    } else if (v == NULL || !json_is_integer(v) || json_integer_value(v) != 1) {
        rc = ust_errf(err, UST_EPARSE, "field \"v\": expected 1");
    } else if ((rc = TEXT_FIELD(obj, "received_at", 1, &received_at, err)) == 0 &&
               (rc = TEXT_FIELD(obj, "method", 1, &req->method, err)) == 0 &&
               (rc = TEXT_FIELD(obj, "target", 1, &req->target, err)) == 0 &&
               (rc = TEXT_FIELD(obj, "remote", 0, &req->remote, err)) == 0) {
        /* From the epoch on: a webhook received in year 0 is a forgery or a
         * bug, and a time before 1970 would not format back as it was read. */
        if (ust_time_parse(received_at, &req->received_at_us) != 0 ||
            req->received_at_us < 0)
            rc = ust_errf(
                err, UST_EPARSE,
                "field \"received_at\": expected an RFC 3339 time from 1970 on,"
                " such as 2026-11-29T10:00:00.123456Z, got \"%s\"",
                received_at);
        else if (req->method[0] == '\0' || req->target[0] != '/')
            rc = ust_errf(err, UST_EPARSE, "%s",
                          req->method[0] == '\0'
                              ? "field \"method\": expected a method"
                              : "field \"target\": expected a path starting with /");
        else if (req->remote == NULL && (req->remote = ust_strdup("-")) == NULL)
            rc = UST_ENOMEM;
        else if (json_object_get(obj, "headers") == NULL)
            rc = ust_errf(err, UST_EPARSE, "missing field \"headers\"");
        else if ((rc = ust__headers_load(json_object_get(obj, "headers"), req, err)) ==
                 0)
            rc = parse_body(obj, "", 1, &req->body, &req->body_len, err);
        if (rc == 0)
            rc = parse_response(obj, resp, err);
    }
    ust_free(received_at);
    /* No json_decref: the tree is the arena's, freed whole when it closes
     * (walking it to free each node into the arena would do nothing). */
    if (rc != 0) {
        ust_request_clear(req);
        ust_response_clear(resp);
    }
    return rc;
}

/* Writing a line: straight through the caller's out, member by member, so
 * a body or a header list of any size is never held a second time (as a
 * jansson tree, its dump and a copy of that were). The bytes are what
 * json_dumps(JSON_COMPACT) wrote of the same object: members in this
 * order, strings escaped as jansson escapes them (ust_json_write_string). */
typedef struct line_out {
    int (*out)(const char *, size_t, void *);
    void *data;
    int failed; /* out returned nonzero: nothing more is written */
} line_out;

static void put(line_out *o, const char *s, size_t n)
{
    if (!o->failed && n > 0 && o->out(s, n, o->data) != 0)
        o->failed = 1;
}

static void put_lit(line_out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_string(line_out *o, const char *s, size_t n)
{
    if (!o->failed && ust_json_write_string(s, n, o->out, o->data) != 0)
        o->failed = 1;
}

static void put_base64(line_out *o, const unsigned char *bytes, size_t n)
{
    put(o, "\"", 1);
    if (!o->failed && ust_base64_write(bytes, n, o->out, o->data) != 0)
        o->failed = 1;
    put(o, "\"", 1);
}

/* ,"key": */
static void put_key(line_out *o, const char *key)
{
    put(o, ",", 1);
    put_string(o, key, strlen(key));
    put(o, ":", 1);
}

static void put_int(line_out *o, int64_t v)
{
    char digits[24];
    put(o, digits, (size_t)snprintf(digits, sizeof(digits), "%lld", (long long)v));
}

/* ,"key":"..." or, when the bytes are not UTF-8, ,"key_base64":"..."; NULL
 * writes nothing. */
static void put_text(line_out *o, const char *key, const char *s)
{
    if (s == NULL)
        return;
    size_t n = strlen(s);
    if (ust_utf8_valid((const unsigned char *)s, n)) {
        put_key(o, key);
        put_string(o, s, n);
        return;
    }
    char b64key[64];
    snprintf(b64key, sizeof(b64key), "%s_base64", key);
    put_key(o, b64key);
    put_base64(o, (const unsigned char *)s, n);
}

/* A header name or value: a string, or {"base64":"..."} when not UTF-8. */
static void put_header_text(line_out *o, const char *s)
{
    size_t n = strlen(s);
    if (ust_utf8_valid((const unsigned char *)s, n)) {
        put_string(o, s, n);
        return;
    }
    put_lit(o, "{\"base64\":");
    put_base64(o, (const unsigned char *)s, n);
    put(o, "}", 1);
}

/* ,"headers":[[name,value],...] */
static void put_headers(line_out *o, const ust_header *headers, size_t n)
{
    put_key(o, "headers");
    put(o, "[", 1);
    for (size_t i = 0; i < n && !o->failed; i++) {
        put_lit(o, i == 0 ? "[" : ",[");
        put_header_text(o, headers[i].name);
        put(o, ",", 1);
        put_header_text(o, headers[i].value);
        put(o, "]", 1);
    }
    put(o, "]", 1);
}

/* ,"body":"..." or, when the bytes are not UTF-8, ,"body_base64":"..." */
static void put_body(line_out *o, const unsigned char *body, size_t len)
{
    if (ust_utf8_valid(body, len)) {
        put_key(o, "body");
        put_string(o, body ? (const char *)body : "", len);
    } else {
        put_key(o, "body_base64");
        put_base64(o, body, len);
    }
}

/* The recorded answer as ,"response":{...} (none: nothing). */
static void put_response(line_out *o, const ust_response *a)
{
    if (a->status == 0)
        return;
    put_key(o, "response");
    put_lit(o, "{\"status\":");
    put_int(o, a->status);
    put_headers(o, a->headers, a->n_headers);
    put_body(o, a->body, a->body_len);
    put(o, "}", 1);
}

/* A derived field marked EXPORT, as text under its column's name (only kinds
 * with a text form can be). */
#define EXPORT_TEXT(m) rec->m
#define EXPORT_ROUTE(m) rec->m
#define EXPORT_SHA(m) rec->m
#define EXPORT_SIG(m) ust_sig_status_name(rec->m)
#define EXPORT_FIELD_EXPORT(kind, m, column) put_text(&o, #column, EXPORT_##kind(m));
#define EXPORT_FIELD_NO_EXPORT(kind, m, column)
#define EXPORT_FIELD(kind, m, column, wire, wire_at, export, source, since, desc)      \
    EXPORT_FIELD_##export(kind, m, column)

int ust_jsonl_write(const ust_log_record *rec, int with_derived,
                    int (*out)(const char *, size_t, void *), void *data)
{
    const ust_request *r = &rec->req;
    line_out o = {out, data, 0};
    char when[32];
    ust_time_format(r->received_at_us, when);
    put_lit(&o, "{\"v\":1");
    put_key(&o, "seq");
    put_int(&o, rec->seq);
    put_key(&o, "received_at");
    put_string(&o, when, strlen(when));
    put_text(&o, "remote", r->remote ? r->remote : "-");
    put_text(&o, "method", r->method);
    put_text(&o, "target", r->target);
    put_headers(&o, r->headers, r->n_headers);
    put_body(&o, r->body, r->body_len);
    put_response(&o, &rec->response);
    if (with_derived) {
        UST_EVENT_FIELDS(EXPORT_FIELD)
    }
    put(&o, "}", 1);
    return o.failed ? -1 : 0;
}

/* ust_jsonl_write's out, into a growing string. */
static int append_text(const char *s, size_t n, void *data)
{
    ust_jsonw *w = data;
    ust_jsonw_append(w, s, n);
    return w->error != 0 ? -1 : 0;
}

char *ust_jsonl_format(const ust_log_record *rec, int with_derived)
{
    ust_jsonw w = {0};
    if (ust_jsonl_write(rec, with_derived, append_text, &w) != 0 || w.buf == NULL) {
        ust_jsonw_free(&w);
        return NULL;
    }
    return w.buf; /* the writer's text, ust_malloc'd: now the caller's */
}
