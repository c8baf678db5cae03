/* An answer's head read line by line, as libcurl hands the lines to the
 * client's header callback (http_client.c): status lines, header lines,
 * the blank line ending a head, and, after a chunked body, its trailer.
 * Kept apart from libcurl so the fuzz target (tests/fuzz/
 * fuzz_upstream_answer.c) feeds it the lines a hostile service could send. */
#ifndef UST_UTIL_ANSWER_HEAD_H
#define UST_UTIL_ANSWER_HEAD_H

#include <stddef.h>

#include <understudy/http_client.h>

/* The most header fields an answer may have (past it: UST_ELIMIT). */
#define UST__ANSWER_MAX_HEADERS 1000

typedef struct ust__answer_head {
    int in_head; /* a status line was read, not yet the blank line after it */
    int status;  /* of the last status line (0 when it names none) */
    int done;    /* the final (non-1xx) head ended: any field now is a trailer */
} ust__answer_head;

/* Takes one line (its CR LF, if any, included) into r->headers: a status
 * line starts the headers again (an interim 1xx answer's are dropped).
 * 0; UST_ENOMEM; UST_ELIMIT past UST__ANSWER_MAX_HEADERS; UST_EPARSE with
 * *why (static) when the answer is refused: a line starting "HTTP/" inside
 * a head (it would drop the headers before it), a field after the final
 * head (a trailer: a relay would make it a header), a NUL, an obsolete
 * folded line (obs-fold), a line that is not "name: value", or
 * Content-Length fields that disagree. */
int ust__answer_head_line(ust__answer_head *h, const char *line, size_t len,
                          ust_http_result *r, const char **why);

#endif
