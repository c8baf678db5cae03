/* The partitions of one replay read as one run (report --run A --run B,
 * gate --run A --run B): the report over both partitions of a generated
 * log is the report of one runner over the whole log, but for the lines
 * that name the runs; the gate judges them as it judges the whole run, and
 * complete only when each is; runs that are not every partition of one
 * replay are refused, saying why; and one --run is read as it always was. */
#include "partition_world.h"

#include <understudy/array.h>
#include <understudy/report.h>
#include <understudy/run.h>

#define GEN_EVENTS 20000
#define EPOCH "1796000000"

/* One generated log replayed whole and as two partitions, shared by the
 * tests (each only reads them), and a small world for the refusals. */
typedef struct fixture {
    world *w, *small;
    char whole[PATH_MAX], p0[PATH_MAX], p1[PATH_MAX];
} fixture;

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->w = world_new();
    /* The candidate in process keeps this quick under ASan. */
    f->w->cfg->candidate.isolate = 0;
    gen_log(f->w, f->w->cfg, GEN_EVENTS);
    ust_replay_stats st;
    free(replay_ok(f->w, f->w->cfg, "whole.db", (ust_partition){0, 0}, &st));
    free(replay_ok(f->w, f->w->cfg, "p0.db", (ust_partition){0, 2}, &st));
    free(replay_ok(f->w, f->w->cfg, "p1.db", (ust_partition){1, 2}, &st));
    run_path(f->w, "whole.db", f->whole);
    run_path(f->w, "p0.db", f->p0);
    run_path(f->w, "p1.db", f->p1);
    f->small = world_new();
    f->small->cfg->candidate.isolate = 0;
    world_stripe(f->small, 1, "evt_a1", "payment_intent.succeeded", "pi_a", "ord_a",
                 500);
    world_stripe(f->small, 2, "evt_b1", "payment_intent.succeeded", "pi_b", "ord_b",
                 700);
    world_stripe(f->small, 3, "evt_c1", "payment_intent.succeeded", "pi_c", "ord_c",
                 900);
    world_record(f->small);
    setenv("SOURCE_DATE_EPOCH", EPOCH, 1);
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    world_free(f->w);
    world_free(f->small);
    free(f);
    unsetenv("SOURCE_DATE_EPOCH");
    return 0;
}

/* The report of the runs in paths (one: as run_path alone) into w's folder
 * out; its files' text in a folder of their own. */
static void report_into(world *w, const char *const *paths, size_t n, const char *out,
                        char dir[PATH_MAX])
{
    snprintf(dir, PATH_MAX, "%s/%s", w->dir, out);
    ust_report_opts o = {.run_path = paths[0], .out_dir = dir};
    if (n > 1) {
        o.run_paths = paths;
        o.n_runs = n;
    }
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report %s: %s", out, err);
}

static char *read_in(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *text = ust_test_read_file(path);
    if (text == NULL)
        fail_msg("%s: cannot read", path);
    return text;
}

/* text without its one occurrence of cut (which must be there). */
static char *without(const char *text, const char *cut)
{
    const char *at = strstr(text, cut);
    if (at == NULL)
        fail_msg("not found: %s", cut);
    assert_null(strstr(at + 1, cut));
    return ust_sprintf("%.*s%s", (int)(at - text), text, at + strlen(cut));
}

