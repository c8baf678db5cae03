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

int ust_log_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err)
{
    return cur->log->backend->cursor_next(cur, rec, err);
}

void ust_log_cursor_close(ust_log_cursor *cur)
{
    if (cur != NULL)
        cur->log->backend->cursor_close(cur);
}

int ust_log_verify(ust_log *log, ust_log_verify_result *res, char **err)
{
    return ust_log_verify_anchored(log, 0, NULL, res, err);
}

int ust_log_verify_anchored(ust_log *log, int64_t anchor_seq, const char *anchor_hex,
                            ust_log_verify_result *res, char **err)
{
    memset(res, 0, sizeof(*res));
    char hex[UST_SHA256_HEX_LEN + 1] = "";
    if (anchor_seq > 0) {
        if (anchor_hex == NULL || strlen(anchor_hex) != UST_SHA256_HEX_LEN)
            return ust_errf(err, UST_EINVAL,
                            "an anchor is a seq and its 64-digit hex hash");
        for (int i = 0; i < UST_SHA256_HEX_LEN; i++) /* as ust_hex_encode spells it */
            hex[i] = (char)tolower((unsigned char)anchor_hex[i]);
    }
    return log->backend->verify(log, anchor_seq, anchor_seq > 0 ? hex : NULL, res, err);
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
