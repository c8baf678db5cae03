/* Appending: one transaction per batch, one fsync per commit (group commit is
 * the caller batching many requests into one call). For a large batch, a
 * helper thread digests rows from the end of the batch while this thread
 * digests, chains and inserts from the front; they meet in the middle, so
 * hashing hides behind SQLite's work on a second core. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

/* Below this, starting a thread costs more than it saves. */
#define PARALLEL_DIGEST_MIN 32

enum { ROW_FREE = 0, ROW_CLAIMED, ROW_DONE };

typedef struct digest_job {
    const ust_log_record *recs;
    size_t n;
    int64_t first_seq;
    unsigned char *digests;
    atomic_int *state;
} digest_job;

/* The record as it will be stored: the caller's, with the seq it gets. */
static void digest_row(ust__row_hasher *h, const digest_job *job, size_t i)
{
    ust_log_record row = job->recs[i];
    row.seq = job->first_seq + (int64_t)i;
    ust__log_row_digest(h, &row, job->digests + i * UST_SHA256_LEN);
}

/* Claims row i for the caller: 1 when the caller must digest it. */
static int claim(atomic_int *state)
{
    int expected = ROW_FREE;
    return atomic_compare_exchange_strong(state, &expected, ROW_CLAIMED);
}

static void *digest_from_end(void *arg)
{
    digest_job *job = arg;
    ust__row_hasher h;
    memset(&h, 0, sizeof(h));
    for (size_t i = job->n; i-- > 0;) {
        if (!claim(&job->state[i]))
            break; /* the front has reached us */
        digest_row(&h, job, i);
        atomic_store(&job->state[i], ROW_DONE);
    }
    ust__row_hasher_free(&h);
    return NULL;
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *s)
{
    if (s == NULL)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
}

/* Binds a derived field to its column (1-based: the column index + 1). */
#define BIND_TEXT(col, m) bind_text_or_null(st, col, rec->m);
#define BIND_ROUTE(col, m) bind_text_or_null(st, col, rec->m);
#define BIND_SHA(col, m) sqlite3_bind_text(st, col, rec->m, -1, SQLITE_STATIC);
#define BIND_SIG(col, m)                                                               \
    sqlite3_bind_text(st, col, ust_sig_status_name(rec->m), -1, SQLITE_STATIC);
