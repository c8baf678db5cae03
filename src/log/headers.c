/* Headers travel as a JSON array of [name, value] pairs: order and duplicates
 * are kept, which an object would lose. The same shape in the log and in the
 * interchange format. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

char *ust__headers_dump(const ust_request *req)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < req->n_headers; i++) {
        json_t *pair = json_pack("[ss]", req->headers[i].name, req->headers[i].value);
        if (pair == NULL || json_array_append_new(arr, pair) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return text;
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
        if (ust_request_add_header(req, json_string_value(name),
                                   json_string_value(value)) != 0)
            return UST_ENOMEM;
    }
    return 0;
}
