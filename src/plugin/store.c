/* The plugins' state store: a hash table in front of a table its owner
 * keeps (ust_store_table: the runner's run database, src/runner/state_db.c).
 * Lookups that miss go to the table once and are remembered, absent keys too
 * (most keys a plugin asks about are new). Writes of a decide call are staged
 * and applied at its end, or dropped; applied writes reach the table at
 * flush, inside the transaction that records the decisions they belong to.
 * The cache (keys and values in an arena) is emptied after a flush once it
 * holds more than CACHE_MAX entries or its limit in bytes (CACHE_BYTES_MAX
 * unless set), so memory stays bounded however long the log is. A fixed-size Bloom
 * filter of every key the table holds lets a lookup of a new key (most lookups) skip
 * the table. */
#include "plugin/store_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

/* The table behind the cache, and a Bloom filter of the keys it holds. */
typedef struct local {
    const ust_store_table *ops;
    void *table;
    uint64_t *bloom; /* keys that may be in the table */
} local;

/* Every key already in the table (a resumed run's) goes into the filter. */
static void bloom_key(void *bloom, const char *key, size_t klen)
{
    bloom_add(bloom, ust_fnv1a64(key, klen));
}

ust_store *ust__store_new(const ust__store_ops *ops, void *backing)
{
    ust_store *s = ust_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->ops = ops;
    s->backing = backing;
    s->cache_limit = CACHE_BYTES_MAX;
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

static void local_close(ust_store *s)
{
    local *l = s->backing;
    if (l == NULL)
        return;
    ust_free(l->bloom);
    l->ops->close(l->table);
    ust_free(l);
}

/* A value the table holds, into the cache's arena. */
typedef struct miss_value {
    ust__arena *mem;
    char *value;
} miss_value;

static int take_value(void *ctx, const char *value, size_t len)
{
    miss_value *m = ctx;
    m->value = ust__arena_memdup(m->mem, value, len);
    return m->value ? 0 : UST_ENOMEM;
}

/* A miss goes to the table, unless the Bloom filter knows the key is not
 * in it. */
static int local_miss(ust_store *s, const char *k, size_t klen, uint64_t h,
                      char **value)
{
    local *l = s->backing;
    *value = NULL;
    if (!bloom_may_have(l->bloom, h))
        return 0;
    miss_value m = {&s->cache_mem, NULL};
    int rc = l->ops->get(l->table, k, klen, take_value, &m);
    *value = m.value;
    return rc;
}

static int local_end_call(ust_store *s, int keep)
{
    (void)s, (void)keep;
    return 0;
}

/* The table takes it at the next flush. */
static void local_applied(ust_store *s, entry *e)
{
    if (!e->dirty) {
        e->dirty = 1;
        e->next_dirty = s->dirty;
        s->dirty = e;
    }
}

/* The cache is emptied after a flush, when the table has every write. */
static void local_after_call(ust_store *s)
{
    (void)s;
}

static const ust__store_ops local_ops = UST__STORE_OPS(local);

int ust_store_open_table(const ust_store_table *ops, void *t, ust_store **out,
                         char **err)
{
    *out = NULL;
    local *l = ust_calloc(1, sizeof(*l));
    ust_store *s = l ? ust__store_new(&local_ops, l) : NULL;
    if (s == NULL) {
        ust_free(l);
        ops->close(t);
        return UST_ENOMEM;
    }
    l->ops = ops;
    l->table = t;
    l->bloom = ust_calloc(BLOOM_BITS / 64, sizeof(uint64_t));
    int rc = l->bloom ? ops->each_key(t, bloom_key, l->bloom, err) : UST_ENOMEM;
    if (rc != 0) {
        ust_store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void ust__store_clear_cache(ust_store *s)
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

size_t ust_store_cache_bytes(const ust_store *s)
{
    return s->cache_mem.bytes + s->n_buckets * sizeof(*s->buckets);
}

void ust_store_set_cache_limit(ust_store *s, size_t bytes)
{
    s->cache_limit = bytes;
}

int ust__store_cache_full(const ust_store *s)
{
    return s->n_entries > CACHE_MAX || ust_store_cache_bytes(s) > s->cache_limit;
}

void ust_store_close(ust_store *s)
{
    if (s == NULL)
        return;
    if (s->buckets != NULL)
        ust__store_clear_cache(s);
    clear_stage(s);
    ust__arena_free(&s->cache_mem);
    ust__arena_free(&s->call_mem);
    ust_free(s->keybuf);
    ust_free(s->stage);
    ust_free(s->buckets);
    s->ops->close(s);
    ust_free(s);
}

void ust_store_begin_call(ust_store *s, const char *ns)
{
    clear_stage(s);
    s->ns = ns;
}

/* ns NS_SEP key '\0' in the lookup buffer (valid until the next lookup). */
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
    memcpy(s->keybuf, s->ns, a);
    s->keybuf[a] = NS_SEP;
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

/* The cached entry for (ns, key), loading it from the backing on a miss. */
static int lookup(ust_store *s, const char *k, size_t klen, entry **out)
{
    uint64_t h = ust_fnv1a64(k, klen);
    entry *e = find(s, k, klen, h);
    if (e != NULL) {
        *out = e;
        return 0;
    }
    char *value = NULL;
    int rc = s->ops->miss(s, k, klen, h, &value);
    if (rc != 0)
        return rc;
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
    staged *grown =
        ust_grow(s->stage, &s->cap_stage, s->n_stage + 1, 8, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    s->stage = grown;
    staged *st = &s->stage[s->n_stage];
    size_t klen = 0; /* stays 0 when the lookup buffer cannot grow */
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
    int rc = s->ops->end_call(s, keep);
    if (rc != 0)
        return rc;
    for (size_t i = 0; keep && i < s->n_stage; i++) {
        staged *st = &s->stage[i];
        entry *e = NULL;
        uint64_t h = ust_fnv1a64(st->key, st->klen);
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
        s->ops->applied(s, e);
    }
    clear_stage(s);
    s->ns = NULL;
    s->ops->after_call(s);
    return rc;
}

static int by_key(const void *a, const void *b)
{
    const ust_store_row *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n + 1);
    return c != 0 ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* The table takes the writes in key order, which keeps them on
 * neighbouring B-tree pages. */
int ust_store_flush(ust_store *s, char **err)
{
    local *l = s->backing;
    size_t n = 0;
    for (entry *e = s->dirty; e != NULL; e = e->next_dirty)
        n++;
    ust_store_row *rows = ust_malloc((n ? n : 1) * sizeof(*rows));
    if (rows == NULL)
        return UST_ENOMEM;
    n = 0;
    for (entry *e = s->dirty; e != NULL; e = e->next_dirty) {
        e->dirty = 0;
        if (e->value != NULL)
            bloom_add(l->bloom, e->hash);
        rows[n++] = (ust_store_row){e->key, e->klen, e->value};
    }
    qsort(rows, n, sizeof(*rows), by_key);
    int rc = l->ops->write(l->table, rows, n, err);
    ust_free(rows);
    if (rc != 0) {
        /* The caller rolls back: what the cache holds beyond the table is
         * gone with it (entries already marked clean included). */
        ust__store_clear_cache(s);
        return rc;
    }
    s->dirty = NULL;
    if (ust__store_cache_full(s))
        ust__store_clear_cache(s);
    return 0;
}

void ust_store_discard(ust_store *s)
{
    clear_stage(s);
    ust__store_clear_cache(s);
}

int ust_store_ns_empty(ust_store *s, const char *ns)
{
    const local *l = s->backing;
    size_t nl = strlen(ns);
    for (size_t b = 0; b < s->n_buckets; b++)
        for (entry *e = s->buckets[b]; e != NULL; e = e->next)
            if (e->value != NULL && strncmp(e->key, ns, nl) == 0 &&
                e->key[nl] == NS_SEP)
                return 0;
    /* The namespace's keys sort between "ns" NS_SEP and "ns" NS_SEP + 1. */
    char *lo = ust_sprintf("%s%c", ns, NS_SEP),
         *hi = ust_sprintf("%s%c", ns, NS_SEP + 1);
    int empty = lo != NULL && hi != NULL && !l->ops->any_key_in(l->table, lo, hi);
    ust_free(lo);
    ust_free(hi);
    return empty;
}
