/* The HTTP client (http_client.h) on libcurl's multi interface: one multi
 * handle holds the connection cache, so every call of a client reuses the
 * connections earlier calls left open, one at a time or many at once. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/http_client.h>

#include "util/answer_head.h"

#include <curl/curl.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

struct ust_http_client {
    CURLM *multi;
    char *proxy; /* NULL: none, whatever the environment says */
    CURL **idle; /* easy handles kept for reuse */
    size_t n_idle, cap_idle;
};

/* One call on its way. */
typedef struct transfer {
    CURL *easy;
    struct curl_slist *list;
    ust_http_result *out;
    const ust_http_call *call;
    size_t cap_body;
    int too_big, oom;
    ust__answer_head head;
    const char *refused; /* why the answer is refused (answer_head.h) */
    char errbuf[CURL_ERROR_SIZE];
} transfer;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ust_http_client_new(ust_http_client **out, char **err)
{
    *out = NULL;
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return ust_errf(err, UST_EIO, "libcurl cannot start: %s",
                        curl_easy_strerror(global_rc));
    ust_http_client *c = ust_calloc(1, sizeof(*c));
    if (c == NULL)
        return UST_ENOMEM;
    c->multi = curl_multi_init();
    if (c->multi == NULL) {
        ust_free(c);
        return ust_errf(err, UST_ENOMEM, "libcurl: cannot make a multi handle");
    }
    *out = c;
    return 0;
}

void ust_http_client_free(ust_http_client *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_idle; i++)
        curl_easy_cleanup(c->idle[i]);
    ust_free(c->idle);
    ust_free(c->proxy);
    curl_multi_cleanup(c->multi);
    ust_free(c);
}

int ust_http_client_proxy(ust_http_client *c, const char *proxy)
{
    char *copy = NULL;
    if (proxy != NULL && (copy = ust_strdup(proxy)) == NULL)
        return UST_ENOMEM;
    ust_free(c->proxy);
    c->proxy = copy;
    return 0;
}

void ust_http_result_clear(ust_http_result *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_headers; i++) {
        ust_free(r->headers[i].name);
        ust_free(r->headers[i].value);
    }
    ust_free(r->headers);
    ust_free(r->body);
    ust_free(r->cause);
    memset(r, 0, sizeof(*r));
}

static int is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* libcurl hands each header line whole, CRLF included (answer_head.h). */
static size_t on_header(char *buf, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    size_t len = size * n;
    int rc = ust__answer_head_line(&t->head, buf, len, t->out, &t->refused);
    if (rc == UST_ELIMIT)
        t->too_big = 1;
    else if (rc == UST_ENOMEM)
        t->oom = 1;
    return rc == 0 ? len : 0;
}

static size_t on_body(char *buf, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    ust_http_result *r = t->out;
    size_t len = size * n;
    if (len == 0)
        return 0;
    /* Refused rather than held: no decision needs more, and a service
     * streaming without end must not exhaust memory. */
    if (r->body_len + len > UST_HTTP_MAX_BODY) {
        t->too_big = 1;
        return 0;
    }
    if (r->body_len + len > t->cap_body) {
        unsigned char *grown =
            ust_grow(r->body, &t->cap_body, r->body_len + len, 1024, 1);
        if (grown == NULL) {
            t->oom = 1;
            return 0;
        }
        r->body = grown;
    }
    memcpy(r->body + r->body_len, buf, len);
    r->body_len += len;
    return len;
}

static int has_header(const ust_http_call *call, const char *name)
{
    for (size_t i = 0; i < call->n_headers; i++)
        if (strcasecmp(call->headers[i].name, name) == 0)
            return 1;
    return 0;
}

static int append(struct curl_slist **list, char *line)
{
    if (line == NULL)
        return UST_ENOMEM;
    struct curl_slist *grown = curl_slist_append(*list, line);
    ust_free(line);
    if (grown == NULL)
        return UST_ENOMEM;
    *list = grown;
    return 0;
}

