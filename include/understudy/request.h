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

#endif
