/* What a log holds: counts by route, provider and signature status, its span
 * in arrival time, and its size on disk (database and WAL). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <sys/stat.h>

static int count_by(ust_log *log, const char *column, json_t *obj, char **err)
{
    char *sql = ust_sprintf("SELECT coalesce(%s, '(none)'), count(*) FROM events"
                            " GROUP BY 1 ORDER BY 1",
                            column);
    if (sql == NULL)
        return UST_ENOMEM;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : ust__log_db_error(log, "stats", err);
    ust_free(sql);
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        if (key == NULL ||
            json_object_set_new(obj, key, json_integer(sqlite3_column_int64(st, 1))) !=
                0)
            rc = UST_ENOMEM;
    }
    /* A read that stops early is an error, never a shorter count. */
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "stats", err);
    sqlite3_finalize(st);
    return rc;
}

static json_int_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (json_int_t)st.st_size : 0;
}

static json_t *time_or_null(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    char buf[32];
    ust_time_format(sqlite3_column_int64(st, col), buf);
    return json_string(buf);
}

int ust__sqlite_stats(ust_log *log, json_t **out, char **err)
{
    *out = NULL;
    json_t *o = json_object();
    json_t *routes = json_object(), *providers = json_object(), *sigs = json_object();
    if (o == NULL || routes == NULL || providers == NULL || sigs == NULL) {
        json_decref(o), json_decref(routes), json_decref(providers), json_decref(sigs);
        return UST_ENOMEM;
    }
    json_object_set_new(o, "routes", routes);
    json_object_set_new(o, "providers", providers);
    json_object_set_new(o, "signatures", sigs);
    int rc = ust__log_exec(log, "BEGIN;", err);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(log->db,
                                      "SELECT count(*), min(seq), max(seq),"
                                      " min(received_at), max(received_at),"
                                      " (SELECT count(*) FROM prunes),"
                                      " (SELECT coalesce(sum(count), 0) FROM prunes)"
                                      " FROM events",
                                      -1, &st, NULL) != SQLITE_OK)
        rc = ust__log_db_error(log, "stats", err);
    if (rc == 0 && sqlite3_step(st) != SQLITE_ROW)
        rc = ust__log_db_error(log, "stats", err);
    if (rc == 0) {
        json_object_set_new(o, "events", json_integer(sqlite3_column_int64(st, 0)));
        json_object_set_new(o, "first_seq", json_integer(sqlite3_column_int64(st, 1)));
        json_object_set_new(o, "last_seq", json_integer(sqlite3_column_int64(st, 2)));
        json_object_set_new(o, "first_received_at", time_or_null(st, 3));
        json_object_set_new(o, "last_received_at", time_or_null(st, 4));
        json_object_set_new(o, "prunes", json_integer(sqlite3_column_int64(st, 5)));
        json_object_set_new(o, "pruned_events",
                            json_integer(sqlite3_column_int64(st, 6)));
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = count_by(log, "route", routes, err);
    if (rc == 0)
        rc = count_by(log, "provider", providers, err);
    if (rc == 0)
        rc = count_by(log, "signature", sigs, err);
    ust__log_exec(log, "COMMIT;", NULL);
    char *wal = ust_sprintf("%s-wal", log->path);
    json_object_set_new(
        o, "bytes_on_disk",
        json_integer(file_size(log->path) + (wal ? file_size(wal) : 0)));
    ust_free(wal);
    if (rc != 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}
