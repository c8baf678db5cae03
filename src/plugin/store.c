/* The plugins' state store: a hash table in front of the run database.
 * Lookups that miss go to SQLite once and are remembered, absent keys too
 * (most keys a plugin asks about are new). Writes of a decide call are staged
 * and applied at its end, or dropped; applied writes reach SQLite at flush,
 * inside the transaction that records the decisions they belong to. The
 * cache is cleared after a flush once it holds more than CACHE_MAX entries,
 * so memory stays bounded however long the log is. A fixed-size Bloom filter
 * of every key the table holds lets a lookup of a new key (most lookups)
 * skip SQLite; writes reach the table in key order, which keeps them on
 * neighbouring B-tree pages. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/jsonw.h>

#include "plugin/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX (1u << 18)        /* entries */
#define CACHE_BYTES_MAX (64u << 20) /* in the arena, old values included */
#define BLOOM_BITS (1u << 27)       /* 16 MiB: ~1% false positives at 14M keys */
#define BLOOM_HASHES 4

/* A cached key, in the cache's arena with its key and value. */
typedef struct entry {
    struct entry *next; /* hash chain */
    struct entry *next_dirty;
    uint64_t hash;
    char *key;   /* ns '\0' key '\0' */
    size_t klen; /* ns + 1 + key */
    char *value; /* NULL: known to be absent */
    int dirty;
} entry;

/* A write of the call in progress, in the call's arena. */
typedef struct staged {
    char *key; /* ns '\0' key '\0' */
    size_t klen;
    char *value; /* NULL: delete */
} staged;

struct ust_store {
    sqlite3 *db;
    sqlite3_stmt *select, *upsert, *remove;
    uint64_t *bloom; /* keys that may be in the table */
    entry **buckets;
    size_t n_buckets, n_entries;
    ust__arena cache_mem, call_mem;
    char *keybuf; /* the key being looked up */
    size_t keybuf_cap;
    entry *dirty;
    const char *ns; /* namespace of the call in progress */
    staged *stage;
    size_t n_stage, cap_stage;
    /* Remote: a plugin isolated in a child process reaches its parent's
     * store over the protocol's pipes. Its namespace is its alone, so what
     * it read or wrote stays valid in this cache: a key costs one round trip
     * the first time, and writes go to the parent as notifications. */
    FILE *remote_in, *remote_out;
    /* Remote, when the namespace was empty as the child started: every key
     * it holds is one it wrote, so a key neither cached nor in `written` is
     * absent without asking. */
    int remote_complete;
    uint64_t *written;
    /* Pipelined: lines that arrived while waiting for a reply (the next
     * events), kept for the shim's loop. */
    char **deferred;
    size_t n_deferred, cap_deferred;
    ust_jsonw remote_writes; /* the call's writes, sent with its decision */
};

static int defer_line(ust_store *s, char *line)
{
    if (s->n_deferred == s->cap_deferred) {
        size_t cap = s->cap_deferred ? s->cap_deferred * 2 : 16;
        char **grown = ust_realloc(s->deferred, cap * sizeof(*grown));
        if (grown == NULL)
            return UST_ENOMEM;
        s->deferred = grown;
        s->cap_deferred = cap;
    }
    s->deferred[s->n_deferred++] = line;
    return 0;
}

char *ust__store_remote_next_deferred(ust_store *s)
{
    if (s->n_deferred == 0)
        return NULL;
    char *line = s->deferred[0];
    memmove(s->deferred, s->deferred + 1, (s->n_deferred - 1) * sizeof(*s->deferred));
    s->n_deferred--;
    return line;
}

ust_store *ust__store_remote(FILE *in, FILE *out, int complete)
{
    ust_store *s = ust_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->remote_in = in;
    s->remote_out = out;
    s->remote_complete = complete;
    s->written = complete ? ust_calloc(BLOOM_BITS / 64, sizeof(uint64_t)) : NULL;
    s->remote_complete = s->written != NULL;
    s->cache_mem.block_size = 1u << 16;
    s->call_mem.block_size = 1u << 12;
    s->n_buckets = 1u << 16;
    s->buckets = ust_calloc(s->n_buckets, sizeof(*s->buckets));
    if (s->buckets == NULL) {
        ust_free(s);
        return NULL;
    }
    return s;
}

