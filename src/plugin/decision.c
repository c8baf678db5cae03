/* Decisions as the host keeps them, and their JSON form. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include "plugin/decision_json.h"
#include "plugin/wire.h"

#include <string.h>

static const char *const verdict_names[] = {
    [UST_VERDICT_APPLIED] = "applied",
    [UST_VERDICT_DUPLICATE] = "duplicate",
    [UST_VERDICT_REJECTED] = "rejected",
    [UST_VERDICT_CONFLICT] = "conflict",
    [UST_VERDICT_IN_PROGRESS] = "in_progress",
    [UST_VERDICT_INVALID] = "invalid",
    [UST_VERDICT_ERROR] = "error",
};

const char *ust_verdict_name(ust_verdict v)
{
    if (v < UST_VERDICT_APPLIED || v > UST_VERDICT_ERROR)
        return "unknown";
    return verdict_names[v];
}

int ust_verdict_parse(const char *name, ust_verdict *out)
{
    for (int v = UST_VERDICT_APPLIED; v <= UST_VERDICT_ERROR; v++) {
        if (strcmp(name, verdict_names[v]) == 0) {
            *out = (ust_verdict)v;
            return 0;
        }
    }
    return UST_EINVAL;
}

/* Frees what a decision field owns. */
#define FREE_VERDICT(m)
#define FREE_STATUS(m)
#define FREE_TEXT(m) ust_free(d->m);
#define FREE_ENTITY(m) ust_free(d->m);
#define FREE_FLAGS(m)                                                                  \
    for (size_t i = 0; i < d->n_##m; i++)                                              \
        ust_free(d->m[i]);                                                             \
    ust_free(d->m);
#define FREE_BODY(m) ust_free(d->m);
#define FREE_HEADERS(m) json_decref(d->m);
#define FREE_REASON(m) ust_free(d->m);
#define FREE_ERROR(m) ust_free(d->m);
#define FREE(kind, m, column, wire, abi, divergence, div_at) FREE_##kind(m)

void ust_decision_clear(ust_decision *d)
{
    if (d == NULL)
        return;
    UST_DECISION_FIELDS(FREE)
    memset(d, 0, sizeof(*d));
}

/* A decision field as a divergence line writes it, under its divergence key. */
#define DIV_VERDICT UST__DECISION_JSON_VERDICT
#define DIV_STATUS UST__DECISION_JSON_STATUS
#define DIV_TEXT UST__DECISION_JSON_TEXT
#define DIV_ENTITY UST__DECISION_JSON_ENTITY
#define DIV_FLAGS UST__DECISION_JSON_FLAGS
/* The body is compact JSON with sorted keys already (the host made it so
 * when it took the decision): it goes in as it is. */
#define DIV_BODY(m, key)                                                               \
    ust_jsonw_key(w, #key);                                                            \
    if (d->m != NULL)                                                                  \
        ust_jsonw_raw(w, d->m, strlen(d->m));                                          \
    else                                                                               \
        ust_jsonw_null(w);
#define DIV_HEADERS(m, key)                                                            \
    ust_jsonw_key(w, #key);                                                            \
    if (d->m != NULL)                                                                  \
        ust_jsonw_value(w, d->m);                                                      \
    else                                                                               \
        ust_jsonw_raw(w, "{}", 2);
#define DIV_REASON UST__DECISION_JSON_REASON
#define DIV_ERROR UST__DECISION_JSON_REASON
#define DIV_FIRST_FIRST(kind, m, key) DIV_##kind(m, key)
#define DIV_FIRST_REST(kind, m, key)
#define DIV_FIRST(kind, m, column, wire, abi, divergence, div_at)                      \
    DIV_FIRST_##div_at(kind, m, divergence)
#define DIV_REST_FIRST(kind, m, key)
#define DIV_REST_REST(kind, m, key) DIV_##kind(m, key)
#define DIV_REST(kind, m, column, wire, abi, divergence, div_at)                       \
    DIV_REST_##div_at(kind, m, divergence)

void ust_decision_write_json(ust_jsonw *w, const ust_decision *d)
{
    ust_jsonw_object(w);
    UST_DECISION_FIELDS(DIV_FIRST)
    UST_DECISION_FIELDS(DIV_REST)
    ust_jsonw_end_object(w);
}

void ust__decision_error(ust_decision *d, int status, const char *why,
                         const char *detail)
{
    ust_decision_clear(d);
    d->verdict = UST_VERDICT_ERROR;
    d->http_status = status;
    d->error = detail ? ust_sprintf("%s: %s", why, detail) : ust_strdup(why);
}
