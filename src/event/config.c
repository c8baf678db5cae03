/* Configuration: one JSON file, validated completely at load so that every
 * later stage can trust it. Each refusal names the file, the key path and
 * what was expected; a secret appears only by the name of its variable. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>
#include <understudy/sig.h>

#include "event/event_internal.h"

#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PATH_CAP 512

#define DEFAULT_MAX_BODY_BYTES 1048576
#define DEFAULT_MAX_HEADERS 64
#define DEFAULT_HEADER_TIMEOUT_MS 10000
#define DEFAULT_IDLE_TIMEOUT_MS 30000
#define DEFAULT_MAX_CONNECTIONS 1024
/* Answers serve holds for clients that have not read them (see
 * docs/recorder.md): four of --respond upstream's largest per connection. */
#define DEFAULT_MAX_OWED_BYTES (64 << 20)
#define DEFAULT_MAX_OWED_BYTES_TOTAL (256 << 20)
#define MAX_HEALTH_MAX_LAG_S 1000000000LL
#define MAX_COVERAGE_VALUE 1000000000LL
#define DEFAULT_HEALTH_MAX_LAG_S 300
#define DEFAULT_CACHE_MB 64
#define MAX_CACHE_MB (1LL << 20) /* 1 TiB: its bytes fit a size_t */
#define DEFAULT_PLUGIN_TIMEOUT_MS 1000
#define DEFAULT_PLUGIN_MAX_RSS_MB 512
#define DEFAULT_IDEM_HEADER "Idempotency-Key"
#define DEFAULT_RETENTION_EVERY_US 3600000000LL

#define WHAT_SOURCE "a JSON Pointer (\"\" or starting with /) or \"header:NAME\""
#define WHAT_SCHEME "one of " UST_SIG_SCHEME_CHOICES
#define WHAT_STATE "one of pending, paid, refunded, cancelled"

/* Validation context: the key path is a stack, so an error reports exactly
 * where it happened without every caller building strings. */
typedef struct vctx {
    const char *label;
    char **err;
    char path[PATH_CAP];
    size_t len;
} vctx;

/* Appends t to the path, truncated at PATH_CAP. A key may hold any byte;
 * control characters become '?' so a message cannot rewrite the terminal. */
static void append(vctx *c, const char *t)
{
    for (; t != NULL && *t != '\0' && c->len < PATH_CAP - 1; t++) {
        unsigned char b = (unsigned char)*t;
        char ch = *t;
        if (b < 0x20 || b == 0x7f)
            ch = '?';
        c->path[c->len++] = ch;
    }
    c->path[c->len] = '\0';
}

/* Appends a then b; returns the mark to pop back to. */
static size_t push_text(vctx *c, const char *a, const char *b)
{
    size_t mark = c->len;
    append(c, a);
    append(c, b);
    return mark;
}

static size_t push_key(vctx *c, const char *key)
{
    return push_text(c, c->len == 0 ? "" : ".", key);
}

static size_t push_index(vctx *c, size_t i)
{
    char num[32];
    (void)snprintf(num, sizeof(num), "[%zu]", i);
    return push_text(c, num, NULL);
}

static void pop(vctx *c, size_t mark)
{
    c->len = mark;
    c->path[mark] = '\0';
}

static int bad(const vctx *c, const char *what)
{
    return ust_errf(c->err, UST_ECONFIG, "%s: %s: expected %s", c->label,
                    c->len > 0 ? c->path : "top level", what);
}

static int nomem(const vctx *c)
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

/* A level's known keys: a table whose entries each begin with the key's
 * name (a plain array of names, or a struct with the name first), so the
 * table that drives a level's parsing is also its list of keys. */
typedef struct keys {
    const void *table;
    size_t n, stride;
} keys;

#define KEYS(table) ((keys){(table), UST_ARRAY_SIZE(table), sizeof((table)[0])})

static const char *key_at(keys k, size_t i)
{
    return *(const char *const *)(const void *)((const char *)k.table + i * k.stride);
}

/* The known key nearest to key, or NULL when none is close enough to be
 * the one meant: at most 2 edits, and at most a third of its length. */
static const char *nearest_key(const char *key, keys k)
{
    const char *best = NULL;
    size_t best_d = KEY_CAP;
    for (size_t i = 0; i < k.n; i++) {
        size_t d = edit_distance(key, key_at(k, i));
        size_t len = strlen(key_at(k, i));
        if (d < best_d && d <= 2 && d * 3 <= (len < 3 ? 3 : len)) {
            best = key_at(k, i);
            best_d = d;
        }
    }
    return best;
}

/* Every key of obj must be a known one: an unknown key is a mistake, never
 * an extension, or a misspelled "signature" would leave a route unsigned.
 * The message names the key path and the nearest known key, or else lists
 * the keys this level knows. */
static int check_keys(vctx *c, json_t *obj, keys k)
{
    for (void *it = json_object_iter(obj); it != NULL;
         it = json_object_iter_next(obj, it)) {
        const char *key = json_object_iter_key(it);
        size_t i = 0;
        while (i < k.n && strcmp(key_at(k, i), key) != 0)
            i++;
        if (i < k.n)
            continue;
        push_key(c, key);
        const char *near = nearest_key(key, k);
        if (near != NULL)
            return ust_errf(c->err, UST_ECONFIG,
                            "%s: unknown key \"%s\" (did you mean \"%s\"?)", c->label,
                            c->path, near);
        char list[PATH_CAP] = "";
        for (i = 0; i < k.n; i++) {
            size_t used = strlen(list);
            (void)snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
                           key_at(k, i));
        }
        return ust_errf(c->err, UST_ECONFIG, "%s: unknown key \"%s\" (known here: %s)",
                        c->label, c->path, list);
    }
    return 0;
}

static int valid_env_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s != '\0'; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static int valid_header_name(const char *s)
{
    /* A header name is a token, exactly the NAME of "header:NAME". */
    char buf[PATH_CAP];
    int n = snprintf(buf, sizeof(buf), UST__HEADER_PREFIX "%s", s);
    return n > 0 && (size_t)n < sizeof(buf) && ust__source_valid(buf);
}

static int valid_route_path(const char *s)
{
    return s[0] == '/' && strpbrk(s, "?# \t") == NULL;
}

static int nonempty(const char *s)
{
    return *s != '\0';
}

/* obj.key as a string into *out (NULL when absent and not required). check
 * may be NULL. */
static int take_string(vctx *c, json_t *obj, const char *key, int required,
                       const char *what, int (*check)(const char *), char **out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL && !required)
        return 0;
    size_t mark = push_key(c, key);
    if (!json_is_string(v) || (check != NULL && !check(json_string_value(v))))
        return bad(c, what);
    pop(c, mark);
    *out = ust_strdup(json_string_value(v));
    return *out == NULL ? nomem(c) : 0;
}

