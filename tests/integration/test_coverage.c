/* Coverage: each kind counted from the canonical events exactly at its
 * edges (inside and outside a window, the same or another hash, tenants,
 * signatures), each kind's scenario file exercising it, the count bounded
 * by a run's cursor, and `gate --require-coverage`. (gen's week against its
 * truth file is in test_gen.) */
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/coverage.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/report.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <sqlite3.h>
#include <unistd.h>

typedef struct world {
    char dir[PATH_MAX];
    char log_path[PATH_MAX];
    ust_config *cfg;
    ust_log *log;
    ust_sig_signer *signer;
} world;

/* Two unsigned webhook routes of two providers, a Stripe-signed one and an
 * API route with a tenant; the canonical state is the body's "state". */
#define HOOK_FIELDS                                                                    \
    "\"fields\": {\"event_id\": \"/id\", \"transaction_id\": \"/tx\","                 \
    " \"amount\": \"/amount\", \"currency\": \"/currency\", \"intent\": \"/order\"},"  \
    " \"status\": {\"from\": \"/state\"}"
#define UNSIGNED "\"signature\": {\"scheme\": \"none\"}, "
static const char config_text[] =
    "{\"routes\": ["
    "{\"path\": \"/hooks\", \"kind\": \"webhook\", \"provider\": \"acme\", " UNSIGNED
        HOOK_FIELDS "},"
    "{\"path\": \"/other\", \"kind\": \"webhook\", \"provider\": \"other\", " UNSIGNED
        HOOK_FIELDS "},"
    "{\"path\": \"/signed\", \"kind\": \"webhook\", \"provider\": \"stripe\","
    " \"signature\": {\"scheme\": \"stripe\", \"secret_env\": "
    "\"UNDERSTUDY_STRIPE_SECRET\"}, " HOOK_FIELDS "},"
    "{\"path\": \"/pay\", \"kind\": \"api\", \"provider\": \"api\","
    " \"idempotency\": {\"header\": \"Idempotency-Key\", \"tenant_header\": "
    "\"X-Tenant-Id\"}}],"
    " \"plugins\": {\"candidate\": {\"path\": \"candidate.so\"}}}";

static const int64_t T0 = 1795946400000000LL; /* µs */

static int setup(void **state)
{
    world *w = calloc(1, sizeof(*w));
    ust_test_tmpdir(w->dir);
    snprintf(w->log_path, sizeof(w->log_path), "%s/events.db", w->dir);
    ust_test_set_secrets("whsec_coverage_test");
    char *err = NULL;
    w->cfg = ust_test_parse_config(config_text, "coverage.json");
    assert_int_equal(ust_config_load_secrets(w->cfg, &err), 0);
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &w->log, &err), 0);
    ust_sig_params sp = {UST_SCHEME_STRIPE, "whsec_coverage_test", NULL, 300};
    assert_int_equal(ust_sig_signer_new(&sp, NULL, 0, &w->signer), 0);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    ust_log_close(w->log);
    ust_config_free(w->cfg);
    ust_sig_signer_free(w->signer);
    return ust_test_tmpdir_teardown(state);
}

/* Appends one request at T0 + at_us, with up to two headers (NULL: none). */
static void post(world *w, const char *target, int64_t at_us, const char *body,
                 const char *h1, const char *v1, const char *h2, const char *v2)
{
    ust_request r;
    memset(&r, 0, sizeof(r));
    r.received_at_us = T0 + at_us;
    r.remote = ust_strdup("192.0.2.1:1");
    r.method = ust_strdup("POST");
    r.target = ust_strdup(target);
    r.body = (unsigned char *)ust_strdup(body);
    r.body_len = strlen(body);
    ust_request_add_header(&r, "Content-Type", "application/json");
    if (h1 != NULL)
        ust_request_add_header(&r, h1, v1);
    if (h2 != NULL)
        ust_request_add_header(&r, h2, v2);
    char *err = NULL;
    assert_int_equal(ust_log_append_requests(w->log, w->cfg, &r, 1, NULL, NULL, &err),
                     0);
    ust_request_clear(&r);
}

