/* The plugins' state store over a database of the runner's (the run
 * database, or the answers database of `serve --respond legacy`): its
 * `state` table, reached by the store (src/plugin/store.c) through the
 * operations of a ust_store_table. The SQL of the table is here alone. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/runner.h>

#include <sqlite3.h>
#include <string.h>

/* The state table, made or brought to its current layout. A run database
 * from before the namespace was folded into the key (state(ns, key, value))
 * is converted in one transaction, so a run started then resumes. */
static int state_table(sqlite3 *db, char **err)
{
    static const char create[] =
        "CREATE TABLE IF NOT EXISTS state(key TEXT NOT NULL PRIMARY KEY,"
        " value TEXT NOT NULL) WITHOUT ROWID";
    /* A savepoint: a transaction of its own, or part of the caller's. */
    static const char convert[] =
        "SAVEPOINT state_convert;"
        "ALTER TABLE state RENAME TO state_by_ns;"
        "CREATE TABLE state(key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)"
        " WITHOUT ROWID;"
        "INSERT INTO state(key, value) SELECT ns || char(31) || key, value"
        " FROM state_by_ns ORDER BY 1;"
        "DROP TABLE state_by_ns;"
        "RELEASE state_convert";
    sqlite3_stmt *probe = NULL;
    int old =
        sqlite3_prepare_v2(db, "SELECT ns FROM state", -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    char *msg = NULL;
    if (sqlite3_exec(db, old ? convert : create, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    ust_errf(err, UST_EDB, "state table: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    if (old)
        sqlite3_exec(db, "ROLLBACK TO state_convert; RELEASE state_convert", NULL, NULL,
                     NULL);
    return UST_EDB;
}

typedef struct state_db {
    sqlite3 *db; /* the caller's */
    sqlite3_stmt *select, *upsert, *upsert_rows, *remove;
} state_db;

static int db_error(const state_db *d, char **err)
{
    return ust_errf(err, UST_EDB, "state: %s", sqlite3_errmsg(d->db));
}

/* Writes go UPSERT_ROWS to a statement: one statement for many rows saves
 * SQLite's per-statement work (bench_store: ~15% of a key's cost). */
#define UPSERT_ROWS 64

/* An upsert of `rows` rows: (key, value) bound at 2i+1, 2i+2. */
static int prepare_upsert(state_db *d, int rows, sqlite3_stmt **st)
{
    char sql[64 + UPSERT_ROWS * 6 + 64] = "INSERT INTO state(key, value) VALUES(?,?)";
    for (int i = 1; i < rows; i++)
        strcat(sql, ",(?,?)");
    strcat(sql, " ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    return sqlite3_prepare_v2(d->db, sql, -1, st, NULL);
}

static int db_get(void *t, const char *key, size_t klen,
                  int (*take)(void *ctx, const char *value, size_t len), void *ctx)
{
    state_db *d = t;
    sqlite3_bind_text(d->select, 1, key, (int)klen, SQLITE_STATIC);
    int step = sqlite3_step(d->select);
    int rc = 0;
    if (step == SQLITE_ROW) {
        /* The text first: its length is that of the text form. */
        const char *value = (const char *)sqlite3_column_text(d->select, 0);
        rc = take(ctx, value, (size_t)sqlite3_column_bytes(d->select, 0));
    } else if (step != SQLITE_DONE) {
        rc = UST_EDB;
    }
    sqlite3_reset(d->select);
    return rc;
}

static int db_each_key(void *t, void (*fn)(void *ctx, const char *key, size_t klen),
                       void *ctx, char **err)
{
    state_db *d = t;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT key FROM state", -1, &st, NULL) != SQLITE_OK)
        return db_error(d, err);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = sqlite3_column_blob(st, 0);
        fn(ctx, key, (size_t)sqlite3_column_bytes(st, 0));
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : db_error(d, err);
}

static int step_done(const state_db *d, sqlite3_stmt *st, char **err)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(d, err);
    sqlite3_reset(st);
    return rc;
}

static void bind_row(sqlite3_stmt *st, int col, const ust_store_row *r)
{
    sqlite3_bind_text(st, col, r->key, (int)r->klen, SQLITE_STATIC);
    sqlite3_bind_text(st, col + 1, r->value, -1, SQLITE_STATIC);
}

/* Deletes as they come (each key is there once: order is free), upserts
 * UPSERT_ROWS at a time, the rest one by one. */
static int db_write(void *t, const ust_store_row *rows, size_t n, char **err)
{
    state_db *d = t;
    const ust_store_row *batch[UPSERT_ROWS];
    size_t pending = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (rows[i].value == NULL) {
            sqlite3_bind_text(d->remove, 1, rows[i].key, (int)rows[i].klen,
                              SQLITE_STATIC);
            rc = step_done(d, d->remove, err);
            continue;
        }
        batch[pending++] = &rows[i];
        if (pending == UPSERT_ROWS) {
            for (size_t k = 0; k < pending; k++)
                bind_row(d->upsert_rows, 2 * (int)k + 1, batch[k]);
            rc = step_done(d, d->upsert_rows, err);
            pending = 0;
        }
    }
    for (size_t k = 0; k < pending && rc == 0; k++) {
        bind_row(d->upsert, 1, batch[k]);
        rc = step_done(d, d->upsert, err);
    }
    return rc;
}

static int db_any_key_in(void *t, const char *lo, const char *hi)
{
    state_db *d = t;
    sqlite3_stmt *st = NULL;
    int any = 1;
    if (sqlite3_prepare_v2(d->db,
                           "SELECT 1 FROM state WHERE key >= ?1 AND key < ?2 LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
        any = sqlite3_step(st) != SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return any;
}

static void db_close(void *t)
{
    state_db *d = t;
    sqlite3_finalize(d->select);
    sqlite3_finalize(d->upsert);
    sqlite3_finalize(d->upsert_rows);
    sqlite3_finalize(d->remove);
    ust_free(d);
}

static const ust_store_table state_ops = {
    .get = db_get,
    .each_key = db_each_key,
    .write = db_write,
    .any_key_in = db_any_key_in,
    .close = db_close,
};

int ust_store_open(sqlite3 *db, ust_store **out, char **err)
{
    *out = NULL;
    int rc = state_table(db, err);
    if (rc != 0)
        return rc;
    state_db *d = ust_calloc(1, sizeof(*d));
    if (d == NULL)
        return UST_ENOMEM;
    d->db = db;
    if (sqlite3_prepare_v2(db, "SELECT value FROM state WHERE key = ?1", -1, &d->select,
                           NULL) != SQLITE_OK ||
        prepare_upsert(d, 1, &d->upsert) != SQLITE_OK ||
        prepare_upsert(d, UPSERT_ROWS, &d->upsert_rows) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM state WHERE key = ?1", -1, &d->remove,
                           NULL) != SQLITE_OK) {
        rc = db_error(d, err);
        db_close(d);
        return rc;
    }
    return ust_store_open_table(&state_ops, d, out, err);
}
