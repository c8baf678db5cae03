/* A request or an answer for review: its headers and body masked by the
 * run's redaction rules, the body both as it arrived and pretty-printed. */
#include "report/event_load.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/redact.h>

#include <string.h>

static const char MASK[] = "[redacted]";

/* The text a derived field would hold for a value: a string as itself,
 * anything else as compact JSON. */
static void add_value_text(json_t *acc, const json_t *v)
{
    if (json_is_object(v) || json_is_array(v)) {
        /* A masked member hides its leaves too. */
        const char *k;
        size_t i;
        json_t *child;
        if (json_is_object(v))
            json_object_foreach((json_t *)v, k, child) add_value_text(acc, child);
        else
            json_array_foreach(v, i, child) add_value_text(acc, child);
        return;
    }
    if (json_is_string(v)) {
        json_array_append_new(acc, json_string(json_string_value(v)));
        return;
    }
    char *t = ust__report_json_compact(v);
    if (t != NULL)
        json_array_append_new(acc, json_string(t));
    ust_free(t);
}

/* Collects into acc what masking changed between orig and masked. */
static void collect_masked(const json_t *orig, const json_t *masked, json_t *acc)
{
    if (json_equal(orig, masked))
        return;
    if (json_is_string(masked) && strcmp(json_string_value(masked), MASK) == 0) {
        add_value_text(acc, orig);
        return;
    }
    const char *k;
    size_t i;
    json_t *child;
    if (json_is_object(orig))
        json_object_foreach((json_t *)orig, k, child)
            collect_masked(child, json_object_get(masked, k), acc);
    else if (json_is_array(orig))
        json_array_foreach(orig, i, child)
            collect_masked(child, json_array_get(masked, i), acc);
}

/* The headers as pairs whose names and values lie in one block (m->text_of
 * _headers): an event of a million headers costs their bytes and a pair
 * each, not two allocations a header on top. */
static int load_headers(ust__report_message *m, const ust_header *headers, size_t n,
                        const json_t *rules, json_t *masked)
{
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++) {
        int hide = ust_redact_header(rules, headers[i].name);
        bytes += strlen(headers[i].name) + 1 +
                 (hide ? sizeof(MASK) : strlen(headers[i].value) + 1);
    }
    m->headers = ust_calloc(n ? n : 1, sizeof(*m->headers));
    char *at = m->header_text = ust_malloc(bytes);
    if (m->headers == NULL || at == NULL)
        return UST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int hide = ust_redact_header(rules, headers[i].name);
        const char *value = hide ? MASK : headers[i].value;
        size_t nn = strlen(headers[i].name) + 1, vn = strlen(value) + 1;
        m->headers[i].name = memcpy(at, headers[i].name, nn);
        m->headers[i].value = memcpy(at + nn, value, vn);
        at += nn + vn;
        if (hide && masked != NULL)
            json_array_append_new(masked, json_string(headers[i].value));
    }
    m->n_headers = n;
    return 0;
}

/* v's containers copied, its strings, numbers and literals shared: what
 * masking needs to change a copy (it sets members, never a leaf in place)
 * without a second copy of a large value. NULL when out of memory. */
static json_t *copy_containers(json_t *v)
{
    json_t *out = json_is_object(v)  ? json_object()
                  : json_is_array(v) ? json_array()
                                     : json_incref(v);
    const char *k;
    size_t i;
    json_t *child;
    if (json_is_object(v))
        json_object_foreach(v, k, child)
        {
            if (out == NULL ||
                json_object_set_new(out, k, copy_containers(child)) != 0) {
                json_decref(out);
                return NULL;
            }
        }
    else if (json_is_array(v))
        json_array_foreach(v, i, child)
        {
            if (out == NULL ||
                json_array_append_new(out, copy_containers(child)) != 0) {
                json_decref(out);
                return NULL;
            }
        }
    return out;
}

int ust__report_message_load(ust__report_message *m, const ust_header *headers,
                             size_t n_headers, const unsigned char *body,
                             size_t body_len, const json_t *rules, json_t *masked)
{
    memset(m, 0, sizeof(*m));
    int rc = load_headers(m, headers, n_headers, rules, masked);
    if (rc != 0 || body_len == 0)
        return rc;
    m->body_len = body_len;
    json_error_t jerr;
    json_t *doc = ust_json_loadb((const char *)body, body_len, 0, &jerr);
    if (doc != NULL) {
        /* Kept as a tree and written out at render time: a large body is
         * not held a third time as indented text. */
        m->pretty = copy_containers(doc);
        if (m->pretty != NULL) {
            ust_redact_json(m->pretty, rules);
            m->withheld = !json_equal(doc, m->pretty);
            if (m->withheld && masked != NULL)
                collect_masked(doc, m->pretty, masked);
        }
        json_decref(doc);
        if (m->pretty == NULL)
            return UST_ENOMEM;
    }
    if (m->withheld)
        return 0;
    if (memchr(body, '\0', body_len) == NULL && ust_utf8_valid(body, body_len))
        m->text = ust_strndup((const char *)body, body_len);
    else
        m->base64 = ust_base64_encode(body, body_len);
    return m->text || m->base64 ? 0 : UST_ENOMEM;
}
