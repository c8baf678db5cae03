/* Opening the log: connection settings, schema, and the triggers that make
 * the events table append-only in the database rather than by convention. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <sys/stat.h>

/* " route TEXT," and so on: the derived fields' columns. */
#define COLUMN_DEF(kind, m, column, wire, wire_at, export, source, since, desc)        \
    " " #column " " UST__LOG_SQL_##kind ","

/* The recorded answer, last (where ALTER TABLE puts it in a format-2 log). */
#define RESPONSE_DEF                                                                   \
    " response_status INTEGER, response_headers BLOB, response_body BLOB"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    /* A new log is format 2 from the start: no prune record predates the
     * prune chain (see upgrade_sql for a format-1 log). */
    "INSERT OR IGNORE INTO meta VALUES('legacy_prunes', '0');"
    "CREATE TABLE IF NOT EXISTS events("
    " seq INTEGER PRIMARY KEY,"
    " received_at INTEGER NOT NULL,"
    " remote TEXT NOT NULL, method TEXT NOT NULL, target TEXT NOT NULL,"
    " headers BLOB NOT NULL," /* "name\0value\0" pairs, order kept */
    " body BLOB NOT NULL," UST_EVENT_FIELDS(
        COLUMN_DEF) " prev_hash BLOB NOT NULL, hash BLOB NOT NULL," RESPONSE_DEF ");"
                    /* A prune removes a prefix of the chain; the row it leaves behind
                     * records the hash the remaining chain starts from (anchor_hash),
                     * and is itself a link of the chain: it chains from the tip at
                     * tip_seq (link_prev) and from the previous prune record
                     * (prev_hash), and the next row appended chains from its hash. */
                    "CREATE TABLE IF NOT EXISTS prunes("
                    " id INTEGER PRIMARY KEY, pruned_at INTEGER NOT NULL, before "
                    "INTEGER NOT NULL,"
                    " first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, count "
                    "INTEGER NOT NULL,"
                    " anchor_hash BLOB NOT NULL, tip_seq INTEGER, link_prev BLOB, "
                    "prev_hash BLOB,"
                    " hash BLOB);"
                    "CREATE TABLE IF NOT EXISTS prune_guard(active INTEGER NOT NULL);"
                    "INSERT INTO prune_guard SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM "
                    "prune_guard);"
                    "CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON "
                    "events"
                    " BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;"
                    "CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON "
                    "events"
                    " WHEN (SELECT active FROM prune_guard) IS NOT 1"
                    " BEGIN SELECT RAISE(ABORT, 'the event log is append-only: use log "
                    "prune'); END;"
                    "CREATE TRIGGER IF NOT EXISTS prunes_no_update BEFORE UPDATE ON "
                    "prunes"
                    " BEGIN SELECT RAISE(ABORT, 'prune records are append-only'); END;"
                    "CREATE TRIGGER IF NOT EXISTS prunes_no_delete BEFORE DELETE ON "
                    "prunes"
                    " BEGIN SELECT RAISE(ABORT, 'prune records are append-only'); END;";

/* A format-1 log (prune records without a hash) is upgraded on its first
 * writing open: its prune records stay as they are, counted in
 * meta.legacy_prunes and verified by the old rule; every later one is
 * chained. */
static const char upgrade_sql[] =
    "ALTER TABLE prunes ADD COLUMN tip_seq INTEGER;"
    "ALTER TABLE prunes ADD COLUMN link_prev BLOB;"
    "ALTER TABLE prunes ADD COLUMN prev_hash BLOB;"
    "ALTER TABLE prunes ADD COLUMN hash BLOB;"
    "INSERT OR REPLACE INTO meta SELECT 'legacy_prunes', count(*) FROM prunes;";

/* A format-2 log gains the response columns on its first writing open
 * (in the open's transaction): its rows keep their bytes and their hashes,
 * NULL in the new columns framing exactly as before (chain.c). */
static const char responses_sql[] =
    "ALTER TABLE events ADD COLUMN response_status INTEGER;"
    "ALTER TABLE events ADD COLUMN response_headers BLOB;"
    "ALTER TABLE events ADD COLUMN response_body BLOB;";

/* One "?," per derived field: bound by position, in column order. */
#define PLACEHOLDER(kind, m, column, wire, wire_at, export, source, since, desc) "?,"
static const char insert_sql[] =
    "INSERT INTO events(" UST__LOG_COLUMNS ", " UST__LOG_RESPONSE_COLUMNS ") "
    "VALUES(?,?,?,?,?,?,?," UST_EVENT_FIELDS(PLACEHOLDER) "?,?,?,?,?)";

const char *ust__log_select(const ust_log *log)
{
    return log->select;
}