static int take_posint(vctx *c, json_t *obj, const char *key, int64_t def, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        *out = def;
        return 0;
    }
    size_t mark = push_key(c, key);
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return bad(c, "a positive integer");
    pop(c, mark);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static int take_bool(vctx *c, json_t *obj, const char *key, int def, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        *out = def;
        return 0;
    }
    size_t mark = push_key(c, key);
    if (!json_is_boolean(v))
        return bad(c, "true or false");
    pop(c, mark);
    *out = json_is_true(v);
    return 0;
}

/* obj.key when present must be an object; *out NULL when absent. */
static int take_object(vctx *c, json_t *obj, const char *key, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!json_is_object(v)) {
        push_key(c, key);
        return bad(c, "an object");
    }
    *out = v;
    return 0;
}

/* take_object with key pushed on the path whether or not it is there, for
 * the blocks that must be checked when absent too; *mark pops it. */
static int take_block(vctx *c, json_t *obj, const char *key, json_t **out, size_t *mark)
{
    int rc = take_object(c, obj, key, out);
    if (rc == 0)
        *mark = push_key(c, key);
    return rc;
}

/* An optional block: nothing pushed when absent (0, *out NULL); present, key
 * is pushed (*mark pops it) and its keys must be among k. */
static int open_block(vctx *c, json_t *obj, const char *key, keys k, json_t **out,
                      size_t *mark)
{
    int rc = take_object(c, obj, key, out);
    if (rc != 0 || *out == NULL)
        return rc;
    *mark = push_key(c, key);
    return check_keys(c, *out, k);
}

/* An array of strings each passing check; *out NULL-terminated. */
static int take_string_array(vctx *c, json_t *obj, const char *key, int need_items,
                             const char *what_array, const char *what_item,
                             int (*check)(const char *), char ***out, size_t *n_out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return 0;
    size_t mark = push_key(c, key);
    if (!json_is_array(v) || (need_items && json_array_size(v) == 0))
        return bad(c, what_array);
    size_t n = json_array_size(v);
    char **arr = ust_calloc(n + 1, sizeof(*arr));
    if (arr == NULL)
        return nomem(c);
    *out = arr; /* owned by the config from here, freed with it */
    if (n_out != NULL)
        *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        size_t im = push_index(c, i);
        if (!json_is_string(item) || (check != NULL && !check(json_string_value(item))))
            return bad(c, what_item);
        pop(c, im);
        arr[i] = ust_strdup(json_string_value(item));
        if (arr[i] == NULL)
            return nomem(c);
        if (n_out != NULL)
            *n_out = i + 1;
    }
    pop(c, mark);
    return 0;
}

static const char *const signature_keys[] = {"scheme", "secret_env", "tolerance_s",
                                             "header"};

/* A webhook route must have a signature block: leaving it out (or
 * misspelling it) must not turn verification off. An unsigned webhook
 * route says {"scheme": "none"}, and nothing else. */
static int parse_signature(vctx *c, json_t *route, ust_route *r)
{
    json_t *sig;
    size_t mark;
    int rc = take_block(c, route, "signature", &sig, &mark);
    if (rc != 0)
        return rc;
    if (sig == NULL) {
        if (r->kind == UST_ROUTE_WEBHOOK)
            return bad(c, "a signature block (or {\"scheme\": \"none\"} for an "
                          "unsigned webhook route)");
        pop(c, mark);
        return 0;
    }
    if ((rc = check_keys(c, sig, KEYS(signature_keys))) != 0)
        return rc;
    json_t *scheme = json_object_get(sig, "scheme");
    if (!json_is_string(scheme) ||
        ust_sig_scheme_parse(json_string_value(scheme), &r->scheme) != 0) {
        r->scheme = UST_SCHEME_NONE;
        push_key(c, "scheme");
        return bad(c, WHAT_SCHEME);
    }
    if (r->scheme == UST_SCHEME_NONE) {
        /* Every key after the first ("scheme") belongs to a real scheme. */
        for (size_t i = 1; i < UST_ARRAY_SIZE(signature_keys); i++)
            if (json_object_get(sig, signature_keys[i]) != NULL) {
                push_key(c, signature_keys[i]);
                return bad(c, "nothing but \"scheme\" when the scheme is \"none\"");
            }
        pop(c, mark);
        return 0;
    }
    if (!ust_sig_scheme_info_of(r->scheme)->named_header &&
        json_object_get(sig, "header") != NULL) {
        push_key(c, "header");
        return bad(c, "no \"header\" here: it is for scheme \"hmac-sha256-hex\" only");
    }
    if ((rc = take_string(c, sig, "secret_env", 1, "an environment variable name",
                          valid_env_name, &r->secret_env)) != 0 ||
        (rc = take_posint(c, sig, "tolerance_s", UST_SIG_DEFAULT_TOLERANCE_S,
                          &r->tolerance_s)) != 0 ||
        (rc = take_string(c, sig, "header", 0, "a header name", valid_header_name,
                          &r->sig_header)) != 0)
        return rc;
    pop(c, mark);
    return 0;
}

/* A field whose source the route's "fields" names (source FIELDS). */
#define SOURCE_RANK_FIELDS(m) RANK_##m,
#define SOURCE_RANK_DERIVED(m)
#define SOURCE_RANK(kind, m, column, wire, wire_at, export, source, since)             \
    SOURCE_RANK_##source(m)
#define SOURCE_KNOWN_FIELDS(m, column)                                                 \
    [RANK_##m + (RANK_##m > RANK_event_type)] = {#column,                              \
                                                 offsetof(ust_route_fields, m)},
#define SOURCE_KNOWN_DERIVED(m, column)
#define SOURCE_KNOWN(kind, m, column, wire, wire_at, export, source, since)            \
    SOURCE_KNOWN_##source(m, column)
#define SOURCE_OF_FIELDS(m) f->m,
#define SOURCE_OF_DERIVED(m)
#define SOURCE_OF(kind, m, column, wire, wire_at, export, source, since)               \
    SOURCE_OF_##source(m)
#define SOURCE_FREE_FIELDS(m) ust_free(r->fields.m);
#define SOURCE_FREE_DERIVED(m)
#define SOURCE_FREE(kind, m, column, wire, wire_at, export, source, since)             \
    SOURCE_FREE_##source(m)

static int parse_fields(vctx *c, json_t *route, ust_route *r)
{
    json_t *fields;
    int rc = take_object(c, route, "fields", &fields);
    if (rc != 0 || fields == NULL)
        return rc;
    /* The event's FIELDS-sourced fields by their column names, in table
     * order; occurred_at keeps its place after event_type (where "known
     * here" lists have always had it). */
    enum { UST_EVENT_FIELDS(SOURCE_RANK) N_SOURCES };
    static const struct {
        const char *name;
        size_t off;
    } known[N_SOURCES + 1] = {
        /* clang-format off */
        UST_EVENT_FIELDS(SOURCE_KNOWN)
        [RANK_event_type + 1] = {"occurred_at", offsetof(ust_route_fields, occurred_at)},
        /* clang-format on */
    };
    size_t mark = push_key(c, "fields");
    if ((rc = check_keys(c, fields, KEYS(known))) != 0)
        return rc;
    for (size_t i = 0; i < UST_ARRAY_SIZE(known); i++) {
        char **slot = (char **)((char *)&r->fields + known[i].off);
        rc = take_string(c, fields, known[i].name, 0, WHAT_SOURCE, ust__source_valid,
                         slot);
        if (rc != 0)
            return rc;
    }
    pop(c, mark);
    return 0;
}

