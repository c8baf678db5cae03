#include "plugin/event_abi.h"

#include <string.h>

const char *ust__route_kind_name(const ust_route *route)
{
    if (route == NULL)
        return NULL;
    return route->kind == UST_ROUTE_API ? "api" : "webhook";
}

/* A derived field sent to plugins, into its ust_plugin_event member (the
 * field's wire name). */
#define ABI_TEXT(m, abi) pe->abi = ev->m;
#define ABI_SHA(m, abi) pe->abi = ev->m;
#define ABI_ROUTE(m, abi)                                                              \
    pe->abi##_kind = ust__route_kind_name(ev->m);                                      \
    pe->abi = ev->m ? ev->m->path : NULL;
#define ABI_AMOUNT(m, abi)                                                             \
    pe->abi = ev->m;                                                                   \
    pe->has_##abi = ev->has_##m;
#define ABI_WIRE(kind, m, abi) ABI_##kind(m, abi)
#define ABI_WIRE_END(kind, m, abi) ABI_##kind(m, abi)
#define ABI_NONE(kind, m, abi)
#define ABI(kind, m, column, wire, wire_at, export, source, since, desc)               \
    ABI_##wire_at(kind, m, wire)

void ust__plugin_event_from(const ust_event *ev, const ust_request *req,
                            ust_plugin_event *pe, ust_plugin_header *hdrs)
{
    memset(pe, 0, sizeof(*pe));
    pe->size = sizeof(*pe);
    pe->seq = ev->seq;
    pe->received_at_us = ev->received_at_us;
    UST_EVENT_FIELDS(ABI)
    pe->body = req->body;
    pe->body_len = req->body_len;
    for (size_t i = 0; i < req->n_headers; i++) {
        hdrs[i].name = req->headers[i].name;
        hdrs[i].value = req->headers[i].value;
    }
    pe->headers = hdrs;
    pe->n_headers = req->n_headers;
}
