/* Failing the Nth allocation through the seam (SQLite's test_malloc): the
 * one budget every thread of a test draws on (support.h says how to use it). */
#include "support.h"

#include <jansson.h>
#include <stdatomic.h>
#include <understudy/alloc.h>

typedef struct alloc_state {
    atomic_long budget; /* allocations still allowed; -1: not failing */
    atomic_long refused;
    int persist;
} alloc_state;

static alloc_state alloc = {-1, 0, 0};

static int alloc_refuse(void)
{
    long v = atomic_load(&alloc.budget);
    while (v >= 0) {
        long next = v > 0 ? v - 1 : (alloc.persist ? 0 : -1);
        if (atomic_compare_exchange_weak(&alloc.budget, &v, next)) {
            if (v > 0)
                return 0;
            atomic_fetch_add(&alloc.refused, 1);
            return 1;
        }
    }
    return 0;
}

static void *failing_malloc(size_t n)
{
    return alloc_refuse() ? NULL : malloc(n);
}

static void *failing_realloc(void *p, size_t n)
{
    return alloc_refuse() ? NULL : realloc(p, n);
}

void ust_test_alloc_fail(long n, int persist)
{
    alloc.persist = persist;
    atomic_store(&alloc.refused, 0);
    atomic_store(&alloc.budget, n);
    assert_int_equal(ust_replace_allocator(failing_malloc, failing_realloc, free), 0);
}

long ust_test_alloc_restore(void)
{
    atomic_store(&alloc.budget, -1);
    assert_int_equal(ust_replace_allocator(malloc, realloc, free), 0);
    return atomic_load(&alloc.refused);
}

int ust_test_json_loads_failing(const char *text, long n)
{
    json_error_t e;
    ust_test_alloc_fail(n, 1);
    json_t *v = ust_json_loads(text, 0, &e);
    long refused = ust_test_alloc_restore();
    if (refused == 0) {
        assert_non_null(v);
        json_decref(v);
        return 1;
    }
    assert_null(v);
    assert_int_equal(json_error_code(&e), json_error_out_of_memory);
    return 0;
}
