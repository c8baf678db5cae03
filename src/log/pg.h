/* The PostgreSQL event log's parts (docs/log.md): one connection per
 * handle; a writing handle appends to a stream of its own. */
#ifndef UST_LOG_PG_H
#define UST_LOG_PG_H

#include <libpq-fe.h>

#include "log/log_internal.h"

/* Advisory lock keys (pg_advisory_xact_lock(UST__PG_LOCK, key)): the global
 * order, taken by an append only for its commit record and its COMMIT; the
 * schema, while a first open creates it. */
#define UST__PG_LOCK(key) "SELECT pg_advisory_xact_lock(1970500462, " key ")"
#define UST__PG_LOCK_ORDER UST__PG_LOCK("1")
#define UST__PG_LOCK_SCHEMA UST__PG_LOCK("2")

#define UST__PG_FORMAT "understudy-pg-log-1"

struct ust__pg_log {
    PGconn *conn;
    int writable;
    int in_outer_tx;
    int64_t stream; /* this handle's stream, 0 until its first append */
    /* The stream's tip: this handle is its only writer, so it is known
     * after each commit; forgotten on any failure and read back. */
    int tip_known;
    int64_t tip_next;
    unsigned char tip_hash[UST_SHA256_LEN];
    /* An append's scratch: packed headers of every row, row hashes. */
    char *arena;
    size_t arena_cap;
    unsigned char *hashes;
    size_t hashes_cap;
};

/* UST_EDB with the connection's (or res's) message; res is cleared. */
int ust__pg_error(ust_log *log, PGresult *res, const char *what, char **err);
/* A lost connection made again (outside a transaction), the session
 * configured as at open; 0 when it was fine. */
int ust__pg_reconnect(ust_log *log, char **err);
/* Runs a statement with binary parameters and results; NULL only when out
 * of memory. */
PGresult *ust__pg_run(ust_log *log, const char *sql, int n, const char *const *values,
                      const int *lengths);
/* Runs sql (no parameters) and checks it succeeded. */
int ust__pg_exec(ust_log *log, const char *sql, const char *what, char **err);
/* A binary int8 (or int4) column of a result row. */
int64_t ust__pg_int(const PGresult *res, int row, int col);
/* v as a binary int8 parameter. */
void ust__pg_put_int(unsigned char out[8], int64_t v);

/* The rows in the global order: each event joined to the commit record
 * that gives it its seq, UST__PG_ROW_SEQ. */
#define UST__PG_ROWS                                                                   \
    "understudy.commits c JOIN understudy.events e ON e.stream = c.stream"             \
    " AND e.stream_seq BETWEEN c.first_stream_seq"                                     \
    " AND c.first_stream_seq + (c.last_seq - c.first_seq)"
#define UST__PG_ROW_SEQ "c.first_seq + (e.stream_seq - c.first_stream_seq)"

/* A row of a result, as the decoders read it. */
typedef struct ust__pg_row {
    PGresult *res;
    int row;
} ust__pg_row;
ust__row_source ust__pg_row_source(ust__pg_row *r);

/* "SELECT <the columns of UST__COL_*>, stream, stream_seq FROM ..." in the
 * global order, rows after $1 (int8), at most $2 of them; fields as
 * ust__log_fields_select gives them for "e." (built at open: log->select). */
char *ust__pg_select_after(const char *fields);
#define UST__PG_COL_stream UST__LOG_N_COLUMNS
#define UST__PG_COL_stream_seq (UST__LOG_N_COLUMNS + 1)
/* Decodes row of res (a ust__pg_select_after result). */
int ust__pg_row_decode(PGresult *res, int row, ust_log_record *rec,
                       unsigned char prev[UST_SHA256_LEN], char **err);

/* The last commit record: its last seq (0 when none), its hash and its last
 * row's (zeros when none). */
int ust__pg_last_commit(ust_log *log, int64_t *last_seq,
                        unsigned char hash[UST_SHA256_LEN],
                        unsigned char last_hash[UST_SHA256_LEN], char **err);

int ust__pg_append(ust_log *log, const ust_log_record *recs, size_t n,
                   int64_t *first_seq, char **err);
int ust__pg_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err);
int ust__pg_cursor_open_before(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                               char **err);
int ust__pg_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err);
void ust__pg_cursor_close(ust_log_cursor *cur);
int ust__pg_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                      int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                      char **err);
int ust__pg_scan(ust_log *log, const ust_log_scan_opts *o,
                 int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                 char **err);
int ust__pg_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                 char **err);
int ust__pg_verify(ust_log *log, int64_t limit, int64_t anchor_seq,
                   const char *anchor_hex, ust_log_verify_result *res, char **err);
int ust__pg_stats(ust_log *log, json_t **out, char **err);
int ust__pg_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                          int64_t now_us, int64_t *n_pruned, char **err);
int ust__pg_backup(ust_log *log, const char *out_path, char **err);

#endif
