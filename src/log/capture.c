/* Captures of other tools (HAR, GoReplay) as their parsers hand them to
 * import: requests with the answers they got. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

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

int ust__capture_fail(char **err, int rc, const char *label, size_t line,
                      const char *where, const char *why)
{
    why = why != NULL ? why : ust_strerror(rc);
    return line > 0 ? ust_errf(err, rc, "%s:%zu: %s: %s", label, line, where, why)
                    : ust_errf(err, rc, "%s: %s: %s", label, where, why);
}

size_t ust__line_of(const char *buf, const char *p)
{
    size_t line = 1;
    for (const char *nl; (nl = memchr(buf, '\n', (size_t)(p - buf))) != NULL;
         buf = nl + 1)
        line++;
    return line;
}
