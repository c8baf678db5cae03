/* The journal's SQL (journal.h); its table is made with the run schema. */
#include "runner/journal.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <jansson.h>
#include <string.h>

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char **err)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    return ust_errf(err, UST_EDB, "journal: %s", sqlite3_errmsg(db));
}

/* prepare, with ?1 the side and ?2 the seq: the key of a journal row. */
static int prepare_row(sqlite3 *db, const char *sql, const char *side, int64_t seq,
                       sqlite3_stmt **st, char **err)
{
    int rc = prepare(db, sql, st, err);
    if (rc == 0) {
        sqlite3_bind_text(*st, 1, side, -1, SQLITE_STATIC);
        sqlite3_bind_int64(*st, 2, seq);
    }
    return rc;
}

int ust__journal_fresh(sqlite3 *db, const char *side, char **err)
{
    int64_t cursor = 0;
    int rc = ust__rundb_cursor(db, &cursor, err);
    if (rc != 0 || cursor != 0)
        return rc;
    sqlite3_stmt *st = NULL;
    rc = prepare(db, "SELECT 1 FROM journal WHERE side = ?1 LIMIT 1", &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, side, -1, SQLITE_STATIC);
        rc = ust__db_step(st, "journal", err);
        rc = rc < 0 ? rc : !rc;
    }
    sqlite3_finalize(st);
    return rc;
}

static int headers_from_json(const char *text, ust_http_result *out)
{
    if (text == NULL)
        return 0;
    json_t *a = ust_json_loads(text, 0, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return UST_EPARSE;
    }
    size_t n = json_array_size(a);
    int rc = 0;
    if (n > 0 && (out->headers = ust_calloc(n, sizeof(ust_header))) == NULL)
        rc = UST_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = json_string_value(json_array_get(json_array_get(a, i), 0));
        const char *value = json_string_value(json_array_get(json_array_get(a, i), 1));
        if (name == NULL || value == NULL) {
            rc = UST_EPARSE;
            break;
        }
        out->headers[i].name = ust_strdup(name);
        out->headers[i].value = ust_strdup(value);
        out->n_headers++;
        if (out->headers[i].name == NULL || out->headers[i].value == NULL)
            rc = UST_ENOMEM;
    }
    json_decref(a);
    return rc;
}

int ust__journal_find(sqlite3 *db, const char *side, int64_t seq, ust_http_result *out,
                      char **err)
{
    memset(out, 0, sizeof(*out));
    sqlite3_stmt *st = NULL;
    int rc =
        prepare_row(db,
                    "SELECT state, status, headers, body, failure, cause FROM journal"
                    " WHERE side = ?1 AND seq = ?2",
                    side, seq, &st, err);
    if (rc == 0)
        rc = ust__db_step(st, "journal", err);
    const char *state = rc == 1 ? (const char *)sqlite3_column_text(st, 0) : "";
    int answered = strcmp(state, "answered") == 0;
    if (answered || strcmp(state, "answered_resent") == 0) {
        rc = answered ? 2 : 3;
        out->status = sqlite3_column_int(st, 1);
        out->failure = sqlite3_column_int(st, 4);
        const void *body = sqlite3_column_blob(st, 3);
        out->body_len = (size_t)sqlite3_column_bytes(st, 3);
        const char *cause = (const char *)sqlite3_column_text(st, 5);
        if ((out->body_len > 0 &&
             (out->body = ust_memdup(body, out->body_len)) == NULL) ||
            (cause != NULL && (out->cause = ust_strdup(cause)) == NULL))
            rc = UST_ENOMEM;
        int hrc =
            rc < 0 ? 0
                   : headers_from_json((const char *)sqlite3_column_text(st, 2), out);
        if (hrc != 0)
            rc = ust_errf(err, hrc, "journal: seq %lld of %s: unreadable headers",
                          (long long)seq, side);
        if (rc < 0)
            ust_http_result_clear(out);
    }
    sqlite3_finalize(st);
    return rc;
}

int ust__journal_intend(sqlite3 *db, const char *side, const int64_t *seqs, size_t n,
                        char **err)
{
    sqlite3_stmt *st = NULL;
    /* A second intent for a seq can only be a resend (resend_unknown: the
     * plugin sends again only what has an intent and no answer): marked. */
    int rc = prepare(db,
                     "INSERT INTO journal(side, seq, state) VALUES(?1, ?2, 'sent')"
                     " ON CONFLICT(side, seq) DO UPDATE SET state = 'resent'"
                     " WHERE state IN ('sent', 'resent')",
                     &st, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_bind_text(st, 1, side, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, seqs[i]);
        rc = ust__db_step(st, "journal", err);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int ust__journal_answer(sqlite3 *db, const char *side, int64_t seq,
                        const ust_http_result *a, char **err)
{
    json_t *h = json_array();
    for (size_t i = 0; h != NULL && i < a->n_headers; i++)
        json_array_append_new(
            h, json_pack("[ss]", a->headers[i].name, a->headers[i].value));
    char *headers = h != NULL ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    if (headers == NULL)
        return UST_ENOMEM;
    sqlite3_stmt *st = NULL;
    int rc = prepare_row(
        db,
        "INSERT OR REPLACE INTO journal(side, seq, state, status, headers,"
        " body, failure, cause) VALUES(?1, ?2, CASE WHEN EXISTS(SELECT 1 FROM"
        " journal WHERE side = ?1 AND seq = ?2 AND state IN ('resent',"
        " 'answered_resent')) THEN 'answered_resent' ELSE 'answered' END,"
        " ?3, ?4, ?5, ?6, ?7)",
        side, seq, &st, err);
    if (rc == 0) {
        sqlite3_bind_int(st, 3, a->status);
        sqlite3_bind_text(st, 4, headers, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 5, a->body_len ? (const void *)a->body : "",
                          (int)a->body_len, SQLITE_STATIC);
        sqlite3_bind_int(st, 6, a->failure);
        if (a->cause != NULL)
            sqlite3_bind_text(st, 7, a->cause, -1, SQLITE_STATIC);
        rc = ust__db_step(st, "journal", err);
    }
    sqlite3_finalize(st);
    ust_free(headers);
    return rc;
}
