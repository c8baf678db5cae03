/* Decision comparison: field by field, the response body as JSON with the
 * config's ignore rules, so that a generated id that legitimately differs is
 * not noise. */
#include <understudy/alloc.h>
#include <understudy/compare.h>
#include <understudy/event.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY_PATHS 16

static int str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Removes the value each ignore pointer names; a pointer that names nothing
 * is fine (the field may be absent in one decision only). */
static void apply_ignores(const ust_config *cfg, json_t *root)
{
    for (size_t i = 0; i < cfg->n_compare_ignore; i++) {
        char token[256];
        json_t *parent =
            ust_json_pointer_parent(root, cfg->compare_ignore[i], token, sizeof(token));
        if (json_is_object(parent))
            json_object_del(parent, token);
        else if (json_is_array(parent) && strcmp(token, "-") != 0)
            json_array_remove(parent, (size_t)strtoul(token, NULL, 10));
    }
}

static void append_token(char *path, size_t cap, const char *token)
{
    size_t len = strlen(path);
    if (len + 1 < cap)
        path[len++] = '/', path[len] = '\0';
    for (const char *p = token; *p && len + 2 < cap; p++) {
        if (*p == '~' || *p == '/') {
            path[len++] = '~';
            path[len++] = *p == '~' ? '0' : '1';
        } else {
            path[len++] = *p;
        }
        path[len] = '\0';
    }
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collects "body<pointer>" for each differing leaf, at most MAX_BODY_PATHS. */
static void diff_json(json_t *a, json_t *b, char *path, size_t cap, json_t *out)
{
    if (json_array_size(out) >= MAX_BODY_PATHS || json_equal(a, b))
        return;
    size_t saved = strlen(path);
    if (json_is_object(a) && json_is_object(b)) {
        /* Keys of both sides, in sorted order, so output is stable. */
        json_t *keys = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) json_array_append_new(keys, json_string(k));
        json_object_foreach(b, k, v) if (!json_object_get(a, k))
            json_array_append_new(keys, json_string(k));
        size_t n = json_array_size(keys);
        const char **sorted = ust_calloc(n ? n : 1, sizeof(char *));
        for (size_t i = 0; sorted && i < n; i++)
            sorted[i] = json_string_value(json_array_get(keys, i));
        if (sorted)
            qsort(sorted, n, sizeof(char *), cmp_cstr);
        for (size_t i = 0; sorted && i < n; i++) {
            append_token(path, cap, sorted[i]);
            diff_json(json_object_get(a, sorted[i]), json_object_get(b, sorted[i]),
                      path, cap, out);
            path[saved] = '\0';
        }
        ust_free(sorted);
        json_decref(keys);
        return;
    }
    char *name = ust_sprintf("body%s", path);
    json_array_append_new(out, json_string(name ? name : "body"));
    ust_free(name);
}

static void compare_body(const ust_config *cfg, const ust_decision *l,
                         const ust_decision *c, json_t *out)
{
    if (str_eq(l->body, c->body))
        return;
    json_error_t jerr;
    json_t *a = l->body ? ust_json_loads(l->body, JSON_DECODE_ANY, &jerr) : json_null();
    json_t *b = c->body ? ust_json_loads(c->body, JSON_DECODE_ANY, &jerr) : json_null();
    if (a && b) {
        apply_ignores(cfg, a);
        apply_ignores(cfg, b);
        char path[512] = "";
        diff_json(a, b, path, sizeof(path), out);
    } else {
        json_array_append_new(out, json_string("body"));
    }
    json_decref(a);
    json_decref(b);
}

json_t *ust_compare_decisions(const ust_config *cfg, const ust_decision *l,
                              const ust_decision *c)
{
    json_t *out = json_array();
    if (out == NULL)
        return NULL;
    if (l->verdict != c->verdict)
        json_array_append_new(out, json_string("verdict"));
    if (l->http_status != c->http_status)
        json_array_append_new(out, json_string("status"));
    for (size_t i = 0; i < cfg->n_compare_headers; i++) {
        char lower[128];
        size_t n = strlen(cfg->compare_headers[i]);
        if (n >= sizeof(lower))
            continue;
        for (size_t k = 0; k <= n; k++)
            lower[k] = (char)tolower((unsigned char)cfg->compare_headers[i][k]);
        json_t *a = l->headers ? json_object_get(l->headers, lower) : NULL;
        json_t *b = c->headers ? json_object_get(c->headers, lower) : NULL;
        if (!(a == NULL && b == NULL) && !(a && b && json_equal(a, b))) {
            char *name = ust_sprintf("header:%s", lower);
            json_array_append_new(out, json_string(name ? name : "header"));
            ust_free(name);
        }
    }
    compare_body(cfg, l, c, out);
    if (!str_eq(l->state_after, c->state_after))
        json_array_append_new(out, json_string("state"));
    int flags_equal = l->n_flags == c->n_flags;
    for (size_t i = 0; flags_equal && i < l->n_flags; i++)
        flags_equal = strcmp(l->flags[i], c->flags[i]) == 0;
    if (!flags_equal)
        json_array_append_new(out, json_string("flags"));
    return out;
}

char *ust_divergence_class(const char *what, const ust_decision *l,
                           const ust_decision *c)
{
    return ust_sprintf("%s: %s \xe2\x86\x92 %s", what ? what : "(unrouted)",
                       ust_verdict_name(l->verdict), ust_verdict_name(c->verdict));
}
