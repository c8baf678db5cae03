/* Reading rows back in seq order. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

struct ust_log_cursor {
    ust_log *log;
    sqlite3_stmt *st;
};

void ust_log_record_clear(ust_log_record *rec)
{
    if (rec == NULL)
        return;
    ust_request_clear(&rec->req);
    ust_response_clear(&rec->response);
#define UST_EVENT_FIELDS_OWNER rec
    UST_EVENT_FIELDS(UST_EVENT_FREE_TEXT)
#undef UST_EVENT_FIELDS_OWNER
    ust_free(rec->route); /* a row owns its route's path, unlike an event */
    ust_response_clear(&rec->response);
    memset(rec, 0, sizeof(*rec));
}

#define COLUMN_NAME(kind, m, column, wire, wire_at, export, source) #column,
static const char *const column_names[UST__LOG_N_COLUMNS] = {
    "seq",
    "received_at",
    "remote",
    "method",
    "target",
    "headers",
    "body",
    UST_EVENT_FIELDS(COLUMN_NAME) "prev_hash",
    "hash",
    "response_status",
    "response_headers",
    "response_body"};

/* A text column as the hash saw it: TEXT (or NULL where allowed) with no NUL
 * byte. The hash covers a string up to its first NUL, so bytes stored after
 * one would escape it: such a row is refused, never read short. */
static int text_column(sqlite3_stmt *st, int col, int nullable, const char **out,
                       size_t *len, char **err)
{
    int type = sqlite3_column_type(st, col);
    *out = NULL;
    *len = 0;
    if (type == SQLITE_NULL && nullable)
        return 0;
    if (type != SQLITE_TEXT)
        return ust_errf(err, UST_EPARSE, "column %s is not text", column_names[col]);
    const char *s = (const char *)sqlite3_column_text(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (s == NULL)
        return UST_ENOMEM;
    if (strlen(s) != n)
        return ust_errf(err, UST_EPARSE, "column %s holds a NUL byte",
                        column_names[col]);
    *out = s;
    *len = n;
    return 0;
}

static int dup_column(sqlite3_stmt *st, int col, int nullable, char **out, char **err)
{
    const char *s;
    size_t n;
    *out = NULL;
    int rc = text_column(st, col, nullable, &s, &n, err);
    if (rc != 0 || s == NULL)
        return rc;
    *out = ust_strndup(s, n);
    return *out ? 0 : UST_ENOMEM;
}

static int copy_hex(sqlite3_stmt *st, int col, int nullable,
                    char hex[UST_SHA256_HEX_LEN + 1], char **err)
{
    const char *s;
    size_t n;
    int rc = text_column(st, col, nullable, &s, &n, err);
    if (rc != 0)
        return rc;
    if (n > UST_SHA256_HEX_LEN)
        return ust_errf(err, UST_EPARSE, "column %s is too long", column_names[col]);
    if (n > 0)
        memcpy(hex, s, n);
    hex[n] = '\0';
    return 0;
}

static void copy_hash(sqlite3_stmt *st, int col, unsigned char out[UST_SHA256_LEN])
{
    const void *b = sqlite3_column_blob(st, col);
    memset(out, 0, UST_SHA256_LEN);
    if (b != NULL && sqlite3_column_bytes(st, col) == UST_SHA256_LEN)
        memcpy(out, b, UST_SHA256_LEN);
}

/* A derived field read as a number, and the type it must have. */
#define TYPE_CHECK_TEXT(col)
#define TYPE_CHECK_ROUTE(col)
#define TYPE_CHECK_SHA(col)
#define TYPE_CHECK_SIG(col)
#define TYPE_CHECK_AMOUNT(col) {UST__COL_##col, SQLITE_INTEGER, 1},
#define TYPE_CHECK_CONFIG(col)
#define TYPE_CHECK(kind, m, column, wire, wire_at, export, source)                     \
    TYPE_CHECK_##kind(column)

/* Columns read as numbers or bytes must hold that type: SQLite would convert
 * '12abc' to 12, and the hash would not see the difference. */
static int check_types(sqlite3_stmt *st, char **err)
{
    static const struct {
        int col, type, nullable;
    } want[] = {{UST__COL_seq, SQLITE_INTEGER, 0},
                {UST__COL_received_at, SQLITE_INTEGER, 0},
                {UST__COL_headers, SQLITE_BLOB, 0},
                {UST__COL_body, SQLITE_BLOB, 0},
                {UST__COL_response_status, SQLITE_INTEGER, 1},
                {UST__COL_response_headers, SQLITE_BLOB, 1},
                {UST__COL_response_body, SQLITE_BLOB, 1},
                UST_EVENT_FIELDS(TYPE_CHECK)};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int type = sqlite3_column_type(st, want[i].col);
        if (type != want[i].type && !(want[i].nullable && type == SQLITE_NULL))
            return ust_errf(err, UST_EPARSE, "column %s has the wrong type",
                            column_names[want[i].col]);
    }
    return 0;
}

static int sig_column(sqlite3_stmt *st, int col, ust_sig_status *out, char **err)
{
    const char *sig;
    size_t sig_len;
    int rc = text_column(st, col, 0, &sig, &sig_len, err);
    if (rc == 0 && ust_sig_status_parse(sig, out) != 0)
        *out = UST_SIG_INVALID; /* unreadable: the chain check will say so */
    return rc;
}

/* The recorded answer: all three columns NULL (none), or a status with
 * headers and a body (check_types has seen their types). */
