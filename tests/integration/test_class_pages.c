/* The report's class pages (classes/ in its directory): every divergence of
 * a class exactly once, paged, grouped by the candidate's reason, linked
 * from the index; and the run's readers behind them. */
#include "replay_world.h"

#include <understudy/report.h>
#include <understudy/run.h>

#include <sys/stat.h>

#define CLASS "/payments: applied \xe2\x86\x92 invalid"
#define NO_KEY "no Idempotency-Key"

/* n API requests without a key (each diverges: the legacy applies, the
 * candidate refuses), spacing_s apart. */
static void run_divergences(world *w, int n, double spacing_s)
{
    for (int i = 0; i < n; i++) {
        char order[16];
        snprintf(order, sizeof(order), "o%d", i);
        world_api(w, i * spacing_s, NULL, "t1", order, 100 + i);
    }
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
}

static void write_report_with(world *w, size_t page_rows, size_t value_rows_max,
                              char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/report", w->dir);
    ust_report_opts o = {.run_path = w->run_path,
                         .out_dir = out,
                         .page_rows = page_rows,
                         .value_rows_max = value_rows_max};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report: %s", err);
}

static void write_report(world *w, size_t page_rows, char out[PATH_MAX])
{
    write_report_with(w, page_rows, 0, out);
}

/* The file at out/name, whole (malloc'd), or NULL when there is none. */
static char *page(const char *out, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", out, name);
    struct stat st;
    return stat(path, &st) == 0 ? ust_test_read_file(path) : NULL;
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The seqs of the rows of text (id=seq-N), in order, appended to seqs. */
static void row_seqs(const char *text, int *seqs, size_t *n)
{
    for (const char *p = text; (p = strstr(p, "<tr id=seq-")) != NULL; p++)
        seqs[(*n)++] = atoi(p + strlen("<tr id=seq-"));
}

static void test_pages_hold_every_divergence_once(void **state)
{
    world *w = *state;
    run_divergences(w, 7, 60);
    char out[PATH_MAX];
    /* an earlier report's page past this run's last is removed */
    char stale[PATH_MAX + 64];
    snprintf(stale, sizeof(stale), "%s/report", w->dir);
    mkdir(stale, 0755);
    snprintf(stale, sizeof(stale), "%s/report/classes", w->dir);
    mkdir(stale, 0755);
    snprintf(stale, sizeof(stale), "%s/report/classes/0-9.html", w->dir);
    ust_test_write_file(stale, "old");
    write_report(w, 3, out);
    char *index = page(out, "index.html");
    ust_test_expect_in(index, "<a href=\"classes/0.html\">5 of 7 shown</a>");
    free(index);
    const char *names[] = {"classes/0.html", "classes/0-2.html", "classes/0-3.html"};
    const char *ranges[] = {"divergences 1&ndash;3 of 7 &middot; page 1 of 3",
                            "divergences 4&ndash;6 of 7 &middot; page 2 of 3",
                            "divergences 7&ndash;7 of 7 &middot; page 3 of 3"};
    int seqs[32];
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        char *text = page(out, names[i]);
        assert_non_null(text);
        ust_test_expect_in(text, ranges[i]);
        size_t before = n;
        row_seqs(text, seqs, &n);
        assert_int_equal(n - before, i < 2 ? 3 : 1);
        assert_int_equal(occurrences(text, "rel=prev"), i > 0 ? 2 : 0);
        assert_int_equal(occurrences(text, "rel=next"), i < 2 ? 2 : 0);
        ust_test_expect_in(text, CLASS);
        free(text);
    }
    assert_null(page(out, "classes/0-4.html"));
    assert_null(page(out, "classes/0-9.html"));
    /* each divergence once, in seq order (one reason) */
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(seqs[i], (int)i + 1);
    /* a page's rows end at its boundary: six rows are two pages, not three */
    char *again = page(out, "classes/0-2.html");
    ust_test_expect_in(again, "<a rel=next href=\"0-3.html\">");
    ust_test_expect_in(again, "<a rel=prev href=\"0.html\">");
    free(again);
}

