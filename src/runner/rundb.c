#include "runner/rundb.h"
#include "runner/decision_row.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

/* The two decisions' columns (decision_row.h): ", l_verdict TEXT, ...". */
#define LEGACY_AND_CANDIDATE UST__DECISION_COLUMN_DEFS(l_) UST__DECISION_COLUMN_DEFS(c_)

static const char schema[] =
    /* Default 4 KiB pages: 16 KiB pages made replay ~6% faster, but the live
     * runner's commits and checkpoints then wrote four times the bytes per
     * touched page, and the recorder's p99 at 4 connections went from ~4 ms
     * to 16-35 ms (its fsyncs queued behind them). */
    "PRAGMA journal_mode=WAL;"
    /* NORMAL, not FULL: a commit lost to a power cut is replayed again on
     * resume (decisions, state and cursor share each transaction), so it
     * costs time, never correctness. */
    "PRAGMA synchronous=NORMAL;"
    /* cache_size: the config's cache.run_pages_mb (replay.c) */
    "PRAGMA wal_autocheckpoint=16384;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cursor(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " last_seq INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO cursor(id, last_seq) VALUES(1, 0);"
    /* One row per event read, both decisions side by side (l_ legacy, c_
     * candidate), NULL when the event was not fed to the plugins (`fed` 0).
     * Columns rather than JSON: binding is cheap, encoding JSON per event was
     * a fifth of replay's time. flags and headers are JSON, NULL when none.
     * entity is the row's (the legacy's, else the candidate's, else the
     * event's identity); l_entity the legacy's own, NULL when it named none,
     * so that the legacy's decision reads back whole (replay --legacy-from). */
    "CREATE TABLE IF NOT EXISTS decisions(seq INTEGER PRIMARY KEY,"
    " received_at INTEGER NOT NULL, route TEXT, provider TEXT, event_type TEXT,"
    " entity TEXT, signature TEXT NOT NULL, fed INTEGER NOT NULL,"
    " diverged INTEGER NOT NULL, l_entity TEXT" LEGACY_AND_CANDIDATE ");"
    /* decisions_entity (the report's timelines) is made by the runner at
     * the end of its first step: one sort of the rows there are, rather than
     * a random insert into the index for every event of a long replay. */
    "CREATE TABLE IF NOT EXISTS divergences(seq INTEGER PRIMARY KEY,"
    " received_at INTEGER NOT NULL, class TEXT NOT NULL, fields TEXT NOT NULL,"
    " entity TEXT, follow_on INTEGER NOT NULL, line TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS divergences_class ON divergences(class);"
    /* The report's examples, sampled across the run's span: a class's
     * divergence nearest a time. follow_on too, so that the counts of the
     * classes (report and gate) and of the run read this index, not the
     * lines: a fifth of a 1,000,000-divergence report's time. Made as well
     * when a run made before it is resumed; without it the readers scan. */
    "CREATE INDEX IF NOT EXISTS divergences_class_at ON divergences(class,"
    " received_at, follow_on);"
    "CREATE INDEX IF NOT EXISTS divergences_entity ON divergences(entity);"
    /* What a plugin that calls a service sent and what came back (journal.h):
     * 'sent' committed before the send ('resent': sent again), 'answered'
     * ('answered_resent') with the answer. */
    "CREATE TABLE IF NOT EXISTS journal(side TEXT NOT NULL, seq INTEGER NOT NULL,"
    " state TEXT NOT NULL, status INTEGER, headers TEXT, body BLOB, failure INTEGER,"
    " cause TEXT, PRIMARY KEY(side, seq));";

int ust__rundb_exec(sqlite3 *db, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    ust_errf(err, UST_EDB, "run database: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return UST_EDB;
}

int ust__db_open(const char *path, int readonly, const char *sql, const char *what,
                 sqlite3 **out, char **err)
{
    *out = NULL;
    sqlite3 *db = NULL;
    int flags =
        readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        ust_errf(err, UST_EDB, "%s: cannot open the %s: %s", path, what,
                 db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return UST_EDB;
    }
    sqlite3_busy_timeout(db, 10000);
    int rc = readonly ? 0 : ust__rundb_exec(db, sql, err);
    if (rc != 0) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

int ust__rundb_open(const char *path, sqlite3 **out, char **err)
{
    return ust__db_open(path, 0, schema, "run database", out, err);
}

int ust__db_step(sqlite3_stmt *st, const char *what, char **err)
{
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        return 1;
    if (step == SQLITE_DONE)
        return 0;
    return ust_errf(err, UST_EDB, "%s: %s", what,
                    sqlite3_errmsg(sqlite3_db_handle(st)));
}

int ust__rundb_meta_get(sqlite3 *db, const char *key, char **value)
{
    *value = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return UST_EDB;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = ust__db_step(st, "meta", NULL);
    if (rc == 1) {
        *value = ust_strdup((const char *)sqlite3_column_text(st, 0));
        rc = *value ? 1 : UST_ENOMEM;
    }
    sqlite3_finalize(st);
    return rc;
}

int ust__rundb_meta_set(sqlite3 *db, const char *key, const char *value)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return UST_EDB;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : UST_EDB;
    sqlite3_finalize(st);
    return rc;
}

int ust__rundb_cursor(sqlite3 *db, int64_t *out, char **err)
{
    *out = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT last_seq, typeof(last_seq) = 'integer' FROM cursor"
                           " WHERE id = 1",
                           -1, &st, NULL) != SQLITE_OK)
        return ust_errf(err, UST_EDB, "cursor: %s", sqlite3_errmsg(db));
    /* No row, or one that is not a number, is an error too: read as 0 it
     * would start the run again from the beginning. */
    int rc = ust__db_step(st, "cursor", err);
    if (rc == 1 && sqlite3_column_int(st, 1))
        *out = sqlite3_column_int64(st, 0);
    else if (rc >= 0)
        rc = ust_errf(err, UST_EDB, "cursor: %s",
                      rc ? "last_seq is not a number" : "the row is missing");
    sqlite3_finalize(st);
    return rc == 1 ? 0 : rc;
}
