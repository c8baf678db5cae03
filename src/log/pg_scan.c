/* ust_log_scan over the PostgreSQL log: the query scan.c writes for every
 * backend, over the rows in the global order, read through a cursor of the
 * server's a batch at a time (the server sorts, spilling past work_mem to
 * its own temporary files; the client holds one batch). Strings are bytea,
 * compared byte by byte as SQLite compares TEXT, so the order is the same. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

#define BATCH "1000"

/* Parameter types (pg_type.h is a server header): int8, text, bytea. */
static const Oid param_types[] = {20, 25, 17};

static const ust__scan_dialect pg_dialect = {
    "(SELECT " UST__PG_ROW_SEQ " AS seq, e.* FROM " UST__PG_ROWS ") AS events",
    "(route IN (SELECT convert_to(value, 'UTF8')"
    " FROM jsonb_array_elements_text($2::jsonb) AS value))",
    "$1", "$3"};

static int declare(ust_log *log, const ust_log_scan_opts *o, char **err)
{
    char *query = ust__log_scan_sql(o, &pg_dialect);
    char *sql =
        query ? ust_sprintf("DECLARE ust_scan NO SCROLL CURSOR FOR %s", query) : NULL;
    ust_free(query);
    if (sql == NULL)
        return UST_ENOMEM;
    unsigned char through[8];
    ust__pg_put_int(through, o->through_seq);
    const char *values[] = {(const char *)through, o->api_routes, o->target_status};
    int lengths[] = {8, o->api_routes ? (int)strlen(o->api_routes) : 0,
                     o->target_status ? (int)strlen(o->target_status) : 0};
    int formats[] = {1, 1, 1};
    PGresult *res =
        PQexecParams(log->pg->conn, sql, 3, param_types, values, lengths, formats, 1);
    ust_free(sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return ust__pg_error(log, res, "scan events", err);
    PQclear(res);
    return 0;
}

static int fetch_all(ust_log *log, const ust_log_scan_opts *o,
                     int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                     char **err)
{
    int rc = 0;
    for (;;) {
        PGresult *res = PQexecParams(log->pg->conn, "FETCH " BATCH " FROM ust_scan", 0,
                                     NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(res) != PGRES_TUPLES_OK)
            return ust__pg_error(log, res, "scan events", err);
        int n = PQntuples(res);
        for (int i = 0; rc == 0 && i < n; i++) {
            ust__pg_row r = {res, i};
            ust__row_source src = ust__pg_row_source(&r);
            ust_log_scan_row row;
            ust__log_scan_fill(&src, o, &row);
            rc = each(ctx, &row);
        }
        PQclear(res);
        if (rc != 0 || n == 0)
            return rc;
    }
}

int ust__pg_scan(ust_log *log, const ust_log_scan_opts *o,
                 int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                 char **err)
{
    /* A cursor lives in a transaction: its own, one snapshot, unless the
     * caller holds one (ust_log_begin). */
    int own = !log->pg->in_outer_tx;
    int rc = own ? ust__pg_reconnect(log, err) : 0;
    if (rc == 0 && own)
        rc = ust__pg_exec(log, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                          "scan events", err);
    if (rc != 0)
        return rc;
    if ((rc = declare(log, o, err)) == 0) {
        rc = fetch_all(log, o, each, ctx, err);
        ust__pg_exec(log, "CLOSE ust_scan", "scan events", NULL);
    }
    if (own)
        ust__pg_exec(log, rc == 0 ? "COMMIT" : "ROLLBACK", "scan events", NULL);
    return rc;
}
