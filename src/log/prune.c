/* Retention as a deliberate act: remove a prefix of the chain, keep the hash
 * the rest chains from, and leave a record that it happened. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

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

/* One column of one row into out: a 32-byte blob, or zeros when the query
 * finds no row or a NULL (a format-1 prune record). */
static int query_hash(ust_log *log, const char *sql, int64_t bind,
                      unsigned char out[UST_SHA256_LEN], char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) != SQLITE_OK)
        return ust__log_db_error(log, "prune", err);
    sqlite3_bind_int64(st, 1, bind);
    memset(out, 0, UST_SHA256_LEN);
    int rc = 0, step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        const void *h = sqlite3_column_blob(st, 0);
        if (h != NULL && sqlite3_column_bytes(st, 0) == UST_SHA256_LEN)
            memcpy(out, h, UST_SHA256_LEN);
        else if (h != NULL)
            rc = ust_errf(err, UST_ETAMPER,
                          "%s: a hash that is not 32 bytes (run"
                          " log verify)",
                          log->path);
    } else if (step != SQLITE_DONE) {
        rc = ust__log_db_error(log, "prune", err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The prune record for seqs first..through, chained: from the tip the chain
 * has now (the next row appended chains from this record) and from the
 * previous prune record. */
static int record_prune(ust_log *log, int64_t before_us, int64_t now_us, int64_t first,
                        int64_t through, char **err)
{
    ust__prune_record p;
    memset(&p, 0, sizeof(p));
    int64_t next = 0, last_id = 0;
    int null_id = 1;
    int rc;
    if ((rc = ust__log_chain_tip(log, &next, p.link_prev, err)) != 0 ||
        (rc = query_int64(log, "SELECT max(id) FROM prunes WHERE ?1 = ?1", 0, &last_id,
                          &null_id, err)) != 0 ||
        (rc = query_hash(log, "SELECT hash FROM prunes WHERE id = ?1", last_id,
                         p.prev_hash, err)) != 0 ||
        (rc = query_hash(log, "SELECT hash FROM events WHERE seq = ?1", through,
                         p.anchor, err)) != 0)
        return rc;
    p.id = last_id + 1;
    p.pruned_at = now_us;
    p.before = before_us;
    p.first_seq = first;
    p.last_seq = through;
    p.count = through - first + 1;
    p.tip_seq = next - 1;
    unsigned char hash[UST_SHA256_LEN];
    ust__log_prune_hash(&log->hasher, &p, hash);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            log->db,
            "INSERT INTO prunes(id, pruned_at, before, first_seq,"
            " last_seq, count, anchor_hash, tip_seq, link_prev,"
            " prev_hash, hash) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
            -1, &st, NULL) != SQLITE_OK)
        return ust__log_db_error(log, "prune", err);
    int64_t ints[] = {p.id, p.pruned_at, p.before, p.first_seq, p.last_seq, p.count};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int64(st, i + 1, ints[i]);
    sqlite3_bind_blob(st, 7, p.anchor, UST_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, p.tip_seq);
    sqlite3_bind_blob(st, 9, p.link_prev, UST_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, 10, p.prev_hash, UST_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, 11, hash, UST_SHA256_LEN, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : ust__log_db_error(log, "prune", err);
    sqlite3_finalize(st);
    return rc;
}

int ust__sqlite_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                              int64_t now_us, int64_t *n_pruned, char **err)
{
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
    if (through > max_seq)
        through = max_seq;
    if (through < first)
        goto out;
    if ((rc = record_prune(log, before_us, now_us, first, through, err)) != 0)
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
