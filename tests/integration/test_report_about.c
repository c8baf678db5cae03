/* The report's chart, its trend by day and its metadata: what the run's
 * span looked like, and what the report itself is (when, by which
 * understudy, against which triage file, on a log whose chain holds). */
#include "replay_world.h"

#include <understudy/clock.h>
#include <understudy/hash.h>
#include <understudy/report.h>

#define PAID "payment_intent.succeeded"
#define REFUNDED "charge.refunded"
#define DAY_S 86400.0

/* Divergences of several classes on the first and the third day of the
 * run's span (2026-11-29 and 2026-12-01), none on the second. */
static void run_two_days(world *w)
{
    world_scenario_5(w);
    world_api(w, 8000, NULL, "t1", "o7", 500);
    world_api(w, 2 * DAY_S, NULL, "t1", "o8", 500);
    world_stripe(w, 2 * DAY_S + 10, "evt_6", PAID, "pi_2", "o2", 100);
    world_stripe(w, 2 * DAY_S + 20, "evt_7", REFUNDED, "pi_2", "o2", 100);
    world_stripe(w, 2 * DAY_S + 30, "evt_8", PAID, "pi_2", "o2", 100);
    world_stripe(w, 2 * DAY_S + 40, "evt_9", REFUNDED, "pi_2", "o2", 100);
    world_stripe(w, 2 * DAY_S + 7200, "evt_10", PAID, "pi_3", "o3", 1500);
    world_stripe(w, 2 * DAY_S + 7203, "evt_11", PAID, "pi_4", "o3", 1500);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
}

static void report_with(world *w, const ust_triage *t, const char *triage_path,
                        size_t max_classes, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/report", w->dir);
    ust_report_opts o = {.run_path = w->run_path,
                         .out_dir = out,
                         .triage = t,
                         .triage_path = triage_path,
                         .max_classes = max_classes};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0)
        fail_msg("report: %s", err);
}

static char *read_out(const char *out, const char *name)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", out, name);
    return ust_test_read_file(path);
}

/* The file name of a report on run_two_days, its classes detailed up to
 * max_classes (0: the default), written to out (malloc'd). */
static char *two_days_report(world *w, size_t max_classes, const char *name,
                             char out[PATH_MAX])
{
    run_two_days(w);
    report_with(w, NULL, NULL, max_classes, out);
    return read_out(out, name);
}

/* The <svg id=chart> element of index.html, whole (malloc'd). */
static char *chart_svg(const char *html)
{
    const char *start = strstr(html, "<svg id=chart");
    assert_non_null(start);
    const char *end = strstr(start, "</svg>");
    assert_non_null(end);
    return strndup(start, (size_t)(end - start + 6));
}

/* How many times needle occurs in text. */
static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The fill colour of each <g class=series> in svg, in order, into fills;
 * their number. */
static size_t series_fills(const char *svg, char fills[16][8])
{
    size_t n = 0;
    const char *tag = "<g class=series fill=\"";
    for (const char *p = svg; (p = strstr(p, tag)) != NULL && n < 16; n++) {
        p += strlen(tag);
        assert_int_equal(p[7], '"');
        memcpy(fills[n], p, 7);
        fills[n][7] = '\0';
    }
    return n;
}

