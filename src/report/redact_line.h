/* A divergence line as a report shows it: masked with the run's redact
 * rules, wherever the line carries a value they name. */
#ifndef UST_REPORT_REDACT_LINE_H
#define UST_REPORT_REDACT_LINE_H

#include <jansson.h>

/* Masks, in place, line's two decisions (each "body", and each header of
 * "headers" a rule names) and its "diff" (each side's value of a "body..."
 * entry as ust_redact_at masks it; both values of a "header:NAME" entry a
 * rule names). A side the diff leaves out stays out. */
void ust__report_redact_line(json_t *line, const json_t *rules);
/* The same for a line's "diff" alone (a class page reads no more). */
void ust__report_redact_diff(json_t *diff, const json_t *rules);

#endif
