/* Comparing the legacy's and the candidate's decisions on one event. */
#ifndef UNDERSTUDY_COMPARE_H
#define UNDERSTUDY_COMPARE_H

#include <jansson.h>

#include <understudy/config.h>
#include <understudy/host.h>

/* The names of the fields that differ, in a fixed order: "verdict", "status",
 * "header:<name>" for each header the config names, "body" or
 * "body<pointer>" for each differing leaf (ignore rules applied), "state",
 * "flags". Returns a new JSON array (empty when the decisions agree), or NULL
 * on allocation failure. */
json_t *ust_compare_decisions(const ust_config *cfg, const ust_decision *legacy,
                              const ust_decision *candidate);

/* "<event type or route>: <legacy verdict> → <candidate verdict>"; ust_free. */
char *ust_divergence_class(const char *event_type_or_route, const ust_decision *legacy,
                           const ust_decision *candidate);

#endif
