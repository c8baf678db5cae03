/* Walking the chain: every row must sit at the seq after the one before,
 * chain from its hash, and hash to what it says. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct prune_link {
    int64_t tip_seq;
    unsigned char link_prev[UST_SHA256_LEN], hash[UST_SHA256_LEN];
} prune_link;

/* What verify carries from the prune records to the walk over the rows. */
typedef struct chain_walk {
    int64_t next_seq;                  /* the first seq the rows must start at */
    unsigned char cur[UST_SHA256_LEN]; /* what that row must chain from */
    prune_link *links;                 /* chained prunes, in order */
    size_t n_links, next_link;
    int64_t legacy; /* prune records of format 1 (no hash) */
    /* Points the chain must pass through: [0] the head recorded at the last
     * writing open or close (meta.head), [1] an anchor the caller kept
     * elsewhere. */
    struct {
        int64_t seq; /* 0: none; -1: unreadable */
        char hex[UST_SHA256_HEX_LEN + 1];
        int matched;
    } anchors[2];
} chain_walk;

/* The chain is at seq with hash h (a row's, or a prune's after it). */
static void note_head(chain_walk *w, int64_t seq, const unsigned char h[UST_SHA256_LEN])
{
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_hex_encode(h, UST_SHA256_LEN, hex);
    for (int i = 0; i < 2; i++)
        if (seq == w->anchors[i].seq && strcmp(hex, w->anchors[i].hex) == 0)
            w->anchors[i].matched = 1;
}

static int is_zero(const unsigned char h[UST_SHA256_LEN])
{
    for (int i = 0; i < UST_SHA256_LEN; i++)
        if (h[i] != 0)
            return 0;
    return 1;
}

int ust__log_tamper(ust_log_verify_result *res, int64_t seq, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res->bad_seq = seq;
    vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
    va_end(ap);
    return UST_ETAMPER;
}

static int get_hash(sqlite3_stmt *st, int col, unsigned char out[UST_SHA256_LEN])
{
    const void *h = sqlite3_column_blob(st, col);
    if (h == NULL || sqlite3_column_bytes(st, col) != UST_SHA256_LEN)
        return -1;
    memcpy(out, h, UST_SHA256_LEN);
    return 0;
}

/* meta.legacy_prunes and meta.head (absent in a format-1 log, which has no
 * hashed prune record and was never closed by this version). */
static int read_meta(ust_log *log, chain_walk *w, char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db, "SELECT key, value FROM meta", -1, &st, NULL) !=
        SQLITE_OK)
        return ust__log_db_error(log, "read meta", err);
    w->legacy = log->prune_chain ? 0 : INT64_MAX;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *v = (const char *)sqlite3_column_text(st, 1);
        if (k == NULL || v == NULL)
            continue;
        if (strcmp(k, "legacy_prunes") == 0 && log->prune_chain) {
            w->legacy = strtoll(v, NULL, 10);
        } else if (strcmp(k, "head") == 0) {
            long long seq = 0;
            if (sscanf(v, "%lld %64s", &seq, w->anchors[0].hex) != 2 ||
                strlen(w->anchors[0].hex) != UST_SHA256_HEX_LEN || seq <= 0)
                seq = -1;
            w->anchors[0].seq = seq;
        }
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : ust__log_db_error(log, "read meta", err);
}

