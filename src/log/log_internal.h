#ifndef UST_LOG_INTERNAL_H
#define UST_LOG_INTERNAL_H

#include <sqlite3.h>

#include <understudy/log.h>

struct ust_log {
    sqlite3 *db;
    char *path;
    int in_outer_tx;       /* ust_log_begin is active */
    sqlite3_stmt *insert;  /* prepared once, reused for every append */
};

/* Columns every reader selects, in this order (see ust__log_row_decode). */
#define UST__LOG_COLUMNS                                                       \
    "seq, received_at, remote, method, target, headers, body, route, "        \
    "provider, event_id, identity, request_sha256, signature, config_hash, "  \
    "prev_hash, hash"

/* SHA-256 over prev_hash and the record's content (seq included, so a row
 * moved to another seq no longer matches). */
void ust__log_row_hash(const unsigned char prev[UST_SHA256_LEN],
                       const ust_log_record *rec, unsigned char out[UST_SHA256_LEN]);

/* Headers as a JSON array of [name, value] pairs, compact text (free()). */
char *ust__headers_dump(const ust_request *req);
/* Parses such an array into req's headers. 0 or UST_EPARSE with *err. */
int ust__headers_load(json_t *array, ust_request *req, char **err);

/* Fills rec from a row selected with UST__LOG_COLUMNS; prev_hash into prev
 * (may be NULL). 0, UST_ENOMEM, UST_EPARSE (a headers column that is not
 * JSON: only possible behind the triggers' back). */
int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err);

/* Runs sql, failing with UST_EDB and the SQLite message in *err. */
int ust__log_exec(ust_log *log, const char *sql, char **err);
int ust__log_db_error(ust_log *log, const char *what, char **err);

/* The hash the next row must chain from, and the seq it gets: the last row,
 * or the anchor of the latest prune when no row follows it, or zeros. */
int ust__log_chain_tip(ust_log *log, int64_t *next_seq,
                       unsigned char prev[UST_SHA256_LEN], char **err);

#endif
