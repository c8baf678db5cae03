/* The parts of loading an event for review (event.c puts them together). */
#ifndef UST_REPORT_EVENT_LOAD_H
#define UST_REPORT_EVENT_LOAD_H

#include "report/event.h"

/* Fills m from headers and a body, masked by rules. masked (a JSON array,
 * may be NULL) receives the text of every value the rules masked (header
 * values, body members and their leaves), so a derived field taken from one
 * can be masked too. 0 or UST_ENOMEM. */
int ust__report_message_load(ust__report_message *m, const ust_header *headers,
                             size_t n_headers, const unsigned char *body,
                             size_t body_len, const json_t *rules, json_t *masked);

/* e's derived fields from rec, each one whose text masked holds shown as
 * masked. 0 or UST_ENOMEM. */
int ust__report_derived_load(ust__report_event *e, const ust_log_record *rec,
                             const json_t *masked);

/* When the candidate flagged e (its log row self) a semantic duplicate,
 * the earlier transaction it repeats, from the log and the run, into
 * e->repeats. 0 or <0 with *err. */
int ust__report_find_repeat(ust_run *run, ust_log *log, ust__report_event *e,
                            const ust_log_record *self, char **err);

#endif
