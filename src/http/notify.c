/* systemd's service notifications, for a unit with Type=notify: READY=1
 * once the recorder listens with its plugins started, STOPPING=1 when it
 * begins to stop, and WATCHDOG=1 at half the unit's WatchdogSec. The pings
 * come from a timer on the event loop, so a loop that is stuck stops them
 * and systemd restarts the service. Without NOTIFY_SOCKET (not run by
 * systemd) every call here does nothing. */
#include "http/notify.h"

#include <understudy/alloc.h>

#include <stdio.h>
#include <systemd/sd-daemon.h>

struct ust__notify {
    uv_timer_t timer;
};

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    sd_notify(0, "WATCHDOG=1");
}

static void on_timer_closed(uv_handle_t *h)
{
    ust_free(h->data);
}

ust__notify *ust__notify_ready(uv_loop_t *loop, const char *listening)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "READY=1\nSTATUS=recording on %s", listening);
    /* A failed notification is systemd's to report (the unit times out):
     * the recorder itself works either way. */
    sd_notify(0, msg);
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return NULL;
    ust__notify *n = ust_calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL; /* no pings: systemd restarts us, which is what it is for */
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    uint64_t ms = usec / 2000 > 0 ? usec / 2000 : 1;
    uv_timer_start(&n->timer, on_watchdog, 0, ms);
    return n;
}

void ust__notify_stopping(ust__notify *n)
{
    sd_notify(0, "STOPPING=1");
    /* The stop waits on the loop thread for the writer and the runner;
     * systemd times that with TimeoutStopSec, not the watchdog. */
    if (n != NULL)
        uv_close((uv_handle_t *)&n->timer, on_timer_closed);
}