/* A webhook on route: event id, transaction, target state, order, amount. */
static void hook(world *w, const char *route, int64_t at_s, const char *id,
                 const char *tx, const char *state, const char *order, int amount)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"id\": \"%s\", \"tx\": \"%s\", \"state\": \"%s\", \"order\": \"%s\","
             " \"amount\": %d, \"currency\": \"eur\"}",
             id, tx, state, order, amount);
    post(w, route, at_s * 1000000, body, NULL, NULL, NULL, NULL);
}

/* An API request at at_ms with a key and a tenant (NULL: without), and an
 * amount that makes its request hash. */
static void api(world *w, int64_t at_ms, const char *key, const char *tenant,
                int amount)
{
    char body[64];
    snprintf(body, sizeof(body), "{\"amount\": %d}", amount);
    const char *h1 = key ? "Idempotency-Key" : tenant ? "X-Tenant-Id" : NULL;
    const char *v1 = key ? key : tenant;
    post(w, "/pay", at_ms * 1000, body, h1, v1, key && tenant ? "X-Tenant-Id" : NULL,
         tenant);
}

/* The counts of the world's log through seq (0: all of it), params from
 * its config (api_routes NULL: the older run's fallback). */
static ust_coverage count_through(world *w, int64_t through, int fallback)
{
    ust_coverage_params p;
    assert_int_equal(ust_coverage_params_from_config(w->cfg, &p), 0);
    if (fallback) {
        ust_free(p.api_routes);
        p.api_routes = NULL;
    }
    ust_coverage cov;
    char *err = NULL;
    if (ust_coverage_count(w->log, &p, through ? through : INT64_MAX, &cov, &err) != 0)
        fail_msg("count: %s", err);
    ust_coverage_params_clear(&p);
    return cov;
}

/* Every kind's count is as want says (the kinds not named: 0). */
static void expect_counts(const ust_coverage *got, const int64_t want[UST_COVERAGE_N])
{
    for (int k = 0; k < UST_COVERAGE_N; k++)
        if (got->counts[k] != want[k])
            fail_msg("%s: counted %lld, expected %lld",
                     ust_coverage_kind_name((ust_coverage_kind)k),
                     (long long)got->counts[k], (long long)want[k]);
}

#define K(kind) [UST_COVERAGE_##kind]

static void test_identical_redelivery(void **state)
{
    world *w = *state;
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 100);
    hook(w, "/hooks", 60, "e1", "t1", "paid", "o1", 100);      /* again: 1 */
    hook(w, "/hooks", 7200, "e1", "t1", "paid", "o1", 100);    /* and again: 2 */
    hook(w, "/other", 60, "e1", "t9", "paid", "o9", 900);      /* another provider */
    hook(w, "/hooks", 100, "e2", "t1", "refunded", "o1", 100); /* a new event */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(identical_redelivery) = 2});
}

static void test_redelivery_new_id(void **state)
{
    world *w = *state;
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 100);
    hook(w, "/hooks", 60, "e2", "t1", "paid", "o1", 100); /* a new id for paid: 1 */
    hook(w, "/hooks", 90, "e1", "t1", "paid", "o1", 100); /* an old id: identical */
    hook(w, "/hooks", 120, "e3", "t1", "refunded", "o1", 100); /* a state not seen */
    hook(w, "/hooks", 180, "e4", "t2", "paid", "o2", 200);     /* another transaction */
    hook(w, "/other", 240, "e5", "t1", "paid", "o1", 100);     /* another provider */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(identical_redelivery) = 1,
                                                  K(redelivery_new_id) = 1});
}

