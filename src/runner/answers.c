#include "runner/answers.h"
#include "runner/decision_row.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/error.h>
#include <understudy/runner.h>

#include <string.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    /* FULL, as the event log: a commit is on disk before it returns, and
     * only then is the answer relayed (--respond upstream) or given
     * (--respond legacy). The responder commits a batch at a time: one sync
     * for every request queued behind the last (group commit). */
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS cursor(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " last_seq INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO cursor(id, last_seq) VALUES(1, 0);"
    "CREATE TABLE IF NOT EXISTS answers(seq INTEGER PRIMARY KEY,"
    " entity TEXT" UST__DECISION_COLUMN_DEFS_NOT_NULL() ");"
                                                        /* --respond upstream: the
                                                         * service's answer as it came,
                                                         * beside the decision read from
                                                         * it (headers packed
                                                         * "name\0value\0", as the
                                                         * log's). */
                                                        "CREATE TABLE IF NOT EXISTS "
                                                        "responses(seq INTEGER PRIMARY "
                                                        "KEY,"
                                                        " status INTEGER NOT NULL, "
                                                        "headers BLOB NOT NULL, body "
                                                        "BLOB NOT NULL);";

int ust__answers_open(const char *path, int readonly, sqlite3 **db, char **err)
{
    return ust__db_open(path, readonly, schema, "answers database", db, err);
}

char *ust_answers_path(const char *run_path)
{
    return ust_sprintf("%s.answers", run_path);
}

struct ust_answers {
    const ust_config *cfg; /* its capture.mask_headers, NULL: none */
    sqlite3 *db;
    ust_store *store;
    sqlite3_stmt *insert, *cursor, *response;
    char *pack; /* reusable buffer for packed headers */
    size_t pack_cap;
};

static int db_error(ust_answers *a, char **err)
{
    return ust_errf(err, UST_EDB, "answers: %s", sqlite3_errmsg(a->db));
}

int ust_answers_writer_open(const char *path, const ust_config *cfg, ust_answers **out,
                            char **err)
{
    *out = NULL;
    ust_answers *a = ust_calloc(1, sizeof(*a));
    if (a == NULL)
        return UST_ENOMEM;
    a->cfg = cfg;
    int rc = ust__answers_open(path, 0, &a->db, err);
    if (rc == 0)
        rc = ust_store_open(a->db, &a->store, err);
    if (rc == 0 &&
        (sqlite3_prepare_v2(a->db, UST__ANSWERS_INSERT, -1, &a->insert, NULL) ||
         sqlite3_prepare_v2(a->db, UST__ANSWERS_CURSOR, -1, &a->cursor, NULL) ||
         sqlite3_prepare_v2(a->db, UST__ANSWERS_RESPONSE, -1, &a->response, NULL)))
        rc = db_error(a, err);
    if (rc != 0) {
        ust_answers_writer_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

int ust_answers_writer_close(ust_answers *a)
{
    if (a == NULL)
        return 0;
    ust_store_close(a->store);
    sqlite3_finalize(a->insert);
    sqlite3_finalize(a->cursor);
    sqlite3_finalize(a->response);
    /* The whole WAL into the database file, as the log's close does, so the
     * file alone holds every answer (a copy of it, or a lost -wal, loses
     * none). The runner reads beside it: the busy timeout waits for its
     * read to end. On failure the WAL keeps it all for the next open. */
    int in_wal = a->db != NULL &&
                 sqlite3_wal_checkpoint_v2(a->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
                                           NULL, NULL) != SQLITE_OK;
    sqlite3_close(a->db);
    ust_free(a->pack);
    ust_free(a);
    return in_wal;
}

ust_store *ust_answers_store(ust_answers *a)
{
    return a->store;
}

int ust_answers_cursor(ust_answers *a, int64_t *seq, char **err)
{
    return ust__rundb_cursor(a->db, seq, err);
}

int ust_answers_begin(ust_answers *a, char **err)
{
    return sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : db_error(a, err);
}

/* d's headers as stored: a copy with capture.mask_headers' values masked
 * (*out NULL: d's own, nothing to mask). The caller answers with d. */
static int masked_decision_headers(const ust_answers *a, const ust_decision *d,
                                   json_t **out)
{
    *out = NULL;
    const char *name;
    json_t *v;
    json_object_foreach(d->headers, name, v)
    {
        char *digest = NULL;
        if (ust_capture_mask_value(a->cfg, name, json_string_value(v), &digest) != 0)
            return UST_ENOMEM;
        if (digest == NULL)
            continue;
        if (*out == NULL && (*out = json_copy(d->headers)) == NULL) {
            ust_free(digest);
            return UST_ENOMEM;
        }
        int set = json_object_set_new(*out, name, json_string(digest));
        ust_free(digest);
        if (set != 0)
            return UST_ENOMEM; /* *out is the caller's to release */
    }
    return 0;
}

int ust_answers_put(ust_answers *a, int64_t seq, const char *entity,
                    const ust_decision *d, char **err)
{
    ust_decision stored = *d; /* shallow: only the headers differ */
    json_t *masked = NULL;
    if (masked_decision_headers(a, d, &masked) != 0) {
        json_decref(masked);
        return UST_ENOMEM;
    }
    if (masked != NULL)
        stored.headers = masked;
    sqlite3_stmt *st = a->insert;
    sqlite3_bind_int64(st, 1, seq);
    if (entity != NULL)
        sqlite3_bind_text(st, 2, entity, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    ust__decision_bind(st, 3, &stored);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(a, err);
    sqlite3_reset(st);
    json_decref(masked);
    return rc;
}

/* Packs headers as stored into a->pack: capture.mask_headers' values
 * masked; the caller's headers (relayed as they came) are left as they are. */
static int pack_masked(ust_answers *a, const ust_header *headers, size_t n, size_t *len)
{
    ust_header *stored = n ? ust_malloc(n * sizeof(*stored)) : NULL;
    if (n > 0 && stored == NULL)
        return UST_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *digest = NULL;
        stored[i] = headers[i];
        if (rc == 0)
            rc = ust_capture_mask_value(a->cfg, headers[i].name, headers[i].value,
                                        &digest);
        if (digest != NULL)
            stored[i].value = digest;
    }
    if (rc == 0 && ust_headers_pack(stored, n, &a->pack, &a->pack_cap, len) != 0)
        rc = UST_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (stored[i].value != headers[i].value)
            ust_free(stored[i].value);
    ust_free(stored);
    return rc;
}

int ust_answers_put_response(ust_answers *a, int64_t seq, int status,
                             const ust_header *headers, size_t n_headers,
                             const unsigned char *body, size_t body_len, char **err)
{
    size_t len = 0;
    if (pack_masked(a, headers, n_headers, &len) != 0)
        return UST_ENOMEM;
    sqlite3_stmt *st = a->response;
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int(st, 2, status);
    /* An empty blob is bound as "" of length 0: NOT NULL holds. */
    sqlite3_bind_blob(st, 3, len ? a->pack : "", (int)len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, body_len ? (const void *)body : "", (int)body_len,
                      SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(a, err);
    sqlite3_clear_bindings(st);
    sqlite3_reset(st);
    return rc;
}

int ust_answers_commit(ust_answers *a, int64_t through, char **err)
{
    int rc = 0;
    if (through > 0) {
        rc = ust_store_flush(a->store, err);
        sqlite3_bind_int64(a->cursor, 1, through);
        if (rc == 0 && sqlite3_step(a->cursor) != SQLITE_DONE)
            rc = db_error(a, err);
        sqlite3_reset(a->cursor);
    }
    if (rc == 0 && sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_error(a, err);
    if (rc != 0)
        ust_answers_rollback(a);
    return rc;
}

void ust_answers_rollback(ust_answers *a)
{
    sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
    ust_store_discard(a->store);
}
