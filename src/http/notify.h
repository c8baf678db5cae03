/* systemd notifications (notify.c): READY=1 and the watchdog timer once
 * listening, STOPPING=1 and the timer closed when the stop begins. */
#ifndef UST_HTTP_NOTIFY_H
#define UST_HTTP_NOTIFY_H

#include <uv.h>

typedef struct ust__notify ust__notify;
/* The watchdog's timer on loop, or NULL when systemd wants no pings. */
ust__notify *ust__notify_ready(uv_loop_t *loop, const char *listening);
/* Closes n's timer (n may be NULL). */
void ust__notify_stopping(ust__notify *n);

#endif
