/* Appending to the PostgreSQL log: one transaction per batch, as in SQLite
 * (group commit is the caller batching). The rows go to this handle's own
 * stream, chained there, so two recorders never wait for each other while
 * they insert; the global order is given last, by a commit record written
 * under a short lock held through COMMIT: the next transaction takes the
 * next seqs only once this one is visible, so the seqs readers see only
 * ever grow in commit order, and a reader that has seen seq N will never
 * find a smaller one appear later (docs/log.md). */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The events columns an insert fills, in UST__COL_* order with seq replaced
 * by stream and stream_seq. */
#define PG_COLS (UST__LOG_N_COLUMNS + 1)
/* Rows per INSERT statement (PostgreSQL takes at most 65535 parameters). */
#define ROWS_PER_INSERT 1000

static const char insert_head[] =
    "INSERT INTO understudy.events(stream, stream_seq, received_at, remote, method,"
    " target, headers, body, " UST_EVENT_FIELDS(
        UST__LOG_COLUMN_NAME_) "prev_hash, hash,"
                               " response_status,"
                               " response_heade"
                               "rs, "
                               "response_body) "
                               "VALUES ";

/* One row's parameters: pointers into the row, its packed headers (in the
 * arena, as offsets until the arena stops growing) and its numbers. */
typedef struct row_params {
    const char *values[PG_COLS];
    int lengths[PG_COLS];
    size_t headers_at, headers_len, resp_headers_at, resp_headers_len;
    unsigned char ints[5][8];
} row_params;

static void put_bytes(row_params *p, int col, const void *b, size_t n)
{
    p->values[col] = b != NULL ? b : "";
    p->lengths[col] = (int)n;
}

static void put_text(row_params *p, int col, const char *s)
{
    if (s == NULL)
        p->values[col] = NULL;
    else
        put_bytes(p, col, s, strlen(s));
}

static void put_int(row_params *p, int col, int slot, int64_t v)
{
    ust__pg_put_int(p->ints[slot], v);
    put_bytes(p, col, p->ints[slot], 8);
}