static void test_report_over_partitions_is_the_whole_report(void **state)
{
    fixture *f = *state;
    char rw[PATH_MAX], rp[PATH_MAX], rr[PATH_MAX];
    const char *whole[] = {f->whole}, *parts[] = {f->p0, f->p1},
               *reversed[] = {f->p1, f->p0};
    report_into(f->w, whole, 1, "report-whole", rw);
    report_into(f->w, parts, 2, "report-parts", rp);
    report_into(f->w, reversed, 2, "report-reversed", rr);

    /* Every divergence, byte for byte, in whichever order the runs come. */
    char *jw = read_in(rw, "divergences.jsonl"), *jp = read_in(rp, "divergences.jsonl"),
         *jr = read_in(rr, "divergences.jsonl");
    assert_true(strlen(jw) > 100000);
    assert_string_equal(jp, jw);
    assert_string_equal(jr, jw);
    free(jw);
    free(jp);
    free(jr);

    /* summary.md: one line more, naming the runs. */
    char *line =
        ust_sprintf("- runs (partitions read as one): `%s`, `%s`\n", f->p0, f->p1);
    char *mw = read_in(rw, "summary.md"), *mp = read_in(rp, "summary.md");
    char *cut = without(mp, line);
    assert_string_equal(cut, mw);
    assert_null(strstr(mw, "runs (partitions"));
    ust_free(cut);
    ust_free(line);
    free(mw);
    free(mp);

    /* index.html: the row naming the runs, on a line of its own. */
    line =
        ust_sprintf("\n<tr><th>runs (partitions read as one)</th><td><code>%s</code>,"
                    " <code>%s</code></td></tr>\n",
                    f->p0, f->p1);
    char *hw = read_in(rw, "index.html"), *hp = read_in(rp, "index.html");
    cut = without(hp, line);
    assert_string_equal(cut, hw);
    assert_null(strstr(hw, "runs (partitions"));
    ust_free(cut);
    ust_free(line);
    free(hw);
    free(hp);

    /* summary.json: equal, but for report.runs. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/summary.json", rw);
    json_t *sw = json_load_file(path, 0, NULL);
    snprintf(path, sizeof(path), "%s/summary.json", rp);
    json_t *sp = json_load_file(path, 0, NULL);
    assert_non_null(sw);
    assert_non_null(sp);
    json_t *about = json_object_get(sp, "report");
    json_t *runs = json_object_get(about, "runs");
    assert_int_equal(json_array_size(runs), 2);
    assert_string_equal(json_string_value(json_array_get(runs, 0)), f->p0);
    assert_string_equal(json_string_value(json_array_get(runs, 1)), f->p1);
    assert_null(json_object_get(json_object_get(sw, "report"), "runs"));
    json_object_del(about, "runs");
    assert_true(json_equal(sw, sp));
    json_decref(sw);
    json_decref(sp);
}

/* The gate's judgement of w's runs in paths. */
static ust_gate_result gate_of(const char *const *paths, size_t n, const ust_triage *t)
{
    ust_gate_result res;
    char *err = NULL;
    if (ust_gate_check_runs(paths, n, NULL, t, &res, &err) != 0)
        fail_msg("gate: %s", err);
    return res;
}

static void expect_same_judgement(const ust_gate_result *a, const ust_gate_result *b)
{
    assert_int_equal(ust_gate_pass(a, 0), ust_gate_pass(b, 0));
    assert_int_equal(a->divergences, b->divergences);
    assert_int_equal(a->open_divergences, b->open_divergences);
    assert_int_equal(a->decided, b->decided);
    assert_int_equal(a->cursor, b->cursor);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->classes[i].class_name, b->classes[i].class_name);
        assert_int_equal(a->classes[i].count, b->classes[i].count);
        assert_int_equal(a->classes[i].accepted == NULL,
                         b->classes[i].accepted == NULL);
    }
}

static void test_gate_over_partitions_judges_as_the_whole(void **state)
{
    fixture *f = *state;
    const char *whole[] = {f->whole}, *parts[] = {f->p0, f->p1};
    /* Nothing accepted: both fail, on the same classes. */
    ust_gate_result gw = gate_of(whole, 1, NULL), gp = gate_of(parts, 2, NULL);
    assert_false(ust_gate_pass(&gw, 0));
    assert_null(gp.refusal);
    assert_int_equal(gp.decided, GEN_EVENTS);
    expect_same_judgement(&gw, &gp);
    ust_gate_result_clear(&gp);
    /* A partition alone holds some of them. */
    const char *one[] = {f->p0};
    gp = gate_of(one, 1, NULL);
    assert_true(gp.divergences > 0 && gp.divergences < gw.divergences);
    ust_gate_result_clear(&gp);
    ust_gate_result_clear(&gw);

    /* Everything accepted: both pass. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/triage.json", f->w->dir);
    ust_test_write_file(path, "{\"accepted\": [{\"class\": \"*: applied * *\","
                              " \"reason\": \"seen\", \"owner\": \"payments-team\"}]}");
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(path, &t, &err), 0);
    gw = gate_of(whole, 1, t);
    gp = gate_of(parts, 2, t);
    assert_true(ust_gate_pass(&gw, 0));
    expect_same_judgement(&gw, &gp);
    ust_gate_result_clear(&gw);
    ust_gate_result_clear(&gp);
    ust_triage_free(t);

    /* And on the command line: the same exit and the same last line. */
    char *out_w = NULL, *out_p = NULL;
    /* With the coverage counted over both, as over the whole. */
    const char *cov = "--require-coverage signature_invalid,out_of_order";
    int rw = ust_test_cli(f->w->dir, &out_w, "gate --run '%s' --triage '%s' %s",
                          f->whole, path, cov);
    int rp =
        ust_test_cli(f->w->dir, &out_p, "gate --run '%s' --run '%s' --triage '%s' %s",
                     f->p0, f->p1, path, cov);
    assert_int_equal(rw, 0);
    assert_int_equal(rp, rw);
    assert_non_null(strstr(out_w, "coverage  "));
    assert_string_equal(out_p, out_w);
    free(out_w);
    free(out_p);
}

