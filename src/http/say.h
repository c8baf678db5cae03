/* Messages of the recorder's threads, through the caller's log callback
 * (ust_serve_opts.log): the library never prints. */
#ifndef UST_HTTP_SAY_H
#define UST_HTTP_SAY_H

#include <understudy/serve.h>

typedef struct ust__logger {
    ust_log_fn fn; /* NULL: messages go nowhere */
    void *ctx;
} ust__logger;

/* Formats one message (no trailing newline) and hands it to l->fn. */
void ust__say(const ust__logger *l, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