/* A row's columns: UST__COL_x + 1 (stream comes first). */
#define PCOL(x) (UST__COL_##x + 1)
#define PUT_TEXT(col, m) put_text(p, col, rec->m);
#define PUT_ROUTE(col, m) put_text(p, col, rec->m);
#define PUT_SHA(col, m) put_text(p, col, rec->m);
#define PUT_SIG(col, m) put_text(p, col, ust_sig_status_name(rec->m));
#define PUT_AMOUNT(col, m)                                                             \
    if (rec->has_##m)                                                                  \
        put_int(p, col, 3, rec->m);                                                    \
    else                                                                               \
        p->values[col] = NULL;
#define PUT_CONFIG(col, m) put_text(p, col, rec->m[0] ? rec->m : NULL);
#define PUT(kind, m, column, wire, wire_at, export, source, since, desc)               \
    PUT_##kind(PCOL(column), m)

/* Packs headers into log->pack, then onto the end of the arena (every row
 * of a statement needs its own bytes until it is sent). */
static int pack_into_arena(ust_log *log, size_t *used, const ust_header *h, size_t n,
                           size_t *at, size_t *len)
{
    ust__pg_log *pg = log->pg;
    if (ust__headers_pack(log, h, n, len) != 0)
        return UST_ENOMEM;
    char *grown = ust_grow(pg->arena, &pg->arena_cap, *used + *len + 1, 4096, 1);
    if (grown == NULL)
        return UST_ENOMEM;
    pg->arena = grown;
    if (*len > 0)
        memcpy(pg->arena + *used, log->pack, *len);
    *at = *used;
    *used += *len;
    return 0;
}

static int fill_params(ust_log *log, const ust_log_record *rec, int64_t stream_seq,
                       const unsigned char *prev, const unsigned char *hash,
                       row_params *p, size_t *arena_used)
{
    const ust_request *r = &rec->req;
    memset(p->values, 0, sizeof(p->values));
    memset(p->lengths, 0, sizeof(p->lengths));
    put_int(p, 0, 0, log->pg->stream);
    put_int(p, 1, 1, stream_seq);
    put_int(p, PCOL(received_at), 2, r->received_at_us);
    put_text(p, PCOL(remote), r->remote);
    put_text(p, PCOL(method), r->method);
    put_text(p, PCOL(target), r->target);
    put_bytes(p, PCOL(body), r->body, r->body_len);
    UST_EVENT_FIELDS(PUT)
    put_bytes(p, PCOL(prev_hash), prev, UST_SHA256_LEN);
    put_bytes(p, PCOL(hash), hash, UST_SHA256_LEN);
    int rc = pack_into_arena(log, arena_used, r->headers, r->n_headers, &p->headers_at,
                             &p->headers_len);
    const ust_response *a = &rec->response;
    if (rc == 0 && a->status != 0) {
        put_int(p, PCOL(response_status), 4, a->status);
        put_bytes(p, PCOL(response_body), a->body, a->body_len);
        rc = pack_into_arena(log, arena_used, a->headers, a->n_headers,
                             &p->resp_headers_at, &p->resp_headers_len);
    }
    return rc;
}

/* "INSERT ... VALUES ($1, ..., $28), ($29, ...)" for n rows. */
static char *insert_sql(size_t n)
{
    size_t cap = sizeof(insert_head) + n * PG_COLS * 8 + n * 4;
    char *sql = ust_malloc(cap);
    if (sql == NULL)
        return NULL;
    size_t len = strlen(insert_head);
    memcpy(sql, insert_head, len);
    for (size_t i = 0; i < n; i++) {
        sql[len++] = i > 0 ? ',' : ' ';
        sql[len++] = '(';
        for (int c = 0; c < PG_COLS; c++)
            len += (size_t)snprintf(sql + len, cap - len, "%s$%zu", c > 0 ? "," : "",
                                    i * PG_COLS + (size_t)c + 1);
        sql[len++] = ')';
    }
    sql[len] = '\0';
    return sql;
}

static int insert_rows(ust_log *log, const ust_log_record *recs, size_t n,
                       int64_t stream_seq, const unsigned char *prev0, char **err)
{
    ust__pg_log *pg = log->pg;
    row_params *rows = ust_calloc(n, sizeof(*rows));
    const char **values = ust_malloc(n * PG_COLS * sizeof(*values));
    int *lengths = ust_malloc(n * PG_COLS * sizeof(*lengths));
    char *sql = insert_sql(n);
    int rc = rows && values && lengths && sql ? 0 : UST_ENOMEM;
    size_t used = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = fill_params(log, &recs[i], stream_seq + (int64_t)i,
                         i == 0 ? prev0 : pg->hashes + (i - 1) * UST_SHA256_LEN,
                         pg->hashes + i * UST_SHA256_LEN, &rows[i], &used);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        row_params *p = &rows[i];
        put_bytes(p, PCOL(headers), pg->arena + p->headers_at, p->headers_len);
        if (p->values[PCOL(response_status)] != NULL)
            put_bytes(p, PCOL(response_headers), pg->arena + p->resp_headers_at,
                      p->resp_headers_len);
        memcpy(values + i * PG_COLS, p->values, sizeof(p->values));
        memcpy(lengths + i * PG_COLS, p->lengths, sizeof(p->lengths));
    }
    if (rc == 0) {
        PGresult *res = ust__pg_run(log, sql, (int)(n * PG_COLS),
                                    (const char *const *)values, lengths);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            rc = ust__pg_error(log, res, "append", err);
        else
            PQclear(res);
    }
    ust_free(sql);
    ust_free(lengths);
    ust_free(values);
    ust_free(rows);
    return rc;
}

/* This handle's stream, made on its first append: its id from the
 * sequence, its genesis hash from the id, when and by whom. */