/* Checks one chained prune record and keeps its link for the walk. */
static int check_prune(ust_log *log, sqlite3_stmt *st, ust_log_verify_result *res,
                       chain_walk *w, unsigned char prev_prune[UST_SHA256_LEN],
                       int64_t *prev_tip)
{
    ust__prune_record p;
    unsigned char stored_prev[UST_SHA256_LEN], hash[UST_SHA256_LEN],
        computed[UST_SHA256_LEN];
    p.id = sqlite3_column_int64(st, 0);
    p.pruned_at = sqlite3_column_int64(st, 1);
    p.before = sqlite3_column_int64(st, 2);
    p.first_seq = sqlite3_column_int64(st, 3);
    p.last_seq = sqlite3_column_int64(st, 4);
    p.count = sqlite3_column_int64(st, 5);
    p.tip_seq = sqlite3_column_int64(st, 7);
    long long n = (long long)res->n_prunes;
    if (get_hash(st, 6, p.anchor) != 0 || get_hash(st, 8, p.link_prev) != 0 ||
        get_hash(st, 9, stored_prev) != 0 || get_hash(st, 10, hash) != 0 ||
        sqlite3_column_type(st, 7) != SQLITE_INTEGER)
        return ust__log_tamper(
            res, p.first_seq, "prune record %lld has no valid hash (inserted by hand?)",
            n);
    memcpy(p.prev_hash, stored_prev, UST_SHA256_LEN);
    ust__log_prune_hash(&log->hasher, &p, computed);
    if (memcmp(stored_prev, prev_prune, UST_SHA256_LEN) != 0)
        return ust__log_tamper(res, p.first_seq,
                               "prune record %lld does not chain from the one before"
                               " (a prune record deleted, inserted or replaced)",
                               n);
    if (memcmp(computed, hash, UST_SHA256_LEN) != 0)
        return ust__log_tamper(
            res, p.first_seq, "prune record %lld does not match its hash (changed)", n);
    if (p.count != p.last_seq - p.first_seq + 1 || p.tip_seq < p.last_seq ||
        p.tip_seq < *prev_tip)
        return ust__log_tamper(res, p.first_seq, "prune record %lld is inconsistent",
                               n);
    memcpy(prev_prune, hash, UST_SHA256_LEN);
    *prev_tip = p.tip_seq;
    prune_link *grown = ust_realloc(w->links, (w->n_links + 1) * sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    w->links = grown;
    grown[w->n_links].tip_seq = p.tip_seq;
    memcpy(grown[w->n_links].link_prev, p.link_prev, UST_SHA256_LEN);
    memcpy(grown[w->n_links].hash, hash, UST_SHA256_LEN);
    w->n_links++;
    return 0;
}

/* The prune records: one unbroken chain of prefixes, each hashed and
 * chained to the one before. The latest fixes where the rows start. */
static int read_prunes(ust_log *log, ust_log_verify_result *res, chain_walk *w,
                       char **err)
{
    w->next_seq = 1;
    memset(w->cur, 0, UST_SHA256_LEN);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db,
                           log->prune_chain
                               ? "SELECT id, pruned_at, before, first_seq, last_seq,"
                                 " count, anchor_hash, tip_seq, link_prev, prev_hash,"
                                 " hash FROM prunes ORDER BY id"
                               : "SELECT id, pruned_at, before, first_seq, last_seq,"
                                 " count, anchor_hash FROM prunes ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return ust__log_db_error(log, "read prunes", err);
    unsigned char prev_prune[UST_SHA256_LEN];
    memset(prev_prune, 0, UST_SHA256_LEN);
    int64_t prev_tip = 0;
    int step, rc = 0;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t first = sqlite3_column_int64(st, 3), last = sqlite3_column_int64(st, 4);
        res->n_prunes++;
        /* Each prune removes the prefix that follows the previous one. */
        if (first != w->next_seq || last < first) {
            rc = ust__log_tamper(
                res, first, "prune record %lld starts at seq %lld, expected %lld",
                (long long)res->n_prunes, (long long)first, (long long)w->next_seq);
            break;
        }
        if (get_hash(st, 6, w->cur) != 0 || is_zero(w->cur)) {
            rc = ust__log_tamper(res, first,
                                 "prune record %lld has no valid anchor hash",
                                 (long long)res->n_prunes);
            break;
        }
        if (res->n_prunes > w->legacy)
            rc = check_prune(log, st, res, w, prev_prune, &prev_tip);
        else if (log->prune_chain && sqlite3_column_type(st, 10) != SQLITE_NULL)
            /* Counted among the old records, but made by this version. */
            rc = ust__log_tamper(res, first,
                                 "prune record %lld is chained but counted as format 1"
                                 " (meta.legacy_prunes changed)",
                                 (long long)res->n_prunes);
        w->next_seq = last + 1;
        res->pruned_through = last;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "read prunes", err);
    sqlite3_finalize(st);
    return rc;
}

