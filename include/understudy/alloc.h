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
 * jansson's allocations go through it as well (json_set_alloc_funcs), so
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
 * doubled until they are enough, with *cap updated. NULL when out of memory
 * (arr and *cap kept), so the many growing arrays share one doubling rule. */
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

/* Sets *err (when err is not NULL) to a formatted message the caller frees,
 * replacing nothing: an *err already set is kept, so the first cause wins.
 * Returns code, so `return ust_errf(err, UST_EPARSE, "...")` reads naturally. */
int ust_errf(char **err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