static void test_rows_are_grouped_by_the_candidates_reason(void **state)
{
    world *w = *state;
    run_divergences(w, 14, 60);
    /* two reasons: a second one for seqs 2 and 13 */
    world_exec(
        w,
        "UPDATE decisions SET c_reason = 'zz key <b>refused</b>' WHERE seq IN (2, 13)");
    char out[PATH_MAX];
    write_report(w, 5, out);
    int seqs[32];
    size_t n = 0, details = 0;
    const char *names[] = {"classes/0.html", "classes/0-2.html", "classes/0-3.html"};
    for (int i = 0; i < 3; i++) {
        char *text = page(out, names[i]);
        assert_non_null(text);
        row_seqs(text, seqs, &n);
        details += occurrences(text, "<tr class=detail>");
        free(text);
    }
    assert_null(page(out, "classes/0-4.html"));
    /* by reason (as SQLite orders text), then seq */
    int want[] = {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 2, 13};
    assert_int_equal(n, 14);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(seqs[i], want[i]);
    /* the first 10 of a reason in full, the others name `understudy show` */
    assert_int_equal(details, 10 + 2);
    char *first = page(out, "classes/0.html");
    ust_test_expect_in(first, "<a href=\"0.html#reason-1\"><q>" NO_KEY
                              "</q></a></td><td class=n>12");
    /* the second reason's rows start on page 3 (rows 13 and 14) */
    ust_test_expect_in(first, "<a href=\"0-3.html#reason-2\"><q>zz key "
                              "&lt;b&gt;refused&lt;/b&gt;</q></a></td>"
                              "<td class=n>2");
    ust_test_expect_in(first, "understudy show --run ");
    free(first);
    char *third = page(out, "classes/0-3.html");
    ust_test_expect_in(third,
                       "<h2 id=reason-2><q>zz key &lt;b&gt;refused&lt;/b&gt;</q>");
    assert_null(strstr(third, "<b>"));
    free(third);
    char *second = page(out, "classes/0-2.html");
    ust_test_expect_in(second, "<q>" NO_KEY "</q> <span class=muted>(12, continued)");
    free(second);
}

/* A candidate with many reasons: a page still carries at most 100 rows in
 * full (each a read of the log and a timeline). */
static void test_a_page_details_a_bounded_number_of_rows(void **state)
{
    world *w = *state;
    run_divergences(w, 120, 1);
    world_exec(w, "UPDATE decisions SET c_reason = 'reason ' || char(65 + seq % 12)");
    char out[PATH_MAX];
    write_report(w, 200, out);
    char *text = page(out, "classes/0.html");
    assert_non_null(text);
    assert_int_equal(occurrences(text, "<tr id=seq-"), 120);
    assert_int_equal(occurrences(text, "<h2 id=reason-"), 12);
    assert_int_equal(occurrences(text, "<tr class=detail>"), 100);
    free(text);
}

/* Reasons that differ only by their numbers (an id, a time) are one group,
 * each row naming its own. */
static void test_reasons_differing_by_numbers_are_one_kind(void **state)
{
    world *w = *state;
    run_divergences(w, 5, 60);
    world_exec(w, "UPDATE decisions SET c_reason = 'as stripe:pi_' || (seq * 37) ||"
                  " ' paid ' || seq || ' s earlier' WHERE seq <= 3");
    char out[PATH_MAX];
    write_report(w, 0, out);
    char *text = page(out, "classes/0.html");
    assert_non_null(text);
    ust_test_expect_in(text,
                       "<q>as stripe:pi_# paid # s earlier</q></a> <span class=muted>(3"
                       " reasons of this kind");
    ust_test_expect_in(text, "<h2 id=reason-1><q>as stripe:pi_# paid # s earlier</q>");
    assert_int_equal(occurrences(text, "<h2 id=reason-"), 2);
    const char *row = strstr(text, "<tr id=seq-3>");
    assert_non_null(row);
    ust_test_expect_in(
        row, "<div class=muted><q>as stripe:pi_111 paid 3 s earlier</q></div>");
    /* a reason alone of its kind is shown as it is, its rows without it */
    ust_test_expect_in(text, "<h2 id=reason-2><q>" NO_KEY "</q>");
    const char *fourth = strstr(text, "<tr id=seq-4>");
    assert_non_null(fourth);
    assert_true(strstr(fourth, "<div class=muted><q>") == NULL ||
                strstr(fourth, "<div class=muted><q>") > strstr(fourth, "</tr>"));
    free(text);
    char *index = page(out, "index.html");
    ust_test_expect_in(index,
                       "candidate's reason: <q>as stripe:pi_# paid # s earlier</q>");
    free(index);
}

/* A line with its "diff" (as the comparator writes it): each field with
 * both values, as JSON, escaped; a long value cut. */
