/* The config's validation toolkit: the key path of an error, the checks of
 * each type of key, the nearest-key suggestion, and a level read, listed,
 * documented and shown from its rows (schema.h). */
#include "event/schema.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include "event/event_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Appends t to the path, truncated at UST__PATH_CAP. A key may hold any
 * byte; control characters become '?' so a message cannot rewrite the
 * terminal. */
static void append(ust__vctx *c, const char *t)
{
    for (; t != NULL && *t != '\0' && c->len < UST__PATH_CAP - 1; t++) {
        unsigned char b = (unsigned char)*t;
        char ch = *t;
        if (b < 0x20 || b == 0x7f)
            ch = '?';
        c->path[c->len++] = ch;
    }
    c->path[c->len] = '\0';
}

static size_t push_text(ust__vctx *c, const char *a, const char *b)
{
    size_t mark = c->len;
    append(c, a);
    append(c, b);
    return mark;
}

size_t ust__push_key(ust__vctx *c, const char *key)
{
    return push_text(c, c->len == 0 ? "" : ".", key);
}

size_t ust__push_index(ust__vctx *c, size_t i)
{
    char num[32];
    (void)snprintf(num, sizeof(num), "[%zu]", i);
    return push_text(c, num, NULL);
}

void ust__pop(ust__vctx *c, size_t mark)
{
    c->len = mark;
    c->path[mark] = '\0';
}

int ust__bad(const ust__vctx *c, const char *what)
{
    return ust_errf(c->err, UST_ECONFIG, "%s: %s: expected %s", c->label,
                    c->len > 0 ? c->path : "top level", what);
}

int ust__nomem(const ust__vctx *c)
{
    return ust_errf(c->err, UST_ENOMEM, "%s: out of memory", c->label);
}

#define KEY_CAP 64

/* Levenshtein distance of a and b, for suggesting a key; KEY_CAP when
 * either is longer than that (no key is). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > KEY_CAP || lb > KEY_CAP)
        return KEY_CAP;
    size_t prev[KEY_CAP + 1], cur[KEY_CAP + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
    }
    return prev[lb];
}

/* The known key nearest to key, or NULL when none is close enough to be
 * the one meant: at most 2 edits, and at most a third of its length. */
static const char *nearest_key(const char *key, const ust__section *s)
{
    const char *best = NULL;
    size_t best_d = KEY_CAP;
    for (size_t i = 0; i < s->n; i++) {
        const char *known = s->keys[i].key;
        size_t d = edit_distance(key, known);
        size_t len = strlen(known);
        if (d < best_d && d <= 2 && d * 3 <= (len < 3 ? 3 : len)) {
            best = known;
            best_d = d;
        }
    }
    return best;
}

const ust__key *ust__row(const ust__section *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->keys[i].key, key) == 0)
            return &s->keys[i];
    return NULL;
}

int ust__check_keys(ust__vctx *c, json_t *obj, const ust__section *s)
{
    for (void *it = json_object_iter(obj); it != NULL;
         it = json_object_iter_next(obj, it)) {
        const char *key = json_object_iter_key(it);
        if (ust__row(s, key) != NULL)
            continue;
        ust__push_key(c, key);
        const char *near = nearest_key(key, s);
        if (near != NULL)
            return ust_errf(c->err, UST_ECONFIG,
                            "%s: unknown key \"%s\" (did you mean \"%s\"?)", c->label,
                            c->path, near);
        char list[UST__PATH_CAP] = "";
        for (size_t i = 0; i < s->n; i++) {
            size_t used = strlen(list);
            (void)snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
                           s->keys[i].key);
        }
        return ust_errf(c->err, UST_ECONFIG, "%s: unknown key \"%s\" (known here: %s)",
                        c->label, c->path, list);
    }
    return 0;
}

int ust__valid_env_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s != '\0'; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

int ust__valid_header_name(const char *s)
{
    /* A header name is a token, exactly the NAME of "header:NAME". */
    char buf[UST__PATH_CAP];
    int n = snprintf(buf, sizeof(buf), UST__HEADER_PREFIX "%s", s);
    return n > 0 && (size_t)n < sizeof(buf) && ust__source_valid(buf);
}

int ust__nonempty(const char *s)
{
    return *s != '\0';
}

int ust__take_string(ust__vctx *c, json_t *obj, const char *key, int required,
                     const char *what, int (*check)(const char *), char **out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL && !required)
        return 0;
    size_t mark = ust__push_key(c, key);
    if (!json_is_string(v) || (check != NULL && !check(json_string_value(v))))
        return ust__bad(c, what);
    ust__pop(c, mark);
    *out = ust_strdup(json_string_value(v));
    return *out == NULL ? ust__nomem(c) : 0;
}