/* The chained prunes done when the chain's tip was at seq: each must chain
 * from where the chain is, and the chain then goes on from it. */
static int apply_links(chain_walk *w, int64_t seq, ust_log_verify_result *res)
{
    for (; w->next_link < w->n_links && w->links[w->next_link].tip_seq <= seq;
         w->next_link++) {
        prune_link *l = &w->links[w->next_link];
        if (l->tip_seq < seq)
            continue; /* its tip was pruned later: nothing left to link to */
        if (memcmp(l->link_prev, w->cur, UST_SHA256_LEN) != 0)
            return ust__log_tamper(
                res, seq,
                "a prune record does not chain from seq %lld (prune record"
                " inserted or replaced)",
                (long long)seq);
        memcpy(w->cur, l->hash, UST_SHA256_LEN);
        note_head(w, seq, w->cur);
    }
    return 0;
}

/* After the walk: the chain reached each anchor's seq and passed through its
 * hash there. tip is the last seq the chain reaches. */
static int check_anchors(const chain_walk *w, int64_t tip, ust_log_verify_result *res)
{
    int64_t meta = w->anchors[0].seq, given = w->anchors[1].seq;
    int64_t first = w->next_seq - 1; /* below this, pruned: nothing to compare */
    if (meta < 0)
        return ust__log_tamper(res, 0, "meta holds an unreadable head");
    if (meta > tip)
        return ust__log_tamper(
            res, tip + 1,
            tip == 0 ? "the log is empty, but it held seq %lld when last opened"
                       " or closed for writing (rows deleted, or its -wal file"
                       " lost)"
                     : "the log held seq %lld when last opened or closed for"
                       " writing, but ends here (rows cut off, or its -wal file"
                       " lost)",
            (long long)meta);
    if (meta > 0 && meta >= first && !w->anchors[0].matched)
        return ust__log_tamper(
            res, meta,
            "not the chain the log held when last opened or closed for"
            " writing (rows rewritten)");
    if (given > tip)
        return ust__log_tamper(
            res, tip + 1,
            "the log ends at seq %lld, before the anchor's seq %lld (rows cut"
            " off)",
            (long long)tip, (long long)given);
    if (given > 0 && given < first)
        return ust__log_tamper(
            res, given,
            "the anchor's seq was pruned (through seq %lld): it cannot be"
            " checked; keep a newer anchor",
            (long long)first);
    if (given > 0 && !w->anchors[1].matched)
        return ust__log_tamper(
            res, given,
            "the chain does not pass through the anchor's hash here (rows"
            " rewritten)");
    return 0;
}

/* The walk reads each page once: a page cache would hold pages it never reads
 * again, in the memory of a report that verifies beside its other reads. So
 * it keeps a small one (64 KiB), then gives the handle its own back. Sets
 * PRAGMA cache_size to size, and returns what it was. */
