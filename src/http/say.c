#include "http/say.h"

#include <stdarg.h>
#include <stdio.h>

void ust__say(const ust__logger *l, int level, const char *fmt, ...)
{
    if (l == NULL || l->fn == NULL)
        return;
    /* On the stack: a message must reach the log when memory is short. */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->fn(l->ctx, level, msg);
}
