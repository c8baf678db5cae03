/* The run database: what a run decided, where it stopped, and with what. */
#ifndef UST_RUNDB_H
#define UST_RUNDB_H

#include <sqlite3.h>
#include <stdint.h>

/* Opens (creating) path with the run schema. 0 or UST_EDB with *err. */
int ust__rundb_open(const char *path, sqlite3 **out, char **err);

/* meta key → value; 1 found (*value ust_malloc'd), 0 absent, <0 error. */
int ust__rundb_meta_get(sqlite3 *db, const char *key, char **value);
int ust__rundb_meta_set(sqlite3 *db, const char *key, const char *value);

int64_t ust__rundb_cursor(sqlite3 *db);
int ust__rundb_exec(sqlite3 *db, const char *sql, char **err);

#endif