/* One request to the parent and its reply (a JSON object), or NULL. */
static json_t *remote_call(ust_store *s, json_t *msg)
{
    char *line = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (line == NULL || fprintf(s->remote_out, "%s\n", line) < 0 ||
        fflush(s->remote_out)) {
        free(line);
        return NULL;
    }
    free(line);
    /* The host may have sent the next events already: they are kept for
     * later, and the reply is the first line that is not a "decide". */
    for (;;) {
        char *reply = NULL;
        size_t cap = 0;
        if (getline(&reply, &cap, s->remote_in) <= 0) {
            free(reply);
            return NULL;
        }
        json_error_t jerr;
        json_t *j = json_loads(reply, 0, &jerr);
        const char *type = json_string_value(json_object_get(j, "type"));
        if (type != NULL && strcmp(type, "decide") == 0) {
            json_decref(j);
            if (defer_line(s, reply) != 0) {
                free(reply);
                return NULL;
            }
            continue;
        }
        free(reply);
        return j;
    }
}

/* The parent's value of ns\0key: 0 and *value (ust_malloc'd, NULL when
 * absent), or UST_EIO. */
static int remote_get(ust_store *s, const char *k, char **value)
{
    *value = NULL;
    json_t *r =
        remote_call(s, json_pack("{s:s,s:s}", "type", "get", "key", k + strlen(k) + 1));
    if (r == NULL)
        return UST_EIO;
    const char *v = json_string_value(json_object_get(r, "value"));
    int rc = 0;
    if (v != NULL && (*value = ust_strdup(v)) == NULL)
        rc = UST_ENOMEM;
    json_decref(r);
    return rc;
}

/* Keeps a write of the call for the decision message: [key, value] or
 * [key, null] for a delete. */
static int remote_keep_write(ust_store *s, const staged *st)
{
    ust_jsonw *w = &s->remote_writes;
    if (w->len == 0)
        ust_jsonw_array(w);
    ust_jsonw_array(w);
    ust_jsonw_string(w, st->key + strlen(st->key) + 1);
    ust_jsonw_string(w, st->value);
    ust_jsonw_end_array(w);
    return w->error == 0 ? 0 : w->error == UST_ENOMEM ? UST_ENOMEM : UST_EINVAL;
}

const char *ust__store_remote_writes(ust_store *s)
{
    if (s->remote_writes.len == 0)
        return NULL;
    ust_jsonw_end_array(&s->remote_writes);
    return s->remote_writes.buf;
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

/* Double hashing from one 64-bit hash (Kirsch and Mitzenmacher). */
static void bloom_add(uint64_t *bloom, uint64_t h)
{
    uint64_t a = h, b = (h >> 32) | 1;
    for (int i = 0; i < BLOOM_HASHES; i++, a += b)
        bloom[(a % BLOOM_BITS) / 64] |= 1ULL << (a % 64);
}

static int bloom_may_have(const uint64_t *bloom, uint64_t h)
{
    uint64_t a = h, b = (h >> 32) | 1;
    for (int i = 0; i < BLOOM_HASHES; i++, a += b)
        if (!(bloom[(a % BLOOM_BITS) / 64] & (1ULL << (a % 64))))
            return 0;
    return 1;
}

/* A resumed run: every key already in the table goes into the filter. */
static int bloom_load(ust_store *s, char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT ns, key FROM state", -1, &st, NULL) !=
        SQLITE_OK)
        return ust_errf(err, UST_EDB, "state: %s", sqlite3_errmsg(s->db));
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        size_t nl = (size_t)sqlite3_column_bytes(st, 0),
               kl = (size_t)sqlite3_column_bytes(st, 1);
        char *k = ust_malloc(nl + kl + 2);
        if (k == NULL) {
            sqlite3_finalize(st);
            return UST_ENOMEM;
        }
        memcpy(k, sqlite3_column_text(st, 0), nl);
        k[nl] = '\0';
        memcpy(k + nl + 1, sqlite3_column_text(st, 1), kl);
        bloom_add(s->bloom, fnv1a(k, nl + 1 + kl));
        ust_free(k);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE
               ? 0
               : ust_errf(err, UST_EDB, "state: %s", sqlite3_errmsg(s->db));
}

