/* A "recorded" legacy: production's answers kept in the log decide for the
 * legacy, read as every HTTP answer is (Understudy-* headers, the verdicts
 * map, the status), replayed against the reference C candidate. */
#include "replay_world.h"

#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/report.h>

#define PAID "payment_intent.succeeded"

/* Four payments, each its own entity: the candidate applies every one. */
static void four_payments(world *w)
{
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 10, "evt_2", PAID, "pi_2", "o2", 4200);
    world_stripe(w, 20, "evt_3", PAID, "pi_3", "o3", 4200);
    world_stripe(w, 30, "evt_4", PAID, "pi_4", "o4", 4200);
}

static void add(ust_request *held, const char *name, const char *value)
{
    if (value != NULL && value[0] != '\0')
        assert_int_equal(ust_request_add_header(held, name, value), 0);
}

/* An answer of status with these headers (NULL-terminated name, value
 * pairs) and body; the headers are built through a request's helper. */
static ust_response answer(int status, const char *body, const char *const *headers)
{
    ust_request held;
    memset(&held, 0, sizeof(held));
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i += 2)
        add(&held, headers[i], headers[i + 1]);
    ust_response a = {status, held.headers, held.n_headers, NULL, 0};
    if (body != NULL) {
        a.body = (unsigned char *)ust_strdup(body);
        a.body_len = strlen(body);
    }
    return a;
}

/* Appends w's requests with the answers (n of them, status 0: none). */
static void record_with(world *w, const ust_response *answers)
{
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    if (ust_log_append_exchanges(log, w->cfg, w->reqs, answers, w->n, NULL, NULL,
                                 &err) != 0)
        fail_msg("append: %s", err);
    ust_log_close(log);
}

/* Replays w with a recorded legacy (verdicts: a JSON object or NULL) and the
 * reference candidate. */
static void replay_recorded(world *w, const char *verdicts)
{
    /* as a config with "recorded": true has it: no path, no exec */
    w->cfg->legacy.recorded = 1;
    ust_free(w->cfg->legacy.path);
    w->cfg->legacy.path = NULL;
    json_decref(w->cfg->legacy.verdicts);
    w->cfg->legacy.verdicts = verdicts ? json_loads(verdicts, 0, NULL) : NULL;
    char cp[PATH_MAX];
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, NULL, cp, NULL);
    world_run(&o);
}

static char *q(world *w, const char *sql)
{
    return world_query(w, sql);
}

/* The candidate's decision on seq 1, as an answer saying the same: what a
 * production that agreed with the candidate would have answered. */
static ust_response candidate_as_answer(world *w)
{
    char *status = q(w, "SELECT c_status FROM decisions WHERE seq = 1");
    char *body = q(w, "SELECT c_body FROM decisions WHERE seq = 1");
    char *verdict = q(w, "SELECT c_verdict FROM decisions WHERE seq = 1");
    char *entity = q(w, "SELECT entity FROM decisions WHERE seq = 1");
    char *before = q(w, "SELECT c_state_before FROM decisions WHERE seq = 1");
    char *after = q(w, "SELECT c_state FROM decisions WHERE seq = 1");
    char *flags = q(w, "SELECT group_concat(value, ',') FROM decisions,"
                       " json_each(coalesce(c_flags, '[]')) WHERE seq = 1");
    char *reason = q(w, "SELECT c_reason FROM decisions WHERE seq = 1");
    const char *headers[] = {"Understudy-Verdict",
                             verdict,
                             "Understudy-Entity",
                             entity,
                             "Understudy-State-Before",
                             before,
                             "Understudy-State",
                             after,
                             "Understudy-Flags",
                             flags,
                             "Understudy-Reason",
                             reason,
                             "Content-Type",
                             "application/json",
                             NULL};
    ust_response a = answer(atoi(status), body[0] ? body : NULL, headers);
    assert_int_not_equal(a.status, 0);
    char *v[] = {status, body, verdict, entity, before, after, flags, reason};
    for (size_t i = 0; i < UST_ARRAY_SIZE(v); i++)
        ust_free(v[i]);
    /* The candidate's own headers too (lower-case names: as good as any). */
    char *cands = q(w, "SELECT coalesce(c_headers, '{}') FROM decisions WHERE seq = 1");
    json_t *h = json_loads(cands, 0, NULL);
    ust_free(cands);
    const char *k;
    json_t *val;
    ust_request held = {.headers = a.headers, .n_headers = a.n_headers};
    json_object_foreach(h, k, val) add(&held, k, json_string_value(val));
    a.headers = held.headers;
    a.n_headers = held.n_headers;
    json_decref(h);
    return a;
}

