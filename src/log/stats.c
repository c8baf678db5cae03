/* What a log holds: counts by route, provider and signature status, its span
 * in arrival time, and its size on disk (database and WAL). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <sys/stat.h>

static int count_by(ust_log *log, const char *sql, json_t *obj, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : ust__log_db_error(log, "stats", err);
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

int ust__sqlite_stats(ust_log *log, json_t **out, char **err)
{
    *out = NULL;
    json_t *o = ust__log_stats_new();
    if (o == NULL)
        return UST_ENOMEM;
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
        ust__log_span span = {.events = sqlite3_column_int64(st, 0),
                              .first_seq = sqlite3_column_int64(st, 1),
                              .last_seq = sqlite3_column_int64(st, 2),
                              .first_at = sqlite3_column_int64(st, 3),
                              .last_at = sqlite3_column_int64(st, 4),
                              .has_times = sqlite3_column_type(st, 3) != SQLITE_NULL,
                              .prunes = sqlite3_column_int64(st, 5),
                              .pruned_events = sqlite3_column_int64(st, 6)};
        ust__log_stats_span(o, &span);
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = ust__log_stats_count(log, o, "events", "'(none)'", count_by, err);
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
