/* `log import --format har` on one input: the bytes are a HAR file read by
 * ust__har_parse, the parser ust_log_import_capture runs before it derives
 * and appends (derivation and the append are fuzz_import_line's).
 * Invariants: a HAR is read whole or refused naming the file; what is read
 * is something the log and a url plugin can carry: a method, a target
 * starting with '/', headers without pseudo-headers, CR, LF or NUL, an
 * answer's status 0 (none) or 100..599, and arrival times from 1970 on. */
#include "fuzz.h"

#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#define LABEL "fuzz.har"

static void check_headers(const ust_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(h[i].name[0] != '\0' && h[i].name[0] != ':');
        FUZZ_CHECK(strpbrk(h[i].name, "\r\n") == NULL);
        FUZZ_CHECK(strpbrk(h[i].value, "\r\n") == NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust__capture c;
    char *err = NULL;
    int rc = ust__har_parse((const char *)data, size, LABEL, &c, &err);
    if (rc == 0) {
        FUZZ_CHECK(err == NULL);
        for (size_t i = 0; i < c.n; i++) {
            const ust__capture_entry *e = &c.v[i];
            FUZZ_CHECK(e->req.method != NULL && e->req.method[0] != '\0');
            FUZZ_CHECK(e->req.target != NULL && e->req.target[0] == '/');
            FUZZ_CHECK(e->req.received_at_us >= 0);
            FUZZ_CHECK((e->req.body == NULL) == (e->req.body_len == 0));
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