/* The union is complete only when each partition is: one that stopped
 * short of the log's head holds the gate back. */
static void test_a_partition_behind_holds_the_gate(void **state)
{
    fixture *f = *state;
    world *w = world_new();
    w->cfg->candidate.isolate = 0;
    world_stripe(w, 1, "evt_a1", "payment_intent.succeeded", "pi_a", "ord_a", 500);
    world_stripe(w, 2, "evt_b1", "payment_intent.succeeded", "pi_b", "ord_b", 700);
    world_record(w);
    ust_replay_stats st;
    free(replay_ok(w, w->cfg, "behind-0.db", (ust_partition){0, 2}, &st));
    free(replay_ok(w, w->cfg, "behind-1.db", (ust_partition){1, 2}, &st));
    for (size_t i = 0; i < w->n; i++)
        ust_request_clear(&w->reqs[i]);
    w->n = 0;
    world_stripe(w, 3, "evt_c1", "payment_intent.succeeded", "pi_c", "ord_c", 900);
    world_stripe(w, 4, "evt_d1", "payment_intent.succeeded", "pi_d", "ord_d", 300);
    world_record(w);
    free(replay_ok(w, w->cfg, "behind-1.db", (ust_partition){1, 2}, &st));
    char p0[PATH_MAX], p1[PATH_MAX];
    run_path(w, "behind-0.db", p0);
    run_path(w, "behind-1.db", p1);
    const char *both[] = {p0, p1}, *ahead[] = {p1};
    ust_gate_result res = gate_of(ahead, 1, NULL);
    assert_null(res.refusal);
    ust_gate_result_clear(&res);
    res = gate_of(both, 2, NULL);
    assert_int_equal(res.cursor, 2);
    assert_int_equal(res.log_head, 4);
    assert_non_null(res.refusal);
    assert_string_equal(res.refusal,
                        "the run decided up to seq 2 but the log's head is 4");
    ust_gate_result_clear(&res);
    /* Caught up, they are complete together. */
    free(replay_ok(w, w->cfg, "behind-0.db", (ust_partition){0, 2}, &st));
    res = gate_of(both, 2, NULL);
    assert_null(res.refusal);
    assert_int_equal(res.cursor, 4);
    assert_int_equal(res.decided, 4);
    ust_gate_result_clear(&res);
    world_free(w);
    (void)f;
}

static int add_text(void *ctx, const char *text)
{
    char **all = ctx;
    char *grown = ust_sprintf("%s%s;", *all, text);
    ust_free(*all);
    *all = grown;
    return 0;
}

/* A reader whose rows have no order of their own reads the runs together
 * in seq order, as it reads one run: a class's field sets in the order
 * each first diverged, not the order the runs were given. */
static void test_field_sets_come_in_seq_order(void **state)
{
    (void)state;
    world *w = world_new();
    w->cfg->candidate.isolate = 0;
    world_stripe(w, 1, "evt_a1", "payment_intent.succeeded", "pi_a", "ord_a", 500);
    world_record(w);
    ust_replay_stats st;
    free(replay_ok(w, w->cfg, "f0.db", (ust_partition){0, 2}, &st));
    free(replay_ok(w, w->cfg, "f1.db", (ust_partition){1, 2}, &st));
    char p0[PATH_MAX], p1[PATH_MAX];
    run_path(w, "f0.db", p0);
    run_path(w, "f1.db", p1);
    ust_test_sql(p0, "INSERT INTO divergences VALUES(200, 1, 'k', '[\"b\"]', 'e',"
                     " 0, '{}'), (300, 1, 'k', '[\"c\"]', 'e', 0, '{}')");
    ust_test_sql(p1, "INSERT INTO divergences VALUES(100, 1, 'k', '[\"a\"]', 'e',"
                     " 0, '{}'), (400, 1, 'k', '[\"b\"]', 'e', 0, '{}')");
    const char *both[] = {p0, p1};
    ust_run *run = NULL;
    char *err = NULL, *all = ust_strdup("");
    assert_int_equal(ust_run_open_many(both, 2, &run, &err), 0);
    assert_int_equal(ust_run_class_fields(run, "k", 5, add_text, &all, &err), 0);
    assert_string_equal(all, "[\"a\"];[\"b\"];[\"c\"];");
    ust_free(all);
    ust_run_close(run);
    world_free(w);
}

