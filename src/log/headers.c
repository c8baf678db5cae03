/* Headers keep their order and duplicates. In the interchange format they are
 * a JSON array of [name, value] pairs; in the log they are packed as
 * "name\0value\0" pairs, which costs no JSON work on the append path and
 * cannot be ambiguous because HTTP header fields never hold a NUL byte
 * (ust__headers_load refuses one). A name or value that is not UTF-8 is
 * {"base64": ...} in the interchange format (written by jsonl.c). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

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
