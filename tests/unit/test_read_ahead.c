/* Reading ahead (src/runner/read_ahead.c), which the replay reads the log
 * with: slots come back in the order they were filled, a slot the caller
 * holds is never filled again under it, the last fill's error and message
 * reach the caller, and stopping early ends a reader that waits for room. */
#include "support.h"

#include "runner/read_ahead.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdatomic.h>
#include <unistd.h>

#define SLOTS 4

typedef struct fills {
    int value[SLOTS]; /* what each slot holds: the fill's number */
    atomic_int held[SLOTS];
    atomic_int overwrote; /* fills of a slot the caller held */
    int n, last;          /* fills made; the one that ends the reading */
    int fail;             /* the last fails */
} fills;

static int fill(void *ctx, size_t slot, int *more, char **err)
{
    fills *f = ctx;
    if (atomic_load(&f->held[slot]))
        atomic_fetch_add(&f->overwrote, 1);
    f->value[slot] = f->n++;
    *more = f->n < f->last;
    if (!*more && f->fail)
        return ust_errf(err, UST_EIO, "the log went away at fill %d", f->n - 1);
    return 0;
}

/* Takes every slot, holding two at once (one started, one being finished,
 * as the replay does), slowly enough for the reader to fill the others. */
static void take_all(fills *f, int *rc_out, char **err)
{
    ust__read_ahead ra;
    assert_int_equal(ust__read_ahead_start(&ra, SLOTS, fill, f, "test-reader", err), 0);
    int more = 1, want = 0;
    int older = -1;
    while (more) {
        size_t slot = 0;
        int rc = ust__read_ahead_take(&ra, &slot, &more, err);
        atomic_store(&f->held[slot], 1);
        assert_int_equal(f->value[slot], want++);
        usleep(200);
        if (older >= 0) {
            atomic_store(&f->held[older], 0);
            ust__read_ahead_give_back(&ra);
        }
        older = (int)slot;
        *rc_out = rc;
    }
    ust__read_ahead_stop(&ra);
    assert_int_equal(want, f->last);
}

static void test_slots_in_order_never_under_the_caller(void **state)
{
    (void)state;
    fills f = {.last = 50};
    char *err = NULL;
    int rc = -1;
    take_all(&f, &rc, &err);
    assert_int_equal(rc, 0);
    assert_null(err);
    assert_int_equal(atomic_load(&f.overwrote), 0);
}

static void test_the_last_fill_error_reaches_the_caller(void **state)
{
    (void)state;
    fills f = {.last = 9, .fail = 1};
    char *err = NULL;
    int rc = 0;
    take_all(&f, &rc, &err);
    assert_int_equal(rc, UST_EIO);
    assert_string_equal(err, "the log went away at fill 8");
    ust_free(err);
}

/* A reader with every slot filled waits for one back: stopping it then
 * returns (and drops what it read), with no error of its own. */
static void test_stop_while_the_reader_waits(void **state)
{
    (void)state;
    fills f = {.last = 1000};
    char *err = NULL;
    ust__read_ahead ra;
    assert_int_equal(ust__read_ahead_start(&ra, SLOTS, fill, &f, "test-reader", &err),
                     0);
    size_t slot = 9;
    int more = 0;
    assert_int_equal(ust__read_ahead_take(&ra, &slot, &more, &err), 0);
    assert_int_equal(slot, 0);
    assert_true(more);
    usleep(20000);
    ust__read_ahead_stop(&ra);
    assert_int_equal(f.n, SLOTS); /* filled up to the room it had */
    assert_null(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_in_order_never_under_the_caller),
        cmocka_unit_test(test_the_last_fill_error_reaches_the_caller),
        cmocka_unit_test(test_stop_while_the_reader_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
