/* The public face of the event log: a log path names its backend (a file is
 * SQLite, a postgresql:// URL PostgreSQL), and every call goes to the table
 * of the backend the log was opened with. What both must check the same way
 * (an anchor's spelling) is checked here, once. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <ctype.h>
#include <string.h>

const ust__log_backend *ust__log_backend_for(const char *path)
{
    if (strncmp(path, "postgresql://", 13) == 0 ||
        strncmp(path, "postgres://", 11) == 0)
        return &ust__log_pg;
    return &ust__log_sqlite;
}

int ust_log_open(const char *path, unsigned flags, ust_log **out, char **err)
{
    *out = NULL;
    return ust__log_backend_for(path)->open(path, flags, out, err);
}

int ust_log_close(ust_log *log)
{
    return log == NULL ? 0 : log->backend->close(log);
}

int ust_log_append(ust_log *log, const ust_log_record *recs, size_t n,
                   int64_t *first_seq, char **err)
{
    int rc = n > 0 ? ust__log_check_records(log, recs, n, err) : 0;
    return rc != 0 ? rc : log->backend->append(log, recs, n, first_seq, err);
}

int ust_log_begin(ust_log *log, char **err)
{
    return log->backend->begin(log, err);
}

int ust_log_commit(ust_log *log, char **err)
{
    return log->backend->commit(log, err);
}

void ust_log_rollback(ust_log *log)
{
    log->backend->rollback(log);
}

int ust_log_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err)
{
    *out = NULL;
    return log->backend->cursor_open(log, after_seq, out, err);
}

int ust_log_cursor_open_before(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                               char **err)
{
    *out = NULL;
    return log->backend->cursor_open_before(log, before_seq, out, err);
}

int ust_log_cursor_open_fields(ust_log *log, int64_t after_seq, const char *config_hash,
                               ust_log_cursor **out, char **err)
{
    *out = NULL;
    return log->backend->cursor_open_fields != NULL
               ? log->backend->cursor_open_fields(log, after_seq, config_hash, out, err)
               : log->backend->cursor_open(log, after_seq, out, err);
}

int ust_log_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err)
{
    return cur->log->backend->cursor_next(cur, rec, err);
}

void ust_log_cursor_close(ust_log_cursor *cur)
{
    if (cur != NULL)
        cur->log->backend->cursor_close(cur);
}

int ust_log_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                      int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                      char **err)
{
    return log->backend->read_seqs(log, seqs, n, fn, ctx, err);
}

int ust_log_scan(ust_log *log, const ust_log_scan_opts *o,
                 int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                 char **err)
{
    if ((unsigned)o->order > UST_LOG_SCAN_KEY || (unsigned)o->select > UST_LOG_SCAN_API)
        return ust_errf(err, UST_EINVAL, "%s: no such scan", log->path);
    return log->backend->scan(log, o, each, ctx, err);
}

int ust_log_verify(ust_log *log, ust_log_verify_result *res, char **err)
{
    return ust_log_verify_anchored(log, 0, NULL, res, err);
}

/* A hash given to compare with, as ust_hex_encode spells it: 64 hex digits,
 * lowercase. */
static int spell_hash(const char *given, char hex[UST_SHA256_HEX_LEN + 1], char **err)
{
    if (strlen(given) != UST_SHA256_HEX_LEN)
        return ust_errf(err, UST_EINVAL,
                        "an anchor is a seq and its 64-digit hex hash");
    for (int i = 0; i <= UST_SHA256_HEX_LEN; i++)
        hex[i] = (char)tolower((unsigned char)given[i]);
    return 0;
}

int ust_log_verify_anchored(ust_log *log, int64_t anchor_seq, const char *anchor_hex,
                            ust_log_verify_result *res, char **err)
{
    memset(res, 0, sizeof(*res));
    char hex[UST_SHA256_HEX_LEN + 1] = "";
    if (anchor_seq > 0) {
        int rc = anchor_hex == NULL ? spell_hash("", hex, err)
                                    : spell_hash(anchor_hex, hex, err);
        if (rc != 0)
            return rc;
    }
    return log->backend->verify(log, INT64_MAX, anchor_seq, anchor_seq > 0 ? hex : NULL,
                                res, err);
}

int ust_log_verify_through(ust_log *log, int64_t through_seq, const char *through_hex,
                           ust_log_verify_result *res, char **err)
{
    memset(res, 0, sizeof(*res));
    if (through_seq <= 0)
        return ust_errf(err, UST_EINVAL, "verify through a seq >= 1");
    char hex[UST_SHA256_HEX_LEN + 1] = "";
    if (through_hex != NULL) {
        int rc = spell_hash(through_hex, hex, err);
        if (rc != 0)
            return rc;
    }
    return log->backend->verify(log, through_seq, through_seq,
                                through_hex != NULL ? hex : NULL, res, err);
}

int ust_log_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                 char **err)
{
    return log->backend->head(log, seq, hex, err);
}

int ust_log_stats(ust_log *log, json_t **out, char **err)
{
    *out = NULL;
    return log->backend->stats(log, out, err);
}

int ust_log_prune(ust_log *log, int64_t before_us, int64_t now_us, int64_t *n_pruned,
                  char **err)
{
    return ust_log_prune_through(log, before_us, INT64_MAX, now_us, n_pruned, err);
}

int ust_log_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                          int64_t now_us, int64_t *n_pruned, char **err)
{
    if (n_pruned != NULL)
        *n_pruned = 0;
    return log->backend->prune_through(log, before_us, max_seq, now_us, n_pruned, err);
}

int ust_log_backup(ust_log *log, const char *out_path, char **err)
{
    return log->backend->backup(log, out_path, err);
}
