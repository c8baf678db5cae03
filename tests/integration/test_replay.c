/* Replay through the real reference plugins: each scenario of the design
 * that replay can express, with the verdicts of both plugins and the exact
 * divergences; determinism; resume after SIGKILL; legacy against itself. */
#define _GNU_SOURCE 1 /* F_SETPIPE_SZ */
#include "replay_world.h"

#include <understudy/array.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAID "payment_intent.succeeded"
#define REFUNDED "charge.refunded"
#define CANCELED "payment_intent.canceled"

/* One delivery of a scenario: who sends it, when (seconds after T0), and
 * what it carries. Stripe: id is the event id, kind its type, entity the
 * intent, signed_at the t its signature carries. Standard Webhooks: id is
 * the webhook-id, kind the payment status, entity the payment id. The API:
 * id is the raw Idempotency-Key (NULL: none), kind the tenant. */
typedef struct {
    enum { VIA_STRIPE, VIA_STANDARD, VIA_API } via;
    double at, signed_at;
    const char *id, *kind, *entity, *order;
    long amount;
} delivery;

#define STRIPE(at, evt, type, pi, order, amount)                                       \
    {                                                                                  \
        VIA_STRIPE, at, at, evt, type, pi, order, amount                               \
    }
#define STRIPE_SIGNED(at, sign, evt, type, pi, order, amount)                          \
    {                                                                                  \
        VIA_STRIPE, at, sign, evt, type, pi, order, amount                             \
    }
#define STANDARD(at, msg, payment, status, order, amount)                              \
    {                                                                                  \
        VIA_STANDARD, at, at, msg, status, payment, order, amount                      \
    }
#define API(at, key, tenant, order, amount)                                            \
    {                                                                                  \
        VIA_API, at, at, key, tenant, NULL, order, amount                              \
    }

/* A scenario of the design: its deliveries, both verdict sequences, the
 * divergences (seq|summary|fields|follow_on), and queries on the run
 * database with the answer each must give. Its name is its cmocka test's. */
typedef struct {
    const char *name;
    delivery in[4];
    const char *legacy, *candidate, *divergences;
    struct {
        const char *sql, *want;
    } checks[3];
} scenario;

