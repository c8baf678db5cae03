/* An HTTP answer as a decision: what a service plugin (the url kind), a
 * legacy answering in line (serve --respond upstream) or production's
 * recorded answer (a "recorded" legacy) said, read the one same way.
 *
 * The verdict, entity, states, flags and reason come from the answer's
 * Understudy-Verdict, Understudy-Entity, Understudy-State-Before,
 * Understudy-State, Understudy-Flags (comma separated) and
 * Understudy-Reason headers when present; those headers are not kept
 * among the decision's headers. Without Understudy-Verdict the status
 * decides, through the plugin's "verdicts" map when it names the status,
 * else: 2xx applied, 409 in_progress, 422 conflict, other 4xx invalid. A
 * 5xx (or any status the map does not make a verdict of) is an error
 * decision saying what the service answered. */
#ifndef UNDERSTUDY_ANSWER_H
#define UNDERSTUDY_ANSWER_H

#include <jansson.h>
#include <stddef.h>

#include <understudy/host.h>
#include <understudy/request.h>

/* What a service answered; borrowed. */
typedef struct ust_http_answer {
    int status;
    const ust_header *headers; /* in the order they came */
    size_t n_headers;
    const unsigned char *body;
    size_t body_len;
} ust_http_answer;

/* A plugin's "verdicts": {"201": "applied", "404": "invalid", ...}. */
typedef struct ust_verdict_map {
    size_t n;
    int status[64];
    ust_verdict verdict[64];
} ust_verdict_map;

/* Parses v (NULL or absent: an empty map) into *out; what names the key in
 * errors ("plugins.legacy.verdicts"). 0, or UST_ECONFIG with *err saying
 * which entry is wrong. */
int ust_verdict_map_parse(const json_t *v, const char *what, ust_verdict_map *out,
                          char **err);

/* Why a cannot be relayed to a caller as it came, a static text: a status
 * outside 200-599 (a 1xx is interim), a header name that is not an HTTP
 * token, a header value holding CR or LF (what --respond legacy refuses of
 * a plugin's answer). NULL when it can. */
const char *ust_http_answer_refusal(const ust_http_answer *a);

/* Fills *d (cleared first) from a. An answer ust_http_answer_refusal
 * refuses is an error decision "the answer is refused: <why>". Always fills it: an
 * answer that cannot be a decision (a 5xx, a malformed Understudy-* header, a body over
 * the size limit) gives verdict error with the cause in d->error. The body is kept as
 * its canonical JSON, or, when it is not JSON, as a JSON string of its text (bytes that
 * are not UTF-8 make it an error). Returns 0, or UST_ENOMEM (d then holds what it
 * could). */
int ust_http_answer_decide(const ust_http_answer *a, const ust_verdict_map *map,
                           ust_decision *d);

#endif
