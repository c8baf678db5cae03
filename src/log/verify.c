/* Walking the chain: every row must sit at the seq after the one before,
 * chain from its hash, and hash to what it says. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

/* The latest prune fixes where the surviving chain starts. */
static int read_anchor(ust_log *log, ust_log_verify_result *res, int64_t *next_seq,
                       unsigned char prev[UST_SHA256_LEN], char **err)
{
    *next_seq = 1;
    memset(prev, 0, UST_SHA256_LEN);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db,
                           "SELECT first_seq, last_seq, anchor_hash FROM prunes"
                           " ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return ust__log_db_error(log, "read prunes", err);
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t first = sqlite3_column_int64(st, 0), last = sqlite3_column_int64(st, 1);
        res->n_prunes++;
        /* Each prune removes the prefix that follows the previous one. */
        if (first != *next_seq && rc == 0) {
            res->bad_seq = first;
            snprintf(res->reason, sizeof(res->reason),
                     "prune record %lld starts at seq %lld, expected %lld",
                     (long long)res->n_prunes, (long long)first, (long long)*next_seq);
            rc = UST_ETAMPER;
        }
        *next_seq = last + 1;
        res->pruned_through = last;
        const void *h = sqlite3_column_blob(st, 2);
        if (h != NULL && sqlite3_column_bytes(st, 2) == UST_SHA256_LEN)
            memcpy(prev, h, UST_SHA256_LEN);
    }
    if (step != SQLITE_DONE)
        rc = ust__log_db_error(log, "read prunes", err);
    sqlite3_finalize(st);
    return rc;
}

int ust_log_verify(ust_log *log, ust_log_verify_result *res, char **err)
{
    memset(res, 0, sizeof(*res));
    int64_t expect_seq;
    unsigned char prev[UST_SHA256_LEN];
    /* One read transaction: the rows checked are one consistent snapshot even
     * while the recorder appends. */
    int rc = ust__log_exec(log, "BEGIN;", err);
    if (rc != 0)
        return rc;
    rc = read_anchor(log, res, &expect_seq, prev, err);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(
                       log->db, "SELECT " UST__LOG_COLUMNS " FROM events ORDER BY seq",
                       -1, &st, NULL) != SQLITE_OK)
        rc = ust__log_db_error(log, "read events", err);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        unsigned char stored_prev[UST_SHA256_LEN], computed[UST_SHA256_LEN];
        rc = ust__log_row_decode(st, &rec, stored_prev, err);
        if (rc == UST_EPARSE) {
            res->bad_seq = sqlite3_column_int64(st, 0);
            snprintf(res->reason, sizeof(res->reason), "row cannot be read: %s",
                     err && *err ? *err : "malformed");
            rc = UST_ETAMPER;
            break;
        }
        if (rc != 0)
            break;
        res->checked++;
        if (rec.seq != expect_seq) {
            res->bad_seq = expect_seq;
            snprintf(res->reason, sizeof(res->reason),
                     rec.seq > expect_seq
                         ? "missing: the next row is seq %lld (rows deleted)"
                         : "out of order: found seq %lld",
                     (long long)rec.seq);
            rc = UST_ETAMPER;
        } else if (memcmp(stored_prev, prev, UST_SHA256_LEN) != 0) {
            res->bad_seq = rec.seq;
            snprintf(res->reason, sizeof(res->reason),
                     "does not chain from seq %lld (row inserted or replaced)",
                     (long long)(rec.seq - 1));
            rc = UST_ETAMPER;
        } else {
            unsigned char digest[UST_SHA256_LEN];
            ust__log_row_digest(&log->hasher, &rec, digest);
            ust__log_chain_link(&log->hasher, prev, digest, computed);
            if (memcmp(computed, rec.hash, UST_SHA256_LEN) != 0) {
                res->bad_seq = rec.seq;
                snprintf(res->reason, sizeof(res->reason),
                         "content does not match its hash (row changed)");
                rc = UST_ETAMPER;
            }
        }
        if (rc == 0) {
            memcpy(prev, rec.hash, UST_SHA256_LEN);
            res->head_seq = rec.seq;
            expect_seq++;
        }
        ust_log_record_clear(&rec);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "read events", err);
    sqlite3_finalize(st);
    ust__log_exec(log, "COMMIT;", NULL);
    if (rc == 0 || rc == UST_ETAMPER) {
        if (res->head_seq == 0 && res->pruned_through > 0 && rc == 0)
            res->head_seq = res->pruned_through;
        ust_hex_encode(prev, UST_SHA256_LEN, res->head_hash);
        if (res->head_seq == 0 && res->n_prunes == 0)
            res->head_hash[0] = '\0';
    }
    return rc;
}

int ust_log_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                 char **err)
{
    unsigned char h[UST_SHA256_LEN];
    int64_t next;
    int rc = ust__log_chain_tip(log, &next, h, err);
    if (rc != 0)
        return rc;
    *seq = next - 1;
    if (*seq == 0)
        hex[0] = '\0';
    else
        ust_hex_encode(h, UST_SHA256_LEN, hex);
    return 0;
}
