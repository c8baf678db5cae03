/* A week recorded in line (serve --respond upstream) replays without
 * production: `log export --answers RUN.answers` writes the answer the
 * service gave each event as its "response", `log import` keeps it, and a
 * "recorded" legacy decides with it. */
#include "replay_world.h"

#include <understudy/host.h>

#define PAID "payment_intent.succeeded"

/* What the service answered seq (status 0: it gave none, as after a 502). */
static void put_answer(ust_answers *a, int64_t seq, int status, const char *verdict,
                       const char *body)
{
    const ust_header h[] = {{"Content-Type", "application/json"},
                            {"Understudy-Verdict", (char *)verdict}};
    char *err = NULL;
    if (ust_answers_put_response(a, seq, status, h, verdict ? 2 : 1,
                                 (const unsigned char *)body, strlen(body), &err) != 0)
        fail_msg("put_response: %s", err);
}

static void test_the_answers_of_a_service_replay_as_the_recorded_legacy(void **state)
{
    (void)state;
    world *w = world_new();
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_stripe(w, 10, "evt_2", PAID, "pi_2", "o2", 4200);
    world_stripe(w, 20, "evt_3", PAID, "pi_3", "o3", 4200);
    world_stripe(w, 30, "evt_4", PAID, "pi_4", "o4", 4200);
    world_record(w);
    /* RUN.answers as serve --respond upstream leaves it: seq 4 unanswered. */
    char *answers = ust_answers_path(w->run_path);
    ust_answers *a = NULL;
    char *err = NULL;
    assert_int_equal(ust_answers_writer_open(answers, NULL, &a, &err), 0);
    assert_int_equal(ust_answers_begin(a, &err), 0);
    put_answer(a, 1, 201, "applied", "{\"id\":\"pay_1\"}");
    put_answer(a, 2, 200, "duplicate", "{\"id\":\"pay_1\"}");
    put_answer(a, 3, 422, NULL, "{\"error\":\"conflict\"}");
    assert_int_equal(ust_answers_commit(a, 4, &err), 0);
    ust_answers_writer_close(a);

    char out[PATH_MAX], second[PATH_MAX], cfg[PATH_MAX];
    snprintf(out, sizeof(out), "%s/week.jsonl", w->dir);
    snprintf(second, sizeof(second), "%s/second.db", w->dir);
    ust_test_source_path("tests/data/config.json", cfg);
    char *args = ust_sprintf("log export --log '%s' --answers '%s' --out '%s'",
                             w->log_path, answers, out);
    assert_int_equal(ust_test_run_cli(w->dir, args, NULL), 0);
    ust_free(args);
    /* Each line carries its answer; the unanswered one none. */
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char line[65536];
    const int statuses[] = {201, 200, 422, 0};
    for (size_t i = 0; i < 4; i++) {
        assert_non_null(fgets(line, sizeof(line), f));
        json_error_t jerr;
        json_t *row = json_loads(line, 0, &jerr);
        assert_non_null(row);
        json_t *res = json_object_get(row, "response");
        assert_int_equal(json_integer_value(json_object_get(res, "status")),
                         statuses[i]);
        json_decref(row);
    }
    assert_null(fgets(line, sizeof(line), f));
    fclose(f);

    /* Imported, they are the recorded legacy's decisions. */
    args = ust_sprintf("log import --quiet --config '%s' --log '%s' '%s'", cfg, second,
                       out);
    assert_int_equal(ust_test_run_cli(w->dir, args, NULL), 0);
    ust_free(args);
    snprintf(w->log_path, sizeof(w->log_path), "%s", second);
    w->cfg->legacy.recorded = 1;
    ust_free(w->cfg->legacy.path);
    w->cfg->legacy.path = NULL;
    char cp[PATH_MAX];
    ust_test_plugin_path("candidate", cp);
    ust_replay_opts o = world_opts(w, NULL, cp, NULL);
    ust_replay_stats st;
    if (ust_replay(&o, &st, &err) != 0)
        fail_msg("replay: %s", err);
    char *verdicts = world_verdicts(w, "legacy");
    assert_string_equal(verdicts, "applied,duplicate,conflict,error");
    ust_free(verdicts);
    char *why = world_query(w, "SELECT l_error FROM decisions WHERE seq = 4");
    assert_string_equal(why, "no recorded answer for this event");
    ust_free(why);
    ust_free(answers);
    world_free(w);
}

/* A file that holds no service's answers is refused, saying what it is not. */
static void test_answers_that_are_not_an_answers_database_are_refused(void **state)
{
    (void)state;
    world *w = world_new();
    world_stripe(w, 0, "evt_1", PAID, "pi_1", "o1", 4200);
    world_record(w);
    char *said = NULL;
    char *args =
        ust_sprintf("log export --log '%s' --answers '%s'", w->log_path, w->log_path);
    assert_int_equal(ust_test_run_cli(w->dir, args, &said), 2);
    ust_free(args);
    ust_test_expect_in(said, "holds no answers of a service");
    free(said);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_answers_of_a_service_replay_as_the_recorded_legacy),
        cmocka_unit_test(test_answers_that_are_not_an_answers_database_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