static void test_chart_has_axes_and_a_colour_per_class(void **state)
{
    world *w = *state;
    char out[PATH_MAX];
    char *html = two_days_report(w, 0, "index.html", out);
    char *svg = chart_svg(html);
    /* Counts on a round step from 0; the highest bar is 3 (pi_2's late paid
     * and refund, and the double click, within one 2 h bar): 0, 1, 2, 3. */
    ust_test_expect_in(html, "each bar: 2 h; the highest: 3 divergences");
    ust_test_expect_in(svg, "<text class=ytick x=56 y=\"228.0\">0</text>");
    ust_test_expect_in(svg, ">1</text>");
    ust_test_expect_in(svg, ">3</text>");
    assert_int_equal(occurrences(svg, "class=ytick"), 4);
    /* Times every 6 h on the hour, UTC, with the date: 54 h of bars. */
    ust_test_expect_in(svg, "<text class=xtick");
    ust_test_expect_in(svg, ">11-29 12:00</text>");
    ust_test_expect_in(svg, ">11-30 00:00</text>");
    ust_test_expect_in(svg, ">12-01 12:00</text>");
    assert_int_equal(occurrences(svg, "class=xtick"), 9);
    ust_test_expect_in(svg, "time (UTC)");
    /* One series per class, each its own colour, each in the legend with
     * its count. */
    char *count = world_query(w, "SELECT count(DISTINCT class) FROM divergences");
    size_t classes = (size_t)atoi(count);
    ust_free(count);
    assert_true(classes >= 3);
    char fills[16][8];
    size_t n = series_fills(svg, fills);
    assert_int_equal(n, classes);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(fills[i], fills[k]);
    for (size_t i = 0; i < n; i++) {
        char swatch[64];
        snprintf(swatch, sizeof(swatch), "<span style=\"background:%s\"></span>",
                 fills[i]);
        ust_test_expect_in(html, swatch);
    }
    ust_test_expect_in(html,
                       "</span>payment_intent.succeeded: applied \xe2\x86\x92 rejected"
                       " (2)<br>");
    assert_null(strstr(html, "other classes"));
    free(svg);
    free(html);
}

/* Classes past the ones detailed are drawn together, in a colour of their
 * own, and counted in the legend. */
static void test_chart_draws_the_rest_as_other(void **state)
{
    world *w = *state;
    char out[PATH_MAX];
    char *html = two_days_report(w, 2, "index.html", out);
    char *svg = chart_svg(html);
    char fills[16][8];
    assert_int_equal(series_fills(svg, fills), 3);
    assert_string_not_equal(fills[2], fills[0]);
    assert_string_not_equal(fills[2], fills[1]);
    char *rest = world_query(
        w, "SELECT sum(n) FROM (SELECT count(*) AS n FROM divergences GROUP BY class"
           " ORDER BY n DESC, class LIMIT -1 OFFSET 2)");
    char want[96];
    snprintf(want, sizeof(want), "</span>other classes (%s)<br>", rest);
    ust_test_expect_in(html, want);
    ust_free(rest);
    free(svg);
    free(html);
}

/* The rows of summary.md's table by day: each must be the day after the
 * one before, from first (a date), its classes adding up to its total; the
 * sum of the totals, and their number in *n. */
static long day_rows(const char *md, const char *first, size_t *n)
{
    const char *table = strstr(md, "## Divergences by day (UTC)");
    assert_non_null(table);
    ust_test_expect_in(table, "| date | divergences | ");
    ust_test_expect_in(table, " other |\n");
    int64_t day_us = 0;
    char date[32];
    snprintf(date, sizeof(date), "%sT00:00:00Z", first);
    assert_int_equal(ust_time_parse(date, &day_us), 0);
    long sum = 0;
    *n = 0;
    for (const char *p = strstr(table, "\n| 2");
         p != NULL && strncmp(p, "\n| 2", 4) == 0;
         p = strchr(p + 1, '\n'), (*n)++, day_us += 86400000000LL) {
        ust_time_format(day_us, date);
        assert_memory_equal(p + 3, date, 10);
        char *end = NULL;
        long total = strtol(p + 16, &end, 10), classes = 0;
        sum += total;
        while (*end == ' ' && end[1] == '|' && end[2] == ' ')
            classes += strtol(end + 3, &end, 10);
        assert_int_equal(classes, total);
    }
    return sum;
}

/* One row per UTC day of the span, the empty day too, and the rows add up
 * to the run's divergences, each row's classes to its total. */
