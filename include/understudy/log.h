/* The event log: every request exactly as it arrived, in one SQLite file in
 * WAL mode, append-only (triggers abort UPDATE and DELETE) and hash-chained
 * (each row carries SHA-256 over the previous row's hash and its own content). */
#ifndef UNDERSTUDY_LOG_H
#define UNDERSTUDY_LOG_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/event.h>
#include <understudy/hash.h>
#include <understudy/progress.h>
#include <understudy/request.h>
#include <understudy/sig.h>

typedef struct ust_log ust_log;

enum {
    UST_LOG_READONLY = 1, /* open for reading only */
    UST_LOG_CREATE = 2    /* create the file and schema when missing */
};

/* One row. On append, the caller fills req and the derived fields (seq and
 * hash are assigned); on read, everything is owned by the record and freed by
 * ust_log_record_clear. Derived strings are NULL when absent. */
/* A field's member in a row (UST_EVENT_FIELDS, event.h): the route by its
 * path, the config hash "" when none. */
#define UST__ROW_MEMBER_TEXT(m) char *m;
#define UST__ROW_MEMBER_ROUTE(m) char *m;
#define UST__ROW_MEMBER_SHA(m) char m[UST_SHA256_HEX_LEN + 1];
#define UST__ROW_MEMBER_SIG(m) ust_sig_status m;
#define UST__ROW_MEMBER_AMOUNT(m)                                                      \
    int64_t m;                                                                         \
    int has_##m;
#define UST__ROW_MEMBER_CONFIG(m) char m[UST_SHA256_HEX_LEN + 1];
#define UST__ROW_MEMBER(kind, m, column, wire, wire_at, export, source, since, desc)   \
    UST__ROW_MEMBER_##kind(m)

/* One row. On append, the caller fills req and the derived fields (seq and
 * hash are assigned); on read, everything is owned by the record and freed by
 * ust_log_record_clear. Derived strings are NULL when absent. The derived
 * fields are the whole canonical event, so a replay under the same config
 * need not parse the body again (parsing is most of derivation). */
typedef struct ust_log_record {
    int64_t seq;
    ust_request req;
    UST_EVENT_FIELDS(UST__ROW_MEMBER)
    unsigned char hash[UST_SHA256_LEN];
    /* The answer the request was given (production's, imported or recorded
     * in line), status 0 when none; inside the row's hash like the request. */
    ust_response response;
} ust_log_record;

void ust_log_record_clear(ust_log_record *rec);

/* path is a file (SQLite) or a postgresql:// (or postgres://) URL, a
 * PostgreSQL database (docs/log.md): a writing open there starts a stream of
 * its own. 0; UST_EIO or UST_EDB with *err naming the file. */
int ust_log_open(const char *path, unsigned flags, ust_log **out, char **err);
/* A handle that can write records the head in meta (verify then names rows
 * cut off later) and checkpoints the WAL into the database file (TRUNCATE),
 * so the .db alone holds every event; both best effort, the WAL keeping
 * everything when they fail. 1 when the checkpoint did not complete (a
 * reader held it back, for at most the busy timeout): then the -wal file
 * holds events the .db does not, and must stay beside it; else 0. */
int ust_log_close(ust_log *log);

/* An exclusive lock on DB (the file "DB.lock", which records the holder's
 * pid), for a process that must be the only one of its kind on DB: serve
 * takes it for its log and its run database. UST_EEXISTS with *err naming
 * the holder when another process has it. A log in PostgreSQL (a
 * postgresql:// URL) takes several writers: *out is NULL, and 0. */
typedef struct ust_db_lock ust_db_lock;
int ust_db_lock_take(const char *db_path, ust_db_lock **out, char **err);
void ust_db_lock_release(ust_db_lock *lock);
/* Releases the lock of a start that failed: its file is removed when this
 * take created it (one that was there before stays). NULL is a no-op. */
void ust_db_lock_discard(ust_db_lock *lock);

/* Removes the SQLite database at path with its -wal, -shm and -journal: for
 * a database that a start which failed created (a postgresql:// URL: no
 * file, nothing done). Only for one no other process can be using: its
 * lock held, or made by this process and never handed on. */
void ust_db_remove(const char *path);

