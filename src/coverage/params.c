/* The coverage params: from the config, and as the run's metadata carries
 * them to the report. */
#include <understudy/alloc.h>
#include <understudy/coverage.h>
#include <understudy/error.h>

#include <jansson.h>
#include <string.h>

/* What a run without the "coverage" key (made before it existed) is
 * counted with: the config defaults. */
static void defaults(ust_coverage_params *p)
{
    memset(p, 0, sizeof(*p));
    p->semantic_window_s = UST_COVERAGE_DEFAULT_SEMANTIC_WINDOW_S;
    p->op_latency_ms = UST_COVERAGE_DEFAULT_OP_LATENCY_MS;
    p->key_ttl_s = UST_COVERAGE_DEFAULT_KEY_TTL_S;
}

int ust_coverage_params_from_config(const ust_config *cfg, ust_coverage_params *out)
{
    defaults(out);
    out->semantic_window_s = cfg->coverage.semantic_window_s;
    out->op_latency_ms = cfg->coverage.op_latency_ms;
    out->key_ttl_s = cfg->coverage.key_ttl_s;
    json_t *routes = json_array();
    for (size_t i = 0; routes != NULL && i < cfg->n_routes; i++)
        if (cfg->routes[i].kind == UST_ROUTE_API &&
            json_array_append_new(routes, json_string(cfg->routes[i].path)) != 0) {
            json_decref(routes);
            routes = NULL;
        }
    out->api_routes = routes ? json_dumps(routes, JSON_COMPACT) : NULL;
    json_decref(routes);
    return out->api_routes ? 0 : UST_ENOMEM;
}

char *ust_coverage_params_format(const ust_coverage_params *p)
{
    json_error_t jerr;
    json_t *routes = p->api_routes ? ust_json_loads(p->api_routes, 0, &jerr) : NULL;
    json_t *o = json_pack(
        "{sIsIsIso}", "semantic_window_s", (json_int_t)p->semantic_window_s,
        "op_latency_ms", (json_int_t)p->op_latency_ms, "key_ttl_s",
        (json_int_t)p->key_ttl_s, "api_routes", routes ? routes : json_null());
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

static int take(json_t *o, const char *key, int64_t *out, char **err)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        return 0; /* a key added later: its default */
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return ust_errf(err, UST_EPARSE, "run metadata coverage: %s is not a count",
                        key);
    *out = json_integer_value(v);
    return 0;
}

int ust_coverage_params_parse(const char *json, ust_coverage_params *out, char **err)
{
    defaults(out);
    if (json == NULL)
        return 0;
    json_error_t jerr;
    json_t *o = ust_json_loads(json, 0, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return ust_errf(err, UST_EPARSE, "run metadata coverage: not a JSON object");
    }
    int rc = take(o, "semantic_window_s", &out->semantic_window_s, err);
    if (rc == 0)
        rc = take(o, "op_latency_ms", &out->op_latency_ms, err);
    if (rc == 0)
        rc = take(o, "key_ttl_s", &out->key_ttl_s, err);
    json_t *routes = json_object_get(o, "api_routes");
    size_t i;
    json_t *r;
    json_array_foreach(routes, i, r)
    {
        if (rc == 0 && !json_is_string(r))
            rc = ust_errf(err, UST_EPARSE,
                          "run metadata coverage: api_routes holds a non-string");
    }
    if (rc == 0 && json_is_array(routes) &&
        (out->api_routes = json_dumps(routes, JSON_COMPACT)) == NULL)
        rc = UST_ENOMEM;
    else if (rc == 0 && routes != NULL && !json_is_array(routes) &&
             !json_is_null(routes))
        rc = ust_errf(err, UST_EPARSE,
                      "run metadata coverage: api_routes is not an "
                      "array");
    json_decref(o);
    if (rc != 0)
        ust_coverage_params_clear(out);
    return rc;
}

void ust_coverage_params_clear(ust_coverage_params *p)
{
    ust_free(p->api_routes);
    memset(p, 0, sizeof(*p));
}