static int build_list(const ust_http_call *call, struct curl_slist **list)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < call->n_headers; i++) {
        const ust_header *h = &call->headers[i];
        /* "Name:" would remove a header from libcurl's list; "Name;" is how
         * it sends one whose value is empty. */
        rc = append(list, h->value[0] == '\0'
                              ? ust_sprintf("%s;", h->name)
                              : ust_sprintf("%s: %s", h->name, h->value));
    }
    /* The request as given, not libcurl's defaults on top of it. */
    static const char *const defaults[] = {"Accept", "Expect", "Content-Type"};
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(defaults); i++)
        if (!has_header(call, defaults[i]))
            rc = append(list, ust_sprintf("%s:", defaults[i]));
    return rc;
}

static CURL *take_easy(ust_http_client *c)
{
    if (c->n_idle > 0) {
        CURL *e = c->idle[--c->n_idle];
        curl_easy_reset(e);
        return e;
    }
    return curl_easy_init();
}

static void give_back(ust_http_client *c, CURL *e)
{
    CURL **grown = ust_grow(c->idle, &c->cap_idle, c->n_idle + 1, 8, sizeof(*grown));
    if (grown == NULL) {
        curl_easy_cleanup(e);
        return;
    }
    c->idle = grown;
    c->idle[c->n_idle++] = e;
}

static int setup(ust_http_client *c, transfer *t, const ust_http_call *call,
                 ust_http_result *out)
{
    memset(t, 0, sizeof(*t));
    memset(out, 0, sizeof(*out));
    t->out = out;
    t->call = call;
    if (build_list(call, &t->list) != 0)
        return UST_ENOMEM;
    t->easy = take_easy(c);
    if (t->easy == NULL)
        return UST_ENOMEM;
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, call->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    /* libcurl would follow http_proxy, https_proxy and all_proxy from the
     * environment: a recorded request (credentials and all) sent to a host
     * nobody configured. "" is no proxy at all; a named one takes every
     * call, and no_proxy from the environment is not read either. */
    curl_easy_setopt(e, CURLOPT_PROXY, c->proxy != NULL ? c->proxy : "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    /* A proxy's answer to CONNECT is not the service's head. */
    curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->list);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)call->timeout_ms);
    const char *method = call->method ? call->method : "GET";
    int bodiless = call->body_len == 0 &&
                   (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
                    strcmp(method, "DELETE") == 0 || strcmp(method, "OPTIONS") == 0);
    if (strcmp(method, "HEAD") == 0 && call->body_len == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (!bodiless) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS,
                         call->body_len ? (const char *)call->body : "");
    }
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    return 0;
}

static const char *what_failed(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return "cannot connect";
    case CURLE_COULDNT_RESOLVE_HOST:
        return "cannot resolve the host";
    case CURLE_GOT_NOTHING:
        return "the connection closed with no answer";
    case CURLE_PARTIAL_FILE:
        return "the connection closed mid-answer";
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        return "the connection failed";
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return "the answer is not HTTP";
    default:
        return curl_easy_strerror(rc);
    }
}

char *ust_http_url_shown(const char *url)
{
    CURLU *u = curl_url();
    char *shown = NULL, *out = NULL;
    if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &shown, 0) == CURLUE_OK)
        out = ust_strdup(shown);
    else if (strchr(url, '@') == NULL)
        out = ust_strdup(url);
    else /* not a URL libcurl reads, and it may hold a password */
        out = ust_strdup("(the url)");
    curl_free(shown);
    curl_url_cleanup(u);
    return out;
}