/* Writes a consistent copy of the log (one snapshot, the WAL included; safe
 * while the recorder appends) to out_path, a new file: UST_EEXISTS when it
 * exists, UST_EIO / UST_EDB otherwise (nothing left behind). */
int ust_log_backup(ust_log *log, const char *out_path, char **err);

/* Appends n records in one transaction (all or none) and, when it is the
 * outermost one, commits with synchronous=FULL: on return 0 they are on disk.
 * *first_seq (may be NULL) receives the first assigned seq. */
int ust_log_append(ust_log *log, const ust_log_record *recs, size_t n,
                   int64_t *first_seq, char **err);

/* An outer transaction around several appends (import: nothing from a file
 * is appended unless all of it is). */
int ust_log_begin(ust_log *log, char **err);
int ust_log_commit(ust_log *log, char **err);
void ust_log_rollback(ust_log *log);

/* Reading in seq order, from the first seq greater than after_seq. */
typedef struct ust_log_cursor ust_log_cursor;
int ust_log_cursor_open(ust_log *log, int64_t after_seq, ust_log_cursor **out,
                        char **err);
/* The same, for a reader of the stored fields (ust_event_view): a row
 * derived under config_hash comes without its raw request (remote, method,
 * target, headers and body empty; its time and recorded answer kept), any
 * other row whole, to be derived again. A backend may always read whole
 * rows. */
int ust_log_cursor_open_fields(ust_log *log, int64_t after_seq, const char *config_hash,
                               ust_log_cursor **out, char **err);
/* 1 and *rec filled (cleared first), 0 at the end, negative on error. */
int ust_log_cursor_next(ust_log_cursor *cur, ust_log_record *rec, char **err);
void ust_log_cursor_close(ust_log_cursor *cur);
/* The same, newest first: the rows before before_seq, in descending seq. */
int ust_log_cursor_open_before(ust_log *log, int64_t before_seq, ust_log_cursor **out,
                               char **err);

/* The rows of seqs (n of them), in that order, each passed to fn (the
 * record is borrowed for the call); a seq the log does not hold is skipped.
 * fn returns 0 to go on, anything else stops the read and is returned. 0 at
 * the end, or UST_EDB / UST_EPARSE / UST_ENOMEM with *err. */
int ust_log_read_seqs(ust_log *log, const int64_t *seqs, size_t n,
                      int (*fn)(void *ctx, const ust_log_record *rec), void *ctx,
                      char **err);

/* The derived fields of events read in an order of a count's own (coverage
 * counts groups of events: by event id, by transaction, by idempotency
 * key). Each order reads only the rows whose key columns are all set, and
 * only the columns it names below (the others are NULL, or 0), sorted by
 * the database (spilling to temporary files: memory stays small whatever the
 * log's length). */
typedef enum ust_log_scan_order {
    /* every row, by seq: all but received_at, provider, tenant and the hash */
    UST_LOG_SCAN_SEQ,
    /* by (provider, event_id, seq): seq, provider, event_id */
    UST_LOG_SCAN_EVENT_ID,
    /* by (provider, transaction_id, seq): and event_id, target_status */
    UST_LOG_SCAN_TRANSACTION,
    /* by (provider, intent, amount, currency, received_at, seq): those */
    UST_LOG_SCAN_INTENT,
    /* by (route, idem_key, tenant, seq): those, received_at, request_sha256 */
    UST_LOG_SCAN_KEY
} ust_log_scan_order;

typedef enum ust_log_scan_select {
    UST_LOG_SCAN_ALL,      /* every row of the order */
    UST_LOG_SCAN_WEBHOOKS, /* rows of a route that are not API requests */
    UST_LOG_SCAN_API       /* API requests */
} ust_log_scan_select;

typedef struct ust_log_scan_opts {
    ust_log_scan_order order;
    ust_log_scan_select select;
    int64_t through_seq; /* rows with seq <= through_seq */
    /* Which rows are API requests: those of these route paths (a JSON array
     * of strings), or, when NULL (a run that did not record its routes),
     * those of a route with neither an event id nor a transaction id. */
    const char *api_routes;
    int accepted_only;         /* only signatures "verified" and "unsigned" */
    const char *target_status; /* only rows with this target state; NULL: any */
} ust_log_scan_opts;

/* One row; its strings are borrowed for the callback only, NULL when absent
 * or not read by the order. */
