/* Reading chosen rows: the events a report names by seq, and the rows
 * before one, newest first (the report's search for what an event
 * repeats). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

int ust__sqlite_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                          int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                          char **err)
{
    char *sql = ust_sprintf("%s WHERE seq = ?1", ust__log_select(log));
    sqlite3_stmt *st = NULL;
    if (sql == NULL || sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) != SQLITE_OK) {
        ust_free(sql);
        return sql == NULL ? UST_ENOMEM : ust__log_db_error(log, "read events", err);
    }
    ust_free(sql);
    int rc = 0;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    /* One statement, bound again for each seq: a story reads a row per
     * event, and preparing the select each time would cost more than the
     * read. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, seqs[i]);
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            continue;
        if (step != SQLITE_ROW) {
            rc = ust__log_db_error(log, "read events", err);
            break;
        }
        rc = ust__log_row_decode(st, &rec, NULL, err);
        /* The row is copied out: SQLite's own copy of a large body goes
         * before the caller works on the record. */
        sqlite3_reset(st);
        if (rc == 0)
            rc = fn(ctx, &rec);
        ust_log_record_clear(&rec);
    }
    sqlite3_finalize(st);
    return rc;
}
