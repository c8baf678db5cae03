/* `log import --format goreplay` on one input: the bytes are a GoReplay
 * file read by ust__goreplay_parse (payloads split on the separator, the
 * header lines, http-parser on each raw message, responses matched to their
 * requests by id), the parser ust_log_import_capture runs before it derives
 * and appends. Invariants: a file is read whole or refused naming it and,
 * for a bad payload, its number; each request read has a method, a target
 * starting with '/', headers without CR, LF or NUL, at most one answer with
 * a status of 100..599 or none. */
#include "fuzz.h"

#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#define LABEL "fuzz.gor"

static void check_headers(const ust_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(h[i].name[0] != '\0');
        FUZZ_CHECK(strpbrk(h[i].name, "\r\n") == NULL);
        FUZZ_CHECK(strpbrk(h[i].value, "\r\n") == NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust__capture c;
    char *err = NULL;
    int rc = ust__goreplay_parse((const char *)data, size, LABEL, &c, &err);
    if (rc == 0) {
        FUZZ_CHECK(err == NULL);
        for (size_t i = 0; i < c.n; i++) {
            const ust__capture_entry *e = &c.v[i];
            FUZZ_CHECK(e->req.method != NULL && e->req.method[0] != '\0');
            FUZZ_CHECK(e->req.target != NULL && e->req.target[0] == '/');
            FUZZ_CHECK(e->req.received_at_us >= 0);
            FUZZ_CHECK(strncmp(e->where, "payload ", 8) == 0);
            check_headers(e->req.headers, e->req.n_headers);
            FUZZ_CHECK(e->response.status == 0 ||
                       (e->response.status >= 100 && e->response.status <= 599));
            check_headers(e->response.headers, e->response.n_headers);
        }
        ust__capture_clear(&c);
    } else {
        FUZZ_CHECK(c.n == 0 && c.v == NULL);
        FUZZ_CHECK(err != NULL);
        FUZZ_CHECK(rc != UST_EPARSE || strncmp(err, LABEL ": ", 10) == 0);
    }
    ust_free(err);
    return 0;
}
