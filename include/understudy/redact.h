/* The config's "redact" rules: the fields and headers no report, export or
 * page may show (card numbers, e-mails), masked with "[redacted]". */
#ifndef UNDERSTUDY_REDACT_H
#define UNDERSTUDY_REDACT_H

#include <jansson.h>

/* Masks, in place, every value named by rules (JSON array of field names,
 * matched at any depth, and JSON Pointers) with "[redacted]". */
void ust_redact_json(json_t *doc, const json_t *rules);
/* 1 when rules mask the value of a request header of this name (a field
 * name rule, matched case-insensitively). */
int ust_redact_header(const json_t *rules, const char *name);

#endif
