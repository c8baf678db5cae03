#include <understudy/runner.h>

#include <string.h>

/* A derived field of the event, borrowed from the row. */
#define VIEW_TEXT(m) ev->m = rec->m;
#define VIEW_ROUTE(m) ev->m = rec->m ? ust_config_route(cfg, rec->m) : NULL;
#define VIEW_SHA(m) memcpy(ev->m, rec->m, sizeof(ev->m));
#define VIEW_SIG(m) ev->m = rec->m;
#define VIEW_AMOUNT(m)                                                                 \
    ev->m = rec->m;                                                                    \
    ev->has_##m = rec->has_##m;
#define VIEW_CONFIG(m) /* the row's, compared above */
#define VIEW(kind, m, column, wire, wire_at, export, source, since, desc) VIEW_##kind(m)

int ust_event_view(const ust_config *cfg, const ust_log_record *rec, ust_event *ev)
{
    if (strcmp(rec->config_hash, cfg->hash) != 0)
        return 0;
    memset(ev, 0, sizeof(*ev));
    ev->seq = rec->seq;
    ev->received_at_us = rec->req.received_at_us;
    UST_EVENT_FIELDS(VIEW)
    return 1;
}