int ust__log_db_error(ust_log *log, const char *what, char **err)
{
    return ust_errf(err, UST_EDB, "%s: %s: %s", log->path, what,
                    sqlite3_errmsg(log->db));
}

int ust__log_exec(ust_log *log, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(log->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ust_errf(err, UST_EDB, "%s: %s", log->path, msg ? msg : "error");
        sqlite3_free(msg);
        return UST_EDB;
    }
    return 0;
}

static void record_head(ust_log *log);

static int has_column(ust_log *log, const char *probe_sql)
{
    sqlite3_stmt *probe = NULL;
    int ok = sqlite3_prepare_v2(log->db, probe_sql, -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    return ok;
}

static int has_prune_chain(ust_log *log)
{
    return has_column(log, "SELECT hash FROM prunes LIMIT 0");
}

static int has_responses(ust_log *log)
{
    return has_column(log, "SELECT response_status FROM events LIMIT 0");
}

static int has_field_column(void *ctx, const char *column)
{
    char *sql = ust_sprintf("SELECT %s FROM events LIMIT 0", column);
    int has = sql != NULL && has_column(ctx, sql);
    ust_free(sql);
    return has;
}

/* The columns of the fields that arrived after the log's format (fields.c),
 * added on a writing open in the open's transaction: its rows keep their
 * bytes and their hashes, the new fields absent (chain.c). */
static int add_field_columns(ust_log *log, char **err)
{
    unsigned char present[UST__LOG_N_FIELDS];
    ust__log_fields_probe(present, has_field_column, log);
    char *alter = ust__log_fields_alter(present, "events", 0);
    char *format = ust_sprintf("INSERT OR REPLACE INTO meta VALUES('format',"
                               " 'understudy-log-%d');",
                               ust__log_format());
    int rc = alter == NULL || format == NULL ? UST_ENOMEM : 0;
    if (rc == 0 && (rc = ust__log_exec(log, alter, err)) == 0)
        rc = ust__log_exec(log, format, err);
    ust_free(alter);
    ust_free(format);
    return rc;
}

/* Every column in the order ust__log_row_decode reads them, NULL in place of
 * those a log opened read-only lacks (a format-2 log has no answers; an
 * older one none of the later fields). */
static int build_select(ust_log *log)
{
    log->responses = has_responses(log);
    ust__log_fields_probe(log->field_present, has_field_column, log);
    log->fields_sql = ust__log_fields_select(log->field_present, "");
    if (log->fields_sql == NULL)
        return UST_ENOMEM;
    log->select =
        ust_sprintf("SELECT seq, received_at, remote, method, target, headers, body, "
                    "%sprev_hash, hash, %s FROM events",
                    log->fields_sql,
                    log->responses ? UST__LOG_RESPONSE_COLUMNS : "NULL, NULL, NULL");
    return log->select != NULL ? 0 : UST_ENOMEM;
}

int ust__sqlite_open(const char *path, unsigned flags, ust_log **out, char **err)
{
    *out = NULL;
    struct stat st;
    if (!(flags & UST_LOG_CREATE) && stat(path, &st) != 0)
        return ust_errf(err, UST_EIO, "%s: no such event log", path);
    ust_log *log = ust_calloc(1, sizeof(*log));
    if (log == NULL || (log->path = ust_strdup(path)) == NULL) {
        ust_free(log);
        return UST_ENOMEM;
    }
    log->backend = &ust__log_sqlite;
    int oflags = (flags & UST_LOG_READONLY)
                     ? SQLITE_OPEN_READONLY
                     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = 0;
    if (sqlite3_open_v2(path, &log->db, oflags | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = ust__log_db_error(log, "cannot open", err);
        goto fail;
    }
    sqlite3_busy_timeout(log->db, 10000);
    /* WAL lets readers (replay, stats) run beside the recorder; FULL makes a
     * commit durable before it returns, which is what an acknowledgement means. */
    if (!(flags & UST_LOG_READONLY)) {
        if ((rc = ust__log_exec(log,
                                "PRAGMA journal_mode=WAL;"
                                "PRAGMA synchronous=FULL;",
                                err)) != 0 ||
            (rc = ust__log_exec(log, "BEGIN IMMEDIATE;", err)) != 0)
            goto fail;
        if ((rc = ust__log_exec(log, schema_sql, err)) != 0 ||
            (!has_prune_chain(log) &&
             (rc = ust__log_exec(log, upgrade_sql, err)) != 0) ||
            (!has_responses(log) &&
             (rc = ust__log_exec(log, responses_sql, err)) != 0) ||
            (rc = add_field_columns(log, err)) != 0) {
            ust__log_exec(log, "ROLLBACK;", NULL);
            goto fail;
        }
        if ((rc = ust__log_exec(log, "COMMIT;", err)) != 0)
            goto fail;
        if (sqlite3_prepare_v3(log->db, insert_sql, -1, SQLITE_PREPARE_PERSISTENT,
                               &log->insert, NULL) != SQLITE_OK) {
            rc = ust__log_db_error(log, "prepare insert", err);
            goto fail;
        }
    } else {
        sqlite3_stmt *probe = NULL;
        if (sqlite3_prepare_v2(log->db, "SELECT seq FROM events LIMIT 1", -1, &probe,
                               NULL) != SQLITE_OK) {
            rc = ust_errf(err, UST_EDB, "%s: not an understudy event log (%s)", path,
                          sqlite3_errmsg(log->db));
            goto fail;
        }
        sqlite3_finalize(probe);
    }
    log->prune_chain = has_prune_chain(log);
    if ((rc = build_select(log)) != 0)
        goto fail;
    if (log->insert != NULL)
        record_head(log); /* a writer killed before its close left none */
    *out = log;
    return 0;
fail:
    ust__sqlite_close(log);
    return rc;
}

/* The head in meta, for verify to hold the log to (rows cut off later are
 * named). Only ever forward: a log found shorter than its recorded head
 * keeps the evidence. Best effort, as is the rest of a close. */
static void record_head(ust_log *log)
{
    int64_t seq = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    if (ust__sqlite_head(log, &seq, hex, NULL) != 0 || seq <= 0)
        return;
    char *sql = ust_sprintf("INSERT OR REPLACE INTO meta SELECT 'head', '%lld %s'"
                            " WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'head'"
                            " AND CAST(value AS INTEGER) >= %lld);",
                            (long long)seq, hex, (long long)seq);
    if (sql != NULL)
        ust__log_exec(log, sql, NULL);
    ust_free(sql);
}

/* The head recorded, then the whole WAL into the database file, so the .db
 * alone holds every event (a backup copying it, or a lost -wal, loses
 * nothing). On failure the WAL still holds it all, and SQLite replays it on
 * the next open. */
static int close_cleanly(ust_log *log)
{
    record_head(log);
    int rc = sqlite3_wal_checkpoint_v2(log->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL,
                                       NULL);
    return rc == SQLITE_OK ? 0 : 1;
}

int ust__sqlite_close(ust_log *log)
{
    if (log == NULL)
        return 0;
    int in_wal = 0;
    if (log->insert != NULL && !log->in_outer_tx)
        in_wal = close_cleanly(log);
    sqlite3_finalize(log->insert);
    sqlite3_finalize(log->tip_query);
    sqlite3_finalize(log->data_version);
    sqlite3_close(log->db);
    ust_free(log->pack);
    ust_free(log->fields_sql);
    ust_free(log->select);
    ust_free(log->digests);
    ust__row_hasher_free(&log->hasher);
    ust_free(log->path);
    ust_free(log);
    return in_wal;
}

int ust__sqlite_begin(ust_log *log, char **err)
{
    if (log->in_outer_tx)
        return ust_errf(err, UST_EINVAL, "%s: transaction already open", log->path);
    int rc = ust__log_exec(log, "BEGIN IMMEDIATE;", err);
    if (rc == 0)
        log->in_outer_tx = 1;
    return rc;
}

int ust__sqlite_commit(ust_log *log, char **err)
{
    int rc = ust__log_exec(log, "COMMIT;", err);
    if (rc != 0)
        ust__log_exec(log, "ROLLBACK;", NULL);
    log->in_outer_tx = 0;
    return rc;
}

void ust__sqlite_rollback(ust_log *log)
{
    if (log->in_outer_tx)
        ust__log_exec(log, "ROLLBACK;", NULL);
    log->in_outer_tx = 0;
}

const ust__log_backend ust__log_sqlite = {
    .name = "SQLite",
    .open = ust__sqlite_open,
    .close = ust__sqlite_close,
    .append = ust__sqlite_append,
    .begin = ust__sqlite_begin,
    .commit = ust__sqlite_commit,
    .rollback = ust__sqlite_rollback,
    .cursor_open = ust__sqlite_cursor_open,
    .cursor_open_before = ust__sqlite_cursor_open_before,
    .cursor_open_fields = ust__sqlite_cursor_open_fields,
    .cursor_next = ust__sqlite_cursor_next,
    .cursor_close = ust__sqlite_cursor_close,
    .read_seqs = ust__sqlite_read_seqs,
    .scan = ust__sqlite_scan,
    .verify = ust__sqlite_verify,
    .head = ust__sqlite_head,
    .stats = ust__sqlite_stats,
    .prune_through = ust__sqlite_prune_through,
    .backup = ust__sqlite_backup,
};
