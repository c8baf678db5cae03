/* Comparing the legacy's and the candidate's decisions on one event. */
#ifndef UNDERSTUDY_COMPARE_H
#define UNDERSTUDY_COMPARE_H

#include <jansson.h>

#include <understudy/config.h>
#include <understudy/host.h>

/* What differs, one entry per differing field in a fixed order: a new JSON
 * array (empty when the decisions agree) of {"field": NAME, "legacy": V,
 * "candidate": V}, keys in that order, or NULL on allocation failure.
 * NAME and V:
 *   "verdict"        the verdict's name
 *   "status"         the HTTP status, an integer
 *   "header:<name>"  each header the config's compare.headers names (name
 *                    lower-case), its value as the decision carries it
 *   "body<pointer>"  each differing leaf of the bodies parsed as JSON, the
 *                    config's compare.ignore removed first; objects are
 *                    walked key by key (sorted), anything else is a leaf;
 *                    V the value at the pointer ("body" alone: the whole
 *                    body); no body entry is added once the diff holds
 *                    16 entries
 *   "body"           a body that is not JSON: each side's text, a string
 *   "state"          the state after, a string, or null when none
 *   "flags"          the array of flag strings
 * A side with no value at all for the field (the pointer names nothing in
 * its body, the header is absent, there is no body) has no key: absent is
 * not JSON null. The values are the diff's own (copies, not the
 * decisions'). */
json_t *ust_compare_diff(const ust_config *cfg, const ust_decision *legacy,
                         const ust_decision *candidate);

/* A diff's field names, in its order: a new array of strings, or NULL on
 * allocation failure. */
json_t *ust_compare_diff_fields(const json_t *diff);

/* The field names of ust_compare_diff, which is what it is made from. */
json_t *ust_compare_decisions(const ust_config *cfg, const ust_decision *legacy,
                              const ust_decision *candidate);

/* "<event type or route>: <legacy verdict> → <candidate verdict>"; ust_free. */
char *ust_divergence_class(const char *event_type_or_route, const ust_decision *legacy,
                           const ust_decision *candidate);

#endif
