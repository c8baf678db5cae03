#ifndef UST_LOG_INTERNAL_H
#define UST_LOG_INTERNAL_H

#include <sqlite3.h>

#include <understudy/log.h>

/* Frames a row and digests it; one per thread (it reuses its buffers). */
typedef struct ust__row_hasher {
    void *md; /* EVP_MD_CTX; the digest is ust_sha256_md(), fetched once */
    unsigned char *frame;
    size_t len, cap;
    int failed;
} ust__row_hasher;

/* meta.format is "understudy-log-<ust__log_format()>"; an older log is
 * upgraded on its first writing open: format 1 gains the prune chain,
 * format 2 the response columns (open.c), and each later format the
 * columns of the fields that arrived in it (fields.c). The formats up to
 * UST__LOG_FORMAT_BASE are the log's own; a later one is a field's
 * (event_fields.h: since). */
#define UST__LOG_FORMAT_BASE 3

/* A derived field as the log stores it, one row per UST_EVENT_FIELDS row
 * (fields.c): its column, its type in each backend, the format it arrived
 * in. */
typedef struct ust__log_field {
    const char *column;
    const char *sqlite_type, *pg_type;
    int since;
} ust__log_field;
#define UST__LOG_FIELD_COUNT_(kind, m, column, wire, wire_at, export, source, since,   \
                              desc)                                                    \
    +1
enum { UST__LOG_N_FIELDS = 0 UST_EVENT_FIELDS(UST__LOG_FIELD_COUNT_) };
#undef UST__LOG_FIELD_COUNT_
extern const ust__log_field ust__log_fields[UST__LOG_N_FIELDS];

/* The format this version writes: the latest a field arrived in, or
 * UST__LOG_FORMAT_BASE. */
int ust__log_format(void);

/* Which field columns a log has: present[i] for ust__log_fields[i]. A
 * field of format 1 is in every log, and not asked about; has_column says
 * whether the log has the named column. */
void ust__log_fields_probe(unsigned char present[UST__LOG_N_FIELDS],
                           int (*has_column)(void *ctx, const char *column), void *ctx);

/* "<prefix><column>, " for each field present, "NULL, " in place of each
 * one missing (an older log read as it is, its new fields absent), in
 * UST_EVENT_FIELDS order; NULL when out of memory. */
char *ust__log_fields_select(const unsigned char present[UST__LOG_N_FIELDS],
                             const char *prefix);

/* The ALTER TABLE statements adding every missing field's column to table
 * ("events", "understudy.events"), pg != 0 for PostgreSQL's types; "" when
 * none is missing, NULL when out of memory. */
char *ust__log_fields_alter(const unsigned char present[UST__LOG_N_FIELDS],
                            const char *table, int pg);

/* Where a log lives: a SQLite file (open.c and the files beside it) or a
 * PostgreSQL database (pg_*.c). backend.c picks one by the path's scheme,
 * once, at open, and routes every public call through its table; what does
 * not depend on the storage (import, export, JSONL, derivation, the chain's
 * framing in chain.c) is shared. */
typedef struct ust__log_backend {
    const char *name;
    int (*open)(const char *path, unsigned flags, ust_log **out, char **err);
    int (*close)(ust_log *log);
    int (*append)(ust_log *log, const ust_log_record *recs, size_t n,
                  int64_t *first_seq, char **err);
    int (*begin)(ust_log *log, char **err);
    int (*commit)(ust_log *log, char **err);
    void (*rollback)(ust_log *log);
    int (*cursor_open)(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                       char **err);
    int (*cursor_open_before)(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                              char **err);
    /* NULL: the backend reads whole rows (ust_log_cursor_open_fields). */
    int (*cursor_open_fields)(ust_log *log, int64_t after_seq, const char *config_hash,
                              ust_log_cursor **out, char **err);
    int (*cursor_next)(ust_log_cursor *cur, ust_log_record *rec, char **err);
    void (*cursor_close)(ust_log_cursor *cur);
    int (*read_seqs)(ust_log *log, const int64_t *seqs, size_t n,
                     int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                     char **err);
    /* o's order and selection are in range (backend.c checks them). */
    int (*scan)(ust_log *log, const ust_log_scan_opts *o,
                int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                char **err);
    /* The rows with seq <= limit (INT64_MAX: all of them); anchor_seq (0:
     * none) must be reached, and there anchor_hex passed through (64
     * lowercase hex digits, backend.c spells them; NULL: any hash). res is
     * zeroed by the caller. */
    int (*verify)(ust_log *log, int64_t limit, int64_t anchor_seq,
                  const char *anchor_hex, ust_log_verify_result *res, char **err);
    int (*head)(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                char **err);
    int (*stats)(ust_log *log, json_t **out, char **err);
    int (*prune_through)(ust_log *log, int64_t before_us, int64_t max_seq,
                         int64_t now_us, int64_t *n_pruned, char **err);
    int (*backup)(ust_log *log, const char *out_path, char **err);
} ust__log_backend;

