/* Shared inside src/event: source syntax checks used by config validation,
 * and the one-parse body helpers used by derivation. */
#ifndef UST_EVENT_INTERNAL_H
#define UST_EVENT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include <understudy/hash.h>

/* "header:" prefix of a field source. */
#define UST__HEADER_PREFIX "header:"
#define UST__HEADER_PREFIX_LEN 7

/* 1 when p is a syntactically valid RFC 6901 pointer ("" or "/..." with
 * every '~' followed by '0' or '1'). */
int ust__pointer_valid(const char *p);

/* 1 when s is a valid field source: a pointer or "header:NAME" with NAME an
 * RFC 9110 token. */
int ust__source_valid(const char *s);

/* Parses a request body as the request hash sees it (jansson, flags 0).
 * *out is the document (caller decrefs) or NULL when the body is not JSON
 * (or nested deeper than jansson's limit). 0 or UST_ENOMEM. */
int ust__body_parse(const unsigned char *body, size_t len, json_t **out);

/* SHA-256 hex of the canonical JSON of v, streamed (no full text copy).
 * 0 or UST_ENOMEM. */
int ust__json_hash(const json_t *v, char hex[UST_SHA256_HEX_LEN + 1]);

#endif
