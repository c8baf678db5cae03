/* Reading the derived fields of a selection of events in an order of their
 * own, for counts that look at groups of events (coverage). Each read
 * selects only the columns its order's callers need (the others read as
 * NULL), so SQLite sorts narrow records; its sorter spills to temporary
 * files, so memory stays bounded whatever the log's length. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

/* The columns of a row, in the order of ust_log_scan_row's members; a read
 * selects those its order names, NULL in place of the others. */
#define SCAN_COLUMNS(X)                                                                \
    X(SEQ, seq)                                                                        \
    X(RECEIVED_AT, received_at) X(ROUTE, route) X(PROVIDER, provider)                  \
        X(EVENT_ID, event_id) X(TRANSACTION_ID, transaction_id)                        \
            X(TARGET_STATUS, target_status) X(INTENT, intent) X(AMOUNT, amount)        \
                X(CURRENCY, currency) X(IDEM_KEY, idem_key) X(TENANT, tenant)          \
                    X(REQUEST_SHA256, request_sha256) X(SIGNATURE, signature)
#define COL_ENUM(id, name) COL_##id,
enum { SCAN_COLUMNS(COL_ENUM) COL_API, N_COLS };
#undef COL_ENUM
#define COL_NAME(id, name) #name,
static const char *const column_names[] = {SCAN_COLUMNS(COL_NAME)};
#undef COL_NAME
#define C(id) (1u << COL_##id)

/* Whether a row is an API request: its route is one of the list (a JSON
 * array of paths, bound as ?2), or, without a list, it has a route but
 * neither an event id nor a transaction id (what only webhooks carry). */
#define API_BY_LIST "(route IN (SELECT value FROM json_each(?2)))"
#define API_BY_FIELDS                                                                  \
    "(route IS NOT NULL AND event_id IS NULL AND transaction_id IS NULL)"

static const struct {
    const char *where, *order;
    unsigned columns;
} orders[] = {
    [UST_LOG_SCAN_SEQ] = {"1", "seq",
                          C(SEQ) | C(ROUTE) | C(EVENT_ID) | C(TRANSACTION_ID) |
                              C(TARGET_STATUS) | C(INTENT) | C(AMOUNT) | C(CURRENCY) |
                              C(IDEM_KEY) | C(SIGNATURE)},
    [UST_LOG_SCAN_EVENT_ID] = {"event_id IS NOT NULL", "provider, event_id, seq",
                               C(SEQ) | C(PROVIDER) | C(EVENT_ID)},
    [UST_LOG_SCAN_TRANSACTION] = {"transaction_id IS NOT NULL",
                                  "provider, transaction_id, seq",
                                  C(SEQ) | C(PROVIDER) | C(EVENT_ID) |
                                      C(TRANSACTION_ID) | C(TARGET_STATUS)},
    [UST_LOG_SCAN_INTENT] = {"intent IS NOT NULL AND amount IS NOT NULL AND currency"
                             " IS NOT NULL",
                             "provider, intent, amount, currency, received_at, seq",
                             C(SEQ) | C(RECEIVED_AT) | C(PROVIDER) | C(INTENT) |
                                 C(AMOUNT) | C(CURRENCY)},
    [UST_LOG_SCAN_KEY] = {"idem_key IS NOT NULL", "route, idem_key, tenant, seq",
                          C(SEQ) | C(RECEIVED_AT) | C(ROUTE) | C(IDEM_KEY) | C(TENANT) |
                              C(REQUEST_SHA256)},
};

static const char *const selections[] = {
    [UST_LOG_SCAN_ALL] = "1",
    [UST_LOG_SCAN_WEBHOOKS] = "route_filter IS NOT NULL AND NOT api",
    [UST_LOG_SCAN_API] = "api",
};

