/* GoReplay's file output (--output-file, with --input-raw-track-response):
 * payloads separated by "\n🐵🙈🙉\n", each a header line
 * "<type> <id> <timestamp_ns> ..." then the raw HTTP message. Type 1 is a
 * request, 2 the original response to the request of the same id (before
 * or after it in the file), 3 a replayed response (not production's: left
 * out). The messages are read by http-parser, as the recorder reads them. */
#define _GNU_SOURCE /* memmem */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <http_parser.h>
#include <stdlib.h>
#include <string.h>

#define SEPARATOR "\n\xF0\x9F\x90\xB5\xF0\x9F\x99\x88\xF0\x9F\x99\x89\n"
#define SEPARATOR_LEN (sizeof(SEPARATOR) - 1)
#define MAX_ID 64

static const char OBS_FOLD[] = "a header line begins with a space or tab (obs-fold,"
                               " RFC 9112 5.2): refused, not joined to the line before";

/* One raw HTTP message as http-parser reads it. The library is built
 * lenient (HTTP_PARSER_STRICT 0): it takes a name with a space and joins an
 * obs-fold line to the header before; both are refused here, as the
 * recorder refuses them (request_parse.c), with where they are. */
typedef struct message {
    http_parser parser;
    ust_request req; /* a response's headers and body too */
    char *field, *value;
    size_t field_len, value_len, target_len;
    int began, complete, nomem;
    const char *start;    /* the message's first byte */
    const char *field_at; /* where the header being read starts */
    const char *last_end; /* the end of the last name or value piece read */
    const char *fault;    /* what is wrong with a header, and where */
    const char *fault_at;
} message;

static int stop_nomem(message *m)
{
    m->nomem = 1;
    return -1;
}

static int end_header(message *m)
{
    if (m->field == NULL)
        return 0;
    const char *value = m->value ? m->value : "";
    m->fault = ust_http_header_fault(m->field, m->field_len, value, m->value_len);
    m->fault_at = m->field_at;
    int ok = m->fault == NULL;
    int rc = ok ? ust_request_add_header(&m->req, m->field, value) : 0;
    ust_free(m->field);
    ust_free(m->value);
    m->field = m->value = NULL;
    m->field_len = m->value_len = 0;
    if (rc != 0)
        return stop_nomem(m);
    return ok ? 0 : -1;
}

static int on_begin(http_parser *p)
{
    message *m = p->data;
    if (m->began)
        return -1; /* a second message in one payload */
    m->began = 1;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    message *m = p->data;
    return ust_str_append(&m->req.target, &m->target_len, at, n) ? stop_nomem(m) : 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
    message *m = p->data;
    if (m->value != NULL && end_header(m) != 0)
        return -1;
    if (m->field == NULL)
        m->field_at = at;
    m->last_end = at + n;
    return ust_str_append(&m->field, &m->field_len, at, n) ? stop_nomem(m) : 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    message *m = p->data;
    const char *from = m->last_end ? m->last_end : m->start;
    if (memchr(from, '\n', (size_t)(at - from)) != NULL) {
        m->fault = OBS_FOLD;
        m->fault_at = at;
        return -1;
    }
    m->last_end = at + n;
    if (m->value == NULL && ust_str_append(&m->value, &m->value_len, "", 0) != 0)
        return stop_nomem(m);
    return ust_str_append(&m->value, &m->value_len, at, n) ? stop_nomem(m) : 0;
}

static int on_headers_done(http_parser *p)
{
    return end_header(p->data);
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    message *m = p->data;
    unsigned char *grown = ust_realloc(m->req.body, m->req.body_len + n);
    if (grown == NULL)
        return stop_nomem(m);
    memcpy(grown + m->req.body_len, at, n);
    m->req.body = grown;
    m->req.body_len += n;
    return 0;
}

static int on_complete(http_parser *p)
{
    ((message *)p->data)->complete = 1;
    return 0;
}

