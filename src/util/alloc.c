#include <understudy/alloc.h>
#include <understudy/error.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    ust_malloc_fn malloc_fn;
    ust_realloc_fn realloc_fn;
    ust_free_fn free_fn;
} allocator = {malloc, realloc, free};

/* Refused allocations on this thread, for ust_alloc_failures. */
static _Thread_local unsigned long failures;

/* The arena open on this thread, innermost first (ust_json_arena_open). */
static _Thread_local ust_json_arena *open_arena;

struct ust__arena_chunk {
    unsigned char *end;
    _Alignas(16) unsigned char room[];
};

#define ARENA_ALIGN 16
#define ARENA_CHUNK (64 * 1024)

/* Under ASan the room not handed out and a gap after every block are
 * poisoned, so a read or write past a block of an arena is caught as it
 * would be past a malloc'd one (the fuzz targets rely on that). */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define ARENA_GAP ARENA_ALIGN
#define ARENA_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define ARENA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define ARENA_GAP 0
#define ARENA_POISON(p, n) ((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The index of p among a's blocks of their own, or -1. */
static long arena_own_index(const ust_json_arena *a, const void *p)
{
    for (size_t i = 0; i < a->n_own; i++)
        if (a->own[i] == p)
            return (long)i;
    return -1;
}

/* 1 when p is in a's inline room or one of its chunks (its own blocks are
 * arena_let_go's: arena_free asks that first). */
