/* What a PostgreSQL log holds (the same object as the SQLite log's stats,
 * its streams besides), and the operations it leaves to the database's own
 * tools. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <string.h>

static int count_by(ust_log *log, const char *column, json_t *obj, char **err)
{
    char *sql = ust_sprintf("SELECT coalesce(%s, '(none)'::bytea), count(*) FROM"
                            " understudy.events GROUP BY 1 ORDER BY 1",
                            column);
    if (sql == NULL)
        return UST_ENOMEM;
    PGresult *r = ust__pg_run(log, sql, 0, NULL, NULL);
    ust_free(sql);
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

static json_t *time_or_null(PGresult *r, int col)
{
    if (PQgetisnull(r, 0, col))
        return json_null();
    char buf[32];
    ust_time_format(ust__pg_int(r, 0, col), buf);
    return json_string(buf);
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
    json_t *o = json_object();
    json_t *routes = json_object(), *providers = json_object(), *sigs = json_object(),
           *arr = json_array();
    if (o == NULL || routes == NULL || providers == NULL || sigs == NULL ||
        arr == NULL) {
        json_decref(o), json_decref(routes), json_decref(providers), json_decref(sigs),
            json_decref(arr);
        return UST_ENOMEM;
    }
    json_object_set_new(o, "routes", routes);
    json_object_set_new(o, "providers", providers);
    json_object_set_new(o, "signatures", sigs);
    json_object_set_new(o, "streams", arr);
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
        json_int_t first = PQgetisnull(r, 0, 1) ? 0 : ust__pg_int(r, 0, 1);
        json_int_t last = PQgetisnull(r, 0, 2) ? 0 : ust__pg_int(r, 0, 2);
        json_object_set_new(o, "events", json_integer(ust__pg_int(r, 0, 0)));
        json_object_set_new(o, "first_seq", json_integer(first));
        json_object_set_new(o, "last_seq", json_integer(last));
        json_object_set_new(o, "first_received_at", time_or_null(r, 3));
        json_object_set_new(o, "last_received_at", time_or_null(r, 4));
        json_object_set_new(o, "prunes", json_integer(0));
        json_object_set_new(o, "pruned_events", json_integer(0));
        json_object_set_new(
            o, "bytes_on_disk",
            json_integer(PQgetisnull(r, 0, 5) ? 0 : ust__pg_int(r, 0, 5)));
    }
    PQclear(r);
    if (rc == 0)
        rc = count_by(log, "route", routes, err);
    if (rc == 0)
        rc = count_by(log, "provider", providers, err);
    if (rc == 0)
        rc = count_by(log, "signature", sigs, err);
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
