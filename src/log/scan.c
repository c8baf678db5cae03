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
 * selects those its order names, NULL in place of the others. One column a
 * line. */
/* clang-format off */
#define SCAN_COLUMNS(X)               \
    X(SEQ, seq)                       \
    X(RECEIVED_AT, received_at)       \
    X(ROUTE, route)                   \
    X(PROVIDER, provider)             \
    X(EVENT_ID, event_id)             \
    X(TRANSACTION_ID, transaction_id) \
    X(TARGET_STATUS, target_status)   \
    X(INTENT, intent)                 \
    X(AMOUNT, amount)                 \
    X(CURRENCY, currency)             \
    X(IDEM_KEY, idem_key)             \
    X(TENANT, tenant)                 \
    X(REQUEST_SHA256, request_sha256) \
    X(SIGNATURE, signature)
/* clang-format on */
#define COL_ENUM(id, name) COL_##id,
enum { SCAN_COLUMNS(COL_ENUM) COL_API, N_COLS };
#undef COL_ENUM
#define COL_NAME(id, name) #name,
static const char *const column_names[] = {SCAN_COLUMNS(COL_NAME)};
#undef COL_NAME
#define C(id) (1u << COL_##id)

/* Whether a row is an API request, without a list of API routes (each
 * backend says how a route is in one: ust__scan_dialect): it has a route but
 * neither an event id nor a transaction id (what only webhooks carry). */
#define API_BY_FIELDS                                                                  \
    "(route IS NOT NULL AND event_id IS NULL AND transaction_id IS NULL)"

static const struct {
    const char *where, *order;
    unsigned columns;
} orders[] = {
    [UST_LOG_SCAN_SEQ] = {"TRUE", "seq",
                          C(SEQ) | C(ROUTE) | C(EVENT_ID) | C(TRANSACTION_ID) |
                              C(TARGET_STATUS) | C(INTENT) | C(AMOUNT) | C(CURRENCY) |
                              C(IDEM_KEY) | C(SIGNATURE)},
    [UST_LOG_SCAN_EVENT_ID] = {"event_id IS NOT NULL",
                               "provider NULLS FIRST, event_id, seq",
                               C(SEQ) | C(PROVIDER) | C(EVENT_ID)},
    [UST_LOG_SCAN_TRANSACTION] = {"transaction_id IS NOT NULL",
                                  "provider NULLS FIRST, transaction_id, seq",
                                  C(SEQ) | C(PROVIDER) | C(EVENT_ID) |
                                      C(TRANSACTION_ID) | C(TARGET_STATUS)},
    [UST_LOG_SCAN_INTENT] =
        {"intent IS NOT NULL AND amount IS NOT NULL AND currency"
         " IS NOT NULL",
         "provider NULLS FIRST, intent, amount, currency, received_at, seq",
         C(SEQ) | C(RECEIVED_AT) | C(PROVIDER) | C(INTENT) | C(AMOUNT) | C(CURRENCY)},
    [UST_LOG_SCAN_KEY] = {"idem_key IS NOT NULL",
                          "route NULLS FIRST, idem_key, tenant NULLS FIRST, seq",
                          C(SEQ) | C(RECEIVED_AT) | C(ROUTE) | C(IDEM_KEY) | C(TENANT) |
                              C(REQUEST_SHA256)},
};

static const char *const selections[] = {
    [UST_LOG_SCAN_ALL] = "TRUE",
    [UST_LOG_SCAN_WEBHOOKS] = "route_filter IS NOT NULL AND NOT api",
    [UST_LOG_SCAN_API] = "api",
};

/* "seq, route, ...": the order's columns, the api flag's expression after
 * them when api is not NULL (then "AS api"). */
static char *select_list(unsigned columns, const char *api)
{
    size_t cap = 512, len = 0;
    char *out = ust_malloc(cap);
    for (int i = 0; out != NULL && i < COL_API; i++)
        if ((columns >> i) & 1)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "",
                                    column_names[i]);
    if (out != NULL)
        snprintf(out + len, cap - len, ", %s%s", api ? api : "api",
                 api ? " AS api" : "");
    return out;
}

