#include "http/say.h"

#include <understudy/alloc.h>

#include <stdarg.h>
#include <stdio.h>

void ust__say(const ust__logger *l, int level, const char *fmt, ...)
{
    if (l == NULL || l->fn == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *whole = ust_vsprintf(fmt, ap);
    va_end(ap);
    if (whole != NULL) {
        l->fn(l->ctx, level, whole);
        ust_free(whole);
        return;
    }
    /* Memory is short: the message still reaches the log, cut to what the
     * stack holds. */
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->fn(l->ctx, level, msg);
}
