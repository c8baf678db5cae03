/* The example service (src/plugins/examples/service.py) decides as the C
 * candidate, over HTTP and its own SQLite database: every scenario is
 * replayed with the C plugins, then each event the runner fed is sent to a
 * real service on 127.0.0.1 in seq order, as the url kind sends it (the
 * original method, target, headers and body, Understudy-Seq and
 * Understudy-Received-At), and its answer, read as a decision by answer.h,
 * must be the C candidate's field for field and give the same divergence
 * against the legacy, seq for seq. */
#include "example_service.h"
#include "replay_world.h"

#include "runner/decision_row.h"

#include <understudy/answer.h>
#include <understudy/compare.h>
#include <understudy/http_client.h>

/* Sends rec's request as the url kind does (the original headers as
 * forwarded, then Understudy-Seq and Understudy-Received-At) and waits for
 * the answer, a failure failing the test. */
static void exchange(ust_http_client *client, int port, const ust_log_record *rec,
                     ust_http_result *out)
{
    const ust_request *r = &rec->req;
    char host[32], seq[24], when[32];
    snprintf(host, sizeof(host), "127.0.0.1:%d", port);
    snprintf(seq, sizeof(seq), "%lld", (long long)rec->seq);
    ust_time_format(r->received_at_us, when);
    ust_header *fwd = NULL;
    size_t n = 0;
    assert_int_equal(ust_http_forward_headers(r, host, &fwd, &n), 0);
    ust_header *h = ust_calloc(n + 2, sizeof(*h));
    assert_non_null(h);
    if (n > 0)
        memcpy(h, fwd, n * sizeof(*h));
    h[n++] = (ust_header){"Understudy-Seq", seq};
    h[n++] = (ust_header){"Understudy-Received-At", when};
    char *url = ust_sprintf("http://%s%s", host, r->target);
    ust_http_call call = {r->method, url, h, n, r->body, r->body_len, 30000};
    assert_int_equal(ust_http_client_send(client, &call, out), 0);
    if (out->failure != 0)
        fail_msg("seq %lld: %s", (long long)rec->seq, out->cause);
    ust_free(url);
    ust_free(h);
    ust_free(fwd);
}

static int same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* What differs between the service's decision and the C candidate's, or
 * NULL; entity is the run's (the plugins' own, else the event's identity). */
static char *difference(ust_decision *svc, const ust_decision *c,
                        const char *run_entity, const char *identity)
{
    if (svc->verdict != c->verdict)
        return ust_sprintf("verdict %s, the C candidate's %s (%s)",
                           ust_verdict_name(svc->verdict), ust_verdict_name(c->verdict),
                           svc->error ? svc->error : "");
    if (svc->http_status != c->http_status)
        return ust_sprintf("status %d, not %d", svc->http_status, c->http_status);
    if (!same_text(svc->body, c->body))
        return ust_sprintf("body %s, not %s", svc->body ? svc->body : "(none)",
                           c->body ? c->body : "(none)");
    /* The service says what its body is; the C candidate's answers have no
     * Content-Type, and the comparison names the headers it compares. */
    if (svc->headers != NULL)
        json_object_del(svc->headers, "content-type");
    if (svc->headers != NULL && json_object_size(svc->headers) == 0) {
        json_decref(svc->headers);
        svc->headers = NULL;
    }
    if (!((svc->headers == NULL && c->headers == NULL) ||
          (svc->headers != NULL && c->headers != NULL &&
           json_equal(svc->headers, c->headers)))) {
        char *s = svc->headers ? json_dumps(svc->headers, JSON_COMPACT) : NULL;
        char *out = ust_sprintf("headers %s", s ? s : "(none)");
        ust_free(s);
        return out;
    }
    const char *entity = svc->entity ? svc->entity : identity;
    if (!same_text(entity, run_entity))
        return ust_sprintf("entity %s, not %s", entity ? entity : "(none)",
                           run_entity ? run_entity : "(none)");
    if (!same_text(svc->state_before, c->state_before) ||
        !same_text(svc->state_after, c->state_after))
        return ust_sprintf("states %s -> %s",
                           svc->state_before ? svc->state_before : "-",
                           svc->state_after ? svc->state_after : "-");
    int flags_equal = svc->n_flags == c->n_flags;
    for (size_t i = 0; flags_equal && i < c->n_flags; i++)
        flags_equal = strcmp(svc->flags[i], c->flags[i]) == 0;
    if (!flags_equal)
        return ust_sprintf("%zu flags, not %zu", svc->n_flags, c->n_flags);
    if (!same_text(svc->reason, c->reason))
        return ust_sprintf("reason \"%s\", not \"%s\"", svc->reason ? svc->reason : "",
                           c->reason ? c->reason : "");
    if (svc->error != NULL || c->error != NULL)
        return ust_sprintf("error %s", svc->error ? svc->error : c->error);
    return NULL;
}

