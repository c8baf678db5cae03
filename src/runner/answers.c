#include "runner/answers.h"
#include "runner/decision_row.h"
#include "runner/rundb.h"

#include <understudy/error.h>
#include <understudy/alloc.h>
#include <understudy/runner.h>

#include <string.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
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

int ust_answers_writer_open(const char *path, ust_answers **out, char **err)
{
    *out = NULL;
    ust_answers *a = ust_calloc(1, sizeof(*a));
    if (a == NULL)
        return UST_ENOMEM;
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

void ust_answers_writer_close(ust_answers *a)
{
    if (a == NULL)
        return;
    ust_store_close(a->store);
    sqlite3_finalize(a->insert);
    sqlite3_finalize(a->cursor);
    sqlite3_finalize(a->response);
    sqlite3_close(a->db);
    ust_free(a->pack);
    ust_free(a);
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

int ust_answers_put(ust_answers *a, int64_t seq, const char *entity,
                    const ust_decision *d, char **err)
{
    sqlite3_stmt *st = a->insert;
    sqlite3_bind_int64(st, 1, seq);
    if (entity != NULL)
        sqlite3_bind_text(st, 2, entity, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    ust__decision_bind(st, 3, d);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(a, err);
    sqlite3_reset(st);
    return rc;
}

int ust_answers_put_response(ust_answers *a, int64_t seq, int status,
                             const ust_header *headers, size_t n_headers,
                             const unsigned char *body, size_t body_len, char **err)
{
    size_t len = 0;
    if (ust_headers_pack(headers, n_headers, &a->pack, &a->pack_cap, &len) != 0)
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