/* ust_run_open_many refuses paths; its message holds want. */
static void expect_refused(const char *const *paths, size_t n, const char *want)
{
    ust_run *run = NULL;
    char *err = NULL;
    assert_int_equal(ust_run_open_many(paths, n, &run, &err), UST_EINVAL);
    assert_null(run);
    ust_test_expect_in(err, want);
    ust_free(err);
}

static void test_runs_not_of_one_split_are_refused(void **state)
{
    fixture *f = *state;
    world *s = f->small;
    ust_replay_stats st;
    free(replay_ok(s, s->cfg, "s0-of-3.db", (ust_partition){0, 3}, &st));
    free(replay_ok(s, s->cfg, "s2-of-3.db", (ust_partition){2, 3}, &st));
    free(replay_ok(s, s->cfg, "s1-of-2.db", (ust_partition){1, 2}, &st));
    char s0[PATH_MAX], s2[PATH_MAX], s1[PATH_MAX];
    run_path(s, "s0-of-3.db", s0);
    run_path(s, "s2-of-3.db", s2);
    run_path(s, "s1-of-2.db", s1);

    const char *missing[] = {s0, s2};
    expect_refused(missing, 2,
                   "the runs are 2 of the 3 partitions of the log: "
                   "partition 1/3 is missing");
    const char *twice[] = {f->p0, f->p1, f->p0};
    char *want = ust_sprintf("%s and %s are both partition 0/2", f->p0, f->p0);
    expect_refused(twice, 3, want);
    ust_free(want);
    /* Partitions 0/2 and 1/2, but of two logs. */
    const char *logs[] = {f->p0, s1};
    want = ust_sprintf("%s and %s are not partitions of one replay: they were made "
                       "with another event log (log_file",
                       f->p0, s1);
    expect_refused(logs, 2, want);
    ust_free(want);
    const char *mixed[] = {f->p1, f->whole};
    want = ust_sprintf("%s is a run of the whole log and %s one of partition 1/2",
                       f->whole, f->p1);
    expect_refused(mixed, 2, want);
    ust_free(want);
    const char *splits[] = {f->p0, s2};
    expect_refused(splits, 2, "they split the log in different numbers of partitions");

    /* On the command line: the reason, and the exit of a run that cannot be
     * read. */
    char *out = NULL;
    assert_int_equal(
        ust_test_cli(f->w->dir, &out, "report --run '%s' --run '%s' --out x", s0, s2),
        2);
    assert_non_null(strstr(out, "partition 1/3 is missing; give the run of every "
                                "partition\n"));
    free(out);
    char triage[PATH_MAX];
    snprintf(triage, sizeof(triage), "%s/none.json", s->dir);
    ust_test_write_file(triage, "{\"accepted\": []}");
    assert_int_equal(ust_test_cli(f->w->dir, &out,
                                  "gate --run '%s' --run '%s' --triage '%s'", f->p0,
                                  f->p0, triage),
                     2);
    assert_non_null(strstr(out,
                           "are both partition 0/2: give the run of each partition "
                           "once\n"));
    free(out);
}

/* One --run reads the run as ust_report_write does without run_paths: the
 * same bytes, and nothing says "runs". */
static void test_one_run_is_read_as_before(void **state)
{
    fixture *f = *state;
    char api[PATH_MAX], cli[PATH_MAX];
    const char *whole[] = {f->whole};
    report_into(f->w, whole, 1, "report-api", api);
    snprintf(cli, sizeof(cli), "%s/report-cli", f->w->dir);
    char *out = NULL;
    assert_int_equal(ust_test_cli(f->w->dir, &out,
                                  "report --quiet --run '%s' --out '%s'", f->whole,
                                  cli),
                     0);
    free(out);
    static const char *const files[] = {"summary.md", "index.html", "summary.json",
                                        "divergences.jsonl"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(files); i++) {
        char *a = read_in(api, files[i]), *b = read_in(cli, files[i]);
        assert_string_equal(a, b);
        assert_null(strstr(a, "\"runs\""));
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_over_partitions_is_the_whole_report),
        cmocka_unit_test(test_gate_over_partitions_judges_as_the_whole),
        cmocka_unit_test(test_a_partition_behind_holds_the_gate),
        cmocka_unit_test(test_runs_not_of_one_split_are_refused),
        cmocka_unit_test(test_one_run_is_read_as_before),
        cmocka_unit_test(test_field_sets_come_in_seq_order),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
