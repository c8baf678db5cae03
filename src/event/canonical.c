/* Canonical JSON and the request hash. The hash streams the canonical text
 * into SHA-256 through a small staging buffer, so a body is parsed once and
 * never serialised into a second full-size string. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>
#include <understudy/hash.h>
#include <understudy/jsonw.h>

#include "event/event_internal.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANONICAL_FLAGS (JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY)

/* The text comes from jansson, which allocates through the seam. */
char *ust_json_canonical(const json_t *v)
{
    if (v == NULL)
        return NULL;
    return json_dumps(v, CANONICAL_FLAGS);
}

typedef struct hash_sink {
    EVP_MD_CTX *ctx;
    size_t used;
    int failed;
    char buf[4096];
} hash_sink;

static int sink_flush(hash_sink *s)
{
    if (s->used > 0 && !EVP_DigestUpdate(s->ctx, s->buf, s->used))
        s->failed = 1;
    s->used = 0;
    return s->failed ? -1 : 0;
}

static int sink_write(const char *data, size_t len, void *arg)
{
    hash_sink *s = arg;
    if (len > sizeof(s->buf) - s->used && sink_flush(s) != 0)
        return -1;
    if (len > sizeof(s->buf)) {
        /* A long string: straight through, no staging. */
        if (!EVP_DigestUpdate(s->ctx, data, len)) {
            s->failed = 1;
            return -1;
        }
        return 0;
    }
    memcpy(s->buf + s->used, data, len);
    s->used += len;
    return 0;
}

/* The canonical writer below produces exactly json_dumps(v, CANONICAL_FLAGS)
 * (tests compare the two), without what makes jansson's dump slow on the hot
 * path: a hashtable insert per container for loop detection, a malloc per
 * object for the key sort, and a hash lookup per sorted key. Reals, rare in
 * payment bodies, are written by jansson itself so that their formatting is
 * jansson's by construction. */

#define WRITER_MAX_DEPTH 4096 /* deeper (only possible for built trees): jansson */

static int write_string(hash_sink *s, const char *str, size_t len)
{
    return ust_json_write_string(str, len, sink_write, s);
}

typedef struct sorted_key {
    const char *key;
    size_t len;
    json_t *value;
} sorted_key;

/* jansson's order: bytewise, a prefix first. */
static int compare_keys(const void *a, const void *b)
{
    const sorted_key *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    if (c != 0)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int write_value(hash_sink *s, const json_t *v, int depth);

static int write_object(hash_sink *s, const json_t *v, int depth)
{
    size_t n = json_object_size(v);
    if (n == 0)
        return sink_write("{}", 2, s);
    sorted_key local[32];
    sorted_key *keys = n <= 32 ? local : ust_malloc(n * sizeof(*keys));
    if (keys == NULL)
        return -1;
    size_t i = 0;
    for (void *it = json_object_iter((json_t *)v); it != NULL && i < n;
         it = json_object_iter_next((json_t *)v, it), i++) {
        keys[i].key = json_object_iter_key(it);
        keys[i].len = json_object_iter_key_len(it);
        keys[i].value = json_object_iter_value(it);
    }
    if (i <= 16) {
        /* Payment bodies have small objects: insertion sort beats qsort. */
        for (size_t a = 1; a < i; a++) {
            sorted_key k = keys[a];
            size_t b = a;
            for (; b > 0 && compare_keys(&keys[b - 1], &k) > 0; b--)
                keys[b] = keys[b - 1];
            keys[b] = k;
        }
    } else {
        qsort(keys, i, sizeof(*keys), compare_keys);
    }
    int rc = sink_write("{", 1, s);
    for (size_t k = 0; rc == 0 && k < i; k++) {
        if ((k > 0 && sink_write(",", 1, s) != 0) ||
            write_string(s, keys[k].key, keys[k].len) != 0 ||
            sink_write(":", 1, s) != 0 || write_value(s, keys[k].value, depth + 1) != 0)
            rc = -1;
    }
    if (keys != local)
        ust_free(keys);
    return rc == 0 ? sink_write("}", 1, s) : -1;
}

static int write_value(hash_sink *s, const json_t *v, int depth)
{
    if (depth > WRITER_MAX_DEPTH)
        return json_dump_callback(v, sink_write, s, CANONICAL_FLAGS);
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return write_object(s, v, depth);
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (sink_write("[", 1, s) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if ((i > 0 && sink_write(",", 1, s) != 0) ||
                write_value(s, json_array_get(v, i), depth + 1) != 0)
                return -1;
        return sink_write("]", 1, s);
    }
    case JSON_STRING:
        return write_string(s, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: {
        char num[32];
        int len =
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return sink_write(num, (size_t)len, s);
    }
    case JSON_TRUE:
        return sink_write("true", 4, s);
    case JSON_FALSE:
        return sink_write("false", 5, s);
    case JSON_NULL:
        return sink_write("null", 4, s);
    case JSON_REAL:
    default:
        return json_dump_callback(v, sink_write, s, CANONICAL_FLAGS);
    }
}

int ust__json_hash(const json_t *v, char hex[UST_SHA256_HEX_LEN + 1])
{
    hash_sink s;
    s.used = 0;
    s.failed = 0;
    s.ctx = EVP_MD_CTX_new();
    if (s.ctx == NULL)
        return UST_ENOMEM;
    int rc = 0;
    unsigned char md[UST_SHA256_LEN];
    unsigned int mdlen = sizeof(md);
    if (v == NULL || !EVP_DigestInit_ex(s.ctx, ust_sha256_md(), NULL) ||
        write_value(&s, v, 0) != 0 || sink_flush(&s) != 0 ||
        !EVP_DigestFinal_ex(s.ctx, md, &mdlen))
        rc = UST_ENOMEM; /* the writer's only failure on a tree is memory */
    EVP_MD_CTX_free(s.ctx);
    if (rc == 0)
        ust_hex_encode(md, sizeof(md), hex);
    return rc;
}

int ust__body_parse(const unsigned char *body, size_t len, json_t **out)
{
    *out = NULL;
    if (body == NULL || len == 0)
        return 0;
    json_error_t e;
    json_t *root = ust_json_loadb((const char *)body, len, 0, &e);
    if (root == NULL && json_error_code(&e) == json_error_out_of_memory)
        return UST_ENOMEM;
    *out = root;
    return 0;
}

int ust_request_hash(const unsigned char *body, size_t len,
                     char hex[UST_SHA256_HEX_LEN + 1], int *is_json)
{
    json_t *root;
    int rc = ust__body_parse(body, len, &root);
    if (rc != 0)
        return rc;
    if (is_json != NULL)
        *is_json = root != NULL;
    if (root == NULL) {
        ust_sha256_hex(len > 0 ? (const void *)body : "", len, hex);
        return 0;
    }
    rc = ust__json_hash(root, hex);
    json_decref(root);
    return rc;
}
