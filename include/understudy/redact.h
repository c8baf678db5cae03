/* The config's "redact" rules: the fields and headers no report, export or
 * page may show (card numbers, e-mails), masked with "[redacted]". */
#ifndef UNDERSTUDY_REDACT_H
#define UNDERSTUDY_REDACT_H

#include <jansson.h>

/* Masks, in place, every value named by rules (JSON array of field names,
 * matched at any depth, and JSON Pointers) with "[redacted]". */
void ust_redact_json(json_t *doc, const json_t *rules);
/* The same rules for value, which is what pointer names in a document (a
 * divergence's diff holds such values, apart from their bodies): 1 when
 * the rules mask the value itself or a member that holds it (a pointer rule
 * equal to pointer or to a prefix of it, a field name equal to one of its
 * tokens), for the caller to show "[redacted]" instead; else 0, what lies
 * inside value masked in place. */
int ust_redact_at(json_t *value, const char *pointer, const json_t *rules);
/* 1 when rules mask the value of a request header of this name (a field
 * name rule, matched case-insensitively). */
int ust_redact_header(const json_t *rules, const char *name);

#endif
