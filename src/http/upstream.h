/* --respond upstream: production's handler (the legacy, a "url" plugin)
 * answers in line. Each committed request is forwarded to it; its answer is
 * read as the legacy's decision (answer.h) and goes back to the caller as
 * it came. */
#ifndef UST_HTTP_UPSTREAM_H
#define UST_HTTP_UPSTREAM_H

#include <understudy/answer.h>
#include <understudy/config.h>
#include <understudy/http_client.h>
#include <understudy/log.h>

typedef struct ust__upstream ust__upstream;

/* The legacy's url, timeout_ms and verdicts from pc, and a client. Used by
 * one thread at a time. UST_ECONFIG when pc names no url or its verdicts
 * are wrong, with *err saying which key of file to fix. */
int ust__upstream_open(const ust_plugin_config *pc, const char *file,
                       ust__upstream **out, char **err);
void ust__upstream_close(ust__upstream *u); /* NULL is a no-op */

/* Forwards rec's request to the service (the method, its target after the
 * url's, the headers but hop-by-hop ones with Host set for the service, the
 * body byte for byte, plus Understudy-Seq and Understudy-Received-At) and
 * waits for its answer into *res (the caller's to clear), read as the
 * decision *d (the caller's to clear): an error decision when the service
 * is down (502), slower than timeout_ms (504) or its answer is not one.
 * sent (NULL: none) holds, per header of rec->req, the value the client
 * sent where the recorded one is masked (capture.mask_headers): the
 * service gets what the client sent. 0 or UST_ENOMEM. */
int ust__upstream_forward(ust__upstream *u, const ust_log_record *rec,
                          char *const *sent, ust_http_result *res, ust_decision *d);

/* After the answer was recorded: one whose decision says it is refused
 * (ust_http_answer_refusal) is never relayed: *res becomes the failure
 * (UST_EPARSE) the caller is told of, 502. 0 or UST_ENOMEM. */
int ust__upstream_withhold(ust_http_result *res);

/* The decision of an event the log holds but whose answer from the service
 * was never recorded (the recorder stopped, or the answers could not be
 * written): it is not forwarded again, since it may have reached the
 * service. 0 or UST_ENOMEM. */
int ust__upstream_unknown(ust_decision *d);

/* The body of the recorder's own answer when the service gave none to
 * relay: 502 or 504 (*status) and {"error": ..., "cause": ...}, the cause
 * in a few words (res->what), without the url (ust_malloc'd; NULL when out
 * of memory). */
char *ust__upstream_failure_body(const ust_http_result *res, int *status);

#endif