extern const ust__log_backend ust__log_sqlite;
extern const ust__log_backend ust__log_pg;

/* The backend a log path names: PostgreSQL for a postgresql:// or
 * postgres:// URL, SQLite for anything else (a file). The only place the
 * choice is made. */
const ust__log_backend *ust__log_backend_for(const char *path);

/* Every backend's cursor starts with this. */
struct ust_log_cursor {
    ust_log *log;
};

typedef struct ust__pg_log ust__pg_log;

struct ust_log {
    const ust__log_backend *backend;
    ust__pg_log *pg; /* the PostgreSQL backend's state, NULL for SQLite */
    sqlite3 *db;
    char *path;
    int prune_chain; /* prunes has the chain columns (format 2) */
    int responses;   /* events has the response columns (format 3) */
    /* Which field columns events has (fields.c), and the select of every
     * column, NULL in place of those it lacks (ust__log_select). */
    unsigned char field_present[UST__LOG_N_FIELDS];
    char *fields_sql, *select;
    int in_outer_tx;      /* ust_log_begin is active */
    sqlite3_stmt *insert; /* prepared once, reused for every append */
    char *pack;           /* reusable buffer for packed headers */
    size_t pack_cap;
    ust__row_hasher hasher; /* the calling thread's; a helper thread has its own */
    unsigned char *digests; /* per-batch content digests */
    size_t digests_cap;
    /* The chain's tip as this connection's last append left it, trusted for
     * the next append while no other connection has committed since (PRAGMA
     * data_version unchanged, read under the write lock): a small commit
     * then skips the tip query. */
    sqlite3_stmt *tip_query, *data_version;
    int tip_known;
    int64_t tip_next_seq, tip_data_version;
    unsigned char tip_hash[UST_SHA256_LEN];
};

/* The events table's columns, in the order every reader selects them (see
 * ust__log_row_decode): the request as it arrived, the derived fields of
 * UST_EVENT_FIELDS (event.h), the chain link. UST__COL_<column> is a
 * column's index in a row read with UST__LOG_COLUMNS. */
enum {
    UST__COL_seq,
    UST__COL_received_at,
    UST__COL_remote,
    UST__COL_method,
    UST__COL_target,
    UST__COL_headers,
    UST__COL_body,
#define UST__COL_INDEX_(kind, m, column, wire, wire_at, export, source, since, desc)   \
    UST__COL_##column,
    UST_EVENT_FIELDS(UST__COL_INDEX_)
#undef UST__COL_INDEX_
        UST__COL_prev_hash,
    UST__COL_hash,
    UST__COL_response_status,
    UST__COL_response_headers,
    UST__COL_response_body,
    UST__LOG_N_COLUMNS
};

#define UST__LOG_COLUMN_NAME_(kind, m, column, wire, wire_at, export, source, since,   \
                              desc)                                                    \
#column ", "
#define UST__LOG_COLUMNS                                                               \
    "seq, received_at, remote, method, target, headers, body, " UST_EVENT_FIELDS(      \
        UST__LOG_COLUMN_NAME_) "prev_hash, hash"
/* The recorded answer (format 3), last: ALTER TABLE adds them there to a
 * format-2 log. NULL when a row has none. */
#define UST__LOG_RESPONSE_COLUMNS "response_status, response_headers, response_body"