static void test_out_of_order(void **state)
{
    world *w = *state;
    /* refunded first (1), paid, refunded, then paid again (2) */
    hook(w, "/hooks", 0, "a1", "ta", "refunded", "oa", 100);
    hook(w, "/hooks", 1, "a2", "ta", "paid", "oa", 100);
    hook(w, "/hooks", 2, "a3", "ta", "refunded", "oa", 100);
    hook(w, "/hooks", 3, "a4", "ta", "paid", "oa", 100);
    /* pending twice (the current state again), cancelled, then paid (3) */
    hook(w, "/hooks", 10, "b1", "tb", "pending", "ob", 200);
    hook(w, "/hooks", 11, "b2", "tb", "pending", "ob", 200);
    hook(w, "/hooks", 12, "b3", "tb", "cancelled", "ob", 200);
    hook(w, "/hooks", 13, "b4", "tb", "paid", "ob", 200);
    /* an illegal move leaves the state: pending, refunded (4), paid, refunded */
    hook(w, "/hooks", 20, "c1", "tc", "pending", "oc", 300);
    hook(w, "/hooks", 21, "c2", "tc", "refunded", "oc", 300);
    hook(w, "/hooks", 22, "c3", "tc", "paid", "oc", 300);
    hook(w, "/hooks", 23, "c4", "tc", "refunded", "oc", 300);
    ust_coverage got = count_through(w, 0, 0);
    /* a3, a4, b2 and c4 each bring a new id for a state seen before */
    expect_counts(
        &got, (int64_t[UST_COVERAGE_N]){K(out_of_order) = 4, K(redelivery_new_id) = 4});
}

static void test_semantic_pair(void **state)
{
    world *w = *state;
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 1500);
    hook(w, "/hooks", 10, "e1", "t1", "paid", "o1", 1500);   /* a redelivery: no move */
    hook(w, "/hooks", 600, "e2", "t2", "paid", "o1", 1500);  /* 600 s: in (1) */
    hook(w, "/hooks", 1201, "e3", "t3", "paid", "o1", 1500); /* 601 s: out */
    hook(w, "/hooks", 1202, "e4", "t4", "paid", "o1", 1600); /* another amount */
    hook(w, "/other", 1203, "e5", "t5", "paid", "o1", 1500); /* another provider */
    hook(w, "/hooks", 1204, "e6", "t6", "paid", "o1", 1500); /* 3 s after t3 (2) */
    /* an illegal move to paid is no move: cancelled then paid */
    hook(w, "/hooks", 1205, "e7", "t7", "cancelled", "o1", 1500);
    hook(w, "/hooks", 1206, "e8", "t7", "paid", "o1", 1500);
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got,
                  (int64_t[UST_COVERAGE_N]){K(identical_redelivery) = 1,
                                            K(semantic_pair) = 2, K(out_of_order) = 1});
}

static void test_semantic_window_from_the_config(void **state)
{
    world *w = *state;
    w->cfg->coverage.semantic_window_s = 5;
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 1500);
    hook(w, "/hooks", 5, "e2", "t2", "paid", "o1", 1500);  /* in */
    hook(w, "/hooks", 11, "e3", "t3", "paid", "o1", 1500); /* 6 s: out */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(semantic_pair) = 1});
}

static void test_api_repeats(void **state)
{
    world *w = *state;
    api(w, 0, "k1", "t1", 100);
    api(w, 499, "k1", "t1", 100);      /* within 500 ms: concurrent */
    api(w, 500, "k1", "t1", 100);      /* 500 ms: completed */
    api(w, 1000, "k1", "t1", 200);     /* another hash: mismatch */
    api(w, 86400000, "k1", "t1", 100); /* a day after: completed, not after */
    api(w, 86400001, "k1", "t1", 100); /* past the TTL: completed and after */
    api(w, 86400002, "k1", "t1", 300); /* mismatch and after */
    api(w, 2000, "k2", "t1", 100);     /* another key */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){
                            K(api_concurrent_repeat) = 1, K(api_completed_repeat) = 3,
                            K(api_payload_mismatch) = 2, K(api_after_ttl) = 2});
    /* The first request of the key is what each repeat is held to: a
     * mismatching one in between changes nothing. */
}

static void test_api_params_from_the_config(void **state)
{
    world *w = *state;
    w->cfg->coverage.op_latency_ms = 2000;
    w->cfg->coverage.key_ttl_s = 60;
    api(w, 0, "k1", "t1", 100);
    api(w, 1999, "k1", "t1", 100);  /* concurrent */
    api(w, 60001, "k1", "t1", 100); /* completed, after the TTL */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(api_concurrent_repeat) = 1,
                                                  K(api_completed_repeat) = 1,
                                                  K(api_after_ttl) = 1});
}

