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

static int dup_column(sqlite3_stmt *st, int col, char **out)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    if (s == NULL) {
        *out = NULL;
        return 0;
    }
    *out = ust_strndup((const char *)s, (size_t)sqlite3_column_bytes(st, col));
    return *out ? 0 : UST_ENOMEM;
}

static void copy_hex(sqlite3_stmt *st, int col, char hex[UST_SHA256_HEX_LEN + 1])
{
    const unsigned char *s = sqlite3_column_text(st, col);
    size_t n = s ? (size_t)sqlite3_column_bytes(st, col) : 0;
    if (n > UST_SHA256_HEX_LEN)
        n = UST_SHA256_HEX_LEN;
    if (n > 0)
        memcpy(hex, s, n);
    hex[n] = '\0';
}

static void copy_hash(sqlite3_stmt *st, int col, unsigned char out[UST_SHA256_LEN])
{
    const void *b = sqlite3_column_blob(st, col);
    memset(out, 0, UST_SHA256_LEN);
    if (b != NULL && sqlite3_column_bytes(st, col) == UST_SHA256_LEN)
        memcpy(out, b, UST_SHA256_LEN);
}

int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err)
{
    memset(rec, 0, sizeof(*rec));
    rec->seq = sqlite3_column_int64(st, 0);
    rec->req.received_at_us = sqlite3_column_int64(st, 1);
    int rc = 0;
    if ((rc = dup_column(st, 2, &rec->req.remote)) != 0 ||
        (rc = dup_column(st, 3, &rec->req.method)) != 0 ||
        (rc = dup_column(st, 4, &rec->req.target)) != 0)
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
    if ((rc = dup_column(st, 7, &rec->route)) != 0 ||
        (rc = dup_column(st, 8, &rec->provider)) != 0 ||
        (rc = dup_column(st, 9, &rec->event_id)) != 0 ||
        (rc = dup_column(st, 10, &rec->identity)) != 0)
        goto fail;
    copy_hex(st, 11, rec->request_sha256);
    const char *sig = (const char *)sqlite3_column_text(st, 12);
    if (sig == NULL || ust_sig_status_parse(sig, &rec->sig) != 0)
        rec->sig = UST_SIG_INVALID; /* unreadable: the chain check will say so */
    copy_hex(st, 13, rec->config_hash);
    if ((rc = dup_column(st, 14, &rec->event_type)) != 0 ||
        (rc = dup_column(st, 15, &rec->transaction_id)) != 0 ||
        (rc = dup_column(st, 16, &rec->target_status)) != 0 ||
        (rc = dup_column(st, 18, &rec->currency)) != 0 ||
        (rc = dup_column(st, 19, &rec->intent)) != 0 ||
        (rc = dup_column(st, 20, &rec->idem_key)) != 0 ||
        (rc = dup_column(st, 21, &rec->tenant)) != 0)
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
