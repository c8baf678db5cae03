/* HAR 1.2, as browsers' devtools, Playwright and mitmproxy write it: each
 * entry's request (the URL's path and query as the target, postData.text as
 * the body) and the response it got (content.text as the body), with
 * startedDateTime as the arrival time. HTTP/2 pseudo-headers are not
 * headers of the request: ":authority" becomes Host when there is none. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <http_parser.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* obj.text (decoded when obj.encoding is "base64") into *out. An absent
 * text is no bytes. */
static int load_text(json_t *obj, const char *what, unsigned char **out, size_t *len,
                     char **why)
{
    json_t *text = json_object_get(obj, "text");
    json_t *enc = json_object_get(obj, "encoding");
    if (text == NULL || json_is_null(text))
        return 0;
    if (!json_is_string(text))
        return ust_errf(why, UST_EPARSE, "%s.text: expected a string", what);
    const char *s = json_string_value(text);
    size_t n = json_string_length(text);
    if (enc != NULL && !json_is_null(enc) &&
        !(json_is_string(enc) && json_string_length(enc) == 0)) {
        if (!json_is_string(enc) || strcmp(json_string_value(enc), "base64") != 0)
            return ust_errf(why, UST_EPARSE,
                            "%s.encoding: expected \"base64\" (or none)", what);
        int rc = ust_base64_decode(s, n, out, len);
        if (rc == 0 && *len == 0) {
            ust_free(*out); /* no bytes: no body, as the log keeps it */
            *out = NULL;
        }
        return rc == UST_EPARSE ? ust_errf(why, rc, "%s.text: not valid base64", what)
                                : rc;
    }
    if (n > 0 && (*out = ust_memdup(s, n)) == NULL)
        return UST_ENOMEM;
    *len = n;
    return 0;
}

/* obj.headers ([{name, value}, ...]) appended to req in order; pseudo-headers
 * left out, the value of ":authority" in *authority (when not NULL). */
static int load_headers(json_t *obj, const char *what, ust_request *req,
                        const char **authority, char **why)
{
    json_t *arr = json_object_get(obj, "headers");
    if (!json_is_array(arr))
        return ust_errf(why, UST_EPARSE,
                        "%s.headers: expected an array of {name, value}", what);
    size_t i;
    json_t *h;
    json_array_foreach(arr, i, h)
    {
        json_t *name = json_object_get(h, "name"), *value = json_object_get(h, "value");
        if (!json_is_string(name) || !json_is_string(value) ||
            json_string_length(name) == 0)
            return ust_errf(why, UST_EPARSE,
                            "%s.headers[%zu]: expected a name and a value, strings",
                            what, i);
        const char *n = json_string_value(name), *v = json_string_value(value);
        /* A pseudo-header's name is ':' and a token, its value checked as any. */
        size_t skip = n[0] == ':';
        const char *fault = ust_http_header_fault(
            n + skip, json_string_length(name) - skip, v, json_string_length(value));
        if (fault != NULL)
            return ust_errf(why, UST_EPARSE, "%s.headers[%zu]: %s", what, i, fault);
        if (skip) {
            if (authority != NULL && strcasecmp(n, ":authority") == 0)
                *authority = v;
            continue;
        }
        if (ust_request_add_header(req, n, v) != 0)
            return UST_ENOMEM;
    }
    return 0;
}

/* The target of url: its path ("/" when none) and query, no fragment. */
static int target_of(const char *url, size_t len, char **out, char **why)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, len, 0, &u) != 0 ||
        !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)))
        return ust_errf(why, UST_EPARSE, "request.url is not a URL");
    const char *path = "/";
    size_t path_len = 1;
    if (u.field_set & (1 << UF_PATH)) {
        path = url + u.field_data[UF_PATH].off;
        path_len = u.field_data[UF_PATH].len;
    }
    int query = (u.field_set & (1 << UF_QUERY)) != 0;
    *out = query ? ust_sprintf("%.*s?%.*s", (int)path_len, path,
                               (int)u.field_data[UF_QUERY].len,
                               url + u.field_data[UF_QUERY].off)
                 : ust_strndup(path, path_len);
    return *out == NULL ? UST_ENOMEM : 0;
}

