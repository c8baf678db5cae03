#include "runner/answers.h"
#include "runner/rundb.h"

#include <understudy/error.h>
#include <understudy/alloc.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS cursor(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " last_seq INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO cursor(id, last_seq) VALUES(1, 0);"
    "CREATE TABLE IF NOT EXISTS answers(seq INTEGER PRIMARY KEY, entity TEXT,"
    " verdict TEXT NOT NULL, status INTEGER NOT NULL, state_before TEXT, state TEXT,"
    " flags TEXT, body TEXT, headers TEXT, reason TEXT, error TEXT);";

int ust__answers_open(const char *path, int readonly, sqlite3 **db, char **err)
{
    return ust__db_open(path, readonly, schema, "answers database", db, err);
}
