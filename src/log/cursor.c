/* Reading rows back in seq order. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

typedef struct sqlite_cursor {
    ust_log_cursor base;
    sqlite3_stmt *st;
    /* Opened with ust_log_cursor_open_fields: the config hash under which a
     * row comes without its raw request. */
    char config_hash[UST_SHA256_HEX_LEN + 1];
    int fields;
} sqlite_cursor;

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

#define COLUMN_NAME(kind, m, column, wire, wire_at, export, source, since, desc)       \
#column,
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

/* A column of a row being decoded, whichever backend read it. */
static ust__val_type col_type(const ust__row_source *src, int col)
{
    return src->type(src->ctx, col);
}

static const void *col_bytes(const ust__row_source *src, int col, size_t *len)
{
    return src->bytes(src->ctx, col, len);
}

/* A text column as the hash saw it: TEXT (or NULL where allowed) with no NUL
 * byte. The hash covers a string up to its first NUL, so bytes stored after
 * one would escape it: such a row is refused, never read short. */
static int text_column(const ust__row_source *src, int col, int nullable,
                       const char **out, size_t *len, char **err)
{
    ust__val_type type = col_type(src, col);
    *out = NULL;
    *len = 0;
    if (type == UST__VAL_NULL && nullable)
        return 0;
    if (type != UST__VAL_TEXT)
        return ust_errf(err, UST_EPARSE, "column %s is not text", column_names[col]);
    size_t n = 0;
    const char *s = col_bytes(src, col, &n);
    if (s == NULL)
        return UST_ENOMEM;
    if (memchr(s, '\0', n) != NULL)
        return ust_errf(err, UST_EPARSE, "column %s holds a NUL byte",
                        column_names[col]);
    *out = s;
    *len = n;
    return 0;
}

static int dup_column(const ust__row_source *src, int col, int nullable, char **out,
                      char **err)
{
    const char *s;
    size_t n;
    *out = NULL;
    int rc = text_column(src, col, nullable, &s, &n, err);
    if (rc != 0 || s == NULL)
        return rc;
    *out = ust_strndup(s, n);
    return *out ? 0 : UST_ENOMEM;
}

static int copy_hex(const ust__row_source *src, int col, int nullable,
                    char hex[UST_SHA256_HEX_LEN + 1], char **err)
{
    const char *s;
    size_t n;
    int rc = text_column(src, col, nullable, &s, &n, err);
    if (rc != 0)
        return rc;
    if (n > UST_SHA256_HEX_LEN)
        return ust_errf(err, UST_EPARSE, "column %s is too long", column_names[col]);
    if (n > 0)
        memcpy(hex, s, n);
    hex[n] = '\0';
    return 0;
}

static void copy_hash(const ust__row_source *src, int col,
                      unsigned char out[UST_SHA256_LEN])
{
    size_t n = 0;
    const void *b =
        col_type(src, col) == UST__VAL_BLOB ? col_bytes(src, col, &n) : NULL;
    memset(out, 0, UST_SHA256_LEN);
    if (b != NULL && n == UST_SHA256_LEN)
        memcpy(out, b, UST_SHA256_LEN);
}

/* A derived field read as a number, and the type it must have. */
#define TYPE_CHECK_TEXT(col)
#define TYPE_CHECK_ROUTE(col)
#define TYPE_CHECK_SHA(col)
#define TYPE_CHECK_SIG(col)
#define TYPE_CHECK_AMOUNT(col) {UST__COL_##col, UST__VAL_INT, 1},
#define TYPE_CHECK_CONFIG(col)
#define TYPE_CHECK(kind, m, column, wire, wire_at, export, source, since, desc)        \
    TYPE_CHECK_##kind(column)

/* Columns read as numbers or bytes must hold that type: SQLite would convert
 * '12abc' to 12, and the hash would not see the difference. A row read
 * without its raw request (raw 0) is not checked where it has none. */
