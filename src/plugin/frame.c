/* Binary frames between the host and its shim (see frame.h): the writer and
 * reader of fields, the decide frame both ways, the decision frame both
 * ways. The host's reader of the child's frames treats them as the untrusted
 * input they are: every length is checked against what the frame holds. */
#include "plugin/frame.h"
#include "plugin/event_abi.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NULL_STRING 0xffffffffu

static int reserve(ust__frame_out *f, size_t n)
{
    if (f->error)
        return -1;
    unsigned char *grown = n <= (size_t)-1 - f->len
                               ? ust_grow(f->buf, &f->cap, f->len + n, 4096, 1)
                               : NULL;
    if (grown == NULL) {
        f->error = UST_ENOMEM;
        f->len = f->start; /* the frame is dropped whole */
        return -1;
    }
    f->buf = grown;
    return 0;
}

static void put_le(ust__frame_out *f, uint64_t v, int width)
{
    if (reserve(f, (size_t)width) != 0)
        return;
    for (int i = 0; i < width; i++)
        f->buf[f->len++] = (unsigned char)(v >> (8 * i));
}

void ust__frame_begin(ust__frame_out *f, int type)
{
    f->error = 0;
    f->start = f->len;
    put_le(f, 0, UST__FRAME_HEAD); /* its length, once known */
    put_le(f, (unsigned)type, 1);
}

void ust__frame_u8(ust__frame_out *f, unsigned v)
{
    put_le(f, v, 1);
}

static void frame_i32(ust__frame_out *f, int32_t v)
{
    put_le(f, (uint32_t)v, 4);
}

void ust__frame_i64(ust__frame_out *f, int64_t v)
{
    put_le(f, (uint64_t)v, 8);
}

static void frame_bytes(ust__frame_out *f, const void *p, size_t n)
{
    put_le(f, n, 4);
    if (reserve(f, n + 1) != 0)
        return;
    if (n > 0)
        memcpy(f->buf + f->len, p, n);
    f->len += n;
    f->buf[f->len++] = '\0';
}

void ust__frame_string(ust__frame_out *f, const char *s)
{
    if (s == NULL)
        put_le(f, NULL_STRING, 4);
    else
        frame_bytes(f, s, strlen(s));
}

void ust__frame_raw(ust__frame_out *f, const void *p, size_t n)
{
    if (n > 0 && reserve(f, n) == 0) {
        memcpy(f->buf + f->len, p, n);
        f->len += n;
    }
}

void ust__frame_end(ust__frame_out *f)
{
    if (f->error)
        return;
    uint64_t n = f->len - f->start - UST__FRAME_HEAD;
    for (int i = 0; i < UST__FRAME_HEAD; i++)
        f->buf[f->start + (size_t)i] = (unsigned char)(n >> (8 * i));
}

void ust__frame_out_free(ust__frame_out *f)
{
    ust_free(f->buf);
    memset(f, 0, sizeof(*f));
}

static uint64_t get_le(ust__frame_in *r, int width)
{
    if (r->bad != NULL)
        return 0;
    if (r->n - r->off < (size_t)width) {
        r->bad = "a field runs past the end of its frame";
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < width; i++)
        v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
    r->off += (size_t)width;
    return v;
}

unsigned ust__frame_read_u8(ust__frame_in *r)
{
    return (unsigned)get_le(r, 1);
}

static int32_t read_i32(ust__frame_in *r)
{
    return (int32_t)(uint32_t)get_le(r, 4);
}

static int64_t read_i64(ust__frame_in *r)
{
    return (int64_t)get_le(r, 8);
}

/* The bytes of a string field; NULL for null (*null set) or when bad. */
static const unsigned char *read_field(ust__frame_in *r, size_t *n, int *null)
{
    uint64_t len = get_le(r, 4);
    *null = r->bad == NULL && len == NULL_STRING;
    if (r->bad != NULL || *null)
        return NULL;
    if (len >= r->n - r->off) { /* its bytes and the NUL after them */
        r->bad = "a string runs past the end of its frame";
        return NULL;
    }
    const unsigned char *s = r->p + r->off;
    if (s[len] != '\0') {
        r->bad = "a string without its NUL";
        return NULL;
    }
    r->off += (size_t)len + 1;
    *n = (size_t)len;
    return s;
}

