/* The state store's insides: one cache (store.c) in front of one of two
 * backings, a table of operations each: its owner's table (store.c; the
 * runner's run database) or, in a plugin's child process, the parent's
 * store over the protocol (store_remote.c). */
#ifndef UST_PLUGIN_STORE_INTERNAL_H
#define UST_PLUGIN_STORE_INTERNAL_H

#include <understudy/host.h>
#include <understudy/jsonw.h>

#include "plugin/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CACHE_MAX (1u << 18)        /* entries */
#define CACHE_BYTES_MAX (64u << 20) /* by default (ust_store_set_cache_limit) */
#define BLOOM_BITS (1u << 27)       /* 16 MiB: ~1% false positives at 14M keys */
#define BLOOM_HASHES 4

/* A key of the store is its namespace, the unit separator and the plugin's
 * key: one text column in the run database, so SQLite compares one field per
 * B-tree step instead of two (namespaces are the host's names, "legacy" and
 * "candidate", never holding the separator). */
#define NS_SEP '\x1f'

/* The plugin's part of a store key. */
static inline const char *key_name(const char *k)
{
    return strchr(k, NS_SEP) + 1;
}

/* A cached key, in the cache's arena with its key and value. */
typedef struct entry {
    struct entry *next; /* hash chain */
    struct entry *next_dirty;
    uint64_t hash;
    char *key;   /* ns NS_SEP key '\0' */
    size_t klen; /* ns + 1 + key */
    char *value; /* NULL: known to be absent */
    int dirty;
} entry;

/* A write of the call in progress, in the call's arena. */
typedef struct staged {
    char *key; /* ns NS_SEP key '\0' */
    size_t klen;
    char *value; /* NULL: delete */
} staged;

typedef struct ust__store_ops ust__store_ops;

/* The cache and the call's writes, whichever backing is behind them. */
struct ust_store {
    const ust__store_ops *ops;
    void *backing; /* the ops' own state */
    entry **buckets;
    size_t n_buckets, n_entries;
    size_t cache_limit; /* ust_store_cache_bytes at most, after a flush */
    ust__arena cache_mem, call_mem;
    char *keybuf; /* the key being looked up */
    size_t keybuf_cap;
    entry *dirty;   /* written since the backing last took them (flush) */
    const char *ns; /* namespace of the call in progress */
    staged *stage;
    size_t n_stage, cap_stage;
};

/* What is behind the cache: its owner's table (store.c) or, for a plugin
 * isolated in a child process, the parent's store over the protocol
 * (store_remote.c). */
struct ust__store_ops {
    /* The value of store key k (klen bytes, hash h) when the cache has
     * none: 0 and *value (in the cache's arena; NULL when absent), or a
     * negative error. */
    int (*miss)(ust_store *s, const char *k, size_t klen, uint64_t h, char **value);
    /* At the end of a call, before the cache takes its writes (keep=1) or
     * they are dropped (keep=0). Non-zero: the call ends with that error
     * and the cache is not touched. */
    int (*end_call)(ust_store *s, int keep);
    /* A write of the call, now the cache's entry e. */
    void (*applied)(ust_store *s, entry *e);
    /* After the call's writes are in the cache. */
    void (*after_call)(ust_store *s);
    /* Frees the backing (not the cache). */
    void (*close)(ust_store *s);
};

/* The table of a backing whose functions are <prefix>_miss ... <prefix>_close:
 * each backing has all five, so both are filled by the one list. */
#define UST__STORE_OPS(prefix)                                                         \
    {                                                                                  \
        .miss = prefix##_miss, .end_call = prefix##_end_call,                          \
        .applied = prefix##_applied, .after_call = prefix##_after_call,                \
        .close = prefix##_close,                                                       \
    }

/* Double hashing from one 64-bit hash (Kirsch and Mitzenmacher). */
static inline void bloom_add(uint64_t *bloom, uint64_t h)
{
    uint64_t a = h, b = (h >> 32) | 1;
    for (int i = 0; i < BLOOM_HASHES; i++, a += b)
        bloom[(a % BLOOM_BITS) / 64] |= 1ULL << (a % 64);
}

static inline int bloom_may_have(const uint64_t *bloom, uint64_t h)
{
    uint64_t a = h, b = (h >> 32) | 1;
    for (int i = 0; i < BLOOM_HASHES; i++, a += b)
        if (!(bloom[(a % BLOOM_BITS) / 64] & (1ULL << (a % 64))))
            return 0;
    return 1;
}

/* A store with an empty cache in front of ops and backing, or NULL: the
 * part both backings share. */
ust_store *ust__store_new(const ust__store_ops *ops, void *backing);
/* Empties the cache. */
void ust__store_clear_cache(ust_store *s);
/* More in the cache than it should hold? */
int ust__store_cache_full(const ust_store *s);

#endif
