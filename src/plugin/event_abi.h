/* The canonical event as the plugin ABI's ust_plugin_event (plugin.h, a
 * binary contract), generated from UST_EVENT_FIELDS (event.h). */
#ifndef UST_PLUGIN_EVENT_ABI_H
#define UST_PLUGIN_EVENT_ABI_H

#include <understudy/event.h>
#include <understudy/plugin.h>
#include <understudy/request.h>

/* "webhook" or "api", as the protocol and the ABI name a route's kind;
 * NULL for no route. */
const char *ust__route_kind_name(const ust_route *route);

/* Fills *pe from ev and req (everything borrowed from them, and the header
 * pairs from hdrs, which has room for req->n_headers). */
void ust__plugin_event_from(const ust_event *ev, const ust_request *req,
                            ust_plugin_event *pe, ust_plugin_header *hdrs);

#endif