static int load_request(json_t *entry, ust_request *req, char **why)
{
    json_t *r = json_object_get(entry, "request");
    json_t *started = json_object_get(entry, "startedDateTime");
    if (!json_is_object(r))
        return ust_errf(why, UST_EPARSE, "request: expected an object");
    if (!json_is_string(started) ||
        ust_time_parse(json_string_value(started), &req->received_at_us) != 0 ||
        req->received_at_us < 0)
        return ust_errf(why, UST_EPARSE,
                        "startedDateTime: expected an RFC 3339 time from 1970 on, such"
                        " as 2026-11-29T10:00:00.123+01:00");
    json_t *method = json_object_get(r, "method"), *url = json_object_get(r, "url");
    if (!json_is_string(method) ||
        !ust_http_token(json_string_value(method), json_string_length(method)))
        return ust_errf(why, UST_EPARSE,
                        "request.method: expected a method (an HTTP"
                        " token)");
    if (!json_is_string(url))
        return ust_errf(why, UST_EPARSE, "request.url: expected a string");
    int rc =
        target_of(json_string_value(url), json_string_length(url), &req->target, why);
    if (rc != 0)
        return rc;
    if ((req->method = ust_strdup(json_string_value(method))) == NULL ||
        (req->remote = ust_strdup("-")) == NULL) /* HAR keeps no client address */
        return UST_ENOMEM;
    const char *authority = NULL;
    if ((rc = load_headers(r, "request", req, &authority, why)) != 0)
        return rc;
    if (authority != NULL && ust_request_header(req, "Host") == NULL) {
        /* First, where an HTTP/1.1 request carries it. */
        if (ust_request_add_header(req, "Host", authority) != 0)
            return UST_ENOMEM;
        ust_header host = req->headers[req->n_headers - 1];
        memmove(req->headers + 1, req->headers,
                (req->n_headers - 1) * sizeof(req->headers[0]));
        req->headers[0] = host;
    }
    json_t *post = json_object_get(r, "postData");
    if (post == NULL || json_is_null(post))
        return 0;
    if (!json_is_object(post))
        return ust_errf(why, UST_EPARSE, "request.postData: expected an object");
    json_t *params = json_object_get(post, "params");
    if (json_object_get(post, "text") == NULL && json_array_size(params) > 0)
        return ust_errf(why, UST_EPARSE,
                        "request.postData: params without text, a body that cannot be"
                        " rebuilt byte for byte");
    return load_text(post, "request.postData", &req->body, &req->body_len, why);
}

static int load_response(json_t *entry, ust_response *resp, char **why)
{
    json_t *r = json_object_get(entry, "response");
    if (r == NULL || json_is_null(r))
        return 0;
    json_t *status = json_object_get(r, "status");
    if (!json_is_object(r) || !json_is_integer(status))
        return ust_errf(why, UST_EPARSE, "response.status: expected an integer");
    json_int_t s = json_integer_value(status);
    if (s <= 0) /* Chromium's 0, Playwright's -1: no answer came */
        return 0;
    if (s < 100 || s > 599)
        return ust_errf(why, UST_EPARSE, "response.status: %lld is not an HTTP status",
                        (long long)s);
    ust_request headers;
    memset(&headers, 0, sizeof(headers));
    int rc = load_headers(r, "response", &headers, NULL, why);
    if (rc == 0) {
        resp->status = (int)s;
        ust__capture_move_headers(&headers, resp);
    }
    ust_request_clear(&headers);
    json_t *content = json_object_get(r, "content");
    if (rc != 0 || content == NULL || json_is_null(content))
        return rc;
    if (!json_is_object(content))
        return ust_errf(why, UST_EPARSE, "response.content: expected an object");
    return load_text(content, "response.content", &resp->body, &resp->body_len, why);
}

#define NOWHERE SIZE_MAX /* a value the walk below could not find */

/* pos past the whitespace at it (NOWHERE stays NOWHERE). */
static size_t skip_space(const char *buf, size_t len, size_t pos)
{
    while (pos < len && buf[pos] != '\0' && strchr(" \t\r\n", buf[pos]) != NULL)
        pos++;
    return pos;
}

/* Where the JSON value at buf[pos] ends (jansson reads it and says how
 * far: JSON_DISABLE_EOF_CHECK), NOWHERE when it cannot be read; its text in
 * key (cut to cap bytes) when key is not NULL and it is a string. */
