/* Reading chosen rows of the event log: by a list of seqs, newest first
 * before a seq, and without the raw request (src/log/read.c, cursor.c). */
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

/* The rows of a cursor, whole (fields NULL) or for a reader of the stored
 * fields under that config hash, into rows[n]. */
static void read_all(ust_log *log, const char *fields, ust_log_record *rows, size_t n)
{
    ust_log_cursor *cur = NULL;
    char *err = NULL;
    int rc = fields ? ust_log_cursor_open_fields(log, 0, fields, &cur, &err)
                    : ust_log_cursor_open(log, 0, &cur, &err);
    assert_int_equal(rc, 0);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ust_log_cursor_next(cur, &rec, &err), 1);
        rows[i] = rec;
        memset(&rec, 0, sizeof(rec));
    }
    assert_int_equal(ust_log_cursor_next(cur, &rec, &err), 0);
    ust_log_cursor_close(cur);
}

/* A replay that decides on the stored fields reads a row derived under its
 * config without the raw request, and any other row whole (it derives that
 * one again): the same fields, hash and time either way. */
static void test_fields_cursor_leaves_out_the_raw_request(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_a", "payment_intent.succeeded", "pi_1", "o1", 100);
    world_api(w, 5, "k1", "t1", "o7", 1000);
    world_record(w);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_READONLY, &log, &err), 0);
    ust_log_record whole[2], fields[2], other[2];
    read_all(log, NULL, whole, 2);
    read_all(log, w->cfg->hash, fields, 2);
    read_all(log, "0000000000000000000000000000000000000000000000000000000000000000",
             other, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(whole[i].config_hash, w->cfg->hash);
        assert_non_null(whole[i].req.body);
        assert_true(whole[i].req.n_headers > 0);
        /* under its config: the derived fields, no raw request */
        assert_null(fields[i].req.body);
        assert_int_equal(fields[i].req.n_headers, 0);
        assert_null(fields[i].req.method);
        assert_int_equal(fields[i].seq, whole[i].seq);
        assert_int_equal(fields[i].req.received_at_us, whole[i].req.received_at_us);
        assert_memory_equal(fields[i].hash, whole[i].hash, UST_SHA256_LEN);
        assert_string_equal(fields[i].request_sha256, whole[i].request_sha256);
        assert_string_equal(fields[i].identity, whole[i].identity);
        assert_int_equal(fields[i].sig, whole[i].sig);
        /* under another config: whole */
        assert_int_equal(other[i].req.body_len, whole[i].req.body_len);
        assert_memory_equal(other[i].req.body, whole[i].req.body,
                            whole[i].req.body_len);
        assert_int_equal(other[i].req.n_headers, whole[i].req.n_headers);
        assert_string_equal(other[i].req.target, whole[i].req.target);
        ust_log_record_clear(&whole[i]);
        ust_log_record_clear(&fields[i]);
        ust_log_record_clear(&other[i]);
    }
    ust_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows_by_seq_in_the_order_asked,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_fields_cursor_leaves_out_the_raw_request,
                                        world_setup, world_teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
