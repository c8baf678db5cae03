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

/* The last seq of a run (or of the live answers: the same cursor table). */
int64_t ust__rundb_cursor(sqlite3 *db);
int ust__rundb_exec(sqlite3 *db, const char *sql, char **err);

#endif
