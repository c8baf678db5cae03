/* The event log in PostgreSQL (docs/log.md): the connection, its settings,
 * the schema and the triggers that make every table of it append-only in
 * the database rather than by convention. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

#define PG_COLUMN_DEF(kind, m, column, wire, wire_at, export, source, since, desc)     \
    " " #column " " UST__LOG_PG_##kind ","

#define APPEND_ONLY(table)                                                             \
    "CREATE TRIGGER append_only BEFORE UPDATE OR DELETE ON understudy." table          \
    " FOR EACH ROW EXECUTE FUNCTION understudy.append_only();"                         \
    "CREATE TRIGGER append_only_truncate BEFORE TRUNCATE ON understudy." table         \
    " FOR EACH STATEMENT EXECUTE FUNCTION understudy.append_only();"

/* A stream is one writer's chain; events are its rows; a commit gives one
 * transaction's rows of one stream their global seqs (pg_append.c). */
static const char schema_sql[] =
    "CREATE SCHEMA IF NOT EXISTS understudy;"
    "CREATE TABLE understudy.meta(key text PRIMARY KEY, value text NOT NULL);"
    "CREATE SEQUENCE understudy.stream_ids;"
    "CREATE TABLE understudy.streams(id bigint PRIMARY KEY, opened_at bigint NOT NULL,"
    " label text NOT NULL, genesis bytea NOT NULL);"
    "CREATE TABLE understudy.events(stream bigint NOT NULL, stream_seq bigint NOT NULL,"
    " received_at bigint NOT NULL, remote bytea NOT NULL, method bytea NOT NULL,"
    " target bytea NOT NULL, headers bytea NOT NULL, body bytea NOT "
    "NULL," UST_EVENT_FIELDS(
        PG_COLUMN_DEF) " prev_hash bytea NOT NULL, hash bytea NOT NULL,"
                       " response_status bigint, response_headers bytea,"
                       " response_body bytea, PRIMARY KEY(stream, stream_seq));"
                       "CREATE TABLE understudy.commits(first_seq bigint PRIMARY KEY,"
                       " last_seq bigint NOT NULL UNIQUE, stream bigint NOT NULL,"
                       " first_stream_seq bigint NOT NULL, last_hash bytea NOT NULL,"
                       " prev_hash bytea NOT NULL, hash bytea NOT NULL,"
                       " CHECK (last_seq >= first_seq));"
                       /* a stream's tip when its writer closed (verify holds
                        * the stream to it: see record_head) */
                       "CREATE TABLE understudy.heads(stream bigint NOT NULL,"
                       " stream_seq bigint NOT NULL, hash bytea NOT NULL,"
                       " PRIMARY KEY(stream, stream_seq));"
                       "CREATE FUNCTION understudy.append_only() RETURNS trigger"
                       " LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION"
                       " 'the event log is append-only: % on %.% refused',"
                       " TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME; END$$;" APPEND_ONLY(
                           "meta") APPEND_ONLY("streams") APPEND_ONLY("events")
                           APPEND_ONLY("commits")
                               APPEND_ONLY("heads") "INSERT INTO understudy.meta"
                                                    " VALUES('format', '" UST__PG_FORMAT
                                                    "');";

int ust__pg_error(ust_log *log, PGresult *res, const char *what, char **err)
{
    const char *msg = res != NULL ? PQresultErrorMessage(res) : "";
    if (msg == NULL || msg[0] == '\0')
        msg = PQerrorMessage(log->pg->conn);
    char *copy = ust_strdup(msg ? msg : "error");
    if (copy != NULL)
        copy[strcspn(copy, "\n")] = '\0';
    int rc =
        ust_errf(err, UST_EDB, "%s: %s: %s", log->path, what, copy ? copy : "error");
    ust_free(copy);
    PQclear(res);
    return rc;
}

