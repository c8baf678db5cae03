/* Debian's http-parser reads the protocol; this adds what it leaves out.
 * Limits are checked before anything is allocated for them. The library is
 * built lenient (HTTP_PARSER_STRICT 0): it takes "Name : value", a name
 * with a space, a first header line that starts with a space and obs-fold
 * continuation lines, each of which a proxy in front may read otherwise
 * (RFC 9112 5.1, 5.2): those are refused here, from the callbacks. */
#include "http/request_parse.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <limits.h>
#include <string.h>
#include <strings.h>

/* Nonzero stops the parser; -1 rather than 1, which on_headers_complete
 * would take as "no body follows". */
int ust__reqparse_stop(ust__reqparse *rp, int status, const char *why)
{
    rp->refuse = status;
    rp->refuse_why = why;
    return -1;
}

static int on_message_begin(http_parser *p)
{
    ust__reqparse *rp = p->data;
    ust_request_clear(&rp->req);
    rp->target_len = rp->header_bytes = rp->body_cap = rp->headers_cap = 0;
    rp->in_value = 0;
    rp->in_message = 1;
    return rp->ops->begin ? rp->ops->begin(rp) : 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    ust__reqparse *rp = p->data;
    if (rp->target_len + n > UST__MAX_TARGET)
        return ust__reqparse_stop(rp, 431, "the request target is too long");
    return ust_str_append(&rp->req.target, &rp->target_len, at, n)
               ? ust__reqparse_stop(rp, 503, "out of memory")
               : 0;
}

/* The header read so far joins the request: the name and value the parser
 * gathered are handed over, not copied. */