typedef struct ust_log_scan_row {
    int64_t seq, received_at_us;
    const char *route, *provider, *event_id, *transaction_id, *target_status, *intent,
        *currency, *idem_key, *tenant, *request_sha256;
    int64_t amount;
    int has_amount;
    ust_sig_status sig;
    int api; /* an API request, by o->api_routes */
} ust_log_scan_row;

/* Calls each for every row selected, in the order; a nonzero return stops
 * the scan with that code. Lowers the handle's page cache (1 MiB) and keeps
 * temporary tables in files, for this scan and after. */
int ust_log_scan(ust_log *log, const ust_log_scan_opts *o,
                 int (*each)(void *ctx, const ust_log_scan_row *row), void *ctx,
                 char **err);

typedef struct ust_log_verify_result {
    int64_t checked;  /* rows whose hash was recomputed */
    int64_t bad_seq;  /* first bad seq, 0 when the chain holds */
    char reason[160]; /* what is wrong at bad_seq */
    int64_t head_seq; /* last seq, 0 when empty */
    char head_hash[UST_SHA256_HEX_LEN + 1];
    int64_t n_prunes;       /* prunes recorded */
    int64_t pruned_through; /* last seq removed by a prune, 0 if none */
    /* A PostgreSQL log: each stream's head, an array of {"stream", "label",
     * "events", "head_seq", "head_hash"} the caller json_decref's (also
     * after UST_ETAMPER); NULL for a SQLite log (one chain). */
    json_t *streams;
} ust_log_verify_result;

/* 0 when the chain holds; UST_ETAMPER with res->bad_seq and res->reason when
 * a row was changed, deleted, inserted or reordered, a prune record forged
 * or changed, or the log ends before the head it had at its last clean
 * close; other codes on errors. */
int ust_log_verify(ust_log *log, ust_log_verify_result *res, char **err);
/* The same, and the chain must reach anchor_seq and pass through anchor_hex
 * (64 hex digits) there: a head kept outside the log (verify's head seq and
 * hash, written elsewhere) detects the newest rows cut off or rewritten,
 * which the chain alone cannot. An anchor below the latest prune cannot be
 * checked and fails too. UST_EINVAL for a malformed anchor. */
int ust_log_verify_anchored(ust_log *log, int64_t anchor_seq, const char *anchor_hex,
                            ust_log_verify_result *res, char **err);
/* The chain from the first row up to through_seq (>= 1) only, rows after it
 * unread (a report checks what its run read, however far the log has grown
 * since): it must reach through_seq, and there pass through through_hex (64
 * hex digits; NULL: any hash). The head meta recorded is checked when it is
 * at or below through_seq. res->head_seq and head_hash: where the walk ended.
 * A through_seq below the latest prune cannot be checked and fails. Over
 * PostgreSQL: the rows of global seq <= through_seq, each in its stream's
 * chain, and the commit records giving them (docs/log.md says what the full
 * verify checks besides). */
int ust_log_verify_through(ust_log *log, int64_t through_seq, const char *through_hex,
                           ust_log_verify_result *res, char **err);

/* Last seq and its hash (hex), seq 0 and "" when empty. */
int ust_log_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                 char **err);

/* Counts and span as a JSON object (caller json_decref's). */
int ust_log_stats(ust_log *log, json_t **out, char **err);

/* Removes the longest prefix of rows that all arrived before before_us,
 * re-anchors the chain on the last removed row's hash and records the prune
 * (now_us is when it was done). *n_pruned may be NULL. */
int ust_log_prune(ust_log *log, int64_t before_us, int64_t now_us, int64_t *n_pruned,
                  char **err);
/* The same, removing no row past max_seq: serve's retention keeps what its
 * runner still has to read. */
int ust_log_prune_through(ust_log *log, int64_t before_us, int64_t max_seq,
                          int64_t now_us, int64_t *n_pruned, char **err);

/* Interchange JSONL. Parses one line (without its newline) into *req. 0, or
 * UST_EPARSE with *err saying which field is wrong. */
int ust_jsonl_parse(const char *line, size_t len, ust_request *req, char **err);
/* The same, and the line's optional "response" (production's answer) into
 * *resp (status 0 when the line has none); both cleared on an error. */
int ust_jsonl_parse_exchange(const char *line, size_t len, ust_request *req,
                             ust_response *resp, char **err);
