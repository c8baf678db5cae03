/* The run database: what a run decided, where it stopped, and with what. */
#ifndef UST_RUNDB_H
#define UST_RUNDB_H

#include <sqlite3.h>
#include <stdint.h>

/* Opens path (creating it with sql when writable; what names it in errors). */
int ust__db_open(const char *path, int readonly, const char *sql, const char *what,
                 sqlite3 **out, char **err);

/* Opens (creating) path with the run schema. 0 or UST_EDB with *err. */
int ust__rundb_open(const char *path, sqlite3 **out, char **err);

/* meta key → value; 1 found (*value ust_malloc'd), 0 absent, <0 error. */
int ust__rundb_meta_get(sqlite3 *db, const char *key, char **value);
int ust__rundb_meta_set(sqlite3 *db, const char *key, const char *value);

/* One step of a read: 1 a row, 0 done, UST_EDB on an error (with *err:
 * what, then SQLite's message). Read loops run while this is 1 and fail on
 * <0, so an error never ends a loop as if the result were complete. */
int ust__db_step(sqlite3_stmt *st, const char *what, char **err);

/* The last seq of a run (or of the live answers: the same cursor table) in
 * *out. 0, or UST_EDB with *err when it cannot be read (never 0 for "fresh"). */
int ust__rundb_cursor(sqlite3 *db, int64_t *out, char **err);
int ust__rundb_exec(sqlite3 *db, const char *sql, char **err);

#endif
