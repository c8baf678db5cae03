/* Writing a run database (see run_write.h). Every insert names its columns:
 * the statement follows the table by name, not by the offset of a column. */
#include "runner/run_write.h"
#include "runner/decision_row.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

/* The event's own columns of a decisions row, then each side's decision
 * columns (l_ legacy, c_ candidate), in bind order. */
#define EVENT_COLUMNS                                                                  \
    "seq, received_at, route, provider, event_type, entity, signature, fed, diverged," \
    " l_entity"
enum {
    COL_SEQ = 1,
    COL_RECEIVED_AT,
    COL_ROUTE,
    COL_PROVIDER,
    COL_EVENT_TYPE,
    COL_ENTITY,
    COL_SIGNATURE,
    COL_FED,
    COL_DIVERGED,
    COL_LEGACY_ENTITY,
    COL_LEGACY,
    COL_CANDIDATE = COL_LEGACY + UST__DECISION_COLUMNS,
    N_COLUMNS = COL_CANDIDATE + UST__DECISION_COLUMNS - 1
};

/* The decision's column names with prefix before each, into out (size n):
 * "l_verdict, l_status, ...". */
static void prefixed(const char *prefix, char *out, size_t n)
{
    size_t at = 0;
    for (const char *p = UST__DECISION_COLUMN_NAMES; *p != '\0' && at < n;) {
        size_t len = strcspn(p, ", ");
        at += (size_t)snprintf(out + at, n - at, "%s%s%.*s", at ? ", " : "", prefix,
                               (int)len, p);
        p += len;
        p += strspn(p, ", ");
    }
}

/* The text of the decisions insert, in sql (size n): 0, or UST_ELIMIT. */
static int decision_insert(char *sql, size_t n)
{
    char l[sizeof(UST__DECISION_COLUMN_NAMES) + 4 * UST__DECISION_COLUMNS];
    char c[sizeof(l)], marks[2 * N_COLUMNS]; /* "?,?,...?" */
    prefixed("l_", l, sizeof(l));
    prefixed("c_", c, sizeof(c));
    for (int i = 0; i < N_COLUMNS; i++) {
        marks[2 * i] = '?';
        marks[2 * i + 1] = ',';
    }
    marks[2 * N_COLUMNS - 1] = '\0';
    int len =
        snprintf(sql, n, "INSERT INTO decisions(" EVENT_COLUMNS ", %s, %s) VALUES(%s)",
                 l, c, marks);
    return len > 0 && (size_t)len < n ? 0 : UST_ELIMIT;
}

static int db_error(ust__run_writer *w, char **err)
{
    return ust_errf(err, UST_EDB, "%s: %s", w->path, sqlite3_errmsg(w->db));
}

static int prepare(ust__run_writer *w, const char *sql, sqlite3_stmt **st, char **err)
{
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) ==
        SQLITE_OK)
        return 0;
    return db_error(w, err);
}

/* A run begun before the rows kept the legacy's own entity gains the
 * column, NULL in its older rows: the meta says up to which seq, so that
 * --legacy-from refuses a run whose legacy decisions do not read back whole
 * (legacy_from.c). */