static const scenario scenarios[] = {
    /* 1. The same event delivered twice (the first 200 was lost). */
    {"test_identical_retry",
     {STRIPE(0, "evt_1", PAID, "pi_1", "o1", 4200),
      STRIPE(30, "evt_1", PAID, "pi_1", "o1", 4200)},
     "applied,duplicate",
     "applied,duplicate",
     "",
     {{0}}},
    /* 2. Redelivered with a new t and signature: dedup keys on the event. */
    {"test_redelivery_with_new_signature",
     {STRIPE_SIGNED(0, 0, "evt_1", PAID, "pi_1", "o1", 4200),
      STRIPE_SIGNED(3600, 3599, "evt_1", PAID, "pi_1", "o1", 4200)},
     "applied,duplicate",
     "applied,duplicate",
     "",
     {{0}}},
    /* 3. Standard Webhooks: same webhook-id, new timestamp and signature. */
    {"test_standard_webhooks_redelivery",
     {STANDARD(0, "msg_1", "pay_9", "paid", "o9", 2500),
      STANDARD(60, "msg_1", "pay_9", "paid", "o9", 2500)},
     "applied,duplicate",
     "applied,duplicate",
     "",
     {{0}}},
    /* 4. Replayed after the tolerance: expired, recorded, never decided. */
    {"test_expired_signature_is_not_fed",
     {STRIPE(0, "evt_1", PAID, "pi_1", "o1", 4200),
      STRIPE_SIGNED(900, 0, "evt_1", PAID, "pi_1", "o1", 4200)},
     "applied,not_fed:expired",
     "applied,not_fed:expired",
     "",
     {{0}}},
    /* 5. paid, refunded, then paid again with a new event id. */
    {"test_paid_after_refund_with_new_id",
     {STRIPE(0, "evt_1", PAID, "pi_1", "o1", 4200),
      STRIPE(600, "evt_2", REFUNDED, "pi_1", "o1", 4200),
      STRIPE(3600, "evt_3", PAID, "pi_1", "o1", 4200)},
     "applied,applied,applied",
     "applied,applied,rejected",
     "3|" PAID ": applied \xe2\x86\x92 rejected|[\"verdict\",\"state\"]|0",
     {{"SELECT l_state || ' ' || c_state FROM decisions WHERE seq = 3",
       "paid refunded"},
      /* The line shows both sides of each field: paid against refunded. */
      {"SELECT json_extract(line, '$.diff') FROM divergences",
       "[{\"field\":\"verdict\",\"legacy\":\"applied\",\"candidate\":"
       "\"rejected\"},{\"field\":\"state\",\"legacy\":\"paid\","
       "\"candidate\":\"refunded\"}]"}}},
    /* 6. The same, but the late paid keeps its original event id. */
    {"test_paid_after_refund_same_id",
     {STRIPE(0, "evt_1", PAID, "pi_1", "o1", 4200),
      STRIPE(600, "evt_2", REFUNDED, "pi_1", "o1", 4200),
      STRIPE(3600, "evt_1", PAID, "pi_1", "o1", 4200)},
     "applied,applied,duplicate",
     "applied,applied,duplicate",
     "",
     {{0}}},
    /* 7. refunded arriving before paid. */
    {"test_refund_before_paid",
     {STRIPE(0, "evt_6", REFUNDED, "pi_4", "o4", 990),
      STRIPE(1, "evt_7", PAID, "pi_4", "o4", 990)},
     "applied,applied",
     "rejected,applied",
     "1|" REFUNDED ": applied \xe2\x86\x92 rejected|[\"verdict\",\"state\"]|0",
     {{0}}},
    /* 8. cancelled, then paid. */
    {"test_paid_after_cancel",
     {STRIPE(0, "evt_1", CANCELED, "pi_1", "o1", 4200),
      STRIPE(60, "evt_2", PAID, "pi_1", "o1", 4200)},
     "applied,applied",
     "applied,rejected",
     "2|" PAID ": applied \xe2\x86\x92 rejected|[\"verdict\",\"state\"]|0",
     {{0}}},
    /* 9. A double click: two transactions, one order, 3 s apart. */
    {"test_double_click_is_flagged",
     {STRIPE(0, "evt_4", PAID, "pi_2", "o2", 1500),
      STRIPE(3, "evt_5", PAID, "pi_3", "o2", 1500)},
     "applied,applied",
     "applied,applied",
     "2|" PAID ": applied \xe2\x86\x92 applied|[\"flags\"]|0",
     {{"SELECT json_extract(c_flags, '$[0]') || ' / ' || c_reason FROM decisions"
       " WHERE seq = 2",
       "semantic_duplicate / same intent, amount and currency as stripe:pi_2 paid "
       "3 s earlier"}}},
    /* 10 and 11. Outside the window, or another amount: no flag. */
    {"test_no_flag_outside_window_or_other_amount",
     {STRIPE(0, "evt_1", PAID, "pi_1", "o1", 1500),
      STRIPE(1200, "evt_2", PAID, "pi_2", "o1", 1500),
      STRIPE(1201, "evt_3", PAID, "pi_3", "o1", 1600)},
     "applied,applied,applied",
     "applied,applied,applied",
     "",
     {{0}}},
    /* 12. Two parallel requests with the same key (the article's test). */
    {"test_parallel_same_key",
     {API(0, "k1", "t1", "o7", 1000), API(0.2, "k1", "t1", "o7", 1000)},
     "applied,applied",
     "applied,in_progress",
     "2|/payments: applied \xe2\x86\x92 in_progress|[\"verdict\",\"status\","
     "\"body/amount\",\"body/currency\",\"body/error\",\"body/order_id\","
     "\"body/payment_id\",\"state\"]|0",
     {/* The legacy executed twice: a second payment id. */
      {"SELECT json_extract(l_body, '$.payment_id') FROM decisions WHERE seq = 2",
       "pay_2"},
      {"SELECT c_status || ' ' || json_extract(c_headers, '$.retry-after') FROM"
       " decisions WHERE seq = 2",
       "409 1"},
      /* The legacy's body has no "error": its side of that entry has no key. */
      {"SELECT json_extract(line, '$.diff[4]') || json_extract(line, '$.diff[3]')"
       " FROM divergences",
       "{\"field\":\"body/error\",\"candidate\":\"in_progress\"}"
       "{\"field\":\"body/currency\",\"legacy\":\"eur\"}"}}},
    /* 13. A completed retry: both return the stored response. */
    {"test_completed_retry",
     {API(0, "k1", "t1", "o7", 1000), API(10, "k1", "t1", "o7", 1000)},
     "applied,duplicate",
     "applied,duplicate",
     "",
     {{"SELECT json_extract(l_body, '$.payment_id') || ' ' ||"
       " json_extract(c_body, '$.payment_id') || ' ' ||"
       " json_extract(c_headers, '$.idempotent-replayed') FROM decisions WHERE seq = 2",
       "pay_1 pay_1 true"}}},
    /* 14. The same key with another amount. */
    {"test_same_key_other_payload",
     {API(0, "k1", "t1", "o7", 1000), API(10, "k1", "t1", "o7", 2000)},
     "applied,duplicate",
     "applied,conflict",
     "2|/payments: duplicate \xe2\x86\x92 conflict|[\"verdict\",\"status\","
     "\"body/amount\",\"body/currency\",\"body/error\",\"body/order_id\","
     "\"body/payment_id\"]|0",
     {{0}}},
    /* 15. A retry after the key's TTL. */
    {"test_retry_after_ttl",
     {API(0, "k1", "t1", "o7", 1000), API(86401, "k1", "t1", "o7", 1000)},
     "applied,duplicate",
     "applied,applied",
     "2|/payments: duplicate \xe2\x86\x92 applied|[\"verdict\",\"body/payment_id\"]|0",
     {{0}}},
    /* 16 and 17. Two tenants are two operations; quoted and unquoted keys are one. */
    {"test_tenants_and_key_forms",
     {API(0, "k1", "t1", "o7", 1000), API(1, "k1", "t2", "o7", 1000),
      API(10, "\"k1\"", "t1", "o7", 1000)},
     "applied,applied,duplicate",
     "applied,applied,duplicate",
     "",
     {{0}}},
};

