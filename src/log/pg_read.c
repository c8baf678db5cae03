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

#define ROW_SEQ UST__PG_ROW_SEQ

/* The rows of the commits that overlap ($1, $1 + $2]: from the commit
 * holding seq $1 + 1, found by one index probe, so a window costs the same
 * at any depth of the log. The casts fix the parameters' type: "$1 + 1"
 * alone would make $1 an integer, not the bigint sent. */
char *ust__pg_select_after(const char *fields)
{
    return ust_sprintf(
        "SELECT " ROW_SEQ ", e.received_at, e.remote, e.method, e.target, e.headers,"
        " e.body, %se.prev_hash, e.hash, e.response_status,"
        " e.response_headers, e.response_body, e.stream, e.stream_seq"
        " FROM " UST__PG_ROWS
        " WHERE c.first_seq >= coalesce((SELECT max(first_seq) FROM understudy.commits"
        " WHERE first_seq <= $1::bigint + 1), 1) AND c.first_seq <= $1::bigint + "
        "$2::bigint"
        " AND " ROW_SEQ " > $1::bigint AND " ROW_SEQ
        " <= $1::bigint + $2::bigint ORDER BY 1",
        fields);
}

/* Every string is bytea (pg_open.c): the decoder reads one as text unless
 * the column holds bytes in the SQLite log too. */
static ust__val_type pg_type(void *ctx, int col)
{
    ust__pg_row *r = ctx;
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
    ust__pg_row *r = ctx;
    return ust__pg_int(r->res, r->row, col);
}

static const void *pg_bytes(void *ctx, int col, size_t *len)
{
    ust__pg_row *r = ctx;
    *len = (size_t)PQgetlength(r->res, r->row, col);
    return PQgetvalue(r->res, r->row, col);
}

ust__row_source ust__pg_row_source(ust__pg_row *r)
{
    ust__row_source src = {pg_type, pg_integer, pg_bytes, r};
    return src;
}

int ust__pg_row_decode(PGresult *res, int row, ust_log_record *rec,
                       unsigned char prev[UST_SHA256_LEN], char **err)
{
    ust__pg_row r = {res, row};
    ust__row_source src = ust__pg_row_source(&r);
    return ust__log_row_decode_from(&src, rec, prev, err);
}

typedef struct pg_cursor {
    ust_log_cursor base;
    int descending;
    /* Ascending: the last seq read. Descending: the highest seq still to
     * read (0: none), and whether it was held to the log's last. */
    int64_t after, below;
    int below_checked;
    PGresult *res; /* the current window */
    int row, done;
} pg_cursor;

static int cursor_new(ust_log *log, int descending, int64_t seq, ust_log_cursor **out)
{
    pg_cursor *cur = ust_calloc(1, sizeof(*cur));
    if (cur == NULL)
        return UST_ENOMEM;
    cur->base.log = log;
    cur->descending = descending;
    if (descending)
        cur->below = seq > 0 ? seq - 1 : 0;
    else
        cur->after = seq;
    *out = &cur->base;
    return 0;
}

int ust__pg_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err)
{
    (void)err;
    return cursor_new(log, 0, after_seq, out);
}

int ust__pg_cursor_open_before(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                               char **err)
{
    (void)err;
    return cursor_new(log, 1, before_seq, out);
}

/* The rows with seqs in (after, after + n], ascending, into *out. */
static int read_window(ust_log *log, int64_t after, int64_t n, PGresult **out,
                       char **err)
{
    *out = NULL;
    unsigned char a[8], w[8];
    ust__pg_put_int(a, after);
    ust__pg_put_int(w, n);
    const char *values[] = {(const char *)a, (const char *)w};
    int lengths[] = {8, 8};
    int rc = ust__pg_reconnect(log, err);
    if (rc != 0)
        return rc;
    PGresult *res = ust__pg_run(log, log->select, 2, values, lengths);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read events", err);
    *out = res;
    return 0;
}

/* The next window: after cur->after (seqs have no gaps, so an empty one is
 * the end of the log as committed now), or, descending, the one ending at
 * cur->below (held to the log's last seq first: a window past it is empty,
 * and would end the read before it started). */
static int fetch(pg_cursor *cur, char **err)
{
    ust_log *log = cur->base.log;
    PQclear(cur->res);
    cur->res = NULL;
    cur->row = 0;
    int64_t after = cur->after, n = WINDOW;
    if (cur->descending) {
        if (!cur->below_checked) {
            unsigned char hash[UST_SHA256_LEN], last[UST_SHA256_LEN];
            int64_t tip = 0;
            int rc = ust__pg_last_commit(log, &tip, hash, last, err);
            if (rc != 0)
                return rc;
            if (cur->below > tip)
                cur->below = tip;
            cur->below_checked = 1;
        }
        if (cur->below <= 0) {
            cur->done = 1;
            return 0;
        }
        after = cur->below > WINDOW ? cur->below - WINDOW : 0;
        n = cur->below - after;
    }
    int rc = read_window(log, after, n, &cur->res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(cur->res) == 0)
        cur->done = 1;
    if (cur->descending)
        cur->below = after;
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
    int n = PQntuples(cur->res), at = cur->row++;
    int rc =
        ust__pg_row_decode(cur->res, cur->descending ? n - 1 - at : at, rec, NULL, err);
    if (rc != 0)
        return rc;
    if (!cur->descending)
        cur->after = rec->seq;
    return 1;
}

void ust__pg_cursor_close(ust_log_cursor *base)
{
    pg_cursor *cur = (pg_cursor *)base;
    PQclear(cur->res);
    ust_free(cur);
}

/* A query per seq: a story names a few rows, scattered over the log. */
int ust__pg_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                      int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                      char **err)
{
    int rc = 0;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    for (size_t i = 0; i < n && rc == 0; i++) {
        PGresult *res = NULL;
        if (seqs[i] <= 0 || (rc = read_window(log, seqs[i] - 1, 1, &res, err)) != 0)
            continue;
        if (PQntuples(res) == 1 &&
            (rc = ust__pg_row_decode(res, 0, &rec, NULL, err)) == 0)
            rc = fn(ctx, &rec);
        ust_log_record_clear(&rec);
        PQclear(res);
    }
    return rc;
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