static int add_legacy_entity(ust__run_writer *w, char **err)
{
    sqlite3_stmt *st = NULL;
    int has = sqlite3_prepare_v2(w->db, "SELECT l_entity FROM decisions LIMIT 0", -1,
                                 &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return has ? 0
               : ust__rundb_exec(w->db,
                                 "BEGIN IMMEDIATE;"
                                 "ALTER TABLE decisions ADD COLUMN l_entity TEXT;"
                                 "INSERT OR REPLACE INTO meta(key, value)"
                                 " SELECT 'decided_before_l_entity', max(seq)"
                                 " FROM decisions HAVING count(*) > 0;"
                                 "COMMIT",
                                 err);
}

int ust__run_writer_open(ust__run_writer *w, const char *path, char **err)
{
    memset(w, 0, sizeof(*w));
    w->path = path;
    char insert[1024];
    int rc;
    if ((rc = ust__rundb_open(path, &w->db, err)) != 0 ||
        (rc = add_legacy_entity(w, err)) != 0 ||
        (rc = decision_insert(insert, sizeof(insert))) != 0 ||
        (rc = prepare(w, insert, &w->decision, err)) != 0 ||
        (rc = prepare(w,
                      "INSERT INTO divergences(seq, received_at, class, fields, entity,"
                      " follow_on, line) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                      &w->divergence, err)) != 0 ||
        (rc = prepare(w, "UPDATE cursor SET last_seq = ?1 WHERE id = 1", &w->cursor,
                      err)) != 0 ||
        (rc = prepare(w, "SELECT 1 FROM divergences WHERE entity = ?1 LIMIT 1",
                      &w->entity_diverged, err)) != 0)
        return rc;
    return 0;
}

void ust__run_writer_close(ust__run_writer *w)
{
    sqlite3_finalize(w->decision);
    sqlite3_finalize(w->divergence);
    sqlite3_finalize(w->cursor);
    sqlite3_finalize(w->entity_diverged);
    sqlite3_close(w->db);
    memset(w, 0, sizeof(*w));
}

int ust__run_writer_begin(ust__run_writer *w, char **err)
{
    return ust__rundb_exec(w->db, "BEGIN IMMEDIATE", err);
}

int ust__run_writer_commit(ust__run_writer *w, char **err)
{
    return ust__rundb_exec(w->db, "COMMIT", err);
}

void ust__run_writer_rollback(ust__run_writer *w)
{
    ust__rundb_exec(w->db, "ROLLBACK", NULL);
}

/* The text must outlive the statement's next step (SQLITE_STATIC). */
static void bind_text(sqlite3_stmt *st, int col, const char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

/* Steps a write, then resets it for the next. */
static int run(ust__run_writer *w, sqlite3_stmt *st, char **err)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(w, err);
    sqlite3_reset(st);
    return rc;
}

int ust__run_writer_decision(ust__run_writer *w, const ust_event *ev,
                             const char *entity, int fed, int diverged,
                             const ust_decision *legacy, const ust_decision *candidate,
                             char **err)
{
    sqlite3_stmt *st = w->decision;
    sqlite3_bind_int64(st, COL_SEQ, ev->seq);
    sqlite3_bind_int64(st, COL_RECEIVED_AT, ev->received_at_us);
    bind_text(st, COL_ROUTE, ev->route ? ev->route->path : NULL);
    bind_text(st, COL_PROVIDER, ev->provider);
    bind_text(st, COL_EVENT_TYPE, ev->event_type);
    bind_text(st, COL_ENTITY, entity);
    bind_text(st, COL_SIGNATURE, ust_sig_status_name(ev->sig));
    sqlite3_bind_int(st, COL_FED, fed);
    sqlite3_bind_int(st, COL_DIVERGED, diverged);
    bind_text(st, COL_LEGACY_ENTITY, fed ? legacy->entity : NULL);
    ust__decision_bind(st, COL_LEGACY, fed ? legacy : NULL);
    ust__decision_bind(st, COL_CANDIDATE, fed ? candidate : NULL);
    return run(w, st, err);
}

int ust__run_writer_entity_diverged(ust__run_writer *w, const char *entity, char **err)
{
    if (entity == NULL)
        return 0;
    sqlite3_bind_text(w->entity_diverged, 1, entity, -1, SQLITE_STATIC);
    int step = sqlite3_step(w->entity_diverged);
    int rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : db_error(w, err);
    sqlite3_reset(w->entity_diverged);
    return rc;
}

int ust__run_writer_divergence(ust__run_writer *w, const ust_run_divergence *d,
                               char **err)
{
    sqlite3_stmt *st = w->divergence;
    sqlite3_bind_int64(st, 1, d->seq);
    sqlite3_bind_int64(st, 2, d->received_at);
    bind_text(st, 3, d->class_name);
    bind_text(st, 4, d->fields);
    bind_text(st, 5, d->entity);
    sqlite3_bind_int(st, 6, d->follow_on);
    bind_text(st, 7, d->line);
    return run(w, st, err);
}

int ust__run_writer_cursor(ust__run_writer *w, int64_t seq, const char *hash,
                           char **err)
{
    sqlite3_bind_int64(w->cursor, 1, seq);
    int rc = run(w, w->cursor, err);
    return rc == 0 ? ust__run_writer_meta(w, "cursor_hash", hash, err) : rc;
}

int ust__run_writer_meta(ust__run_writer *w, const char *key, const char *value,
                         char **err)
{
    return ust__rundb_meta_set(w->db, key, value) == 0 ? 0 : db_error(w, err);
}

int ust__run_writer_index(ust__run_writer *w, char **err)
{
    return ust__rundb_exec(
        w->db, "CREATE INDEX IF NOT EXISTS decisions_entity ON decisions(entity)", err);
}