#define BIND_AMOUNT(col, m)                                                            \
    if (rec->has_##m)                                                                  \
        sqlite3_bind_int64(st, col, rec->m);                                           \
    else                                                                               \
        sqlite3_bind_null(st, col);
#define BIND_CONFIG(col, m) bind_text_or_null(st, col, rec->m[0] ? rec->m : NULL);
#define BIND(kind, m, column, wire, wire_at, export, source, since, desc)              \
    BIND_##kind(UST__COL_##column + 1, m)

static int insert_one(ust_log *log, const ust_log_record *rec,
                      const unsigned char prev[UST_SHA256_LEN],
                      const unsigned char hash[UST_SHA256_LEN], char **err)
{
    const ust_request *r = &rec->req;
    const ust_response *resp = &rec->response;
    sqlite3_stmt *st = log->insert;
    size_t headers_len;
    /* The answer's headers first, copied by SQLite (TRANSIENT): the pack
     * buffer is the request's next. Columns left unbound are NULL. */
    if (resp->status != 0) {
        if (ust__headers_pack(log, resp->headers, resp->n_headers, &headers_len) != 0)
            return UST_ENOMEM;
        sqlite3_bind_int(st, UST__COL_response_status + 1, resp->status);
        sqlite3_bind_blob(st, UST__COL_response_headers + 1, log->pack ? log->pack : "",
                          (int)headers_len, SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, UST__COL_response_body + 1,
                          resp->body ? (const void *)resp->body : "",
                          (int)resp->body_len, SQLITE_STATIC);
    }
    if (ust__headers_pack(log, r->headers, r->n_headers, &headers_len) != 0) {
        sqlite3_clear_bindings(st);
        return UST_ENOMEM;
    }
    sqlite3_bind_int64(st, 1, rec->seq);
    sqlite3_bind_int64(st, 2, r->received_at_us);
    sqlite3_bind_text(st, 3, r->remote, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->target, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 6, log->pack ? log->pack : "", (int)headers_len,
                      SQLITE_STATIC);
    /* an empty body is a zero-length blob, never NULL */
    sqlite3_bind_blob(st, 7, r->body ? (const void *)r->body : "", (int)r->body_len,
                      SQLITE_STATIC);
    UST_EVENT_FIELDS(BIND)
    sqlite3_bind_blob(st, UST__COL_prev_hash + 1, prev, UST_SHA256_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, UST__COL_hash + 1, hash, UST_SHA256_LEN, SQLITE_STATIC);
    int rc =
        sqlite3_step(st) == SQLITE_DONE ? 0 : ust__log_db_error(log, "append", err);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

int ust__log_check_records(const ust_log *log, const ust_log_record *recs, size_t n,
                           char **err)
{
    for (size_t i = 0; i < n; i++) {
        const ust_request *r = &recs[i].req;
        if (r->remote == NULL || r->method == NULL || r->target == NULL)
            return ust_errf(err, UST_EINVAL,
                            "%s: record without remote, method or target", log->path);
        if (r->body_len > INT32_MAX)
            return ust_errf(err, UST_ELIMIT, "%s: body over 2 GiB", log->path);
        const ust_response *a = &recs[i].response;
        if (a->status != 0 && (a->status < 100 || a->status > 599))
            return ust_errf(err, UST_EINVAL,
                            "%s: a recorded answer's status %d is not"
                            " an HTTP status (100 to 599)",
                            log->path, a->status);
        if (a->body_len > INT32_MAX)
            return ust_errf(err, UST_ELIMIT, "%s: recorded answer's body over 2 GiB",
                            log->path);
    }
    return 0;
}

static int insert_all(ust_log *log, const ust_log_record *recs, size_t n, int64_t seq,
                      unsigned char prev[UST_SHA256_LEN], char **err)
{
    if (n > log->digests_cap) {
        unsigned char *grown = ust_realloc(log->digests, n * UST_SHA256_LEN);
        if (grown == NULL)
            return UST_ENOMEM;
        log->digests = grown;
        log->digests_cap = n;
    }
    atomic_int *state = ust_calloc(n, sizeof(*state));
    if (state == NULL)
        return UST_ENOMEM;
    for (size_t i = 0; i < n; i++)
        atomic_init(&state[i], ROW_FREE);
    digest_job job = {recs, n, seq, log->digests, state};
    pthread_t helper;
    int helped = n >= PARALLEL_DIGEST_MIN &&
                 pthread_create(&helper, NULL, digest_from_end, &job) == 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (claim(&state[i])) {
            digest_row(&log->hasher, &job, i);
            atomic_store(&state[i], ROW_DONE);
        } else {
            while (atomic_load(&state[i]) != ROW_DONE)
                sched_yield();
        }
        if (rc != 0)
            continue; /* keep claiming, so the helper can finish */
        ust_log_record row = recs[i];
        row.seq = seq + (int64_t)i;
        unsigned char hash[UST_SHA256_LEN];
        ust__log_chain_link(&log->hasher, prev, log->digests + i * UST_SHA256_LEN,
                            hash);
        rc = insert_one(log, &row, prev, hash, err);
        memcpy(prev, hash, UST_SHA256_LEN);
    }
    if (helped)
        pthread_join(helper, NULL);
    ust_free(state);
    return rc;
}

int ust__sqlite_append(ust_log *log, const ust_log_record *recs, size_t n,
                       int64_t *first_seq, char **err)
{
    if (log->insert == NULL)
        return ust_errf(err, UST_EINVAL, "%s: opened read-only", log->path);
    if (n == 0)
        return 0;
    int rc = 0;
    /* A savepoint nests inside ust_log_begin and is a transaction of its own
     * otherwise; BEGIN IMMEDIATE first so the tip cannot move under us. */
    int outer = log->in_outer_tx;
    rc = ust__log_exec(log, outer ? "SAVEPOINT append;" : "BEGIN IMMEDIATE;", err);
    if (rc != 0)
        return rc;
    int64_t seq;
    unsigned char prev[UST_SHA256_LEN];
    /* Inside an outer transaction the tip is read each time: that
     * transaction may still be rolled back. */
    rc = outer ? ust__log_chain_tip(log, &seq, prev, err)
               : ust__log_tip_for_append(log, &seq, prev, err);
    if (first_seq != NULL)
        *first_seq = seq;
    if (rc == 0)
        rc = insert_all(log, recs, n, seq, prev, err);
    if (rc == 0)
        rc = ust__log_exec(log, outer ? "RELEASE append;" : "COMMIT;", err);
    /* prev is now the hash of the last row appended. */
    ust__log_tip_remember(log, rc == 0 && !outer ? seq + (int64_t)n - 1 : 0, prev);
    if (rc != 0)
        ust__log_exec(log, outer ? "ROLLBACK TO append; RELEASE append;" : "ROLLBACK;",
                      NULL);
    return rc;
}
