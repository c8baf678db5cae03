/* Appending: one transaction per batch, one fsync per commit (group commit is
 * the caller batching many requests into one call). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *s)
{
    if (s == NULL)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
}

static int insert_one(ust_log *log, ust_log_record *rec,
                      const unsigned char prev[UST_SHA256_LEN], char **err)
{
    const ust_request *r = &rec->req;
    if (r->remote == NULL || r->method == NULL || r->target == NULL)
        return ust_errf(err, UST_EINVAL, "%s: record without remote, method or target",
                        log->path);
    char *headers = ust__headers_dump(r);
    if (headers == NULL)
        return UST_ENOMEM;
    ust__log_row_hash(prev, rec, rec->hash);
    sqlite3_stmt *st = log->insert;
    sqlite3_bind_int64(st, 1, rec->seq);
    sqlite3_bind_int64(st, 2, r->received_at_us);
    sqlite3_bind_text(st, 3, r->remote, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->target, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, headers, -1, SQLITE_STATIC);
    /* zeroblob-free empty body: a zero-length blob, never NULL */
    sqlite3_bind_blob(st, 7, r->body ? (const void *)r->body : "", (int)r->body_len,
                      SQLITE_STATIC);
    bind_text_or_null(st, 8, rec->route);
    bind_text_or_null(st, 9, rec->provider);
    bind_text_or_null(st, 10, rec->event_id);
    bind_text_or_null(st, 11, rec->identity);
    sqlite3_bind_text(st, 12, rec->request_sha256, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 13, ust_sig_status_name(rec->sig), -1, SQLITE_STATIC);
    bind_text_or_null(st, 14, rec->config_hash[0] ? rec->config_hash : NULL);
    sqlite3_bind_blob(st, 15, prev, UST_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, 16, rec->hash, UST_SHA256_LEN, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : ust__log_db_error(log, "append", err);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    free(headers);
    return rc;
}

int ust_log_append(ust_log *log, const ust_log_record *recs, size_t n,
                   int64_t *first_seq, char **err)
{
    if (log->insert == NULL)
        return ust_errf(err, UST_EINVAL, "%s: opened read-only", log->path);
    if (n == 0)
        return 0;
    if (recs[0].req.body_len > INT32_MAX)
        return ust_errf(err, UST_ELIMIT, "%s: body too large", log->path);
    /* A savepoint nests inside ust_log_begin and is a transaction of its own
     * otherwise; BEGIN IMMEDIATE first so the tip cannot move under us. */
    int outer = log->in_outer_tx;
    int rc = ust__log_exec(log, outer ? "SAVEPOINT append;" : "BEGIN IMMEDIATE;", err);
    if (rc != 0)
        return rc;
    int64_t seq;
    unsigned char prev[UST_SHA256_LEN];
    rc = ust__log_chain_tip(log, &seq, prev, err);
    if (first_seq != NULL)
        *first_seq = seq;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (recs[i].req.body_len > INT32_MAX) {
            rc = ust_errf(err, UST_ELIMIT, "%s: body too large", log->path);
            break;
        }
        /* The caller's records are const; seq and hash are ours to assign. */
        ust_log_record row = recs[i];
        row.seq = seq++;
        rc = insert_one(log, &row, prev, err);
        memcpy(prev, row.hash, UST_SHA256_LEN);
    }
    if (rc != 0) {
        ust__log_exec(log, outer ? "ROLLBACK TO append; RELEASE append;" : "ROLLBACK;",
                      NULL);
        return rc;
    }
    return ust__log_exec(log, outer ? "RELEASE append;" : "COMMIT;", err);
}