static int make_stream(ust_log *log, char **err)
{
    ust__pg_log *pg = log->pg;
    PGresult *res = PQexec(pg->conn, "SELECT nextval('understudy.stream_ids')::text");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        return ust__pg_error(log, res, "start a stream", err);
    int64_t id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    char host[128] = "unknown";
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "unknown");
    host[sizeof(host) - 1] = '\0';
    char label[192];
    snprintf(label, sizeof(label), "%s pid %ld", host, (long)getpid());
    int64_t opened_at = ust_time_wall_us();
    unsigned char genesis[UST_SHA256_LEN], b_id[8], b_at[8];
    ust__log_stream_genesis(&log->hasher, id, opened_at, label, genesis);
    ust__pg_put_int(b_id, id);
    ust__pg_put_int(b_at, opened_at);
    const char *values[] = {(const char *)b_id, (const char *)b_at, label,
                            (const char *)genesis};
    int lengths[] = {8, 8, (int)strlen(label), UST_SHA256_LEN};
    res = ust__pg_run(log,
                      "INSERT INTO understudy.streams(id, opened_at, label, genesis)"
                      " VALUES($1, $2, convert_from($3, 'UTF8'), $4)",
                      4, values, lengths);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return ust__pg_error(log, res, "start a stream", err);
    PQclear(res);
    pg->stream = id;
    pg->tip_next = 1;
    memcpy(pg->tip_hash, genesis, UST_SHA256_LEN);
    pg->tip_known = 1;
    return 0;
}

/* The stream's tip as the database has it (after a failure: the last
 * transaction may or may not have committed). */
static int read_tip(ust_log *log, char **err)
{
    ust__pg_log *pg = log->pg;
    unsigned char b_id[8];
    ust__pg_put_int(b_id, pg->stream);
    const char *values[] = {(const char *)b_id};
    int lengths[] = {8};
    PGresult *res = ust__pg_run(
        log,
        "SELECT stream_seq + 1, hash FROM understudy.events WHERE stream = $1"
        " UNION ALL SELECT 1, genesis FROM understudy.streams WHERE id = $1"
        " ORDER BY 1 DESC LIMIT 1",
        1, values, lengths);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
        PQgetlength(res, 0, 1) != UST_SHA256_LEN)
        return ust__pg_error(log, res, "read the stream's tip", err);
    pg->tip_next = ust__pg_int(res, 0, 0);
    memcpy(pg->tip_hash, PQgetvalue(res, 0, 1), UST_SHA256_LEN);
    PQclear(res);
    pg->tip_known = 1;
    return 0;
}

/* Under the order lock: the commit before this one, then this one's record
 * for n rows of the stream from stream_seq, its last row's hash last. */
static int write_commit(ust_log *log, int64_t stream_seq, size_t n,
                        const unsigned char last[UST_SHA256_LEN], int64_t *first_seq,
                        char **err)
{
    int rc = ust__pg_exec(log, UST__PG_LOCK_ORDER, "take the order lock", err);
    if (rc != 0)
        return rc;
    ust__commit_record c;
    memset(&c, 0, sizeof(c));
    unsigned char before_last[UST_SHA256_LEN];
    if ((rc = ust__pg_last_commit(log, &c.first_seq, c.prev_hash, before_last, err)) !=
        0)
        return rc;
    c.first_seq++;
    c.last_seq = c.first_seq + (int64_t)n - 1;
    c.stream = log->pg->stream;
    c.first_stream_seq = stream_seq;
    memcpy(c.last_hash, last, UST_SHA256_LEN);
    unsigned char hash[UST_SHA256_LEN], ints[4][8];
    ust__log_commit_hash(&log->hasher, &c, hash);
    int64_t nums[] = {c.first_seq, c.last_seq, c.stream, c.first_stream_seq};
    for (int i = 0; i < 4; i++)
        ust__pg_put_int(ints[i], nums[i]);
    const char *values[] = {(const char *)ints[0],     (const char *)ints[1],
                            (const char *)ints[2],     (const char *)ints[3],
                            (const char *)c.last_hash, (const char *)c.prev_hash,
                            (const char *)hash};
    int lengths[] = {8, 8, 8, 8, UST_SHA256_LEN, UST_SHA256_LEN, UST_SHA256_LEN};
    PGresult *res =
        ust__pg_run(log,
                    "INSERT INTO understudy.commits(first_seq, last_seq, stream,"
                    " first_stream_seq, last_hash, prev_hash, hash)"
                    " VALUES($1, $2, $3, $4, $5, $6, $7)",
                    7, values, lengths);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return ust__pg_error(log, res, "append the commit record", err);
    PQclear(res);
    *first_seq = c.first_seq;
    return 0;
}

