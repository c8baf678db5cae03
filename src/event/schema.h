/* The config's validation toolkit and its rows: the key path an error
 * names, the type checks, the nearest-key suggestion, and a section as a
 * table of rows (key, type, required, default, bounds, where it lands, a
 * line of docs) from which a level's parsing, its unknown-key check, its
 * "known here" list, `understudy config doc` and `config show` all come. */
#ifndef UST_EVENT_SCHEMA_H
#define UST_EVENT_SCHEMA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define UST__PATH_CAP 512

/* Validation context: the key path is a stack, so an error reports exactly
 * where it happened without every caller building strings. */
typedef struct ust__vctx {
    const char *label;
    char **err;
    char path[UST__PATH_CAP];
    size_t len;
} ust__vctx;

/* Each push returns the mark ust__pop goes back to. */
size_t ust__push_key(ust__vctx *c, const char *key);
size_t ust__push_index(ust__vctx *c, size_t i);
void ust__pop(ust__vctx *c, size_t mark);
/* UST_ECONFIG: "LABEL: PATH: expected WHAT" ("top level" for no path). */
int ust__bad(const ust__vctx *c, const char *what);
int ust__nomem(const ust__vctx *c);

/* What a key holds, and so how its value is checked and where it lands. */
typedef enum ust__key_type {
    UST__KEY_STRING,   /* char *, checked by check; what names the expectation */
    UST__KEY_POSINT,   /* int64_t, > 0, at most max when max > 0 */
    UST__KEY_SIZE,     /* the same into a size_t */
    UST__KEY_BOOL,     /* int, true or false */
    UST__KEY_DURATION, /* int64_t microseconds from "8d", "200ms"... */
    UST__KEY_STRINGS,  /* char ** NULL-terminated, its count at off_n */
    UST__KEY_PARSED,   /* a compound value: parse reads it */
} ust__key_type;

typedef struct ust__key ust__key;

/* A compound value's reader: obj is the level holding the key (the row's
 * key not yet on the path), base the struct its rows land in. */
typedef int (*ust__parse_fn)(ust__vctx *c, json_t *obj, void *base);

/* One config key. Offsets are into the struct its level lands in. */
struct ust__key {
    const char *key;
    ust__key_type type;
    int required;
    int64_t def; /* POSINT, SIZE, BOOL, DURATION (µs): when absent */
    /* BOOL: the default is the value the struct already holds (set by the
     * level's code, as the plugins' isolate differs by side). */
    int preset;
    int64_t max;          /* POSINT, SIZE: at most this (0: no bound) */
    const char *max_what; /* its message, "at most 64" */
    size_t off;           /* where the value lands */
    size_t off_n;         /* STRINGS: where its count lands, or SIZE_MAX */
    int (*check)(const char *s);
    const char *what;      /* the expectation of a bad value */
    const char *what_item; /* STRINGS: of a bad item */
    const char *missing;   /* required and absent, when not what */
    int need_items;        /* STRINGS: an empty array is refused */
    ust__parse_fn parse;   /* PARSED; NULL: read by the level's own code */
    /* Docs: the type and default as the table shows them (derived from
     * type and def when NULL), and one line of what it does. A secret's
     * key (an env name) says so, so that config show prints the name. */
    const char *doc_type, *doc_default, *doc;
};

/* A level: its name as the doc's heading names it, and its rows. */
typedef struct ust__section {
    const char *name;
    const ust__key *keys;
    size_t n;
    const char *doc_head; /* the last column's heading; NULL: what it does */
} ust__section;

#define UST__SECTION(name, rows)                                                       \
    {                                                                                  \
        (name), (rows), sizeof(rows) / sizeof((rows)[0]), NULL                         \
    }

/* Every key of obj must be one of the level's rows: an unknown key is a
 * mistake, never an extension. The message names the key path and the
 * nearest known key, or else lists the keys this level knows. */
int ust__check_keys(ust__vctx *c, json_t *obj, const ust__section *s);
/* A level under key of parent (absent: its defaults), read from its rows
 * into base: its keys checked, then each row in order. */
int ust__take_section(ust__vctx *c, json_t *parent, const char *key,
                      const ust__section *s, void *base);
/* The same, but nothing at all when key is absent (no defaults): for a
 * block whose rows apply only when it is given. */
int ust__take_given_section(ust__vctx *c, json_t *parent, const char *key,
                            const ust__section *s, void *base);
/* The row named key, or NULL. */
const ust__key *ust__row(const ust__section *s, const char *key);
/* Reads every row of s from obj (NULL: every default) into base, in row
 * order. */
int ust__take_rows(ust__vctx *c, json_t *obj, const ust__section *s, void *base);
/* One row, for a level that must read a key before the others. */
int ust__take_row(ust__vctx *c, json_t *obj, const ust__key *k, void *base);

/* obj.key when present must be an object; *out NULL when absent. */
int ust__take_object(ust__vctx *c, json_t *obj, const char *key, json_t **out);
/* An optional block: nothing pushed when absent (0, *out NULL); present,
 * key is pushed (*mark pops it) and its keys must be among s's rows. */
int ust__open_block(ust__vctx *c, json_t *obj, const char *key, const ust__section *s,
                    json_t **out, size_t *mark);
int ust__take_string(ust__vctx *c, json_t *obj, const char *key, int required,
                     const char *what, int (*check)(const char *), char **out);
int ust__take_string_array(ust__vctx *c, json_t *obj, const char *key, int need_items,
                           const char *what_array, const char *what_item,
                           int (*check)(const char *), char ***out, size_t *n_out);

int ust__valid_env_name(const char *s);
int ust__valid_header_name(const char *s);
int ust__nonempty(const char *s);

/* Appends text to *buf (NULL: empty), grown with ust_realloc. 0 or
 * UST_ENOMEM. */
int ust__append(char **buf, const char *text);
/* The level's table in Markdown, as docs/config.md shows it, appended to
 * *buf (grown with ust_realloc). 0 or UST_ENOMEM. */
int ust__section_doc(const ust__section *s, char **buf);
/* The level's effective values from base as a JSON object (a new
 * reference), each key as the file spells it; NULL on no memory. */
json_t *ust__section_show(const ust__section *s, const void *base);

#endif
