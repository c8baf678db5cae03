/* An answer's head, line by line (answer_head.h). libcurl has checked the
 * framing it needs; what it hands on is read here strictly, since the
 * fields go on to a decision and, with serve --respond upstream, to a
 * caller: nothing in them is dropped, joined or moved silently. */
#include "util/answer_head.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>
#include <strings.h>

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

/* 1 when every comma separated element of the Content-Length value v
 * (vlen bytes) is the same as ref (rlen bytes; the first element when ref
 * is NULL). */
static int lengths_agree(const char *v, size_t vlen, const char *ref, size_t rlen)
{
    for (size_t i = 0; i <= vlen;) {
        while (i < vlen && is_ows(v[i]))
            i++;
        size_t e = i;
        while (e < vlen && v[e] != ',')
            e++;
        size_t t = e;
        while (t > i && is_ows(v[t - 1]))
            t--;
        if (ref == NULL) {
            ref = v + i;
            rlen = t - i;
        } else if (t - i != rlen || memcmp(v + i, ref, rlen) != 0)
            return 0;
        i = e + 1;
    }
    return 1;
}

/* RFC 9112 6.3: Content-Length fields that disagree make the framing
 * invalid; a proxy answers 502. libcurl reads the last one, so the body
 * relayed ran past the end the first one gave (the start of whatever came
 * next on the connection). */
static int framing_disagrees(const ust_http_result *r, const char *name, size_t nlen,
                             const char *value, size_t vlen)
{
    if (nlen != 14 || strncasecmp(name, "Content-Length", 14) != 0)
        return 0;
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcasecmp(r->headers[i].name, "Content-Length") == 0)
            return !lengths_agree(value, vlen, r->headers[i].value,
                                  strcspn(r->headers[i].value, ", \t"));
    return !lengths_agree(value, vlen, NULL, 0);
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
    if (framing_disagrees(r, line, nlen, line + vs, ve - vs)) {
        *why = "its Content-Length fields disagree (RFC 9112 6.3: the framing is"
               " invalid)";
        return UST_EPARSE;
    }
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
    if (is_ows(line[0])) {
        /* An obsolete folded line (RFC 9112 5.2): refused, as serve refuses
         * one in a request, rather than joined to a value (a folded
         * Content-Length would escape the framing check). */
        *why = "a header is continued on the next line (obs-fold, RFC 9112 5.2)";
        return UST_EPARSE;
    }
    return field(r, line, end, why);
}