/* Fills the result's status, failure and cause from how the transfer ended. */
static int conclude(transfer *t, CURLcode rc)
{
    ust_http_result *r = t->out;
    const ust_http_call *call = t->call;
    const char *method = call->method ? call->method : "GET";
    if (t->oom)
        return UST_ENOMEM;
    if (rc == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        r->status = (int)status;
        return 0;
    }
    char *url = ust_http_url_shown(call->url);
    if (url == NULL)
        return UST_ENOMEM;
    r->failure = t->refused                       ? UST_EPARSE
                 : rc == CURLE_OPERATION_TIMEDOUT ? UST_ETIMEOUT
                                                  : UST_EIO;
    if (t->refused) {
        r->what = t->refused;
        r->cause =
            ust_sprintf("%s %s: the answer is refused: %s", method, url, t->refused);
    } else if (t->too_big) {
        r->what = "the answer is over the size limit";
        r->cause = ust_sprintf("%s %s: the answer is over the limit (%u headers, "
                               "%u bytes of body)",
                               method, url, UST__ANSWER_MAX_HEADERS, UST_HTTP_MAX_BODY);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        r->what = "no answer in time";
        r->cause = ust_sprintf("%s %s: no answer within %lld ms (%s)", method, url,
                               (long long)call->timeout_ms, t->errbuf);
    } else {
        r->what = what_failed(rc);
        r->cause = ust_sprintf("%s %s: %s (%s)", method, url, r->what,
                               t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc));
    }
    ust_free(url);
    return r->cause == NULL ? UST_ENOMEM : 0;
}

static void release(ust_http_client *c, transfer *t)
{
    if (t->easy != NULL)
        give_back(c, t->easy);
    curl_slist_free_all(t->list);
    t->easy = NULL;
    t->list = NULL;
}

int ust_http_client_send(ust_http_client *c, const ust_http_call *call,
                         ust_http_result *out)
{
    return ust_http_client_send_many(c, call, 1, NULL, 1, out);
}

int ust_http_client_send_many(ust_http_client *c, const ust_http_call *calls, size_t n,
                              const size_t *after, size_t max_in_flight,
                              ust_http_result *outs)
{
    return ust_http_client_send_gated(c, calls, n, after, max_in_flight, NULL, outs);
}

int ust_http_client_send_gated(ust_http_client *c, const ust_http_call *calls, size_t n,
                               const size_t *after, size_t max_in_flight,
                               const ust_http_gate *gate, ust_http_result *outs)
{
    if (n == 0)
        return 0;
    if (max_in_flight == 0)
        max_in_flight = 1;
    transfer *ts = ust_calloc(n, sizeof(*ts));
    /* 0 waiting, 1 sent, 2 answered */
    unsigned char *st = ust_calloc(n, 1);
    /* The calls to start next, then those answered since the gate was last
     * told (from the end): never more than n together. */
    size_t *told = ust_calloc(n, sizeof(*told));
    if (ts == NULL || st == NULL || told == NULL) {
        ust_free(ts);
        ust_free(st);
        ust_free(told);
        return UST_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        memset(&outs[i], 0, sizeof(outs[i]));
    int rc = 0;
    size_t done = 0, running = 0, first = 0, n_answered = 0;
    while (rc == 0 && done < n) {
        /* What may start, in index order. */
        size_t n_start = 0;
        for (size_t i = first; i < n && running + n_start < max_in_flight; i++)
            if (st[i] == 0 &&
                (after == NULL || after[i] == SIZE_MAX || st[after[i]] == 2))
                told[n_start++] = i;
        if (n_start > 0 && gate != NULL) {
            rc = gate->before(gate->ctx, told, n_start, told + n - n_answered,
                              n_answered);
            n_answered = 0;
        }
        for (size_t k = 0; rc == 0 && k < n_start; k++) {
            size_t i = told[k];
            rc = setup(c, &ts[i], &calls[i], &outs[i]);
            if (rc == 0 && curl_multi_add_handle(c->multi, ts[i].easy) != CURLM_OK)
                rc = UST_ENOMEM;
            if (rc == 0) {
                curl_easy_setopt(ts[i].easy, CURLOPT_PRIVATE, &ts[i]);
                st[i] = 1;
                running++;
            }
        }
        while (first < n && st[first] != 0)
            first++;
        if (rc != 0)
            break;
        int still = 0;
        if (curl_multi_perform(c->multi, &still) != CURLM_OK) {
            rc = UST_ENOMEM;
            break;
        }
        CURLMsg *m;
        int left;
        int finished = 0;
        while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
            if (m->msg != CURLMSG_DONE)
                continue;
            transfer *t = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            CURLcode res = m->data.result;
            curl_multi_remove_handle(c->multi, m->easy_handle);
            int crc = conclude(t, res);
            if (crc != 0 && rc == 0)
                rc = crc;
            release(c, t);
            st[t - ts] = 2;
            told[n - ++n_answered] = (size_t)(t - ts);
            running--;
            done++;
            finished = 1;
        }
        if (!finished && rc == 0 && running > 0 &&
            curl_multi_poll(c->multi, NULL, 0, 1000, NULL) != CURLM_OK)
            rc = UST_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (st[i] == 1) {
            curl_multi_remove_handle(c->multi, ts[i].easy);
            release(c, &ts[i]);
        } else if (st[i] == 0)
            release(c, &ts[i]);
    ust_free(ts);
    ust_free(st);
    ust_free(told);
    return rc;
}

/* 1 when the comma separated list names name (any case). */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; len > 0 && *p != '\0';) {
        while (*p == ',' || is_ows(*p))
            p++;
        const char *e = p;
        while (*e != '\0' && *e != ',' && !is_ows(*e))
            e++;
        if ((size_t)(e - p) == len && strncasecmp(p, name, len) == 0)
            return 1;
        p = e;
    }
    return 0;
}