static void test_api_key_across_tenants(void **state)
{
    world *w = *state;
    api(w, 0, "k1", "t1", 100);
    api(w, 10, "k1", "t2", 100); /* under another tenant first: 1 */
    api(w, 20, "k1", "t2", 100); /* t2 had it already: a repeat of t2's */
    api(w, 30, "k1", "t3", 100); /* 2 */
    api(w, 40, "k1", "t1", 100); /* t1 had it: a repeat */
    api(w, 50, "k2", NULL, 100); /* no tenant */
    api(w, 60, "k2", "t1", 100); /* after the tenant-less one: 3 */
    api(w, 70, "k3", "t4", 100); /* a key of one tenant only */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(api_key_across_tenants) = 3,
                                                  K(api_completed_repeat) = 0,
                                                  K(api_concurrent_repeat) = 2});
}

static void test_api_missing_key(void **state)
{
    world *w = *state;
    api(w, 0, NULL, "t1", 100);
    api(w, 10, NULL, NULL, 100);
    api(w, 20, "k1", "t1", 100);
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 100);  /* a webhook has no key */
    post(w, "/nowhere", 0, "{}", NULL, NULL, NULL, NULL); /* no route at all */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(api_missing_key) = 2});
    /* A run recorded before coverage: API requests are the rows of a route
     * with neither an event id nor a transaction id; the same here. */
    got = count_through(w, 0, 1);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(api_missing_key) = 2});
}

/* A request to /signed, signed at at_s (the time of its signature) or
 * carrying sig as its Stripe-Signature header ("" for none). */
static void signed_hook(world *w, int64_t at_s, int64_t signed_at_s, const char *sig,
                        const char *id)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"id\": \"%s\", \"tx\": \"t1\", \"state\": \"paid\", \"order\": \"o1\","
             " \"amount\": 100, \"currency\": \"eur\"}",
             id);
    ust_request r;
    memset(&r, 0, sizeof(r));
    r.body = (unsigned char *)body;
    r.body_len = strlen(body);
    if (sig == NULL)
        assert_int_equal(
            ust_sig_signer_sign(w->signer, T0 / 1000000 + signed_at_s, NULL, &r), 0);
    const char *value = sig ? sig : ust_request_header(&r, "Stripe-Signature");
    post(w, "/signed", at_s * 1000000, body,
         value && *value ? "Stripe-Signature" : NULL, value, NULL, NULL);
    r.body = NULL;
    ust_request_clear(&r);
}

static void test_signatures(void **state)
{
    world *w = *state;
    signed_hook(w, 0, 0, "t=1,v1=00", "e1"); /* invalid */
    signed_hook(w, 1, 0, "", "e1");          /* missing */
    signed_hook(w, 2000, 0, NULL, "e1");     /* expired: signed 2000 s before */
    signed_hook(w, 3000, 3000, NULL, "e1");  /* verified */
    signed_hook(w, 3001, 3001, NULL, "e2");  /* verified, a new id for paid */
    /* Webhook kinds count verified events only: e1 verified is the first of
     * its id, though three refused copies came before it. */
    ust_coverage got = count_through(w, 0, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){
                            K(signature_invalid) = 1, K(signature_missing) = 1,
                            K(signature_expired) = 1, K(redelivery_new_id) = 1});
}

static void test_only_events_through_the_cursor(void **state)
{
    world *w = *state;
    hook(w, "/hooks", 0, "e1", "t1", "paid", "o1", 100);  /* seq 1 */
    hook(w, "/hooks", 60, "e1", "t1", "paid", "o1", 100); /* seq 2 */
    api(w, 0, NULL, NULL, 100);                           /* seq 3 */
    ust_coverage got = count_through(w, 2, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){K(identical_redelivery) = 1});
    got = count_through(w, 1, 0);
    expect_counts(&got, (int64_t[UST_COVERAGE_N]){0});
}