static int64_t swap_cache_size(ust_log *log, int64_t size)
{
    int64_t was = -2000; /* SQLite's default */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(log->db, "PRAGMA cache_size", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        was = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA cache_size=%lld", (long long)size);
    sqlite3_exec(log->db, sql, NULL, NULL, NULL);
    return was;
}

int ust__sqlite_verify(ust_log *log, int64_t limit, int64_t anchor_seq,
                       const char *anchor_hex, ust_log_verify_result *res, char **err)
{
    chain_walk w;
    memset(&w, 0, sizeof(w));
    if (anchor_seq > 0) {
        w.anchors[1].seq = anchor_seq;
        w.anchors[1].matched = anchor_hex == NULL;
        if (anchor_hex != NULL)
            memcpy(w.anchors[1].hex, anchor_hex, UST_SHA256_HEX_LEN);
    }
    /* One read transaction: the rows checked are one consistent snapshot even
     * while the recorder appends. */
    int rc = ust__log_exec(log, "BEGIN;", err);
    if (rc != 0)
        return rc;
    int64_t cache = swap_cache_size(log, -64);
    if ((rc = read_meta(log, &w, err)) == 0)
        rc = read_prunes(log, res, &w, err);
    /* A head recorded past the limit names rows the walk does not read. */
    if (w.anchors[0].seq > limit)
        w.anchors[0].seq = 0;
    int64_t expect_seq = w.next_seq;
    note_head(&w, expect_seq - 1, w.cur);
    if (rc == 0)
        rc = apply_links(&w, expect_seq - 1, res);
    sqlite3_stmt *st = NULL;
    char *sql =
        rc == 0 ? ust_sprintf("%s WHERE seq <= ?1 ORDER BY seq", ust__log_select(log))
                : NULL;
    if (rc == 0 && sql == NULL)
        rc = UST_ENOMEM;
    if (rc == 0 && sqlite3_prepare_v2(log->db, sql, -1, &st, NULL) != SQLITE_OK)
        rc = ust__log_db_error(log, "read events", err);
    ust_free(sql);
    if (st != NULL)
        sqlite3_bind_int64(st, 1, limit);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        unsigned char stored_prev[UST_SHA256_LEN], computed[UST_SHA256_LEN];
        rc = ust__log_row_decode(st, &rec, stored_prev, err);
        if (rc == UST_EPARSE) {
            rc = ust__log_tamper(res, sqlite3_column_int64(st, 0),
                                 "row cannot be read: %s",
                                 err && *err ? *err : "malformed");
            break;
        }
        if (rc != 0)
            break;
        res->checked++;
        if (rec.seq != expect_seq) {
            rc =
                ust__log_tamper(res, expect_seq,
                                rec.seq > expect_seq
                                    ? "missing: the next row is seq %lld (rows deleted)"
                                    : "out of order: found seq %lld",
                                (long long)rec.seq);
        } else if (memcmp(stored_prev, w.cur, UST_SHA256_LEN) != 0) {
            rc = ust__log_tamper(
                res, rec.seq, "does not chain from seq %lld (row inserted or replaced)",
                (long long)(rec.seq - 1));
        } else {
            unsigned char digest[UST_SHA256_LEN];
            ust__log_row_digest(&log->hasher, &rec, digest);
            ust__log_chain_link(&log->hasher, w.cur, digest, computed);
            if (memcmp(computed, rec.hash, UST_SHA256_LEN) != 0)
                rc = ust__log_tamper(res, rec.seq,
                                     "content does not match its hash (row changed)");
        }
        if (rc == 0) {
            memcpy(w.cur, rec.hash, UST_SHA256_LEN);
            note_head(&w, rec.seq, w.cur);
            res->head_seq = rec.seq;
            rc = apply_links(&w, rec.seq, res);
            expect_seq++;
        }
        ust_log_record_clear(&rec);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = ust__log_db_error(log, "read events", err);
    sqlite3_finalize(st);
    ust__log_exec(log, "COMMIT;", NULL);
    swap_cache_size(log, cache);
    int64_t tip = expect_seq - 1; /* the last seq the chain reaches */
    if (rc == 0 && w.next_link < w.n_links && w.links[w.next_link].tip_seq <= limit)
        rc = ust__log_tamper(
            res, tip + 1,
            "a prune record was made at seq %lld, but the log ends at seq %lld"
            " (rows cut off)",
            (long long)w.links[w.next_link].tip_seq, (long long)tip);
    if (rc == 0)
        rc = check_anchors(&w, tip, res);
    ust_free(w.links);
    if (rc == 0 || rc == UST_ETAMPER) {
        if (res->head_seq == 0 && res->pruned_through > 0 && rc == 0)
            res->head_seq = res->pruned_through;
        ust_hex_encode(w.cur, UST_SHA256_LEN, res->head_hash);
        if (res->head_seq == 0 && res->n_prunes == 0)
            res->head_hash[0] = '\0';
    }
    return rc;
}

int ust__sqlite_head(ust_log *log, int64_t *seq, char hex[UST_SHA256_HEX_LEN + 1],
                     char **err)
{
    unsigned char h[UST_SHA256_LEN];
    int64_t next;
    int rc = ust__log_chain_tip(log, &next, h, err);
    if (rc != 0)
        return rc;
    *seq = next - 1;
    if (*seq == 0)
        hex[0] = '\0';
    else
        ust_hex_encode(h, UST_SHA256_LEN, hex);
    return 0;
}