int ust_http_hop_by_hop(const ust_header *headers, size_t n, const char *name)
{
    static const char *const names[] = {"Connection",    "Keep-Alive",        "TE",
                                        "Trailer",       "Transfer-Encoding", "Upgrade",
                                        "Content-Length"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(names); i++)
        if (strcasecmp(name, names[i]) == 0)
            return 1;
    if (strncasecmp(name, "Proxy-", 6) == 0)
        return 1;
    /* The names any Connection header lists are this hop's own. */
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(headers[i].name, "Connection") == 0 &&
            listed(headers[i].value, name))
            return 1;
    return 0;
}

/* A config error about url, which names it without its password. */
static int url_refused(const char *url, const char *why, char **err)
{
    char *shown = ust_http_url_shown(url);
    int rc = ust_errf(err, UST_ECONFIG, "url %s: %s", shown ? shown : "(the url)", why);
    ust_free(shown);
    return rc;
}

int ust_http_url_split(const char *url, char **base, char **host, char **err)
{
    *base = *host = NULL;
    const char *auth = strstr(url, "://");
    if (auth == NULL)
        return url_refused(url, "expected http:// or https://", err);
    auth += 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    if (at != NULL) { /* credentials are not part of the Host */
        alen -= (size_t)(at + 1 - auth);
        auth = at + 1;
    }
    if (alen == 0)
        return url_refused(url, "no host", err);
    size_t len = strlen(url);
    while (len > 0 && url[len - 1] == '/')
        len--;
    *base = ust_strndup(url, len);
    *host = ust_strndup(auth, alen);
    if (*base == NULL || *host == NULL) {
        ust_free(*base);
        ust_free(*host);
        *base = *host = NULL;
        return UST_ENOMEM;
    }
    return 0;
}

int ust_http_forward_headers(const ust_request *req, const char *host, ust_header **out,
                             size_t *n)
{
    *out = NULL;
    *n = 0;
    ust_header *h = ust_calloc(req->n_headers + 1, sizeof(*h));
    if (h == NULL)
        return UST_ENOMEM;
    size_t k = 0;
    int host_set = 0;
    if (ust_request_header(req, "Host") == NULL) {
        h[k++] = (ust_header){"Host", (char *)host};
        host_set = 1;
    }
    for (size_t i = 0; i < req->n_headers; i++) {
        const ust_header *src = &req->headers[i];
        if (strcasecmp(src->name, "Host") == 0) {
            if (!host_set)
                h[k++] = (ust_header){src->name, (char *)host};
            host_set = 1;
            continue;
        }
        if (!ust_http_hop_by_hop(req->headers, req->n_headers, src->name))
            h[k++] = *src;
    }
    *out = h;
    *n = k;
    return 0;
}