static void test_a_recorded_legacy_decides_with_the_answers(void **state)
{
    (void)state;
    /* What the candidate decides on seq 1, from a first run. */
    world *first = world_new();
    four_payments(first);
    world_record(first);
    world_replay(first, "legacy", "candidate", NULL);
    ust_test_expect_str(world_verdicts(first, "candidate"),
                        "applied,applied,applied,applied");
    ust_response answers[4];
    answers[0] = candidate_as_answer(first);
    world_free(first);

    world *w = world_new();
    four_payments(w);
    /* By the status through the plugin's map, by the status's default, and
     * no answer at all. */
    answers[1] = answer(409, "{\"error\":\"busy\"}", NULL);
    const char *json[] = {"Content-Type", "application/json", NULL};
    answers[2] = answer(422, "{\"error\":\"mismatch\"}", json);
    memset(&answers[3], 0, sizeof(answers[3]));
    record_with(w, answers);
    for (int i = 0; i < 4; i++)
        ust_response_clear(&answers[i]);
    replay_recorded(w, "{\"409\": \"duplicate\"}");

    ust_test_expect_str(world_verdicts(w, "legacy"),
                        "applied,duplicate,conflict,error");
    ust_test_expect_str(world_verdicts(w, "candidate"),
                        "applied,applied,applied,applied");
    ust_test_expect_str(q(w, "SELECT group_concat(l_status, ',') FROM (SELECT * FROM"
                             " decisions WHERE seq < 4 ORDER BY seq)"),
                        "200,409,422");
    ust_test_expect_str(q(w, "SELECT l_error FROM decisions WHERE seq = 4"),
                        "no recorded answer for this event");
    ust_test_expect_str(q(w, "SELECT l_body FROM decisions WHERE seq = 3"),
                        "{\"error\":\"mismatch\"}");
    /* An answer that says what the candidate says does not diverge; the
     * others do, each by its verdict. */
    ust_test_expect_str(
        q(w, "SELECT group_concat(seq, ',') FROM (SELECT seq FROM divergences"
             " ORDER BY seq)"),
        "2,3,4");
    ust_test_expect_str(
        q(w, "SELECT count(*) FROM divergences WHERE fields LIKE '%verdict%'"), "3");
    /* Its identity: the name and the hash of its configuration. */
    char *meta = q(w, "SELECT group_concat(key || '=' || value, ';') FROM meta");
    if (strstr(meta, "recorded") == NULL)
        fail_msg("run meta does not name the recorded legacy: %s", meta);
    ust_free(meta);
    world_free(w);
}

/* A config's start with one route, before its "plugins". */
#define ROUTE                                                                          \
    "{\"routes\": [{\"path\": \"/payments\", \"kind\": \"api\", \"provider\": "        \
    "\"api\"}], "

/* Decided straight through the plugin host: a recorded legacy opens
 * without a file, answers an event without an answer with an error, and
 * is refused as a candidate by the config. */