/* "SELECT <every column> FROM events": a format-2 log opened read-only has
 * no response columns, and reads NULL in their place. */
const char *ust__log_select(const ust_log *log);

/* A derived field's SQL type, by its kind (the schema in open.c). */
#define UST__LOG_SQL_TEXT "TEXT"
#define UST__LOG_SQL_ROUTE "TEXT"
#define UST__LOG_SQL_SHA "TEXT NOT NULL"
#define UST__LOG_SQL_SIG "TEXT NOT NULL"
#define UST__LOG_SQL_AMOUNT "INTEGER"
#define UST__LOG_SQL_CONFIG "TEXT"
/* ...and in PostgreSQL (pg_open.c), where every string is bytea: a
 * request's bytes are kept as they came, whatever the database's encoding
 * (a text column refuses bytes that are not in it, and one such request
 * would fail its whole batch). */
#define UST__LOG_PG_TEXT "bytea"
#define UST__LOG_PG_ROUTE "bytea"
#define UST__LOG_PG_SHA "bytea NOT NULL"
#define UST__LOG_PG_SIG "bytea NOT NULL"
#define UST__LOG_PG_AMOUNT "bigint"
#define UST__LOG_PG_CONFIG "bytea"

/* A row's hash = ust__log_chain_link(prev_hash, ust__log_row_digest(row)). */
void ust__log_row_digest(ust__row_hasher *h, const ust_log_record *rec,
                         unsigned char out[UST_SHA256_LEN]);
void ust__log_chain_link(ust__row_hasher *h, const unsigned char prev[UST_SHA256_LEN],
                         const unsigned char digest[UST_SHA256_LEN],
                         unsigned char out[UST_SHA256_LEN]);
void ust__row_hasher_free(ust__row_hasher *h);

/* A prune record as its hash covers it (every column but the hash). */
typedef struct ust__prune_record {
    int64_t id, pruned_at, before, first_seq, last_seq, count;
    int64_t tip_seq;                         /* the chain's tip when it was pruned */
    unsigned char anchor[UST_SHA256_LEN];    /* hash of row last_seq */
    unsigned char link_prev[UST_SHA256_LEN]; /* the tip's hash it chains from */
    unsigned char prev_hash[UST_SHA256_LEN]; /* the previous prune's, or zeros */
} ust__prune_record;
void ust__log_prune_hash(ust__row_hasher *h, const ust__prune_record *p,
                         unsigned char out[UST_SHA256_LEN]);

/* Several writers (the PostgreSQL log): each writes a stream of its own,
 * chained from its genesis (a hash of the stream's id, when it was opened
 * and its label) with the row digest above, the stream's own seq in place of
 * seq. Each transaction's rows get the next global seqs in commit order, and
 * a commit record says which: it is chained to the commit before it and
 * covers the hash of its last row, so the global order is hashed too. */
void ust__log_stream_genesis(ust__row_hasher *h, int64_t stream, int64_t opened_at,
                             const char *label, unsigned char out[UST_SHA256_LEN]);
typedef struct ust__commit_record {
    int64_t first_seq, last_seq;             /* the global seqs it gives */
    int64_t stream, first_stream_seq;        /* to these rows of one stream */
    unsigned char last_hash[UST_SHA256_LEN]; /* the hash of its last row */
    unsigned char prev_hash[UST_SHA256_LEN]; /* the previous commit's, or zeros */
} ust__commit_record;
void ust__log_commit_hash(ust__row_hasher *h, const ust__commit_record *c,
                          unsigned char out[UST_SHA256_LEN]);

