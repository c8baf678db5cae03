/* One HTTP/1.1 request read off a connection, under the config's limits:
 * the server's http-parser callbacks and request assembly, apart from the
 * sockets so the fuzz target (tests/fuzz/fuzz_http_request.c) runs exactly
 * this code. */
#ifndef UST_HTTP_REQUEST_PARSE_H
#define UST_HTTP_REQUEST_PARSE_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/config.h>
#include <understudy/request.h>

#define UST__MAX_TARGET 8192
#define UST__MAX_HEADER_BYTES 32768

struct ust__reqparse;

/* What the owner does at the steps of a request; each returns 0, or
 * ust__reqparse_stop(...) to refuse it. Any may be NULL. */
typedef struct ust__reqparse_ops {
    int (*begin)(struct ust__reqparse *rp);
    /* Headers in and within limits, and the client waits for "100 Continue". */
    int (*expect_continue)(struct ust__reqparse *rp);
    /* The whole request is in rp->req (target included): take it with
     * ust__reqparse_take or leave it to be cleared at the next begin. */
    int (*complete)(struct ust__reqparse *rp);
} ust__reqparse_ops;

typedef struct ust__reqparse {
    http_parser parser;
    const ust_config *cfg;
    const ust__reqparse_ops *ops;
    void *data; /* the owner's */
    ust_request req;
    size_t header_bytes, body_cap, headers_cap;
    char *field, *value;
    size_t field_len, value_len, target_len;
    int in_value;
    int in_message; /* between the first byte of a request and its end */
    int refuse;     /* status to answer when the parser stops, 0 = malformed (400) */
    const char *refuse_why;
    /* A line feed between a header's name or value and more of its value
     * is an obs-fold continuation: where the last name or value piece of
     * the current buffer ended, and whether a line feed came after it. */
    const char *buf, *last_end;
    int nl_since;
    /* The last feed: how many of its bytes were parsed (all of them unless
     * paused), and whether ust__reqparse_pause stopped it. */
    size_t used;
    int paused;
} ust__reqparse;

void ust__reqparse_init(ust__reqparse *rp, const ust_config *cfg,
                        const ust__reqparse_ops *ops, void *data);
/* Frees what a request in progress holds. */
void ust__reqparse_clear(ust__reqparse *rp);

/* Parses n more bytes. 0, or the HTTP status the request is refused with
 * (400 malformed, 413, 417, 431, 503) and *why a static description; after
 * a refusal nothing more may be fed. */
int ust__reqparse_feed(ust__reqparse *rp, const char *buf, size_t n, const char **why);

/* From the complete callback: this feed stops after the request; the
 * bytes after it (rp->used on) are the owner's to feed again later. */
void ust__reqparse_pause(ust__reqparse *rp);

/* Stops the parser from a callback: the request gets status and why. */
int ust__reqparse_stop(ust__reqparse *rp, int status, const char *why);

/* Moves the completed request into *out with its method, remote (copied)
 * and arrival time (now); rp->req is left empty. 0 or UST_ENOMEM. */
int ust__reqparse_take(ust__reqparse *rp, const char *remote, int64_t now_us,
                       ust_request *out);

#endif
