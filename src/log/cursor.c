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
    ust_free(rec->route);
    ust_free(rec->provider);
    ust_free(rec->event_id);
    ust_free(rec->identity);
    ust_free(rec->event_type);
    ust_free(rec->transaction_id);
    ust_free(rec->target_status);
    ust_free(rec->currency);
    ust_free(rec->intent);
    ust_free(rec->idem_key);
    ust_free(rec->tenant);
    memset(rec, 0, sizeof(*rec));
}

static const char *const column_names[] = {
    "seq",           "received_at", "remote",     "method",
    "target",        "headers",     "body",       "route",
    "provider",      "event_id",    "identity",   "request_sha256",
    "signature",     "config_hash", "event_type", "transaction_id",
    "target_status", "amount",      "currency",   "intent",
    "idem_key",      "tenant",      "prev_hash",  "hash"};

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

static int dup_column(sqlite3_stmt *st, int col, char **out, char **err)
{
    const char *s;
    size_t n;
    *out = NULL;
    int rc = text_column(st, col, col >= 7, &s, &n, err);
    if (rc != 0 || s == NULL)
        return rc;
    *out = ust_strndup(s, n);
    return *out ? 0 : UST_ENOMEM;
}

static int copy_hex(sqlite3_stmt *st, int col, char hex[UST_SHA256_HEX_LEN + 1],
                    char **err)
{
    const char *s;
    size_t n;
    int rc = text_column(st, col, col == 13, &s, &n, err);
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

/* Columns read as numbers or bytes must hold that type: SQLite would convert
 * '12abc' to 12, and the hash would not see the difference. */
static int check_types(sqlite3_stmt *st, char **err)
{
    static const struct {
        int col, type, nullable;
    } want[] = {{0, SQLITE_INTEGER, 0},
                {1, SQLITE_INTEGER, 0},
                {5, SQLITE_BLOB, 0},
                {6, SQLITE_BLOB, 0},
                {17, SQLITE_INTEGER, 1}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int type = sqlite3_column_type(st, want[i].col);
        if (type != want[i].type && !(want[i].nullable && type == SQLITE_NULL))
            return ust_errf(err, UST_EPARSE, "column %s has the wrong type",
                            column_names[want[i].col]);
    }
    return 0;
}

int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err)
{
    memset(rec, 0, sizeof(*rec));
    int rc = check_types(st, err);
    if (rc != 0)
        return rc;
    rec->seq = sqlite3_column_int64(st, 0);
    rec->req.received_at_us = sqlite3_column_int64(st, 1);
    if ((rc = dup_column(st, 2, &rec->req.remote, err)) != 0 ||
        (rc = dup_column(st, 3, &rec->req.method, err)) != 0 ||
        (rc = dup_column(st, 4, &rec->req.target, err)) != 0)
        goto fail;
    rc = ust__headers_unpack(sqlite3_column_blob(st, 5),
                             (size_t)sqlite3_column_bytes(st, 5), &rec->req, err);
    if (rc != 0)
        goto fail;
    int blen = sqlite3_column_bytes(st, 6);
    if (blen > 0) {
        rec->req.body = ust_memdup(sqlite3_column_blob(st, 6), (size_t)blen);
        if (rec->req.body == NULL) {
            rc = UST_ENOMEM;
            goto fail;
        }
        rec->req.body_len = (size_t)blen;
    }
    if ((rc = dup_column(st, 7, &rec->route, err)) != 0 ||
        (rc = dup_column(st, 8, &rec->provider, err)) != 0 ||
        (rc = dup_column(st, 9, &rec->event_id, err)) != 0 ||
        (rc = dup_column(st, 10, &rec->identity, err)) != 0 ||
        (rc = copy_hex(st, 11, rec->request_sha256, err)) != 0)
        goto fail;
    const char *sig;
    size_t sig_len;
    if ((rc = text_column(st, 12, 0, &sig, &sig_len, err)) != 0)
        goto fail;
    if (ust_sig_status_parse(sig, &rec->sig) != 0)
        rec->sig = UST_SIG_INVALID; /* unreadable: the chain check will say so */
    if ((rc = copy_hex(st, 13, rec->config_hash, err)) != 0 ||
        (rc = dup_column(st, 14, &rec->event_type, err)) != 0 ||
        (rc = dup_column(st, 15, &rec->transaction_id, err)) != 0 ||
        (rc = dup_column(st, 16, &rec->target_status, err)) != 0 ||
        (rc = dup_column(st, 18, &rec->currency, err)) != 0 ||
        (rc = dup_column(st, 19, &rec->intent, err)) != 0 ||
        (rc = dup_column(st, 20, &rec->idem_key, err)) != 0 ||
        (rc = dup_column(st, 21, &rec->tenant, err)) != 0)
        goto fail;
    rec->has_amount = sqlite3_column_type(st, 17) != SQLITE_NULL;
    rec->amount = sqlite3_column_int64(st, 17);
    if (prev != NULL)
        copy_hash(st, 22, prev);
    copy_hash(st, 23, rec->hash);
    return 0;
fail:
    ust_log_record_clear(rec);
    return rc;
}

int ust_log_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err)
{
    *out = NULL;
    ust_log_cursor *cur = ust_calloc(1, sizeof(*cur));
    if (cur == NULL)
        return UST_ENOMEM;
    cur->log = log;
    if (sqlite3_prepare_v2(log->db,
                           "SELECT " UST__LOG_COLUMNS
                           " FROM events WHERE seq > ?1 ORDER BY seq",
                           -1, &cur->st, NULL) != SQLITE_OK) {
        ust_free(cur);
        return ust__log_db_error(log, "read events", err);
    }
    sqlite3_bind_int64(cur->st, 1, after_seq);
    *out = cur;
    return 0;
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
