/* A decision as nine columns of a row: verdict, status, state_before, state,
 * flags (JSON, NULL when none), body, headers (JSON, NULL when none), reason,
 * error. The run database and the live answers database use this layout. */
#ifndef UST_DECISION_ROW_H
#define UST_DECISION_ROW_H

#include <sqlite3.h>

#include <understudy/host.h>

#define UST__DECISION_COLUMNS 9
/* Their names, in the order ust__decision_bind binds them. */
#define UST__DECISION_COLUMN_NAMES                                                     \
    "verdict, status, state_before, state, flags, body, headers, reason, error"

/* Binds d (NULL: all NULL) to the columns starting at col. */
void ust__decision_bind(sqlite3_stmt *st, int col, const ust_decision *d);
/* Reads the columns starting at col into *d (cleared first); entity from
 * its own column, or NULL. 0 or UST_ENOMEM / UST_EPARSE. */
int ust__decision_read(sqlite3_stmt *st, int col, const char *entity, ust_decision *d);

#endif