char *ust__log_scan_sql(const ust_log_scan_opts *o, const ust__scan_dialect *d)
{
    unsigned columns = orders[o->order].columns;
    char *cols =
        select_list(columns, o->api_routes != NULL ? d->api_by_list : API_BY_FIELDS);
    /* Only the order's columns leave the subquery, not its filters: each
     * column more is one more in every record SQLite sorts. */
    char *outer = select_list(columns, NULL);
    char *status = o->target_status != NULL
                       ? ust_sprintf(" AND status_filter = %s", d->status)
                       : ust_sprintf("%s", "");
    char *sql =
        cols == NULL || outer == NULL || status == NULL
            ? NULL
            : ust_sprintf(
                  "SELECT %s FROM (SELECT %s, signature AS sig_filter,"
                  " target_status AS status_filter, route AS route_filter FROM %s "
                  "WHERE seq <= %s"
                  " AND %s) AS scanned WHERE %s%s%s ORDER BY %s",
                  outer, cols, d->events, d->through, orders[o->order].where,
                  selections[o->select],
                  o->accepted_only ? " AND sig_filter IN ('verified', 'unsigned')" : "",
                  status, orders[o->order].order);
    ust_free(cols);
    ust_free(outer);
    ust_free(status);
    return sql;
}

static const char *text(const ust__row_source *src, int col)
{
    size_t len;
    return col < 0 || src->type(src->ctx, col) == UST__VAL_NULL
               ? NULL
               : src->bytes(src->ctx, col, &len);
}

void ust__log_scan_fill(const ust__row_source *src, const ust_log_scan_opts *o,
                        ust_log_scan_row *row)
{
    /* Where each column is in the row: the order's, in their order; -1 for
     * the others, which read as NULL (0). */
    unsigned columns = orders[o->order].columns;
    int at[N_COLS];
    int n = 0;
    for (int i = 0; i < COL_API; i++)
        at[i] = (columns >> i) & 1 ? n++ : -1;
    at[COL_API] = n;
    memset(row, 0, sizeof(*row));
    if (at[COL_SEQ] >= 0)
        row->seq = src->int64(src->ctx, at[COL_SEQ]);
    if (at[COL_RECEIVED_AT] >= 0)
        row->received_at_us = src->int64(src->ctx, at[COL_RECEIVED_AT]);
    row->route = text(src, at[COL_ROUTE]);
    row->provider = text(src, at[COL_PROVIDER]);
    row->event_id = text(src, at[COL_EVENT_ID]);
    row->transaction_id = text(src, at[COL_TRANSACTION_ID]);
    row->target_status = text(src, at[COL_TARGET_STATUS]);
    row->intent = text(src, at[COL_INTENT]);
    row->has_amount =
        at[COL_AMOUNT] >= 0 && src->type(src->ctx, at[COL_AMOUNT]) != UST__VAL_NULL;
    row->amount = row->has_amount ? src->int64(src->ctx, at[COL_AMOUNT]) : 0;
    row->currency = text(src, at[COL_CURRENCY]);
    row->idem_key = text(src, at[COL_IDEM_KEY]);
    row->tenant = text(src, at[COL_TENANT]);
    row->request_sha256 = text(src, at[COL_REQUEST_SHA256]);
    const char *sig = text(src, at[COL_SIGNATURE]);
    if (sig != NULL && ust_sig_status_parse(sig, &row->sig) != 0)
        row->sig = UST_SIG_INVALID; /* unreadable: verify will say so */
    row->api = src->type(src->ctx, at[COL_API]) != UST__VAL_NULL &&
               src->int64(src->ctx, at[COL_API]) != 0;
}

/* A route in the list of API routes: in the JSON array bound as ?2. */
static const ust__scan_dialect sqlite_dialect = {
    "events", "(route IN (SELECT value FROM json_each(?2)))", "?1", "?3"};

int ust__sqlite_scan(ust_log *log, const ust_log_scan_opts *o,
                     int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                     char **err)
{
    /* A small page cache: the sorter keeps about that much in memory and
     * spills the rest to temporary files. */
    int rc =
        ust__log_exec(log, "PRAGMA cache_size=-1024; PRAGMA temp_store=FILE;", err);
    if (rc != 0)
        return rc;
    char *sql = ust__log_scan_sql(o, &sqlite_dialect);
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
    ust__row_source src = ust__sqlite_row_source(st);
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        ust_log_scan_row row;
        ust__log_scan_fill(&src, o, &row);
        rc = each(ctx, &row);
    }
    /* A read that stops early is an error, never a smaller count. */
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "scan events", err);
    sqlite3_finalize(st);
    return rc;
}