/* A verify's finding: bad_seq and the reason (printf). UST_ETAMPER. */
int ust__log_tamper(ust_log_verify_result *res, int64_t seq, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The checks every record passes before any backend appends it (backend.c
 * makes them). */
int ust__log_check_records(const ust_log *log, const ust_log_record *recs, size_t n,
                           char **err);

/* The next seq and the hash it chains to, for an append inside the write
 * transaction: remembered from this connection's last append when nothing
 * else has committed since, else read. 0 or an error. */
int ust__log_tip_for_append(ust_log *log, int64_t *next_seq,
                            unsigned char prev[UST_SHA256_LEN], char **err);
/* What an append that committed leaves as the tip (after_seq is its last
 * seq), or forgets it (after_seq 0: rolled back, or committed elsewhere). */
void ust__log_tip_remember(ust_log *log, int64_t after_seq,
                           const unsigned char hash[UST_SHA256_LEN]);

/* A string of the interchange format: v (a JSON string, base64 when
 * is_base64) into *out, a C string the caller frees. UST_EPARSE with *why
 * what is wrong ("expected a string", "not valid base64", "holds a NUL
 * byte"), for the caller to name the field only then; UST_ENOMEM. */
int ust__jsonl_text_load(json_t *v, int is_base64, char **out, const char **why);

/* Parses the interchange format's JSON array of [name, value] pairs into
 * req's headers. 0 or UST_EPARSE with *err. */
int ust__headers_load(json_t *array, ust_request *req, char **err);
/* Packs n headers into log->pack ("name\0value\0" pairs). */
int ust__headers_pack(ust_log *log, const ust_header *headers, size_t n, size_t *len);
/* Unpacks a headers column into req. 0, UST_EPARSE, UST_ENOMEM. */

/* The SQLite backend's entries (its table is in open.c). */
int ust__sqlite_open(const char *path, unsigned flags, ust_log **out, char **err);
int ust__sqlite_close(ust_log *log);
int ust__sqlite_append(ust_log *log, const ust_log_record *recs, size_t n,
                       int64_t *first_seq, char **err);
int ust__sqlite_begin(ust_log *log, char **err);
int ust__sqlite_commit(ust_log *log, char **err);
void ust__sqlite_rollback(ust_log *log);
int ust__sqlite_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                            char **err);
int ust__sqlite_cursor_open_before(ust_log *log, int64_t before_seq,
                                   ust_log_cursor **out, char **err);
int ust__sqlite_cursor_open_fields(ust_log *log, int64_t after_seq,
                                   const char *config_hash, ust_log_cursor **out,
                                   char **err);
int ust__sqlite_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err);
void ust__sqlite_cursor_close(ust_log_cursor *cur);
int ust__sqlite_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                          int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                          char **err);
int ust__sqlite_scan(ust_log *log, const ust_log_scan_opts *o,
                     int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                     char **err);
int ust__sqlite_verify(ust_log *log, int64_t limit, int64_t anchor_seq,
                       const char *anchor_hex, ust_log_verify_result *res, char **err);
int ust__sqlite_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                     char **err);
int ust__sqlite_stats(ust_log *log, json_t **out, char **err);
int ust__sqlite_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                              int64_t now_us, int64_t *n_pruned, char **err);
int ust__sqlite_backup(ust_log *log, const char *out_path, char **err);

/* ---- the stats object both backends fill (stats_object.c) ---- */

/* A backend's run of sql, a count of events by one column (rows: the value
 * or "(none)", the count), into obj; 0 or an error with *err set. */
typedef int (*ust__log_count_by)(ust_log *log, const char *sql, json_t *obj,
                                 char **err);

/* What a log spans; first_at and last_at (microseconds) only when has_times. */
typedef struct {
    int64_t events, first_seq, last_seq, prunes, pruned_events;
    int64_t first_at, last_at;
    int has_times;
} ust__log_span;

/* A new stats object holding its empty "routes", "providers" and "signatures"
 * (NULL: out of memory); the caller owns it. */
json_t *ust__log_stats_new(void);

/* Fills o's three counts through the backend's count_by, each a query of
 * table with none (a literal of the column's type) for a missing value;
 * stops at the first error. */
int ust__log_stats_count(ust_log *log, json_t *o, const char *table, const char *none,
                         ust__log_count_by count_by, char **err);

/* Sets o's span members: events, first and last seq and arrival, prunes. */
void ust__log_stats_span(json_t *o, const ust__log_span *s);

/* A row as a backend read it, for the one decoder: each column's type, and
 * its value as a number or as bytes (text without a terminating NUL
 * counted). ctx is the backend's (a statement, a result row). */
