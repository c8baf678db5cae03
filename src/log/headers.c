/* Headers keep their order and duplicates. In the interchange format they are
 * a JSON array of [name, value] pairs; in the log they are packed as
 * "name\0value\0" pairs, which costs no JSON work on the append path and
 * cannot be ambiguous because HTTP header fields never hold a NUL byte
 * (ust__headers_load refuses one). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

json_t *ust__headers_json(const ust_request *req)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < req->n_headers; i++) {
        json_t *pair = json_pack("[ss]", req->headers[i].name, req->headers[i].value);
        if (pair == NULL || json_array_append_new(arr, pair) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

int ust__headers_load(json_t *array, ust_request *req, char **err)
{
    if (!json_is_array(array))
        return ust_errf(err, UST_EPARSE, "headers: expected an array of [name, value]");
    size_t i;
    json_t *pair;
    json_array_foreach(array, i, pair)
    {
        json_t *name = json_array_get(pair, 0), *value = json_array_get(pair, 1);
        if (!json_is_array(pair) || json_array_size(pair) != 2 ||
            !json_is_string(name) || !json_is_string(value))
            return ust_errf(err, UST_EPARSE,
                            "headers[%zu]: expected [name, value] as two strings", i);
        if (json_string_length(name) == 0)
            return ust_errf(err, UST_EPARSE, "headers[%zu]: empty header name", i);
        if (strlen(json_string_value(name)) != json_string_length(name) ||
            strlen(json_string_value(value)) != json_string_length(value))
            return ust_errf(err, UST_EPARSE, "headers[%zu]: a NUL byte in a header", i);
        if (ust_request_add_header(req, json_string_value(name),
                                   json_string_value(value)) != 0)
            return UST_ENOMEM;
    }
    return 0;
}

int ust__headers_pack(ust_log *log, const ust_request *req, size_t *len)
{
    size_t need = 0;
    for (size_t i = 0; i < req->n_headers; i++)
        need += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 2;
    if (need > log->pack_cap) {
        char *grown = ust_realloc(log->pack, need);
        if (grown == NULL)
            return UST_ENOMEM;
        log->pack = grown;
        log->pack_cap = need;
    }
    char *p = log->pack;
    for (size_t i = 0; i < req->n_headers; i++) {
        size_t n = strlen(req->headers[i].name) + 1,
               v = strlen(req->headers[i].value) + 1;
        memcpy(p, req->headers[i].name, n);
        memcpy(p + n, req->headers[i].value, v);
        p += n + v;
    }
    *len = need;
    return 0;
}

int ust__headers_unpack(const void *blob, size_t len, ust_request *req, char **err)
{
    const char *p = blob, *end = p + len;
    if (len > 0 && end[-1] != '\0')
        return ust_errf(err, UST_EPARSE, "headers column is not packed pairs");
    size_t count = 0;
    for (const char *q = p; q < end; q++)
        count += *q == '\0';
    if (count % 2 != 0)
        return ust_errf(err, UST_EPARSE, "headers column holds a name without a value");
    if (count == 0)
        return 0;
    req->headers = ust_calloc(count / 2, sizeof(ust_header));
    if (req->headers == NULL)
        return UST_ENOMEM;
    while (p < end) {
        size_t n = strlen(p);
        const char *v = p + n + 1;
        size_t vn = strlen(v);
        ust_header *h = &req->headers[req->n_headers];
        h->name = ust_strndup(p, n);
        h->value = ust_strndup(v, vn);
        if (h->name == NULL || h->value == NULL) {
            ust_free(h->name);
            ust_free(h->value);
            return UST_ENOMEM;
        }
        req->n_headers++;
        p = v + vn + 1;
    }
    return 0;
}
