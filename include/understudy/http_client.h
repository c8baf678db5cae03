/* An HTTP client on libcurl (Debian's libcurl4-openssl-dev): keep-alive,
 * timeouts, https. The url plugin kind sends events with it, serve
 * --respond upstream forwards to production's handler, drive --target
 * sends scenarios. One client is used by one thread at a time; it keeps its
 * connections open between calls (its pool). */
#ifndef UNDERSTUDY_HTTP_CLIENT_H
#define UNDERSTUDY_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <understudy/request.h>

/* The longest body an answer may have: a longer one is a failure (the
 * recorder's --respond upstream reserves this much for an answer to come). */
#define UST_HTTP_MAX_BODY (16u << 20)

typedef struct ust_http_client
    ust_http_client; /* keep-alive pool; one thread at a time */

/* 0 and *out, or UST_ENOMEM / UST_EIO (libcurl cannot start) with *err. */
int ust_http_client_new(ust_http_client **out, char **err);
void ust_http_client_free(ust_http_client *c); /* NULL is a no-op */
/* The proxy every later call goes through ("http://host:port", as libcurl
 * takes it), or NULL: none. The environment's http_proxy, https_proxy,
 * all_proxy and no_proxy are never read. 0 or UST_ENOMEM. */
int ust_http_client_proxy(ust_http_client *c, const char *proxy);

typedef struct ust_http_call {
    const char *method;
    const char *url; /* the full URL */
    const ust_header *headers;
    size_t n_headers; /* sent in this order, as given */
    const unsigned char *body;
    size_t body_len;
    int64_t timeout_ms; /* whole call; 0: none */
} ust_http_call;

typedef struct ust_http_result {
    int status;
    ust_header *headers; /* the answer, headers in order */
    size_t n_headers;
    unsigned char *body; /* NULL when body_len 0 */
    size_t body_len;
    int failure;      /* 0: an HTTP answer came; UST_ETIMEOUT past timeout_ms;
                         UST_EIO refused, reset, closed mid-answer or not HTTP;
                         UST_EPARSE an answer whose head is refused (a status line
                         inside it, a trailer, a NUL, a line not "name: value") */
    char *cause;      /* what happened, for an error decision, when failure != 0:
                         the method and url (never its password) and libcurl's
                         words */
    const char *what; /* the same in a few static words, with no url or
                         address: what a caller in front may be told */
} ust_http_result;

/* Sends one call and waits for its answer; *out is cleared first and the
 * caller's to clear. 0 (see out->failure) or UST_ENOMEM. Besides the
 * headers given, libcurl adds only the framing (Content-Length for a body);
 * it adds no Accept, Expect or Content-Type of its own. */
int ust_http_client_send(ust_http_client *c, const ust_http_call *call,
                         ust_http_result *out);

/* Sends n calls, up to max_in_flight at once, each started in index order
 * as soon as the one it waits for is answered: after[i] is the index (< i)
 * of the call that must be answered before call i is sent, or SIZE_MAX.
 * after may be NULL (none waits). outs[i] as for ust_http_client_send. 0 or
 * UST_ENOMEM. */
int ust_http_client_send_many(ust_http_client *c, const ust_http_call *calls, size_t n,
                              const size_t *after, size_t max_in_flight,
                              ust_http_result *outs);

/* What ust_http_client_send_gated tells before it starts calls: the
 * indexes of the calls about to start, and of those answered since it last
 * told (their outs filled; those answered after the last start are told
 * to nobody: the caller reads them from outs). 0: they start; anything
 * else: none does, no call starts after, and send_gated returns it. */
typedef struct ust_http_gate {
    int (*before)(void *ctx, const size_t *starting, size_t n_starting,
                  const size_t *answered, size_t n_answered);
    void *ctx;
} ust_http_gate;

/* ust_http_client_send_many, telling gate (NULL: nobody) before each
 * start: a journal records each intent just before its own send. */
int ust_http_client_send_gated(ust_http_client *c, const ust_http_call *calls, size_t n,
                               const size_t *after, size_t max_in_flight,
                               const ust_http_gate *gate, ust_http_result *outs);

void ust_http_result_clear(ust_http_result *r); /* NULL is a no-op */

/* A service's url as calls use it: *base the url without its trailing '/'s
 * (a request's target follows), *host its authority without credentials
 * (the Host sent). Both the caller's to ust_free. 0; UST_ECONFIG with *err
 * ("url URL: ...": no scheme, no host); UST_ENOMEM. */
int ust_http_url_split(const char *url, char **base, char **host, char **err);

/* url as a cause, a run's identity or a report names it: without its
 * password, which nothing stored or shown may carry (the user is kept);
 * "(the url)" for one libcurl cannot read that holds an '@'. The caller's
 * to ust_free; NULL when out of memory. */
char *ust_http_url_shown(const char *url);

/* 1 when name is a hop-by-hop header among headers (a request's or an
 * answer's): Connection, Keep-Alive, Proxy-*, TE, Trailer,
 * Transfer-Encoding, Upgrade, Content-Length (the framing, each hop's own),
 * or a name any Connection header of them lists. */
int ust_http_hop_by_hop(const ust_header *headers, size_t n, const char *name);
/* The headers of an original request as forwarded: hop-by-hop ones
 * (Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade,
 * and those Connection names) and Content-Length dropped, Host replaced by
 * host (the service's authority, kept where the request had its Host, or
 * first when it had none); borrowed strings, *out (the array) is the
 * caller's to ust_free. 0 or UST_ENOMEM. */
int ust_http_forward_headers(const ust_request *req, const char *host, ust_header **out,
                             size_t *n);

#endif