/* The divergence the run would record between the legacy and the service
 * must be the one it recorded with the C candidate (or none for both). */
static char *divergence_difference(world *w, sqlite3_stmt *div,
                                   const ust_log_record *rec, const ust_decision *l,
                                   const ust_decision *svc)
{
    json_t *fields = ust_compare_decisions(w->cfg, l, svc);
    assert_non_null(fields);
    char *cls =
        ust_divergence_class(rec->event_type ? rec->event_type : rec->route, l, svc);
    sqlite3_reset(div);
    sqlite3_bind_int64(div, 1, rec->seq);
    char *out = NULL;
    if (sqlite3_step(div) == SQLITE_ROW) {
        json_error_t jerr;
        json_t *want = json_loads((const char *)sqlite3_column_text(div, 1), 0, &jerr);
        if (strcmp((const char *)sqlite3_column_text(div, 0), cls) != 0 ||
            !json_equal(want, fields))
            out =
                ust_sprintf("divergence %s, not %s", cls, sqlite3_column_text(div, 0));
        json_decref(want);
    } else if (json_array_size(fields) > 0) {
        out = ust_sprintf("a divergence %s the C candidate did not give", cls);
    }
    json_decref(fields);
    ust_free(cls);
    return out;
}

/* Sends every event of w's log the run fed, in seq order, to s; after
 * kill_after events (0: never) the service is SIGKILLed and started again
 * on its database. Fails naming each seq whose answer differs; returns how
 * many were sent. */
static int64_t send_all_events(world *w, service *s, int64_t kill_after)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(w->run_path, &db, SQLITE_OPEN_READONLY, NULL),
                     SQLITE_OK);
    sqlite3_stmt *row = NULL, *div = NULL;
    assert_int_equal(sqlite3_prepare_v2(
                         db,
                         "SELECT fed, entity, " UST__DECISION_COLUMN_NAMES_AS(
                             l_) ", " UST__DECISION_COLUMN_NAMES_AS(c_) " FROM "
                                                                        "decisions "
                                                                        "WHERE seq = ?",
                         -1, &row, NULL),
                     SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT class, fields FROM divergences WHERE seq = ?",
                           -1, &div, NULL),
        SQLITE_OK);
    ust_log *log = NULL;
    ust_log_cursor *cur = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, 0, &log, &err), 0);
    assert_int_equal(ust_log_cursor_open(log, 0, &cur, &err), 0);
    ust_http_client *client = NULL;
    assert_int_equal(ust_http_client_new(&client, &err), 0);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec)); /* the cursor clears it first */
    int64_t sent = 0, wrong = 0;
    char *report = ust_strdup("");
    while (ust_log_cursor_next(cur, &rec, &err) == 1) {
        sqlite3_reset(row);
        sqlite3_bind_int64(row, 1, rec.seq);
        assert_int_equal(sqlite3_step(row), SQLITE_ROW);
        if (sqlite3_column_int(row, 0) == 0) { /* never fed: never sent */
            ust_log_record_clear(&rec);
            continue;
        }
        const char *entity = (const char *)sqlite3_column_text(row, 1);
        ust_decision l, c, svc;
        assert_int_equal(ust__decision_read(row, 2, entity, &l), 0);
        assert_int_equal(ust__decision_read(row, 2 + UST__DECISION_COLUMNS, entity, &c),
                         0);
        ust_http_result res;
        exchange(client, s->port, &rec, &res);
        ust_http_answer a = {res.status, res.headers, res.n_headers, res.body,
                             res.body_len};
        ust_verdict_map none = {0};
        assert_int_equal(ust_http_answer_decide(&a, &none, &svc), 0);
        ust_http_result_clear(&res);
        char *why = divergence_difference(w, div, &rec, &l, &svc);
        if (why == NULL)
            why = difference(&svc, &c, entity, rec.identity);
        if (why != NULL && wrong++ < 10) {
            char *more = ust_sprintf("%s\n  seq %lld %s: %s", report,
                                     (long long)rec.seq, rec.req.target, why);
            ust_free(report);
            report = more;
        }
        ust_free(why);
        ust_decision_clear(&l);
        ust_decision_clear(&c);
        ust_decision_clear(&svc);
        ust_log_record_clear(&rec);
        if (++sent == kill_after) {
            example_service_stop(s, SIGKILL);
            example_service_start(s); /* on another port: a client of its own */
            ust_http_client_free(client);
            assert_int_equal(ust_http_client_new(&client, &err), 0);
        }
    }
    ust_http_client_free(client);
    ust_log_cursor_close(cur);
    ust_log_close(log);
    sqlite3_finalize(row);
    sqlite3_finalize(div);
    sqlite3_close(db);
    if (wrong > 0)
        fail_msg("%lld of %lld answers are not the C candidate's:%s", (long long)wrong,
                 (long long)sent, report);
    ust_free(report);
    return sent;
}