/* "seq, NULL, route, ...": the order's columns, NULL for the others. */
static char *select_list(unsigned columns, const char *api)
{
    size_t cap = 512, len = 0;
    char *out = ust_malloc(cap);
    for (int i = 0; out != NULL && i < COL_API; i++) {
        const char *name = (columns >> i) & 1 ? column_names[i] : "NULL";
        len += (size_t)snprintf(out + len, cap - len, "%s, ", name);
    }
    if (out != NULL)
        snprintf(out + len, cap - len, "%s AS api", api);
    return out;
}

static char *scan_sql(const ust_log_scan_opts *o)
{
    char *cols = select_list(orders[o->order].columns,
                             o->api_routes != NULL ? API_BY_LIST : API_BY_FIELDS);
    char *sql =
        cols == NULL
            ? NULL
            : ust_sprintf(
                  "SELECT * FROM (SELECT %s, signature AS sig_filter,"
                  " target_status AS status_filter, route AS route_filter FROM events "
                  "WHERE seq <= ?1"
                  " AND %s) WHERE %s%s%s ORDER BY %s",
                  cols, orders[o->order].where, selections[o->select],
                  o->accepted_only ? " AND sig_filter IN ('verified', 'unsigned')" : "",
                  o->target_status != NULL ? " AND status_filter = ?3" : "",
                  orders[o->order].order);
    ust_free(cols);
    return sql;
}

static const char *text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

static void fill_row(sqlite3_stmt *st, ust_log_scan_row *row)
{
    memset(row, 0, sizeof(*row));
    row->seq = sqlite3_column_int64(st, COL_SEQ);
    row->received_at_us = sqlite3_column_int64(st, COL_RECEIVED_AT);
    row->route = text(st, COL_ROUTE);
    row->provider = text(st, COL_PROVIDER);
    row->event_id = text(st, COL_EVENT_ID);
    row->transaction_id = text(st, COL_TRANSACTION_ID);
    row->target_status = text(st, COL_TARGET_STATUS);
    row->intent = text(st, COL_INTENT);
    row->has_amount = sqlite3_column_type(st, COL_AMOUNT) != SQLITE_NULL;
    row->amount = sqlite3_column_int64(st, COL_AMOUNT);
    row->currency = text(st, COL_CURRENCY);
    row->idem_key = text(st, COL_IDEM_KEY);
    row->tenant = text(st, COL_TENANT);
    row->request_sha256 = text(st, COL_REQUEST_SHA256);
    const char *sig = text(st, COL_SIGNATURE);
    if (sig != NULL && ust_sig_status_parse(sig, &row->sig) != 0)
        row->sig = UST_SIG_INVALID; /* unreadable: verify will say so */
    row->api = sqlite3_column_int(st, COL_API) != 0;
}

int ust_log_scan(ust_log *log, const ust_log_scan_opts *o,
                 int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                 char **err)
{
    if ((unsigned)o->order >= sizeof(orders) / sizeof(orders[0]) ||
        (unsigned)o->select >= sizeof(selections) / sizeof(selections[0]))
        return ust_errf(err, UST_EINVAL, "%s: no such scan", log->path);
    /* A small page cache: the sorter keeps about that much in memory and
     * spills the rest to temporary files. */
    int rc =
        ust__log_exec(log, "PRAGMA cache_size=-1024; PRAGMA temp_store=FILE;", err);
    if (rc != 0)
        return rc;
    char *sql = scan_sql(o);
    if (sql == NULL)
        return UST_ENOMEM;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) != SQLITE_OK) {
        ust_free(sql);
        return ust__log_db_error(log, "scan events", err);
    }
    ust_free(sql);
    sqlite3_bind_int64(st, 1, o->through_seq);
    if (o->api_routes != NULL)
        sqlite3_bind_text(st, 2, o->api_routes, -1, SQLITE_STATIC);
    if (o->target_status != NULL)
        sqlite3_bind_text(st, 3, o->target_status, -1, SQLITE_STATIC);
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        ust_log_scan_row row;
        fill_row(st, &row);
        rc = each(ctx, &row);
    }
    /* A read that stops early is an error, never a smaller count. */
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "scan events", err);
    sqlite3_finalize(st);
    return rc;
}
