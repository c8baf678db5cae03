/* Reading the PostgreSQL log in its global order: each row's seq is its
 * commit record's first seq plus its place in that commit. Rows are read a
 * window of seqs at a time, each window a query of its own, so a cursor
 * holds no transaction and the connection stays free for other calls. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

/* Type oids (pg_type.h is a server header). */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25

/* Rows per window. */
#define WINDOW 512

#define E_COLUMN(kind, m, column, wire, wire_at, export, source) "e." #column ", "
#define ROW_SEQ "c.first_seq + (e.stream_seq - c.first_stream_seq)"

/* The rows of the commits that overlap ($1, $1 + $2]: from the commit
 * holding seq $1 + 1, found by one index probe, so a window costs the same
 * at any depth of the log. The casts fix the parameters' type: "$1 + 1"
 * alone would make $1 an integer, not the bigint sent. */
const char ust__pg_select_after[] =
    "SELECT " ROW_SEQ ", e.received_at, e.remote, e.method, e.target, e.headers,"
    " e.body, " UST_EVENT_FIELDS(
        E_COLUMN) "e.prev_hash, e.hash, e.response_status,"
                  " e.response_headers, e.response_body, e.stream, e.stream_seq"
                  " FROM understudy.commits c JOIN understudy.events e ON e.stream = "
                  "c.stream"
                  " AND e.stream_seq BETWEEN c.first_stream_seq"
                  " AND c.first_stream_seq + (c.last_seq - c.first_seq)"
                  " WHERE c.first_seq >= coalesce((SELECT max(first_seq) FROM "
                  "understudy.commits"
                  " WHERE first_seq <= $1::bigint + 1), 1) AND c.first_seq <= "
                  "$1::bigint + $2::bigint"
                  " AND " ROW_SEQ " > $1::bigint AND " ROW_SEQ
                  " <= $1::bigint + $2::bigint ORDER BY 1";

typedef struct pg_row {
    PGresult *res;
    int row;
} pg_row;

/* Every string is bytea (pg_open.c): the decoder reads one as text unless
 * the column holds bytes in the SQLite log too. */
static ust__val_type pg_type(void *ctx, int col)
{
    pg_row *r = ctx;
    if (PQgetisnull(r->res, r->row, col))
        return UST__VAL_NULL;
    switch (PQftype(r->res, col)) {
    case OID_INT8:
    case OID_INT4:
        return UST__VAL_INT;
    case OID_TEXT:
        return UST__VAL_TEXT;
    case OID_BYTEA:
        return col == UST__COL_headers || col == UST__COL_body ||
                       col == UST__COL_prev_hash || col == UST__COL_hash ||
                       col == UST__COL_response_headers || col == UST__COL_response_body
                   ? UST__VAL_BLOB
                   : UST__VAL_TEXT;
    default:
        return UST__VAL_OTHER;
    }
}

static int64_t pg_integer(void *ctx, int col)
{
    pg_row *r = ctx;
    return ust__pg_int(r->res, r->row, col);
}

static const void *pg_bytes(void *ctx, int col, size_t *len)
{
    pg_row *r = ctx;
    *len = (size_t)PQgetlength(r->res, r->row, col);
    return PQgetvalue(r->res, r->row, col);
}

int ust__pg_row_decode(PGresult *res, int row, ust_log_record *rec,
                       unsigned char prev[UST_SHA256_LEN], char **err)
{
    pg_row r = {res, row};
    ust__row_source src = {pg_type, pg_integer, pg_bytes, &r};
    return ust__log_row_decode_from(&src, rec, prev, err);
}

typedef struct pg_cursor {
    ust_log_cursor base;
    int64_t after; /* the last seq read */
    PGresult *res; /* the current window */
    int row, done;
} pg_cursor;

int ust__pg_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err)
{
    (void)err;
    pg_cursor *cur = ust_calloc(1, sizeof(*cur));
    if (cur == NULL)
        return UST_ENOMEM;
    cur->base.log = log;
    cur->after = after_seq;
    *out = &cur->base;
    return 0;
}

/* The next window after cur->after: seqs have no gaps, so an empty one is
 * the end of the log as committed now. */
static int fetch(pg_cursor *cur, char **err)
{
    ust_log *log = cur->base.log;
    PQclear(cur->res);
    cur->res = NULL;
    cur->row = 0;
    unsigned char after[8], window[8];
    ust__pg_put_int(after, cur->after);
    ust__pg_put_int(window, WINDOW);
    const char *values[] = {(const char *)after, (const char *)window};
    int lengths[] = {8, 8};
    int rc = ust__pg_reconnect(log, err);
    if (rc != 0)
        return rc;
    PGresult *res = ust__pg_run(log, ust__pg_select_after, 2, values, lengths);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read events", err);
    cur->res = res;
    if (PQntuples(res) == 0)
        cur->done = 1;
    return 0;
}

int ust__pg_cursor_next(ust_log_cursor *base, ust_log_record *rec, char **err)
{
    pg_cursor *cur = (pg_cursor *)base;
    ust_log_record_clear(rec);
    if (!cur->done && (cur->res == NULL || cur->row >= PQntuples(cur->res))) {
        int rc = fetch(cur, err);
        if (rc != 0)
            return rc;
    }
    if (cur->done)
        return 0;
    int rc = ust__pg_row_decode(cur->res, cur->row++, rec, NULL, err);
    if (rc != 0)
        return rc;
    cur->after = rec->seq;
    return 1;
}

void ust__pg_cursor_close(ust_log_cursor *base)
{
    pg_cursor *cur = (pg_cursor *)base;
    PQclear(cur->res);
    ust_free(cur);
}

int ust__pg_last_commit(ust_log *log, int64_t *last_seq,
                        unsigned char hash[UST_SHA256_LEN],
                        unsigned char last_hash[UST_SHA256_LEN], char **err)
{
    PGresult *res =
        ust__pg_run(log,
                    "SELECT last_seq, hash, last_hash FROM understudy.commits"
                    " ORDER BY first_seq DESC LIMIT 1",
                    0, NULL, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read the last commit record", err);
    *last_seq = 0;
    memset(hash, 0, UST_SHA256_LEN);
    memset(last_hash, 0, UST_SHA256_LEN);
    if (PQntuples(res) == 1 && PQgetlength(res, 0, 1) == UST_SHA256_LEN &&
        PQgetlength(res, 0, 2) == UST_SHA256_LEN) {
        *last_seq = ust__pg_int(res, 0, 0);
        memcpy(hash, PQgetvalue(res, 0, 1), UST_SHA256_LEN);
        memcpy(last_hash, PQgetvalue(res, 0, 2), UST_SHA256_LEN);
    }
    PQclear(res);
    return 0;
}

int ust__pg_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                 char **err)
{
    unsigned char hash[UST_SHA256_LEN], last[UST_SHA256_LEN];
    int rc = ust__pg_last_commit(log, seq, hash, last, err);
    hex[0] = '\0';
    if (rc == 0 && *seq > 0)
        ust_hex_encode(last, UST_SHA256_LEN, hex);
    return rc;
}
