/* A bump allocator for many small strings that all die together: the state
 * store's cache (emptied whole when it is full) and the writes of one decide
 * call. One malloc per block instead of one per string, and no free at all
 * until the reset, which keeps the heap from fragmenting under millions of
 * short-lived keys. */
#ifndef UST_PLUGIN_ARENA_H
#define UST_PLUGIN_ARENA_H

#include <stddef.h>

typedef struct ust__arena_block ust__arena_block;

typedef struct ust__arena {
    ust__arena_block *head; /* newest block, the one allocated from */
    size_t block_size;      /* bytes per ordinary block */
    size_t bytes;           /* held in blocks, all told */
} ust__arena;

/* n bytes, 8-aligned, valid until the next reset; NULL when out of memory. */
void *ust__arena_alloc(ust__arena *a, size_t n);
/* A copy of n bytes and a NUL after them. */
char *ust__arena_memdup(ust__arena *a, const void *p, size_t n);
/* Forgets everything allocated, keeping one ordinary block for reuse. */
void ust__arena_reset(ust__arena *a);
void ust__arena_free(ust__arena *a);

#endif