static int take_posint(ust__vctx *c, json_t *obj, const ust__key *k, int64_t *out)
{
    json_t *v = json_object_get(obj, k->key);
    *out = k->def;
    if (v == NULL)
        return 0;
    size_t mark = ust__push_key(c, k->key);
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return ust__bad(c, "a positive integer");
    *out = (int64_t)json_integer_value(v);
    if (k->max > 0 && *out > k->max)
        return ust__bad(c, k->max_what);
    ust__pop(c, mark);
    return 0;
}

static int take_bool(ust__vctx *c, json_t *obj, const char *key, int def, int *out)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (v == NULL)
        return 0;
    size_t mark = ust__push_key(c, key);
    if (!json_is_boolean(v))
        return ust__bad(c, "true or false");
    ust__pop(c, mark);
    *out = json_is_true(v);
    return 0;
}

static int take_duration(ust__vctx *c, json_t *obj, const ust__key *k, int64_t *out)
{
    json_t *v = json_object_get(obj, k->key);
    *out = k->def;
    if (v == NULL && !k->required)
        return 0;
    size_t mark = ust__push_key(c, k->key);
    if (v == NULL)
        return ust__bad(c, k->missing);
    if (!json_is_string(v) || ust_duration_parse(json_string_value(v), out) != 0)
        return ust__bad(c, "a duration such as \"8d\", \"36h\", \"90m\", \"30s\" or"
                           " \"200ms\"");
    ust__pop(c, mark);
    return 0;
}

int ust__take_object(ust__vctx *c, json_t *obj, const char *key, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!json_is_object(v)) {
        ust__push_key(c, key);
        return ust__bad(c, "an object");
    }
    *out = v;
    return 0;
}

int ust__open_block(ust__vctx *c, json_t *obj, const char *key, const ust__section *s,
                    json_t **out, size_t *mark)
{
    int rc = ust__take_object(c, obj, key, out);
    if (rc != 0 || *out == NULL)
        return rc;
    *mark = ust__push_key(c, key);
    return ust__check_keys(c, *out, s);
}

int ust__take_string_array(ust__vctx *c, json_t *obj, const char *key, int need_items,
                           const char *what_array, const char *what_item,
                           int (*check)(const char *), char ***out, size_t *n_out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return 0;
    size_t mark = ust__push_key(c, key);
    if (!json_is_array(v) || (need_items && json_array_size(v) == 0))
        return ust__bad(c, what_array);
    size_t n = json_array_size(v);
    char **arr = ust_calloc(n + 1, sizeof(*arr));
    if (arr == NULL)
        return ust__nomem(c);
    *out = arr; /* owned by the config from here, freed with it */
    if (n_out != NULL)
        *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        size_t im = ust__push_index(c, i);
        if (!json_is_string(item) || (check != NULL && !check(json_string_value(item))))
            return ust__bad(c, what_item);
        ust__pop(c, im);
        arr[i] = ust_strdup(json_string_value(item));
        if (arr[i] == NULL)
            return ust__nomem(c);
        if (n_out != NULL)
            *n_out = i + 1;
    }
    ust__pop(c, mark);
    return 0;
}

#define AT(base, k, type) ((type *)(void *)((char *)(base) + (k)->off))

int ust__take_row(ust__vctx *c, json_t *obj, const ust__key *k, void *base)
{
    int64_t v;
    int rc;
    switch (k->type) {
    case UST__KEY_STRING:
        return ust__take_string(c, obj, k->key, k->required, k->what, k->check,
                                AT(base, k, char *));
    case UST__KEY_POSINT:
        return take_posint(c, obj, k, AT(base, k, int64_t));
    case UST__KEY_SIZE:
        rc = take_posint(c, obj, k, &v);
        *AT(base, k, size_t) = (size_t)v;
        return rc;
    case UST__KEY_BOOL:
        return take_bool(c, obj, k->key, k->preset ? *AT(base, k, int) : (int)k->def,
                         AT(base, k, int));
    case UST__KEY_DURATION:
        return take_duration(c, obj, k, AT(base, k, int64_t));
    case UST__KEY_STRINGS:
        return ust__take_string_array(
            c, obj, k->key, k->need_items, k->what, k->what_item, k->check,
            AT(base, k, char **),
            k->off_n == SIZE_MAX ? NULL : (size_t *)(void *)((char *)base + k->off_n));
    case UST__KEY_PARSED:
        return k->parse != NULL ? k->parse(c, obj, base) : 0;
    }
    return 0;
}

