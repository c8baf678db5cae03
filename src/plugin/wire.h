/* The JSON-lines plugin protocol, version 2 (include/understudy/protocol.md):
 * the canonical event and the decision as JSON, on both sides of the pipe. */
#ifndef UST_PLUGIN_WIRE_H
#define UST_PLUGIN_WIRE_H

#include <jansson.h>

#include <understudy/event.h>
#include <understudy/host.h>
#include <understudy/jsonw.h>

/* 2: every answer (decision or error) carries the seq of the event it
 * answers. */
#define UST__PROTOCOL_VERSION 2

/* The "decide" message: {"type":"decide","event":{"seq":..,"received_at_us":..,
 * "route_kind":..,...,"body":..,"headers":[[n,v]]}}, written into w; req NULL
 * leaves out body and headers. */
void ust__wire_decide(ust_jsonw *w, const ust_event *ev, const ust_request *req);

/* A plugin's config object as the JSON text its create() and a child's init
 * message carry: compact, keys sorted, "{}" when it has none (ust_malloc'd;
 * NULL when out of memory). */
char *ust__plugin_config_text(const json_t *config);

/* The other way, in the child: the strings of *ev and *req are borrowed from
 * j (which must outlive them); *route (the caller's) carries the route's path
 * and kind. Release with ust__wire_event_release, never ust_event_clear.
 * 0, UST_EPARSE or UST_ENOMEM. */
int ust__wire_event_parse(json_t *j, ust_event *ev, ust_request *req, ust_route *route);
/* Frees what the parse allocated (the body copy, the header array). */
void ust__wire_event_release(ust_event *ev, ust_request *req);

/* The "decision" message: {"type":"decision","seq":seq,"decision":{...}} and,
 * unless NULL, "writes" (JSON text), written into w. */
void ust__wire_decision(ust_jsonw *w, int64_t seq, const ust_decision *d,
                        const char *writes);

/* The canonical texts of the response bodies a plugin answered with last:
 * plugins answer with few distinct bodies, and parsing and dumping each body
 * again was a tenth of replay's time. One plugin's, used by the one thread
 * that takes its answers (so it needs no lock): zeroed to start, emptied with
 * ust__body_memo_free. The canonical text is a function of the text alone,
 * so a memo changes nothing but the time. */
#define UST__BODY_MEMO 64
typedef struct ust__body_memo {
    struct {
        char *text, *canon;
    } slot[UST__BODY_MEMO];
} ust__body_memo;
void ust__body_memo_free(ust__body_memo *m);

/* Parses a "decision" object and validates it as an in-process plugin's
 * answer is validated. NULL on success, else a static reason. memo: the
 * plugin's, or NULL for none (ust__wire_decision_parse). */
const char *ust__wire_decision_parse_memo(json_t *j, ust_decision *d,
                                          ust__body_memo *memo);
const char *ust__wire_decision_parse(json_t *j, ust_decision *d);

/* Validation shared with in-process plugins (loader.c); memo as above. */
/* The most headers and flags a decision may carry (ust__adopt refuses more). */
#define UST__DECISION_MAX_HEADERS 64
#define UST__DECISION_MAX_FLAGS 32
const char *ust__adopt(ust_plugin_decision *pd, ust_decision *d, ust__body_memo *memo);
/* Why a response header named n is the harness's own (framing or
 * hop-by-hop: Content-Length, Connection, ...), a static text; NULL when a
 * plugin may answer with it. */
const char *ust__owned_header(const char *n);
/* Why an answer with this status or this header cannot go to a caller
 * (--respond legacy, --respond upstream): a static text; NULL when it can.
 * The one definition ust__adopt and ust_http_answer_refusal apply. */
const char *ust__status_refusal(int status);
const char *ust__header_refusal(const char *name, const char *value);
/* Makes d (cleared first) an error decision with that status and the cause
 * "why: detail" (or why alone when detail is NULL); decision.c. */
void ust__decision_error(ust_decision *d, int status, const char *why,
                         const char *detail);

#endif