typedef enum ust__val_type {
    UST__VAL_NULL,
    UST__VAL_INT,
    UST__VAL_TEXT,
    UST__VAL_BLOB,
    UST__VAL_OTHER
} ust__val_type;
typedef struct ust__row_source {
    ust__val_type (*type)(void *ctx, int col);
    int64_t (*int64)(void *ctx, int col);
    const void *(*bytes)(void *ctx, int col, size_t *len);
    void *ctx;
} ust__row_source;
/* A stepped statement's current row as a row source. */
ust__row_source ust__sqlite_row_source(sqlite3_stmt *st);

/* What ust_log_scan asks of a backend's SQL: the table of events (every
 * column of the SQLite events table, seq the global order), how a route is
 * one of a JSON array of paths bound as the second parameter, and how the
 * first (through_seq) and third (target_status) parameters are spelled. */
typedef struct ust__scan_dialect {
    const char *events, *api_by_list, *through, *status;
} ust__scan_dialect;
/* The scan's query: the order's columns in ust_log_scan_row's order (the
 * others not selected), then the api flag; sorted as the order says. NULL:
 * out of memory. */
char *ust__log_scan_sql(const ust_log_scan_opts *o, const ust__scan_dialect *d);
/* A row of that query into row (its strings borrowed from src). */
void ust__log_scan_fill(const ust__row_source *src, const ust_log_scan_opts *o,
                        ust_log_scan_row *row);

/* Fills rec from a row whose columns are UST__COL_* (see
 * ust__log_row_decode). */
int ust__log_row_decode_from(const ust__row_source *src, ust_log_record *rec,
                             unsigned char prev[UST_SHA256_LEN], char **err);

/* Fills rec from a row selected with UST__LOG_COLUMNS; prev_hash into prev
 * (may be NULL). 0, UST_ENOMEM, UST_EPARSE (a column of the wrong type, or a
 * headers column that does not unpack as "name\0value\0" pairs: only
 * possible behind the triggers' back). */
int ust__log_row_decode(sqlite3_stmt *st, ust_log_record *rec,
                        unsigned char prev[UST_SHA256_LEN], char **err);

/* Runs sql, failing with UST_EDB and the SQLite message in *err. */
int ust__log_exec(ust_log *log, const char *sql, char **err);
int ust__log_db_error(ust_log *log, const char *what, char **err);

/* The hash the next row must chain from, and the seq it gets: the last row,
 * or the anchor of the latest prune when no row follows it, or zeros. */
int ust__log_chain_tip(ust_log *log, int64_t *next_seq,
                       unsigned char prev[UST_SHA256_LEN], char **err);

/* One request of another tool's capture, with the answer it got (status 0
 * when none was captured), and where it stands in the file: "entry 3",
 * "payload 5 (id 8a1f…)" and the line it starts on (0: not known), for a
 * refusal. */
typedef struct ust__capture_entry {
    ust_request req;
    ust_response response;
    char where[96];
    size_t line;
} ust__capture_entry;
typedef struct ust__capture {
    ust__capture_entry *v;
    size_t n, cap;
} ust__capture;
/* A new zeroed entry at the end of c. NULL when out of memory. */
ust__capture_entry *ust__capture_push(ust__capture *c);
void ust__capture_clear(ust__capture *c);
/* Takes req's headers into r (req is left without any). */
void ust__capture_move_headers(ust_request *req, ust_response *r);
/* A refusal as the capture parsers give it, "<label>:<line>: <where>:
 * <why>" ("<label>: <where>: <why>" when line is 0), in *err; returns rc. */
int ust__capture_fail(char **err, int rc, const char *label, size_t line,
                      const char *where, const char *why);
/* The line of buf that p is on, from 1. */
size_t ust__line_of(const char *buf, const char *p);

/* The parsers behind ust_log_import_capture: every entry of buf into out
 * (cleared first), or UST_EPARSE with *err from ust__capture_fail and out
 * empty. */
int ust__har_parse(const char *buf, size_t len, const char *label, ust__capture *out,
                   char **err);
int ust__goreplay_parse(const char *buf, size_t len, const char *label,
                        ust__capture *out, char **err);

#endif
