/* Headers keep their order and duplicates. In the interchange format they are
 * a JSON array of [name, value] pairs; in the log they are packed as
 * "name\0value\0" pairs, which costs no JSON work on the append path and
 * cannot be ambiguous because HTTP header fields never hold a NUL byte
 * (ust__headers_load refuses one). A name or value that is not UTF-8 is
 * {"base64": ...} in the interchange format. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

/* A header name or value: a string, or {"base64": ...} when not UTF-8. */
static json_t *header_text(const char *s)
{
    int is_base64;
    json_t *v = ust__jsonl_text(s, &is_base64);
    if (v == NULL || !is_base64)
        return v;
    json_t *o = json_object();
    if (o == NULL || json_object_set_new(o, "base64", v) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *ust__headers_json(const ust_header *headers, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        json_t *pair = json_array();
        int bad = pair == NULL ||
                  json_array_append_new(pair, header_text(headers[i].name)) != 0 ||
                  json_array_append_new(pair, header_text(headers[i].value)) != 0;
        if (bad)
            json_decref(pair);
        if (bad || json_array_append_new(arr, pair) != 0) { /* it takes pair */
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static int header_load(json_t *v, size_t i, const char *part, char **out, char **err)
{
    json_t *b64 = json_is_object(v) ? json_object_get(v, "base64") : NULL;
    const char *why = "expected a string or {\"base64\": ...}";
    int rc = json_is_object(v) && (b64 == NULL || json_object_size(v) != 1)
                 ? UST_EPARSE
                 : ust__jsonl_text_load(b64 ? b64 : v, b64 != NULL, out, &why);
    if (rc == UST_EPARSE)
        return ust_errf(err, rc, "headers[%zu] %s: %s", i, part, why);
    return rc;
}

int ust__headers_load(json_t *array, ust_request *req, char **err)
{
    if (!json_is_array(array))
        return ust_errf(err, UST_EPARSE, "headers: expected an array of [name, value]");
    size_t i;
    json_t *pair;
    json_array_foreach(array, i, pair)
    {
        if (!json_is_array(pair) || json_array_size(pair) != 2)
            return ust_errf(err, UST_EPARSE,
                            "headers[%zu]: expected [name, value] as two strings", i);
        char *name = NULL, *value = NULL;
        int rc = header_load(json_array_get(pair, 0), i, "name", &name, err);
        if (rc == 0)
            rc = header_load(json_array_get(pair, 1), i, "value", &value, err);
        if (rc == 0 && (name == NULL || name[0] == '\0'))
            rc = ust_errf(err, UST_EPARSE, "headers[%zu]: empty header name", i);
        if (rc == 0 && ust_request_add_header(req, name, value) != 0)
            rc = UST_ENOMEM;
        ust_free(name);
        ust_free(value);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int ust__headers_pack(ust_log *log, const ust_header *headers, size_t n_headers,
                      size_t *len)
{
    return ust_headers_pack(headers, n_headers, &log->pack, &log->pack_cap, len);
}
