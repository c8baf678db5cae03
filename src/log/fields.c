/* The derived fields as the log stores them, one descriptor row per row of
 * UST_EVENT_FIELDS (event_fields.h), and what a field's format ("since")
 * derives for both backends: the format written, the ALTER TABLE adding a
 * later field's column to an older log, the select reading NULL in its
 * place from an older log opened read-only. Its framing is chain.c's. */
#include "log/log_internal.h"

#include <understudy/alloc.h>

#include <string.h>

/* A field later than the log's own formats is missing from every older
 * row, so its column must take NULL: a TEXT or an AMOUNT. */
#define LATE_KIND_TEXT 1
#define LATE_KIND_AMOUNT 1
#define LATE_KIND_ROUTE 0
#define LATE_KIND_SHA 0
#define LATE_KIND_SIG 0
#define LATE_KIND_CONFIG 0
#define LATE_OK(kind, m, column, wire, wire_at, export, source, since, desc)           \
    _Static_assert(since <= UST__LOG_FORMAT_BASE || LATE_KIND_##kind,                  \
                   #column ": a field added later must be a TEXT or an AMOUNT");
UST_EVENT_FIELDS(LATE_OK)

#define DESCRIPTOR(kind, m, column, wire, wire_at, export, source, since, desc)        \
    {#column, UST__LOG_SQL_##kind, UST__LOG_PG_##kind, since},
const ust__log_field ust__log_fields[UST__LOG_N_FIELDS] = {
    UST_EVENT_FIELDS(DESCRIPTOR)};

int ust__log_format(void)
{
    int format = UST__LOG_FORMAT_BASE;
    for (size_t i = 0; i < UST__LOG_N_FIELDS; i++)
        if (ust__log_fields[i].since > format)
            format = ust__log_fields[i].since;
    return format;
}

void ust__log_fields_probe(unsigned char present[UST__LOG_N_FIELDS],
                           int (*has_column)(void *ctx, const char *column), void *ctx)
{
    for (size_t i = 0; i < UST__LOG_N_FIELDS; i++)
        present[i] =
            ust__log_fields[i].since <= 1 || has_column(ctx, ust__log_fields[i].column);
}

/* The pieces joined: each field's piece (as column, or NULL when missing)
 * one after the other. */
static char *join(const unsigned char present[UST__LOG_N_FIELDS],
                  char *(*piece)(const ust__log_field *f, int present, const void *arg),
                  const void *arg)
{
    char *out = ust_strdup("");
    for (size_t i = 0; out != NULL && i < UST__LOG_N_FIELDS; i++) {
        char *p = piece(&ust__log_fields[i], present[i], arg);
        char *joined = p != NULL ? ust_sprintf("%s%s", out, p) : NULL;
        ust_free(p);
        ust_free(out);
        out = joined;
    }
    return out;
}

static char *select_piece(const ust__log_field *f, int present, const void *prefix)
{
    return present ? ust_sprintf("%s%s, ", (const char *)prefix, f->column)
                   : ust_strdup("NULL, ");
}

char *ust__log_fields_select(const unsigned char present[UST__LOG_N_FIELDS],
                             const char *prefix)
{
    return join(present, select_piece, prefix);
}

typedef struct alter_arg {
    const char *table;
    int pg;
} alter_arg;

static char *alter_piece(const ust__log_field *f, int present, const void *arg)
{
    const alter_arg *a = arg;
    if (present)
        return ust_strdup("");
    return ust_sprintf("ALTER TABLE %s ADD COLUMN %s %s;", a->table, f->column,
                       a->pg ? f->pg_type : f->sqlite_type);
}

char *ust__log_fields_alter(const unsigned char present[UST__LOG_N_FIELDS],
                            const char *table, int pg)
{
    alter_arg a = {table, pg};
    return join(present, alter_piece, &a);
}