static void test_kind_names(void **state)
{
    (void)state;
    ust_coverage_kind k;
    assert_int_equal(ust_coverage_kind_parse("api_after_ttl", &k), 0);
    assert_int_equal(k, UST_COVERAGE_api_after_ttl);
    assert_int_equal(ust_coverage_kind_parse("api_after", &k), UST_EINVAL);
    assert_string_equal(ust_coverage_kind_name(UST_COVERAGE_signature_expired),
                        "signature_expired");
    assert_non_null(
        strstr(ust_coverage_kind_list(), "identical_redelivery, redelivery_new_id, "));
    assert_null(ust_coverage_kind_name(UST_COVERAGE_N));
    /* the params round-trip through the run's metadata */
    ust_coverage_params p = {1, 2, 3, (char *)"[\"/pay\"]"}, q;
    char *text = ust_coverage_params_format(&p);
    char *err = NULL;
    assert_int_equal(ust_coverage_params_parse(text, &q, &err), 0);
    assert_int_equal(q.semantic_window_s, 1);
    assert_int_equal(q.op_latency_ms, 2);
    assert_int_equal(q.key_ttl_s, 3);
    assert_string_equal(q.api_routes, "[\"/pay\"]");
    ust_coverage_params_clear(&q);
    ust_free(text);
    assert_int_equal(ust_coverage_params_parse(NULL, &q, &err), 0);
    assert_int_equal(q.semantic_window_s, 600);
    assert_null(q.api_routes);
    assert_int_equal(ust_coverage_params_parse("{\"key_ttl_s\": -1}", &q, &err),
                     UST_EPARSE);
    assert_non_null(strstr(err, "key_ttl_s"));
    ust_free(err);
}

/* ---- the scenarios, and the gate ---------------------------------------- */

static ust_config *demo_config(void)
{
    char path[PATH_MAX];
    ust_test_source_path("scenarios/demo.config.json", path);
    return ust_test_load_config(path);
}

static ust_scenario *load_scenario(const ust_config *cfg, const char *rel)
{
    char path[PATH_MAX];
    ust_test_source_path(rel, path);
    ust_scenario *sc = NULL;
    char *err = NULL;
    if (ust_scenario_load(path, cfg, &sc, &err) != 0)
        fail_msg("%s: %s", rel, err);
    return sc;
}

/* Each kind's scenario file, rendered alone into a log, has an event of
 * that kind: the report can send a reader to it. */
static void test_each_scenario_exercises_its_kind(void **state)
{
    world *w = *state;
    ust_config *cfg = demo_config();
    ust_coverage_params p;
    assert_int_equal(ust_coverage_params_from_config(cfg, &p), 0);
    for (int k = 0; k < UST_COVERAGE_N; k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/scenario-%d.db", w->dir, k);
        ust_log *log = NULL;
        char *err = NULL;
        assert_int_equal(ust_log_open(path, UST_LOG_CREATE, &log, &err), 0);
        ust_scenario *sc =
            load_scenario(cfg, ust_coverage_kind_scenario((ust_coverage_kind)k));
        ust_test_append_scenario(log, cfg, sc, T0);
        ust_coverage cov;
        assert_int_equal(ust_coverage_count(log, &p, INT64_MAX, &cov, &err), 0);
        if (cov.counts[k] <= 0)
            fail_msg("%s has no %s event",
                     ust_coverage_kind_scenario((ust_coverage_kind)k),
                     ust_coverage_kind_name((ust_coverage_kind)k));
        ust_scenario_free(sc);
        ust_log_close(log);
    }
    ust_coverage_params_clear(&p);
    ust_config_free(cfg);
}

/* The report of a scenario-01 run: its Coverage section counts the
 * redelivery and sends a reader to the scenario of each kind it lacks; a
 * run recorded before coverage (no "coverage" in its metadata) is counted
 * all the same. */