/* Records the scenario's deliveries, replays them and checks both verdict
 * sequences, the divergences and its queries. */
static void test_scenario(void **state)
{
    world *w = *state;
    const scenario *s = w->row;
    for (size_t i = 0; i < UST_ARRAY_SIZE(s->in) && s->in[i].order != NULL; i++) {
        const delivery *d = &s->in[i];
        if (d->via == VIA_STRIPE)
            world_stripe_signed(w, d->at, d->signed_at, d->id, d->kind, d->entity,
                                d->order, d->amount);
        else if (d->via == VIA_STANDARD)
            world_standard(w, d->at, d->id, d->entity, d->kind, d->order, d->amount);
        else
            world_api(w, d->at, d->id, d->kind, d->order, d->amount);
    }
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    ust_test_expect_str(world_verdicts(w, "legacy"), s->legacy);
    ust_test_expect_str(world_verdicts(w, "candidate"), s->candidate);
    ust_test_expect_str(world_divergences(w), s->divergences);
    for (size_t i = 0; i < UST_ARRAY_SIZE(s->checks) && s->checks[i].sql != NULL; i++)
        ust_test_expect_str(world_query(w, s->checks[i].sql), s->checks[i].want);
}

/* Under another config than the one it was recorded with, replay derives
 * each event again from the raw request: here the new config maps a refund
 * to "cancelled" (illegal after paid) and also compares Retry-After. */
static void test_other_config_derives_again(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 60, "evt_2", REFUNDED, "pi_1", "o1", 4200);
    world_api(w, 100, "k1", "t1", "o7", 1000);
    world_api(w, 100.2, "k1", "t1", "o7", 1000);
    world_record(w);
    char path[PATH_MAX];
    ust_test_source_path("tests/data/config.json", path);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    json_object_set_new(doc, "compare", json_pack("{s:[s]}", "headers", "Retry-After"));
    json_t *map = json_object_get(
        json_object_get(json_array_get(json_object_get(doc, "routes"), 0), "status"),
        "map");
    assert_int_equal(
        json_object_set_new(map, "charge.refunded", json_string("cancelled")), 0);
    char *text = json_dumps(doc, 0);
    json_decref(doc);
    ust_config *other = NULL;
    char *err = NULL;
    assert_int_equal(ust_config_parse(text, strlen(text), "other.json", &other, &err),
                     0);
    ust_free(text);
    assert_string_not_equal(other->hash, w->cfg->hash);
    ust_config *recorded = w->cfg;
    w->cfg = other;
    world_replay(w, "legacy", "candidate", NULL);
    w->cfg = recorded;
    ust_config_free(other);
    ust_test_expect_str(world_verdicts(w, "legacy"), "applied,applied,applied,applied");
    ust_test_expect_str(world_verdicts(w, "candidate"),
                        "applied,rejected,applied,in_progress");
    ust_test_expect_str(
        world_query(w, "SELECT l_state || ' ' || c_state FROM decisions WHERE seq = 2"),
        "cancelled paid");
    ust_test_expect_str(
        world_query(w, "SELECT fields FROM divergences WHERE seq = 4"),
        "[\"verdict\",\"status\",\"header:retry-after\",\"body/amount\","
        "\"body/currency\",\"body/error\",\"body/order_id\",\"body/payment_id\","
        "\"state\"]");
}