PGresult *ust__pg_run(ust_log *log, const char *sql, int n, const char *const *values,
                      const int *lengths)
{
    int formats[64] = {0};
    int *fmt = n <= 64 ? formats : ust_malloc((size_t)n * sizeof(int));
    if (fmt == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        fmt[i] = 1;
    PGresult *res = PQexecParams(log->pg->conn, sql, n, NULL, values, lengths, fmt, 1);
    if (fmt != formats)
        ust_free(fmt);
    return res;
}

int ust__pg_exec(ust_log *log, const char *sql, const char *what, char **err)
{
    PGresult *res = PQexec(log->pg->conn, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, what, err);
    PQclear(res);
    return 0;
}

int64_t ust__pg_int(const PGresult *res, int row, int col)
{
    const unsigned char *b = (const unsigned char *)PQgetvalue(res, row, col);
    int len = PQgetlength(res, row, col);
    uint64_t v = 0;
    for (int i = 0; i < len; i++)
        v = v << 8 | b[i];
    if (len == 4) /* int4: sign-extend */
        return (int64_t)(int32_t)(uint32_t)v;
    return (int64_t)v;
}

void ust__pg_put_int(unsigned char out[8], int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--, u >>= 8)
        out[i] = (unsigned char)u;
}

/* libpq prints notices to stderr by default; the log prints nothing. */
static void no_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* The URL without its password, for messages (and log->path). */
static char *without_password(const char *url)
{
    char *copy = ust_strdup(url);
    if (copy == NULL)
        return NULL;
    char *auth = strstr(copy, "://");
    if (auth == NULL)
        return copy;
    auth += 3;
    char *at = strchr(auth, '@');
    char *slash = strchr(auth, '/');
    char *colon = strchr(auth, ':');
    if (at == NULL || (slash != NULL && slash < at) || colon == NULL || colon > at)
        return copy;
    memmove(colon, at, strlen(at) + 1);
    return copy;
}

/* The schema, when missing, under a lock: two recorders starting at once
 * create it once. */
static int ensure_schema(ust_log *log, char **err)
{
    int rc = ust__pg_exec(log, "BEGIN; " UST__PG_LOCK_SCHEMA, "create the schema", err);
    if (rc != 0)
        return rc;
    PGresult *res = PQexec(log->pg->conn, "SELECT to_regclass('understudy.meta')");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = ust__pg_error(log, res, "create the schema", err);
    } else {
        int missing = PQgetisnull(res, 0, 0);
        PQclear(res);
        if (missing)
            rc = ust__pg_exec(log, schema_sql, "create the schema", err);
    }
    if (rc == 0)
        return ust__pg_exec(log, "COMMIT", "create the schema", err);
    ust__pg_exec(log, "ROLLBACK", "rollback", NULL);
    return rc;
}

/* A log this version reads: meta.format is ours. */
static int check_format(ust_log *log, char **err)
{
    PGresult *res = PQexec(log->pg->conn, "SELECT to_regclass('understudy.meta')");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read the schema", err);
    int missing = PQgetisnull(res, 0, 0);
    PQclear(res);
    if (missing)
        return ust_errf(err, UST_EIO,
                        "%s: no such event log (the database has no understudy schema:"
                        " record or import into it first)",
                        log->path);
    res =
        PQexec(log->pg->conn, "SELECT value FROM understudy.meta WHERE key = 'format'");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read meta", err);
    int ok = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), UST__PG_FORMAT) == 0;
    PQclear(res);
    return ok ? 0
              : ust_errf(err, UST_EDB,
                         "%s: not an understudy event log of format " UST__PG_FORMAT,
                         log->path);
}

static int has_column(void *ctx, const char *column)
{
    const PGresult *res = ctx;
    for (int i = 0; i < PQntuples(res); i++)
        if (strcmp(PQgetvalue(res, i, 0), column) == 0)
            return 1;
    return 0;
}

static int probe_fields(ust_log *log, unsigned char present[UST__LOG_N_FIELDS],
                        char **err)
{
    PGresult *res = PQexec(log->pg->conn, "SELECT column_name FROM"
                                          " information_schema.columns WHERE"
                                          " table_schema = 'understudy'"
                                          " AND table_name = 'events'");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return ust__pg_error(log, res, "read the schema", err);
    ust__log_fields_probe(present, has_column, res);
    PQclear(res);
    return 0;
}

