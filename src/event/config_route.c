/* A route of the config (routes[]) and its blocks, each a table of rows:
 * the path, kind and provider, the signature, where each field comes
 * from, the target state, the idempotency headers and the sample. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "event/config_internal.h"
#include "event/event_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DOC(t, d, text) .doc_type = (t), .doc_default = (d), .doc = (text)
#define ROUTE_AT(m) .off = offsetof(ust_route, m)

#define DEFAULT_IDEM_HEADER "Idempotency-Key"
#define WHAT_SCHEME "one of " UST_SIG_SCHEME_CHOICES
#define WHAT_STATE "one of pending, paid, refunded, cancelled"

static int valid_route_path(const char *s)
{
    return s[0] == '/' && strpbrk(s, "?# \t") == NULL;
}

static const ust__key signature_rows[] = {
    {.key = "scheme",
     .type = UST__KEY_PARSED,
     .required = 1,
     DOC("`\"stripe\"`, `\"standard-webhooks\"`, `\"hmac-sha256-hex\"` or `\"none\"`",
         "**required**", "The signature scheme (below).")},
    {.key = "secret_env",
     .type = UST__KEY_STRING,
     .required = 1,
     ROUTE_AT(secret_env),
     .check = ust__valid_env_name,
     .what = "an environment variable name",
     DOC("environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)",
         "**required** unless `none`",
         "The variable that holds the secret. The secret itself is never written in "
         "the file, the log, a report or a message.")},
    {.key = "tolerance_s",
     .type = UST__KEY_POSINT,
     .def = UST_SIG_DEFAULT_TOLERANCE_S,
     ROUTE_AT(tolerance_s),
     DOC("positive integer", "`300`",
         "How far (in seconds, either way) a signed timestamp may be from the "
         "request's arrival time (`received_at`, never the wall clock, so an old "
         "capture verifies as it did when it arrived). Not used by `hmac-sha256-hex`, "
         "which signs no timestamp.")},
    {.key = "header",
     .type = UST__KEY_STRING,
     ROUTE_AT(sig_header),
     .check = ust__valid_header_name,
     .what = "a header name",
     DOC("header name", "`\"X-Hub-Signature-256\"`",
         "`hmac-sha256-hex` only: the header that carries `sha256=<hex>`.")},
};
const ust__section ust__config_signature =
    UST__SECTION("routes[].signature", signature_rows);

/* A webhook route must have a signature block: leaving it out (or
 * misspelling it) must not turn verification off. An unsigned webhook
 * route says {"scheme": "none"}, and nothing else. */
static int parse_signature(ust__vctx *c, json_t *route, void *base)
{
    ust_route *r = base;
    json_t *sig;
    size_t mark = c->len;
    int rc =
        ust__open_block(c, route, "signature", &ust__config_signature, &sig, &mark);
    if (rc != 0)
        return rc;
    if (sig == NULL) {
        if (r->kind != UST_ROUTE_WEBHOOK)
            return 0;
        ust__push_key(c, "signature");
        return ust__bad(c, "a signature block (or {\"scheme\": \"none\"} for an "
                           "unsigned webhook route)");
    }
    json_t *scheme = json_object_get(sig, "scheme");
    if (!json_is_string(scheme) ||
        ust_sig_scheme_parse(json_string_value(scheme), &r->scheme) != 0) {
        r->scheme = UST_SCHEME_NONE;
        ust__push_key(c, "scheme");
        return ust__bad(c, WHAT_SCHEME);
    }
    if (r->scheme == UST_SCHEME_NONE) {
        /* Every key after the first ("scheme") belongs to a real scheme. */
        for (size_t i = 1; i < UST_ARRAY_SIZE(signature_rows); i++)
            if (json_object_get(sig, signature_rows[i].key) != NULL) {
                ust__push_key(c, signature_rows[i].key);
                return ust__bad(c,
                                "nothing but \"scheme\" when the scheme is \"none\"");
            }
        ust__pop(c, mark);
        return 0;
    }
    if (!ust_sig_scheme_info_of(r->scheme)->named_header &&
        json_object_get(sig, "header") != NULL) {
        ust__push_key(c, "header");
        return ust__bad(
            c, "no \"header\" here: it is for scheme \"hmac-sha256-hex\" only");
    }
    if ((rc = ust__take_rows(c, sig, &ust__config_signature, r)) != 0)
        return rc;
    ust__pop(c, mark);
    return 0;
}

