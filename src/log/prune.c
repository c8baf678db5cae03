/* Retention as a deliberate act: remove a prefix of the chain, keep the hash
 * the rest chains from, and leave a record that it happened. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

static int query_int64(ust_log *log, const char *sql, int64_t bind, int64_t *out,
                       int *is_null, char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ust__log_db_error(log, "prune", err);
    sqlite3_bind_int64(st, 1, bind);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *is_null = sqlite3_column_type(st, 0) == SQLITE_NULL;
        *out = sqlite3_column_int64(st, 0);
    } else {
        rc = ust__log_db_error(log, "prune", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int ust_log_prune(ust_log *log, int64_t before_us, int64_t now_us, int64_t *n_pruned,
                  char **err)
{
    if (n_pruned != NULL)
        *n_pruned = 0;
    if (log->insert == NULL)
        return ust_errf(err, UST_EINVAL, "%s: opened read-only", log->path);
    ust__log_tip_remember(log, 0, NULL); /* the next append reads the tip again */
    int rc = ust__log_exec(log, "BEGIN IMMEDIATE;", err);
    if (rc != 0)
        return rc;
    int64_t first = 0, stop = 0, last = 0;
    int first_null = 1, stop_null = 1, last_null = 1;
    /* Arrival times need not rise with seq (imports keep recorded times), so
     * the prefix ends before the first row that is not older than before_us. */
    if ((rc = query_int64(log, "SELECT min(seq) FROM events WHERE ?1 = ?1", 0, &first,
                          &first_null, err)) != 0 ||
        (rc = query_int64(log, "SELECT min(seq) FROM events WHERE received_at >= ?1",
                          before_us, &stop, &stop_null, err)) != 0 ||
        (rc = query_int64(log, "SELECT max(seq) FROM events WHERE ?1 = ?1", 0, &last,
                          &last_null, err)) != 0)
        goto out;
    if (first_null)
        goto out; /* empty log: nothing to prune */
    int64_t through = stop_null ? last : stop - 1;
    if (through < first)
        goto out;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db,
                           "INSERT INTO prunes(pruned_at, before, first_seq, last_seq,"
                           " count, anchor_hash) SELECT ?1, ?2, ?3, ?4, count(*),"
                           " (SELECT hash FROM events WHERE seq = ?4)"
                           " FROM events WHERE seq BETWEEN ?3 AND ?4",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = ust__log_db_error(log, "prune", err);
        goto out;
    }
    sqlite3_bind_int64(st, 1, now_us);
    sqlite3_bind_int64(st, 2, before_us);
    sqlite3_bind_int64(st, 3, first);
    sqlite3_bind_int64(st, 4, through);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : ust__log_db_error(log, "prune", err);
    sqlite3_finalize(st);
    if (rc != 0)
        goto out;
    char *del = ust_sprintf("UPDATE prune_guard SET active = 1;"
                            "DELETE FROM events WHERE seq <= %lld;"
                            "UPDATE prune_guard SET active = 0;",
                            (long long)through);
    rc = del ? ust__log_exec(log, del, err) : UST_ENOMEM;
    ust_free(del);
    if (rc == 0 && n_pruned != NULL)
        *n_pruned = through - first + 1;
out:
    if (rc == 0)
        rc = ust__log_exec(log, "COMMIT;", err);
    if (rc != 0)
        ust__log_exec(log, "ROLLBACK;", NULL);
    return rc;
}