/* Each row's hash, chained from the stream's tip (seq framed as the
 * stream's own). */
static int hash_rows(ust_log *log, const ust_log_record *recs, size_t n, char **err)
{
    ust__pg_log *pg = log->pg;
    unsigned char *grown =
        ust_grow(pg->hashes, &pg->hashes_cap, n * UST_SHA256_LEN, 4096, 1);
    if (grown == NULL)
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", log->path);
    pg->hashes = grown;
    const unsigned char *prev = pg->tip_hash;
    for (size_t i = 0; i < n; i++) {
        ust_log_record row = recs[i];
        row.seq = pg->tip_next + (int64_t)i;
        unsigned char digest[UST_SHA256_LEN];
        ust__log_row_digest(&log->hasher, &row, digest);
        ust__log_chain_link(&log->hasher, prev, digest,
                            pg->hashes + i * UST_SHA256_LEN);
        prev = pg->hashes + i * UST_SHA256_LEN;
    }
    return 0;
}

int ust__pg_append(ust_log *log, const ust_log_record *recs, size_t n,
                   int64_t *first_seq, char **err)
{
    ust__pg_log *pg = log->pg;
    if (!pg->writable)
        return ust_errf(err, UST_EINVAL, "%s: opened read-only", log->path);
    if (n == 0)
        return 0;
    int rc = 0;
    int outer = pg->in_outer_tx;
    if ((rc = ust__pg_reconnect(log, err)) != 0)
        return rc;
    if (pg->stream == 0 && (rc = make_stream(log, err)) != 0)
        return rc;
    if (!pg->tip_known && (rc = read_tip(log, err)) != 0)
        return rc;
    if ((rc = hash_rows(log, recs, n, err)) != 0)
        return rc;
    rc = ust__pg_exec(log, outer ? "SAVEPOINT ust_append" : "BEGIN", "begin", err);
    if (rc != 0)
        return rc;
    const unsigned char *prev = pg->tip_hash;
    for (size_t at = 0; rc == 0 && at < n; at += ROWS_PER_INSERT) {
        size_t k = n - at < ROWS_PER_INSERT ? n - at : ROWS_PER_INSERT;
        rc = insert_rows(log, recs + at, k, pg->tip_next + (int64_t)at,
                         at == 0 ? prev : pg->hashes + (at - 1) * UST_SHA256_LEN, err);
    }
    int64_t first = 0;
    const unsigned char *last = pg->hashes + (n - 1) * UST_SHA256_LEN;
    if (rc == 0)
        rc = write_commit(log, pg->tip_next, n, last, &first, err);
    if (rc == 0)
        rc = ust__pg_exec(log, outer ? "RELEASE SAVEPOINT ust_append" : "COMMIT",
                          "commit", err);
    if (rc != 0) {
        ust__pg_exec(log,
                     outer ? "ROLLBACK TO SAVEPOINT ust_append;"
                             " RELEASE SAVEPOINT ust_append"
                           : "ROLLBACK",
                     "rollback", NULL);
        pg->tip_known = 0;
        return rc;
    }
    pg->tip_next += (int64_t)n;
    memcpy(pg->tip_hash, last, UST_SHA256_LEN);
    if (first_seq != NULL)
        *first_seq = first;
    return 0;
}