int ust__take_rows(ust__vctx *c, json_t *obj, const ust__section *s, void *base)
{
    for (size_t i = 0; i < s->n; i++) {
        int rc = ust__take_row(c, obj, &s->keys[i], base);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int ust__take_section(ust__vctx *c, json_t *parent, const char *key,
                      const ust__section *s, void *base)
{
    json_t *obj;
    size_t mark = c->len;
    int rc = ust__open_block(c, parent, key, s, &obj, &mark);
    if (rc == 0)
        rc = ust__take_rows(c, obj, s, base);
    if (rc == 0)
        ust__pop(c, mark);
    return rc;
}

int ust__take_given_section(ust__vctx *c, json_t *parent, const char *key,
                            const ust__section *s, void *base)
{
    json_t *obj;
    int rc = ust__take_object(c, parent, key, &obj);
    if (rc != 0 || obj == NULL)
        return rc;
    return ust__take_section(c, parent, key, s, base);
}

/* ---- docs and show ---------------------------------------------------- */

int ust__append(char **buf, const char *text)
{
    size_t have = *buf != NULL ? strlen(*buf) : 0, add = strlen(text);
    char *grown = ust_realloc(*buf, have + add + 1);
    if (grown == NULL)
        return UST_ENOMEM;
    memcpy(grown + have, text, add + 1);
    *buf = grown;
    return 0;
}

static const char *const type_doc[] = {
    [UST__KEY_STRING] = "string",
    [UST__KEY_POSINT] = "positive integer",
    [UST__KEY_SIZE] = "positive integer",
    [UST__KEY_BOOL] = "`true` / `false`",
    [UST__KEY_DURATION] = "duration string",
    [UST__KEY_STRINGS] = "array of strings",
    [UST__KEY_PARSED] = "object",
};

int ust__section_doc(const ust__section *s, char **buf)
{
    char *head =
        ust_sprintf("| key | type | default | %s |\n| --- | --- | --- | --- |\n",
                    s->doc_head != NULL ? s->doc_head : "what it does");
    int rc = head != NULL ? ust__append(buf, head) : UST_ENOMEM;
    ust_free(head);
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        const ust__key *k = &s->keys[i];
        char def[64];
        const char *d = k->doc_default;
        if (d == NULL && k->required)
            d = "**required**";
        else if (d == NULL && (k->type == UST__KEY_POSINT || k->type == UST__KEY_SIZE))
            d = (snprintf(def, sizeof(def), "`%" PRId64 "`", k->def), def);
        else if (d == NULL && k->type == UST__KEY_BOOL)
            d = k->def ? "`true`" : "`false`";
        else if (d == NULL)
            d = "none";
        char *line = ust_sprintf("| `%s` | %s | %s | %s |\n", k->key,
                                 k->doc_type != NULL ? k->doc_type : type_doc[k->type],
                                 d, k->doc != NULL ? k->doc : "");
        rc = line != NULL ? ust__append(buf, line) : UST_ENOMEM;
        ust_free(line);
    }
    return rc;
}

/* A duration in its largest exact unit, as the file would write it. */
static json_t *duration_json(int64_t us)
{
    static const struct {
        const char *unit;
        int64_t us;
    } units[] = {{"d", 86400000000LL},
                 {"h", 3600000000LL},
                 {"m", 60000000LL},
                 {"s", 1000000LL},
                 {"ms", 1000LL}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (us > 0 && us % units[i].us == 0) {
            char text[48];
            (void)snprintf(text, sizeof(text), "%" PRId64 "%s", us / units[i].us,
                           units[i].unit);
            return json_string(text);
        }
    return us == 0 ? json_null() : json_integer(us);
}

static json_t *strings_json(char **v)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && v != NULL && v[i] != NULL; i++)
        if (json_array_append_new(arr, json_string(v[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

json_t *ust__section_show(const ust__section *s, const void *base)
{
    json_t *obj = json_object();
    for (size_t i = 0; obj != NULL && i < s->n; i++) {
        const ust__key *k = &s->keys[i];
        json_t *v = NULL;
        switch (k->type) {
        case UST__KEY_STRING: {
            const char *str = *AT(base, k, char *const);
            v = str != NULL ? json_string(str) : json_null();
            break;
        }
        case UST__KEY_POSINT:
            v = json_integer(*AT(base, k, const int64_t));
            break;
        case UST__KEY_SIZE:
            v = json_integer((json_int_t)*AT(base, k, const size_t));
            break;
        case UST__KEY_BOOL:
            v = json_boolean(*AT(base, k, const int));
            break;
        case UST__KEY_DURATION:
            v = duration_json(*AT(base, k, const int64_t));
            break;
        case UST__KEY_STRINGS: {
            char **strs = *AT(base, k, char **const);
            v = strings_json(strs); /* absent: none, the empty list */
            break;
        }
        case UST__KEY_PARSED:
            continue; /* the level's own code shows a compound value */
        }
        if (v == NULL || json_object_set_new(obj, k->key, v) != 0) {
            json_decref(obj);
            return NULL;
        }
    }
    return obj;
}