static int parse_status(vctx *c, json_t *route, ust_route *r)
{
    json_t *status;
    static const char *const status_keys[] = {"from", "map"};
    size_t mark;
    int rc = open_block(c, route, "status", KEYS(status_keys), &status, &mark);
    if (rc != 0 || status == NULL)
        return rc;
    rc = take_string(c, status, "from", 1, WHAT_SOURCE, ust__source_valid,
                     &r->status_from);
    if (rc != 0)
        return rc;
    json_t *map;
    if ((rc = take_object(c, status, "map", &map)) != 0)
        return rc;
    if (map != NULL && json_object_size(map) > 0) {
        push_key(c, "map");
        r->status_map = ust_calloc(json_object_size(map), sizeof(*r->status_map));
        if (r->status_map == NULL)
            return nomem(c);
        for (void *it = json_object_iter(map); it != NULL;
             it = json_object_iter_next(map, it)) {
            const char *key = json_object_iter_key(it);
            json_t *v = json_object_iter_value(it);
            if (!json_is_string(v) || !ust_state_is_valid(json_string_value(v))) {
                push_key(c, key);
                return bad(c, WHAT_STATE);
            }
            ust_status_map_entry *e = &r->status_map[r->n_status_map];
            e->from = ust_strdup(key);
            e->state = ust_strdup(json_string_value(v));
            r->n_status_map++;
            if (e->from == NULL || e->state == NULL)
                return nomem(c);
        }
    }
    pop(c, mark);
    return 0;
}

static int parse_idempotency(vctx *c, json_t *route, ust_route *r)
{
    json_t *idem;
    int rc = take_object(c, route, "idempotency", &idem);
    if (rc != 0)
        return rc;
    if (idem != NULL) {
        static const char *const idempotency_keys[] = {"header", "tenant_header"};
        size_t mark = push_key(c, "idempotency");
        if ((rc = check_keys(c, idem, KEYS(idempotency_keys))) != 0 ||
            (rc = take_string(c, idem, "header", 0, "a header name", valid_header_name,
                              &r->idem_header)) != 0 ||
            (rc = take_string(c, idem, "tenant_header", 0, "a header name",
                              valid_header_name, &r->tenant_header)) != 0)
            return rc;
        pop(c, mark);
    }
    if (r->idem_header == NULL && (idem != NULL || r->kind == UST_ROUTE_API)) {
        r->idem_header = ust_strdup(DEFAULT_IDEM_HEADER);
        if (r->idem_header == NULL)
            return nomem(c);
    }
    return 0;
}

/* routes[i].sample.percent, kept in hundredths (1..10000): the hash of an
 * identity is taken mod 10000, so 0.01 is the finest step. */
static int parse_sample(vctx *c, json_t *route, ust_route *r)
{
    json_t *sample;
    r->sample_bp = 10000;
    static const char *const sample_keys[] = {"percent"};
    size_t mark;
    int rc = open_block(c, route, "sample", KEYS(sample_keys), &sample, &mark);
    if (rc != 0 || sample == NULL)
        return rc;
    json_t *v = json_object_get(sample, "percent");
    push_key(c, "percent");
    double p = json_is_number(v) ? json_number_value(v) : -1;
    if (!(p > 0 && p <= 100) || (int)(p * 100 + 0.5) < 1)
        return bad(c, "a number of percent, more than 0 (at least 0.01) and at most "
                      "100");
    r->sample_bp = (int)(p * 100 + 0.5);
    pop(c, mark);
    return 0;
}

static const char *const route_keys[] = {"path",   "kind",   "provider",    "signature",
                                         "fields", "status", "idempotency", "sample"};

static int parse_route(vctx *c, json_t *jr, ust_route *r)
{
    if (!json_is_object(jr))
        return bad(c, "an object");
    int rc = check_keys(c, jr, KEYS(route_keys));
    if (rc == 0)
        rc = take_string(c, jr, "path", 1, "a path starting with / (no query)",
                         valid_route_path, &r->path);
    if (rc != 0)
        return rc;
    json_t *kind = json_object_get(jr, "kind");
    const char *k = json_string_value(kind);
    if (k != NULL && strcmp(k, "webhook") == 0) {
        r->kind = UST_ROUTE_WEBHOOK;
    } else if (k != NULL && strcmp(k, "api") == 0) {
        r->kind = UST_ROUTE_API;
    } else {
        push_key(c, "kind");
        return bad(c, "one of \"webhook\", \"api\"");
    }
    if ((rc = take_string(c, jr, "provider", 1, "a non-empty string", nonempty,
                          &r->provider)) != 0 ||
        (rc = parse_signature(c, jr, r)) != 0 || (rc = parse_fields(c, jr, r)) != 0 ||
        (rc = parse_status(c, jr, r)) != 0 || (rc = parse_idempotency(c, jr, r)) != 0 ||
        (rc = parse_sample(c, jr, r)) != 0)
        return rc;
    return 0;
}

static int parse_routes(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *routes = json_object_get(root, "routes");
    size_t mark = push_key(c, "routes");
    if (!json_is_array(routes) || json_array_size(routes) == 0)
        return bad(c, "a non-empty array of routes");
    pop(c, mark);
    cfg->routes = ust_calloc(json_array_size(routes), sizeof(*cfg->routes));
    if (cfg->routes == NULL)
        return nomem(c);
    for (size_t i = 0; i < json_array_size(routes); i++) {
        cfg->n_routes = i + 1; /* so a half-filled route is freed */
        mark = push_key(c, "routes");
        push_index(c, i);
        int rc = parse_route(c, json_array_get(routes, i), &cfg->routes[i]);
        if (rc != 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->routes[j].path, cfg->routes[i].path) == 0) {
                char what[PATH_CAP];
                (void)snprintf(what, sizeof(what),
                               "a path not used by another route "
                               "(routes[%zu] is also %s)",
                               j, cfg->routes[i].path);
                push_key(c, "path");
                return bad(c, what);
            }
        pop(c, mark);
    }
    return 0;
}

