/* Coverage: what the traffic of an event log exercised, counted from the
 * canonical events alone (never from a plugin's verdict), so a week that
 * never held, say, a concurrent repeat of one Idempotency-Key says so
 * instead of passing in silence. docs/semantics.md defines every kind. */
#ifndef UNDERSTUDY_COVERAGE_H
#define UNDERSTUDY_COVERAGE_H

#include <stdint.h>

#include <understudy/config.h>
#include <understudy/log.h>

/* X(kind, scenario): every kind once, in the order reports list them, with
 * the scenario file (under scenarios/) that exercises it. */
#define UST_COVERAGE_KINDS(X)                                                          \
    X(identical_redelivery, "01-identical-retry.json")                                 \
    X(redelivery_new_id, "05-paid-after-refund-new-id.json")                           \
    X(out_of_order, "07-refund-before-paid.json")                                      \
    X(semantic_pair, "09-double-click.json")                                           \
    X(api_completed_repeat, "13-completed-retry.json")                                 \
    X(api_concurrent_repeat, "12-parallel-same-key.json")                              \
    X(api_payload_mismatch, "14-same-key-other-amount.json")                           \
    X(api_after_ttl, "15-retry-after-ttl.json")                                        \
    X(api_key_across_tenants, "16-same-key-two-tenants.json")                          \
    X(api_missing_key, "18-api-without-key.json")                                      \
    X(signature_invalid, "19-bad-input.json")                                          \
    X(signature_missing, "19-bad-input.json")                                          \
    X(signature_expired, "04-replay-after-tolerance.json")

#define UST__COVERAGE_ENUM(kind, scenario) UST_COVERAGE_##kind,
typedef enum ust_coverage_kind {
    UST_COVERAGE_KINDS(UST__COVERAGE_ENUM) UST_COVERAGE_N
} ust_coverage_kind;
#undef UST__COVERAGE_ENUM

/* "identical_redelivery", ...; NULL out of range. */
const char *ust_coverage_kind_name(ust_coverage_kind k);
/* "scenarios/01-identical-retry.json", ... (from the source tree's root). */
const char *ust_coverage_kind_scenario(ust_coverage_kind k);
/* 0 and *out, or UST_EINVAL for a name that is no kind. */
int ust_coverage_kind_parse(const char *name, ust_coverage_kind *out);
/* "identical_redelivery, redelivery_new_id, ...": for messages. */
const char *ust_coverage_kind_list(void);

/* What the counts depend on: the config's coverage object, and which routes
 * take API requests. */
typedef struct ust_coverage_params {
    int64_t semantic_window_s; /* default 600 */
    int64_t op_latency_ms;     /* default 500 */
    int64_t key_ttl_s;         /* default 86400 */
    /* The API routes' paths as a JSON array, or NULL when unknown (a run
     * recorded before coverage): then a row of a route with neither an
     * event id nor a transaction id is taken for an API request. */
    char *api_routes;
} ust_coverage_params;

/* The params of cfg; *out is cleared with ust_coverage_params_clear. */
int ust_coverage_params_from_config(const ust_config *cfg, ust_coverage_params *out);
/* The run metadata "coverage" holds them as JSON (format), so a report,
 * which has no config, counts as the run was configured. parse of NULL
 * (an older run without the key) gives the defaults and no API routes;
 * of malformed JSON, UST_EPARSE with *err. */
char *ust_coverage_params_format(const ust_coverage_params *p);
int ust_coverage_params_parse(const char *json, ust_coverage_params *out, char **err);
void ust_coverage_params_clear(ust_coverage_params *p);

typedef struct ust_coverage {
    int64_t counts[UST_COVERAGE_N]; /* events of each kind */
} ust_coverage;

/* Counts every kind over the events with seq <= through_seq. Memory: the
 * state of one group of events (an event id, a transaction, a key) and one
 * bit per event between the first and through_seq. */
int ust_coverage_count(ust_log *log, const ust_coverage_params *p, int64_t through_seq,
                       ust_coverage *out, char **err);

#endif