static int check_types(const ust__row_source *src, int raw, char **err)
{
    static const struct {
        int col;
        ust__val_type type;
        int nullable;
    } want[] = {{UST__COL_seq, UST__VAL_INT, 0},
                {UST__COL_received_at, UST__VAL_INT, 0},
                {UST__COL_headers, UST__VAL_BLOB, 0}, /* the raw request's */
                {UST__COL_body, UST__VAL_BLOB, 0},
                {UST__COL_response_status, UST__VAL_INT, 1},
                {UST__COL_response_headers, UST__VAL_BLOB, 1},
                {UST__COL_response_body, UST__VAL_BLOB, 1},
                UST_EVENT_FIELDS(TYPE_CHECK)};
    for (size_t i = 0; i < UST_ARRAY_SIZE(want); i++) {
        if (!raw && (want[i].col == UST__COL_headers || want[i].col == UST__COL_body))
            continue;
        ust__val_type type = col_type(src, want[i].col);
        if (type != want[i].type && !(want[i].nullable && type == UST__VAL_NULL))
            return ust_errf(err, UST_EPARSE, "column %s has the wrong type",
                            column_names[want[i].col]);
    }
    return 0;
}

static int sig_column(const ust__row_source *src, int col, ust_sig_status *out,
                      char **err)
{
    char *sig = NULL;
    int rc = dup_column(src, col, 0, &sig, err);
    if (rc == 0 && ust_sig_status_parse(sig, out) != 0)
        *out = UST_SIG_INVALID; /* unreadable: the chain check will say so */
    ust_free(sig);
    return rc;
}

/* A blob column's bytes into a copy of its own (*out NULL when empty). */
static int dup_blob(const ust__row_source *src, int col, unsigned char **out,
                    size_t *len)
{
    size_t n = 0;
    const void *b = col_bytes(src, col, &n);
    *out = NULL;
    *len = 0;
    if (n == 0)
        return 0;
    if ((*out = ust_memdup(b, n)) == NULL)
        return UST_ENOMEM;
    *len = n;
    return 0;
}

static int unpack_headers(const ust__row_source *src, int col, ust_request *req,
                          char **err)
{
    size_t n = 0;
    const void *b = col_bytes(src, col, &n);
    return ust_headers_unpack(b, n, req, err);
}

/* The recorded answer: all three columns NULL (none), or a status with
 * headers and a body (check_types has seen their types). */
static int decode_response(const ust__row_source *src, ust_response *a, char **err)
{
    int nulls = 0;
    for (int col = UST__COL_response_status; col <= UST__COL_response_body; col++)
        nulls += col_type(src, col) == UST__VAL_NULL;
    if (nulls == 3)
        return 0;
    if (nulls != 0)
        return ust_errf(err, UST_EPARSE,
                        "the response columns are neither all NULL nor all set");
    int64_t status = src->int64(src->ctx, UST__COL_response_status);
    if (status < 100 || status > 599)
        return ust_errf(err, UST_EPARSE,
                        "column response_status is not an HTTP status");
    ust_request held; /* the unpacker fills a request's headers */
    memset(&held, 0, sizeof(held));
    int rc = unpack_headers(src, UST__COL_response_headers, &held, err);
    a->status = (int)status;
    a->headers = held.headers;
    a->n_headers = held.n_headers;
    if (rc != 0)
        return rc;
    return dup_blob(src, UST__COL_response_body, &a->body, &a->body_len);
}

/* The raw request as it arrived, but for its time. */
static int decode_request(const ust__row_source *src, ust_request *req, char **err)
{
    int rc;
    if ((rc = dup_column(src, UST__COL_remote, 0, &req->remote, err)) != 0 ||
        (rc = dup_column(src, UST__COL_method, 0, &req->method, err)) != 0 ||
        (rc = dup_column(src, UST__COL_target, 0, &req->target, err)) != 0 ||
        (rc = unpack_headers(src, UST__COL_headers, req, err)) != 0)
        return rc;
    return dup_blob(src, UST__COL_body, &req->body, &req->body_len);
}