int ust_store_open(sqlite3 *db, ust_store **out, char **err)
{
    *out = NULL;
    char *msg = NULL;
    if (sqlite3_exec(db,
                     "CREATE TABLE IF NOT EXISTS state(ns TEXT NOT NULL, key TEXT NOT"
                     " NULL, value TEXT NOT NULL, PRIMARY KEY(ns, key)) WITHOUT ROWID",
                     NULL, NULL, &msg) != SQLITE_OK) {
        ust_errf(err, UST_EDB, "state table: %s", msg ? msg : "error");
        sqlite3_free(msg);
        return UST_EDB;
    }
    ust_store *s = ust_calloc(1, sizeof(*s));
    if (s == NULL)
        return UST_ENOMEM;
    s->db = db;
    s->cache_mem.block_size = 1u << 16;
    s->call_mem.block_size = 1u << 12;
    s->n_buckets = 1u << 16;
    s->buckets = ust_calloc(s->n_buckets, sizeof(*s->buckets));
    s->bloom = ust_calloc(BLOOM_BITS / 64, sizeof(uint64_t));
    if (s->buckets == NULL || s->bloom == NULL ||
        sqlite3_prepare_v2(db, "SELECT value FROM state WHERE ns = ?1 AND key = ?2", -1,
                           &s->select, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO state VALUES(?1, ?2, ?3) ON CONFLICT(ns, key)"
                           " DO UPDATE SET value = excluded.value",
                           -1, &s->upsert, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM state WHERE ns = ?1 AND key = ?2", -1,
                           &s->remove, NULL) != SQLITE_OK) {
        int rc = s->buckets && s->bloom
                     ? ust_errf(err, UST_EDB, "state: %s", sqlite3_errmsg(db))
                     : UST_ENOMEM;
        ust_store_close(s);
        return rc;
    }
    int rc = bloom_load(s, err);
    if (rc != 0) {
        ust_store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void clear_cache(ust_store *s)
{
    memset(s->buckets, 0, s->n_buckets * sizeof(*s->buckets));
    ust__arena_reset(&s->cache_mem);
    s->n_entries = 0;
    s->dirty = NULL;
}

static void clear_stage(ust_store *s)
{
    ust__arena_reset(&s->call_mem);
    s->n_stage = 0;
}

static int cache_full(const ust_store *s)
{
    return s->n_entries > CACHE_MAX || s->cache_mem.bytes > CACHE_BYTES_MAX;
}

void ust_store_close(ust_store *s)
{
    if (s == NULL)
        return;
    if (s->buckets != NULL)
        clear_cache(s);
    clear_stage(s);
    ust__arena_free(&s->cache_mem);
    ust__arena_free(&s->call_mem);
    ust_free(s->keybuf);
    ust_free(s->stage);
    ust_free(s->buckets);
    ust_free(s->bloom);
    ust_free(s->written);
    for (size_t i = 0; i < s->n_deferred; i++)
        free(s->deferred[i]);
    ust_free(s->deferred);
    ust_jsonw_free(&s->remote_writes);
    sqlite3_finalize(s->select);
    sqlite3_finalize(s->upsert);
    sqlite3_finalize(s->remove);
    ust_free(s);
}

void ust_store_begin_call(ust_store *s, const char *ns)
{
    clear_stage(s);
    s->ns = ns;
}

/* ns '\0' key '\0' in the lookup buffer (valid until the next lookup). */
static char *lookup_key(ust_store *s, const char *key, size_t *klen)
{
    size_t a = strlen(s->ns), b = strlen(key);
    if (a + b + 2 > s->keybuf_cap) {
        size_t cap = (a + b + 2) * 2;
        char *grown = ust_realloc(s->keybuf, cap);
        if (grown == NULL)
            return NULL;
        s->keybuf = grown;
        s->keybuf_cap = cap;
    }
    memcpy(s->keybuf, s->ns, a + 1);
    memcpy(s->keybuf + a + 1, key, b + 1);
    *klen = a + 1 + b;
    return s->keybuf;
}

static entry *find(ust_store *s, const char *k, size_t klen, uint64_t h)
{
    for (entry *e = s->buckets[h & (s->n_buckets - 1)]; e != NULL; e = e->next)
        if (e->hash == h && e->klen == klen && memcmp(e->key, k, klen) == 0)
            return e;
    return NULL;
}

static void grow(ust_store *s)
{
    size_t n = s->n_buckets * 2;
    entry **b = ust_calloc(n, sizeof(*b));
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < s->n_buckets; i++) {
        entry *e = s->buckets[i];
        while (e != NULL) {
            entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    ust_free(s->buckets);
    s->buckets = b;
    s->n_buckets = n;
}

/* A new entry for k (copied) with value (kept: arena memory or NULL). */
static entry *insert(ust_store *s, const char *k, size_t klen, uint64_t h, char *value)
{
    entry *e = ust__arena_alloc(&s->cache_mem, sizeof(*e));
    char *kc = ust__arena_memdup(&s->cache_mem, k, klen + 1);
    if (e == NULL || kc == NULL)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->key = kc, e->klen = klen, e->hash = h, e->value = value;
    size_t b = h & (s->n_buckets - 1);
    e->next = s->buckets[b];
    s->buckets[b] = e;
    if (++s->n_entries > s->n_buckets)
        grow(s);
    return e;
}

/* The cached entry for (ns, key), loading it from SQLite on a miss. */
static int lookup(ust_store *s, const char *k, size_t klen, entry **out)
{
    uint64_t h = fnv1a(k, klen);
    entry *e = find(s, k, klen, h);
    if (e != NULL) {
        *out = e;
        return 0;
    }
    char *value = NULL;
    if (s->remote_out != NULL) {
        if (!s->remote_complete || bloom_may_have(s->written, h)) {
            char *got = NULL;
            int rc = remote_get(s, k, &got);
            if (rc == 0 && got != NULL &&
                (value = ust__arena_memdup(&s->cache_mem, got, strlen(got))) == NULL)
                rc = UST_ENOMEM;
            ust_free(got);
            if (rc != 0)
                return rc;
        }
    } else if (bloom_may_have(s->bloom, h)) {
        const char *ns = k, *key = k + strlen(k) + 1;
        sqlite3_bind_text(s->select, 1, ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->select, 2, key, -1, SQLITE_STATIC);
        int step = sqlite3_step(s->select);
        int rc = 0;
        if (step == SQLITE_ROW) {
            value = ust__arena_memdup(&s->cache_mem, sqlite3_column_text(s->select, 0),
                                      (size_t)sqlite3_column_bytes(s->select, 0));
            if (value == NULL)
                rc = UST_ENOMEM;
        } else if (step != SQLITE_DONE) {
            rc = UST_EDB;
        }
        sqlite3_reset(s->select);
        if (rc != 0)
            return rc;
    }
    *out = insert(s, k, klen, h, value);
    return *out ? 0 : UST_ENOMEM;
}

int ust_store_get(ust_store *s, const char *key, const char **value)
{
    size_t klen;
    char *k = lookup_key(s, key, &klen);
    if (k == NULL)
        return UST_ENOMEM;
    /* This call's own writes first, latest wins. */
    for (size_t i = s->n_stage; i-- > 0;) {
        if (s->stage[i].klen == klen && memcmp(s->stage[i].key, k, klen) == 0) {
            *value = s->stage[i].value;
            return *value != NULL;
        }
    }
    entry *e = NULL;
    int rc = lookup(s, k, klen, &e);
    if (rc != 0)
        return rc;
    *value = e->value;
    return e->value != NULL;
}

static int stage(ust_store *s, const char *key, const char *value)
{
    if (s->n_stage == s->cap_stage) {
        size_t cap = s->cap_stage ? s->cap_stage * 2 : 8;
        staged *grown = ust_realloc(s->stage, cap * sizeof(*grown));
        if (grown == NULL)
            return UST_ENOMEM;
        s->stage = grown;
        s->cap_stage = cap;
    }
    staged *st = &s->stage[s->n_stage];
    size_t klen;
    const char *k = lookup_key(s, key, &klen);
    st->key = k ? ust__arena_memdup(&s->call_mem, k, klen + 1) : NULL;
    st->klen = klen;
    st->value = value ? ust__arena_memdup(&s->call_mem, value, strlen(value)) : NULL;
    if (st->key == NULL || (value != NULL && st->value == NULL))
        return UST_ENOMEM;
    s->n_stage++;
    return 0;
}

int ust_store_put(ust_store *s, const char *key, const char *value)
{
    if (key == NULL || value == NULL)
        return UST_EINVAL;

    return stage(s, key, value);
}

int ust_store_delete(ust_store *s, const char *key)
{
    if (key == NULL)
        return UST_EINVAL;

    return stage(s, key, NULL);
}

int ust_store_claim(ust_store *s, const char *key, const char *value)
{
    if (key == NULL || value == NULL)
        return UST_EINVAL;

    const char *existing = NULL;
    int rc = ust_store_get(s, key, &existing);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = stage(s, key, value);
    return rc == 0 ? 1 : rc;
}

int ust_store_end_call(ust_store *s, int keep)
{
    /* Remote, the writes go to the parent with the decision (one line, not
     * one per write), which keeps or drops them with it; a call that failed
     * here is dropped here too. */
    if (s->remote_out != NULL) {
        ust_jsonw_reset(&s->remote_writes);
    }
    for (size_t i = 0; keep && s->remote_out != NULL && i < s->n_stage; i++) {
        if (remote_keep_write(s, &s->stage[i]) != 0)
            return UST_ENOMEM;
        if (s->written != NULL)
            bloom_add(s->written, fnv1a(s->stage[i].key, s->stage[i].klen));
    }
    int rc = 0;
    for (size_t i = 0; keep && i < s->n_stage; i++) {
        staged *st = &s->stage[i];
        entry *e = NULL;
        uint64_t h = fnv1a(st->key, st->klen);
        e = find(s, st->key, st->klen, h);
        if (e == NULL && (e = insert(s, st->key, st->klen, h, NULL)) == NULL) {
            rc = UST_ENOMEM;
            break;
        }
        /* The value it replaces stays in the arena until the cache is
         * emptied (CACHE_BYTES_MAX bounds what that holds). */
        e->value = st->value
                       ? ust__arena_memdup(&s->cache_mem, st->value, strlen(st->value))
                       : NULL;
        if (st->value != NULL && e->value == NULL) {
            rc = UST_ENOMEM;
            break;
        }
        if (!e->dirty && s->remote_out == NULL) {
            e->dirty = 1;
            e->next_dirty = s->dirty;
            s->dirty = e;
        }
    }
    clear_stage(s);
    s->ns = NULL;
    if (s->remote_out != NULL && cache_full(s))
        clear_cache(s); /* nothing to flush: the parent has every write */
    return rc;
}

static int by_key(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n + 1);
    return c != 0 ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

int ust_store_flush(ust_store *s, char **err)
{
    size_t n = 0;
    for (entry *e = s->dirty; e != NULL; e = e->next_dirty)
        n++;
    entry **sorted = ust_malloc((n ? n : 1) * sizeof(*sorted));
    if (sorted == NULL)
        return UST_ENOMEM;
    n = 0;
    for (entry *e = s->dirty; e != NULL; e = e->next_dirty)
        sorted[n++] = e;
    qsort(sorted, n, sizeof(*sorted), by_key);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        entry *e = sorted[i];
        sqlite3_stmt *st = e->value ? s->upsert : s->remove;
        sqlite3_bind_text(st, 1, e->key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, e->key + strlen(e->key) + 1, -1, SQLITE_STATIC);
        if (e->value)
            sqlite3_bind_text(st, 3, e->value, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = ust_errf(err, UST_EDB, "state: %s", sqlite3_errmsg(s->db));
        sqlite3_reset(st);
        if (e->value)
            bloom_add(s->bloom, e->hash);
        e->dirty = 0;
    }
    ust_free(sorted);
    if (rc != 0)
        return rc;
    s->dirty = NULL;
    if (cache_full(s))
        clear_cache(s);
    return 0;
}

int ust_store_ns_empty(ust_store *s, const char *ns)
{
    for (size_t b = 0; b < s->n_buckets; b++)
        for (entry *e = s->buckets[b]; e != NULL; e = e->next)
            if (e->value != NULL && strcmp(e->key, ns) == 0)
                return 0;
    sqlite3_stmt *st = NULL;
    int empty = 0;
    if (s->db != NULL &&
        sqlite3_prepare_v2(s->db, "SELECT 1 FROM state WHERE ns = ?1 LIMIT 1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
        empty = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return empty;
}
