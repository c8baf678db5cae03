/* --respond upstream's forwarding (upstream.h). It runs on the responder's
 * thread, never on the loop: a slow service holds up the answers behind it
 * in seq order (as production's own handler would) but never the accepting,
 * reading or recording of requests. */
#include "http/upstream.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct ust__upstream {
    ust_http_client *client;
    char *prefix; /* the url without a trailing '/': the target follows */
    char *host;   /* its authority without credentials, the forwarded Host */
    int64_t timeout_ms;
    ust_verdict_map verdicts;
};

int ust__upstream_open(const ust_plugin_config *pc, const char *file,
                       ust__upstream **out, char **err)
{
    *out = NULL;
    if (pc->url == NULL)
        return ust_errf(err, UST_ECONFIG,
                        "--respond upstream: the legacy is production's handler: set"
                        " plugins.legacy.url in %s (\"http://host:port/prefix\")",
                        file ? file : "the config");
    ust__upstream *u = ust_calloc(1, sizeof(*u));
    if (u == NULL)
        return UST_ENOMEM;
    u->timeout_ms = pc->timeout_ms;
    char *why = NULL;
    int rc = ust_http_url_split(pc->url, &u->prefix, &u->host, &why);
    if (rc == UST_ECONFIG)
        rc =
            ust_errf(err, rc, "%s: plugins.legacy.%s", file ? file : "the config", why);
    ust_free(why);
    if (rc == 0)
        rc = ust_verdict_map_parse(pc->verdicts, "plugins.legacy.verdicts",
                                   &u->verdicts, err);
    if (rc == 0)
        rc = ust_http_client_new(&u->client, err);
    if (rc == 0)
        rc = ust_http_client_proxy(u->client, pc->proxy);
    if (rc != 0) {
        ust__upstream_close(u);
        return rc;
    }
    *out = u;
    return 0;
}

void ust__upstream_close(ust__upstream *u)
{
    if (u == NULL)
        return;
    ust_http_client_free(u->client);
    ust_free(u->prefix);
    ust_free(u->host);
    ust_free(u);
}

/* What the caller is told when the service gave no answer to relay. */
static const char *failure_title(int failure)
{
    return failure == UST_ETIMEOUT ? "upstream timed out"
           : failure == UST_EPARSE ? "upstream answer refused"
                                   : "upstream unreachable";
}

static int failure_decision(const ust__upstream *u, const ust_http_result *res,
                            ust_decision *d)
{
    d->verdict = UST_VERDICT_ERROR;
    d->http_status = res->failure == UST_ETIMEOUT ? 504 : 502;
    const char *cause = res->cause ? res->cause : ust_strerror(res->failure);
    d->error = res->failure == UST_ETIMEOUT
                   ? ust_sprintf("upstream timed out (timeout_ms %lld): %s",
                                 (long long)u->timeout_ms, cause)
                   : ust_sprintf("%s: %s", failure_title(res->failure), cause);
    return d->error ? 0 : UST_ENOMEM;
}

/* rec's request with each header the client sent in clear where masking
 * (capture.mask_headers) changed it: the masked form is for storage only.
 * sent NULL: as recorded. *view borrows; its header array is the caller's
 * to ust_free. */
static int as_sent(const ust_request *req, char *const *sent, ust_request *view)
{
    *view = *req;
    if (sent == NULL || req->n_headers == 0)
        return 0;
    view->headers = ust_malloc(req->n_headers * sizeof(*view->headers));
    if (view->headers == NULL)
        return UST_ENOMEM;
    for (size_t i = 0; i < req->n_headers; i++) {
        view->headers[i] = req->headers[i];
        if (sent[i] != NULL)
            view->headers[i].value = sent[i];
    }
    return 0;
}

int ust__upstream_forward(ust__upstream *u, const ust_log_record *rec,
                          char *const *sent, ust_http_result *res, ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    memset(res, 0, sizeof(*res));
    ust_request view;
    const ust_request *req = &view;
    ust_header *fwd = NULL, *h = NULL;
    size_t n = 0;
    char *url = NULL;
    int rc = as_sent(&rec->req, sent, &view);
    if (rc == 0)
        rc = ust_http_forward_headers(req, u->host, &fwd, &n);
    if (rc == 0 && ((h = ust_malloc((n + 2) * sizeof(*h))) == NULL ||
                    (url = ust_sprintf("%s%s", u->prefix, req->target)) == NULL))
        rc = UST_ENOMEM;
    if (rc == 0) {
        /* The event's own seq and time, so the service can use them as the
         * url kind's services do: its clock is the arrival time. */
        char seq[24], at[32];
        snprintf(seq, sizeof(seq), "%lld", (long long)rec->seq);
        ust_time_format(req->received_at_us, at);
        memcpy(h, fwd, n * sizeof(*h));
        h[n] = (ust_header){"Understudy-Seq", seq};
        h[n + 1] = (ust_header){"Understudy-Received-At", at};
        ust_http_call call = {.method = req->method,
                              .url = url,
                              .headers = h,
                              .n_headers = n + 2,
                              .body = req->body,
                              .body_len = req->body_len,
                              .timeout_ms = u->timeout_ms};
        rc = ust_http_client_send(u->client, &call, res);
    }
    if (rc == 0 && res->failure == 0) {
        ust_http_answer a = {res->status, res->headers, res->n_headers, res->body,
                             res->body_len};
        rc = ust_http_answer_decide(&a, &u->verdicts, d);
    } else if (rc == 0) {
        rc = failure_decision(u, res, d);
    }
    ust_free(url);
    ust_free(h);
    ust_free(fwd);
    if (view.headers != rec->req.headers)
        ust_free(view.headers);
    return rc;
}

int ust__upstream_withhold(ust_http_result *res)
{
    if (res->failure != 0)
        return 0;
    ust_http_answer a = {res->status, res->headers, res->n_headers, res->body,
                         res->body_len};
    const char *why = ust_http_answer_refusal(&a);
    if (why == NULL)
        return 0;
    char *cause =
        ust_sprintf("the answer is refused: %s (status %d)", why, res->status);
    if (cause == NULL)
        return UST_ENOMEM;
    ust_http_result_clear(res);
    res->failure = UST_EPARSE;
    res->what = why;
    res->cause = cause;
    return 0;
}

int ust__upstream_unknown(ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->verdict = UST_VERDICT_ERROR;
    d->error = ust_strdup("upstream: outcome unknown: the request was recorded but the "
                          "service's answer was not (the recorder stopped, or the "
                          "answers could not be written); it is not forwarded again");
    return d->error ? 0 : UST_ENOMEM;
}

char *ust__upstream_failure_body(const ust_http_result *res, int *status)
{
    *status = res->failure == UST_ETIMEOUT ? 504 : 502;
    /* A few words, never res->cause: the url (its credentials, the
     * service's address) is not the caller's to see. */
    json_t *o = json_pack("{s:s,s:s}", "error", failure_title(res->failure), "cause",
                          res->what ? res->what : ust_strerror(res->failure));
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL; /* jansson's: ust_free */
    json_decref(o);
    return body;
}