static void test_a_row_shows_both_values_of_its_diff(void **state)
{
    world *w = *state;
    run_divergences(w, 2, 60);
    world_exec(w, "UPDATE divergences SET line = json_set(line, '$.diff', json('["
                  "{\"field\":\"state\",\"legacy\":\"paid\",\"candidate\":"
                  "\"refunded\"},{\"field\":\"body/note\",\"legacy\":\"<b>x</b>\","
                  "\"candidate\":null},{\"field\":\"body/long\",\"legacy\":\"' ||"
                  " printf('%.300c', 'y') || '\",\"candidate\":1}]')) WHERE seq = 2");
    world_exec(
        w, "UPDATE divergences SET line = json_remove(line, '$.diff') WHERE seq = 1");
    char out[PATH_MAX];
    write_report(w, 0, out);
    char *text = page(out, "classes/0.html");
    const char *row = strstr(text, "<tr id=seq-2>");
    assert_non_null(row);
    ust_test_expect_in(row,
                       "<div><code>state</code> <del>&quot;paid&quot;</del> &rarr; "
                       "<ins>&quot;refunded&quot;</ins></div>");
    ust_test_expect_in(
        row, "<div><code>body/note</code> <del>&quot;&lt;b&gt;x&lt;/b&gt;&quot;"
             "</del> &rarr; <ins>null</ins></div>");
    ust_test_expect_in(row, "yyyy&hellip;</del> &rarr; <ins>1</ins>");
    assert_null(strstr(row, "<b>x"));
    /* a line without one: the names of its fields */
    const char *first = strstr(text, "<tr id=seq-1>");
    assert_non_null(first);
    ust_test_expect_in(first, "<code>verdict, status, body/amount");
    free(text);
}

/* Past value_rows_max divergences a class's rows name the fields that differ
 * (their values stay in each row's detail), and the page says so. */
static void test_a_large_class_names_its_fields(void **state)
{
    world *w = *state;
    run_divergences(w, 3, 60);
    char out[PATH_MAX];
    write_report_with(w, 0, 2, out);
    char *text = page(out, "classes/0.html");
    ust_test_expect_in(text, "in a class of more than 2 divergences a row names the "
                             "fields that differ");
    const char *row = strstr(text, "<tr id=seq-3>");
    assert_non_null(row);
    ust_test_expect_in(row, "<code>verdict, status, body/amount");
    const char *end = strstr(row, "</tr>");
    const char *del = strstr(row, "<del>");
    assert_true(del == NULL || del > end);
    free(text);
    write_report_with(w, 0, 3, out);
    text = page(out, "classes/0.html");
    row = strstr(text, "<tr id=seq-3>");
    assert_non_null(row);
    ust_test_expect_in(row, "<del>");
    assert_null(strstr(text, "a row names the fields that differ"));
    free(text);
}

/* A class name made to escape the directory and the markup. */
static void test_a_hostile_class_name_is_a_safe_file(void **state)
{
    world *w = *state;
    char *body = ust_sprintf(
        "{\"id\":\"evt_1\",\"type\":\"../../x<script>alert(1)</script>\",\"created\":"
        "%lld,\"data\":{\"object\":{\"id\":\"pi_1\",\"amount\":1,\"currency\":\"eur\","
        "\"metadata\":{\"order_id\":\"o1\"}}}}",
        WORLD_T0);
    ust_request *r = world_request(w, 0, "/webhooks/stripe", body);
    ust_free(body);
    ust_sig_params p = {UST_SCHEME_STRIPE, WORLD_STRIPE_SECRET, NULL, 300};
    assert_int_equal(ust_sig_sign(&p, WORLD_T0, NULL, r), 0);
    world_record(w);
    /* the candidate errs on every odd seq */
    world_replay(w, "legacy", "misbehaving_decide_error", NULL);
    char out[PATH_MAX];
    write_report(w, 0, out);
    char *text = page(out, "classes/0.html");
    assert_non_null(text);
    ust_test_expect_in(text, "../../x&lt;script&gt;alert(1)&lt;/script&gt;");
    assert_null(strstr(text, "<script>"));
    assert_int_equal(occurrences(text, "<tr id=seq-1>"), 1);
    free(text);
    char *index = page(out, "index.html");
    ust_test_expect_in(index, "<a href=\"classes/0.html\">1 of 1 shown</a>");
    free(index);
}

