#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/request.h>

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
