/* Reading chosen rows of the event log: by a list of seqs, and newest
 * first before a seq (src/log/read.c, cursor.c). */
#include "replay_world.h"

static int collect(void *ctx, const ust_log_record *rec)
{
    char *out = ctx;
    char one[32];
    snprintf(one, sizeof(one), "%lld:%s ", (long long)rec->seq, rec->event_id);
    strcat(out, one);
    return 0;
}

static int stop_at_first(void *ctx, const ust_log_record *rec)
{
    collect(ctx, rec);
    return 7;
}

static void test_rows_by_seq_in_the_order_asked(void **state)
{
    world *w = *state;
    const char *ids[] = {"evt_a", "evt_b", "evt_c", "evt_d"};
    for (int i = 0; i < 4; i++)
        world_stripe(w, i, ids[i], "payment_intent.succeeded", "pi_1", "o1", 100);
    world_record(w);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_READONLY, &log, &err), 0);
    char out[256] = "";
    /* the log's order is not the list's; a seq it lacks is skipped */
    const int64_t seqs[] = {3, 1, 99, 4};
    assert_int_equal(ust_log_read_seqs(log, seqs, 4, collect, out, &err), 0);
    assert_string_equal(out, "3:evt_c 1:evt_a 4:evt_d ");
    out[0] = '\0';
    assert_int_equal(ust_log_read_seqs(log, seqs, 4, stop_at_first, out, &err), 7);
    assert_string_equal(out, "3:evt_c ");
    /* newest first, before a seq */
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    out[0] = '\0';
    assert_int_equal(ust_log_cursor_open_before(log, 3, &cur, &err), 0);
    while (ust_log_cursor_next(cur, &rec, &err) == 1)
        collect(out, &rec);
    assert_string_equal(out, "2:evt_b 1:evt_a ");
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_setup_teardown(
        test_rows_by_seq_in_the_order_asked, world_setup, world_teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
