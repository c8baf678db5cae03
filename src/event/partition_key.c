/* The partition key of an event: the first of the config's "partition_by"
 * fields the event has. Partitioned runners (replay --partition) split the
 * log by it, so the fields that may name it are the event's text fields,
 * by their column names (as `log export --derived` and docs/config.md name
 * them), generated from the one table of derived fields. */
#include <understudy/array.h>
#include <understudy/event.h>

#include <stddef.h>
#include <string.h>

#define TEXT_FIELD_TEXT(m, column) {#column, offsetof(ust_event, m)},
#define TEXT_FIELD_ROUTE(m, column)
#define TEXT_FIELD_SHA(m, column)
#define TEXT_FIELD_SIG(m, column)
#define TEXT_FIELD_AMOUNT(m, column)
#define TEXT_FIELD_CONFIG(m, column)
#define TEXT_FIELD(kind, m, column, wire, wire_at, export, source, since, desc)        \
    TEXT_FIELD_##kind(m, column)

static const struct {
    const char *column;
    size_t offset; /* of its char * in ust_event */
} text_fields[] = {UST_EVENT_FIELDS(TEXT_FIELD)};

#define TEXT_NAME_TEXT(column) ", " #column
#define TEXT_NAME_ROUTE(column)
#define TEXT_NAME_SHA(column)
#define TEXT_NAME_SIG(column)
#define TEXT_NAME_AMOUNT(column)
#define TEXT_NAME_CONFIG(column)
#define TEXT_NAME(kind, m, column, wire, wire_at, export, source, since, desc)         \
    TEXT_NAME_##kind(column)

static const char text_names[] = "" UST_EVENT_FIELDS(TEXT_NAME);

int ust_event_text_column(const char *column)
{
    for (size_t i = 0; i < UST_ARRAY_SIZE(text_fields); i++)
        if (strcmp(text_fields[i].column, column) == 0)
            return (int)i;
    return -1;
}

const char *ust_event_text_columns(void)
{
    return text_names + 2; /* past the first ", " */
}

const char *ust_event_partition_key(const ust_config *cfg, const ust_event *ev)
{
    for (size_t i = 0; i < cfg->n_partition_by; i++) {
        int at = ust_event_text_column(cfg->partition_by[i]);
        if (at < 0)
            continue; /* the config refused it: not reached */
        const char *v =
            *(char *const *)(const void *)((const char *)ev + text_fields[at].offset);
        /* An empty value is as good as none, as it is to the plugins. */
        if (v != NULL && *v != '\0')
            return v;
    }
    return NULL;
}
