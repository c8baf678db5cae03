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

/* A recorded answer: production's response to a request, kept beside it in
 * the log. Everything is owned (ust_malloc). */
typedef struct ust_response {
    int status;                 /* 0: no recorded answer */
    ust_header *headers; size_t n_headers;   /* in order, as sent */
    unsigned char *body; size_t body_len;
} ust_response;
void ust_response_clear(ust_response *r);

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

#endif