/* The event's FIELDS-sourced fields by their column names, in table order,
 * each documented by its row's desc; occurred_at keeps its place after
 * event_type (where "known here" lists have always had it). */
#define SOURCE_RANK_FIELDS(m) RANK_##m,
#define SOURCE_RANK_DERIVED(m)
#define SOURCE_RANK(kind, m, column, wire, wire_at, export, source, since, desc)       \
    SOURCE_RANK_##source(m)
#define FIELD_ROW(name, m, desc)                                                       \
    {                                                                                  \
        .key = (name), .type = UST__KEY_STRING, ROUTE_AT(fields.m),                    \
        .check = ust__source_valid, .what = UST__WHAT_SOURCE,                          \
        DOC("source", "none: not derived", desc)                                       \
    }
#define SOURCE_ROW_FIELDS(m, column, desc)                                             \
    [RANK_##m + (RANK_##m > RANK_event_type)] = FIELD_ROW(#column, m, desc),
#define SOURCE_ROW_DERIVED(m, column, desc)
#define SOURCE_ROW(kind, m, column, wire, wire_at, export, source, since, desc)        \
    SOURCE_ROW_##source(m, column, desc)
enum { UST_EVENT_FIELDS(SOURCE_RANK) N_SOURCES };
static const ust__key field_rows[N_SOURCES + 1] = {
    /* clang-format off */
    UST_EVENT_FIELDS(SOURCE_ROW)
    [RANK_event_type + 1] = FIELD_ROW("occurred_at", occurred_at,
        "Accepted and checked as a source (the documented example has it), but no "
        "stage reads it yet: it has no effect today."),
    /* clang-format on */
};
const ust__section ust__config_fields = {"routes[].fields", field_rows,
                                         UST_ARRAY_SIZE(field_rows), "what it becomes"};

static int parse_fields(ust__vctx *c, json_t *route, void *base)
{
    return ust__take_given_section(c, route, "fields", &ust__config_fields, base);
}

static int parse_status_map(ust__vctx *c, json_t *status, void *base)
{
    ust_route *r = base;
    json_t *map;
    int rc = ust__take_object(c, status, "map", &map);
    if (rc != 0 || map == NULL || json_object_size(map) == 0)
        return rc;
    size_t mark = ust__push_key(c, "map");
    r->status_map = ust_calloc(json_object_size(map), sizeof(*r->status_map));
    if (r->status_map == NULL)
        return ust__nomem(c);
    for (void *it = json_object_iter(map); it != NULL;
         it = json_object_iter_next(map, it)) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        if (!json_is_string(v) || !ust_state_is_valid(json_string_value(v))) {
            ust__push_key(c, key);
            return ust__bad(c, WHAT_STATE);
        }
        ust_status_map_entry *e = &r->status_map[r->n_status_map];
        e->from = ust_strdup(key);
        e->state = ust_strdup(json_string_value(v));
        r->n_status_map++;
        if (e->from == NULL || e->state == NULL)
            return ust__nomem(c);
    }
    ust__pop(c, mark);
    return 0;
}

static const ust__key status_rows[] = {
    {.key = "from",
     .type = UST__KEY_STRING,
     .required = 1,
     ROUTE_AT(status_from),
     .check = ust__source_valid,
     .what = UST__WHAT_SOURCE,
     DOC("source (as in `fields`)", "**required** in a `status` block",
         "Where the value comes from (e.g. `/type`, `/data/status`).")},
    {.key = "map",
     .type = UST__KEY_PARSED,
     .parse = parse_status_map,
     DOC("object: provider value → state", "none",
         "Maps the provider's values to the canonical states `pending`, `paid`, "
         "`refunded`, `cancelled` (each value must be one of them). A value not in the "
         "map gives no target state. Without `map` (or with an empty one), the value "
         "itself must be one of the four states, or there is no target state.")},
};
const ust__section ust__config_status = UST__SECTION("routes[].status", status_rows);

static int parse_status(ust__vctx *c, json_t *route, void *base)
{
    return ust__take_given_section(c, route, "status", &ust__config_status, base);
}

