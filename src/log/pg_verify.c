/* Verifying the PostgreSQL log, in one snapshot: every stream's genesis,
 * every commit record chained to the one before and giving the next seqs
 * to the next rows of its stream, and every row, in the global order,
 * chained in its stream and hashing to what it says. */
#include "log/pg.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

#define WINDOW 512

typedef struct stream_state {
    int64_t id;
    char label[200];
    int64_t next_commit; /* the stream_seq its next commit record must start at */
    int64_t next_row;    /* the stream_seq its next row must have */
    unsigned char cur[UST_SHA256_LEN]; /* what that row chains from */
    int64_t rows, head_seq;
    /* The tip its writer recorded when it closed (0: none): the stream
     * must reach it, through that hash. */
    int64_t closed_at;
    unsigned char closed_hash[UST_SHA256_LEN];
} stream_state;

typedef struct commit_end {
    int64_t last_seq;
    unsigned char last_hash[UST_SHA256_LEN];
} commit_end;

typedef struct walk {
    ust_log *log;
    ust_log_verify_result *res;
    stream_state *streams;
    size_t n_streams;
    commit_end *commits;
    size_t n_commits, next_commit;
    int64_t tip;   /* the last seq the commit records give */
    int64_t limit; /* the last seq walked (INT64_MAX: the whole log) */
    int64_t anchor_seq;
    const char *anchor_hex;
    int anchor_matched;
} walk;

static int hash_column(PGresult *r, int row, int col, unsigned char out[UST_SHA256_LEN])
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != UST_SHA256_LEN)
        return -1;
    memcpy(out, PQgetvalue(r, row, col), UST_SHA256_LEN);
    return 0;
}

