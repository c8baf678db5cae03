/* The canonical event of a log row, without parsing the body again. */
#ifndef UST_EVENT_VIEW_H
#define UST_EVENT_VIEW_H

#include <understudy/event.h>
#include <understudy/log.h>

/* When rec was derived under cfg (same config hash), fills *ev with pointers
 * into rec (borrowed: do not ust_event_clear it) and returns 1. Otherwise
 * returns 0 and the caller derives the event from rec->req. */
int ust__event_view(const ust_config *cfg, const ust_log_record *rec, ust_event *ev);

#endif