static int http_url(const char *s)
{
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

static int proxy_url(const char *s)
{
    return http_url(s) || strncmp(s, "socks5://", 9) == 0 ||
           strncmp(s, "socks5h://", 10) == 0;
}

/* The url kind's keys: the service, how many events at once, its reset
 * (its verdicts, which a recorded legacy has too, are read in
 * parse_plugin; their entries by the plugin module, answer.h). */
static int parse_service(vctx *c, json_t *obj, ust_plugin_config *p)
{
    static const char *const url_what = "an http:// or https:// URL";
    int rc = take_string(c, obj, "url", 0, url_what, http_url, &p->url);
    if (rc == 0)
        rc = take_posint(c, obj, "max_in_flight", 1, &p->max_in_flight);
    if (rc == 0 && p->max_in_flight > 64) {
        push_key(c, "max_in_flight");
        return bad(c, "at most 64");
    }
    json_t *reset = NULL;
    if (rc == 0)
        rc = take_object(c, obj, "reset", &reset);
    if (rc == 0 && reset != NULL) {
        static const char *const reset_keys[] = {"method", "url"};
        size_t mark = push_key(c, "reset");
        if ((rc = check_keys(c, reset, KEYS(reset_keys))) != 0 ||
            (rc = take_string(c, reset, "url", 1, url_what, http_url, &p->reset.url)) !=
                0 ||
            (rc = take_string(c, reset, "method", 0, "a non-empty string", nonempty,
                              &p->reset.method)) != 0)
            return rc;
        if (p->reset.method == NULL && (p->reset.method = ust_strdup("POST")) == NULL)
            return nomem(c);
        pop(c, mark);
    }
    if (rc == 0)
        rc = take_string(c, obj, "proxy", 0,
                         "a proxy URL (http://, https://, socks5:// or socks5h://)",
                         proxy_url, &p->proxy);
    if (rc == 0)
        rc = take_bool(c, obj, "resend_unknown", 0, &p->resend_unknown);
    if (rc == 0 && p->url == NULL &&
        (json_object_get(obj, "max_in_flight") != NULL || reset != NULL ||
         p->proxy != NULL || json_object_get(obj, "resend_unknown") != NULL))
        return bad(c, "\"url\" beside \"max_in_flight\", \"reset\", \"proxy\" or "
                      "\"resend_unknown\" (the keys of a service over HTTP)");
    return rc;
}

static int parse_plugin(vctx *c, json_t *plugins, const char *key, int isolate_default,
                        ust_plugin_config *p)
{
    p->isolate = isolate_default;
    p->timeout_ms = DEFAULT_PLUGIN_TIMEOUT_MS;
    p->max_rss_mb = DEFAULT_PLUGIN_MAX_RSS_MB;
    p->max_in_flight = 1;
    json_t *obj = NULL;
    int rc = plugins != NULL ? take_object(c, plugins, key, &obj) : 0;
    if (rc != 0)
        return rc;
    /* "config" is the plugin's own: passed on whole, its keys unchecked. */
    static const char *const plugin_keys[] = {
        "path",       "exec",  "config",        "isolate", "timeout_ms",
        "max_rss_mb", "url",   "max_in_flight", "reset",   "recorded",
        "verdicts",   "proxy", "resend_unknown"};
    json_t *conf = obj != NULL ? json_object_get(obj, "config") : NULL;
    size_t mark = push_key(c, key);
    if (obj != NULL && (rc = check_keys(c, obj, KEYS(plugin_keys))) != 0)
        return rc;
    if (conf != NULL && !json_is_object(conf)) {
        push_key(c, "config");
        return bad(c, "an object");
    }
    /* A copy, so the plugin host may keep or change it freely. */
    p->config = conf != NULL ? json_deep_copy(conf) : json_object();
    if (p->config == NULL)
        return nomem(c);
    if (obj == NULL) {
        pop(c, mark);
        return 0;
    }
    if ((rc = take_bool(c, obj, "recorded", 0, &p->recorded)) != 0)
        return rc;
    /* Only production's answers were recorded: a candidate decides itself. */
    if (p->recorded && strcmp(key, "candidate") == 0) {
        push_key(c, "recorded");
        return bad(c, "no \"recorded\" here: only the legacy can decide with the"
                      " recorded answers; give the candidate \"path\" or \"exec\"");
    }
    json_t *verdicts = json_object_get(obj, "verdicts");
    if (verdicts != NULL && !json_is_object(verdicts)) {
        push_key(c, "verdicts");
        return bad(c, "an object of HTTP status to verdict, such as"
                      " {\"404\": \"invalid\"}");
    }
    p->verdicts = json_incref(verdicts);
    int has_path = json_object_get(obj, "path") != NULL;
    int has_exec = json_object_get(obj, "exec") != NULL;
    int has_url = json_object_get(obj, "url") != NULL;
    if (has_path + has_exec + has_url + p->recorded != 1)
        return bad(c, "exactly one of \"path\" (a shared library), \"exec\" (argv),"
                      " \"url\" (an HTTP service) or \"recorded\": true (production's"
                      " recorded answers)");
    if ((rc = take_string(c, obj, "path", 0, "a non-empty string", nonempty,
                          &p->path)) != 0 ||
        (rc = take_string_array(c, obj, "exec", 1, "a non-empty array of strings",
                                "a non-empty string", nonempty, &p->exec, NULL)) != 0 ||
        (rc = take_bool(c, obj, "isolate", isolate_default, &p->isolate)) != 0 ||
        (rc = take_posint(c, obj, "timeout_ms", DEFAULT_PLUGIN_TIMEOUT_MS,
                          &p->timeout_ms)) != 0 ||
        (rc = take_posint(c, obj, "max_rss_mb", DEFAULT_PLUGIN_MAX_RSS_MB,
                          &p->max_rss_mb)) != 0 ||
        (rc = parse_service(c, obj, p)) != 0)
        return rc;
    pop(c, mark);
    return 0;
}

static int parse_limits(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *limits;
    int rc = take_object(c, root, "limits", &limits);
    if (rc != 0)
        return rc;
    int64_t body = DEFAULT_MAX_BODY_BYTES, headers = DEFAULT_MAX_HEADERS,
            timeout = DEFAULT_HEADER_TIMEOUT_MS, idle = DEFAULT_IDLE_TIMEOUT_MS,
            conns = DEFAULT_MAX_CONNECTIONS, owed = DEFAULT_MAX_OWED_BYTES,
            owed_total = DEFAULT_MAX_OWED_BYTES_TOTAL;
    if (limits != NULL) {
        static const char *const limit_keys[] = {
            "max_body_bytes",      "max_headers",     "header_timeout_ms",
            "idle_timeout_ms",     "max_connections", "max_owed_bytes",
            "max_owed_bytes_total"};
        size_t mark = push_key(c, "limits");
        if ((rc = check_keys(c, limits, KEYS(limit_keys))) != 0 ||
            (rc = take_posint(c, limits, "max_body_bytes", body, &body)) != 0 ||
            (rc = take_posint(c, limits, "max_headers", headers, &headers)) != 0 ||
            (rc = take_posint(c, limits, "header_timeout_ms", timeout, &timeout)) !=
                0 ||
            (rc = take_posint(c, limits, "idle_timeout_ms", idle, &idle)) != 0 ||
            (rc = take_posint(c, limits, "max_connections", conns, &conns)) != 0 ||
            (rc = take_posint(c, limits, "max_owed_bytes", owed, &owed)) != 0 ||
            (rc = take_posint(c, limits, "max_owed_bytes_total", owed_total,
                              &owed_total)) != 0)
            return rc;
        pop(c, mark);
    }
    cfg->limits.max_body_bytes = (size_t)body;
    cfg->limits.max_headers = (size_t)headers;
    cfg->limits.header_timeout_ms = timeout;
    cfg->limits.idle_timeout_ms = idle;
    cfg->limits.max_connections = (size_t)conns;
    cfg->limits.max_owed_bytes = (size_t)owed;
    cfg->limits.max_owed_bytes_total = (size_t)owed_total;
    return 0;
}

static int parse_compare(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *compare;
    static const char *const compare_keys[] = {"ignore", "headers"};
    size_t mark;
    int rc = open_block(c, root, "compare", KEYS(compare_keys), &compare, &mark);
    if (rc != 0 || compare == NULL)
        return rc;
    if ((rc = take_string_array(c, compare, "ignore", 0, "an array of JSON Pointers",
                                "a JSON Pointer (\"\" or starting with /)",
                                ust__pointer_valid, &cfg->compare_ignore,
                                &cfg->n_compare_ignore)) != 0 ||
        (rc = take_string_array(c, compare, "headers", 0, "an array of header names",
                                "a header name", valid_header_name,
                                &cfg->compare_headers, &cfg->n_compare_headers)) != 0)
        return rc;
    pop(c, mark);
    return 0;
}

static int take_duration(vctx *c, json_t *obj, const char *key, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return 0;
    size_t mark = push_key(c, key);
    if (!json_is_string(v) || ust_duration_parse(json_string_value(v), out) != 0)
        return bad(c, "a duration such as \"8d\", \"36h\", \"90m\", \"30s\" or"
                      " \"200ms\"");
    pop(c, mark);
    return 0;
}

/* After parse_limits: the default follows limits.max_body_bytes. */
static int parse_import(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *import;
    static const char *const import_keys[] = {"max_line_bytes"};
    size_t mark;
    int rc = open_block(c, root, "import", KEYS(import_keys), &import, &mark);
    int64_t line = (int64_t)UST_IMPORT_DEFAULT_MAX_LINE(cfg->limits.max_body_bytes);
    if (rc == 0 && import != NULL) {
        if ((rc = take_posint(c, import, "max_line_bytes", line, &line)) != 0)
            return rc;
        pop(c, mark);
    }
    cfg->import.max_line_bytes = (size_t)line;
    return rc;
}

static int parse_retention(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *retention;
    static const char *const retention_keys[] = {"keep", "every"};
    size_t mark;
    int rc = open_block(c, root, "retention", KEYS(retention_keys), &retention, &mark);
    if (retention != NULL)
        cfg->retention.every_us = DEFAULT_RETENTION_EVERY_US;
    if (rc != 0 || retention == NULL)
        return rc;
    /* No default for keep: how long evidence stays is the operator's call. */
    if (json_object_get(retention, "keep") == NULL) {
        size_t at = push_key(c, "keep");
        rc = bad(c, "how long to keep events, such as \"8d\"");
        pop(c, at);
        return rc;
    }
    if ((rc = take_duration(c, retention, "keep", &cfg->retention.keep_us)) != 0 ||
        (rc = take_duration(c, retention, "every", &cfg->retention.every_us)) != 0)
        return rc;
    pop(c, mark);
    return 0;
}

static int parse_health(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *health;
    static const char *const health_keys[] = {"max_lag_s"};
    size_t mark;
    int rc = open_block(c, root, "health", KEYS(health_keys), &health, &mark);
    cfg->health.max_lag_s = DEFAULT_HEALTH_MAX_LAG_S;
    if (rc != 0 || health == NULL)
        return rc;
    if ((rc = take_posint(c, health, "max_lag_s", DEFAULT_HEALTH_MAX_LAG_S,
                          &cfg->health.max_lag_s)) != 0)
        return rc;
    if (cfg->health.max_lag_s > MAX_HEALTH_MAX_LAG_S) { /* µs of it fit an int64 */
        size_t at = push_key(c, "max_lag_s");
        rc = bad(c, "at most 1000000000 seconds");
        pop(c, at);
        return rc;
    }
    pop(c, mark);
    return 0;
}

/* cache: the runner's two caches, each in MiB (docs/config.md). */
static int parse_cache(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *cache;
    static const char *const cache_keys[] = {"state_mb", "run_pages_mb"};
    size_t mark;
    int rc = open_block(c, root, "cache", KEYS(cache_keys), &cache, &mark);
    cfg->cache.state_mb = cfg->cache.run_pages_mb = DEFAULT_CACHE_MB;
    if (rc != 0 || cache == NULL)
        return rc;
    for (size_t i = 0; i < 2; i++) {
        int64_t *v = i == 0 ? &cfg->cache.state_mb : &cfg->cache.run_pages_mb;
        if ((rc = take_posint(c, cache, cache_keys[i], DEFAULT_CACHE_MB, v)) != 0)
            return rc;
        if (*v > MAX_CACHE_MB) {
            size_t at = push_key(c, cache_keys[i]);
            rc = bad(c, "at most 1048576 (MiB)");
            pop(c, at);
            return rc;
        }
    }
    pop(c, mark);
    return 0;
}

/* coverage: what the coverage counts take for a double click's window, an
 * operation's duration and a key's lifetime (docs/semantics.md). */
static int parse_coverage(vctx *c, json_t *root, ust_config *cfg)
{
    static const char *const coverage_keys[] = {"semantic_window_s", "op_latency_ms",
                                                "key_ttl_s"};
    const struct {
        const char *key;
        int64_t def, *out;
    } knobs[] = {
        {"semantic_window_s", UST_COVERAGE_DEFAULT_SEMANTIC_WINDOW_S,
         &cfg->coverage.semantic_window_s},
        {"op_latency_ms", UST_COVERAGE_DEFAULT_OP_LATENCY_MS,
         &cfg->coverage.op_latency_ms},
        {"key_ttl_s", UST_COVERAGE_DEFAULT_KEY_TTL_S, &cfg->coverage.key_ttl_s},
    };
    json_t *coverage;
    size_t mark;
    int rc = open_block(c, root, "coverage", KEYS(coverage_keys), &coverage, &mark);
    for (size_t i = 0; i < UST_ARRAY_SIZE(knobs); i++)
        *knobs[i].out = knobs[i].def;
    if (rc != 0 || coverage == NULL)
        return rc;
    for (size_t i = 0; i < UST_ARRAY_SIZE(knobs); i++) {
        if ((rc = take_posint(c, coverage, knobs[i].key, knobs[i].def, knobs[i].out)) !=
            0)
            return rc;
        if (*knobs[i].out > MAX_COVERAGE_VALUE) { /* µs of it fit an int64 */
            size_t at = push_key(c, knobs[i].key);
            rc = bad(c, "at most 1000000000");
            pop(c, at);
            return rc;
        }
    }
    pop(c, mark);
    return 0;
}

/* The header a route reads, by name, for its signature or any derived
 * field, or NULL: such a header cannot be masked, or the stored request
 * could not be verified or derived again from what the log holds. */
static const char *route_reads(const ust_route *r, const char *name)
{
    if (ust_sig_reads_header(r->scheme, r->sig_header, name))
        return "the signature header";
    const ust_route_fields *f = &r->fields;
    const char *sources[] = {UST_EVENT_FIELDS(SOURCE_OF) f->occurred_at,
                             r->status_from};
    for (size_t i = 0; i < UST_ARRAY_SIZE(sources); i++)
        if (sources[i] != NULL &&
            strncmp(sources[i], UST__HEADER_PREFIX, UST__HEADER_PREFIX_LEN) == 0 &&
            strcasecmp(sources[i] + UST__HEADER_PREFIX_LEN, name) == 0)
            return "a header a field is derived from";
    if ((r->idem_header != NULL && strcasecmp(r->idem_header, name) == 0) ||
        (r->tenant_header != NULL && strcasecmp(r->tenant_header, name) == 0))
        return "its idempotency or tenant header";
    return NULL;
}

static const char *const default_masked[] = {"Authorization", "Cookie",
                                             "Proxy-Authorization"};

static int parse_capture(vctx *c, json_t *root, ust_config *cfg)
{
    json_t *capture;
    size_t mark;
    int rc = take_block(c, root, "capture", &capture, &mark);
    if (rc != 0)
        return rc;
    static const char *const capture_keys[] = {"mask_headers", "mask_key_env"};
    if (capture != NULL &&
        ((rc = check_keys(c, capture, KEYS(capture_keys))) != 0 ||
         (rc = take_string_array(c, capture, "mask_headers", 0,
                                 "an array of header names", "a header name",
                                 valid_header_name, &cfg->capture.mask_headers,
                                 &cfg->capture.n_mask_headers)) != 0 ||
         (rc =
              take_string(c, capture, "mask_key_env", 0, "an environment variable name",
                          valid_env_name, &cfg->capture.mask_key_env)) != 0))
        return rc;
    if (cfg->capture.mask_headers == NULL) {
        size_t n = UST_ARRAY_SIZE(default_masked);
        cfg->capture.mask_headers = ust_calloc(n + 1, sizeof(char *));
        if (cfg->capture.mask_headers == NULL)
            return nomem(c);
        for (size_t i = 0; i < n; i++)
            if ((cfg->capture.mask_headers[i] = ust_strdup(default_masked[i])) == NULL)
                return nomem(c);
        cfg->capture.n_mask_headers = n;
    }
    for (size_t i = 0; i < cfg->capture.n_mask_headers; i++) {
        const char *name = cfg->capture.mask_headers[i];
        for (size_t j = 0; j < cfg->n_routes; j++) {
            const char *why = route_reads(&cfg->routes[j], name);
            if (why == NULL)
                continue;
            push_key(c, "mask_headers");
            push_index(c, i);
            char what[PATH_CAP];
            (void)snprintf(what, sizeof(what),
                           "a header no route verifies or derives from (\"%s\" is "
                           "%s of routes[%zu]; masked, the stored request could "
                           "not be verified or derived again)",
                           name, why, j);
            return bad(c, what);
        }
    }
    pop(c, mark);
    /* Without mask_key_env the key is drawn here and lives only in this
     * process: digests match within one run, and nothing that holds the log
     * can test guesses against them. */
    cfg->capture.mask_key = ust_malloc(UST_SHA256_LEN);
    if (cfg->capture.mask_key == NULL)
        return nomem(c);
    cfg->capture.mask_key_len = UST_SHA256_LEN;
    if (RAND_bytes(cfg->capture.mask_key, UST_SHA256_LEN) != 1)
        return ust_errf(c->err, UST_EIO, "%s: cannot draw a masking key", c->label);
    return 0;
}

static int valid_partition_field(const char *s)
{
    return ust_event_text_column(s) >= 0;
}

/* "partition_by": one text field of the event, or an ordered list of them
 * whose first present value is the key; absent, the intent (an order's
 * events meet in one partition), then the identity. */
static int parse_partition_by(vctx *c, json_t *root, ust_config *cfg)
{
    char what[PATH_CAP];
    (void)snprintf(what, sizeof(what), "a field of the event, one of %s",
                   ust_event_text_columns());
    json_t *v = json_object_get(root, "partition_by");
    if (v != NULL && !json_is_string(v))
        return take_string_array(
            c, root, "partition_by", 1, "a field name or a non-empty array of them",
            what, valid_partition_field, &cfg->partition_by, &cfg->n_partition_by);
    const char *one = v != NULL ? json_string_value(v) : NULL;
    if (one != NULL && !valid_partition_field(one)) {
        size_t mark = push_key(c, "partition_by");
        int rc = bad(c, what);
        pop(c, mark);
        return rc;
    }
    static const char *const default_key[] = {"intent", "identity"};
    size_t n = one != NULL ? 1 : UST_ARRAY_SIZE(default_key);
    if ((cfg->partition_by = ust_calloc(n + 1, sizeof(char *))) == NULL)
        return nomem(c);
    for (size_t i = 0; i < n; i++)
        if ((cfg->partition_by[i] = ust_strdup(one ? one : default_key[i])) == NULL)
            return nomem(c);
    cfg->n_partition_by = n;
    return 0;
}

static const char *const top_keys[] = {
    "listen",       "log",     "run",          "limits",    "routes",
    "plugins",      "compare", "redact",       "retention", "capture",
    "admin_listen", "health",  "partition_by", "coverage",  "import",
    "cache"};

static int parse_document(vctx *c, json_t *root, ust_config *cfg)
{
    if (!json_is_object(root))
        return bad(c, "an object");
    json_t *plugins;
    int rc;
    if ((rc = check_keys(c, root, KEYS(top_keys))) != 0 ||
        (rc = take_string(c, root, "listen", 0, "a string", NULL, &cfg->listen)) != 0 ||
        (rc = take_string(c, root, "admin_listen", 0, "a string", NULL,
                          &cfg->admin_listen)) != 0 ||
        (rc = parse_health(c, root, cfg)) != 0 ||
        (rc = parse_cache(c, root, cfg)) != 0 ||
        (rc = parse_coverage(c, root, cfg)) != 0 ||
        (rc = take_string(c, root, "log", 0, "a string", NULL, &cfg->log_path)) != 0 ||
        (rc = take_string(c, root, "run", 0, "a string", NULL, &cfg->run_path)) != 0 ||
        (rc = parse_limits(c, root, cfg)) != 0 ||
        (rc = parse_import(c, root, cfg)) != 0 ||
        (rc = parse_routes(c, root, cfg)) != 0 ||
        (rc = take_object(c, root, "plugins", &plugins)) != 0)
        return rc;
    static const char *const plugins_keys[] = {"legacy", "candidate"};
    size_t mark = plugins != NULL ? push_key(c, "plugins") : c->len;
    if ((plugins != NULL && (rc = check_keys(c, plugins, KEYS(plugins_keys))) != 0) ||
        (rc = parse_plugin(c, plugins, "legacy", 0, &cfg->legacy)) != 0 ||
        (rc = parse_plugin(c, plugins, "candidate", 1, &cfg->candidate)) != 0)
        return rc;
    pop(c, mark);
    if ((rc = parse_compare(c, root, cfg)) != 0 ||
        (rc = parse_retention(c, root, cfg)) != 0 ||
        (rc = parse_capture(c, root, cfg)) != 0 ||
        (rc = parse_partition_by(c, root, cfg)) != 0)
        return rc;
    return take_string_array(
        c, root, "redact", 0, "an array of field names or JSON Pointers",
        "a field name or a JSON Pointer", nonempty, &cfg->redact, &cfg->n_redact);
}

/* Every route's secret_env, for the plugins' child processes to go without
 * (one array, shared by both plugins; freed with the config). */
static int list_secret_envs(ust_config *cfg)
{
    char **names = ust_calloc(cfg->n_routes + 2, sizeof(char *));
    if (names == NULL)
        return UST_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_routes; i++)
        if (cfg->routes[i].secret_env != NULL)
            names[n++] = cfg->routes[i].secret_env;
    if (cfg->capture.mask_key_env != NULL)
        names[n] = cfg->capture.mask_key_env;
    cfg->legacy.scrub_env = cfg->candidate.scrub_env = names;
    return 0;
}

