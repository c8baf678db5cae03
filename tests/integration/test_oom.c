/* Out of memory: each allocation of an operation refused in turn (the 1st,
 * the 2nd, ... until a run in which none was), for the log, the state store,
 * the runner and the recorder's request path. Each refused run must return
 * an error (UST_ENOMEM where the module can tell) and leave nothing behind:
 * ASan checks leaks, the checks below that the state is what it was, or
 * what a run with all the memory it wanted makes. */
#include "replay_world.h"

#include "http/request_parse.h"

#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/runner.h>

#include <jansson.h>
#include <sqlite3.h>
#include <unistd.h>

/* Modes of ust_test_alloc_fail: every allocation from the Nth on refused, or
 * only the Nth (the code goes on with memory again after one failure). */
static const int modes[] = {1, 0};

/* ---- the seam itself -------------------------------------------------- */

/* jansson allocates through the seam: a refused allocation reaches it, and
 * ust_json_loads tells a refused allocation from bad JSON at every step,
 * where jansson itself reports some as syntax errors. */
static void test_jansson_allocates_through_the_seam(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:[i,s]}", "a", 1, "text");
    ust_test_alloc_fail(0, 1);
    char *text = json_dumps(v, JSON_COMPACT);
    assert_true(ust_test_alloc_restore() > 0);
    assert_null(text);
    text = json_dumps(v, JSON_COMPACT);
    assert_string_equal(text, "{\"a\":[1,\"text\"]}");
    json_decref(v);
    for (long n = 0;; n++) {
        assert_true(n < 100);
        if (ust_test_json_loads_failing(text, n))
            break;
    }
    ust_free(text); /* jansson's text, from the seam */
}

/* ust_grow returns NULL only when out of memory: an array not made yet
 * with nothing to hold (a read that ended inside a child's first line) is
 * made all the same, and a refused growth keeps the array and its cap. */
static void test_grow_answers_a_zero_need(void **state)
{
    (void)state;
    size_t cap = 0;
    int *v = ust_grow(NULL, &cap, 0, 8, sizeof(int));
    assert_non_null(v);
    assert_int_equal(cap, 8);
    assert_ptr_equal(ust_grow(v, &cap, 0, 8, sizeof(int)), v);
    assert_ptr_equal(ust_grow(v, &cap, 8, 8, sizeof(int)), v);
    ust_test_alloc_fail(0, 1);
    assert_null(ust_grow(v, &cap, 9, 8, sizeof(int)));
    ust_test_alloc_restore();
    assert_int_equal(cap, 8);
    size_t none = 0;
    char *first = ust_grow(NULL, &none, 3, 0, 1); /* no first size: from 1 */
    assert_non_null(first);
    assert_int_equal(none, 4);
    ust_free(first);
    ust_free(v);
}

/* ETIMEOUT and EEOF are codes of their own, not LIMIT and IO. */
static void test_error_codes(void **state)
{
    (void)state;
    assert_string_equal(ust_err_name(UST_ETIMEOUT), "UST_ETIMEOUT");
    assert_string_equal(ust_err_name(UST_EEOF), "UST_EEOF");
    assert_string_equal(ust_strerror(UST_ETIMEOUT), "timed out");
    assert_string_equal(ust_strerror(UST_EEOF), "end of file");
    assert_int_not_equal(UST_ETIMEOUT, UST_ELIMIT);
    assert_int_not_equal(UST_EEOF, UST_EIO);
    assert_string_equal(ust_strerror(UST_ELIMIT), "limit exceeded");
    assert_string_equal(ust_strerror(UST_EIO), "input/output error");
}

/* ---- log: append, then read back with a cursor ------------------------ */

/* The log verifies and holds exactly n rows. */
static void expect_log(ust_log *log, int64_t n)
{
    ust_log_verify_result res;
    char *err = NULL;
    if (ust_log_verify(log, &res, &err) != 0)
        fail_msg("verify: %s (seq %lld: %s)", err, (long long)res.bad_seq, res.reason);
    assert_int_equal(res.head_seq, n);
}

