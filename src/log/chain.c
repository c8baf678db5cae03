/* The hash chain: what a row's hash covers, and where the next row chains from. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/hash.h>

#include <openssl/evp.h>
#include <string.h>

/* A row's hash is SHA-256(prev_hash || digest), where digest is SHA-256 over
 * the row's framed content (every field length-prefixed, so boundaries cannot
 * shift and NULL differs from ""; seq included, so a moved row no longer
 * matches). Splitting it this way lets the costly part, the content digest,
 * run for many rows at once on another core while the chain link, which must
 * be sequential, stays a 64-byte hash. */
static void put(ust__row_hasher *h, const void *data, size_t n)
{
    if (h->failed || n == 0)
        return;
    if (h->len + n > h->cap) {
        size_t cap = h->cap ? h->cap : 512;
        while (cap < h->len + n)
            cap *= 2;
        unsigned char *grown = ust_realloc(h->frame, cap);
        if (grown == NULL) {
            h->failed = 1;
            return;
        }
        h->frame = grown;
        h->cap = cap;
    }
    memcpy(h->frame + h->len, data, n);
    h->len += n;
}

static void put_u64(ust__row_hasher *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
    put(h, b, sizeof(b));
}

static void put_str(ust__row_hasher *h, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u64(h, s ? (uint64_t)n : UINT64_MAX);
    put(h, s, n);
}

static int hasher_ready(ust__row_hasher *h)
{
    if (h->md == NULL)
        h->md = EVP_MD_CTX_new();
    return h->md != NULL;
}

void ust__row_hasher_free(ust__row_hasher *h)
{
    EVP_MD_CTX_free(h->md);
    ust_free(h->frame);
    memset(h, 0, sizeof(*h));
}

/* A derived field's frame, in UST_EVENT_FIELDS order (format 2: every log
 * written since hashes exactly these bytes, so a kind's frame never
 * changes). A string is framed with put_str (NULL differs from ""); the
 * amount as its value (all ones when absent) and whether it is present. */