/* What the legacy's decisions depend on: the config without what only the
 * candidate (plugins.candidate), the comparison (compare) or the report
 * (redact, coverage: each run records its own in its meta) read, nor the
 * caches' sizes (cache: what is cached is read back the same), nor, with
 * places, the keys that only say where things are: where the run goes
 * (run), where the log is (log: replay --legacy-from checks the log itself
 * by its head) and where serve listens (listen, admin_listen). Every other
 * key stays in, as an unsure one must: a key left out lets replay
 * --legacy-from reuse decisions the legacy would now make otherwise. */
static int legacy_hash(const json_t *root, int places, char hex[UST_SHA256_HEX_LEN + 1])
{
    json_t *copy = json_deep_copy(root);
    if (copy == NULL)
        return UST_ENOMEM;
    static const char *const not_the_legacys[] = {"compare", "redact", "coverage",
                                                  "cache"};
    static const char *const where[] = {"run", "log", "listen", "admin_listen"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(not_the_legacys); i++)
        json_object_del(copy, not_the_legacys[i]);
    for (size_t i = 0; places && i < UST_ARRAY_SIZE(where); i++)
        json_object_del(copy, where[i]);
    json_object_del(json_object_get(copy, "plugins"), "candidate");
    int rc = ust__json_hash(copy, hex);
    json_decref(copy);
    return rc;
}

