/* Writing outside text into HTML: every string that came from outside
 * (payloads, headers, plugin output, class names) goes through these. */
#ifndef UST_REPORT_HTML_ESCAPE_H
#define UST_REPORT_HTML_ESCAPE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* By byte, the entity that replaces it in HTML text and attributes. */
extern const char *const ust__html_entity[256];

void ust__html_esc(FILE *f, const char *s);
/* v as indented JSON text, escaped ("null" for NULL). */
void ust__html_json(FILE *f, const json_t *v);
/* A time in microseconds as ISO 8601 UTC. */
void ust__html_time(FILE *f, int64_t us);

#endif