static void test_log_append_and_read(void **state)
{
    (void)state;
    world *w = world_new();
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    int64_t rows = 0;
    for (size_t m = 0; m < UST_ARRAY_SIZE(modes); m++) {
        for (long n = 0;; n++) {
            assert_true(n < 200);
            /* A signed webhook, derived with all the memory it wants. */
            char evt[32];
            snprintf(evt, sizeof(evt), "evt_%zu", w->n);
            world_stripe(w, (double)w->n, evt, "payment_intent.succeeded", "pi_1", "o1",
                         4200);
            ust_request *req = &w->reqs[w->n - 1];
            ust_log_record rec, got;
            assert_int_equal(ust_log_record_derive(w->cfg, req, &rec, &err), 0);
            /* Every other row with a recorded answer (borrowed, as the
             * request is). */
            static ust_header answer_headers[] = {{"Content-Type", "application/json"},
                                                  {"Understudy-Verdict", "applied"}};
            static unsigned char answer_body[] = "{\"id\":\"pay_1\"}";
            if (w->n % 2 == 0)
                rec.response = (ust_response){201, answer_headers, 2, answer_body,
                                              sizeof(answer_body) - 1};
            memset(&got, 0, sizeof(got));
            int64_t seq = 0;
            int got_rc = 0;
            ust_test_alloc_fail(n, modes[m]);
            int rc = ust_log_append(log, &rec, 1, &seq, &err);
            ust_log_cursor *cur = NULL;
            if (rc == 0 &&
                (got_rc = ust_log_cursor_open(log, seq - 1, &cur, &err)) == 0)
                got_rc = ust_log_cursor_next(cur, &got, &err);
            ust_log_cursor_close(cur);
            long refused = ust_test_alloc_restore();
            ust_free(err);
            err = NULL;
            if (rc == 0) {
                rows++;
                assert_int_equal(seq, rows);
            } else {
                assert_int_equal(rc, UST_ENOMEM);
            }
            if (got_rc == 1) { /* what was read is what was written */
                assert_int_equal(got.seq, seq);
                assert_int_equal(got.req.body_len, req->body_len);
                assert_memory_equal(got.req.body, req->body, req->body_len);
                assert_int_equal(got.req.n_headers, req->n_headers);
                for (size_t i = 0; i < req->n_headers; i++)
                    assert_string_equal(got.req.headers[i].value,
                                        req->headers[i].value);
                assert_string_equal(got.event_id, evt);
                assert_int_equal(got.response.status, rec.response.status);
                assert_int_equal(got.response.n_headers, rec.response.n_headers);
                assert_int_equal(got.response.body_len, rec.response.body_len);
                if (got.response.n_headers > 0)
                    assert_string_equal(got.response.headers[1].value, "applied");
                assert_string_equal(got.request_sha256, rec.request_sha256);
            } else if (rc == 0) {
                assert_int_equal(got_rc, UST_ENOMEM);
            }
            ust_log_record_clear_derived(&rec);
            ust_log_record_clear(&got);
            expect_log(log, rows); /* nothing half-appended */
            if (refused == 0) {
                print_message("%s mode %d: %ld allocations\n", __func__, modes[m], n);
                assert_int_equal(got_rc, 1);
                assert_true(n > 0);
                break;
            }
        }
    }
    assert_int_equal(ust_log_close(log), 0);
    world_free(w);
}

/* ---- state store: put, get, end of call, flush ------------------------ */

/* The value of key in ns as the database holds it ("" when absent). */
static char *stored(sqlite3 *db, const char *ns, const char *key)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT value FROM state WHERE key = ?1 ||"
                                        " char(31) || ?2",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    char *v = ust_strdup(
        sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : "");
    sqlite3_finalize(st);
    return v;
}

#define STORE_KEYS 40 /* per round: enough to grow the stage and the cache */

static void store_key(int round, int j, char key[32], char value[64])
{
    snprintf(key, 32, "r%dk%d", round, j);
    snprintf(value, 64, "value %d of state entry %d", round, j);
}

/* One decide's worth of state operations and the flush that commits them,
 * as the runner does: on any failure the transaction is rolled back and the
 * store discards what it cached. */
static int store_round(sqlite3 *db, ust_store *s, int round)
{
    ust_store_begin_call(s, "candidate");
    int rc = 0;
    for (int j = 0; rc == 0 && j < STORE_KEYS; j++) {
        char key[32], value[64];
        store_key(round, j, key, value);
        const char *old = NULL;
        rc = ust_store_get(s, key, &old);
        if (rc == 0)
            rc = j % 2 ? ust_store_put(s, key, value) : ust_store_claim(s, key, value);
        if (rc == 1) /* claimed */
            rc = 0;
        if (rc == 0 && (rc = ust_store_get(s, key, &old)) == 1)
            rc = strcmp(old, value) == 0 ? 0 : UST_EINVAL;
    }
    int end = ust_store_end_call(s, rc == 0);
    if (rc == 0)
        rc = end;
    char *err = NULL;
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    if (rc == 0)
        rc = ust_store_flush(s, &err);
    ust_free(err);
    if (rc == 0) {
        assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    } else {
        assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
        ust_store_discard(s);
    }
    return rc;
}

