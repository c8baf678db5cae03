/* A decision field as JSON member key, written into the ust_jsonw w from
 * the ust_decision d, for the kinds every JSON form of a decision writes
 * alike (UST_DECISION_FIELDS, host.h): the divergence line (decision.c) and
 * the child protocol (wire.c) differ only in the body, the headers and the
 * error. */
#ifndef UST_PLUGIN_DECISION_JSON_H
#define UST_PLUGIN_DECISION_JSON_H

#include <understudy/host.h>
#include <understudy/jsonw.h>

#define UST__DECISION_JSON_VERDICT(m, key)                                             \
    ust_jsonw_member_string(w, #key, ust_verdict_name(d->m));
#define UST__DECISION_JSON_STATUS(m, key) ust_jsonw_member_int(w, #key, d->m);
#define UST__DECISION_JSON_TEXT(m, key) ust_jsonw_member_string(w, #key, d->m);
#define UST__DECISION_JSON_ENTITY UST__DECISION_JSON_TEXT
#define UST__DECISION_JSON_FLAGS(m, key)                                               \
    ust_jsonw_key(w, #key);                                                            \
    ust_jsonw_strings(w, d->m, d->n_##m);
/* Left out when NULL. */
#define UST__DECISION_JSON_REASON(m, key)                                              \
    if (d->m != NULL)                                                                  \
        ust_jsonw_member_string(w, #key, d->m);

#endif