/* The same log, plugins and config give byte-identical divergence lines. */
static void test_replay_is_deterministic(void **state)
{
    world *w = *state;
    world_scenario_5(w);
    world_stripe(w, 3700, "evt_4", REFUNDED, "pi_1", "o1", 4200);
    world_api(w, 4000, "k1", "t1", "o7", 1000);
    world_api(w, 4000.1, "k1", "t1", "o7", 1000);
    world_record(w);
    char *first = NULL, *second = NULL;
    world_replay(w, "legacy", "candidate", &first);
    unlink(w->run_path);
    world_replay(w, "legacy", "candidate", &second);
    assert_true(strlen(first) > 0);
    assert_string_equal(first, second);
    /* The later divergence on pi_1 is a follow-on of the first. */
    assert_non_null(strstr(first, "\"seq\":4,"));
    ust_test_expect_str(
        world_query(w, "SELECT group_concat(follow_on) FROM divergences WHERE"
                       " entity = 'stripe:pi_1'"),
        "0,1");
    free(first);
    free(second);
}

/* Each divergence line, as the stream and the run database carry it, has
 * its "diff" right after "fields": one entry per name, the same names in
 * the same order. */
static void test_every_line_has_its_diff_after_fields(void **state)
{
    world *w = *state;
    world_scenario_5(w);
    world_double_click(w);
    world_api(w, 8000, "k1", "t1", "o7", 1000);
    world_api(w, 8000.1, "k1", "t1", "o7", 1000);
    world_api(w, 8010, "k1", "t1", "o7", 2000);
    world_api(w, 8020, NULL, "t1", "o8", 1000);
    world_record(w);
    char *stream = NULL;
    ust_replay_stats st = world_replay(w, "legacy", "candidate", &stream);
    assert_true(st.divergences >= 4);
    char *stored = world_query(w, "SELECT group_concat(line, char(10)) || char(10)"
                                  " FROM (SELECT line FROM divergences ORDER BY seq)");
    assert_string_equal(stream, stored);
    ust_free(stored);
    size_t lines = 0;
    for (char *line = strtok(stream, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        json_error_t jerr;
        json_t *doc = json_loads(line, 0, &jerr);
        assert_non_null(doc);
        json_t *fields = json_object_get(doc, "fields"),
               *diff = json_object_get(doc, "diff");
        char *names = json_dumps(fields, JSON_COMPACT);
        char *after = ust_sprintf("\"fields\":%s,\"diff\":[{\"field\":", names);
        if (strstr(line, after) == NULL)
            fail_msg("no diff right after fields in %s", line);
        ust_free(after);
        ust_free(names);
        assert_true(json_array_size(fields) > 0);
        assert_int_equal(json_array_size(diff), json_array_size(fields));
        for (size_t i = 0; i < json_array_size(diff); i++) {
            json_t *e = json_array_get(diff, i);
            assert_true(
                json_equal(json_object_get(e, "field"), json_array_get(fields, i)));
            assert_true(json_object_get(e, "legacy") ||
                        json_object_get(e, "candidate"));
        }
        json_decref(doc);
        lines++;
    }
    assert_int_equal(lines, st.divergences);
    free(stream);
}

/* The legacy against itself: the comparison adds no noise. */
static void test_legacy_against_legacy_has_no_divergence(void **state)
{
    world *w = *state;
    world_scenario_5(w);
    world_api(w, 4000, "k1", "t1", "o7", 1000);
    world_api(w, 4000.1, "k1", "t1", "o7", 1000);
    world_api(w, 4001, NULL, "t1", "o8", 1000);
    world_record(w);
    ust_replay_stats st = world_replay(w, "legacy", "legacy", NULL);
    assert_int_equal(st.fed, 6);
    assert_int_equal(st.divergences, 0);
}

/* A run is one experiment: resuming it with other plugins is refused. */
static void test_resume_with_other_plugin_is_refused(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, lp, NULL);
    o.commit_every = 0; /* the runner's own batches */
    ust_replay_stats st;
    char *err = NULL;
    assert_int_equal(ust_replay(&o, &st, &err), UST_EINVAL);
    assert_non_null(strstr(err, "use a new --run"));
    ust_free(err);
}

