/* The docs' tables of the event's fields, written from UST_EVENT_FIELDS
 * (event_fields.h), each row's desc its meaning: what `log export
 * --derived` adds (docs/interchange.md) and the event's fields on the
 * child protocol's wire, in the order they are sent (protocol.md).
 * `understudy config doc` prints them with the config's tables, so that a
 * new field's docs are its row, regenerated. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/event_fields.h>

#include "event/config_internal.h"

#include <string.h>

enum { AT_WIRE, AT_WIRE_END, AT_NONE };

typedef struct field_doc {
    const char *kind, *column, *wire, *desc;
    int wire_at, export, fields;
} field_doc;

#define AT_OF_WIRE AT_WIRE
#define AT_OF_WIRE_END AT_WIRE_END
#define AT_OF_NONE AT_NONE
#define EXPORT_OF_EXPORT 1
#define EXPORT_OF_NO_EXPORT 0
#define FIELDS_OF_FIELDS 1
#define FIELDS_OF_DERIVED 0
#define FIELD_DOC(kind, m, column, wire, wire_at, export, source, since, desc)         \
    {#kind,                                                                            \
     #column,                                                                          \
     #wire,                                                                            \
     desc,                                                                             \
     AT_OF_##wire_at,                                                                  \
     EXPORT_OF_##export,                                                               \
     FIELDS_OF_##source},
static const field_doc fields[] = {UST_EVENT_FIELDS(FIELD_DOC)};

/* Appends the line and frees it; UST_ENOMEM when it could not be made. */
static int add(char **buf, char *line)
{
    int rc = line != NULL ? ust__append(buf, line) : UST_ENOMEM;
    ust_free(line);
    return rc;
}

static int export_table(char **buf)
{
    int rc = ust__append(buf, "| field | meaning |\n| --- | --- |\n");
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(fields); i++)
        if (fields[i].export)
            rc = add(buf,
                     ust_sprintf("| `%s` | %s |\n", fields[i].column, fields[i].desc));
    return rc;
}

/* The type a kind has on the wire (wire.c's encoding of it). */
static const char *wire_type(const char *kind)
{
    if (strcmp(kind, "AMOUNT") == 0)
        return "integer";
    if (strcmp(kind, "SHA") == 0)
        return "string, 64 hex digits";
    return "string";
}

static int wire_row(char **buf, const field_doc *f)
{
    int rc = 0;
    if (strcmp(f->kind, "ROUTE") == 0) /* sent as two keys */
        rc = ust__append(buf, "| `route_kind` | `\"webhook\"` or `\"api\"` | "
                              "The route's `kind`. |\n");
    if (rc == 0 && f->fields)
        rc = add(buf, ust_sprintf("| `%s` | %s | %s From the route's `fields.%s`. |\n",
                                  f->wire, wire_type(f->kind), f->desc, f->column));
    else if (rc == 0)
        rc = add(buf, ust_sprintf("| `%s` | %s | %s |\n", f->wire, wire_type(f->kind),
                                  f->desc));
    return rc;
}

static int wire_table(char **buf)
{
    int rc = ust__append(buf, "| name on the wire | type | meaning |\n|---|---|---|\n");
    for (int at = AT_WIRE; at <= AT_WIRE_END; at++)
        for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(fields); i++)
            if (fields[i].wire_at == at)
                rc = wire_row(buf, &fields[i]);
    return rc;
}

const ust__doc_table ust__fields_doc[] = {
    {"event fields: log export --derived", export_table},
    {"event fields: protocol event", wire_table},
};
const size_t ust__n_fields_doc = UST_ARRAY_SIZE(ust__fields_doc);