/* Every scenario in one log, replayed with the C legacy and candidate. */
static ust_replay_stats replay_scenarios(world *w)
{
    world_record_scenarios(w);
    char lp[PATH_MAX], cp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.commit_every = 0;
    ust_replay_stats st = world_run(&o);
    assert_true(st.not_fed > 0); /* the scenarios' bad signatures: never sent */
    return st;
}

/* One POST of body to path on s, with headers h (n of them); the answer in
 * *out. */
static void post(const service *s, const char *path, const ust_header *h, size_t n,
                 const char *body, ust_http_result *out)
{
    ust_http_client *client = NULL;
    char *err = NULL;
    assert_int_equal(ust_http_client_new(&client, &err), 0);
    char *url = ust_sprintf("http://127.0.0.1:%d%s", s->port, path);
    ust_http_call call = {"POST",       url,  h, n, (const unsigned char *)body,
                          strlen(body), 30000};
    assert_int_equal(ust_http_client_send(client, &call, out), 0);
    assert_int_equal(out->failure, 0);
    ust_free(url);
    ust_http_client_free(client);
}

static void post_reset(const service *s)
{
    ust_http_result r;
    post(s, "/reset", NULL, 0, "", &r);
    assert_int_equal(r.status, 200);
    ust_http_result_clear(&r);
}

/* A service over a database of its own in w's folder. */
static void start_in(world *w, service *s)
{
    snprintf(s->db, sizeof(s->db), "%s/service.db", w->dir);
    example_service_start(s);
}

/* Every scenario replayed with the C plugins, then sent to a service
 * over a database of its own in the world's folder: *s running, the number of events
 * fed returned. */
static int64_t replay_and_start(world *w, service *s)
{
    ust_replay_stats st = replay_scenarios(w);
    start_in(w, s);
    return st.fed;
}

/* Every scenario: the service's answers are the C candidate's decisions,
 * seq for seq; after POST /reset, the same events again get the same
 * answers (without it, every delivery would be a duplicate). */
static void test_every_scenario_answers_as_the_c_candidate(void **state)
{
    service s;
    int64_t fed = replay_and_start(*state, &s);
    assert_int_equal(send_all_events(*state, &s, 0), fed);
    post_reset(&s);
    assert_int_equal(send_all_events(*state, &s, 0), fed);
    example_service_stop(&s, SIGTERM);
}

/* Its state is in its own database: SIGKILLed half way and started again
 * on the same file, it goes on deciding as the C candidate. */
