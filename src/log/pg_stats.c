/* What a PostgreSQL log holds (the same object as the SQLite log's stats,
 * its streams besides), and the operations it leaves to the database's own
 * tools. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <string.h>

static int count_by(ust_log *log, const char *sql, json_t *obj, char **err)
{
    PGresult *r = ust__pg_run(log, sql, 0, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(log, r, "stats", err);
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++)
        if (json_object_setn_new(obj, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0),
                                 json_integer(ust__pg_int(r, i, 1))) != 0)
            rc = UST_ENOMEM;
    PQclear(r);
    return rc;
}

static int streams(ust_log *log, json_t *arr, char **err)
{
    PGresult *r = ust__pg_run(log,
                              "SELECT s.id, convert_to(s.label, 'UTF8'), s.opened_at,"
                              " (SELECT count(*) FROM understudy.events e"
                              "  WHERE e.stream = s.id)"
                              " FROM understudy.streams s ORDER BY s.id",
                              0, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(log, r, "stats", err);
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        char at[32];
        ust_time_format(ust__pg_int(r, i, 2), at);
        json_t *o =
            json_pack("{s:I,s:s%,s:s,s:I}", "stream", (json_int_t)ust__pg_int(r, i, 0),
                      "label", PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1),
                      "opened_at", at, "events", (json_int_t)ust__pg_int(r, i, 3));
        if (o == NULL || json_array_append_new(arr, o) != 0)
            rc = UST_ENOMEM;
    }
    PQclear(r);
    return rc;
}

int ust__pg_stats(ust_log *log, json_t **out, char **err)
{
    json_t *o = ust__log_stats_new();
    if (o == NULL || json_object_set_new(o, "streams", json_array()) != 0) {
        json_decref(o);
        return UST_ENOMEM;
    }
    json_t *arr = json_object_get(o, "streams");
    /* One snapshot, as SQLite's stats read one. */
    int rc = ust__pg_exec(log, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                          "stats", err);
    PGresult *r = NULL;
    if (rc == 0) {
        r = ust__pg_run(log,
                        "SELECT (SELECT count(*) FROM understudy.events),"
                        " (SELECT min(first_seq) FROM understudy.commits),"
                        " (SELECT max(last_seq) FROM understudy.commits),"
                        " min(received_at), max(received_at),"
                        " (SELECT sum(pg_total_relation_size(c.oid))::bigint FROM"
                        "  pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                        "  WHERE n.nspname = 'understudy' AND c.relkind = 'r')"
                        " FROM understudy.events",
                        0, NULL, NULL);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = ust__pg_error(log, r, "stats", err);
            r = NULL;
        }
    }
    if (rc == 0) {
        /* Nothing is pruned: a PostgreSQL log is append-only. */
        ust__log_span span = {
            .events = ust__pg_int(r, 0, 0),
            .first_seq = PQgetisnull(r, 0, 1) ? 0 : ust__pg_int(r, 0, 1),
            .last_seq = PQgetisnull(r, 0, 2) ? 0 : ust__pg_int(r, 0, 2),
            .has_times = !PQgetisnull(r, 0, 3)};
        if (span.has_times) {
            span.first_at = ust__pg_int(r, 0, 3);
            span.last_at = ust__pg_int(r, 0, 4);
        }
        ust__log_stats_span(o, &span);
        json_object_set_new(
            o, "bytes_on_disk",
            json_integer(PQgetisnull(r, 0, 5) ? 0 : ust__pg_int(r, 0, 5)));
    }
    PQclear(r);
    if (rc == 0)
        rc = ust__log_stats_count(log, o, "understudy.events", "'(none)'::bytea",
                                  count_by, err);
    if (rc == 0)
        rc = streams(log, arr, err);
    ust__pg_exec(log, "COMMIT", "stats", NULL);
    if (rc != 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

int ust__pg_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                          int64_t now_us, int64_t *n_pruned, char **err)
{
    (void)before_us, (void)max_seq, (void)now_us, (void)n_pruned;
    return ust_errf(err, UST_EINVAL,
                    "%s: a PostgreSQL log is not pruned by understudy (its tables are"
                    " append-only, enforced by the database): drop \"retention\" from"
                    " the config, and keep its size with the database's own tools"
                    " (docs/log.md)",
                    log->path);
}

int ust__pg_backup(ust_log *log, const char *out_path, char **err)
{
    (void)out_path;
    return ust_errf(err, UST_EINVAL,
                    "%s: log backup copies a SQLite log; back a PostgreSQL log up with"
                    " pg_dump --schema=understudy (or your database's backups), or"
                    " copy it into a SQLite file with log export | log import"
                    " (docs/log.md)",
                    log->path);
}
