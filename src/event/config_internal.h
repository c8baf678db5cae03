/* The config's levels, each a table of rows (schema.h), shared by the
 * files that read them (config.c, config_route.c, config_plugin.c) and
 * the ones that write them out (config_doc.c, with fields_doc.c's tables
 * of the event's fields). */
#ifndef UST_EVENT_CONFIG_INTERNAL_H
#define UST_EVENT_CONFIG_INTERNAL_H

#include <understudy/config.h>

#include "event/schema.h"

#define UST__WHAT_SOURCE "a JSON Pointer (\"\" or starting with /) or \"header:NAME\""

/* Top level and the server's blocks (config.c). */
extern const ust__section ust__config_top, ust__config_limits, ust__config_import,
    ust__config_health, ust__config_cache, ust__config_coverage, ust__config_compare,
    ust__config_retention, ust__config_capture;
/* A route and its blocks (config_route.c). */
extern const ust__section ust__config_route, ust__config_signature, ust__config_fields,
    ust__config_status, ust__config_idempotency, ust__config_sample;
/* plugins.legacy and plugins.candidate (config_plugin.c). */
extern const ust__section ust__config_plugins, ust__config_plugin, ust__config_reset;

/* A docs table that is not a level's: its marker's name, and what
 * appends it to *buf (0 or UST_ENOMEM). The event's fields
 * (fields_doc.c). */
typedef struct ust__doc_table {
    const char *name;
    int (*write)(char **buf);
} ust__doc_table;
extern const ust__doc_table ust__fields_doc[];
extern const size_t ust__n_fields_doc;

/* "routes" into the ust_config at cfg. */
int ust__parse_routes(ust__vctx *c, json_t *root, void *cfg);
/* "plugins" into the ust_config at cfg. */
int ust__parse_plugins(ust__vctx *c, json_t *root, void *cfg);
void ust__free_route(ust_route *r);
/* Cleanses and frees a route's secret (config_secrets.c). */
void ust__free_secret(ust_route *r);
/* A NULL-terminated array of strings, and the array. */
void ust__free_strv(char **v);
void ust__free_plugin(ust_plugin_config *p);
/* The header a route reads, by name, for its signature or any derived
 * field, or NULL (what it is used for otherwise). */
const char *ust__route_reads(const ust_route *r, const char *name);

#endif