static void test_the_recorded_kind_and_its_config(void **state)
{
    (void)state;
    ust_plugin_config pc = {.recorded = 1, .config = NULL};
    ust_plugin *p = NULL;
    char *err = NULL;
    if (ust_plugin_open(&pc, NULL, "legacy", 0, NULL, &p, &err) != 0)
        fail_msg("open: %s", err);
    assert_string_equal(ust_plugin_name(p), "recorded");
    assert_int_equal(strlen(ust_plugin_file_sha256(p)), UST_SHA256_HEX_LEN);
    ust_event ev;
    memset(&ev, 0, sizeof(ev));
    ust_request req;
    memset(&req, 0, sizeof(req));
    ust_decision d;
    ust_plugin_decide(p, &ev, &req, &d);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_string_equal(d.error, "no recorded answer for this event");
    ust_decision_clear(&d);
    const char *flags[] = {"Understudy-Verdict", "rejected", "Understudy-Flags",
                           "late, replayed", NULL};
    ust_response a = answer(200, "{}", flags);
    ust_plugin_decide_answered(p, &ev, &req, &a, &d);
    assert_int_equal(d.verdict, UST_VERDICT_REJECTED);
    assert_int_equal(d.n_flags, 2);
    ust_decision_clear(&d);
    ust_response_clear(&a);
    a = answer(503, NULL, NULL);
    ust_plugin_decide_answered(p, &ev, &req, &a, &d);
    assert_int_equal(d.verdict, UST_VERDICT_ERROR);
    assert_non_null(strstr(d.error, "503"));
    ust_decision_clear(&d);
    ust_response_clear(&a);
    char first_id[UST_SHA256_HEX_LEN + 1];
    memcpy(first_id, ust_plugin_file_sha256(p), sizeof(first_id));
    ust_plugin_unload(p);

    /* A library named on the command line (--legacy SO) takes its place. */
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    assert_int_equal(ust_plugin_open(&pc, lp, "legacy", 0, NULL, &p, &err), 0);
    assert_string_not_equal(ust_plugin_name(p), "recorded");
    ust_plugin_unload(p);

    /* Another verdicts map is another legacy; a bad one is named. */
    pc.verdicts = json_pack("{s:s}", "404", "invalid");
    assert_int_equal(ust_plugin_open(&pc, NULL, "legacy", 0, NULL, &p, &err), 0);
    assert_string_not_equal(ust_plugin_file_sha256(p), first_id);
    ust_plugin_unload(p);
    json_decref(pc.verdicts);
    pc.verdicts = json_pack("{s:s}", "404", "maybe");
    assert_int_not_equal(ust_plugin_open(&pc, NULL, "legacy", 0, NULL, &p, &err), 0);
    assert_non_null(strstr(err, "plugins.legacy.verdicts.404"));
    ust_free(err);
    err = NULL;
    json_decref(pc.verdicts);

    static const struct {
        const char *plugins, *want;
    } bad[] = {
        {"{\"legacy\": {\"recorded\": true}, \"candidate\": {\"recorded\": true}}",
         "plugins.candidate.recorded: expected no \"recorded\" here"},
        {"{\"legacy\": {\"recorded\": true, \"path\": \"x.so\"}}", "exactly one of"},
        {"{\"legacy\": {\"recorded\": false}}", "exactly one of"},
        {"{\"legacy\": {\"recorded\": 1}}", "plugins.legacy.recorded: expected true"},
        {"{\"legacy\": {\"recorded\": true, \"verdicts\": [1]}}",
         "plugins.legacy.verdicts: expected an object"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad); i++) {
        char *text = ust_sprintf(ROUTE "\"plugins\": %s}", bad[i].plugins);
        ust_config *cfg = NULL;
        assert_int_not_equal(ust_config_parse(text, strlen(text), "c.json", &cfg, &err),
                             0);
        if (strstr(err, bad[i].want) == NULL)
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i].plugins, err, bad[i].want);
        ust_free(err);
        err = NULL;
        ust_free(text);
    }
    ust_config *cfg = NULL;
    const char *good = ROUTE "\"plugins\": {\"legacy\": {\"recorded\": true,"
                             " \"verdicts\": {\"404\": \"invalid\"}}}}";
    assert_int_equal(ust_config_parse(good, strlen(good), "c.json", &cfg, &err), 0);
    assert_int_equal(cfg->legacy.recorded, 1);
    assert_non_null(cfg->legacy.verdicts);
    ust_config_free(cfg);
}

/* A world for the command-line tests: the path of the source tree's config
 * in config, those of the capture they import (in) and of the one they
 * export (out) in its directory. */
static world *capture_world(char config[PATH_MAX], char in[PATH_MAX],
                            char out[PATH_MAX])
{
    world *w = world_new();
    ust_test_source_path("tests/data/config.json", config);
    snprintf(in, PATH_MAX, "%s/in.jsonl", w->dir);
    snprintf(out, PATH_MAX, "%s/out.jsonl", w->dir);
    return w;
}

/* `log import` of the capture at path into the log at log under cfg. */
static void import_capture(world *w, const char *cfg, const char *log, const char *path)
{
    assert_int_equal(ust_test_cli(w->dir, NULL,
                                  "log import --quiet --config '%s' --log '%s' '%s'",
                                  cfg, log, path),
                     0);
}

/* log export --redact masks a recorded answer as it masks the request: the
 * headers the config's "redact" names and the fields of a JSON body. */
static void test_export_redact_masks_the_answer(void **state)
{
    (void)state;
    char src[PATH_MAX], in[PATH_MAX], out[PATH_MAX];
    world *w = capture_world(src, in, out);
    char cfg[PATH_MAX];
    snprintf(cfg, sizeof(cfg), "%s/config.json", w->dir);
    json_t *doc = json_load_file(src, 0, NULL);
    assert_non_null(doc);
    json_object_set_new(doc, "redact",
                        json_pack("[s,s]", "receipt_email", "x-customer"));
    assert_int_equal(json_dump_file(doc, cfg, 0), 0);
    json_decref(doc);
    ust_test_write_file(
        in, "{\"v\":1,\"received_at\":\"2026-11-29T10:00:00Z\",\"method\":\"POST\","
            "\"target\":\"/payments\",\"headers\":[],\"body\":\"{}\",\"response\":"
            "{\"status\":201,\"headers\":[[\"X-Customer\",\"cust_77\"]],\"body\":"
            "\"{\\\"receipt_email\\\":\\\"payer@example.com\\\",\\\"id\\\":\\\"pay_"
            "1\\\"}\"}}\n");
    import_capture(w, cfg, w->log_path, in);
    assert_int_equal(
        ust_test_cli(w->dir, NULL,
                     "log export --log '%s' --redact --config '%s' --out '%s'",
                     w->log_path, cfg, out),
        0);
    /* The values gone, their places masked, the rest as it was. */
    static const struct {
        const char *text;
        int there;
    } want[] = {{"cust_77", 0},
                {"payer@example.com", 0},
                {"[\"X-Customer\",\"[redacted]\"]", 1},
                {"\\\"receipt_email\\\":\\\"[redacted]\\\"", 1},
                {"pay_1", 1}};
    char *line = ust_test_read_file(out);
    for (size_t i = 0; i < UST_ARRAY_SIZE(want); i++) {
        if (want[i].there)
            assert_non_null(strstr(line, want[i].text));
        else
            assert_null(strstr(line, want[i].text));
    }
    free(line);
    world_free(w);
}

