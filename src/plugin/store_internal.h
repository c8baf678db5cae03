/* The state store's insides, shared by its two halves: store.c (the cache
 * before the run database) and store_remote.c (the same cache in a plugin's
 * child process, reaching the parent's store over the protocol). */
#ifndef UST_PLUGIN_STORE_INTERNAL_H
#define UST_PLUGIN_STORE_INTERNAL_H

#include <understudy/host.h>
#include <understudy/jsonw.h>

#include "plugin/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CACHE_MAX (1u << 18)        /* entries */
#define CACHE_BYTES_MAX (64u << 20) /* in the arena, old values included */
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

struct ust_store {
    sqlite3 *db;
    sqlite3_stmt *select, *upsert, *upsert_rows, *remove;
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

/* A store with an empty cache, or NULL: the part both halves share. */
ust_store *ust__store_new(void);

/* Remote: the parent's value of key k (ust_malloc'd, NULL when absent). */
int ust__store_remote_get(ust_store *s, const char *k, char **value);
/* Remote: keeps a write of the call for its decision message. */
int ust__store_remote_keep_write(ust_store *s, const staged *st);

#endif
