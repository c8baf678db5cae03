#include "runner/answers.h"

#include <understudy/error.h>
#include <understudy/alloc.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS cursor(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " last_seq INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO cursor VALUES(1, 0);"
    "CREATE TABLE IF NOT EXISTS answers(seq INTEGER PRIMARY KEY, entity TEXT,"
    " verdict TEXT NOT NULL, status INTEGER NOT NULL, state_before TEXT, state TEXT,"
    " flags TEXT, body TEXT, headers TEXT, reason TEXT, error TEXT);";

int ust__answers_open(const char *path, int readonly, sqlite3 **db, char **err)
{
    *db = NULL;
    int flags =
        readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        ust_errf(err, UST_EDB, "%s: cannot open the answers database: %s", path,
                 *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return UST_EDB;
    }
    sqlite3_busy_timeout(*db, 10000);
    char *msg = NULL;
    if (!readonly && sqlite3_exec(*db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        ust_errf(err, UST_EDB, "%s: %s", path, msg ? msg : "schema");
        sqlite3_free(msg);
        sqlite3_close(*db);
        *db = NULL;
        return UST_EDB;
    }
    return 0;
}

int64_t ust__answers_cursor(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT last_seq FROM cursor WHERE id = 1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