static size_t value_end(const char *buf, size_t len, size_t pos, char *key, size_t cap)
{
    json_error_t jerr;
    json_t *v =
        pos < len
            ? ust_json_loadb(buf + pos, len - pos,
                             JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL,
                             &jerr)
            : NULL;
    if (v == NULL)
        return NOWHERE;
    if (key != NULL)
        snprintf(key, cap, "%s",
                 json_is_string(v) &&
                         strlen(json_string_value(v)) == json_string_length(v)
                     ? json_string_value(v)
                     : "");
    json_decref(v);
    return pos + (size_t)jerr.position;
}

/* Where the value of want is in the object that starts at buf[pos] (its
 * '{'), or NOWHERE. */
static size_t member_at(const char *buf, size_t len, size_t pos, const char *want)
{
    if (pos >= len || buf[pos] != '{')
        return NOWHERE;
    pos = skip_space(buf, len, pos + 1);
    while (pos < len && buf[pos] == '"') {
        char key[16];
        pos = skip_space(buf, len, value_end(buf, len, pos, key, sizeof(key)));
        if (pos >= len || buf[pos] != ':')
            return NOWHERE;
        pos = skip_space(buf, len, pos + 1);
        if (strcmp(key, want) == 0)
            return pos;
        pos = skip_space(buf, len, value_end(buf, len, pos, NULL, 0));
        if (pos >= len || buf[pos] != ',')
            return NOWHERE;
        pos = skip_space(buf, len, pos + 1);
    }
    return NOWHERE;
}

/* The line log.entries[i] starts on, 0 when it cannot be told. jansson
 * keeps no positions in the tree it builds, so the document (already read
 * whole: it is JSON) is walked again, a value at a time, to say where a
 * refused entry is: only on the way to an error. */
static size_t entry_line(const char *buf, size_t len, size_t i)
{
    size_t pos = member_at(buf, len, skip_space(buf, len, 0), "log");
    pos = member_at(buf, len, pos, "entries");
    if (pos >= len || buf[pos] != '[')
        return 0;
    pos = skip_space(buf, len, pos + 1);
    for (size_t j = 0; j < i && pos < len; j++) {
        pos = skip_space(buf, len, value_end(buf, len, pos, NULL, 0));
        pos = pos < len && buf[pos] == ',' ? skip_space(buf, len, pos + 1) : NOWHERE;
    }
    return pos < len ? ust__line_of(buf, buf + pos) : 0;
}

int ust__har_parse(const char *buf, size_t len, const char *label, ust__capture *out,
                   char **err)
{
    memset(out, 0, sizeof(*out));
    /* HAR readers must accept and ignore a byte order mark (HAR 1.2). */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
        buf += 3;
        len -= 3;
    }
    json_error_t jerr;
    json_t *root =
        ust_json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (root == NULL)
        return json_error_code(&jerr) == json_error_out_of_memory
                   ? ust_errf(err, UST_ENOMEM, "out of memory")
                   : ust_errf(err, UST_EPARSE, "%s: not JSON: %s (line %d, column %d)",
                              label, jerr.text, jerr.line, jerr.column);
    json_t *entries = json_object_get(json_object_get(root, "log"), "entries");
    int rc = 0;
    if (!json_is_array(entries))
        rc = ust_errf(err, UST_EPARSE, "%s: not a HAR: no log.entries array", label);
    size_t i;
    json_t *entry;
    json_array_foreach(entries, i, entry)
    {
        if (rc != 0)
            break;
        ust__capture_entry *e = ust__capture_push(out);
        if (e == NULL) {
            rc = UST_ENOMEM;
            break;
        }
        snprintf(e->where, sizeof(e->where), "entry %zu", i + 1);
        char *why = NULL;
        if (!json_is_object(entry))
            rc = ust_errf(&why, UST_EPARSE, "expected an object");
        else if ((rc = load_request(entry, &e->req, &why)) == 0)
            rc = load_response(entry, &e->response, &why);
        if (rc != 0)
            rc = ust__capture_fail(err, rc, label, entry_line(buf, len, i), e->where,
                                   why);
        ust_free(why);
    }
    json_decref(root);
    if (rc != 0)
        ust__capture_clear(out);
    return rc;
}