static int arena_holds(const ust_json_arena *a, const void *p)
{
    const unsigned char *b = p;
    if (b >= a->first && b < a->first + sizeof(a->first))
        return 1;
    /* The last chunk that starts at or before b, found by halves: a free
     * while a tree of a million nodes is open (a line's headers copied out
     * and their temporaries freed) must not walk every chunk. */
    size_t lo = 0, hi = a->n_chunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((const unsigned char *)a->chunks[mid] <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && b >= a->chunks[lo - 1]->room && b < a->chunks[lo - 1]->end;
}

/* A block too big to share a chunk is one malloc of its own, kept in a's
 * list: freed at once when jansson frees it (a parse's buffer that grew by
 * doubling, each size given up, would otherwise stay until the arena
 * closes, twice the text), and one the caller can keep
 * (ust_json_arena_keep). */
static void *arena_take_own(ust_json_arena *a, size_t size)
{
    void **grown = ust_grow(a->own, &a->cap_own, a->n_own + 1, 8, sizeof(void *));
    void *p = grown != NULL ? ust_malloc(size) : NULL;
    if (grown != NULL)
        a->own = grown;
    if (p == NULL) {
        a->failed = 1;
        return NULL;
    }
    a->own[a->n_own++] = p;
    return p;
}

/* Takes p out of a's own blocks: 1 when it was one of them. */
static int arena_let_go(ust_json_arena *a, const void *p)
{
    long i = arena_own_index(a, p);
    if (i < 0)
        return 0;
    a->own[i] = a->own[--a->n_own];
    return 1;
}

static void *arena_take(ust_json_arena *a, size_t size)
{
    /* Once refused, always refused until the arena closes: jansson 2.14's
     * lexer ignores a failure to grow its buffer and goes on, so a later
     * small block served from the room left could let it scan past the
     * bytes it kept. The parse fails either way (ust_json_loadb). */
    if (a->failed)
        return NULL;
    if (size > ARENA_CHUNK / 4)
        return arena_take_own(a, size);
    size_t asked = size;
    size = (size + ARENA_GAP + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size > (size_t)(a->end - a->at)) {
        struct ust__arena_chunk **grown =
            ust_grow(a->chunks, &a->cap_chunks, a->n_chunks + 1, 8, sizeof(*grown));
        struct ust__arena_chunk *c =
            grown != NULL ? ust_malloc(sizeof(*c) + ARENA_CHUNK) : NULL;
        if (grown != NULL)
            a->chunks = grown;
        if (c == NULL) {
            a->failed = 1;
            return NULL;
        }
        c->end = c->room + ARENA_CHUNK;
        /* In address order, for arena_holds. */
        size_t at = a->n_chunks;
        while (at > 0 && a->chunks[at - 1] > c)
            at--;
        memmove(a->chunks + at + 1, a->chunks + at, (a->n_chunks - at) * sizeof(c));
        a->chunks[at] = c;
        a->n_chunks++;
        ARENA_POISON(c->room, ARENA_CHUNK);
        a->at = c->room;
        a->end = c->end;
    }
    void *p = a->at;
    a->at += size;
    ARENA_UNPOISON(p, asked);
    return p;
}

/* jansson's allocator: the innermost open arena, else the seam. */
static void *json_alloc(size_t size)
{
    return open_arena != NULL ? arena_take(open_arena, size ? size : 1)
                              : ust_malloc(size);
}

/* A block of an open arena lives until its arena closes, whoever frees it
 * (json_decref, or ust_free of a text json_dumps made in the arena), but
 * for one of its own, freed now. 1 when p was the arena's. */
static int arena_free(void *p)
{
    for (ust_json_arena *a = open_arena; a != NULL; a = a->outer)
        if (arena_let_go(a, p)) {
            allocator.free_fn(p);
            return 1;
        } else if (arena_holds(a, p)) {
            return 1;
        }
    return 0;
}

void *ust_json_arena_keep(const void *p)
{
    return open_arena != NULL && arena_let_go(open_arena, p) ? (void *)p : NULL;
}

static void install_json_funcs(void)
{
    json_set_alloc_funcs(json_alloc, ust_free);
}

static pthread_once_t json_funcs_once = PTHREAD_ONCE_INIT;

void ust_json_arena_open(ust_json_arena *a)
{
    /* Installed at the first arena (or allocator replacement): until then
     * jansson's own malloc and free are what these forward to anyway. */
    pthread_once(&json_funcs_once, install_json_funcs);
    a->outer = open_arena;
    a->at = a->first;
    a->end = a->first + sizeof(a->first);
    a->chunks = NULL;
    a->n_chunks = a->cap_chunks = 0;
    a->own = NULL;
    a->n_own = a->cap_own = 0;
    a->failed = 0;
    ARENA_POISON(a->first, sizeof(a->first));
    open_arena = a;
}

void ust_json_arena_close(ust_json_arena *a)
{
    open_arena = a->outer;
    ARENA_UNPOISON(a->first, sizeof(a->first)); /* the caller's stack again */
    for (size_t i = 0; i < a->n_chunks; i++) {
        struct ust__arena_chunk *c = a->chunks[i];
        ARENA_UNPOISON(c->room, (size_t)(c->end - c->room));
        allocator.free_fn(c);
    }
    allocator.free_fn(a->chunks);
    a->chunks = NULL;
    a->n_chunks = a->cap_chunks = 0;
    for (size_t i = 0; i < a->n_own; i++)
        allocator.free_fn(a->own[i]);
    allocator.free_fn(a->own);
    a->own = NULL;
    a->n_own = a->cap_own = 0;
    a->at = a->end = NULL;
}

int ust_replace_allocator(ust_malloc_fn m, ust_realloc_fn r, ust_free_fn f)
{
    if (m == NULL || r == NULL || f == NULL)
        return UST_EINVAL;
    allocator.malloc_fn = m;
    allocator.realloc_fn = r;
    allocator.free_fn = f;
    /* jansson allocates through the seam too: what it returns (json_dumps)
     * is freed with ust_free, and its allocations fail when a test makes
     * them fail. Until the first replacement both are malloc/free, so doing
     * it here, where the seam changes, keeps that true at every moment
     * without code that runs at load time. ust_malloc and ust_free follow
     * any later replacement; installing again undoes a json_set_alloc_funcs
     * made elsewhere. */
    install_json_funcs();
    return 0;
}

void *ust_malloc(size_t size)
{
    void *p = allocator.malloc_fn(size ? size : 1);
    if (p == NULL)
        failures++;
    return p;
}

void *ust_calloc(size_t n, size_t size)
{
    if (size != 0 && n > (size_t)-1 / size)
        return NULL;
    void *p = ust_malloc(n * size);
    if (p != NULL)
        memset(p, 0, n * size);
    return p;
}

void *ust_realloc(void *ptr, size_t size)
{
    void *p = allocator.realloc_fn(ptr, size ? size : 1);
    if (p == NULL)
        failures++;
    return p;
}

unsigned long ust_alloc_failures(void)
{
    return failures;
}

/* jansson keeps an error's code in the last byte of its text (see
 * json_error_code in jansson.h). */
static void set_nomem(json_error_t *e)
{
    snprintf(e->text, sizeof(e->text) - 1, "%s", ust_strerror(UST_ENOMEM));
    e->text[sizeof(e->text) - 1] = (char)json_error_out_of_memory;
}

/* A parse during which an allocation was refused failed, even when jansson
 * returned a tree: it can come back with part of the input missing (seen
 * with jansson 2.14, a body whose hash then differed). */
static json_t *checked(json_t *v, unsigned long before, json_error_t *e)
{
    if (failures == before)
        return v;
    json_decref(v);
    if (e != NULL)
        set_nomem(e);
    return NULL;
}

json_t *ust_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *e)
{
    unsigned long before = failures;
    json_t *v = json_loadb(buf, len, flags, e);
    return checked(v, before, e);
}