static void test_summary_has_the_trend_by_day(void **state)
{
    world *w = *state;
    char out[PATH_MAX];
    char *md = two_days_report(w, 0, "summary.md", out);
    size_t n = 0;
    long sum = day_rows(md, "2026-11-29", &n);
    assert_int_equal(n, 3);
    ust_test_expect_in(md, "| 2026-11-30 | 0 | 0 | 0 | 0 | 0 | 0 |\n");
    ust_test_expect_in(md, "| 2026-12-01 | 4 | 1 | 1 | 1 | 1 | 0 |\n");
    char *count = world_query(w, "SELECT count(*) FROM divergences");
    assert_int_equal(sum, atol(count));
    ust_free(count);
    free(md);
}

/* A run of two months: its bars are two days wide, and each divergence is
 * still counted on its own day. */
static void test_a_long_run_is_counted_by_day(void **state)
{
    world *w = *state;
    world_api(w, 0, NULL, "t1", "o1", 100);
    world_api(w, DAY_S, NULL, "t1", "o2", 100);
    world_api(w, DAY_S + 60, NULL, "t1", "o3", 100);
    world_api(w, 60 * DAY_S, NULL, "t1", "o4", 100);
    world_record(w);
    world_replay(w, "legacy", "candidate", NULL);
    char out[PATH_MAX];
    report_with(w, NULL, NULL, 0, out);
    char *md = read_out(out, "summary.md");
    char *html = read_out(out, "index.html");
    ust_test_expect_in(html, "each bar: 2 d;");
    size_t n = 0;
    assert_int_equal(day_rows(md, "2026-11-29", &n), 4);
    assert_int_equal(n, 61);
    ust_test_expect_in(md, "| 2026-11-29 | 1 | 1 | 0 |\n| 2026-11-30 | 2 | 2 | 0 |\n");
    ust_test_expect_in(md, "| 2027-01-28 | 1 | 1 | 0 |\n");
    free(html);
    free(md);
}

static void test_metadata_names_the_triage_file_and_the_chain(void **state)
{
    world *w = *state;
    run_two_days(w);
    char triage_path[PATH_MAX];
    snprintf(triage_path, sizeof(triage_path), "%s/triage.json", w->dir);
    ust_test_write_file(triage_path, "{\"accepted\": []}\n");
    ust_triage *t = NULL;
    char *err = NULL;
    assert_int_equal(ust_triage_load(triage_path, &t, &err), 0);
    unsetenv("SOURCE_DATE_EPOCH");
    char out[PATH_MAX];
    report_with(w, t, triage_path, 0, out);
    ust_triage_free(t);
    char triage_hex[UST_SHA256_HEX_LEN + 1], head_hex[UST_SHA256_HEX_LEN + 1];
    assert_int_equal(ust_sha256_file_hex(triage_path, triage_hex), 0);
    ust_log *log = NULL;
    int64_t head = 0;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_READONLY, &log, &err), 0);
    assert_int_equal(ust_log_head(log, &head, head_hex, &err), 0);
    ust_log_close(log);
    char *html = read_out(out, "index.html");
    char *md = read_out(out, "summary.md");
    char want[PATH_MAX + 256];
    snprintf(want, sizeof(want), "<code>%s</code> sha256 <code>%s</code>", triage_path,
             triage_hex);
    ust_test_expect_in(html, want);
    snprintf(want, sizeof(want), "- triage file: `%s` sha256 `%s`", triage_path,
             triage_hex);
    ust_test_expect_in(md, want);
    snprintf(want, sizeof(want),
             "<span class=ok>verified</span> through seq %lld (hash <code>%s</code>)",
             (long long)head, head_hex);
    ust_test_expect_in(html, want);
    snprintf(want, sizeof(want),
             "- event log chain: verified through seq %lld (hash `%s`)",
             (long long)head, head_hex);
    ust_test_expect_in(md, want);
    /* Made now: this year's date, to the second, in UTC. */
    char now[32];
    ust_time_format(ust_time_wall_us(), now);
    snprintf(want, sizeof(want), "<tr><th>generated</th><td>%.4s-", now);
    ust_test_expect_in(html, want);
    const char *at = strstr(md, "- generated: ");
    assert_non_null(at);
    assert_int_equal(at[13 + 19], 'Z');
    assert_int_equal(at[13 + 20], '\n');
    ust_test_expect_in(html, "<tr><th>understudy</th><td>0.");
    free(html);
    free(md);
}

