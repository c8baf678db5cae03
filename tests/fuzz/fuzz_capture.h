/* What the HAR and GoReplay harnesses check of a parsed capture: each
 * request is something the log and a url plugin can carry (a method, a
 * target starting with '/', an arrival time from 1970 on, a body pointer
 * only with bytes, no header a peer would read otherwise: a name that is a
 * token, so no pseudo-header, a value without CR, LF or NUL), each answer
 * none or an HTTP status; or, refused, nothing
 * kept and a message naming the file. */
#ifndef UST_FUZZ_CAPTURE_H
#define UST_FUZZ_CAPTURE_H

#include "fuzz.h"

#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

static inline void fuzz_check_headers(const ust_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(ust_http_token(h[i].name, strlen(h[i].name)));
        FUZZ_CHECK(strpbrk(h[i].value, "\r\n") == NULL);
    }
}

/* rc, c and err as the parser left them; c cleared and err freed here. */
static inline void fuzz_check_capture(int rc, ust__capture *c, char *err,
                                      const char *label)
{
    if (rc == 0) {
        FUZZ_CHECK(err == NULL);
        for (size_t i = 0; i < c->n; i++) {
            const ust__capture_entry *e = &c->v[i];
            FUZZ_CHECK(e->req.method != NULL && e->req.method[0] != '\0');
            FUZZ_CHECK(e->req.target != NULL && e->req.target[0] == '/');
            FUZZ_CHECK(e->req.received_at_us >= 0);
            FUZZ_CHECK((e->req.body == NULL) == (e->req.body_len == 0));
            fuzz_check_headers(e->req.headers, e->req.n_headers);
            FUZZ_CHECK(e->response.status == 0 ||
                       (e->response.status >= 100 && e->response.status <= 599));
            fuzz_check_headers(e->response.headers, e->response.n_headers);
        }
        ust__capture_clear(c);
    } else {
        size_t n = strlen(label);
        FUZZ_CHECK(c->n == 0 && c->v == NULL);
        FUZZ_CHECK(err != NULL);
        FUZZ_CHECK(rc != UST_EPARSE || (strncmp(err, label, n) == 0 && err[n] == ':'));
    }
    ust_free(err);
}

/* One harness input: data parsed by parse as a file called label, then
 * checked; both harnesses are this call with their parser and label. */
typedef int (*fuzz_capture_parse)(const char *buf, size_t len, const char *label,
                                  ust__capture *out, char **err);

static inline int fuzz_capture_one(fuzz_capture_parse parse, const uint8_t *data,
                                   size_t size, const char *label)
{
    ust__capture c;
    char *err = NULL;
    int rc = parse((const char *)data, size, label, &c, &err);
    fuzz_check_capture(rc, &c, err, label);
    return 0;
}

#endif
