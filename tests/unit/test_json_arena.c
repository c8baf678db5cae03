/* The arena jansson allocates from while one is open (ust_json_arena): the
 * tree of a parse lives there and goes at its close, a tree from outside
 * any arena is still freed for real, nested arenas each keep their own, and
 * an arena that cannot grow fails the parse as out of memory. ASan checks
 * that no block is freed twice, freed while an arena holds it, or leaked. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <understudy/alloc.h>
#include <understudy/array.h>

#include "support.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A document of about `bytes` bytes: objects, arrays, numbers and one long
 * string, so both the inline room and chunks of its own are used. */
static char *document(size_t bytes, size_t long_string)
{
    json_t *o = json_object();
    char *s = malloc(long_string + 1);
    assert_non_null(s);
    memset(s, 'x', long_string);
    s[long_string] = '\0';
    json_object_set_new(o, "long", json_string(s));
    free(s);
    json_t *arr = json_array();
    for (size_t i = 0; i * 40 < bytes; i++)
        json_array_append_new(arr, json_pack("{s:i,s:s}", "n", (int)i, "k", "value"));
    json_object_set_new(o, "items", arr);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    assert_non_null(text);
    return text;
}

static void parse_and_check(const char *text, size_t n_items)
{
    json_error_t e;
    json_t *v = ust_json_loads(text, 0, &e);
    assert_non_null(v);
    assert_int_equal(json_array_size(json_object_get(v, "items")), n_items);
    char *again = json_dumps(v, JSON_COMPACT);
    assert_string_equal(again, text); /* nothing lost or overwritten */
    ust_free(again);
    json_decref(v);
}

static void test_trees_of_every_size(void **state)
{
    (void)state;
    /* Within the inline room, over it (chunks), and a string larger than a
     * chunk's share (a chunk of its own). */
    static const size_t sizes[][2] = {{200, 10}, {40000, 100}, {4000, 100000}};
    for (size_t i = 0; i < UST_ARRAY_SIZE(sizes); i++) {
        char *text = document(sizes[i][0], sizes[i][1]);
        size_t n_items = (sizes[i][0] + 39) / 40;
        for (int round = 0; round < 3; round++) {
            ust_json_arena a;
            ust_json_arena_open(&a);
            parse_and_check(text, n_items);
            ust_json_arena_close(&a);
        }
        ust_free(text);
    }
}

static void test_trees_across_arenas(void **state)
{
    (void)state;
    char *text = document(20000, 50);
    json_error_t e;
    /* Parsed outside any arena: freed for real while one is open. */
    json_t *outside = ust_json_loads(text, 0, &e);
    assert_non_null(outside);
    ust_json_arena outer, inner;
    ust_json_arena_open(&outer);
    json_t *in_outer = ust_json_loads(text, 0, &e);
    assert_non_null(in_outer);
    ust_json_arena_open(&inner);
    parse_and_check(text, 500);
    json_decref(outside);  /* not the arenas' */
    json_decref(in_outer); /* the outer arena's, freed while the inner is open */
    ust_json_arena_close(&inner);
    parse_and_check(text, 500); /* the outer arena again */
    ust_json_arena_close(&outer);
    ust_free(text);
}

static void test_arena_out_of_memory(void **state)
{
    (void)state;
    char *text = document(40000, 100000);
    for (long n = 0;; n++) {
        assert_true(n < 1000);
        ust_json_arena a;
        ust_json_arena_open(&a);
        int whole = ust_test_json_loads_failing(text, n);
        ust_json_arena_close(&a);
        if (whole) {
            assert_true(n > 0); /* the chunks beyond the inline room */
            break;
        }
    }
    ust_free(text);
}

/* A long string's bytes leave the arena without a copy and outlive it (freed
 * with ust_free, which ASan checks); a short one's, inside a shared chunk,
 * cannot. A large block jansson frees (its lexer's outgrown buffers) goes at
 * once, not at the close. */
static void test_a_long_string_is_kept_past_the_close(void **state)
{
    (void)state;
    char *text = document(1000, 200000);
    ust_json_arena arena;
    ust_json_arena_open(&arena);
    json_error_t jerr;
    json_t *doc = ust_json_loadb(text, strlen(text), 0, &jerr);
    assert_non_null(doc);
    json_t *items = json_object_get(doc, "items");
    assert_null(ust_json_arena_keep(
        json_string_value(json_object_get(json_array_get(items, 0), "k"))));
    const char *long_one = json_string_value(json_object_get(doc, "long"));
    char *kept = ust_json_arena_keep(long_one);
    assert_ptr_equal(kept, long_one);
    assert_null(ust_json_arena_keep(kept)); /* taken once */
    /* 200,000 bytes of string, and the lexer's buffers of 16 KiB and up
     * freed as it outgrew them: what is left of its own is the last one. */
    assert_true(arena.n_own <= 1);
    ust_json_arena_close(&arena);
    assert_int_equal(strspn(kept, "x"), 200000);
    assert_int_equal(kept[200000], '\0');
    ust_free(kept);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trees_of_every_size),
        cmocka_unit_test(test_trees_across_arenas),
        cmocka_unit_test(test_arena_out_of_memory),
        cmocka_unit_test(test_a_long_string_is_kept_past_the_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