json_t *ust_json_loads(const char *text, size_t flags, json_error_t *e)
{
    unsigned long before = failures;
    json_t *v = json_loads(text, flags, e);
    return checked(v, before, e);
}

json_t *ust_json_load_file(const char *path, size_t flags, json_error_t *e)
{
    unsigned long before = failures;
    json_t *v = json_load_file(path, flags, e);
    return checked(v, before, e);
}

void ust_free(void *ptr)
{
    if (ptr != NULL && (open_arena == NULL || !arena_free(ptr)))
        allocator.free_fn(ptr);
}

void *ust_memdup(const void *p, size_t n)
{
    if (p == NULL)
        return NULL;
    void *copy = ust_malloc(n);
    if (copy != NULL && n > 0)
        memcpy(copy, p, n);
    return copy;
}

char *ust_strndup(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *copy = ust_malloc(n + 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

char *ust_strdup(const char *s)
{
    return s == NULL ? NULL : ust_strndup(s, strlen(s));
}

char *ust_vsprintf(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return NULL;
    char *out = ust_malloc((size_t)n + 1);
    if (out != NULL)
        vsnprintf(out, (size_t)n + 1, fmt, ap);
    return out;
}

int ust_str_append(char **buf, size_t *len, const char *at, size_t n)
{
    char *grown = ust_realloc(*buf, *len + n + 1);
    if (grown == NULL)
        return -1;
    memcpy(grown + *len, at, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
    return 0;
}

void *ust_grow(void *arr, size_t *cap, size_t need, size_t first, size_t elem)
{
    /* An array not made yet is made even for a need of 0: NULL must mean
     * out of memory, or a caller that appends nothing (a read that ended
     * inside a line) takes its empty array for a failure. */
    if (need <= *cap && arr != NULL)
        return arr;
    size_t n = *cap ? *cap : first ? first : 1;
    while (n < need) {
        if (n > (size_t)-1 / 2)
            return NULL;
        n *= 2;
    }
    if (elem != 0 && n > (size_t)-1 / elem)
        return NULL;
    void *grown = ust_realloc(arr, n * elem);
    if (grown != NULL)
        *cap = n;
    return grown;
}

char *ust_sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = ust_vsprintf(fmt, ap);
    va_end(ap);
    return out;
}

int ust_errf(char **err, int code, const char *fmt, ...)
{
    if (err != NULL && *err == NULL) {
        va_list ap;
        va_start(ap, fmt);
        *err = ust_vsprintf(fmt, ap);
        va_end(ap);
    }
    return code;
}
