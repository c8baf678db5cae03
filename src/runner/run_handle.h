/* The handle of run.h's readers (run.c), shared with run_many.c, which
 * opens several run databases behind one. */
#ifndef UST_RUNNER_RUN_HANDLE_H
#define UST_RUNNER_RUN_HANDLE_H

#include <sqlite3.h>

struct ust_run {
    sqlite3 *db;
    char *path; /* as opened; for several, their paths joined by " + " */
};

/* Registers on db the SQL functions run.c's readers call (ust_reason_kind):
 * 0, or UST_EDB. */
int ust__run_register_functions(sqlite3 *db);

#endif