/* Reads the one message of [at, at+n): 0, UST_ENOMEM, or UST_EPARSE with *why. */
static int parse_message(const char *at, size_t n, enum http_parser_type type,
                         message *m, char **why)
{
    memset(m, 0, sizeof(*m));
    m->start = at;
    http_parser_init(&m->parser, type);
    m->parser.data = m;
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_message_begin = on_begin;
    s.on_url = on_url;
    s.on_header_field = on_field;
    s.on_header_value = on_value;
    s.on_headers_complete = on_headers_done;
    s.on_body = on_body;
    s.on_message_complete = on_complete;
    const char *what = type == HTTP_REQUEST ? "request" : "response";
    size_t used = http_parser_execute(&m->parser, &s, at, n);
    if (!m->nomem && used == n && !m->complete)
        http_parser_execute(&m->parser, &s, NULL, 0); /* a body read to the end */
    if (m->nomem)
        return UST_ENOMEM;
    enum http_errno e = HTTP_PARSER_ERRNO(&m->parser);
    if (e == HPE_CB_message_begin)
        return ust_errf(why, UST_EPARSE, "more than one HTTP %s", what);
    if (m->fault == OBS_FOLD)
        return ust_errf(why, UST_EPARSE, "%s", OBS_FOLD);
    if (m->fault != NULL)
        return ust_errf(why, UST_EPARSE, "a header: %s", m->fault);
    if (e == HPE_INVALID_EOF_STATE || (e == HPE_OK && !m->complete))
        return ust_errf(why, UST_EPARSE, "not an HTTP %s (it ends early)", what);
    if (e != HPE_OK || used != n)
        return ust_errf(why, UST_EPARSE, "not an HTTP %s: %s", what,
                        http_errno_description(e));
    if (type == HTTP_RESPONSE &&
        (m->parser.status_code < 100 || m->parser.status_code > 599))
        return ust_errf(why, UST_EPARSE, "not an HTTP response: status %u",
                        (unsigned)m->parser.status_code);
    if (type == HTTP_REQUEST && (m->req.target == NULL || m->req.target[0] != '/'))
        return ust_errf(why, UST_EPARSE, "the request target is not a path");
    return 0;
}

static void message_clear(message *m)
{
    ust_request_clear(&m->req);
    ust_free(m->field);
    ust_free(m->value);
}

/* A request's id, to match its response. */
typedef struct by_id {
    char id[MAX_ID + 1];
    size_t entry;
} by_id;

static int by_id_cmp(const void *a, const void *b)
{
    return strcmp(((const by_id *)a)->id, ((const by_id *)b)->id);
}

/* "<type> <id> <timestamp_ns>" and anything after: 0 or -1. */
static int header_line(const char *at, size_t n, int *type, char id[MAX_ID + 1],
                       int64_t *ts_ns)
{
    char line[256];
    if (n == 0 || n >= sizeof(line))
        return -1;
    memcpy(line, at, n);
    line[n] = '\0';
    if (memchr(at, '\0', n) != NULL || line[0] < '0' || line[0] > '9' || line[1] != ' ')
        return -1;
    *type = line[0] - '0';
    char *p = line + 2, *end = strchr(p, ' ');
    if (end == NULL || end == p || end - p > MAX_ID)
        return -1;
    memcpy(id, p, (size_t)(end - p));
    id[end - p] = '\0';
    p = end + 1;
    int64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (*p != '\0' && *p != ' ' && *p != '\r')
        return -1;
    *ts_ns = v;
    return 0;
}

/* The payloads' answers, kept until every request is read. */
typedef struct answer {
    char id[MAX_ID + 1];
    char where[96];
    size_t line;
    ust_response response;
} answer;

/* ids[i] is the id of out->v[i]; sorted here. */
static int match_answers(ust__capture *out, by_id *ids, answer *ans, size_t n_ans,
                         const char *label, char **err)
{
    if (out->n == 0)
        return 0; /* answers to no captured request: nothing to keep */
    qsort(ids, out->n, sizeof(*ids), by_id_cmp);
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < out->n; i++)
        if (strcmp(ids[i - 1].id, ids[i].id) == 0) {
            const ust__capture_entry *e =
                &out->v[ids[i - 1].entry > ids[i].entry ? ids[i - 1].entry
                                                        : ids[i].entry];
            rc = ust__capture_fail(err, UST_EPARSE, label, e->line, e->where,
                                   "a second request with this id");
        }
    for (size_t i = 0; rc == 0 && i < n_ans; i++) {
        by_id key;
        memcpy(key.id, ans[i].id, sizeof(key.id));
        by_id *hit = bsearch(&key, ids, out->n, sizeof(*ids), by_id_cmp);
        if (hit == NULL)
            continue; /* its request was not captured: nothing to record it beside */
        ust_response *r = &out->v[hit->entry].response;
        if (r->status != 0) {
            char *why = ust_sprintf("a second response to request %s",
                                    out->v[hit->entry].where);
            rc = ust__capture_fail(err, why ? UST_EPARSE : UST_ENOMEM, label,
                                   ans[i].line, ans[i].where, why);
            ust_free(why);
        } else
            *r = ans[i].response, memset(&ans[i].response, 0, sizeof(ans[i].response));
    }
    return rc;
}