static const ust__key idempotency_rows[] = {
    {.key = "header",
     .type = UST__KEY_STRING,
     ROUTE_AT(idem_header),
     .check = ust__valid_header_name,
     .what = "a header name",
     DOC("header name", "`\"Idempotency-Key\"`",
         "The header holding the key: an RFC 8941 string (`\"...\"`) or Stripe's "
         "unquoted token, printable ASCII; both forms are the same key, and a "
         "malformed key counts as none.")},
    {.key = "tenant_header",
     .type = UST__KEY_STRING,
     ROUTE_AT(tenant_header),
     .check = ust__valid_header_name,
     .what = "a header name",
     DOC("header name", "none",
         "A header holding the tenant, so the same key from two tenants is two "
         "identities.")},
};
const ust__section ust__config_idempotency =
    UST__SECTION("routes[].idempotency", idempotency_rows);

static int parse_idempotency(ust__vctx *c, json_t *route, void *base)
{
    ust_route *r = base;
    json_t *idem;
    int rc = ust__take_object(c, route, "idempotency", &idem);
    if (rc == 0 && idem != NULL)
        rc = ust__take_section(c, route, "idempotency", &ust__config_idempotency, r);
    if (rc != 0)
        return rc;
    if (r->idem_header == NULL && (idem != NULL || r->kind == UST_ROUTE_API)) {
        r->idem_header = ust_strdup(DEFAULT_IDEM_HEADER);
        if (r->idem_header == NULL)
            return ust__nomem(c);
    }
    return 0;
}

/* sample.percent, kept in hundredths (1..10000): the hash of an identity is
 * taken mod 10000, so 0.01 is the finest step. */
static int parse_percent(ust__vctx *c, json_t *sample, void *base)
{
    ust_route *r = base;
    json_t *v = json_object_get(sample, "percent");
    size_t mark = ust__push_key(c, "percent");
    double p = json_is_number(v) ? json_number_value(v) : -1;
    if (!(p > 0 && p <= 100) || (int)(p * 100 + 0.5) < 1)
        return ust__bad(c, "a number of percent, more than 0 (at least 0.01) and at "
                           "most 100");
    r->sample_bp = (int)(p * 100 + 0.5);
    ust__pop(c, mark);
    return 0;
}

static const ust__key sample_rows[] = {
    {.key = "percent",
     .type = UST__KEY_PARSED,
     .required = 1,
     .parse = parse_percent,
     DOC("number, more than 0 and at most 100, in steps of 0.01",
         "**required** in a `sample` block",
         "The share of the route's entities recorded, every event of each: an entity "
         "is in when the first 8 bytes of SHA-256 of its identity, big-endian, mod "
         "10000 are below `percent × 100`, in every process on every machine. A "
         "sampled-out event is answered 202 "
         "`{\"recorded\":false,\"sampled_out\":true}`, "
         "not written, and counted (`understudy_events_sampled_out_total`). An event "
         "whose signature is invalid, missing or expired, and one without an identity, "
         "is always recorded. `serve --respond legacy` refuses a sample. See "
         "[capture.md](capture.md).")},
};
const ust__section ust__config_sample = UST__SECTION("routes[].sample", sample_rows);

static int parse_sample(ust__vctx *c, json_t *route, void *base)
{
    ust_route *r = base;
    r->sample_bp = 10000;
    return ust__take_given_section(c, route, "sample", &ust__config_sample, r);
}

static int parse_kind(ust__vctx *c, json_t *route, void *base)
{
    ust_route *r = base;
    const char *k = json_string_value(json_object_get(route, "kind"));
    if (k != NULL && strcmp(k, "webhook") == 0) {
        r->kind = UST_ROUTE_WEBHOOK;
    } else if (k != NULL && strcmp(k, "api") == 0) {
        r->kind = UST_ROUTE_API;
    } else {
        ust__push_key(c, "kind");
        return ust__bad(c, "one of \"webhook\", \"api\"");
    }
    return 0;
}