/* The index's examples: spread over the class's span, not its first. */
static void test_examples_are_sampled_across_the_span(void **state)
{
    world *w = *state;
    /* 20 divergences in the first minute, then one an hour for 5 hours */
    for (int i = 0; i < 20; i++)
        world_api(w, i, NULL, "t1", "early", 100);
    for (int i = 1; i <= 5; i++)
        world_api(w, i * 3600, NULL, "t1", "late", 100);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    world_exec(w, "UPDATE decisions SET c_reason = 'a late reason' WHERE seq = 25");
    char out[PATH_MAX];
    write_report(w, 0, out);
    char *index = page(out, "index.html");
    /* times 0, 1.25 h, 2.5 h, 3.75 h, 5 h: seq 1, then the hourly one
     * nearest each (1 h; 2 h, as near as 3 h and earlier; 4 h; 5 h) */
    ust_test_expect_in(index, "5 of 25 shown");
    const char *want[] = {"example: seq 1,", "example: seq 21,", "example: seq 22,",
                          "example: seq 24,", "example: seq 25,"};
    for (int i = 0; i < 5; i++)
        ust_test_expect_in(index, want[i]);
    assert_null(strstr(index, "example: seq 2,"));
    /* by reason: seq 25's own reason has its heading after the others */
    const char *late = strstr(index, "candidate's reason: <q>a late reason</q>");
    const char *common = strstr(index, "candidate's reason: <q>" NO_KEY "</q>");
    assert_non_null(late);
    assert_non_null(common);
    assert_true(common < late);
    assert_true(strstr(index, "example: seq 24,") < late);
    assert_true(strstr(index, "example: seq 25,") > late);
    free(index);
}

typedef struct nearest {
    int64_t seq;
    char reason[64];
} nearest;

static int take(void *ctx, const ust_run_reasoned *r)
{
    nearest *n = ctx;
    n->seq = r->d.seq;
    snprintf(n->reason, sizeof(n->reason), "%s", r->reason ? r->reason : "");
    return 0;
}

static int64_t nearest_to(ust_run *run, double t_s, const int64_t *skip, size_t n_skip)
{
    nearest n = {0};
    char *err = NULL;
    int64_t at = (int64_t)((double)WORLD_T0 * 1e6 + t_s * 1e6);
    int rc = ust_run_class_nearest(run, CLASS, at, skip, n_skip, take, &n, &err);
    assert_true(rc >= 0);
    return rc == 1 ? n.seq : 0;
}

static void expect_nearest(const char *run_path)
{
    ust_run *run = NULL;
    char *err = NULL;
    assert_int_equal(ust_run_open(run_path, &run, &err), 0);
    /* seq 1 at 0 s, 2 and 3 at 60 s, 4 at 120 s, 5 at 180 s */
    assert_int_equal(nearest_to(run, 0, NULL, 0), 1);
    assert_int_equal(nearest_to(run, 70, NULL, 0), 2); /* 10 s away; the lower seq */
    assert_int_equal(nearest_to(run, 60, NULL, 0), 2);
    assert_int_equal(nearest_to(run, 100, NULL, 0), 4); /* 20 s away, not 40 */
    assert_int_equal(nearest_to(run, 90, NULL, 0), 2);  /* as near: the earlier */
    assert_int_equal(nearest_to(run, 1e6, NULL, 0), 5); /* past the last */
    assert_int_equal(nearest_to(run, -50, NULL, 0), 1); /* before the first */
    int64_t skip[] = {2, 3};
    assert_int_equal(nearest_to(run, 70, skip, 2), 4); /* 50 s away, not 70 */
    assert_int_equal(nearest_to(run, 55, skip, 1), 3);
    int64_t all[] = {1, 2, 3, 4, 5};
    assert_int_equal(nearest_to(run, 70, all, 5), 0);
    ust_run_close(run);
}

static void test_the_nearest_divergence_with_and_without_its_index(void **state)
{
    world *w = *state;
    const double at[] = {0, 60, 60, 120, 180};
    for (int i = 0; i < 5; i++)
        world_api(w, at[i], NULL, "t1", "o", 100);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    expect_nearest(w->run_path);
    /* a run database made before the index: the same answers */
    world_exec(w, "DROP INDEX divergences_class_at");
    expect_nearest(w->run_path);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
    const struct CMUnitTest tests[] = {
        T(test_pages_hold_every_divergence_once),
        T(test_rows_are_grouped_by_the_candidates_reason),
        T(test_a_page_details_a_bounded_number_of_rows),
        T(test_reasons_differing_by_numbers_are_one_kind),
        T(test_a_row_shows_both_values_of_its_diff),
        T(test_a_large_class_names_its_fields),
        T(test_a_hostile_class_name_is_a_safe_file),
        T(test_examples_are_sampled_across_the_span),
        T(test_the_nearest_divergence_with_and_without_its_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