static void check_report(world *w, const char *run)
{
    char out[PATH_MAX], md_path[PATH_MAX * 2], html_path[PATH_MAX * 2];
    snprintf(out, sizeof(out), "%s/report", w->dir);
    snprintf(md_path, sizeof(md_path), "%s/summary.md", out);
    snprintf(html_path, sizeof(html_path), "%s/index.html", out);
    ust_report_opts ro = {.run_path = run, .out_dir = out};
    char *err = NULL;
    if (ust_report_write(&ro, &err) != 0)
        fail_msg("report: %s", err);
    char *md = ust_test_read_file(md_path), *html = ust_test_read_file(html_path);
    assert_non_null(strstr(md, "| `identical_redelivery` | 1 |  |"));
    assert_non_null(strstr(md,
                           "| `api_concurrent_repeat` | 0 | **not exercised**: no "
                           "event of this kind; `scenarios/12-parallel-same-key.json` "
                           "exercises it |"));
    assert_non_null(strstr(html, "<h2 id=coverage>"));
    assert_non_null(strstr(html, "<code>scenarios/18-api-without-key.json</code>"));
    free(md);
    free(html);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(run, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "DELETE FROM meta WHERE key = 'coverage'", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    ust_coverage cov;
    assert_int_equal(ust_report_coverage(run, NULL, &cov, &err), 0);
    assert_int_equal(cov.counts[UST_COVERAGE_identical_redelivery], 1);
}

static void test_gate_requires_coverage(void **state)
{
    world *w = *state;
    ust_config *cfg = demo_config();
    cfg->candidate.isolate = 0;
    char log_path[PATH_MAX], run[PATH_MAX], triage[PATH_MAX];
    snprintf(log_path, sizeof(log_path), "%s/gate-events.db", w->dir);
    snprintf(run, sizeof(run), "%s/gate-run.db", w->dir);
    snprintf(triage, sizeof(triage), "%s/triage.json", w->dir);
    ust_test_write_file(triage, "{\"accepted\": []}");
    ust_log *log = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_open(log_path, UST_LOG_CREATE, &log, &err), 0);
    ust_scenario *sc = load_scenario(cfg, "scenarios/01-identical-retry.json");
    ust_test_append_scenario(log, cfg, sc, T0);
    ust_scenario_free(sc);
    ust_log_close(log);
    ust_test_replay_reference(cfg, log_path, run);
    char *out = NULL;
    /* without the flag the run passes: scenario 01 diverges nowhere */
    assert_int_equal(
        ust_test_cli(w->dir, &out, "gate --run '%s' --triage '%s'", run, triage), 0);
    free(out);
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "gate --run '%s' --triage '%s' --require-coverage "
                                  "identical_redelivery",
                                  run, triage),
                     0);
    assert_non_null(strstr(out, "PASS"));
    free(out);
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "gate --run '%s' --triage '%s' --require-coverage "
                                  "identical_redelivery,api_concurrent_repeat,"
                                  "signature_expired",
                                  run, triage),
                     1);
    assert_non_null(strstr(out, "no api_concurrent_repeat event"));
    assert_non_null(strstr(out, "scenarios/12-parallel-same-key.json"));
    assert_non_null(strstr(out, "no signature_expired event"));
    assert_null(strstr(out, "no identical_redelivery event"));
    free(out);
    assert_int_equal(ust_test_cli(w->dir, &out,
                                  "gate --run '%s' --triage '%s' --require-coverage "
                                  "identical_redelivery,concurrent",
                                  run, triage),
                     2);
    assert_non_null(strstr(out, "\"concurrent\" is no kind"));
    assert_non_null(strstr(out, "api_concurrent_repeat"));
    free(out);
    check_report(w, run);
    ust_config_free(cfg);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_identical_redelivery),
        T(test_redelivery_new_id),
        T(test_out_of_order),
        T(test_semantic_pair),
        T(test_semantic_window_from_the_config),
        T(test_api_repeats),
        T(test_api_params_from_the_config),
        T(test_api_key_across_tenants),
        T(test_api_missing_key),
        T(test_signatures),
        T(test_only_events_through_the_cursor),
        T(test_kind_names),
        T(test_each_scenario_exercises_its_kind),
        T(test_gate_requires_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