/* The columns of the fields that arrived after the log was created
 * (fields.c), added by a writing open under the schema lock (two recorders
 * starting at once add them once): its rows keep their bytes and their
 * hashes, the new fields absent (chain.c). meta.format stays as it was
 * (meta is append-only): the columns say which fields a log has. A log
 * opened read-only is read as it is, NULL in place of a column it lacks. */
static int open_fields(ust_log *log, char **err)
{
    unsigned char *present = log->field_present;
    int rc = probe_fields(log, present, err);
    if (rc == 0 && log->pg->writable && memchr(present, 0, UST__LOG_N_FIELDS)) {
        const char *what = "add the new fields' columns";
        if ((rc = ust__pg_exec(log, "BEGIN; " UST__PG_LOCK_SCHEMA, what, err)) != 0)
            return rc;
        char *alter = NULL;
        if ((rc = probe_fields(log, present, err)) == 0) {
            alter = ust__log_fields_alter(present, "understudy.events", 1);
            rc = alter == NULL ? UST_ENOMEM
                 : alter[0]    ? ust__pg_exec(log, alter, what, err)
                               : 0;
        }
        ust_free(alter);
        if (rc == 0 && (rc = ust__pg_exec(log, "COMMIT", what, err)) == 0)
            memset(present, 1, UST__LOG_N_FIELDS);
        else
            ust__pg_exec(log, "ROLLBACK", "rollback", NULL);
    }
    if (rc != 0)
        return rc;
    log->fields_sql = ust__log_fields_select(present, "e.");
    log->select = log->fields_sql ? ust__pg_select_after(log->fields_sql) : NULL;
    return log->select != NULL ? 0 : UST_ENOMEM;
}

/* on: a COMMIT returns once it is durable (on the standbys too, where
 * synchronous_standby_names asks for them): what an acknowledgement means.
 * Read committed: an append reads the order's tip after taking its lock,
 * never from a snapshot taken before (pg_append.c). */
static int configure_session(ust_log *log, char **err)
{
    return ust__pg_exec(log,
                        "SET synchronous_commit = on;"
                        " SET default_transaction_isolation = 'read committed';"
                        " SET client_min_messages = warning;",
                        "configure the session", err);
}

int ust__pg_reconnect(ust_log *log, char **err)
{
    ust__pg_log *pg = log->pg;
    if (PQstatus(pg->conn) == CONNECTION_OK)
        return 0;
    if (pg->in_outer_tx)
        return ust_errf(err, UST_EDB,
                        "%s: the connection was lost inside a transaction", log->path);
    PQreset(pg->conn);
    if (PQstatus(pg->conn) != CONNECTION_OK)
        return ust__pg_error(log, NULL, "cannot reconnect", err);
    pg->tip_known = 0; /* the last commit may or may not have happened */
    return configure_session(log, err);
}

static int pg_close(ust_log *log);

static int pg_open(const char *path, unsigned flags, ust_log **out, char **err)
{
    ust_log *log = ust_calloc(1, sizeof(*log));
    if (log == NULL)
        return UST_ENOMEM;
    log->backend = &ust__log_pg;
    log->pg = ust_calloc(1, sizeof(*log->pg));
    if (log->pg == NULL || (log->path = without_password(path)) == NULL) {
        pg_close(log);
        return UST_ENOMEM;
    }
    ust__pg_log *pg = log->pg;
    pg->writable = !(flags & UST_LOG_READONLY);
    int rc = 0;
    pg->conn = PQconnectdb(path);
    if (pg->conn == NULL) {
        rc = UST_ENOMEM;
        goto fail;
    }
    if (PQstatus(pg->conn) != CONNECTION_OK) {
        rc = ust__pg_error(log, NULL, "cannot connect", err);
        goto fail;
    }
    PQsetNoticeProcessor(pg->conn, no_notices, NULL);
    if ((rc = configure_session(log, err)) != 0 ||
        (pg->writable && (rc = ensure_schema(log, err)) != 0) ||
        (rc = check_format(log, err)) != 0 || (rc = open_fields(log, err)) != 0)
        goto fail;
    *out = log;
    return 0;
fail:
    pg_close(log);
    return rc;
}

