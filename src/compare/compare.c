/* Decision comparison: field by field, the response body as JSON with the
 * config's ignore rules, so that a generated id that legitimately differs is
 * not noise. One walk makes the diff (each differing field with both sides'
 * values); the field names are read off it, so the two never disagree. */
#include <understudy/alloc.h>
#include <understudy/compare.h>
#include <understudy/event.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY_PATHS 16

/* The diff being built, and whether an allocation failed along the way: a
 * diff short of an entry would be a wrong answer, not a smaller one. */
typedef struct differ {
    json_t *out;
    int failed;
    /* A side with no body at all: it compares as null (as a body "null"
     * does) but has no value to show. */
    int no_body_l, no_body_c;
} differ;

static int str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Appends {"field", "legacy", "candidate"}, keys in that order. has_l, has_c:
 * whether each side has a value at all (one that has none has no key, which
 * is not JSON null). Takes the references l and c. */
static void add_entry(differ *d, const char *field, int has_l, json_t *l, int has_c,
                      json_t *c)
{
    json_t *e = json_object();
    int ok = e != NULL && json_object_set_new(e, "field", json_string(field)) == 0 &&
             (!has_l || json_object_set(e, "legacy", l) == 0) &&
             (!has_c || json_object_set(e, "candidate", c) == 0) &&
             json_array_append(d->out, e) == 0;
    if (!ok)
        d->failed = 1;
    json_decref(e);
    json_decref(l);
    json_decref(c);
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

/* path + "/" + key as a JSON Pointer token ('~' and '/' escaped), whole
 * however long: a cut name would name another place than its value's. */
static char *child_path(const char *path, const char *key)
{
    size_t n = strlen(path), len = n + 2;
    for (const char *p = key; *p; p++)
        len += *p == '~' || *p == '/' ? 2 : 1;
    char *out = ust_malloc(len);
    if (out == NULL)
        return NULL;
    memcpy(out, path, n);
    out[n++] = '/';
    for (const char *p = key; *p; p++) {
        if (*p == '~' || *p == '/') {
            out[n++] = '~';
            out[n++] = *p == '~' ? '0' : '1';
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return out;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of both objects, each once, sorted (so the diff's order is
 * stable); NULL on allocation failure. */
static const char **union_keys(json_t *a, json_t *b, size_t *n)
{
    const char **keys =
        ust_calloc(json_object_size(a) + json_object_size(b) + 1, sizeof(char *));
    if (keys == NULL)
        return NULL;
    const char *k;
    json_t *v;
    *n = 0;
    json_object_foreach(a, k, v) keys[(*n)++] = k;
    json_object_foreach(b, k, v) if (!json_object_get(a, k)) keys[(*n)++] = k;
    qsort(keys, *n, sizeof(char *), cmp_cstr);
    return keys;
}

/* An entry "body<pointer>" for each differing leaf, both values as they are
 * at the pointer (NULL: that side has nothing there), while the diff holds
 * fewer than MAX_BODY_PATHS entries. */
static void diff_json(differ *d, json_t *a, json_t *b, const char *path)
{
    if (json_array_size(d->out) >= MAX_BODY_PATHS || json_equal(a, b))
        return;
    if (json_is_object(a) && json_is_object(b)) {
        size_t n = 0;
        const char **keys = union_keys(a, b, &n);
        if (keys == NULL)
            d->failed = 1;
        for (size_t i = 0; keys != NULL && i < n; i++) {
            char *child = child_path(path, keys[i]);
            if (child == NULL)
                d->failed = 1;
            else
                diff_json(d, json_object_get(a, keys[i]), json_object_get(b, keys[i]),
                          child);
            ust_free(child);
        }
        ust_free(keys);
        return;
    }
    char *name = ust_sprintf("body%s", path);
    int has_l = a != NULL && !d->no_body_l, has_c = b != NULL && !d->no_body_c;
    add_entry(d, name, has_l, json_incref(a), has_c, json_incref(b));
    ust_free(name);
}

/* A body that is not JSON: the texts, as strings. */
static void diff_text(differ *d, const char *l, const char *c)
{
    add_entry(d, "body", l != NULL, json_string(l), c != NULL, json_string(c));
}

static void compare_body(differ *d, const ust_config *cfg, const ust_decision *l,
                         const ust_decision *c)
{
    if (str_eq(l->body, c->body))
        return;
    json_error_t ea, eb;
    json_t *a = l->body ? ust_json_loads(l->body, JSON_DECODE_ANY, &ea) : json_null();
    json_t *b = c->body ? ust_json_loads(c->body, JSON_DECODE_ANY, &eb) : json_null();
    if (a && b) {
        apply_ignores(cfg, a);
        apply_ignores(cfg, b);
        d->no_body_l = l->body == NULL;
        d->no_body_c = c->body == NULL;
        diff_json(d, a, b, "");
    } else if ((a == NULL && json_error_code(&ea) == json_error_out_of_memory) ||
               (b == NULL && json_error_code(&eb) == json_error_out_of_memory)) {
        d->failed = 1;
    } else {
        diff_text(d, l->body, c->body);
    }
    json_decref(a);
    json_decref(b);
}

static void compare_headers(differ *d, const ust_config *cfg, const ust_decision *l,
                            const ust_decision *c)
{
    for (size_t i = 0; i < cfg->n_compare_headers; i++) {
        char lower[128];
        size_t n = strlen(cfg->compare_headers[i]);
        if (n >= sizeof(lower))
            continue;
        for (size_t k = 0; k <= n; k++)
            lower[k] = (char)tolower((unsigned char)cfg->compare_headers[i][k]);
        json_t *a = l->headers ? json_object_get(l->headers, lower) : NULL;
        json_t *b = c->headers ? json_object_get(c->headers, lower) : NULL;
        if ((a == NULL && b == NULL) || (a && b && json_equal(a, b)))
            continue;
        char *name = ust_sprintf("header:%s", lower);
        add_entry(d, name, a != NULL, json_deep_copy(a), b != NULL, json_deep_copy(b));
        ust_free(name);
    }
}

static json_t *flags_json(const ust_decision *d)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < d->n_flags; i++)
        if (json_array_append_new(a, json_string(d->flags[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

static json_t *state_json(const char *state)
{
    return state != NULL ? json_string(state) : json_null();
}

json_t *ust_compare_diff(const ust_config *cfg, const ust_decision *l,
                         const ust_decision *c)
{
    differ d = {json_array(), 0, 0, 0};
    if (d.out == NULL)
        return NULL;
    if (l->verdict != c->verdict)
        add_entry(&d, "verdict", 1, json_string(ust_verdict_name(l->verdict)), 1,
                  json_string(ust_verdict_name(c->verdict)));
    if (l->http_status != c->http_status)
        add_entry(&d, "status", 1, json_integer(l->http_status), 1,
                  json_integer(c->http_status));
    compare_headers(&d, cfg, l, c);
    compare_body(&d, cfg, l, c);
    if (!str_eq(l->state_after, c->state_after))
        add_entry(&d, "state", 1, state_json(l->state_after), 1,
                  state_json(c->state_after));
    int flags_equal = l->n_flags == c->n_flags;
    for (size_t i = 0; flags_equal && i < l->n_flags; i++)
        flags_equal = strcmp(l->flags[i], c->flags[i]) == 0;
    if (!flags_equal)
        add_entry(&d, "flags", 1, flags_json(l), 1, flags_json(c));
    if (d.failed) {
        json_decref(d.out);
        return NULL;
    }
    return d.out;
}

json_t *ust_compare_diff_fields(const json_t *diff)
{
    json_t *names = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(diff, i, e)
    {
        if (names != NULL &&
            json_array_append(names, json_object_get(e, "field")) != 0) {
            json_decref(names);
            names = NULL;
        }
    }
    return names;
}

json_t *ust_compare_decisions(const ust_config *cfg, const ust_decision *l,
                              const ust_decision *c)
{
    json_t *diff = ust_compare_diff(cfg, l, c);
    json_t *names = diff != NULL ? ust_compare_diff_fields(diff) : NULL;
    json_decref(diff);
    return names;
}

char *ust_divergence_class(const char *what, const ust_decision *l,
                           const ust_decision *c)
{
    return ust_sprintf("%s: %s \xe2\x86\x92 %s", what ? what : "(unrouted)",
                       ust_verdict_name(l->verdict), ust_verdict_name(c->verdict));
}