static const ust__key route_rows[] = {
    {.key = "path",
     .type = UST__KEY_STRING,
     .required = 1,
     ROUTE_AT(path),
     .check = valid_route_path,
     .what = "a path starting with / (no query)",
     DOC("string", "**required**",
         "The request path, starting with `/`, without `?`, `#`, space or tab. A "
         "request matches when its path (the target up to `?` or `#`) is exactly this: "
         "no prefix match, a trailing `/` is another path. Two routes may not have the "
         "same path.")},
    {.key = "kind",
     .type = UST__KEY_PARSED,
     .required = 1,
     .parse = parse_kind,
     DOC("`\"webhook\"` or `\"api\"`", "**required**",
         "A `webhook` route receives a provider's signed callbacks; an `api` route "
         "receives your own clients' requests that carry an `Idempotency-Key` (the two "
         "kinds of traffic in [semantics.md](semantics.md)). The kind is passed to "
         "plugins as `route_kind` and decides an event's identity (below).")},
    {.key = "provider",
     .type = UST__KEY_STRING,
     .required = 1,
     ROUTE_AT(provider),
     .check = ust__nonempty,
     .what = "a non-empty string",
     DOC("non-empty string", "**required**",
         "The provider's name (`\"stripe\"`, `\"acme\"`, `\"api\"`), recorded with "
         "each "
         "event and used in its identity.")},
    {.key = "signature",
     .type = UST__KEY_PARSED,
     .parse = parse_signature,
     DOC("object", "**required for `webhook`**, none for `api`",
         "How a request's signature is verified.")},
    {.key = "fields",
     .type = UST__KEY_PARSED,
     .parse = parse_fields,
     DOC("object", "none", "Where the canonical event's fields come from.")},
    {.key = "status",
     .type = UST__KEY_PARSED,
     .parse = parse_status,
     DOC("object", "none", "Where the target state comes from.")},
    {.key = "idempotency",
     .type = UST__KEY_PARSED,
     .parse = parse_idempotency,
     DOC("object", "`api`: `{\"header\": \"Idempotency-Key\"}`; `webhook`: none",
         "Which headers carry the idempotency key and the tenant.")},
    {.key = "sample",
     .type = UST__KEY_PARSED,
     .parse = parse_sample,
     DOC("object `{\"percent\": P}`", "every event",
         "Record only the entities whose identity hashes below P % (below).")},
};
const ust__section ust__config_route = UST__SECTION("routes[]", route_rows);

int ust__parse_routes(ust__vctx *c, json_t *root, void *base)
{
    ust_config *cfg = base;
    json_t *routes = json_object_get(root, "routes");
    size_t mark = ust__push_key(c, "routes");
    if (!json_is_array(routes) || json_array_size(routes) == 0)
        return ust__bad(c, "a non-empty array of routes");
    ust__pop(c, mark);
    cfg->routes = ust_calloc(json_array_size(routes), sizeof(*cfg->routes));
    if (cfg->routes == NULL)
        return ust__nomem(c);
    for (size_t i = 0; i < json_array_size(routes); i++) {
        cfg->n_routes = i + 1; /* so a half-filled route is freed */
        mark = ust__push_key(c, "routes");
        ust__push_index(c, i);
        json_t *jr = json_array_get(routes, i);
        ust_route *r = &cfg->routes[i];
        int rc = json_is_object(jr) ? 0 : ust__bad(c, "an object");
        if (rc == 0)
            rc = ust__check_keys(c, jr, &ust__config_route);
        if (rc == 0)
            rc = ust__take_rows(c, jr, &ust__config_route, r);
        if (rc != 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->routes[j].path, r->path) == 0) {
                char what[UST__PATH_CAP];
                (void)snprintf(what, sizeof(what),
                               "a path not used by another route "
                               "(routes[%zu] is also %s)",
                               j, r->path);
                ust__push_key(c, "path");
                return ust__bad(c, what);
            }
        ust__pop(c, mark);
    }
    return 0;
}

#define SOURCE_OF_FIELDS(m) f->m,
#define SOURCE_OF_DERIVED(m)
#define SOURCE_OF(kind, m, column, wire, wire_at, export, source, since, desc)         \
    SOURCE_OF_##source(m)

const char *ust__route_reads(const ust_route *r, const char *name)
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

void ust__free_route(ust_route *r)
{
    ust_free(r->path);
    ust_free(r->provider);
    ust_free(r->secret_env);
    ust_free(r->sig_header);
    for (size_t i = 0; i < UST_ARRAY_SIZE(field_rows); i++)
        ust_free(*(char **)(void *)((char *)r + field_rows[i].off));
    ust_free(r->status_from);
    for (size_t j = 0; j < r->n_status_map; j++) {
        ust_free(r->status_map[j].from);
        ust_free(r->status_map[j].state);
    }
    ust_free(r->status_map);
    ust_free(r->idem_header);
    ust_free(r->tenant_header);
}
