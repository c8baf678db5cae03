#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/request.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

static void free_headers(ust_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ust_free(h[i].name);
        ust_free(h[i].value);
    }
    ust_free(h);
}

void ust_request_clear(ust_request *req)
{
    if (req == NULL)
        return;
    ust_free(req->remote);
    ust_free(req->method);
    ust_free(req->target);
    free_headers(req->headers, req->n_headers);
    ust_free(req->body);
    memset(req, 0, sizeof(*req));
}

void ust_response_clear(ust_response *r)
{
    if (r == NULL)
        return;
    free_headers(r->headers, r->n_headers);
    ust_free(r->body);
    memset(r, 0, sizeof(*r));
}

int ust_request_add_header(ust_request *req, const char *name, const char *value)
{
    ust_header *grown =
        ust_realloc(req->headers, (req->n_headers + 1) * sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    req->headers = grown;
    char *n = ust_strdup(name);
    char *v = ust_strdup(value);
    if (n == NULL || v == NULL) {
        ust_free(n);
        ust_free(v);
        return UST_ENOMEM;
    }
    req->headers[req->n_headers].name = n;
    req->headers[req->n_headers].value = v;
    req->n_headers++;
    return 0;
}

const char *ust_request_header(const ust_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_headers; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

int ust_request_copy(ust_request *dst, const ust_request *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->received_at_us = src->received_at_us;
    dst->remote = ust_strdup(src->remote);
    dst->method = ust_strdup(src->method);
    dst->target = ust_strdup(src->target);
    if ((src->remote && !dst->remote) || (src->method && !dst->method) ||
        (src->target && !dst->target))
        goto nomem;
    for (size_t i = 0; i < src->n_headers; i++)
        if (ust_request_add_header(dst, src->headers[i].name, src->headers[i].value) !=
            0)
            goto nomem;
    if (src->body_len > 0) {
        dst->body = ust_memdup(src->body, src->body_len);
        if (dst->body == NULL)
            goto nomem;
        dst->body_len = src->body_len;
    }
    return 0;
nomem:
    ust_request_clear(dst);
    return UST_ENOMEM;
}

void ust_request_path(const ust_request *req, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    const char *t = req->target ? req->target : "";
    size_t n = strcspn(t, "?#");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, t, n);
    buf[n] = '\0';
}

int ust_headers_pack(const ust_header *headers, size_t n_headers, char **buf,
                     size_t *cap, size_t *len)
{
    size_t need = 0;
    for (size_t i = 0; i < n_headers; i++)
        need += strlen(headers[i].name) + strlen(headers[i].value) + 2;
    if (need > *cap) {
        char *grown = ust_grow(*buf, cap, need, need, 1);
        if (grown == NULL)
            return UST_ENOMEM;
        *buf = grown;
    }
    char *p = *buf;
    for (size_t i = 0; i < n_headers; i++) {
        size_t n = strlen(headers[i].name) + 1, v = strlen(headers[i].value) + 1;
        memcpy(p, headers[i].name, n);
        memcpy(p + n, headers[i].value, v);
        p += n + v;
    }
    *len = need;
    return 0;
}

int ust_headers_unpack(const void *blob, size_t len, ust_request *req, char **err)
{
    if (len == 0)
        return 0; /* SQLite gives NULL for an empty blob: no pointer to offset */
    const char *p = blob, *end = p + len;
    if (end[-1] != '\0')
        return ust_errf(err, UST_EPARSE, "headers column is not packed pairs");
    size_t count = 0;
    for (const char *q = p; q < end; q++)
        count += *q == '\0';
    if (count % 2 != 0)
        return ust_errf(err, UST_EPARSE, "headers column holds a name without a value");
    if (count == 0)
        return 0;
    req->headers = ust_calloc(count / 2, sizeof(ust_header));
    if (req->headers == NULL)
        return UST_ENOMEM;
    while (p < end) {
        size_t n = strlen(p);
        const char *v = p + n + 1;
        size_t vn = strlen(v);
        ust_header *h = &req->headers[req->n_headers];
        h->name = ust_strndup(p, n);
        h->value = ust_strndup(v, vn);
        if (h->name == NULL || h->value == NULL) {
            ust_free(h->name);
            ust_free(h->value);
            return UST_ENOMEM;
        }
        req->n_headers++;
        p = v + vn + 1;
    }
    return 0;
}

int ust_http_token(const char *s, size_t n)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || (c != '\0' && strchr(tchar, c) != NULL)))
            return 0;
    }
    return n > 0;
}

enum { HEADER_OK, BAD_NAME, BAD_VALUE };

static int header_fault(const char *name, size_t name_len, const char *value,
                        size_t value_len)
{
    if (!ust_http_token(name, name_len))
        return BAD_NAME;
    for (size_t i = 0; i < value_len; i++)
        if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0')
            return BAD_VALUE;
    return HEADER_OK;
}

const char *ust_http_header_fault(const char *name, size_t name_len, const char *value,
                                  size_t value_len)
{
    static const char *const why[] = {NULL, "the name is not an HTTP token",
                                      "the value holds a CR, LF or NUL byte"};
    return why[header_fault(name, name_len, value, value_len)];
}

/* s for a message: printable ASCII as it is, '"' and '\\' and every other
 * byte escaped, cut after 48 bytes (a method or a name, never a value). */
static void quote(const char *s, char out[256])
{
    size_t o = 0, i = 0;
    for (; s[i] != '\0' && i < 48; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r' || c == '\n')
            o += (size_t)snprintf(out + o, 256 - o, "\\%c", c == '\r' ? 'r' : 'n');
        else if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, 256 - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    snprintf(out + o, 256 - o, "%s", s[i] != '\0' ? "..." : "");
}

int ust_headers_check(const ust_header *h, size_t n, char **err)
{
    char q[256];
    for (size_t i = 0; i < n; i++) {
        int fault =
            header_fault(h[i].name, strlen(h[i].name), h[i].value, strlen(h[i].value));
        if (fault == HEADER_OK)
            continue;
        quote(h[i].name, q);
        /* The value itself is not shown: it may be a credential. */
        return fault == BAD_NAME
                   ? ust_errf(err, UST_EPARSE,
                              "headers[%zu] name \"%s\": not an HTTP token", i, q)
                   : ust_errf(
                         err, UST_EPARSE,
                         "headers[%zu] value (of \"%s\"): holds a CR, LF or NUL byte",
                         i, q);
    }
    return 0;
}

int ust_request_check(const ust_request *req, char **err)
{
    char q[256];
    const char *m = req->method != NULL ? req->method : "";
    if (!ust_http_token(m, strlen(m))) {
        quote(m, q);
        return ust_errf(err, UST_EPARSE, "method \"%s\": not an HTTP token", q);
    }
    for (const unsigned char *t = (const unsigned char *)req->target; t && *t; t++)
        if (*t <= ' ' || *t == 0x7f)
            return ust_errf(err, UST_EPARSE,
                            "target: holds a space, CR, LF or another control byte");
    return ust_headers_check(req->headers, req->n_headers, err);
}