const char *ust__frame_read_string(ust__frame_in *r)
{
    size_t n = 0;
    int null = 0;
    const unsigned char *s = read_field(r, &n, &null);
    if (s != NULL && memchr(s, '\0', n) != NULL) {
        r->bad = "a string holds a NUL byte";
        return NULL;
    }
    return (const char *)s;
}

/* Bytes lent from the payload, NUL-terminated (*n their length). */
static const unsigned char *read_bytes(ust__frame_in *r, size_t *n)
{
    int null = 0;
    *n = 0;
    const unsigned char *s = read_field(r, n, &null);
    if (null)
        r->bad = "bytes that are null";
    return s;
}

/* A count of items of at least min_item bytes each, checked against what is
 * left, so a count cannot make the reader allocate or loop for nothing. */
static uint32_t read_count(ust__frame_in *r, size_t min_item)
{
    uint64_t n = get_le(r, 4);
    if (r->bad == NULL && n > (r->n - r->off) / (min_item ? min_item : 1)) {
        r->bad = "a count runs past the end of its frame";
        return 0;
    }
    return (uint32_t)n;
}

int ust__frame_length(const unsigned char *p, size_t have, uint32_t *n)
{
    *n = 0;
    if (have < UST__FRAME_HEAD)
        return 0;
    *n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
    if (*n > UST__MAX_LINE)
        return -1;
    return have - UST__FRAME_HEAD >= *n;
}

unsigned char *ust__frame_fread(FILE *in, size_t *n)
{
    unsigned char h[UST__FRAME_HEAD];
    uint32_t len = 0;
    if (fread(h, 1, sizeof(h), in) != sizeof(h))
        return NULL;
    if (ust__frame_length(h, sizeof(h), &len) < 0) {
        *n = len; /* over the limit: the caller says so */
        return NULL;
    }
    unsigned char *p = malloc((size_t)len + 1);
    if (p == NULL || fread(p, 1, len, in) != len) {
        free(p);
        return NULL;
    }
    p[len] = '\0';
    *n = len;
    return p;
}

int ust__frame_fwrite(FILE *out, ust__frame_out *f)
{
    int rc =
        f->error == 0 && fwrite(f->buf, 1, f->len, out) == f->len && fflush(out) == 0
            ? 0
            : UST_EIO;
    f->len = 0;
    return rc;
}

/* The smallest string field: its length alone (a null). */
#define MIN_STRING 4

/* An event field into the decide frame (the fields the JSON decide sends). */
#define FRAME_OUT_TEXT(m) ust__frame_string(f, ev->m);
#define FRAME_OUT_SHA(m) ust__frame_string(f, ev->m);
#define FRAME_OUT_ROUTE(m)                                                             \
    ust__frame_u8(f, ev->m == NULL ? 0 : ev->m->kind == UST_ROUTE_API ? 2 : 1);        \
    ust__frame_string(f, ev->m ? ev->m->path : NULL);
