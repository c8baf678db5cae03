/* A request exactly as it arrived: the unit the event log records byte for
 * byte, and the input from which every derived field is computed. */
#ifndef UNDERSTUDY_REQUEST_H
#define UNDERSTUDY_REQUEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct ust_header {
    char *name;  /* as sent, case kept */
    char *value; /* as sent */
} ust_header;

typedef struct ust_request {
    int64_t received_at_us; /* arrival time, microseconds since the Unix epoch */
    char *remote;           /* "ip:port" */
    char *method;
    char *target;        /* request target, query included */
    ust_header *headers; /* in arrival order, duplicates kept */
    size_t n_headers;
    unsigned char *body; /* raw bytes, may hold NULs; NULL when body_len 0 */
    size_t body_len;
} ust_request;

/* The answer a request was given (production's, recorded with it): what
 * the event log keeps beside the request, and what a "recorded" legacy
 * decides with. */
typedef struct ust_response {
    int status; /* 0: no recorded answer */
    ust_header *headers;
    size_t n_headers; /* in order, as sent */
    unsigned char *body;
    size_t body_len;
} ust_response;

/* Frees everything the response owns (ust_malloc'd) and zeroes it. NULL is
 * a no-op. */
void ust_response_clear(ust_response *r);

/* Headers packed as one blob, "name\0value\0" in order: the form the event
 * log and an answers database keep them in. Pack writes into *buf (grown as
 * needed, *cap its size; the caller's to ust_free) and sets *len; 0 or
 * UST_ENOMEM. Unpack appends the blob's headers to req's (copies); 0,
 * UST_EPARSE with *err for a blob that is not such a list, UST_ENOMEM. */
int ust_headers_pack(const ust_header *headers, size_t n_headers, char **buf,
                     size_t *cap, size_t *len);
int ust_headers_unpack(const void *blob, size_t len, ust_request *req, char **err);

/* Frees everything the request owns (all fields come from ust_malloc) and
 * zeroes it; the struct itself is the caller's. NULL is a no-op. */
void ust_request_clear(ust_request *req);

/* Appends a header (copies name and value). 0 or UST_ENOMEM. */
int ust_request_add_header(ust_request *req, const char *name, const char *value);

/* Value of the first header whose name matches case-insensitively, or NULL.
 * Borrowed from req. */
const char *ust_request_header(const ust_request *req, const char *name);

/* Deep copy into *dst (zeroed first). 0 or UST_ENOMEM (dst left clear). */
int ust_request_copy(ust_request *dst, const ust_request *src);

/* The path of the target, without query string, into buf (NUL-terminated,
 * truncated to cap). */
void ust_request_path(const ust_request *req, char *buf, size_t cap);

/* The shape HTTP/1.1 requires of what goes on a request or header line,
 * one definition for every place that reads a request from outside (log
 * import) or sends a recorded one (the url kind): a method or a header name
 * is a token (RFC 9110 5.6.2), a header value holds no CR, LF or NUL (RFC
 * 9110 5.5), and the target no CR, LF, NUL, space or other control byte. A
 * request that breaks one would be read by the next server as something
 * else: a CR LF in a value ends the header, and can end the request. */

/* 1 when s[0..n) is a non-empty token, else 0. */
int ust_http_token(const char *s, size_t n);

/* NULL when a header of that name and value (lengths given, as a NUL can be
 * inside) can be sent as it is; else what is wrong, a static string ("the
 * name is not an HTTP token", "the value holds a CR, LF or NUL byte"). */
const char *ust_http_header_fault(const char *name, size_t name_len, const char *value,
                                  size_t value_len);

/* 0 when every header of h[0..n) can be sent; else UST_EPARSE with *err
 * naming the first that cannot ("headers[2] name \"Transfer-Encoding \": not
 * an HTTP token", its bytes escaped), or UST_ENOMEM. */
int ust_headers_check(const ust_header *h, size_t n, char **err);

/* ust_headers_check of req's headers, and its method a token and its target
 * free of CR, LF, NUL, space and control bytes ("method \"DELETE /admin
 * HTTP/1.1\\r\\n\": not an HTTP token"). 0, UST_EPARSE with *err, UST_ENOMEM. */
int ust_request_check(const ust_request *req, char **err);

#endif