/* A run made before legacy_config_sha256 left out the places (run, log,
 * listen, admin_listen) recorded it with them in: the same config resumes
 * it, where it was refused as made with another config. */
static void test_a_run_recorded_with_the_places_resumes(void **state)
{
    world *w = *state;
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    assert_string_not_equal(w->cfg->legacy_hash_with_places, w->cfg->legacy_hash);
    char *sql = ust_sprintf("UPDATE meta SET value = '%s' WHERE key = "
                            "'legacy_config_sha256'",
                            w->cfg->legacy_hash_with_places);
    world_exec(w, sql);
    ust_free(sql);
    ust_replay_stats st = world_replay(w, "legacy", "candidate", NULL);
    assert_int_equal(st.events, 0);
}

/* Many events over many entities, so a kill lands mid-run. */
static void build_busy_log(world *w)
{
    char evt[32], pi[32], order[32], key[32];
    for (int i = 0; i < 240; i++) {
        snprintf(evt, sizeof(evt), "evt_%d", i);
        snprintf(pi, sizeof(pi), "pi_%d", i % 40);
        snprintf(order, sizeof(order), "o%d", i % 30);
        static const char *const types[] = {PAID, REFUNDED, PAID, CANCELED};
        if (i % 3 == 0) {
            snprintf(key, sizeof(key), "k%d", i % 25);
            world_api(w, i * 0.3, key, "t1", order, 100 + i % 7);
        } else {
            world_stripe(w, i * 0.3, i % 5 == 0 ? "evt_0" : evt, types[i % 4], pi,
                         order, 100 + i % 3);
        }
    }
    world_record(w);
}

static char *dump_run(world *w)
{
    return world_query(w, "SELECT group_concat(line, char(10)) FROM (SELECT line FROM"
                          " divergences ORDER BY seq) UNION ALL SELECT 1 LIMIT 1");
}

static char *dump_decisions(world *w)
{
    return world_query(w, "SELECT group_concat(quote(seq) || quote(l_verdict) ||"
                          " quote(l_status) || quote(l_state) || quote(l_body) ||"
                          " quote(l_headers) || quote(l_flags) || quote(c_verdict) ||"
                          " quote(c_status) || quote(c_state) || quote(c_body) ||"
                          " quote(c_headers) || quote(c_flags), char(10)) FROM"
                          " (SELECT * FROM decisions ORDER BY seq)");
}

/* Kills a replay of w (in a child) at a point decided by how: 0 = while it
 * is blocked writing divergence lines into a full pipe, after a commit and
 * with most of the log still to go; 1 and up = after a short while, which
 * may land inside a transaction. */
static void kill_a_replay(world *w, int how)
{
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    world_kill_a_replay(&o, how);
}

static void test_killed_replay_resumes_to_the_same_result(void **state)
{
    world *w = *state;
    build_busy_log(w);
    world_replay(w, "legacy", "candidate", NULL);
    char *want_div = dump_run(w), *want_dec = dump_decisions(w);
    assert_true(strlen(want_div) > 4096);

    for (int how = 0; how < 3; how++) {
        unlink(w->run_path);
        kill_a_replay(w, how);
        if (how == 0) {
            int at = world_cursor_at(w->run_path);
            if (at <= 0 || at >= 240)
                fail_msg("the kill should land mid-run, the cursor is at %d", at);
        }
        world_replay(w, "legacy", "candidate", NULL);
        char *div = dump_run(w), *dec = dump_decisions(w);
        assert_string_equal(div, want_div);
        assert_string_equal(dec, want_dec);
        ust_free(div);
        ust_free(dec);
    }
    ust_free(want_div);
    ust_free(want_dec);
}

