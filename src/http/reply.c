/* Each answer's bytes, whole, in the recorder's own framing: its status
 * line, headers and body; a job back from the writer answered as the mode
 * says (recorded, refused, the legacy's decision, the service's answer). */
#include "http/server.h"
#include "http/upstream.h"

#include <understudy/alloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Content";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Status";
    }
}

/* A 204 or a 304 has no body, and says no length (RFC 9110 8.6, 15.3.5,
 * 15.4.5): a length there would be read by some as the size of a body to
 * come. */
static int bodiless(int status)
{
    return status == 204 || status == 304;
}

/* Of a bodiless status, whatever body was given is dropped, and with it its
 * type. */
void ust__reply_set(ust__slot *slot, int status, const char *content_type,
                    const char *extra_headers, const char *body)
{
    const char *extra = extra_headers ? extra_headers : "";
    const char *closing = slot->close_after ? "Connection: close\r\n" : "";
    if (bodiless(status))
        slot->response = ust_sprintf("HTTP/1.1 %d %s\r\n%s%s\r\n", status,
                                     reason_phrase(status), extra, closing);
    else
        slot->response =
            ust_sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                        "%s%s\r\n%s",
                        status, reason_phrase(status), content_type, strlen(body),
                        extra, closing, body);
    slot->response_len = slot->response ? strlen(slot->response) : 0;
    slot->ready = 1;
}

void ust__reply_error(ust__slot *slot, int status, const char *why)
{
    json_t *o = json_pack("{s:s}", "error", why);
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    ust__reply_set(slot, status, "application/json", NULL, body ? body : "{}");
    ust_free(body);
}

/* The legacy's answer, exactly: its status, its headers, its body. */
static void answer_with_decision(ust__slot *slot, const ust_decision *d)
{
    char *headers = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&headers, &len);
    const char *k;
    json_t *v;
    json_object_foreach(d->headers, k, v)
    {
        if (f != NULL)
            fprintf(f, "%s: %s\r\n", k, json_string_value(v));
    }
    if (f != NULL)
        fclose(f);
    ust__reply_set(slot, d->http_status, "application/json", headers,
                   d->body ? d->body : "");
    free(headers);
}

/* --respond upstream: the service's answer as it came (its status, its
 * headers in order but the hop-by-hop ones, its body byte for byte) in the
 * recorder's own framing; 502 or 504 saying why when none came. */
static void answer_as_it_came(ust__slot *slot, const ust_http_result *res)
{
    if (res->failure != 0) {
        int status;
        char *body = ust__upstream_failure_body(res, &status);
        ust__reply_set(slot, status, "application/json", NULL,
                       body ? body : "{\"error\":\"upstream\"}");
        ust_free(body);
        return;
    }
    int no_body = bodiless(res->status);
    char *head = NULL;
    size_t head_len = 0;
    FILE *f = open_memstream(&head, &head_len);
    if (f == NULL)
        return; /* no response: flush closes the connection */
    fprintf(f, "HTTP/1.1 %d %s\r\n", res->status, reason_phrase(res->status));
    for (size_t i = 0; i < res->n_headers; i++)
        if (!ust_http_hop_by_hop(res->headers, res->n_headers, res->headers[i].name))
            fprintf(f, "%s: %s\r\n", res->headers[i].name, res->headers[i].value);
    if (!no_body)
        fprintf(f, "Content-Length: %zu\r\n", res->body_len);
    fprintf(f, "%s\r\n", slot->close_after ? "Connection: close\r\n" : "");
    size_t body_len = no_body ? 0 : res->body_len;
    if (fclose(f) == 0 &&
        (slot->response = ust_malloc(head_len + body_len + 1)) != NULL) {
        memcpy(slot->response, head, head_len);
        if (body_len > 0)
            memcpy(slot->response + head_len, res->body, body_len);
        slot->response_len = head_len + body_len;
    }
    free(head);
    slot->ready = 1;
}

void ust__reply_job(ust__job *job)
{
    ust__slot *slot = job->slot;
    if (job->failure != NULL && job->seq > 0) {
        ust__reply_error(slot, 503, job->failure); /* stored, but not decided */
    } else if (job->failure != NULL) {
        char *why = ust_sprintf("the event log cannot be written: %s", job->failure);
        ust__reply_error(slot, 503, why ? why : "the event log cannot be written");
        ust_free(why);
    } else if (job->sig == UST_SIG_INVALID || job->sig == UST_SIG_MISSING ||
               job->sig == UST_SIG_EXPIRED) {
        /* Recorded as evidence; never decided. */
        char body[160];
        snprintf(body, sizeof(body),
                 "{\"error\":\"signature %s\",\"recorded\":true,\"seq\":%lld}",
                 ust_sig_status_name(job->sig), (long long)job->seq);
        ust__reply_set(slot, 401, "application/json", NULL, body);
    } else if (job->sampled_out) {
        ust__reply_set(slot, 202, "application/json", NULL,
                       "{\"recorded\":false,\"sampled_out\":true}");
    } else if (job->upstream != NULL) {
        answer_as_it_came(slot, job->upstream);
    } else if (job->answer != NULL) {
        answer_with_decision(slot, job->answer);
    } else {
        char body[96];
        snprintf(body, sizeof(body), "{\"recorded\":true,\"seq\":%lld}",
                 (long long)job->seq);
        ust__reply_set(slot, 202, "application/json", NULL, body);
    }
}