int ust_config_parse(const char *text, size_t len, const char *label, ust_config **out,
                     char **err)
{
    *out = NULL;
    if (label == NULL)
        label = "config";
    json_error_t e;
    json_t *root = ust_json_loadb(text != NULL ? text : "", text != NULL ? len : 0,
                                  JSON_REJECT_DUPLICATES, &e);
    if (root == NULL) {
        if (json_error_code(&e) == json_error_out_of_memory)
            return ust_errf(err, UST_ENOMEM, "%s: out of memory", label);
        return ust_errf(err, UST_ECONFIG, "%s:%d:%d: %s", label, e.line, e.column,
                        e.text);
    }
    ust_config *cfg = ust_calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        json_decref(root);
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", label);
    }
    cfg->root = root;
    vctx c;
    c.label = label;
    c.err = err;
    c.len = 0;
    c.path[0] = '\0';
    int rc = 0;
    cfg->file = ust_strdup(label);
    if (cfg->file == NULL)
        rc = nomem(&c);
    if (rc == 0)
        rc = parse_document(&c, root, cfg);
    if (rc == 0 && (ust__json_hash(root, cfg->hash) != 0 ||
                    legacy_hash(root, 1, cfg->legacy_hash) != 0 ||
                    legacy_hash(root, 0, cfg->legacy_hash_with_places) != 0))
        rc = nomem(&c);
    if (rc == 0 && list_secret_envs(cfg) != 0)
        rc = nomem(&c);
    if (rc != 0) {
        ust_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

/* *path, when relative, from dir, a real path (absolute, no symbolic link,
 * no "." or ".."): its leading "./" and "../" are taken off against dir,
 * which is exact there and keeps messages readable. */
static int resolve(const char *dir, char **path)
{
    /* A URL (the log in PostgreSQL: postgresql://...) is not a file. */
    if (*path == NULL || (*path)[0] == '/' || (*path)[0] == '\0' ||
        strstr(*path, "://") != NULL)
        return 0;
    const char *rel = *path;
    size_t len = strlen(dir);
    for (;;) {
        if (strncmp(rel, "./", 2) == 0) {
            rel += 2;
        } else if (strncmp(rel, "../", 3) == 0) {
            rel += 3;
            while (len > 1 && dir[len - 1] != '/')
                len--;
            if (len > 1)
                len--; /* the slash, unless it is the root */
        } else {
            break;
        }
        while (*rel == '/')
            rel++;
    }
    char *joined = ust_sprintf("%.*s/%s", len == 1 ? 0 : (int)len, dir, rel);
    if (joined == NULL)
        return UST_ENOMEM;
    ust_free(*path);
    *path = joined;
    return 0;
}

/* A config's paths are its folder's, so it works from any working
 * directory (a service's, a cron job's, the repository root): "log",
 * "run", a plugin's "path", and an exec program named with a '/'. A
 * program named without one is a PATH lookup and stays so; its arguments
 * are the program's own and stay as written, and it runs in the config's
 * folder, so a script named there is found from it too. Every path-valued
 * key is resolved here, once: a new one belongs in this list. */
static int resolve_paths(ust_config *cfg, const char *file, char **err)
{
    char real[PATH_MAX];
    if (realpath(file, real) == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot resolve its folder: %s", file,
                        strerror(errno));
    char *slash = strrchr(real, '/'); /* a real path is absolute */
    cfg->dir = ust_strndup(real, slash == real ? 1 : (size_t)(slash - real));
    if (cfg->dir == NULL)
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", file);
    ust_plugin_config *plugins[] = {&cfg->legacy, &cfg->candidate};
    int rc = 0;
    if ((rc = resolve(cfg->dir, &cfg->log_path)) != 0 ||
        (rc = resolve(cfg->dir, &cfg->run_path)) != 0)
        return ust_errf(err, rc, "%s: out of memory", file);
    for (size_t i = 0; i < UST_ARRAY_SIZE(plugins); i++) {
        ust_plugin_config *p = plugins[i];
        p->dir = cfg->dir;
        if ((rc = resolve(cfg->dir, &p->path)) != 0 ||
            (p->exec != NULL && strchr(p->exec[0], '/') != NULL &&
             (rc = resolve(cfg->dir, &p->exec[0])) != 0))
            return ust_errf(err, rc, "%s: out of memory", file);
    }
    return 0;
}

int ust_config_load(const char *file, ust_config **out, char **err)
{
    *out = NULL;
    FILE *f = fopen(file, "rb");
    if (f == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot open: %s", file, strerror(errno));
    size_t cap = 8192, len = 0;
    char *buf = ust_malloc(cap);
    int rc = buf == NULL ? UST_ENOMEM : 0;
    while (rc == 0) {
        if (len == cap) {
            char *grown = ust_realloc(buf, cap * 2);
            if (grown == NULL) {
                rc = UST_ENOMEM;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                rc = UST_EIO;
            break;
        }
    }
    int saved = errno;
    (void)fclose(f);
    if (rc == UST_EIO)
        ust_errf(err, rc, "%s: cannot read: %s", file, strerror(saved));
    else if (rc == UST_ENOMEM)
        ust_errf(err, rc, "%s: out of memory", file);
    else
        rc = ust_config_parse(buf, len, file, out, err);
    ust_free(buf);
    if (rc == 0 && (rc = resolve_paths(*out, file, err)) != 0) {
        ust_config_free(*out);
        *out = NULL;
    }
    return rc;
}

static void free_secret(ust_route *r)
{
    if (r->secret != NULL) {
        OPENSSL_cleanse(r->secret, strlen(r->secret));
        ust_free(r->secret);
        r->secret = NULL;
    }
}

static void free_strv(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++)
        ust_free(v[i]);
    ust_free(v);
}

static void free_plugin(ust_plugin_config *p)
{
    ust_free(p->path);
    ust_free(p->url);
    json_decref(p->verdicts);
    free_strv(p->exec);
    json_decref(p->config);
    ust_free(p->reset.method);
    ust_free(p->reset.url);
    ust_free(p->proxy);
}

void ust_config_free(ust_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        ust_route *r = &cfg->routes[i];
        ust_free(r->path);
        ust_free(r->provider);
        ust_free(r->secret_env);
        ust_free(r->sig_header);
        free_secret(r);
        UST_EVENT_FIELDS(SOURCE_FREE)
        ust_free(r->fields.occurred_at);
        ust_free(r->status_from);
        for (size_t j = 0; j < r->n_status_map; j++) {
            ust_free(r->status_map[j].from);
            ust_free(r->status_map[j].state);
        }
        ust_free(r->status_map);
        ust_free(r->idem_header);
        ust_free(r->tenant_header);
    }
    ust_free(cfg->routes);
    free_plugin(&cfg->legacy);
    free_plugin(&cfg->candidate);
    ust_free(cfg->candidate.scrub_env); /* the legacy's is the same array */
    free_strv(cfg->compare_ignore);
    free_strv(cfg->compare_headers);
    free_strv(cfg->redact);
    free_strv(cfg->partition_by);
    free_strv(cfg->capture.mask_headers);
    ust_free(cfg->capture.mask_key_env);
    if (cfg->capture.mask_key != NULL)
        OPENSSL_cleanse(cfg->capture.mask_key, cfg->capture.mask_key_len);
    ust_free(cfg->capture.mask_key);
    ust_free(cfg->listen);
    ust_free(cfg->admin_listen);
    ust_free(cfg->log_path);
    ust_free(cfg->run_path);
    ust_free(cfg->file);
    ust_free(cfg->dir);
    json_decref(cfg->root);
    ust_free(cfg);
}

/* A key shorter than this is refused: the digest is only as hard to
 * guess against as the key. */
#define MASK_KEY_MIN 16

int ust_config_load_mask_key(ust_config *cfg, char **err)
{
    const char *env = cfg->capture.mask_key_env;
    if (env == NULL)
        return 0;
    const char *v = getenv(env);
    if (v == NULL || strlen(v) < MASK_KEY_MIN)
        return ust_errf(
            err, UST_ECONFIG, "%s: capture.mask_key_env: environment variable %s is %s",
            cfg->file, env,
            v == NULL ? "not set" : "shorter than 16 bytes (use a long random key)");
    size_t len = strlen(v);
    unsigned char *key = ust_malloc(len);
    if (key == NULL)
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", cfg->file);
    memcpy(key, v, len);
    OPENSSL_cleanse(cfg->capture.mask_key, cfg->capture.mask_key_len);
    ust_free(cfg->capture.mask_key);
    cfg->capture.mask_key = key;
    cfg->capture.mask_key_len = len;
    return 0;
}

int ust_config_load_secrets(ust_config *cfg, char **err)
{
    for (size_t i = 0; i < cfg->n_routes; i++) {
        ust_route *r = &cfg->routes[i];
        if (r->scheme == UST_SCHEME_NONE)
            continue;
        const char *v = getenv(r->secret_env);
        if (v == NULL || *v == '\0')
            return ust_errf(err, UST_ECONFIG,
                            "%s: routes[%zu].signature.secret_env: environment "
                            "variable %s is %s",
                            cfg->file, i, r->secret_env,
                            v == NULL ? "not set" : "empty");
        /* A secret the scheme cannot key with would make every delivery on
         * the route "invalid": refuse it now, by name, never by value. */
        int rc = ust_sig_secret_check(r->scheme, v);
        if (rc == UST_ENOMEM)
            return ust_errf(err, rc, "%s: out of memory", cfg->file);
        if (rc != 0)
            return ust_errf(err, UST_ECONFIG,
                            "%s: routes[%zu].signature.secret_env: environment "
                            "variable %s is not %s",
                            cfg->file, i, r->secret_env,
                            ust_sig_scheme_info_of(r->scheme)->secret_what);
        char *copy = ust_strdup(v);
        if (copy == NULL)
            return ust_errf(err, UST_ENOMEM, "%s: out of memory", cfg->file);
        free_secret(r);
        r->secret = copy;
    }
    return 0;
}

const ust_route *ust_config_route(const ust_config *cfg, const char *target)
{
    if (cfg == NULL || target == NULL)
        return NULL;
    size_t len = strcspn(target, "?#");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const char *p = cfg->routes[i].path;
        if (strncmp(p, target, len) == 0 && p[len] == '\0')
            return &cfg->routes[i];
    }
    return NULL;
}

int ust_state_is_valid(const char *state)
{
    return state != NULL &&
           (strcmp(state, "pending") == 0 || strcmp(state, "paid") == 0 ||
            strcmp(state, "refunded") == 0 || strcmp(state, "cancelled") == 0);
}
