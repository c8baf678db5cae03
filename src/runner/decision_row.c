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

static void bind_text_copy(sqlite3_stmt *st, int col, const char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, col);
}

void ust__decision_bind(sqlite3_stmt *st, int col, const ust_decision *d)
{
    if (d == NULL) {
        for (int i = 0; i < UST__DECISION_COLUMNS; i++)
            sqlite3_bind_null(st, col + i);
        return;
    }
    char *flags = flags_text(d);
    char *headers =
        d->headers ? json_dumps(d->headers, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    bind_text(st, col, ust_verdict_name(d->verdict));
    sqlite3_bind_int(st, col + 1, d->http_status);
    bind_text(st, col + 2, d->state_before);
    bind_text(st, col + 3, d->state_after);
    bind_text_copy(st, col + 4, flags);
    bind_text(st, col + 5, d->body);
    bind_text_copy(st, col + 6, headers);
    bind_text(st, col + 7, d->reason);
    bind_text(st, col + 8, d->error);
    ust_free(flags);
    ust_free(headers);
}

static int dup_col(sqlite3_stmt *st, int col, char **out)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    *out = t ? ust_strdup((const char *)t) : NULL;
    return t && *out == NULL ? UST_ENOMEM : 0;
}

int ust__decision_read(sqlite3_stmt *st, int col, const char *entity, ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    const char *verdict = (const char *)sqlite3_column_text(st, col);
    if (verdict == NULL || ust_verdict_parse(verdict, &d->verdict) != 0)
        return UST_EPARSE;
    d->http_status = sqlite3_column_int(st, col + 1);
    int rc = 0;
    if ((rc = dup_col(st, col + 2, &d->state_before)) != 0 ||
        (rc = dup_col(st, col + 3, &d->state_after)) != 0 ||
        (rc = dup_col(st, col + 5, &d->body)) != 0 ||
        (rc = dup_col(st, col + 7, &d->reason)) != 0 ||
        (rc = dup_col(st, col + 8, &d->error)) != 0)
        goto fail;
    json_error_t jerr;
    const char *flags = (const char *)sqlite3_column_text(st, col + 4);
    json_t *fa = flags ? ust_json_loads(flags, 0, &jerr) : NULL;
    if (json_array_size(fa) > 0) {
        d->flags = ust_calloc(json_array_size(fa), sizeof(char *));
        for (size_t i = 0; d->flags && i < json_array_size(fa); i++)
            d->flags[d->n_flags++] =
                ust_strdup(json_string_value(json_array_get(fa, i)));
    }
    json_decref(fa);
    const char *headers = (const char *)sqlite3_column_text(st, col + 6);
    d->headers = headers ? ust_json_loads(headers, 0, &jerr) : NULL;
    d->entity = ust_strdup(entity);
    return 0;
fail:
    ust_decision_clear(d);
    return rc;
}