/* Reads a derived field into the row; a failure goes to fail with rc. */
#define DECODE_WITH(call)                                                              \
    if ((rc = (call)) != 0)                                                            \
        goto fail;
#define DECODE_TEXT(col, m) DECODE_WITH(dup_column(src, col, 1, &rec->m, err))
#define DECODE_ROUTE(col, m) DECODE_WITH(dup_column(src, col, 1, &rec->m, err))
#define DECODE_SHA(col, m) DECODE_WITH(copy_hex(src, col, 0, rec->m, err))
#define DECODE_SIG(col, m) DECODE_WITH(sig_column(src, col, &rec->m, err))
/* check_types has seen an INTEGER or NULL */
#define DECODE_AMOUNT(col, m)                                                          \
    rec->has_##m = col_type(src, col) != UST__VAL_NULL;                                \
    rec->m = rec->has_##m ? src->int64(src->ctx, col) : 0;
#define DECODE_CONFIG(col, m) DECODE_WITH(copy_hex(src, col, 1, rec->m, err))
#define DECODE(kind, m, column, wire, wire_at, export, source, since, desc)            \
    DECODE_##kind(UST__COL_##column, m)

/* The row, with its raw request (remote, method, target, headers, body)
 * when raw, else with the request's time alone. */
static int row_decode(const ust__row_source *src, int raw, ust_log_record *rec,
                      unsigned char prev[UST_SHA256_LEN], char **err)
{
    memset(rec, 0, sizeof(*rec));
    int rc = check_types(src, raw, err);
    if (rc != 0)
        return rc;
    rec->seq = src->int64(src->ctx, UST__COL_seq);
    rec->req.received_at_us = src->int64(src->ctx, UST__COL_received_at);
    if (raw && (rc = decode_request(src, &rec->req, err)) != 0)
        goto fail;
    UST_EVENT_FIELDS(DECODE)
    if ((rc = decode_response(src, &rec->response, err)) != 0)
        goto fail;
    if (prev != NULL)
        copy_hash(src, UST__COL_prev_hash, prev);
    copy_hash(src, UST__COL_hash, rec->hash);
    return 0;
fail:
    ust_log_record_clear(rec);
    return rc;
}

int ust__log_row_decode_from(const ust__row_source *src, ust_log_record *rec,
                             unsigned char prev[UST_SHA256_LEN], char **err)
{
    return row_decode(src, 1, rec, prev, err);
}

/* The SQLite row source: a stepped statement. */
static ust__val_type sqlite_type(void *ctx, int col)
{
    switch (sqlite3_column_type(ctx, col)) {
    case SQLITE_INTEGER:
        return UST__VAL_INT;
    case SQLITE_TEXT:
        return UST__VAL_TEXT;
    case SQLITE_BLOB:
        return UST__VAL_BLOB;
    case SQLITE_NULL:
        return UST__VAL_NULL;
    default:
        return UST__VAL_OTHER;
    }
}

static int64_t sqlite_integer(void *ctx, int col)
{
    return sqlite3_column_int64(ctx, col);
}

/* Text through sqlite3_column_text (NUL-terminated, never converted from
 * a blob here: the types were checked first), anything else as a blob. */
static const void *sqlite_bytes(void *ctx, int col, size_t *len)
{
    const void *b = sqlite3_column_type(ctx, col) == SQLITE_TEXT
                        ? (const void *)sqlite3_column_text(ctx, col)
                        : sqlite3_column_blob(ctx, col);
    *len = (size_t)sqlite3_column_bytes(ctx, col);
    return b;
}

ust__row_source ust__sqlite_row_source(sqlite3_stmt *st)
{
    ust__row_source src = {sqlite_type, sqlite_integer, sqlite_bytes, st};
    return src;
}

int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err)
{
    ust__row_source src = ust__sqlite_row_source(st);
    return ust__log_row_decode_from(&src, rec, prev, err);
}