static stream_state *find_stream(walk *w, int64_t id)
{
    size_t lo = 0, hi = w->n_streams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->streams[mid].id == id)
            return &w->streams[mid];
        if (w->streams[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Each stream's record: its genesis is the hash of its id, opening time and
 * label, and the chain starts there. */
static int read_streams(walk *w, char **err)
{
    PGresult *r = ust__pg_run(w->log,
                              "SELECT id, opened_at, convert_to(label, 'UTF8'), genesis"
                              " FROM understudy.streams ORDER BY id",
                              0, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(w->log, r, "read streams", err);
    int n = PQntuples(r), rc = 0;
    w->streams = ust_calloc((size_t)n + 1, sizeof(*w->streams));
    if (w->streams == NULL) {
        PQclear(r);
        return UST_ENOMEM;
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        stream_state *s = &w->streams[w->n_streams++];
        s->id = ust__pg_int(r, i, 0);
        snprintf(s->label, sizeof(s->label), "%.*s", PQgetlength(r, i, 2),
                 PQgetvalue(r, i, 2));
        s->next_commit = s->next_row = 1;
        unsigned char stored[UST_SHA256_LEN];
        ust__log_stream_genesis(&w->log->hasher, s->id, ust__pg_int(r, i, 1), s->label,
                                s->cur);
        if (hash_column(r, i, 3, stored) != 0 ||
            memcmp(stored, s->cur, UST_SHA256_LEN) != 0)
            rc = ust__log_tamper(
                w->res, 0,
                "stream %lld: its record does not match its genesis hash"
                " (changed)",
                (long long)s->id);
    }
    PQclear(r);
    return rc;
}

/* The heads writers recorded as they closed, the latest of each stream. */
static int read_heads(walk *w, char **err)
{
    PGresult *r = ust__pg_run(w->log,
                              "SELECT DISTINCT ON (stream) stream, stream_seq, hash"
                              " FROM understudy.heads ORDER BY stream, stream_seq DESC",
                              0, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(w->log, r, "read heads", err);
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        stream_state *s = find_stream(w, ust__pg_int(r, i, 0));
        if (s == NULL || hash_column(r, i, 2, s->closed_hash) != 0)
            rc = ust__log_tamper(w->res, 0,
                                 "a head record names no stream, or has no valid hash"
                                 " (stream %lld)",
                                 (long long)ust__pg_int(r, i, 0));
        else
            s->closed_at = ust__pg_int(r, i, 1);
    }
    PQclear(r);
    return rc;
}

/* Every stream reached the head its writer recorded at its close. */
static int check_heads(walk *w)
{
    for (size_t i = 0; i < w->n_streams; i++) {
        const stream_state *s = &w->streams[i];
        if (s->closed_at > s->rows)
            return ust__log_tamper(w->res, w->tip + 1,
                                   "stream %lld held row %lld when its writer closed,"
                                   " but ends at row %lld (rows cut off)",
                                   (long long)s->id, (long long)s->closed_at,
                                   (long long)s->rows);
    }
    return 0;
}

/* The commit records: seqs from 1 without a gap, each chained to the one
 * before, each starting where its stream's previous one ended; those
 * starting at or below the limit, and the next (a commit record deleted at
 * the limit shows as a gap before it). */
static int read_commits(walk *w, char **err)
{
    unsigned char limit[8];
    ust__pg_put_int(limit, w->limit);
    const char *values[] = {(const char *)limit};
    int lengths[] = {8};
    PGresult *r = ust__pg_run(w->log,
                              "SELECT first_seq, last_seq, stream, first_stream_seq,"
                              " last_hash, prev_hash, hash FROM understudy.commits"
                              " WHERE first_seq - 1 <= $1 ORDER BY first_seq",
                              1, values, lengths);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(w->log, r, "read commit records", err);
    int n = PQntuples(r), rc = 0;
    w->commits = ust_calloc((size_t)n + 1, sizeof(*w->commits));
    if (w->commits == NULL) {
        PQclear(r);
        return UST_ENOMEM;
    }
    unsigned char prev[UST_SHA256_LEN];
    memset(prev, 0, UST_SHA256_LEN);
    int64_t next_seq = 1;
    for (int i = 0; rc == 0 && i < n; i++) {
        ust__commit_record c;
        unsigned char stored_prev[UST_SHA256_LEN], stored[UST_SHA256_LEN],
            computed[UST_SHA256_LEN];
        c.first_seq = ust__pg_int(r, i, 0);
        c.last_seq = ust__pg_int(r, i, 1);
        c.stream = ust__pg_int(r, i, 2);
        c.first_stream_seq = ust__pg_int(r, i, 3);
        stream_state *s = find_stream(w, c.stream);
        if (hash_column(r, i, 4, c.last_hash) != 0 ||
            hash_column(r, i, 5, stored_prev) != 0 ||
            hash_column(r, i, 6, stored) != 0) {
            rc = ust__log_tamper(w->res, c.first_seq,
                                 "the commit record has no valid hash");
            break;
        }
        memcpy(c.prev_hash, stored_prev, UST_SHA256_LEN);
        ust__log_commit_hash(&w->log->hasher, &c, computed);
        if (c.first_seq != next_seq)
            rc = ust__log_tamper(
                w->res, next_seq,
                "commit records: seq %lld expected, the next starts at %lld"
                " (a commit record deleted or inserted)",
                (long long)next_seq, (long long)c.first_seq);
        else if (memcmp(stored_prev, prev, UST_SHA256_LEN) != 0)
            rc = ust__log_tamper(w->res, c.first_seq,
                                 "the commit record does not chain from the one before"
                                 " (inserted or replaced)");
        else if (memcmp(stored, computed, UST_SHA256_LEN) != 0)
            rc = ust__log_tamper(w->res, c.first_seq,
                                 "the commit record does not match its hash (changed)");
        else if (s == NULL)
            rc = ust__log_tamper(w->res, c.first_seq,
                                 "the commit record names no stream (%lld)",
                                 (long long)c.stream);
        else if (c.first_stream_seq != s->next_commit)
            rc =
                ust__log_tamper(w->res, c.first_seq,
                                "stream %lld: the commit record starts at its row %lld,"
                                " expected %lld",
                                (long long)c.stream, (long long)c.first_stream_seq,
                                (long long)s->next_commit);
        if (rc != 0)
            break;
        s->next_commit += c.last_seq - c.first_seq + 1;
        memcpy(prev, stored, UST_SHA256_LEN);
        next_seq = c.last_seq + 1;
        commit_end *e = &w->commits[w->n_commits++];
        e->last_seq = c.last_seq;
        memcpy(e->last_hash, c.last_hash, UST_SHA256_LEN);
    }
    w->tip = next_seq - 1;
    PQclear(r);
    return rc;
}

/* One row, at the seq after the one before: the next of its stream,
 * chained from it, hashing to what it says; the last of a commit has the
 * hash its commit record covers. */
static int check_row(walk *w, PGresult *r, int row, ust_log_record *rec, int64_t expect,
                     char **err)
{
    unsigned char stored_prev[UST_SHA256_LEN];
    int rc = ust__pg_row_decode(r, row, rec, stored_prev, err);
    if (rc == UST_EPARSE)
        return ust__log_tamper(w->res, ust__pg_int(r, row, 0), "row cannot be read: %s",
                               err && *err ? *err : "malformed");
    if (rc != 0)
        return rc;
    w->res->checked++;
    int64_t id = ust__pg_int(r, row, UST__PG_COL_stream);
    int64_t sseq = ust__pg_int(r, row, UST__PG_COL_stream_seq);
    stream_state *s = find_stream(w, id);
    if (rec->seq != expect)
        return ust__log_tamper(w->res, expect,
                               "missing: the next row is seq %lld (rows deleted)",
                               (long long)rec->seq);
    if (s == NULL || sseq != s->next_row)
        return ust__log_tamper(w->res, rec->seq,
                               "stream %lld row %lld: expected row %lld of its stream"
                               " (rows deleted or moved)",
                               (long long)id, (long long)sseq,
                               (long long)(s ? s->next_row : 0));
    if (memcmp(stored_prev, s->cur, UST_SHA256_LEN) != 0)
        return ust__log_tamper(
            w->res, rec->seq,
            "stream %lld row %lld: does not chain from the row before"
            " (row inserted or replaced)",
            (long long)id, (long long)sseq);
    unsigned char digest[UST_SHA256_LEN], computed[UST_SHA256_LEN];
    int64_t global = rec->seq;
    rec->seq = sseq; /* the chain frames the stream's own seq */
    ust__log_row_digest(&w->log->hasher, rec, digest);
    rec->seq = global;
    ust__log_chain_link(&w->log->hasher, s->cur, digest, computed);
    if (memcmp(computed, rec->hash, UST_SHA256_LEN) != 0)
        return ust__log_tamper(w->res, rec->seq,
                               "stream %lld row %lld: content does not match its hash"
                               " (row changed)",
                               (long long)id, (long long)sseq);
    if (w->next_commit < w->n_commits &&
        w->commits[w->next_commit].last_seq == rec->seq) {
        if (memcmp(w->commits[w->next_commit].last_hash, rec->hash, UST_SHA256_LEN) !=
            0)
            return ust__log_tamper(
                w->res, rec->seq,
                "stream %lld row %lld: not the row its commit record covers"
                " (replaced)",
                (long long)id, (long long)sseq);
        w->next_commit++;
    }
    if (sseq == s->closed_at && memcmp(s->closed_hash, rec->hash, UST_SHA256_LEN) != 0)
        return ust__log_tamper(w->res, rec->seq,
                               "stream %lld row %lld: not the row its writer closed on"
                               " (rows rewritten)",
                               (long long)id, (long long)sseq);
    memcpy(s->cur, rec->hash, UST_SHA256_LEN);
    s->next_row++;
    s->rows++;
    s->head_seq = rec->seq;
    w->res->head_seq = rec->seq;
    ust_hex_encode(rec->hash, UST_SHA256_LEN, w->res->head_hash);
    if (rec->seq == w->anchor_seq)
        w->anchor_matched =
            w->anchor_hex == NULL || strcmp(w->res->head_hash, w->anchor_hex) == 0;
    return 0;
}

static int walk_rows(walk *w, char **err)
{
    int64_t expect = 1;
    int rc = 0;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int64_t last = w->tip < w->limit ? w->tip : w->limit;
    while (expect <= last) {
        unsigned char after[8], window[8];
        ust__pg_put_int(after, expect - 1);
        ust__pg_put_int(window,
                        last - (expect - 1) < WINDOW ? last - (expect - 1) : WINDOW);
        const char *values[] = {(const char *)after, (const char *)window};
        int lengths[] = {8, 8};
        PGresult *r = ust__pg_run(w->log, w->log->select, 2, values, lengths);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            return ust__pg_error(w->log, r, "read events", err);
        int n = PQntuples(r);
        for (int i = 0; rc == 0 && i < n; i++, expect++) {
            rc = check_row(w, r, i, &rec, expect, err);
            ust_log_record_clear(&rec);
        }
        PQclear(r);
        if (rc != 0 || n == 0)
            break;
    }
    if (rc == 0 && expect - 1 != last)
        rc = ust__log_tamper(
            w->res, expect,
            "missing: the commit records give seqs through %lld, the rows end"
            " at %lld (rows deleted)",
            (long long)last, (long long)(expect - 1));
    return rc;
}

/* A row no commit record covers was put there behind the log's back. */
static int check_orphans(walk *w, char **err)
{
    PGresult *r = ust__pg_run(
        w->log,
        "SELECT e.stream, e.stream_seq FROM understudy.events e WHERE NOT EXISTS"
        " (SELECT 1 FROM understudy.commits c WHERE c.stream = e.stream AND"
        " e.stream_seq BETWEEN c.first_stream_seq AND"
        " c.first_stream_seq + (c.last_seq - c.first_seq))"
        " ORDER BY 1, 2 LIMIT 1",
        0, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return ust__pg_error(w->log, r, "read events", err);
    int rc = 0;
    if (PQntuples(r) == 1)
        rc = ust__log_tamper(
            w->res, w->tip + 1,
            "stream %lld row %lld is in no commit record (inserted by hand)",
            (long long)ust__pg_int(r, 0, 0), (long long)ust__pg_int(r, 0, 1));
    PQclear(r);
    return rc;
}

/* Each stream's head, for `log verify` to report. */
static json_t *stream_heads(const walk *w)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < w->n_streams; i++) {
        const stream_state *s = &w->streams[i];
        char hex[UST_SHA256_HEX_LEN + 1];
        ust_hex_encode(s->cur, UST_SHA256_LEN, hex);
        json_t *o = json_pack("{s:I,s:s,s:I,s:I,s:s}", "stream", (json_int_t)s->id,
                              "label", s->label, "events", (json_int_t)s->rows,
                              "head_seq", (json_int_t)s->head_seq, "head_hash", hex);
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* With a limit (ust_log_verify_through), what the walk reads is the global
 * order up to it: the commit records starting at or below it (and the next,
 * for a gap), every row
 * with a seq at or below it (each in its stream's chain, the streams'
 * genesis and the heads their writers closed on where the walk reaches
 * them). Rows no commit record covers, and heads the walk does not reach,
 * are then not looked for: they are outside the order read. */
int ust__pg_verify(ust_log *log, int64_t limit, int64_t anchor_seq,
                   const char *anchor_hex, ust_log_verify_result *res, char **err)
{
    walk w;
    memset(&w, 0, sizeof(w));
    w.log = log;
    w.res = res;
    w.limit = limit;
    w.anchor_seq = anchor_seq;
    w.anchor_hex = anchor_hex;
    w.anchor_matched = anchor_hex == NULL;
    int rc = ust__pg_exec(log, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                          "verify", err);
    if (rc != 0)
        return rc;
    if ((rc = read_streams(&w, err)) == 0 && (rc = read_heads(&w, err)) == 0 &&
        (rc = read_commits(&w, err)) == 0 && (rc = walk_rows(&w, err)) == 0 &&
        limit == INT64_MAX && (rc = check_orphans(&w, err)) == 0)
        rc = check_heads(&w);
    ust__pg_exec(log, "COMMIT", "verify", NULL);
    if (rc == 0 && anchor_seq > w.tip)
        rc = ust__log_tamper(
            res, w.tip + 1,
            "the log ends at seq %lld, before the anchor's seq %lld (rows cut"
            " off)",
            (long long)w.tip, (long long)anchor_seq);
    else if (rc == 0 && anchor_seq > 0 && !w.anchor_matched)
        rc = ust__log_tamper(
            res, anchor_seq,
            "the chain does not pass through the anchor's hash here (rows"
            " rewritten)");
    if ((rc == 0 || rc == UST_ETAMPER) && (res->streams = stream_heads(&w)) == NULL)
        rc = UST_ENOMEM;
    ust_free(w.streams);
    ust_free(w.commits);
    return rc;
}