#define FRAME_TEXT(m) put_str(h, rec->m);
#define FRAME_ROUTE(m) put_str(h, rec->m);
#define FRAME_SHA(m) put_str(h, rec->m);
#define FRAME_SIG(m) put_str(h, ust_sig_status_name(rec->m));
#define FRAME_AMOUNT(m)                                                                \
    put_u64(h, rec->has_##m ? (uint64_t)rec->m : UINT64_MAX);                          \
    put_u64(h, (uint64_t)rec->has_##m);
#define FRAME_CONFIG(m) put_str(h, rec->m);
/* Those of the log's own formats, framed in every row. */
#define FRAME(kind, m, column, wire, wire_at, export, source, since, desc)             \
    if (since <= UST__LOG_FORMAT_BASE) {                                               \
        FRAME_##kind(m)                                                                \
    }

/* A field that arrived later (event_fields.h: since, a TEXT or an AMOUNT:
 * fields.c) is framed after the recorded answer, and only when present,
 * tagged and named: every row written before it, and every row since
 * without it, frames exactly the bytes it always has; one with it frames
 * differently from any row without it (the tag comes after where the
 * others' frames end, as the answer's does). Its since is no part of the
 * frame: a field's format never changes. */
#define PRESENT_TEXT(m) (rec->m != NULL)
#define PRESENT_AMOUNT(m) (rec->has_##m)
#define PRESENT_ROUTE(m) 1
#define PRESENT_SHA(m) 1
#define PRESENT_SIG(m) 1
#define PRESENT_CONFIG(m) 1
#define FRAME_LATE(kind, m, column, wire, wire_at, export, source, since, desc)        \
    if (since > UST__LOG_FORMAT_BASE && PRESENT_##kind(m)) {                           \
        put(h, "understudy-field-1", 18);                                              \
        put_str(h, #column);                                                           \
        FRAME_##kind(m)                                                                \
    }

/* The recorded answer (format 3), after every format-2 field and only when there is
 * one: a row without it frames exactly the bytes it always has. The tag
 * keeps a row with an answer from framing like any row without one (a
 * format-2 frame is length-prefixed throughout, so it ends where its last
 * field does; these bytes come after that end). */
static void frame_response(ust__row_hasher *h, const ust_response *a)
{
    if (a->status == 0)
        return;
    put(h, "understudy-response-1", 21);
    put_u64(h, (uint64_t)a->status);
    put_u64(h, a->n_headers);
    for (size_t i = 0; i < a->n_headers; i++) {
        put_str(h, a->headers[i].name);
        put_str(h, a->headers[i].value);
    }
    put_u64(h, a->body_len);
    put(h, a->body, a->body_len);
}

/* A frame begins empty, with the tag that says what it frames (the tag's
 * bytes are part of the hash). */
static void frame_start(ust__row_hasher *h, const char *tag)
{
    h->len = 0;
    h->failed = 0;
    put(h, tag, strlen(tag));
}

void ust__log_row_digest(ust__row_hasher *h, const ust_log_record *rec,
                         unsigned char out[UST_SHA256_LEN])
{
    const ust_request *r = &rec->req;
    frame_start(h, "understudy-row-2");
    put_u64(h, (uint64_t)rec->seq);
    put_u64(h, (uint64_t)r->received_at_us);
    put_str(h, r->remote);
    put_str(h, r->method);
    put_str(h, r->target);
    put_u64(h, r->n_headers);
    for (size_t i = 0; i < r->n_headers; i++) {
        put_str(h, r->headers[i].name);
        put_str(h, r->headers[i].value);
    }
    put_u64(h, r->body_len);
    size_t body_at = h->len; /* the body is hashed in place, not copied */
    UST_EVENT_FIELDS(FRAME)
    frame_response(h, &rec->response);
    UST_EVENT_FIELDS(FRAME_LATE)
    if (h->failed || !hasher_ready(h)) {
        /* Cannot hash: an all-zero digest never verifies, so nothing is hidden. */
        memset(out, 0, UST_SHA256_LEN);
        return;
    }
    unsigned int n = UST_SHA256_LEN;
    EVP_DigestInit_ex(h->md, ust_sha256_md(), NULL);
    EVP_DigestUpdate(h->md, h->frame, body_at);
    if (r->body_len > 0)
        EVP_DigestUpdate(h->md, r->body, r->body_len);
    EVP_DigestUpdate(h->md, h->frame + body_at, h->len - body_at);
    EVP_DigestFinal_ex(h->md, out, &n);
}

void ust__log_chain_link(ust__row_hasher *h, const unsigned char prev[UST_SHA256_LEN],
                         const unsigned char digest[UST_SHA256_LEN],
                         unsigned char out[UST_SHA256_LEN])
{
    if (!hasher_ready(h)) {
        memset(out, 0, UST_SHA256_LEN);
        return;
    }
    unsigned int n = UST_SHA256_LEN;
    EVP_DigestInit_ex(h->md, ust_sha256_md(), NULL);
    EVP_DigestUpdate(h->md, prev, UST_SHA256_LEN);
    EVP_DigestUpdate(h->md, digest, UST_SHA256_LEN);
    EVP_DigestFinal_ex(h->md, out, &n);
}

/* SHA-256 over the frame built so far (zeros when it could not be built:
 * they never verify). */
static void digest_frame(ust__row_hasher *h, unsigned char out[UST_SHA256_LEN])
{
    if (h->failed || !hasher_ready(h)) {
        memset(out, 0, UST_SHA256_LEN);
        return;
    }
    unsigned int n = UST_SHA256_LEN;
    EVP_DigestInit_ex(h->md, ust_sha256_md(), NULL);
    EVP_DigestUpdate(h->md, h->frame, h->len);
    EVP_DigestFinal_ex(h->md, out, &n);
}

void ust__log_prune_hash(ust__row_hasher *h, const ust__prune_record *p,
                         unsigned char out[UST_SHA256_LEN])
{
    frame_start(h, "understudy-prune-1");
    put_u64(h, (uint64_t)p->id);
    put_u64(h, (uint64_t)p->pruned_at);
    put_u64(h, (uint64_t)p->before);
    put_u64(h, (uint64_t)p->first_seq);
    put_u64(h, (uint64_t)p->last_seq);
    put_u64(h, (uint64_t)p->count);
    put_u64(h, (uint64_t)p->tip_seq);
    put(h, p->anchor, UST_SHA256_LEN);
    put(h, p->link_prev, UST_SHA256_LEN);
    put(h, p->prev_hash, UST_SHA256_LEN);
    digest_frame(h, out);
}

void ust__log_stream_genesis(ust__row_hasher *h, int64_t stream, int64_t opened_at,
                             const char *label, unsigned char out[UST_SHA256_LEN])
{
    frame_start(h, "understudy-stream-1");
    put_u64(h, (uint64_t)stream);
    put_u64(h, (uint64_t)opened_at);
    put_str(h, label);
    digest_frame(h, out);
}

void ust__log_commit_hash(ust__row_hasher *h, const ust__commit_record *c,
                          unsigned char out[UST_SHA256_LEN])
{
    frame_start(h, "understudy-commit-1");
    put_u64(h, (uint64_t)c->first_seq);
    put_u64(h, (uint64_t)c->last_seq);
    put_u64(h, (uint64_t)c->stream);
    put_u64(h, (uint64_t)c->first_stream_seq);
    put(h, c->last_hash, UST_SHA256_LEN);
    put(h, c->prev_hash, UST_SHA256_LEN);
    digest_frame(h, out);
}

int ust__log_chain_tip(ust_log *log, int64_t *next_seq,
                       unsigned char prev[UST_SHA256_LEN], char **err)
{
    /* A chained prune is a link after the row at its tip_seq (ties go to the
     * prune: it came after that row); a format-1 one only anchors. */
    static const char sql[] =
        "SELECT seq, hash, 0 FROM (SELECT seq, hash FROM events"
        " ORDER BY seq DESC LIMIT 1) UNION ALL "
        "SELECT coalesce(tip_seq, last_seq), coalesce(hash, anchor_hash), 1 FROM"
        " (SELECT * FROM prunes ORDER BY id DESC LIMIT 1) ORDER BY 1 DESC, 3 DESC"
        " LIMIT 1";
    static const char sql_v1[] =
        "SELECT seq, hash FROM (SELECT seq, hash FROM events"
        " ORDER BY seq DESC LIMIT 1) UNION ALL "
        "SELECT last_seq, anchor_hash FROM (SELECT last_seq, anchor_hash FROM"
        " prunes ORDER BY id DESC LIMIT 1) ORDER BY 1 DESC LIMIT 1";
    if (log->tip_query == NULL &&
        sqlite3_prepare_v3(log->db, log->prune_chain ? sql : sql_v1, -1,
                           SQLITE_PREPARE_PERSISTENT, &log->tip_query,
                           NULL) != SQLITE_OK)
        return ust__log_db_error(log, "read chain tip", err);
    sqlite3_stmt *st = log->tip_query;
    int rc = 0;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *next_seq = sqlite3_column_int64(st, 0) + 1;
        const void *h = sqlite3_column_blob(st, 1);
        if (h == NULL || sqlite3_column_bytes(st, 1) != UST_SHA256_LEN)
            rc = ust_errf(err, UST_ETAMPER, "%s: seq %lld has no valid hash", log->path,
                          (long long)(*next_seq - 1));
        else
            memcpy(prev, h, UST_SHA256_LEN);
        if (rc == 0 && sqlite3_step(st) != SQLITE_DONE)
            rc = ust__log_db_error(log, "read chain tip", err);
    } else if (step == SQLITE_DONE) {
        *next_seq = 1;
        memset(prev, 0, UST_SHA256_LEN);
    } else {
        rc = ust__log_db_error(log, "read chain tip", err);
    }
    sqlite3_reset(st);
    return rc;
}

/* Changes whenever another connection commits to the log (never for this
 * connection's own commits). */
static int data_version(ust_log *log, int64_t *out)
{
    if (log->data_version == NULL &&
        sqlite3_prepare_v3(log->db, "PRAGMA data_version", -1,
                           SQLITE_PREPARE_PERSISTENT, &log->data_version,
                           NULL) != SQLITE_OK)
        return UST_EDB;
    int rc = sqlite3_step(log->data_version) == SQLITE_ROW ? 0 : UST_EDB;
    *out = sqlite3_column_int64(log->data_version, 0);
    sqlite3_reset(log->data_version);
    return rc;
}

int ust__log_tip_for_append(ust_log *log, int64_t *next_seq,
                            unsigned char prev[UST_SHA256_LEN], char **err)
{
    int64_t version = 0;
    int known = data_version(log, &version) == 0;
    if (known && log->tip_known && version == log->tip_data_version) {
        *next_seq = log->tip_next_seq;
        memcpy(prev, log->tip_hash, UST_SHA256_LEN);
        return 0;
    }
    log->tip_known = 0;
    int rc = ust__log_chain_tip(log, next_seq, prev, err);
    if (rc == 0 && known) {
        log->tip_known = 1;
        log->tip_data_version = version;
        log->tip_next_seq = *next_seq;
        memcpy(log->tip_hash, prev, UST_SHA256_LEN);
    }
    return rc;
}

void ust__log_tip_remember(ust_log *log, int64_t after_seq,
                           const unsigned char hash[UST_SHA256_LEN])
{
    if (after_seq <= 0 || !log->tip_known) {
        log->tip_known = 0;
        return;
    }
    log->tip_next_seq = after_seq + 1;
    memcpy(log->tip_hash, hash, UST_SHA256_LEN);
}