int ust__goreplay_parse(const char *buf, size_t len, const char *label,
                        ust__capture *out, char **err)
{
    memset(out, 0, sizeof(*out));
    answer *ans = NULL;
    by_id *ids = NULL;
    size_t n_ans = 0, cap_ans = 0, cap_ids = 0, number = 0, pos = 0;
    size_t line = 1;           /* the line at counted */
    const char *counted = buf; /* lines are counted as the payloads are read */
    int rc = 0;
    while (rc == 0 && pos < len) {
        const char *at = buf + pos;
        line += ust__line_of(counted, at) - 1;
        counted = at;
        const char *sep = memmem(at, len - pos, SEPARATOR, SEPARATOR_LEN);
        size_t n = sep ? (size_t)(sep - at) : len - pos;
        pos += n + (sep ? SEPARATOR_LEN : 0);
        if (sep == NULL && n == 1 && at[0] == '\n')
            break; /* the end of the file */
        number++;
        char where[96], *why = NULL;
        snprintf(where, sizeof(where), "payload %zu", number);
        const char *nl = memchr(at, '\n', n);
        int type = 0;
        char id[MAX_ID + 1];
        int64_t ts_ns = 0;
        if (nl == NULL || header_line(at, (size_t)(nl - at), &type, id, &ts_ns) != 0) {
            rc = ust__capture_fail(err, UST_EPARSE, label, line, where,
                                   "the first line is not \"<type> <id> <timestamp_ns>"
                                   " ...\" (GoReplay's payload header)");
            break;
        }
        snprintf(where, sizeof(where), "payload %zu (id %s)", number, id);
        const char *msg = nl + 1;
        size_t msg_len = n - (size_t)(msg - at);
        message m;
        if (type == 3)
            continue; /* a replayed response: not what production answered */
        if (type != 1 && type != 2) {
            why = ust_sprintf("payload type %d is not known (1 a request, 2 its"
                              " response, 3 a replayed response)",
                              type);
            rc = ust__capture_fail(err, why ? UST_EPARSE : UST_ENOMEM, label, line,
                                   where, why);
            ust_free(why);
            break;
        }
        rc = parse_message(msg, msg_len, type == 1 ? HTTP_REQUEST : HTTP_RESPONSE, &m,
                           &why);
        if (rc == 0 && type == 1) {
            by_id *grown =
                out->n < cap_ids
                    ? ids
                    : ust_realloc(ids, (cap_ids = cap_ids ? cap_ids * 2 : 16) *
                                           sizeof(*ids));
            ust__capture_entry *e = grown ? ust__capture_push(out) : NULL;
            ids = grown ? grown : ids;
            if (e == NULL) {
                rc = UST_ENOMEM;
            } else {
                memcpy(ids[out->n - 1].id, id, sizeof(ids[0].id));
                ids[out->n - 1].entry = out->n - 1;
                e->req = m.req;
                memset(&m.req, 0, sizeof(m.req));
                memcpy(e->where, where, sizeof(where));
                e->line = line;
                e->req.received_at_us = ts_ns / 1000;
                e->req.method = ust_strdup(http_method_str(m.parser.method));
                e->req.remote = ust_strdup("-"); /* not in the file */
                if (e->req.method == NULL || e->req.remote == NULL)
                    rc = UST_ENOMEM;
            }
        } else if (rc == 0) {
            answer *grown =
                n_ans < cap_ans
                    ? ans
                    : ust_realloc(ans, (cap_ans = cap_ans ? cap_ans * 2 : 16) *
                                           sizeof(*ans));
            if (grown == NULL) {
                rc = UST_ENOMEM;
            } else {
                ans = grown;
                answer *a = &ans[n_ans++];
                memset(a, 0, sizeof(*a));
                memcpy(a->id, id, sizeof(a->id));
                memcpy(a->where, where, sizeof(where));
                a->line = line;
                a->response.status = (int)m.parser.status_code;
                ust__capture_move_headers(&m.req, &a->response);
                a->response.body = m.req.body;
                a->response.body_len = m.req.body_len;
                m.req.body = NULL;
                m.req.body_len = 0;
            }
        }
        message_clear(&m);
        if (rc != 0) /* a header's own line, else the payload's first */
            rc = ust__capture_fail(err, rc, label,
                                   m.fault_at ? line + ust__line_of(at, m.fault_at) - 1
                                              : line,
                                   where, why);
        ust_free(why);
    }
    if (rc == 0)
        rc = match_answers(out, ids, ans, n_ans, label, err);
    ust_free(ids);
    for (size_t i = 0; i < n_ans; i++)
        ust_response_clear(&ans[i].response);
    ust_free(ans);
    if (rc != 0)
        ust__capture_clear(out);
    return rc;
}
