/* The live answers database of `serve --respond legacy` (its writer:
 * runner.h): its schema and statements, for the writer (answers.c) and the
 * runner's reader (answers_reader.c). */
#ifndef UST_ANSWERS_H
#define UST_ANSWERS_H

#include "runner/decision_row.h"

#include <sqlite3.h>
#include <stdint.h>

#include <understudy/host.h>
#include <understudy/runner.h>

/* Opens (creating when writable) the answers database at path. */
int ust__answers_open(const char *path, int readonly, sqlite3 **db, char **err);
/* Its cursor (the last seq decided and committed) is read with
 * ust__rundb_cursor: the same table. */

/* The statement that reads one answer: seq -> entity, then the decision
 * columns (see decision_row.h). */
#define UST__ANSWERS_SELECT                                                            \
    "SELECT entity, " UST__DECISION_COLUMN_NAMES " FROM answers WHERE seq = ?1"
/* seq, entity, then the decision's columns from 3. */
#define UST__ANSWERS_INSERT                                                            \
    "INSERT OR REPLACE INTO answers(seq, entity, " UST__DECISION_COLUMN_NAMES          \
    ") VALUES(?,?" UST__DECISION_MARKS ")"
/* seq, status, packed headers, body: a service's answer (--respond upstream). */
#define UST__ANSWERS_RESPONSE                                                          \
    "INSERT OR REPLACE INTO responses(seq, status, headers, body) VALUES(?1,?2,?3,?4)"
#define UST__ANSWERS_CURSOR "UPDATE cursor SET last_seq = ?1 WHERE id = 1"

#endif