/* The stream's tip, recorded when its writer closes cleanly: verify then
 * names rows of it cut off later (with their commit records, at the newest
 * end of the log, which the chains alone cannot show). Best effort, as the
 * SQLite log's head in meta is. */
static void record_head(ust_log *log)
{
    ust__pg_log *pg = log->pg;
    if (pg->conn == NULL || !pg->writable || pg->stream == 0 || !pg->tip_known ||
        pg->in_outer_tx || pg->tip_next <= 1 || PQstatus(pg->conn) != CONNECTION_OK)
        return;
    unsigned char b_id[8], b_seq[8];
    ust__pg_put_int(b_id, pg->stream);
    ust__pg_put_int(b_seq, pg->tip_next - 1);
    const char *values[] = {(const char *)b_id, (const char *)b_seq,
                            (const char *)pg->tip_hash};
    int lengths[] = {8, 8, UST_SHA256_LEN};
    PQclear(ust__pg_run(log,
                        "INSERT INTO understudy.heads(stream, stream_seq, hash)"
                        " VALUES($1, $2, $3) ON CONFLICT DO NOTHING",
                        3, values, lengths));
}

static int pg_close(ust_log *log)
{
    ust__pg_log *pg = log->pg;
    if (pg != NULL) {
        record_head(log);
        if (pg->conn != NULL)
            PQfinish(pg->conn); /* an open transaction is rolled back */
        ust_free(pg->arena);
        ust_free(pg->hashes);
        ust_free(pg);
    }
    ust_free(log->pack);
    ust_free(log->fields_sql);
    ust_free(log->select);
    ust__row_hasher_free(&log->hasher);
    ust_free(log->path);
    ust_free(log);
    return 0;
}

static int pg_begin(ust_log *log, char **err)
{
    if (log->pg->in_outer_tx)
        return ust_errf(err, UST_EINVAL, "%s: transaction already open", log->path);
    int rc = ust__pg_exec(log, "BEGIN", "begin", err);
    if (rc == 0)
        log->pg->in_outer_tx = 1;
    return rc;
}

/* After a transaction that did not commit, the stream and its tip are read
 * again (a stream made inside it is gone with it). */
static void forget_tip(ust_log *log)
{
    log->pg->tip_known = 0;
    log->pg->stream = 0;
}

static int pg_commit(ust_log *log, char **err)
{
    int rc = ust__pg_exec(log, "COMMIT", "commit", err);
    if (rc != 0) {
        ust__pg_exec(log, "ROLLBACK", "rollback", NULL);
        forget_tip(log);
    }
    log->pg->in_outer_tx = 0;
    return rc;
}

static void pg_rollback(ust_log *log)
{
    if (log->pg->in_outer_tx) {
        ust__pg_exec(log, "ROLLBACK", "rollback", NULL);
        forget_tip(log);
    }
    log->pg->in_outer_tx = 0;
}

const ust__log_backend ust__log_pg = {
    .name = "PostgreSQL",
    .open = pg_open,
    .close = pg_close,
    .append = ust__pg_append,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .cursor_open = ust__pg_cursor_open,
    .cursor_open_before = ust__pg_cursor_open_before,
    .cursor_next = ust__pg_cursor_next,
    .cursor_close = ust__pg_cursor_close,
    .read_seqs = ust__pg_read_seqs,
    .scan = ust__pg_scan,
    .verify = ust__pg_verify,
    .head = ust__pg_head,
    .stats = ust__pg_stats,
    .prune_through = ust__pg_prune_through,
    .backup = ust__pg_backup,
};
