/* The config written out from its rows: docs/config.md's key tables
 * (understudy config doc) and a loaded config's effective values with
 * every default filled in (understudy config show). A secret appears only
 * as the name of its variable: the rows hold no secret, and the values
 * read from the environment (ust_route.secret, capture.mask_key) have no
 * row. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "event/config_internal.h"

#include <string.h>

/* The tables docs/config.md shows, in its order; then the event's fields
 * (fields_doc.c), which docs/interchange.md and protocol.md show. */
static const ust__section *const documented[] = {
    &ust__config_top,     &ust__config_limits,      &ust__config_import,
    &ust__config_health,  &ust__config_cache,       &ust__config_coverage,
    &ust__config_route,   &ust__config_signature,   &ust__config_fields,
    &ust__config_status,  &ust__config_idempotency, &ust__config_sample,
    &ust__config_plugin,  &ust__config_compare,     &ust__config_retention,
    &ust__config_capture,
};

/* The table between its markers: a level's (s) or else write's. */
static int marked(char **buf, const char *name, const ust__section *s,
                  int (*write)(char **buf))
{
    char *begin = ust_sprintf("<!-- config doc: %s -->\n", name);
    char *end = ust_sprintf("<!-- end config doc: %s -->\n", name);
    int rc = begin == NULL || end == NULL ? UST_ENOMEM : 0;
    if (rc == 0)
        rc = ust__append(buf, begin);
    if (rc == 0)
        rc = s != NULL ? ust__section_doc(s, buf) : write(buf);
    if (rc == 0)
        rc = ust__append(buf, end);
    ust_free(begin);
    ust_free(end);
    return rc;
}

int ust_config_doc(char **out)
{
    char *buf = ust_strdup("");
    int rc = buf != NULL ? 0 : UST_ENOMEM;
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(documented); i++)
        rc = marked(&buf, documented[i]->name, documented[i], NULL);
    for (size_t i = 0; rc == 0 && i < ust__n_fields_doc; i++)
        rc = marked(&buf, ust__fields_doc[i].name, NULL, ust__fields_doc[i].write);
    if (rc != 0) {
        ust_free(buf);
        buf = NULL;
    }
    *out = buf;
    return rc;
}

/* Sets obj.key to v (stolen); an error when either is missing. */
static int put(json_t *obj, const char *key, json_t *v)
{
    return obj == NULL || v == NULL || json_object_set_new(obj, key, v) != 0
               ? UST_ENOMEM
               : 0;
}

static json_t *route_json(const ust_route *r)
{
    json_t *o = ust__section_show(&ust__config_route, r);
    json_t *sig = ust__section_show(&ust__config_signature, r);
    json_t *status = ust__section_show(&ust__config_status, r);
    json_t *map = json_object();
    for (size_t i = 0; map != NULL && i < r->n_status_map; i++)
        if (json_object_set_new(map, r->status_map[i].from,
                                json_string(r->status_map[i].state)) != 0)
            break;
    int rc = put(sig, "scheme", json_string(ust_sig_scheme_name(r->scheme)));
    if (rc == 0)
        rc = put(status, "map", map);
    else
        json_decref(map);
    if (rc == 0)
        rc = put(o, "kind", json_string(r->kind == UST_ROUTE_API ? "api" : "webhook"));
    if (rc == 0)
        rc = put(o, "signature", sig);
    else
        json_decref(sig);
    if (rc == 0)
        rc = put(o, "fields", ust__section_show(&ust__config_fields, r));
    if (rc == 0)
        rc = put(o, "status", status);
    else
        json_decref(status);
    if (rc == 0)
        rc = put(o, "idempotency", ust__section_show(&ust__config_idempotency, r));
    if (rc == 0)
        rc = put(o, "sample", json_pack("{s:f}", "percent", r->sample_bp / 100.0));
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *plugin_json(const ust_plugin_config *p)
{
    json_t *o = ust__section_show(&ust__config_plugin, p);
    int rc =
        put(o, "config", json_deep_copy(p->config != NULL ? p->config : json_object()));
    if (rc == 0)
        rc = put(o, "verdicts",
                 p->verdicts != NULL ? json_deep_copy(p->verdicts) : json_object());
    if (rc == 0)
        rc = put(o, "reset",
                 p->reset.url != NULL ? ust__section_show(&ust__config_reset, p)
                                      : json_null());
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *config_json(const ust_config *cfg)
{
    json_t *o = ust__section_show(&ust__config_top, cfg);
    json_t *routes = json_array();
    for (size_t i = 0; routes != NULL && i < cfg->n_routes; i++)
        if (json_array_append_new(routes, route_json(&cfg->routes[i])) != 0) {
            json_decref(routes);
            routes = NULL;
        }
    json_t *partition = json_array();
    for (size_t i = 0; partition != NULL && i < cfg->n_partition_by; i++)
        if (json_array_append_new(partition, json_string(cfg->partition_by[i])) != 0) {
            json_decref(partition);
            partition = NULL;
        }
    const struct {
        const char *key;
        json_t *v;
    } parts[] = {
        {"limits", ust__section_show(&ust__config_limits, cfg)},
        {"import", ust__section_show(&ust__config_import, cfg)},
        {"health", ust__section_show(&ust__config_health, cfg)},
        {"cache", ust__section_show(&ust__config_cache, cfg)},
        {"coverage", ust__section_show(&ust__config_coverage, cfg)},
        {"compare", ust__section_show(&ust__config_compare, cfg)},
        {"retention", cfg->retention.keep_us > 0
                          ? ust__section_show(&ust__config_retention, cfg)
                          : json_null()},
        {"capture", ust__section_show(&ust__config_capture, cfg)},
        {"partition_by", partition},
        {"routes", routes},
        {"plugins", json_pack("{s:o*,s:o*}", "legacy", plugin_json(&cfg->legacy),
                              "candidate", plugin_json(&cfg->candidate))},
    };
    int rc = o != NULL ? 0 : UST_ENOMEM;
    for (size_t i = 0; i < UST_ARRAY_SIZE(parts); i++) {
        if (rc == 0)
            rc = put(o, parts[i].key, parts[i].v);
        else
            json_decref(parts[i].v);
    }
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int ust_config_show(const ust_config *cfg, char **out)
{
    json_t *o = config_json(cfg);
    *out = o != NULL ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return *out != NULL ? 0 : UST_ENOMEM;
}