static void test_source_date_epoch_dates_the_report(void **state)
{
    world *w = *state;
    run_two_days(w);
    char out[PATH_MAX];
    setenv("SOURCE_DATE_EPOCH", "1796000000", 1);
    report_with(w, NULL, NULL, 0, out);
    char *html = read_out(out, "index.html");
    char *md = read_out(out, "summary.md");
    ust_test_expect_in(html, "<tr><th>generated</th><td>2026-11-30T00:53:20Z</td>");
    ust_test_expect_in(md, "- generated: 2026-11-30T00:53:20Z\n");
    ust_test_expect_in(html, "none (every class is open)");
    /* The same run, the same bytes. */
    report_with(w, NULL, NULL, 0, out);
    char *again = read_out(out, "index.html");
    assert_string_equal(again, html);
    free(again);
    free(html);
    free(md);
    /* A value that is not whole seconds is refused, not ignored. */
    setenv("SOURCE_DATE_EPOCH", "1796000000.5", 1);
    ust_report_opts o = {.run_path = w->run_path, .out_dir = out};
    char *err = NULL;
    assert_int_equal(ust_report_write(&o, &err), UST_EINVAL);
    ust_test_expect_in(err, "SOURCE_DATE_EPOCH");
    ust_free(err);
    unsetenv("SOURCE_DATE_EPOCH");
}

#define DROP_TRIGGERS "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;"

/* A row the run read, changed behind the log's back: the report says so.
 * A row past the run's cursor is not the run's: changing it does not. */
static void test_a_tampered_log_is_not_verified(void **state)
{
    world *w = *state;
    run_two_days(w);
    char *cursor = world_query(w, "SELECT max(seq) FROM decisions");
    /* An event the run never read, then changed. */
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    ust_request late;
    memset(&late, 0, sizeof(late));
    late.received_at_us = (WORLD_T0 + 3 * 86400) * 1000000LL;
    late.remote = ust_strdup("203.0.113.7:443");
    late.method = ust_strdup("POST");
    late.target = ust_strdup("/payments");
    late.body = (unsigned char *)ust_strdup("{}");
    late.body_len = 2;
    assert_int_equal(ust_log_append_requests(log, w->cfg, &late, 1, NULL, NULL, &err),
                     0);
    ust_request_clear(&late);
    ust_log_close(log);
    ust_test_sql(w->log_path, DROP_TRIGGERS "UPDATE events SET body = CAST('{\"x\":1}'"
                                            " AS BLOB) WHERE seq = 12");
    char out[PATH_MAX];
    report_with(w, NULL, NULL, 0, out);
    char *html = read_out(out, "index.html");
    char want[128];
    snprintf(want, sizeof(want), "<span class=ok>verified</span> through seq %s ",
             cursor);
    ust_test_expect_in(html, want);
    free(html);
    /* A row the run read. */
    ust_test_sql(w->log_path, "UPDATE events SET body = CAST('{\"id\":\"evt_X\"}' AS"
                              " BLOB) WHERE seq = 2");
    report_with(w, NULL, NULL, 0, out);
    html = read_out(out, "index.html");
    char *md = read_out(out, "summary.md");
    ust_test_expect_in(html, "<span class=open>NOT verified</span>: seq 2: ");
    ust_test_expect_in(md, "- event log chain: **NOT verified**: seq 2: ");
    assert_null(strstr(html, "<span class=ok>verified</span>"));
    free(html);
    free(md);
    ust_free(cursor);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
    const struct CMUnitTest tests[] = {
        T(test_chart_has_axes_and_a_colour_per_class),
        T(test_chart_draws_the_rest_as_other),
        T(test_summary_has_the_trend_by_day),
        T(test_a_long_run_is_counted_by_day),
        T(test_metadata_names_the_triage_file_and_the_chain),
        T(test_source_date_epoch_dates_the_report),
        T(test_a_tampered_log_is_not_verified),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
