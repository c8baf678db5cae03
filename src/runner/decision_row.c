#include "runner/decision_row.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

/* JSON text of the flags, NULL when there are none (the common case). */
static char *flags_text(const ust_decision *d)
{
    if (d->n_flags == 0)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_flags; i++)
        json_array_append_new(a, json_string(d->flags[i]));
    char *t = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return t;
}

/* The text must outlive the statement's next step (SQLITE_STATIC). */
static void bind_text(sqlite3_stmt *st, int col, const char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

/* Binds a copy of s (ust_free()'d here). */
static void bind_text_owned(sqlite3_stmt *st, int col, char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, col);
    ust_free(s);
}

/* In the plugin's order, as the divergence line writes them: read back
 * (replay --legacy-from), a decision writes the same line again. */
static char *headers_text(const json_t *headers)
{
    return headers ? json_dumps(headers, JSON_COMPACT) : NULL;
}

/* Binds a decision field to the next column (c). */
#define BIND_VERDICT(m) bind_text(st, c++, ust_verdict_name(d->m));
#define BIND_STATUS(m) sqlite3_bind_int(st, c++, d->m);
#define BIND_TEXT(m) bind_text(st, c++, d->m);
#define BIND_ENTITY(m)
#define BIND_FLAGS(m) bind_text_owned(st, c++, flags_text(d));
#define BIND_BODY(m) bind_text(st, c++, d->m);
#define BIND_HEADERS(m) bind_text_owned(st, c++, headers_text(d->m));
#define BIND_REASON(m) bind_text(st, c++, d->m);
#define BIND_ERROR(m) bind_text(st, c++, d->m);
#define BIND(kind, m, column, wire, abi, divergence, div_at) BIND_##kind(m)

void ust__decision_bind(sqlite3_stmt *st, int col, const ust_decision *d)
{
    if (d == NULL) {
        for (int i = 0; i < UST__DECISION_COLUMNS; i++)
            sqlite3_bind_null(st, col + i);
        return;
    }
    int c = col;
    UST_DECISION_FIELDS(BIND)
}

static int dup_col(sqlite3_stmt *st, int col, char **out)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    *out = t ? ust_strdup((const char *)t) : NULL;
    return t && *out == NULL ? UST_ENOMEM : 0;
}

/* The flags from their column's JSON (none when NULL). */
static void read_flags(sqlite3_stmt *st, int col, char ***flags, size_t *n)
{
    json_error_t jerr;
    const char *text = (const char *)sqlite3_column_text(st, col);
    json_t *fa = text ? ust_json_loads(text, 0, &jerr) : NULL;
    if (json_array_size(fa) > 0) {
        *flags = ust_calloc(json_array_size(fa), sizeof(char *));
        for (size_t i = 0; *flags && i < json_array_size(fa); i++)
            (*flags)[(*n)++] = ust_strdup(json_string_value(json_array_get(fa, i)));
    }
    json_decref(fa);
}

static json_t *read_headers(sqlite3_stmt *st, int col)
{
    json_error_t jerr;
    const char *text = (const char *)sqlite3_column_text(st, col);
    return text ? ust_json_loads(text, 0, &jerr) : NULL;
}

/* Reads a decision field from the next column (c); a failure goes to fail
 * with rc. */
#define READ_WITH(call)                                                                \
    if ((rc = (call)) != 0)                                                            \
        goto fail;
#define READ_VERDICT(m)                                                                \
    {                                                                                  \
        const char *name = (const char *)sqlite3_column_text(st, c++);                 \
        READ_WITH(name == NULL || ust_verdict_parse(name, &d->m) != 0 ? UST_EPARSE     \
                                                                      : 0)             \
    }
#define READ_STATUS(m) d->m = sqlite3_column_int(st, c++);
#define READ_TEXT(m) READ_WITH(dup_col(st, c++, &d->m))
#define READ_ENTITY(m) d->m = ust_strdup(entity);
#define READ_FLAGS(m) read_flags(st, c++, &d->m, &d->n_##m);
#define READ_BODY(m) READ_WITH(dup_col(st, c++, &d->m))
#define READ_HEADERS(m) d->m = read_headers(st, c++);
#define READ_REASON(m) READ_WITH(dup_col(st, c++, &d->m))
#define READ_ERROR(m) READ_WITH(dup_col(st, c++, &d->m))
#define READ(kind, m, column, wire, abi, divergence, div_at) READ_##kind(m)

int ust__decision_read(sqlite3_stmt *st, int col, const char *entity, ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    int rc = 0, c = col;
    UST_DECISION_FIELDS(READ)
    return 0;
fail:
    ust_decision_clear(d);
    return rc;
}
