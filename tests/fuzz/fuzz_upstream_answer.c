/* libFuzzer target: a service's answer as serve --respond upstream (and
 * the url kind) takes it. The input's lines (cut after each LF, as libcurl
 * hands them to the client's header callback) go through
 * ust__answer_head_line (src/util/answer_head.c); after the blank line of
 * the final head, the next line is the body and any line after it a
 * trailer. An answer whose head was read is decided (ust_http_answer_decide)
 * and put to ust__upstream_withhold, the rule the responder relays by.
 * Invariants: a head that is refused is never an answer; an answer relayed
 * has a status of 200-599 and only token names and values without CR, LF
 * or NUL (so each is one line on the wire); an answer withheld is recorded
 * as an error decision saying it is refused, and the caller's cause names
 * no url. */
#include "fuzz.h"

#include "http/upstream.h"
#include "util/answer_head.h"

#include <understudy/alloc.h>
#include <understudy/answer.h>
#include <understudy/error.h>

static int token(const char *s)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    if (*s == '\0')
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z') || (*p != '\0' && strchr(tchar, *p) != NULL)))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust_http_result r;
    memset(&r, 0, sizeof(r));
    ust__answer_head h = {0};
    const char *why = NULL;
    const unsigned char *body = NULL;
    size_t body_len = 0;
    int rc = 0, body_taken = 0;
    for (size_t at = 0; at < size && rc == 0;) {
        const uint8_t *lf = memchr(data + at, '\n', size - at);
        size_t len = lf ? (size_t)(lf - (data + at)) + 1 : size - at;
        if (h.done && !body_taken) {
            body = data + at; /* on_body's bytes, never a head line */
            body_len = len;
            body_taken = 1;
        } else {
            rc = ust__answer_head_line(&h, (const char *)data + at, len, &r, &why);
        }
        at += len;
    }
    FUZZ_CHECK(rc != UST_EPARSE || why != NULL);
    if (rc != 0 || !h.done) {
        ust_http_result_clear(&r);
        return 0;
    }
    r.status = h.status;
    ust_http_answer a = {r.status, r.headers, r.n_headers, body, body_len};
    for (size_t i = 0; i < r.n_headers; i++)
        FUZZ_CHECK(strchr(r.headers[i].value, '\n') == NULL);
    ust_decision d;
    FUZZ_CHECK(ust_http_answer_decide(&a, NULL, &d) == 0);
    if (body_len > 0) { /* as libcurl's body: the result's own */
        r.body = ust_malloc(body_len);
        FUZZ_CHECK(r.body != NULL);
        memcpy(r.body, body, body_len);
        r.body_len = body_len;
    }
    const char *refused = ust_http_answer_refusal(&a);
    FUZZ_CHECK(ust__upstream_withhold(&r) == 0);
    if (refused != NULL) {
        /* Recorded as refused, and never relayed. */
        FUZZ_CHECK(d.verdict == UST_VERDICT_ERROR);
        FUZZ_CHECK(strncmp(d.error, "the answer is refused", 21) == 0);
        FUZZ_CHECK(r.failure == UST_EPARSE && r.n_headers == 0 && r.body == NULL);
        int status = 0;
        char *shown = ust__upstream_failure_body(&r, &status);
        FUZZ_CHECK(shown != NULL && status == 502 && strstr(shown, "://") == NULL);
        ust_free(shown);
    } else {
        FUZZ_CHECK(r.failure == 0);
        FUZZ_CHECK(r.status >= 200 && r.status <= 599);
        for (size_t i = 0; i < r.n_headers; i++) {
            FUZZ_CHECK(token(r.headers[i].name));
            FUZZ_CHECK(strpbrk(r.headers[i].value, "\r\n") == NULL);
        }
        FUZZ_CHECK(d.error == NULL ||
                   strncmp(d.error, "the answer is refused", 21) != 0);
    }
    ust_decision_clear(&d);
    ust_http_result_clear(&r);
    return 0;
}
