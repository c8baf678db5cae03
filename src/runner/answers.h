/* The live answers database of `serve --respond legacy`: the legacy's
 * decisions as they were answered, its state, and its cursor. It is its own
 * file so the runner's long transactions never hold up an answer. */
#ifndef UST_ANSWERS_H
#define UST_ANSWERS_H

#include "runner/decision_row.h"

#include <sqlite3.h>
#include <stdint.h>

#include <understudy/host.h>

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
    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
/* seq, status, packed headers, body: a service's answer (--respond upstream). */
#define UST__ANSWERS_RESPONSE                                                          \
    "INSERT OR REPLACE INTO responses(seq, status, headers, body) VALUES(?1,?2,?3,?4)"
#define UST__ANSWERS_CURSOR "UPDATE cursor SET last_seq = ?1 WHERE id = 1"

/* RUN.answers beside the run database at run_path (ust_malloc'd). */
char *ust__answers_path(const char *run_path);

/* The responder's side: the answers database open for writing, its
 * statements prepared and the legacy's state store on the same connection,
 * so a decision, the state it left and the cursor commit together. */
typedef struct ust__answers ust__answers;
int ust__answers_writer_open(const char *path, ust__answers **out, char **err);
void ust__answers_writer_close(ust__answers *a);
/* The store the legacy plugin keeps its state in (owned by a). */
ust_store *ust__answers_store(ust__answers *a);
/* The last seq decided and committed. */
int ust__answers_cursor(ust__answers *a, int64_t *seq, char **err);
/* A transaction: begin, then put each decision, then commit through the
 * batch's last seq (the store flushed with it; through 0 leaves the
 * cursor). A failed put leaves the transaction open: roll back. A failed
 * commit has rolled back already. */
int ust__answers_begin(ust__answers *a, char **err);
int ust__answers_put(ust__answers *a, int64_t seq, const char *entity,
                     const ust_decision *d, char **err);
int ust__answers_commit(ust__answers *a, int64_t through, char **err);
/* --respond upstream: the service's answer to seq as it came (headers in
 * order, kept whole; the body byte for byte), in the same transaction as
 * its decision. */
int ust__answers_put_response(ust__answers *a, int64_t seq, int status,
                              const ust_header *headers, size_t n_headers,
                              const unsigned char *body, size_t body_len, char **err);
/* Rolls the transaction back, and with it what the store cached beyond it. */
void ust__answers_rollback(ust__answers *a);

#endif
