/* A JSON text writer: values appended straight to a growing buffer, with no
 * tree in between. For the hot paths that only ever produce JSON (the plugin
 * protocol's messages), where building a jansson tree to dump it costs
 * several times the writing. Parsing stays jansson's. */
#ifndef UNDERSTUDY_JSONW_H
#define UNDERSTUDY_JSONW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ust_jsonw {
    char *buf; /* NUL-terminated text so far (ust_malloc) */
    size_t len, cap;
    int comma; /* a value was written at this level: the next needs a comma */
    int error; /* 0, UST_ENOMEM, or UST_EPARSE for a string that is not UTF-8 */
} ust_jsonw;

/* Zero-initialize, or reset to write again into the same buffer. */
void ust_jsonw_reset(ust_jsonw *w);
void ust_jsonw_free(ust_jsonw *w);

void ust_jsonw_object(ust_jsonw *w); /* { */
void ust_jsonw_array(ust_jsonw *w);  /* [ */
void ust_jsonw_end_object(ust_jsonw *w);
void ust_jsonw_end_array(ust_jsonw *w);
/* An object member's name. */
void ust_jsonw_key(ust_jsonw *w, const char *name);
/* A string; NULL writes null. The bytes must be UTF-8 (else w->error). */
void ust_jsonw_string(ust_jsonw *w, const char *s);
void ust_jsonw_stringn(ust_jsonw *w, const char *s, size_t n);
void ust_jsonw_int(ust_jsonw *w, int64_t v);
void ust_jsonw_bool(ust_jsonw *w, int v);
void ust_jsonw_null(ust_jsonw *w);
/* A member: its name, then the value. */
void ust_jsonw_member_string(ust_jsonw *w, const char *name, const char *s);
void ust_jsonw_member_int(ust_jsonw *w, const char *name, int64_t v);
/* An array of n strings. */
void ust_jsonw_strings(ust_jsonw *w, char *const *strs, size_t n);
/* A jansson value, dumped in place (compact, its key order kept). */
void ust_jsonw_value(ust_jsonw *w, const json_t *v);
/* Text that is JSON already (a value), as it is. */
void ust_jsonw_raw(ust_jsonw *w, const char *json, size_t n);
/* Bytes appended as they are, no comma before them: the buffer for a
 * writer that frames its own text (ust_jsonl_write's out). */
void ust_jsonw_append(ust_jsonw *w, const char *s, size_t n);

/* s as a JSON string through out (jansson's json_dump_callback_t): quotes,
 * the escapes RFC 8259 requires (the quote, the backslash, the controls, as
 * jansson writes them), everything else as it is. 0, or -1 when out fails. */
int ust_json_write_string(const char *s, size_t n,
                          int (*out)(const char *, size_t, void *), void *data);

#endif
