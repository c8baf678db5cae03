#include "runner/event_view.h"

#include <string.h>

int ust__event_view(const ust_config *cfg, const ust_log_record *rec, ust_event *ev)
{
    if (strcmp(rec->config_hash, cfg->hash) != 0)
        return 0;
    memset(ev, 0, sizeof(*ev));
    ev->seq = rec->seq;
    ev->received_at_us = rec->req.received_at_us;
    ev->route = rec->route ? ust_config_route(cfg, rec->route) : NULL;
    ev->provider = rec->provider;
    ev->event_id = rec->event_id;
    ev->event_type = rec->event_type;
    ev->transaction_id = rec->transaction_id;
    ev->target_status = rec->target_status;
    ev->currency = rec->currency;
    ev->intent = rec->intent;
    ev->idem_key = rec->idem_key;
    ev->tenant = rec->tenant;
    ev->identity = rec->identity;
    ev->amount = rec->amount;
    ev->has_amount = rec->has_amount;
    ev->sig = rec->sig;
    memcpy(ev->request_sha256, rec->request_sha256, sizeof(ev->request_sha256));
    return 1;
}