/* A cursor over the rows that where (a condition on ?1) selects, in order,
 * with the columns select names (UST__COL_* order). */
static int cursor_open(ust_log *log, const char *select, const char *where, int64_t seq,
                       ust_log_cursor **out, char **err)
{
    *out = NULL;
    sqlite_cursor *cur = ust_calloc(1, sizeof(*cur));
    if (cur == NULL)
        return UST_ENOMEM;
    cur->base.log = log;
    char *sql = ust_sprintf("%s WHERE %s", select, where);
    if (sql == NULL ||
        sqlite3_prepare_v2(log->db, sql, -1, &cur->st, NULL) != SQLITE_OK) {
        ust_free(sql);
        ust_free(cur);
        return sql == NULL ? UST_ENOMEM : ust__log_db_error(log, "read events", err);
    }
    ust_free(sql);
    sqlite3_bind_int64(cur->st, 1, seq);
    *out = &cur->base;
    return 0;
}

int ust__sqlite_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                            char **err)
{
    return cursor_open(log, ust__log_select(log), "seq > ?1 ORDER BY seq", after_seq,
                       out, err);
}

/* A raw request's column, or NULL in a row derived under the config ?2:
 * SQLite then never reads its bytes (a body is most of a row). */
#define RAW_COLUMN(c) "CASE WHEN config_hash = ?2 THEN NULL ELSE " #c " END, "

int ust__sqlite_cursor_open_fields(ust_log *log, int64_t after_seq,
                                   const char *config_hash, ust_log_cursor **out,
                                   char **err)
{
    char *select = ust_sprintf(
        "SELECT seq, received_at, " RAW_COLUMN(remote) RAW_COLUMN(method)
            RAW_COLUMN(target) RAW_COLUMN(headers) RAW_COLUMN(body) "%sNULL, hash, %s"
                                                                    " FROM events",
        log->fields_sql,
        log->responses ? UST__LOG_RESPONSE_COLUMNS : "NULL, NULL, NULL");
    if (select == NULL)
        return UST_ENOMEM;
    int rc = cursor_open(log, select, "seq > ?1 ORDER BY seq", after_seq, out, err);
    ust_free(select);
    if (rc != 0)
        return rc;
    sqlite_cursor *cur = (sqlite_cursor *)*out;
    snprintf(cur->config_hash, sizeof(cur->config_hash), "%s", config_hash);
    cur->fields = 1;
    sqlite3_bind_text(cur->st, 2, cur->config_hash, -1, SQLITE_STATIC);
    return 0;
}

int ust__sqlite_cursor_open_before(ust_log *log, int64_t before_seq,
                                   ust_log_cursor **out, char **err)
{
    return cursor_open(log, ust__log_select(log), "seq < ?1 ORDER BY seq DESC",
                       before_seq, out, err);
}

int ust__sqlite_cursor_next(ust_log_cursor *base, ust_log_record *rec, char **err)
{
    sqlite_cursor *cur = (sqlite_cursor *)base;
    ust_log_record_clear(rec);
    int step = sqlite3_step(cur->st);
    if (step == SQLITE_DONE)
        return 0;
    if (step != SQLITE_ROW)
        return ust__log_db_error(cur->base.log, "read events", err);
    /* Left out by a fields cursor: the raw request of a row derived under
     * its config (the query's test, made again here on the same text). */
    const char *derived_under =
        (const char *)sqlite3_column_text(cur->st, UST__COL_config_hash);
    int raw = !cur->fields || derived_under == NULL ||
              strcmp(derived_under, cur->config_hash) != 0;
    ust__row_source src = ust__sqlite_row_source(cur->st);
    int rc = row_decode(&src, raw, rec, NULL, err);
    return rc == 0 ? 1 : rc;
}

void ust__sqlite_cursor_close(ust_log_cursor *base)
{
    sqlite_cursor *cur = (sqlite_cursor *)base;
    sqlite3_finalize(cur->st);
    ust_free(cur);
}
