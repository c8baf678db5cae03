/* One allocation seam for the whole program, so tests can make the Nth
 * allocation fail (SQLite's test_malloc, libuv's uv_replace_allocator). */
#ifndef UNDERSTUDY_ALLOC_H
#define UNDERSTUDY_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

typedef void *(*ust_malloc_fn)(size_t size);
typedef void *(*ust_realloc_fn)(void *ptr, size_t size);
typedef void (*ust_free_fn)(void *ptr);

/* Replace the allocator; all three or none. Returns UST_EINVAL on NULL.
 * jansson's allocations go through it as well (json_set_alloc_funcs, outside
 * an open ust_json_arena), so
 * memory jansson returns is freed with ust_free; a program linking
 * understudy must not give jansson an allocator of its own. Not thread-safe:
 * replace before other threads allocate. */
int ust_replace_allocator(ust_malloc_fn m, ust_realloc_fn r, ust_free_fn f);

void *ust_malloc(size_t size);
void *ust_calloc(size_t n, size_t size);
void *ust_realloc(void *ptr, size_t size);
void ust_free(void *ptr);
/* Copies; NULL in gives NULL out. */
char *ust_strdup(const char *s);
char *ust_strndup(const char *s, size_t n);
void *ust_memdup(const void *p, size_t n);
/* Appends n bytes at `at` to the string *buf of *len bytes (NUL-terminated
 * after them; *buf may be NULL). 0, or -1 when out of memory (*buf kept). */
int ust_str_append(char **buf, size_t *len, const char *at, size_t n);
/* Room for `need` elements of `elem` bytes in the array arr of *cap: arr
 * itself when it has it, else arr grown to `first` elements (when *cap is 0)
 * doubled until they are enough, with *cap updated. An arr still NULL is
 * allocated even when need is 0. NULL only when out of memory (arr and *cap
 * kept), so the many growing arrays share one doubling rule. */
void *ust_grow(void *arr, size_t *cap, size_t need, size_t first, size_t elem);
/* printf into a fresh string owned by the caller; NULL on allocation failure. */
char *ust_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *ust_vsprintf(const char *fmt, va_list ap);

/* How many allocations through the seam were refused on this thread so far.
 * Code that cannot report a failure itself (jansson's json_array_append_new,
 * json_pack) can be checked by comparing the count before and after. */
unsigned long ust_alloc_failures(void);

/* json_loadb and json_loads, but a parse during which an allocation was
 * refused always fails with json_error_out_of_memory: jansson itself reports
 * one as a syntax error ("invalid token") or with no error code, or returns
 * a tree with part of the input missing. */
struct json_t;
struct json_error_t;
struct json_t *ust_json_loadb(const char *buf, size_t len, size_t flags,
                              struct json_error_t *e);
struct json_t *ust_json_loads(const char *text, size_t flags, struct json_error_t *e);
struct json_t *ust_json_load_file(const char *path, size_t flags,
                                  struct json_error_t *e);

/* A region for what jansson allocates on this thread while it is open: a
 * parsed tree is carved from it, one bump of a pointer a node, and let go
 * all at once when the region closes, instead of one malloc and one free
 * per node (a line of the interchange format is ~50 of each). Nothing
 * jansson allocated while it was open may be used after it closes: open it
 * around a parse, the tree's use and its json_decref, never around a
 * json_dumps whose text outlives it (ust_free of such a text while the
 * arena is open does nothing: the arena frees it). Regions nest (a free while several
 * are open finds its own); the first UST_JSON_ARENA_INLINE bytes live in
 * the struct itself (on the caller's stack), more come from ust_malloc,
 * so a refused allocation fails the parse as before. */
#define UST_JSON_ARENA_INLINE 8192
struct ust__arena_chunk;
typedef struct ust_json_arena {
    struct ust_json_arena *outer;
    unsigned char *at, *end;          /* the free room of the chunk in use */
    struct ust__arena_chunk **chunks; /* in address order */
    size_t n_chunks, cap_chunks;
    void **own; /* the blocks too big to share a chunk, one malloc each */
    size_t n_own, cap_own;
    int failed; /* a chunk was refused: every later block is too */
    _Alignas(16) unsigned char first[UST_JSON_ARENA_INLINE];
} ust_json_arena;
void ust_json_arena_open(ust_json_arena *a);
/* Frees everything allocated in a (the innermost open region). */
void ust_json_arena_close(ust_json_arena *a);
/* A block of more than 16 KiB jansson allocated in the innermost open
 * region (such as the bytes of a long string a parse returned:
 * json_string_value), taken out of it: p itself, which now outlives the
 * region and is freed with ust_free; so a large value leaves the tree
 * without a copy. NULL when p is no such block: copy it instead. */
void *ust_json_arena_keep(const void *p);

/* Sets *err (when err is not NULL) to a formatted message the caller frees,
 * replacing nothing: an *err already set is kept, so the first cause wins.
 * Returns code, so `return ust_errf(err, UST_EPARSE, "...")` reads naturally. */
int ust_errf(char **err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
