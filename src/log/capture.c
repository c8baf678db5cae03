/* Captures of other tools (HAR, GoReplay) as their parsers hand them to
 * import: requests with the answers they got. */
#include "log/log_internal.h"

#include <understudy/alloc.h>

#include <string.h>

ust__capture_entry *ust__capture_push(ust__capture *c)
{
    ust__capture_entry *grown = ust_grow(c->v, &c->cap, c->n + 1, 16, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    c->v = grown;
    ust__capture_entry *e = &c->v[c->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

void ust__capture_clear(ust__capture *c)
{
    for (size_t i = 0; i < c->n; i++) {
        ust_request_clear(&c->v[i].req);
        ust_response_clear(&c->v[i].response);
    }
    ust_free(c->v);
    memset(c, 0, sizeof(*c));
}

void ust__capture_move_headers(ust_request *req, ust_response *r)
{
    r->headers = req->headers;
    r->n_headers = req->n_headers;
    req->headers = NULL;
    req->n_headers = 0;
}

int ust__capture_header_ok(const char *name, size_t name_len, const char *value,
                           size_t value_len)
{
    return strcspn(name, "\r\n") == name_len && strcspn(value, "\r\n") == value_len;
}
