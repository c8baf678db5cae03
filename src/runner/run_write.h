/* Writing a run database: the runner's decisions, divergences and cursor,
 * each batch in one transaction (see replay.c). Its SQL, beside the schema
 * in rundb.c and the readers in run.c, is the only SQL that writes a run. */
#ifndef UST_RUN_WRITE_H
#define UST_RUN_WRITE_H

#include <sqlite3.h>
#include <stdint.h>

#include <understudy/event.h>
#include <understudy/host.h>
#include <understudy/run.h>

typedef struct ust__run_writer {
    sqlite3 *db;      /* also the plugin state's (the store shares its transactions) */
    const char *path; /* names it in errors; borrowed */
    sqlite3_stmt *decision, *divergence, *cursor, *entity_diverged;
} ust__run_writer;

/* Opens (creating) the run database at path with its schema, ready to
 * write. 0, or UST_EDB with *err; w is left to ust__run_writer_close. */
int ust__run_writer_open(ust__run_writer *w, const char *path, char **err);
void ust__run_writer_close(ust__run_writer *w);

/* BEGIN IMMEDIATE, COMMIT, ROLLBACK of the run's transaction. */
int ust__run_writer_begin(ust__run_writer *w, char **err);
int ust__run_writer_commit(ust__run_writer *w, char **err);
void ust__run_writer_rollback(ust__run_writer *w);

/* The row of one event read: its decisions (legacy and candidate, not read
 * unless fed), the entity it was decided for, and whether they diverged. */
int ust__run_writer_decision(ust__run_writer *w, const ust_event *ev,
                             const char *entity, int fed, int diverged,
                             const ust_decision *legacy, const ust_decision *candidate,
                             char **err);
/* 1 when entity (NULL: never) diverged before, 0 when not, or an error:
 * never a guess (a follow_on guessed wrong would mislead the report). */
int ust__run_writer_entity_diverged(ust__run_writer *w, const char *entity, char **err);
int ust__run_writer_divergence(ust__run_writer *w, const ust_run_divergence *d,
                               char **err);
int ust__run_writer_meta(ust__run_writer *w, const char *key, const char *value,
                         char **err);
/* The last seq decided, and the hash of its log row (hex). */
int ust__run_writer_cursor(ust__run_writer *w, int64_t seq, const char *hash,
                           char **err);
/* decisions_entity (the report's timelines), once the rows are there: one
 * sort of them rather than a random insert into the index for every event
 * of a long replay. */
int ust__run_writer_index(ust__run_writer *w, char **err);

#endif
