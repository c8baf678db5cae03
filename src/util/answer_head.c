/* An answer's head, line by line (answer_head.h). libcurl has checked the
 * framing it needs; what it hands on is read here strictly, since the
 * fields go on to a decision and, with serve --respond upstream, to a
 * caller: nothing in them is dropped, joined or moved silently. */
#include "util/answer_head.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

static int is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

static void drop_headers(ust_http_result *r)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        ust_free(r->headers[i].name);
        ust_free(r->headers[i].value);
    }
    r->n_headers = 0;
}

/* "HTTP/1.1 204 No Content" -> 204; 0 when no three digits follow. */
static int status_of(const char *line, size_t len)
{
    const char *sp = memchr(line, ' ', len);
    if (sp == NULL || (size_t)(line + len - sp) < 4)
        return 0;
    int status = 0;
    for (int i = 1; i <= 3; i++) {
        if (sp[i] < '0' || sp[i] > '9')
            return 0;
        status = status * 10 + (sp[i] - '0');
    }
    return status;
}

/* An obsolete folded line continues the previous value (RFC 9112 5.2:
 * one SP in its place). */
static int fold(ust_http_result *r, const char *line, size_t end)
{
    size_t s = 0;
    while (s < end && is_ows(line[s]))
        s++;
    ust_header *h = &r->headers[r->n_headers - 1];
    char *v = ust_sprintf("%s %.*s", h->value, (int)(end - s), line + s);
    if (v == NULL)
        return UST_ENOMEM;
    ust_free(h->value);
    h->value = v;
    return 0;
}

static int field(ust_http_result *r, const char *line, size_t end, const char **why)
{
    const char *colon = memchr(line, ':', end);
    if (colon == NULL) {
        *why = "a header line is not \"name: value\"";
        return UST_EPARSE;
    }
    if (r->n_headers >= UST__ANSWER_MAX_HEADERS)
        return UST_ELIMIT;
    size_t nlen = (size_t)(colon - line);
    size_t vs = nlen + 1;
    while (vs < end && is_ows(line[vs]))
        vs++;
    size_t ve = end;
    while (ve > vs && is_ows(line[ve - 1]))
        ve--;
    ust_header *grown = ust_realloc(r->headers, (r->n_headers + 1) * sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    r->headers = grown;
    char *name = ust_strndup(line, nlen);
    char *value = ust_strndup(line + vs, ve - vs);
    if (name == NULL || value == NULL) {
        ust_free(name);
        ust_free(value);
        return UST_ENOMEM;
    }
    r->headers[r->n_headers].name = name;
    r->headers[r->n_headers].value = value;
    r->n_headers++;
    return 0;
}

int ust__answer_head_line(ust__answer_head *h, const char *line, size_t len,
                          ust_http_result *r, const char **why)
{
    size_t end = len;
    while (end > 0 && (line[end - 1] == '\r' || line[end - 1] == '\n'))
        end--;
    if (memchr(line, '\0', end) != NULL) {
        *why = "a header line holds a NUL";
        return UST_EPARSE;
    }
    if (end == 0) { /* the blank line: a head (or the trailer) ends */
        if (h->in_head && !(h->status >= 100 && h->status < 200))
            h->done = 1;
        h->in_head = 0;
        return 0;
    }
    if (h->done) {
        *why = "the answer has a trailer (a field after its body), which is not"
               " relayed";
        return UST_EPARSE;
    }
    if (end >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        if (h->in_head) {
            *why = "a header line starts with HTTP/ (a second status line)";
            return UST_EPARSE;
        }
        drop_headers(r); /* an interim answer's, or none */
        h->in_head = 1;
        h->status = status_of(line, end);
        return 0;
    }
    if (!h->in_head) {
        *why = "a header line comes before any status line";
        return UST_EPARSE;
    }
    if (is_ows(line[0]) && r->n_headers > 0)
        return fold(r, line, end);
    return field(r, line, end, why);
}