/* The report shows a recorded answer as the legacy's decision, redacted,
 * and nowhere in clear (not among the raw request's fields either). */
static void test_the_report_never_shows_an_answer_in_clear(void **state)
{
    (void)state;
    world *w = world_new();
    static const char *const rules[] = {"receipt_email"};
    world_set_redact(w, rules, 1);
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    ust_response a = answer(409, "{\"receipt_email\":\"payer@example.com\"}", NULL);
    record_with(w, &a);
    ust_response_clear(&a);
    replay_recorded(w, NULL);
    ust_test_expect_str(world_verdicts(w, "legacy"), "in_progress");
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/report", w->dir);
    ust_report_opts o = {.run_path = w->run_path, .out_dir = out};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report: %s", err);
    char *cmd = ust_sprintf("grep -rq 'receipt_email' '%s'", out);
    assert_int_equal(system(cmd), 0); /* the example is there... */
    ust_free(cmd);
    cmd = ust_sprintf("grep -rq 'payer@example.com' '%s'", out);
    assert_int_not_equal(system(cmd), 0); /* ...but not its value */
    ust_free(cmd);
    world_free(w);
}

/* The command line end to end: a capture with answers imported, exported and
 * imported again into another log has the same head; the answer changed in
 * the file makes `log verify` exit 1 naming its seq. */
static void test_log_verify_catches_a_changed_answer(void **state)
{
    (void)state;
    char cfg[PATH_MAX], in[PATH_MAX], out[PATH_MAX], db2[PATH_MAX];
    world *w = capture_world(cfg, in, out);
    snprintf(db2, sizeof(db2), "%s/second.db", w->dir);
    ust_test_write_file(
        in, "{\"v\":1,\"received_at\":\"2026-11-29T10:00:00Z\",\"method\":\"POST\","
            "\"target\":\"/payments\",\"headers\":[],\"body\":\"{}\"}\n"
            "{\"v\":1,\"received_at\":\"2026-11-29T10:00:01Z\",\"method\":\"POST\","
            "\"target\":\"/payments\",\"headers\":[],\"body\":\"{}\",\"response\":"
            "{\"status\":201,\"headers\":[[\"Understudy-Verdict\",\"applied\"]],"
            "\"body\":\"{\\\"id\\\":\\\"pay_1\\\"}\"}}\n");
    import_capture(w, cfg, w->log_path, in);
    assert_int_equal(ust_test_cli(w->dir, NULL, "log export --log '%s' --out '%s'",
                                  w->log_path, out),
                     0);
    import_capture(w, cfg, db2, out);
    char *first = NULL, *second = NULL;
    assert_int_equal(ust_test_cli(w->dir, &first, "log verify --log '%s'", w->log_path),
                     0);
    assert_int_equal(ust_test_cli(w->dir, &second, "log verify --log '%s'", db2), 0);
    assert_string_equal(first, second); /* same count, head seq and hash */
    free(first);
    free(second);

    ust_test_sql(db2, "DROP TRIGGER events_no_update;"
                      " UPDATE events SET response_body ="
                      " CAST('{\"id\":\"pay_2\"}' AS BLOB) WHERE seq = 2");
    char *said = NULL;
    assert_int_equal(ust_test_cli(w->dir, &said, "log verify --log '%s'", db2), 1);
    ust_test_expect_in(said, "seq 2");
    free(said);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_recorded_legacy_decides_with_the_answers),
        cmocka_unit_test(test_the_recorded_kind_and_its_config),
        cmocka_unit_test(test_export_redact_masks_the_answer),
        cmocka_unit_test(test_the_report_never_shows_an_answer_in_clear),
        cmocka_unit_test(test_log_verify_catches_a_changed_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