static void test_a_service_killed_and_restarted_decides_the_same(void **state)
{
    service s;
    int64_t fed = replay_and_start(*state, &s);
    assert_int_equal(send_all_events(*state, &s, fed / 2), fed);
    example_service_stop(&s, SIGTERM);
}

/* Never the wall clock: a request without Understudy-Received-At (or
 * Understudy-Seq) is refused 400 saying so, and leaves no trace; the same
 * delivery with them is then new, applied. */
static void test_without_event_time_it_refuses_to_decide(void **state)
{
    service s;
    start_in(*state, &s);
    const char *body = "{\"id\":\"evt_t\",\"type\":\"payment_intent.succeeded\","
                       "\"data\":{\"object\":{\"id\":\"pi_t\"}}}";
    const ust_header h[] = {{"Understudy-Seq", "7"},
                            {"Understudy-Received-At", "2026-11-29T10:00:00.000001Z"}};
    ust_http_result r;
    post(&s, "/webhooks/stripe", h, 1, body, &r); /* the seq alone */
    assert_int_equal(r.status, 400);
    char *text = ust_strndup((const char *)r.body, r.body_len);
    assert_non_null(strstr(text, "\"error\":\"understudy_headers_required\""));
    ust_free(text);
    ust_http_result_clear(&r);
    post(&s, "/webhooks/stripe", h + 1, 1, body, &r); /* the time alone */
    assert_int_equal(r.status, 400);
    ust_http_result_clear(&r);
    post(&s, "/webhooks/stripe", h, 2, body, &r);
    assert_int_equal(r.status, 200);
    ust_http_answer a = {r.status, r.headers, r.n_headers, r.body, r.body_len};
    ust_decision d;
    assert_int_equal(ust_http_answer_decide(&a, NULL, &d), 0);
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    assert_string_equal(d.entity, "stripe:pi_t");
    assert_string_equal(d.state_after, "paid");
    ust_decision_clear(&d);
    ust_http_result_clear(&r);
    example_service_stop(&s, SIGTERM);
}

/* r1 and r2 are one answer: status, headers in order, body byte for byte. */
static void expect_same_answer(const ust_http_result *r1, const ust_http_result *r2)
{
    assert_int_equal(r1->status, r2->status);
    assert_int_equal(r1->n_headers, r2->n_headers);
    for (size_t i = 0; i < r1->n_headers; i++) {
        assert_string_equal(r1->headers[i].name, r2->headers[i].name);
        assert_string_equal(r1->headers[i].value, r2->headers[i].value);
    }
    assert_int_equal(r1->body_len, r2->body_len);
    assert_memory_equal(r1->body, r2->body, r1->body_len);
}

/* How many rows the service's table holds, as text. */
static void expect_rows(const service *s, const char *table, const char *want)
{
    char sql[64];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    char *got = world_query_at(s->db, sql);
    if (strcmp(got, want) != 0)
        fail_msg("%s: %s rows, not %s", table, got, want);
    ust_free(got);
}

/* Issue 24: a request sent again under its Understudy-Seq (a url plugin's
 * resend_unknown, after a kill left its outcome unknown) gets the first
 * answer byte for byte and is decided once: a webhook is not a duplicate
 * of itself, an api call is not replayed with Idempotent-Replayed; its
 * database holds one delivery, one execution. The same delivery under
 * another seq is a duplicate as before; another request under a seq
 * already decided is refused 422 with its cause and changes nothing. */