static void test_store_put_get_flush(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    ust_store *s = NULL;
    char *err = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    int round = 0;
    for (size_t m = 0; m < UST_ARRAY_SIZE(modes); m++) {
        for (long n = 0;; n++) {
            assert_true(n < 10000);
            /* A fresh store each time, over the rows of the rounds before:
             * its cache and stage grow from nothing. */
            ust_test_alloc_fail(n, modes[m]);
            int rc = ust_store_open(db, &s, &err);
            if (rc == 0)
                rc = store_round(db, s, round);
            long refused = ust_test_alloc_restore();
            ust_free(err);
            err = NULL;
            if (rc != 0)
                assert_int_equal(rc, UST_ENOMEM);
            if (s == NULL)
                assert_int_equal(ust_store_open(db, &s, &err), 0);
            /* All of the round or none of it, and what the store answers
             * now is what the database holds. */
            ust_store_begin_call(s, "candidate");
            for (int j = 0; j < STORE_KEYS; j++) {
                char key[32], value[64];
                store_key(round, j, key, value);
                char *in_db = stored(db, "candidate", key);
                assert_string_equal(in_db, rc == 0 ? value : "");
                const char *seen = NULL;
                assert_true(ust_store_get(s, key, &seen) >= 0);
                assert_string_equal(seen ? seen : "", in_db);
                ust_free(in_db);
            }
            assert_int_equal(ust_store_end_call(s, 0), 0);
            ust_store_close(s);
            s = NULL;
            round++;
            if (refused == 0) {
                print_message("%s mode %d: %ld allocations\n", __func__, modes[m], n);
                assert_int_equal(rc, 0);
                assert_true(n > 0);
                break;
            }
        }
    }
    sqlite3_close(db);
}

/* ---- runner: a replay of a small log ---------------------------------- */

static void small_world(world *w)
{
    world_stripe(w, 0, "evt_1", "payment_intent.succeeded", "pi_1", "o1", 4200);
    world_stripe(w, 60, "evt_2", "charge.refunded", "pi_1", "o1", 4200);
    world_api(w, 100, "k1", "t1", "o7", 1000);
    world_api(w, 100.2, "k1", "t1", "o7", 1000);
    world_record(w);
    /* Both in process: a child process would not see this process's
     * failing allocator (and its own failures are test_child_protocol's). */
    w->cfg->candidate.isolate = 0;
}

/* Decisions and divergences of the run database as one text, with each
 * divergence's line (its diff: a refused allocation must not cost it an
 * entry). */
static char *run_text(world *w)
{
    char *l = world_verdicts(w, "legacy"), *c = world_verdicts(w, "candidate");
    char *d = world_divergences(w);
    char *lines = world_query(w, "SELECT group_concat(line, char(10)) FROM"
                                 " (SELECT line FROM divergences ORDER BY seq)");
    char *text = ust_sprintf("%s / %s / %s / %s", l, c, d, lines);
    ust_free(l);
    ust_free(c);
    ust_free(d);
    ust_free(lines);
    return text;
}

static int replay_once(world *w, char **err)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.commit_every = 1; /* a commit per batch: a failure can come between two */
    ust_replay_stats st;
    return ust_replay(&o, &st, err);
}

static void test_replay(void **state)
{
    (void)state;
    world *w = world_new();
    small_world(w);
    char *err = NULL;
    if (replay_once(w, &err) != 0)
        fail_msg("replay: %s", err);
    char *want = run_text(w);
    for (size_t m = 0; m < UST_ARRAY_SIZE(modes); m++) {
        for (long n = 0;; n++) {
            assert_true(n < 100000);
            unlink(w->run_path);
            ust_test_alloc_fail(n, modes[m]);
            int rc = replay_once(w, &err);
            long refused = ust_test_alloc_restore();
            ust_free(err);
            err = NULL;
            if (rc != 0)
                assert_true(rc < 0);
            /* A replay with memory resumes what the failed one committed,
             * and the run comes out as a run never short of memory. */
            if (rc != 0 && replay_once(w, &err) != 0)
                fail_msg("n=%ld: the replay after the failure: %s", n, err);
            char *got = run_text(w);
            if (strcmp(got, want) != 0)
                fail_msg("n=%ld mode %d (rc %d):\n got %s\nwant %s", n, modes[m], rc,
                         got, want);
            ust_free(got);
            if (refused == 0) {
                print_message("%s mode %d: %ld allocations\n", __func__, modes[m], n);
                assert_int_equal(rc, 0);
                break;
            }
        }
    }
    ust_free(want);
    world_free(w);
}

/* ---- the recorder's request path -------------------------------------- */