/* A run resumed with nothing new to decide keeps its place: the next resume,
 * and one after more events arrived, go on as if never stopped. */
static void test_resuming_with_nothing_new_keeps_the_cursor(void **state)
{
    world *w = *state;
    build_busy_log(w);
    world_replay(w, "legacy", "candidate", NULL);
    char *want = world_query(w, "SELECT value FROM meta WHERE key = 'cursor_hash'");
    for (int i = 0; i < 2; i++) {
        ust_replay_stats st = world_replay(w, "legacy", "candidate", NULL);
        assert_int_equal(st.events, 0);
        char *hash = world_query(w, "SELECT value FROM meta WHERE key = 'cursor_hash'");
        assert_string_equal(hash, want);
        ust_free(hash);
    }
    ust_free(want);
}

/* A live runner's step fails half way (a real SQLite error, raised by a
 * trigger on the decisions table at one event): everything past the last
 * commit is rolled back, the runner's place, cached state and the isolated
 * candidate's own cache with it, and the next step decides those events
 * again: the run and its divergence stream end as an uninterrupted one. */
static void test_a_failed_step_is_decided_again(void **state)
{
    world *w = *state;
    build_busy_log(w);
    char *want_lines = NULL;
    world_replay(w, "legacy", "candidate", &want_lines);
    char *want_div = dump_run(w), *want_dec = dump_decisions(w);
    unlink(w->run_path);

    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    w->cfg->candidate.isolate = 1;
    size_t size = 0;
    char *lines = NULL;
    FILE *out = open_memstream(&lines, &size);
    ust_replay_opts o = world_opts(w, lp, cp, out);
    ust_runner *r = NULL;
    char *err = NULL;
    if (ust_runner_open(&o, &r, &err) != 0)
        fail_msg("open: %s", err);
    world_exec(w,
               "CREATE TRIGGER fail_once BEFORE INSERT ON decisions WHEN NEW.seq = 100"
               " BEGIN SELECT RAISE(ABORT, 'disk trouble'); END");
    ust_replay_stats st;
    assert_int_not_equal(ust_runner_step(r, &st, &err), 0);
    assert_non_null(strstr(err, "disk trouble"));
    ust_free(err);
    err = NULL;
    int at = world_cursor_at(w->run_path);
    if (at <= 0 || at >= 100)
        fail_msg("the failure should come after a commit, the cursor is at %d", at);
    world_exec(w, "DROP TRIGGER fail_once");
    if (ust_runner_step(r, &st, &err) != 0)
        fail_msg("step: %s", err);
    assert_int_equal(st.resumed_after, at);
    ust_runner_close(r);
    fclose(out);
    char *div = dump_run(w), *dec = dump_decisions(w);
    assert_string_equal(dec, want_dec);
    assert_string_equal(div, want_div);
    assert_string_equal(lines, want_lines);
    ust_free(div);
    ust_free(dec);
    free(lines);
    free(want_lines);
    ust_free(want_div);
    ust_free(want_dec);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
    static const struct CMUnitTest others[] = {
        T(test_other_config_derives_again),
        T(test_replay_is_deterministic),
        T(test_every_line_has_its_diff_after_fields),
        T(test_legacy_against_legacy_has_no_divergence),
        T(test_resume_with_other_plugin_is_refused),
        T(test_a_run_recorded_with_the_places_resumes),
        T(test_killed_replay_resumes_to_the_same_result),
        T(test_resuming_with_nothing_new_keeps_the_cursor),
        T(test_a_failed_step_is_decided_again),
    };
    /* The scenarios first, one test each under its row's name. */
    struct CMUnitTest tests[UST_ARRAY_SIZE(scenarios) + UST_ARRAY_SIZE(others)];
    for (size_t i = 0; i < UST_ARRAY_SIZE(scenarios); i++) {
        tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
            test_scenario, world_setup, world_teardown, (void *)&scenarios[i]);
        tests[i].name = scenarios[i].name;
    }
    memcpy(&tests[UST_ARRAY_SIZE(scenarios)], others, sizeof(others));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