static void test_a_seq_sent_again_is_answered_as_the_first_time(void **state)
{
    service s;
    start_in(*state, &s);
    const char *hook = "{\"id\":\"evt_s\",\"type\":\"payment_intent.succeeded\","
                       "\"data\":{\"object\":{\"id\":\"pi_s\",\"amount\":100,"
                       "\"currency\":\"eur\",\"metadata\":{\"order_id\":\"o\"}}}}";
    const char *pay = "{\"amount\":100,\"currency\":\"EUR\",\"order_id\":\"o\"}";
    ust_header h[] = {{"Understudy-Seq", "7"},
                      {"Understudy-Received-At", "2026-11-29T10:00:00.000001Z"},
                      {"Idempotency-Key", "k-1"},
                      {"X-Tenant-Id", "t"}};
    ust_http_result r1, r2;
    post(&s, "/webhooks/stripe", h, 2, hook, &r1);
    post(&s, "/webhooks/stripe", h, 2, hook, &r2);
    expect_same_answer(&r1, &r2);
    ust_http_answer a = {r2.status, r2.headers, r2.n_headers, r2.body, r2.body_len};
    ust_decision d;
    assert_int_equal(ust_http_answer_decide(&a, NULL, &d), 0);
    assert_int_equal(d.verdict, UST_VERDICT_APPLIED);
    ust_decision_clear(&d);
    ust_http_result_clear(&r1);
    ust_http_result_clear(&r2);
    h[0].value = "8";
    post(&s, "/payments", h, 4, pay, &r1);
    post(&s, "/payments", h, 4, pay, &r2);
    expect_same_answer(&r1, &r2);
    assert_int_equal(r2.status, 201);
    ust_http_result_clear(&r1);
    ust_http_result_clear(&r2);
    h[0].value = "9"; /* the same delivery, another event: a duplicate */
    post(&s, "/webhooks/stripe", h, 2, hook, &r1);
    a = (ust_http_answer){r1.status, r1.headers, r1.n_headers, r1.body, r1.body_len};
    assert_int_equal(ust_http_answer_decide(&a, NULL, &d), 0);
    assert_int_equal(d.verdict, UST_VERDICT_DUPLICATE);
    ust_decision_clear(&d);
    ust_http_result_clear(&r1);
    h[0].value = "8"; /* another request under a seq already decided */
    post(&s, "/payments", h, 4, "{\"amount\":200,\"currency\":\"EUR\"}", &r1);
    assert_int_equal(r1.status, 422);
    char *text = ust_strndup((const char *)r1.body, r1.body_len);
    assert_non_null(strstr(text, "\"error\":\"understudy_seq_reused\""));
    assert_non_null(strstr(text, "Understudy-Seq 8 was decided for another request"));
    ust_free(text);
    ust_http_result_clear(&r1);
    example_service_stop(&s, SIGTERM);
    expect_rows(&s, "deliveries", "1");
    expect_rows(&s, "idempotency_keys", "1");
    expect_rows(&s, "executions", "1");
    expect_rows(&s, "answers", "3");
    /* POST /reset forgets the answers too: the seqs of the next run are new. */
    example_service_start(&s);
    post_reset(&s);
    example_service_stop(&s, SIGTERM);
    expect_rows(&s, "answers", "0");
}

/* The example service as a url candidate (the url kind: each event sent
 * once, with POST /reset before seq 0): the replay's divergences are the C
 * candidate's, seq for seq, and none of its decisions is an error. */
static void test_a_url_candidate_gives_the_c_candidates_divergences(void **state)
{
    world *w = *state;
    service s;
    int64_t fed = replay_and_start(w, &s);
    char *c_run = world_divergences(w);
    assert_true(strlen(c_run) > 0);
    /* Left full on purpose: the first service's state must be emptied by
     * the kind's reset, or every delivery would be a duplicate. */
    assert_int_equal(send_all_events(w, &s, 0), fed);
    char *so = w->cfg->candidate.path;
    w->cfg->candidate.path = NULL;
    w->cfg->candidate.url = ust_sprintf("http://127.0.0.1:%d", s.port);
    w->cfg->candidate.reset.method = ust_strdup("POST");
    w->cfg->candidate.reset.url = ust_sprintf("http://127.0.0.1:%d/reset", s.port);
    w->cfg->candidate.timeout_ms = 30000;
    unlink(w->run_path);
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, NULL, NULL);
    o.commit_every = 0;
    ust_replay_stats st = world_run(&o);
    w->cfg->candidate.path = so;
    assert_int_equal(st.fed, fed);
    world_expect_same_run_without_errors(w, c_run);
    ust_free(c_run);
    example_service_stop(&s, SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_scenario_answers_as_the_c_candidate,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_service_killed_and_restarted_decides_the_same, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(test_without_event_time_it_refuses_to_decide,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_url_candidate_gives_the_c_candidates_divergences, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_seq_sent_again_is_answered_as_the_first_time, world_setup,
            world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