static int decode_response(sqlite3_stmt *st, ust_response *a, char **err)
{
    int nulls = 0;
    for (int col = UST__COL_response_status; col <= UST__COL_response_body; col++)
        nulls += sqlite3_column_type(st, col) == SQLITE_NULL;
    if (nulls == 3)
        return 0;
    if (nulls != 0)
        return ust_errf(err, UST_EPARSE,
                        "the response columns are neither all NULL nor all set");
    int64_t status = sqlite3_column_int64(st, UST__COL_response_status);
    if (status < 100 || status > 599)
        return ust_errf(err, UST_EPARSE,
                        "column response_status is not an HTTP status");
    ust_request held; /* the unpacker fills a request's headers */
    memset(&held, 0, sizeof(held));
    int rc = ust_headers_unpack(
        sqlite3_column_blob(st, UST__COL_response_headers),
        (size_t)sqlite3_column_bytes(st, UST__COL_response_headers), &held, err);
    a->status = (int)status;
    a->headers = held.headers;
    a->n_headers = held.n_headers;
    if (rc != 0)
        return rc;
    int blen = sqlite3_column_bytes(st, UST__COL_response_body);
    if (blen > 0) {
        a->body =
            ust_memdup(sqlite3_column_blob(st, UST__COL_response_body), (size_t)blen);
        if (a->body == NULL)
            return UST_ENOMEM;
        a->body_len = (size_t)blen;
    }
    return 0;
}

/* Reads a derived field into the row; a failure goes to fail with rc. */
#define DECODE_WITH(call)                                                              \
    if ((rc = (call)) != 0)                                                            \
        goto fail;
#define DECODE_TEXT(col, m) DECODE_WITH(dup_column(st, col, 1, &rec->m, err))
#define DECODE_ROUTE(col, m) DECODE_WITH(dup_column(st, col, 1, &rec->m, err))
#define DECODE_SHA(col, m) DECODE_WITH(copy_hex(st, col, 0, rec->m, err))
#define DECODE_SIG(col, m) DECODE_WITH(sig_column(st, col, &rec->m, err))
/* check_types has seen an INTEGER or NULL */
#define DECODE_AMOUNT(col, m)                                                          \
    rec->has_##m = sqlite3_column_type(st, col) != SQLITE_NULL;                        \
    rec->m = sqlite3_column_int64(st, col);
#define DECODE_CONFIG(col, m) DECODE_WITH(copy_hex(st, col, 1, rec->m, err))
#define DECODE(kind, m, column, wire, wire_at, export, source)                         \
    DECODE_##kind(UST__COL_##column, m)

int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err)
{
    memset(rec, 0, sizeof(*rec));
    int rc = check_types(st, err);
    if (rc != 0)
        return rc;
    rec->seq = sqlite3_column_int64(st, UST__COL_seq);
    rec->req.received_at_us = sqlite3_column_int64(st, UST__COL_received_at);
    if ((rc = dup_column(st, UST__COL_remote, 0, &rec->req.remote, err)) != 0 ||
        (rc = dup_column(st, UST__COL_method, 0, &rec->req.method, err)) != 0 ||
        (rc = dup_column(st, UST__COL_target, 0, &rec->req.target, err)) != 0)
        goto fail;
    rc = ust_headers_unpack(sqlite3_column_blob(st, UST__COL_headers),
                            (size_t)sqlite3_column_bytes(st, UST__COL_headers),
                            &rec->req, err);
    if (rc != 0)
        goto fail;
    int blen = sqlite3_column_bytes(st, UST__COL_body);
    if (blen > 0) {
        rec->req.body =
            ust_memdup(sqlite3_column_blob(st, UST__COL_body), (size_t)blen);
        if (rec->req.body == NULL) {
            rc = UST_ENOMEM;
            goto fail;
        }
        rec->req.body_len = (size_t)blen;
    }
    UST_EVENT_FIELDS(DECODE)
    if ((rc = decode_response(st, &rec->response, err)) != 0)
        goto fail;
    if (prev != NULL)
        copy_hash(st, UST__COL_prev_hash, prev);
    copy_hash(st, UST__COL_hash, rec->hash);
    return 0;
fail:
    ust_log_record_clear(rec);
    return rc;
}

/* A cursor over the rows that where (a condition on ?1) selects, in order. */
static int cursor_open(ust_log *log, const char *where, int64_t seq,
                       ust_log_cursor **out, char **err)
{
    *out = NULL;
    ust_log_cursor *cur = ust_calloc(1, sizeof(*cur));
    if (cur == NULL)
        return UST_ENOMEM;
    cur->log = log;
    char *sql = ust_sprintf("%s WHERE %s", ust__log_select(log), where);
    if (sql == NULL ||
        sqlite3_prepare_v2(log->db, sql, -1, &cur->st, NULL) != SQLITE_OK) {
        ust_free(sql);
        ust_free(cur);
        return sql == NULL ? UST_ENOMEM : ust__log_db_error(log, "read events", err);
    }
    ust_free(sql);
    sqlite3_bind_int64(cur->st, 1, seq);
    *out = cur;
    return 0;
}

int ust_log_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err)
{
    return cursor_open(log, "seq > ?1 ORDER BY seq", after_seq, out, err);
}

int ust_log_cursor_open_before(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                               char **err)
{
    return cursor_open(log, "seq < ?1 ORDER BY seq DESC", before_seq, out, err);
}

int ust_log_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err)
{
    ust_log_record_clear(rec);
    int step = sqlite3_step(cur->st);
    if (step == SQLITE_DONE)
        return 0;
    if (step != SQLITE_ROW)
        return ust__log_db_error(cur->log, "read events", err);
    int rc = ust__log_row_decode(cur->st, rec, NULL, err);
    return rc == 0 ? 1 : rc;
}

void ust_log_cursor_close(ust_log_cursor *cur)
{
    if (cur == NULL)
        return;
    sqlite3_finalize(cur->st);
    ust_free(cur);
}