/* One line, no newline, ust_free'd by the caller; NULL on allocation failure.
 * with_derived adds provider, event_id, identity, request_sha256, signature;
 * a recorded answer is written as "response". */
char *ust_jsonl_format(const ust_log_record *rec, int with_derived);
/* The same line written through out (the shape of jansson's
 * json_dump_callback_t) as it is encoded, never whole in memory: a body
 * or header list of any size costs no copy. 0, or -1 when out returned
 * nonzero (nothing more was written). */
int ust_jsonl_write(const ust_log_record *rec, int with_derived,
                    int (*out)(const char *, size_t, void *), void *data);

/* Reads JSONL from in, derives each event under cfg and appends all of it in
 * one transaction. A bad line: UST_EPARSE, *err "<label>:<line>: <why>",
 * nothing appended. *n (may be NULL) receives the number appended. */
int ust_log_import(ust_log *log, const ust_config *cfg, FILE *in, const char *label,
                   int64_t *n, char **err);
/* The same, telling progress (may be NULL): lines read, and the share of a
 * regular file's bytes read (unknown from a pipe). */
int ust_log_import_progress(ust_log *log, const ust_config *cfg, FILE *in,
                            const char *label, const ust_progress *progress, int64_t *n,
                            char **err);
/* What `log import --format` reads. */
typedef enum ust_import_format {
    UST_IMPORT_JSONL = 0, /* interchange JSONL (ust_log_import) */
    UST_IMPORT_HAR,       /* HAR 1.2: browsers' devtools, Playwright, mitmproxy */
    UST_IMPORT_GOREPLAY   /* GoReplay's file output (--input-raw-track-response) */
} ust_import_format;
/* The format named "jsonl", "har" or "goreplay"; UST_EINVAL otherwise. */
int ust_import_format_parse(const char *name, ust_import_format *out);

/* Reads a capture of another tool from in (all of it, into memory), derives
 * each request whose path matches a route of cfg with its response as the
 * recorded answer, and appends them all in one transaction. Requests to no
 * route are skipped and counted in *skipped (may be NULL). A bad entry:
 * UST_EPARSE, *err "<label>: entry N: <why>" (HAR) or "<label>: payload N
 * (id ID): <why>" (GoReplay), N from 1, nothing appended. UST_IMPORT_JSONL
 * is ust_log_import (nothing skipped). */
int ust_log_import_capture(ust_log *log, const ust_config *cfg, FILE *in,
                           const char *label, ust_import_format format, int64_t *n,
                           int64_t *skipped, char **err);
/* Derives each request under cfg and appends them all in one transaction
 * (the requests stay the caller's, masked as ust_log_record_derive says).
 * Import uses it. sigs (may be NULL) receives each request's signature
 * status. */
int ust_log_append_requests(ust_log *log, const ust_config *cfg, ust_request *reqs,
                            size_t n, int64_t *first_seq, ust_sig_status *sigs,
                            char **err);
/* The same, each request with the answer it was given: resps[i] (borrowed;
 * status 0 for none) is kept beside reqs[i]. resps may be NULL (none). */
int ust_log_append_exchanges(ust_log *log, const ust_config *cfg, ust_request *reqs,
                             const ust_response *resps, size_t n, int64_t *first_seq,
                             ust_sig_status *sigs, char **err);

/* Derives req under cfg into rec for ust_log_append: rec->req is a shallow
 * copy (the request stays the caller's), the derived fields are rec's own
 * and released by ust_log_record_clear_derived. Then masks req in place
 * (ust_capture_mask: cfg->capture.mask_headers), so neither the row nor
 * anything that reads req afterwards sees those values in clear. The
 * recorder and import both use it. 0 or UST_ENOMEM. */
int ust_log_record_derive(const ust_config *cfg, ust_request *req, ust_log_record *rec,
                          char **err);
void ust_log_record_clear_derived(ust_log_record *rec);

/* Writes every row as JSONL. */
int ust_log_export(ust_log *log, FILE *out, int with_derived, char **err);
/* The same, each row first passed to edit (when not NULL) to change what is
 * written, never the log (log export --redact); a nonzero return stops the
 * export with that code. */
int ust_log_export_edited(ust_log *log, FILE *out, int with_derived,
                          int (*edit)(ust_log_record *rec, void *arg), void *arg,
                          char **err);

#endif