/* The bytes of r as a client sends them. */
static char *wire_text(const ust_request *r)
{
    char *text = ust_sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", r->target);
    for (size_t i = 0; i < r->n_headers; i++) {
        char *more =
            ust_sprintf("%s%s: %s\r\n", text, r->headers[i].name, r->headers[i].value);
        ust_free(text);
        text = more;
    }
    char *all = ust_sprintf("%sContent-Length: %zu\r\n\r\n%.*s", text, r->body_len,
                            (int)r->body_len, (const char *)r->body);
    ust_free(text);
    return all;
}

typedef struct taker {
    ust_request req;
    int took, rc;
} taker;

static int take(ust__reqparse *rp)
{
    taker *t = rp->data;
    t->rc = ust__reqparse_take(rp, "203.0.113.7:443", WORLD_T0 * 1000000LL, &t->req);
    t->took = 1;
    return t->rc == 0 ? 0 : ust__reqparse_stop(rp, 503, "out of memory");
}

/* Parse, derive (signature included) and append, as serve does for one
 * request between the socket and the writer's commit. Not driven here: the
 * libuv loop and its connection (test_recorder fails that allocation), the
 * hand-offs to the worker pool and the writer thread, the group commit and
 * the response text; serve's threads allocate concurrently, so the Nth
 * allocation of the whole server is not one request's. */
static int serve_path(const ust_config *cfg, ust_log *log, const char *bytes,
                      int *status, ust_log_record *rec)
{
    static const ust__reqparse_ops ops = {.complete = take};
    taker t;
    memset(&t, 0, sizeof(t));
    ust__reqparse rp;
    ust__reqparse_init(&rp, cfg, &ops, &t);
    const char *why = NULL;
    *status = ust__reqparse_feed(&rp, bytes, strlen(bytes), &why);
    ust__reqparse_clear(&rp);
    int rc = *status != 0 || !t.took ? UST_ENOMEM : 0;
    if (*status != 0) {
        assert_int_equal(*status, 503);
        assert_string_equal(why, "out of memory");
    }
    memset(rec, 0, sizeof(*rec));
    char *err = NULL;
    if (rc == 0)
        rc = ust_log_record_derive(cfg, &t.req, rec, &err);
    if (rc == 0)
        rc = ust_log_append(log, rec, 1, NULL, &err);
    ust_free(err);
    rec->req = (ust_request){0}; /* a shallow copy of t.req */
    ust_request_clear(&t.req);
    return rc;
}

static void test_serve_one_request(void **state)
{
    (void)state;
    world *w = world_new();
    world_stripe(w, 0, "evt_1", "payment_intent.succeeded", "pi_1", "o1", 4200);
    char *bytes = wire_text(&w->reqs[0]);
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    int status;
    ust_log_record want;
    assert_int_equal(serve_path(w->cfg, log, bytes, &status, &want), 0);
    assert_int_equal(want.sig, UST_SIG_VERIFIED);
    int64_t rows = 1;
    for (size_t m = 0; m < UST_ARRAY_SIZE(modes); m++) {
        for (long n = 0;; n++) {
            assert_true(n < 10000);
            ust_log_record rec;
            ust_test_alloc_fail(n, modes[m]);
            int rc = serve_path(w->cfg, log, bytes, &status, &rec);
            long refused = ust_test_alloc_restore();
            if (rc == 0) {
                rows++;
                /* Derived as with all the memory it wanted, never as a body
                 * that is not JSON or a signature that did not verify. */
                if (strcmp(rec.request_sha256, want.request_sha256) != 0)
                    fail_msg("n=%ld mode %d: request_sha256 %s, want %s", n, modes[m],
                             rec.request_sha256, want.request_sha256);
                assert_string_equal(rec.event_id, want.event_id);
                assert_string_equal(rec.identity, want.identity);
                assert_int_equal(rec.sig, want.sig);
                assert_int_equal(rec.amount, want.amount);
            } else {
                assert_int_equal(rc, UST_ENOMEM);
            }
            ust_log_record_clear_derived(&rec);
            expect_log(log, rows);
            if (refused == 0) {
                print_message("%s mode %d: %ld allocations\n", __func__, modes[m], n);
                assert_int_equal(rc, 0);
                assert_true(n > 0);
                break;
            }
        }
    }
    ust_log_record_clear_derived(&want);
    assert_int_equal(ust_log_close(log), 0);
    ust_free(bytes);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jansson_allocates_through_the_seam),
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_grow_answers_a_zero_need),
        cmocka_unit_test(test_log_append_and_read),
        cmocka_unit_test(test_store_put_get_flush),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_serve_one_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