#define FRAME_OUT_AMOUNT(m)                                                            \
    ust__frame_u8(f, ev->has_##m ? 1 : 0);                                             \
    ust__frame_i64(f, ev->m);
#define FRAME_OUT_WIRE(kind, m) FRAME_OUT_##kind(m)
#define FRAME_OUT_WIRE_END(kind, m) FRAME_OUT_##kind(m)
#define FRAME_OUT_NONE(kind, m)
#define FRAME_OUT(kind, m, column, wire, wire_at, export, source, since, desc)         \
    FRAME_OUT_##wire_at(kind, m)

void ust__frame_decide(ust__frame_out *f, const ust_event *ev, const ust_request *req)
{
    ust__frame_begin(f, UST__FRAME_DECIDE);
    ust__frame_i64(f, ev->seq);
    ust__frame_i64(f, ev->received_at_us);
    UST_EVENT_FIELDS(FRAME_OUT)
    ust__frame_u8(f, req != NULL);
    if (req != NULL) {
        frame_bytes(f, req->body, req->body_len);
        frame_i32(f, (int32_t)req->n_headers);
        for (size_t i = 0; i < req->n_headers; i++) {
            ust__frame_string(f, req->headers[i].name);
            ust__frame_string(f, req->headers[i].value);
        }
    }
    ust__frame_end(f);
}

/* An event field from the decide frame; strings lent. */
#define FRAME_IN_TEXT(m) ev->m = (char *)ust__frame_read_string(&r);
#define FRAME_IN_SHA(m)                                                                \
    {                                                                                  \
        const char *hex = ust__frame_read_string(&r);                                  \
        snprintf(ev->m, sizeof(ev->m), "%s", hex ? hex : "");                          \
    }
#define FRAME_IN_ROUTE(m)                                                              \
    {                                                                                  \
        unsigned kind = ust__frame_read_u8(&r);                                        \
        route->path = (char *)ust__frame_read_string(&r);                              \
        route->kind = kind == 2 ? UST_ROUTE_API : UST_ROUTE_WEBHOOK;                   \
        ev->m = kind != 0 && route->path != NULL ? route : NULL;                       \
    }
#define FRAME_IN_AMOUNT(m)                                                             \
    ev->has_##m = ust__frame_read_u8(&r) != 0;                                         \
    ev->m = read_i64(&r);
#define FRAME_IN_WIRE(kind, m) FRAME_IN_##kind(m)
#define FRAME_IN_WIRE_END(kind, m) FRAME_IN_##kind(m)
#define FRAME_IN_NONE(kind, m)
#define FRAME_IN(kind, m, column, wire, wire_at, export, source, since, desc)          \
    FRAME_IN_##wire_at(kind, m)

int ust__frame_event_parse(const unsigned char *p, size_t n, ust_event *ev,
                           ust_request *req, ust_route *route)
{
    memset(ev, 0, sizeof(*ev));
    memset(req, 0, sizeof(*req));
    memset(route, 0, sizeof(*route));
    ust__frame_in r = {p, n, 0, NULL};
    if (ust__frame_read_u8(&r) != UST__FRAME_DECIDE)
        return UST_EPARSE;
    ev->seq = read_i64(&r);
    ev->received_at_us = read_i64(&r);
    req->received_at_us = ev->received_at_us;
    UST_EVENT_FIELDS(FRAME_IN)
    if (ust__frame_read_u8(&r)) {
        size_t len = 0;
        req->body = (unsigned char *)read_bytes(&r, &len);
        req->body_len = len;
        uint32_t n_headers = read_count(&r, 2 * MIN_STRING);
        req->headers = ust_calloc((size_t)n_headers + 1, sizeof(ust_header));
        if (req->headers == NULL)
            return UST_ENOMEM;
        for (uint32_t i = 0; i < n_headers && r.bad == NULL; i++) {
            char *name = (char *)ust__frame_read_string(&r);
            char *value = (char *)ust__frame_read_string(&r);
            if (name != NULL && value != NULL)
                req->headers[req->n_headers++] = (ust_header){name, value};
        }
    }
    if (req->body_len == 0)
        req->body = NULL; /* as a request without a body holds it */
    return r.bad != NULL || r.off != r.n ? UST_EPARSE : 0;
}

void ust__frame_event_release(ust_event *ev, ust_request *req)
{
    ust_free(req->headers);
    memset(ev, 0, sizeof(*ev));
    memset(req, 0, sizeof(*req));
}

/* A decision field into its frame, in the table's order. */
#define FRAME_DECISION_VERDICT(m) frame_i32(f, (int32_t)d->m);
#define FRAME_DECISION_STATUS(m) frame_i32(f, d->m);
#define FRAME_DECISION_TEXT(m) ust__frame_string(f, d->m);
#define FRAME_DECISION_ENTITY FRAME_DECISION_TEXT
#define FRAME_DECISION_REASON FRAME_DECISION_TEXT
#define FRAME_DECISION_BODY FRAME_DECISION_TEXT
#define FRAME_DECISION_FLAGS(m)                                                        \
    frame_i32(f, (int32_t)d->n_##m);                                                   \
    for (size_t i = 0; i < d->n_##m; i++)                                              \
        ust__frame_string(f, d->m[i]);
#define FRAME_DECISION_HEADERS(m)                                                      \
    {                                                                                  \
        frame_i32(f, (int32_t)json_object_size(d->m));                                 \
        const char *name;                                                              \
        json_t *value;                                                                 \
        json_object_foreach(d->m, name, value)                                         \
        {                                                                              \
            ust__frame_string(f, name);                                                \
            ust__frame_string(f, json_string_value(value));                            \
        }                                                                              \
    }
#define FRAME_DECISION_ERROR(m)
#define FRAME_DECISION(kind, m, column, wire, abi, divergence, div_at)                 \
    FRAME_DECISION_##kind(m)

void ust__frame_decision(ust__frame_out *f, int64_t seq, const ust_decision *d,
                         const unsigned char *writes, size_t writes_len,
                         uint32_t n_writes)
{
    ust__frame_begin(f, UST__FRAME_DECISION);
    ust__frame_i64(f, seq);
    UST_DECISION_FIELDS(FRAME_DECISION)
    frame_i32(f, (int32_t)n_writes);
    ust__frame_raw(f, writes, writes_len);
    ust__frame_end(f);
}

void ust__frame_error(ust__frame_out *f, int has_seq, int64_t seq, const char *message)
{
    ust__frame_begin(f, UST__FRAME_ERROR);
    ust__frame_u8(f, has_seq ? 1 : 0);
    ust__frame_i64(f, has_seq ? seq : 0);
    ust__frame_string(f, message);
    ust__frame_end(f);
}

/* A decision field from its frame into pd's member for it; strings lent
 * from the frame, the TEXTs copied (ust__adopt takes them). A count over
 * what the in-process checks allow is left for them to refuse, unread. */
#define TAKE_VERDICT(abi) pd.abi = (ust_verdict)read_i32(&r);
#define TAKE_STATUS(abi) pd.abi = read_i32(&r);
#define TAKE_TEXT(abi) pd.abi = frame_strdup(&r);
#define TAKE_ENTITY TAKE_TEXT
#define TAKE_REASON TAKE_TEXT
#define TAKE_BODY(abi) pd.abi = (char *)ust__frame_read_string(&r);
#define TAKE_FLAGS(abi)                                                                \
    pd.n_##abi = read_count(&r, MIN_STRING);                                           \
    pd.abi = fv;                                                                       \
    for (size_t i = 0; i < pd.n_##abi && i < MAX_FLAGS; i++)                           \
        fv[i] = (char *)ust__frame_read_string(&r);                                    \
    if (pd.n_##abi > MAX_FLAGS)                                                        \
        goto adopt;
#define TAKE_HEADERS(abi)                                                              \
    pd.n_##abi = read_count(&r, 2 * MIN_STRING);                                       \
    pd.abi = hv;                                                                       \
    for (size_t i = 0; i < pd.n_##abi && i < MAX_HEADERS; i++) {                       \
        hv[i].name = ust__frame_read_string(&r);                                       \
        hv[i].value = ust__frame_read_string(&r);                                      \
    }                                                                                  \
    if (pd.n_##abi > MAX_HEADERS)                                                      \
        goto adopt;
#define TAKE_ERROR(abi)
#define TAKE(kind, m, column, wire, abi, divergence, div_at) TAKE_##kind(abi)
#define UNTAKE_TEXT(abi) ust_free(pd.abi);
#define UNTAKE_ENTITY UNTAKE_TEXT
#define UNTAKE_REASON UNTAKE_TEXT
#define UNTAKE_VERDICT(abi)
#define UNTAKE_STATUS(abi)
#define UNTAKE_BODY(abi)
#define UNTAKE_FLAGS(abi)
#define UNTAKE_HEADERS(abi)
#define UNTAKE_ERROR(abi)
#define UNTAKE(kind, m, column, wire, abi, divergence, div_at) UNTAKE_##kind(abi)
/* One more than the in-process checks allow: the refusal is theirs. */
#define MAX_FLAGS (UST__DECISION_MAX_FLAGS + 1)
#define MAX_HEADERS (UST__DECISION_MAX_HEADERS + 1)

static char *frame_strdup(ust__frame_in *r)
{
    const char *s = ust__frame_read_string(r);
    return s != NULL ? ust_strdup(s) : NULL;
}

/* A string that is also text, as a JSON line's strings are: what the host
 * keeps of it (a key, a value, a message) may go to the run's JSON. */
static const char *read_text(ust__frame_in *r)
{
    const char *s = ust__frame_read_string(r);
    if (s != NULL && !ust_utf8_valid((const unsigned char *)s, strlen(s))) {
        r->bad = "a string is not valid UTF-8";
        return NULL;
    }
    return s;
}

/* The writes after a decision: checked here, applied by the host's thread
 * from line->writes_at on. */
static void take_writes(ust__frame_in *r, ust__line *line)
{
    uint32_t n = read_count(r, 2 * MIN_STRING);
    line->writes_at = r->off;
    line->n_writes = n;
    for (uint32_t i = 0; i < n && r->bad == NULL; i++) {
        if (read_text(r) == NULL && r->bad == NULL)
            r->bad = "a write without its key";
        (void)read_text(r);
    }
}

static void take_decision(ust__frame_in *r_in, ust__line *line, ust__body_memo *memo)
{
    ust__frame_in r = *r_in;
    ust_plugin_decision pd;
    memset(&pd, 0, sizeof(pd));
    ust_plugin_header hv[MAX_HEADERS];
    char *fv[MAX_FLAGS];
    line->is_decision = 1;
    line->has_seq = 1;
    line->seq = read_i64(&r);
    UST_DECISION_FIELDS(TAKE)
    take_writes(&r, line);
adopt:
    if (r.bad == NULL) {
        line->bad = ust__adopt(&pd, &line->decision, memo);
        if (line->bad != NULL)
            ust_decision_clear(&line->decision);
    }
    UST_DECISION_FIELDS(UNTAKE)
    *r_in = r;
}

void ust__frame_take(unsigned char *payload, size_t n, ust__line *line,
                     ust__body_memo *memo)
{
    memset(line, 0, sizeof(*line));
    line->text = (char *)payload;
    line->frame_len = n;
    ust__frame_in r = {payload, n, 0, NULL};
    unsigned type = ust__frame_read_u8(&r);
    switch (type) {
    case UST__FRAME_DECISION:
        take_decision(&r, line, memo);
        break;
    case UST__FRAME_ERROR:
        line->type = "error";
        line->has_seq = ust__frame_read_u8(&r) != 0;
        line->seq = read_i64(&r);
        line->message = read_text(&r);
        break;
    case UST__FRAME_GET:
        line->type = "get";
        line->key = read_text(&r);
        break;
    case UST__FRAME_CLAIM:
        line->type = "claim";
        line->key = read_text(&r);
        line->value = read_text(&r);
        break;
    default:
        if (r.bad == NULL)
            snprintf(line->bad_frame, sizeof(line->bad_frame),
                     "a frame of unknown type 0x%02x", type);
        break;
    }
    if (r.bad == NULL && line->bad_frame[0] == '\0' && r.off != r.n &&
        line->bad == NULL)
        r.bad = "bytes after the end of its message";
    if (r.bad != NULL) {
        snprintf(line->bad_frame, sizeof(line->bad_frame), "%s", r.bad);
        ust_decision_clear(&line->decision);
        line->is_decision = line->has_seq = 0;
        line->bad = NULL;
        line->type = line->key = line->value = line->message = NULL;
    }
}

int ust__frame_next_write(ust__line *line, size_t *at, const char **key,
                          const char **value)
{
    if (*at == 0)
        *at = line->writes_at;
    ust__frame_in r = {(const unsigned char *)line->text, line->frame_len, *at, NULL};
    if (r.off >= r.n)
        return 1;
    *key = ust__frame_read_string(&r);
    *value = ust__frame_read_string(&r);
    if (r.bad != NULL || *key == NULL)
        return -1;
    *at = r.off;
    return 0;
}
