/* The object `log stats` prints, whichever backend fills it: its members in
 * the order they print, and the three counts by column, so that SQLite and
 * PostgreSQL differ only in the queries that read them. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>

/* The columns counted, each under its member. */
static const struct {
    const char *column, *member;
} counted[] = {
    {"route", "routes"}, {"provider", "providers"}, {"signature", "signatures"}};

json_t *ust__log_stats_new(void)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    for (size_t i = 0; i < UST_ARRAY_SIZE(counted); i++)
        if (json_object_set_new(o, counted[i].member, json_object()) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

int ust__log_stats_count(ust_log *log, json_t *o, const char *table, const char *none,
                         ust__log_count_by count_by, char **err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(counted); i++) {
        char *sql = ust_sprintf("SELECT coalesce(%s, %s), count(*) FROM %s"
                                " GROUP BY 1 ORDER BY 1",
                                counted[i].column, none, table);
        if (sql == NULL)
            return UST_ENOMEM;
        rc = count_by(log, sql, json_object_get(o, counted[i].member), err);
        ust_free(sql);
    }
    return rc;
}

static json_t *time_or_null(const int64_t *us)
{
    if (us == NULL)
        return json_null();
    char buf[32];
    ust_time_format(*us, buf);
    return json_string(buf);
}

void ust__log_stats_span(json_t *o, const ust__log_span *s)
{
    json_object_set_new(o, "events", json_integer(s->events));
    json_object_set_new(o, "first_seq", json_integer(s->first_seq));
    json_object_set_new(o, "last_seq", json_integer(s->last_seq));
    json_object_set_new(o, "first_received_at",
                        time_or_null(s->has_times ? &s->first_at : NULL));
    json_object_set_new(o, "last_received_at",
                        time_or_null(s->has_times ? &s->last_at : NULL));
    json_object_set_new(o, "prunes", json_integer(s->prunes));
    json_object_set_new(o, "pruned_events", json_integer(s->pruned_events));
}
