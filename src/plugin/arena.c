#include "plugin/arena.h"

#include <understudy/alloc.h>

#include <string.h>

struct ust__arena_block {
    ust__arena_block *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
};

void *ust__arena_alloc(ust__arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    ust__arena_block *b = a->head;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > a->block_size ? n : a->block_size;
        b = ust_malloc(sizeof(*b) + cap);
        if (b == NULL)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
        a->bytes += cap;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

char *ust__arena_memdup(ust__arena *a, const void *p, size_t n)
{
    char *copy = ust__arena_alloc(a, n + 1);
    if (copy != NULL) {
        memcpy(copy, p, n);
        copy[n] = '\0';
    }
    return copy;
}

void ust__arena_reset(ust__arena *a)
{
    ust__arena_block *keep = NULL;
    for (ust__arena_block *b = a->head, *next; b != NULL; b = next) {
        next = b->next;
        if (keep == NULL && b->cap == a->block_size) {
            keep = b;
            continue;
        }
        ust_free(b);
    }
    a->head = keep;
    a->bytes = 0;
    if (keep != NULL) {
        keep->next = NULL;
        keep->used = 0;
        a->bytes = keep->cap;
    }
}

void ust__arena_free(ust__arena *a)
{
    ust__arena_reset(a);
    ust_free(a->head);
    a->head = NULL;
    a->bytes = 0;
}