static int end_header(ust__reqparse *rp)
{
    if (rp->field == NULL)
        return 0;
    ust_request *req = &rp->req;
    ust_header *grown =
        ust_grow(req->headers, &rp->headers_cap, req->n_headers + 1, 8, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    req->headers = grown;
    if (rp->value == NULL && (rp->value = ust_strdup("")) == NULL)
        return UST_ENOMEM;
    req->headers[req->n_headers++] = (ust_header){rp->field, rp->value};
    rp->field = rp->value = NULL;
    rp->field_len = rp->value_len = 0;
    return 0;
}

static void piece_end(ust__reqparse *rp, const char *end)
{
    rp->last_end = end;
    rp->nl_since = 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    ust__reqparse *rp = p->data;
    if ((rp->header_bytes += n) > UST__MAX_HEADER_BYTES)
        return ust__reqparse_stop(rp, 431, "the request headers are too large");
    /* A field name is a token: no space before the colon, none inside, and
     * no header line that starts with one. */
    if (memchr(at, ' ', n) != NULL || memchr(at, '\t', n) != NULL)
        return ust__reqparse_stop(rp, 400,
                                  "a header name holds a space or tab (RFC 9112 5.1)");
    if (rp->in_value || rp->field == NULL) {
        if (end_header(rp) != 0)
            return ust__reqparse_stop(rp, 503, "out of memory");
        if (rp->req.n_headers >= rp->cfg->limits.max_headers)
            return ust__reqparse_stop(rp, 431, "too many request headers");
        rp->in_value = 0;
    }
    piece_end(rp, at + n);
    return ust_str_append(&rp->field, &rp->field_len, at, n)
               ? ust__reqparse_stop(rp, 503, "out of memory")
               : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    ust__reqparse *rp = p->data;
    if ((rp->header_bytes += n) > UST__MAX_HEADER_BYTES)
        return ust__reqparse_stop(rp, 431, "the request headers are too large");
    const char *from = rp->last_end ? rp->last_end : rp->buf;
    if (rp->nl_since || memchr(from, '\n', (size_t)(at - from)) != NULL)
        return ust__reqparse_stop(rp, 400,
                                  "a header is continued on the next line (obs-fold, "
                                  "RFC 9112 5.2)");
    rp->in_value = 1;
    piece_end(rp, at + n);
    return ust_str_append(&rp->value, &rp->value_len, at, n)
               ? ust__reqparse_stop(rp, 503, "out of memory")
               : 0;
}

static int on_headers_complete(http_parser *p)
{
    ust__reqparse *rp = p->data;
    if (end_header(rp) != 0)
        return ust__reqparse_stop(rp, 503, "out of memory");
    /* Checked before a byte of the body is stored, and before the client
     * is told to send it. */
    if (p->content_length != ULLONG_MAX &&
        p->content_length > (uint64_t)rp->cfg->limits.max_body_bytes)
        return ust__reqparse_stop(rp, 413, "the request body is over the limit");
    const char *expect = ust_request_header(&rp->req, "Expect");
    /* An HTTP/1.0 client cannot wait for 100 (RFC 9110 10.1.1): ignored. */
    if (expect != NULL && (p->http_major > 1 || p->http_minor > 0)) {
        if (strcasecmp(expect, "100-continue") != 0)
            return ust__reqparse_stop(rp, 417,
                                      "the only expectation served is "
                                      "100-continue");
        if (rp->ops->expect_continue != NULL && rp->ops->expect_continue(rp) != 0)
            return -1;
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    ust__reqparse *rp = p->data;
    size_t max = rp->cfg->limits.max_body_bytes;
    ust_request *req = &rp->req;
    if (req->body_len + n > max)
        return ust__reqparse_stop(rp, 413, "the request body is over the limit");
    if (req->body_len + n > rp->body_cap) {
        size_t cap = rp->body_cap ? rp->body_cap : 1024;
        while (cap < req->body_len + n)
            cap *= 2;
        if (cap > max)
            cap = max;
        unsigned char *grown = ust_realloc(req->body, cap);
        if (grown == NULL)
            return ust__reqparse_stop(rp, 503, "out of memory");
        req->body = grown;
        rp->body_cap = cap;
    }
    memcpy(req->body + req->body_len, at, n);
    req->body_len += n;
    return 0;
}

static int on_message_complete(http_parser *p)
{
    ust__reqparse *rp = p->data;
    rp->in_message = 0;
    return rp->ops->complete ? rp->ops->complete(rp) : 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void ust__reqparse_init(ust__reqparse *rp, const ust_config *cfg,
                        const ust__reqparse_ops *ops, void *data)
{
    memset(rp, 0, sizeof(*rp));
    http_parser_init(&rp->parser, HTTP_REQUEST);
    rp->parser.data = rp;
    rp->cfg = cfg;
    rp->ops = ops;
    rp->data = data;
}

void ust__reqparse_clear(ust__reqparse *rp)
{
    ust_request_clear(&rp->req);
    ust_free(rp->field);
    ust_free(rp->value);
    rp->field = rp->value = NULL;
    rp->field_len = rp->value_len = rp->target_len = rp->body_cap = rp->headers_cap = 0;
}

int ust__reqparse_feed(ust__reqparse *rp, const char *buf, size_t n, const char **why)
{
    rp->buf = buf;
    rp->last_end = NULL;
    size_t done = http_parser_execute(&rp->parser, &settings, buf, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&rp->parser);
    /* Paused by the owner at a request's end: the rest is not read yet. */
    rp->paused = e == HPE_PAUSED;
    rp->used = rp->paused ? done : n;
    const char *from = rp->last_end ? rp->last_end : buf;
    if (from < buf + rp->used && memchr(from, '\n', (size_t)(buf + rp->used - from)))
        rp->nl_since = 1;
    rp->last_end = NULL;
    if (rp->paused) {
        http_parser_pause(&rp->parser, 0); /* the next feed goes on from there */
        return 0;
    }
    if (done == n && e == HPE_OK)
        return 0;
    if (rp->refuse == 0)
        rp->refuse_why = http_errno_description(e);
    *why = rp->refuse_why;
    return rp->refuse ? rp->refuse : 400;
}

void ust__reqparse_pause(ust__reqparse *rp)
{
    http_parser_pause(&rp->parser, 1);
}

int ust__reqparse_take(ust__reqparse *rp, const char *remote, int64_t now_us,
                       ust_request *out)
{
    ust_request *req = &rp->req;
    req->received_at_us = now_us;
    req->method = ust_strdup(http_method_str((enum http_method)rp->parser.method));
    req->remote = ust_strdup(remote);
    int rc = req->method && req->remote ? 0 : UST_ENOMEM;
    *out = *req;
    memset(req, 0, sizeof(*req));
    rp->target_len = rp->body_cap = rp->headers_cap = 0;
    return rc;
}
