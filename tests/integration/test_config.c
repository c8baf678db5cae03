/* Configuration: the documented example loads as it is, every broken config
 * is refused with the key path at fault, and secrets are named, never shown. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>
#include <understudy/hash.h>

#include "support.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char *fixture(const char *name)
{
    const char *root = getenv("UST_SOURCE_DIR");
    return ust_sprintf("%s/tests/data/%s", root != NULL ? root : ".", name);
}

static ust_config *load_example(void)
{
    char *path = fixture("config.json");
    ust_config *cfg = NULL;
    char *err = NULL;
    int rc = ust_config_load(path, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err != NULL ? err : "?");
    ust_free(path);
    return cfg;
}

static void test_example_loads(void **state)
{
    (void)state;
    ust_config *cfg = load_example();
    assert_string_equal(cfg->listen, "127.0.0.1:8080");
    /* Paths are the config folder's (tests/data/), made absolute at load. */
    char *data = fixture("");
    char dir[PATH_MAX], want[PATH_MAX + 64];
    assert_non_null(realpath(data, dir));
    ust_free(data);
    *strrchr(dir, '/') = '\0';
    *strrchr(dir, '/') = '\0'; /* the source tree: "../../" of tests/data */
    snprintf(want, sizeof(want), "%s/var/events.db", dir);
    assert_string_equal(cfg->log_path, want);
    snprintf(want, sizeof(want), "%s/var/live-run.db", dir);
    assert_string_equal(cfg->run_path, want);
    assert_int_equal(cfg->limits.max_body_bytes, 1048576);
    assert_int_equal(cfg->limits.max_headers, 64);
    assert_int_equal(cfg->limits.header_timeout_ms, 10000);
    assert_int_equal(cfg->limits.max_owed_bytes, 64 << 20);
    assert_int_equal(cfg->limits.max_owed_bytes_total, 256 << 20);
    assert_int_equal(cfg->n_routes, 3);

    const ust_route *s = &cfg->routes[0];
    assert_string_equal(s->path, "/webhooks/stripe");
    assert_int_equal(s->kind, UST_ROUTE_WEBHOOK);
    assert_string_equal(s->provider, "stripe");
    assert_int_equal(s->scheme, UST_SCHEME_STRIPE);
    assert_string_equal(s->secret_env, "UNDERSTUDY_STRIPE_SECRET");
    assert_int_equal(s->tolerance_s, 300);
    assert_null(s->secret);
    assert_string_equal(s->fields.event_id, "/id");
    assert_string_equal(s->fields.occurred_at, "/created");
    assert_string_equal(s->fields.intent, "/data/object/metadata/order_id");
    assert_string_equal(s->status_from, "/type");
    assert_int_equal(s->n_status_map, 4);
    assert_null(s->idem_header);

    const ust_route *w = &cfg->routes[1];
    assert_int_equal(w->scheme, UST_SCHEME_STANDARD_WEBHOOKS);
    assert_string_equal(w->fields.event_id, "header:webhook-id");
    assert_int_equal(w->n_status_map, 0);
    assert_string_equal(w->status_from, "/data/status");

    const ust_route *a = &cfg->routes[2];
    assert_int_equal(a->kind, UST_ROUTE_API);
    assert_int_equal(a->scheme, UST_SCHEME_NONE);
    assert_string_equal(a->idem_header, "Idempotency-Key");
    assert_string_equal(a->tenant_header, "X-Tenant-Id");
    assert_null(a->fields.event_id);

    snprintf(want, sizeof(want), "%s/build/src/plugins/legacy/understudy-legacy.so",
             dir);
    assert_string_equal(cfg->legacy.path, want);
    assert_null(cfg->legacy.exec);
    assert_int_equal(cfg->legacy.isolate, 0);
    assert_int_equal(cfg->candidate.isolate, 1);
    assert_int_equal(cfg->candidate.timeout_ms, 1000);
    assert_int_equal(cfg->candidate.max_rss_mb, 512);
    assert_true(json_is_object(cfg->legacy.config));
    assert_int_equal(
        json_integer_value(json_object_get(cfg->candidate.config, "semantic_window_s")),
        600);
    assert_int_equal(cfg->n_compare_ignore, 0);

    /* The config hash is the SHA-256 of the canonical text. */
    char *canon = ust_json_canonical(cfg->root);
    char hex[UST_SHA256_HEX_LEN + 1];
    ust_sha256_hex(canon, strlen(canon), hex);
    ust_free(canon);
    assert_string_equal(cfg->hash, hex);
    ust_config_free(cfg);
}

static void test_hash_ignores_layout(void **state)
{
    (void)state;
    const char *a =
        "{\"routes\":[{\"path\":\"/a\",\"kind\":\"api\",\"provider\":\"p\"}]}";
    const char *b = "{ \"routes\" : [ { \"provider\" : \"p\", \"kind\" : \"api\",\n"
                    "  \"path\" : \"/a\" } ] }";
    const char *c =
        "{\"routes\":[{\"path\":\"/b\",\"kind\":\"api\",\"provider\":\"p\"}]}";
    ust_config *ca = ust_test_parse_config(a, "a.json");
    ust_config *cb = ust_test_parse_config(b, "b.json");
    ust_config *cc = ust_test_parse_config(c, "c.json");
    assert_string_equal(ca->hash, cb->hash);
    assert_string_not_equal(ca->hash, cc->hash);
    ust_config_free(ca);
    ust_config_free(cb);
    ust_config_free(cc);
}

static void test_a_service_plugin_loads(void **state)
{
    (void)state;
    const char *t =
        "{\"routes\":[{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"api\"}],"
        "\"plugins\":{\"legacy\":{\"url\":\"http://127.0.0.1:9000/prefix\"},"
        "\"candidate\":{\"url\":\"https://svc.example\",\"timeout_ms\":2000,"
        "\"max_in_flight\":8,\"reset\":{\"url\":\"https://svc.example/reset\"},"
        "\"proxy\":\"http://proxy.example:3128\",\"resend_unknown\":true,"
        "\"verdicts\":{\"404\":\"invalid\"}}}}";
    ust_config *cfg = ust_test_parse_config(t, "s.json");
    assert_string_equal(cfg->legacy.url, "http://127.0.0.1:9000/prefix");
    assert_int_equal(cfg->legacy.max_in_flight, 1);
    assert_null(cfg->legacy.reset.url);
    assert_null(cfg->legacy.verdicts);
    assert_null(cfg->legacy.path);
    assert_null(cfg->legacy.proxy); /* none, whatever the environment says */
    assert_int_equal(cfg->legacy.resend_unknown, 0);
    assert_string_equal(cfg->candidate.proxy, "http://proxy.example:3128");
    assert_int_equal(cfg->candidate.resend_unknown, 1);
    assert_int_equal(cfg->candidate.max_in_flight, 8);
    assert_int_equal(cfg->candidate.timeout_ms, 2000);
    assert_string_equal(cfg->candidate.reset.method, "POST");
    assert_string_equal(cfg->candidate.reset.url, "https://svc.example/reset");
    assert_string_equal(
        json_string_value(json_object_get(cfg->candidate.verdicts, "404")), "invalid");
    ust_config_free(cfg);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *t =
        "{\"routes\":[{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","
        "\"signature\":{\"scheme\":\"hmac-sha256-hex\",\"secret_env\":\"X_S\","
        "\"header\":\"X-Sig\"}},"
        "{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"api\"}],"
        "\"plugins\":{\"candidate\":{\"exec\":[\"python3\",\"cand.py\"]}},"
        "\"compare\":{\"ignore\":[\"/"
        "payment_id\",\"\"],\"headers\":[\"Retry-After\"]}}";
    ust_config *cfg = ust_test_parse_config(t, "d.json");
    assert_null(cfg->listen);
    assert_int_equal(cfg->limits.max_body_bytes, 1048576);
    assert_int_equal(cfg->limits.max_headers, 64);
    assert_int_equal(cfg->limits.header_timeout_ms, 10000);
    /* A request's and an answer's body at the limit, escaped, and 1 MiB. */
    assert_int_equal(cfg->import.max_line_bytes, 12 * 1048576 + 1048576);
    assert_int_equal(cfg->routes[0].tolerance_s, 300);
    assert_string_equal(cfg->routes[0].sig_header, "X-Sig");
    assert_null(cfg->routes[0].idem_header);
    assert_string_equal(cfg->routes[1].idem_header, "Idempotency-Key");
    assert_null(cfg->routes[1].tenant_header);
    assert_null(cfg->legacy.path);
    assert_null(cfg->legacy.exec);
    assert_true(json_is_object(cfg->legacy.config));
    assert_null(cfg->candidate.path);
    assert_string_equal(cfg->candidate.exec[0], "python3");
    assert_string_equal(cfg->candidate.exec[1], "cand.py");
    assert_null(cfg->candidate.exec[2]);
    assert_int_equal(cfg->candidate.isolate, 1);
    assert_int_equal(json_object_size(cfg->candidate.config), 0);
    assert_int_equal(cfg->n_compare_ignore, 2);
    assert_string_equal(cfg->compare_ignore[0], "/payment_id");
    assert_int_equal(cfg->n_compare_headers, 1);
    assert_string_equal(cfg->compare_headers[0], "Retry-After");
    assert_int_equal(cfg->coverage.semantic_window_s, 600);
    assert_int_equal(cfg->coverage.op_latency_ms, 500);
    assert_int_equal(cfg->coverage.key_ttl_s, 86400);
    ust_config_free(cfg);
    /* each coverage key on its own */
    cfg = ust_test_parse_config(
        "{\"routes\":[{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"a\"}],"
        "\"plugins\":{\"candidate\":{\"path\":\"c.so\"}},"
        "\"coverage\":{\"op_latency_ms\":250}}",
        "c.json");
    assert_int_equal(cfg->coverage.semantic_window_s, 600);
    assert_int_equal(cfg->coverage.op_latency_ms, 250);
    assert_int_equal(cfg->coverage.key_ttl_s, 86400);
    ust_config_free(cfg);
}

#define UNSIGNED "\"signature\":{\"scheme\":\"none\"}"
#define R0 "{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED "}"
#define ROUTES(x) "{\"routes\":[" x "]}"

/* A config text and what its refusal says. */
typedef struct refused_case {
    const char *text;
    const char *expect;
} refused_case;

/* expect: a substring of the message. */
static const refused_case broken[] = {
    /* Its microseconds must fit the arithmetic of /healthz. */
    {"{\"routes\":[" R0 "],\"health\":{\"max_lag_s\":9223372036855}}",
     "cfg.json: health.max_lag_s: expected at most 1000000000 seconds"},
    {"{\"routes\":[" R0 "],\"cache\":{\"state_mb\":0}}",
     "cfg.json: cache.state_mb: expected a positive integer"},
    {"{\"routes\":[" R0 "],\"cache\":{\"run_pages_mb\":1048577}}",
     "cfg.json: cache.run_pages_mb: expected at most 1048576 (MiB)"},
    {"{\"routes\":[" R0 "],\"cache\":{\"state\":1}}",
     "cfg.json: unknown key \"cache.state\" (known here: state_mb, run_pages_mb)"},
    /* The coverage windows, in µs, must fit the count's arithmetic. */
    {"{\"routes\":[" R0 "],\"coverage\":{\"key_ttl_s\":9223372036855}}",
     "cfg.json: coverage.key_ttl_s: expected at most 1000000000"},
    {"{\"routes\":[" R0 "],\"coverage\":{\"op_latency_ms\":0}}",
     "cfg.json: coverage.op_latency_ms: expected a positive integer"},
    {"{\"routes\":[" R0 "],\"coverage\":[]}", "cfg.json: coverage: expected an object"},
    {ROUTES(R0 ",{\"path\":\"/s\",\"kind\":\"webhook\",\"provider\":\"p\","
               "\"signature\":{\"scheme\":\"paypal\",\"secret_env\":\"S\"}}"),
     "cfg.json: routes[1].signature.scheme: expected one of " UST_SIG_SCHEME_CHOICES},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\"}"),
     "cfg.json: routes[0].provider: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"\"}"),
     "cfg.json: routes[0].provider: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"hook\",\"provider\":\"p\"}"),
     "cfg.json: routes[0].kind: expected one of \"webhook\", \"api\""},
    {ROUTES("{\"path\":\"w\",\"kind\":\"webhook\",\"provider\":\"p\"}"),
     "cfg.json: routes[0].path: expected"},
    {ROUTES("{\"kind\":\"webhook\",\"provider\":\"p\"}"),
     "cfg.json: routes[0].path: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
            "\"fields\":{\"event_id\":\"id\"}}"),
     "cfg.json: routes[0].fields.event_id: expected a JSON Pointer"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
            "\"fields\":{\"amount\":\"/a~2b\"}}"),
     "cfg.json: routes[0].fields.amount: expected a JSON Pointer"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
            "\"fields\":{\"event_id\":\"header:\"}}"),
     "cfg.json: routes[0].fields.event_id: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
            "\"fields\":{\"event_id\":7}}"),
     "cfg.json: routes[0].fields.event_id: expected"},
    {ROUTES(
         "{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
         "\"status\":{\"from\":\"/type\",\"map\":{\"charge.refunded\":\"refund\"}}}"),
     "cfg.json: routes[0].status.map.charge.refunded: expected one of pending, paid, "
     "refunded, cancelled"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED ","
            "\"status\":{\"map\":{}}}"),
     "cfg.json: routes[0].status.from: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","
            "\"signature\":{\"scheme\":\"stripe\"}}"),
     "cfg.json: routes[0].signature.secret_env: expected"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","
            "\"signature\":{\"scheme\":\"stripe\",\"secret_env\":\"S\",\"tolerance_s\":"
            "0}}"),
     "cfg.json: routes[0].signature.tolerance_s: expected a positive integer"},
    {"{\"limits\":{\"max_body_bytes\":-1},\"routes\":[" R0 "]}",
     "cfg.json: limits.max_body_bytes: expected a positive integer"},
    {"{\"limits\":{\"max_headers\":1.5},\"routes\":[" R0 "]}",
     "cfg.json: limits.max_headers: expected a positive integer"},
    {"{\"limits\":{\"max_owed_bytes\":0},\"routes\":[" R0 "]}",
     "cfg.json: limits.max_owed_bytes: expected a positive integer"},
    {"{\"limits\":{\"max_owed_bytes_total\":\"1\"},\"routes\":[" R0 "]}",
     "cfg.json: limits.max_owed_bytes_total: expected a positive integer"},
    {"{\"import\":{\"max_line_bytes\":0},\"routes\":[" R0 "]}",
     "cfg.json: import.max_line_bytes: expected a positive integer"},
    {"{\"import\":[],\"routes\":[" R0 "]}", "cfg.json: import: expected an object"},
    {"{\"import\":{\"max_line\":5},\"routes\":[" R0 "]}",
     "cfg.json: unknown key \"import.max_line\" (known here: max_line_bytes)"},
    {ROUTES(R0 "," R0),
     "cfg.json: routes[1].path: expected a path not used by another route"},
    {"{\"routes\":[]}", "cfg.json: routes: expected a non-empty array"},
    {"{}", "cfg.json: routes: expected a non-empty array"},
    {"[1]", "cfg.json: top level: expected an object"},
    {"{\"routes\":[7]}", "cfg.json: routes[0]: expected an object"},
    {"{\"routes\":[" R0 "],\n\"plugins\":{\"candidate\":{\"exec\":[\"a\",2]}}}",
     "cfg.json: plugins.candidate.exec[1]: expected a non-empty string"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"candidate\":{\"exec\":\"run.sh\"}}}",
     "cfg.json: plugins.candidate.exec: expected a non-empty array of strings"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"exec\":[\"b\"]}}}",
     "cfg.json: plugins.legacy: expected exactly one of"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"url\":\"http://h/\"}}}",
     "cfg.json: plugins.legacy: expected exactly one of"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"legacy\":{\"url\":\"ftp://h/\"}}}",
     "cfg.json: plugins.legacy.url: expected an http:// or https:// URL"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"legacy\":{\"url\":\"http://h\",\"verdicts\":[]}}}",
     "cfg.json: plugins.legacy.verdicts: expected an object of HTTP status to verdict"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"config\":[]}}}",
     "cfg.json: plugins.legacy.config: expected an object"},
    /* The url kind's keys. */
    {"{\"routes\":[" R0
     "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"url\":\"http://h/\"}}}",
     "cfg.json: plugins.legacy: expected exactly one of \"path\" (a shared library), "
     "\"exec\" (argv), \"url\" (an HTTP service) or \"recorded\": true (production's "
     "recorded answers)"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"candidate\":{\"url\":\"ftp://h/\"}}}",
     "cfg.json: plugins.candidate.url: expected an http:// or https:// URL"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"url\":\"http://h\",\"max_in_flight\":0}}}",
     "cfg.json: plugins.candidate.max_in_flight: expected a positive integer"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"url\":\"http://h\",\"max_in_flight\":65}}}",
     "cfg.json: plugins.candidate.max_in_flight: expected at most 64"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"candidate\":{\"url\":\"http://h\","
     "\"reset\":{\"method\":\"POST\"}}}}",
     "cfg.json: plugins.candidate.reset.url: expected an http:// or https:// URL"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"candidate\":{\"url\":\"http://h\","
     "\"reset\":{\"url\":\"http://h/r\",\"verb\":\"PUT\"}}}}",
     "unknown key \"plugins.candidate.reset.verb\""},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"url\":\"http://h\",\"verdicts\":[]}}}",
     "cfg.json: plugins.candidate.verdicts: expected an object of HTTP status to "
     "verdict"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"path\":\"a.so\",\"max_in_flight\":2}}}",
     "cfg.json: plugins.candidate: expected \"url\" beside \"max_in_flight\", "
     "\"reset\", \"proxy\" or \"resend_unknown\""},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"path\":\"a.so\",\"resend_unknown\":true}}}",
     "cfg.json: plugins.candidate: expected \"url\" beside"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"url\":\"http://h\",\"proxy\":\"ftp://p\"}}}",
     "cfg.json: plugins.candidate.proxy: expected a proxy URL (http://, https://, "
     "socks5:// or socks5h://)"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"candidate\":{\"url\":\"http://h\",\"resend_unknown\":1}}}",
     "cfg.json: plugins.candidate.resend_unknown: expected true or false"},
    {"{\"routes\":[" R0 "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"isolate\":1}}}",
     "cfg.json: plugins.legacy.isolate: expected true or false"},
    {"{\"routes\":[" R0
     "],\"plugins\":{\"legacy\":{\"path\":\"a.so\",\"timeout_ms\":0}}}",
     "cfg.json: plugins.legacy.timeout_ms: expected a positive integer"},
    {"{\"routes\":[" R0 "],\"compare\":{\"ignore\":[\"id\"]}}",
     "cfg.json: compare.ignore[0]: expected a JSON Pointer"},
    {"{\"routes\":[" R0 "],\"listen\":8080}", "cfg.json: listen: expected a string"},
    {"{\"routes\":[" R0 "],\"routes\":[" R0 "]}", "cfg.json:1:"},
    {"{\n  \"routes\": [\n    {\"path\": \"/w\",}\n  ]\n}", "cfg.json:3:"},
};

/* Each text is refused with UST_ECONFIG and a message containing expect. */
static void expect_refused(const char *name, const char *text, const char *expect)
{
    ust_config *cfg = (ust_config *)1;
    char *err = NULL;
    int rc = ust_config_parse(text, strlen(text), "cfg.json", &cfg, &err);
    if (rc != UST_ECONFIG || err == NULL || strstr(err, expect) == NULL)
        fail_msg("%s: rc %d, message \"%s\", wanted \"%s\"", name, rc,
                 err != NULL ? err : "(none)", expect);
    assert_null(cfg);
    ust_free(err);
}

/* Each case refused; failures name the case as "<label> <index>". */
static void expect_all_refused(const char *label, const refused_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char name[32];
        (void)snprintf(name, sizeof(name), "%s %zu", label, i);
        expect_refused(name, cases[i].text, cases[i].expect);
    }
}

static void test_broken_configs(void **state)
{
    (void)state;
    expect_all_refused("case", broken, UST_ARRAY_SIZE(broken));
}

/* A key understudy does not know is a mistake, not an extension: a
 * misspelled "signature" would make a route unsigned and a misspelled
 * "redact" would unmask every report. Every object level is checked. */
#define SIGNED(extra)                                                                  \
    ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","                 \
           "\"signature\":{\"scheme\":\"stripe\",\"secret_env\":\"S\"" extra "}}")
#define WITH(x) "{\"routes\":[" R0 "]," x "}"

/* expect: the whole message. */
static const refused_case misspelled[] = {
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","
            "\"signatur\":{\"scheme\":\"stripe\",\"secret_env\":\"S\"}}"),
     "cfg.json: unknown key \"routes[0].signatur\" (did you mean \"signature\"?)"},
    {WITH("\"redac\":[\"email\"]"),
     "cfg.json: unknown key \"redac\" (did you mean \"redact\"?)"},
    {WITH("\"limits\":{\"max_body_byte\":10}"),
     "cfg.json: unknown key \"limits.max_body_byte\" (did you mean "
     "\"max_body_bytes\"?)"},
    {SIGNED(",\"tolerence_s\":600"),
     "cfg.json: unknown key \"routes[0].signature.tolerence_s\" (did you mean "
     "\"tolerance_s\"?)"},
    {WITH("\"plugins\":{\"candidate\":{\"path\":\"c.so\",\"timout_ms\":50}}"),
     "cfg.json: unknown key \"plugins.candidate.timout_ms\" (did you mean "
     "\"timeout_ms\"?)"},
    {WITH("\"plugins\":{\"legacy\":{\"path\":\"l.so\"},\"candidat\":{}}"),
     "cfg.json: unknown key \"plugins.candidat\" (did you mean \"candidate\"?)"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED
            ",\"fields\":{\"event_id\":\"/id\",\"ammount\":\"/a\"}}"),
     "cfg.json: unknown key \"routes[0].fields.ammount\" (did you mean \"amount\"?)"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED
            ",\"status\":{\"from\":\"/s\",\"mapp\":{}}}"),
     "cfg.json: unknown key \"routes[0].status.mapp\" (did you mean \"map\"?)"},
    {ROUTES(R0 ",{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"a\","
               "\"idempotency\":{\"tenant-header\":\"X-T\"}}"),
     "cfg.json: unknown key \"routes[1].idempotency.tenant-header\" (did you mean "
     "\"tenant_header\"?)"},
    {WITH("\"compare\":{\"ignored\":[]}"),
     "cfg.json: unknown key \"compare.ignored\" (did you mean \"ignore\"?)"},
    /* A key's control characters never reach the terminal. */
    {WITH("\"\\u001b[2Jx\":1"),
     "cfg.json: unknown key \"?[2Jx\" (known here: listen, log, run, limits, routes, "
     "plugins, compare, redact, retention, capture, admin_listen, health, "
     "partition_by, coverage, import, cache)"},
    /* Nothing near: the message lists what the level knows. */
    {WITH("\"future_key\":{\"anything\":[1,2]}"),
     "cfg.json: unknown key \"future_key\" (known here: listen, log, run, limits, "
     "routes, plugins, compare, redact, retention, capture, admin_listen, health, "
     "partition_by, coverage, import, cache)"},
    {WITH("\"health\":{\"max_lag\":5}"),
     "cfg.json: unknown key \"health.max_lag\" (did you mean \"max_lag_s\"?)"},
    {WITH("\"coverage\":{\"window\":5}"),
     "cfg.json: unknown key \"coverage.window\" (known here: semantic_window_s, "
     "op_latency_ms, key_ttl_s)"},
    {ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"," UNSIGNED
            ",\"x\":1}"),
     "cfg.json: unknown key \"routes[0].x\" (known here: path, kind, provider, "
     "signature, fields, status, idempotency, sample)"},
};

static void test_unknown_keys(void **state)
{
    (void)state;
    expect_all_refused("misspelling", misspelled, UST_ARRAY_SIZE(misspelled));
    /* A plugin's own "config" is the plugin's business: any key passes. */
    const char *t = WITH("\"plugins\":{\"candidate\":{\"path\":\"c.so\","
                         "\"config\":{\"timout_ms\":1,\"x\":{\"y\":2}}}}");
    ust_config *cfg = ust_test_parse_config(t, "cfg.json");
    assert_int_equal(
        json_integer_value(json_object_get(cfg->candidate.config, "timout_ms")), 1);
    ust_config_free(cfg);
}

/* An unsigned webhook route must say so: leaving the block out (or
 * misspelling it) never turns verification off. */
static void test_webhook_route_needs_a_signature(void **state)
{
    (void)state;
    expect_refused("no block",
                   ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\"}"),
                   "cfg.json: routes[0].signature: expected a signature block "
                   "(or {\"scheme\": \"none\"} for an unsigned webhook route)");
    expect_refused("none with a secret",
                   ROUTES("{\"path\":\"/w\",\"kind\":\"webhook\",\"provider\":\"p\","
                          "\"signature\":{\"scheme\":\"none\",\"secret_env\":\"S\"}}"),
                   "cfg.json: routes[0].signature.secret_env: expected nothing but "
                   "\"scheme\" when the scheme is \"none\"");
    expect_refused("header for stripe", SIGNED(",\"header\":\"X-Sig\""),
                   "cfg.json: routes[0].signature.header: expected no \"header\" here: "
                   "it is for scheme \"hmac-sha256-hex\" only");

    const char *t = ROUTES(R0 ",{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"a\"}");
    ust_config *cfg = ust_test_parse_config(t, "cfg.json");
    char *err = NULL;
    assert_int_equal(cfg->routes[0].scheme, UST_SCHEME_NONE);
    assert_null(cfg->routes[0].secret_env);
    assert_int_equal(cfg->routes[1].scheme, UST_SCHEME_NONE);
    /* Nothing to read for an unsigned route. */
    assert_int_equal(ust_config_load_secrets(cfg, &err), 0);
    assert_null(cfg->routes[0].secret);
    ust_config_free(cfg);
}

static void test_missing_file(void **state)
{
    (void)state;
    ust_config *cfg;
    char *err = NULL;
    assert_int_equal(ust_config_load("/nonexistent/understudy.json", &cfg, &err),
                     UST_EIO);
    assert_non_null(strstr(err, "/nonexistent/understudy.json"));
    assert_null(cfg);
    ust_free(err);
}

static void test_secrets(void **state)
{
    (void)state;
    ust_config *cfg = load_example();
    char *err = NULL;
    unsetenv("UNDERSTUDY_STRIPE_SECRET");
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_topsecretvalue", 1);
    assert_int_equal(ust_config_load_secrets(cfg, &err), UST_ECONFIG);
    assert_non_null(strstr(err, "routes[0].signature.secret_env: environment variable "
                                "UNDERSTUDY_STRIPE_SECRET is not set"));
    ust_free(err);
    err = NULL;

    setenv("UNDERSTUDY_STRIPE_SECRET", "whsec_stripe", 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "", 1);
    assert_int_equal(ust_config_load_secrets(cfg, &err), UST_ECONFIG);
    assert_non_null(strstr(err, "routes[1].signature.secret_env"));
    assert_non_null(strstr(err, "UNDERSTUDY_STANDARD_SECRET"));
    assert_null(strstr(err, "whsec_"));
    ust_free(err);
    err = NULL;

    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    assert_int_equal(ust_config_load_secrets(cfg, &err), 0);
    assert_string_equal(cfg->routes[0].secret, "whsec_stripe");
    assert_string_equal(cfg->routes[1].secret,
                        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    assert_null(cfg->routes[2].secret);
    /* Loading again replaces, without leaking. */
    assert_int_equal(ust_config_load_secrets(cfg, &err), 0);
    ust_config_free(cfg);
}

/* A Standard Webhooks secret is whsec_ and base64: one that is not would
 * make every delivery on its route "invalid", so start refuses it, naming
 * the variable and never the value. */
static const char *const bad_secrets[] = {
    "whsec_not-base64!",
    "whsec_topsecretvalue",
    "whsec_",
    "whsec_====",
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=",
    "whsec_MfKQ 9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
};

static void test_standard_secret_must_be_base64(void **state)
{
    (void)state;
    ust_config *cfg = load_example();
    setenv("UNDERSTUDY_STRIPE_SECRET", "whsec_stripe", 1);
    for (size_t i = 0; i < UST_ARRAY_SIZE(bad_secrets); i++) {
        char *err = NULL;
        setenv("UNDERSTUDY_STANDARD_SECRET", bad_secrets[i], 1);
        assert_int_equal(ust_config_load_secrets(cfg, &err), UST_ECONFIG);
        assert_non_null(err);
        if (strstr(err, "tests/data/config.json: routes[1].signature.secret_env: "
                        "environment variable UNDERSTUDY_STANDARD_SECRET is not a "
                        "Standard Webhooks secret (whsec_ followed by base64)") == NULL)
            fail_msg("secret %zu: %s", i, err);
        if (strlen(bad_secrets[i]) > 6) /* the value, past whsec_, is never shown */
            assert_null(strstr(err, bad_secrets[i] + 6));
        ust_free(err);
    }
    /* The prefix is optional, as it is for the verifier. */
    char *err = NULL;
    setenv("UNDERSTUDY_STANDARD_SECRET", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    assert_int_equal(ust_config_load_secrets(cfg, &err), 0);
    ust_config_free(cfg);
}

/* The report end to end: a route that says "signatur" was served
 * unsigned. Now `understudy serve` refuses the file with exit status 2
 * before it listens. */
static void test_serve_refuses_a_misspelled_key(void **state)
{
    (void)state;
    char dir[PATH_MAX], src[PATH_MAX], cfg_path[PATH_MAX], log_path[PATH_MAX],
        run_path[PATH_MAX], lp[PATH_MAX], cp[PATH_MAX];
    ust_test_tmpdir(dir);
    snprintf(cfg_path, sizeof(cfg_path), "%s/config.json", dir);
    snprintf(log_path, sizeof(log_path), "%s/events.db", dir);
    snprintf(run_path, sizeof(run_path), "%s/run.db", dir);
    snprintf(lp, sizeof(lp), "%s/src/plugins/legacy/understudy-legacy.so",
             getenv("UST_BUILD_DIR"));
    snprintf(cp, sizeof(cp), "%s/src/plugins/candidate/understudy-candidate.so",
             getenv("UST_BUILD_DIR"));
    ust_test_source_path("tests/data/config.json", src);
    json_error_t jerr;
    json_t *doc = json_load_file(src, 0, &jerr);
    assert_non_null(doc);
    json_t *route = json_array_get(json_object_get(doc, "routes"), 0);
    json_object_set(route, "signatur", json_object_get(route, "signature"));
    json_object_del(route, "signature");
    json_object_set_new(
        doc, "plugins",
        json_pack("{s:{s:s},s:{s:s}}", "legacy", "path", lp, "candidate", "path", cp));
    assert_int_equal(json_dump_file(doc, cfg_path, 0), 0);
    json_decref(doc);
    setenv("UNDERSTUDY_STRIPE_SECRET", "whsec_stripe", 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);

    /* The shell says its pid (the server's, after exec) first, so a server
     * that wrongly starts can be stopped. */
    const char *bin = getenv("UST_BIN");
    assert_non_null(bin);
    char *cmd =
        ust_sprintf("echo $$; exec '%s' serve --config '%s' --listen 127.0.0.1:0 "
                    "--log '%s' --run '%s' 2>&1",
                    bin, cfg_path, log_path, run_path);
    FILE *f = popen(cmd, "r");
    ust_free(cmd);
    assert_non_null(f);
    char line[1024], said[8192] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    pid_t pid = (pid_t)atol(line);
    int listened = 0;
    while (!listened && fgets(line, sizeof(line), f) != NULL) {
        listened = strstr(line, "listening on ") != NULL;
        strncat(said, line, sizeof(said) - strlen(said) - 1);
    }
    if (listened)
        kill(pid, SIGKILL);
    int status = pclose(f);
    ust_test_rmdir(dir);
    if (listened)
        fail_msg("serve started on a config with \"signatur\": %s", said);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    char *want = ust_sprintf("%s: unknown key \"routes[0].signatur\" (did you mean "
                             "\"signature\"?)",
                             cfg_path);
    if (strstr(said, want) == NULL)
        fail_msg("serve said \"%s\", wanted \"%s\"", said, want);
    ust_free(want);
}

static void test_route_lookup(void **state)
{
    (void)state;
    ust_config *cfg = load_example();
    assert_ptr_equal(ust_config_route(cfg, "/webhooks/stripe"), &cfg->routes[0]);
    assert_ptr_equal(ust_config_route(cfg, "/webhooks/stripe?x=1"), &cfg->routes[0]);
    assert_ptr_equal(ust_config_route(cfg, "/payments"), &cfg->routes[2]);
    assert_null(ust_config_route(cfg, "/webhooks/strip"));
    assert_null(ust_config_route(cfg, "/webhooks/stripe/"));
    assert_null(ust_config_route(cfg, "/webhooks/stripex"));
    assert_null(ust_config_route(cfg, ""));
    assert_null(ust_config_route(cfg, NULL));
    ust_config_free(cfg);
}

static void test_states(void **state)
{
    (void)state;
    assert_true(ust_state_is_valid("pending"));
    assert_true(ust_state_is_valid("paid"));
    assert_true(ust_state_is_valid("refunded"));
    assert_true(ust_state_is_valid("cancelled"));
    assert_false(ust_state_is_valid("canceled"));
    assert_false(ust_state_is_valid("Paid"));
    assert_false(ust_state_is_valid(""));
    assert_false(ust_state_is_valid(NULL));
}

/* Fail the Nth allocation, for every N until the parse succeeds: each
 * failure must come back as UST_ENOMEM with nothing leaked (ASan). */
static void test_parse_out_of_memory(void **state)
{
    (void)state;
    char *path = fixture("config.json");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char text[8192];
    size_t len = fread(text, 1, sizeof(text), f);
    (void)fclose(f);
    ust_free(path);
    int rc = UST_ENOMEM;
    long n;
    for (n = 0; rc == UST_ENOMEM && n < 10000; n++) {
        ust_config *cfg = NULL;
        char *err = NULL;
        ust_test_alloc_fail(n, 1);
        rc = ust_config_parse(text, len, "cfg.json", &cfg, &err);
        ust_test_alloc_restore();
        if (rc == 0)
            ust_config_free(cfg);
        else
            assert_int_equal(rc, UST_ENOMEM);
        ust_free(err);
    }
    assert_int_equal(rc, 0);
    assert_true(n > 10);
}

/* "retention": keep is required and a duration; every defaults to an hour;
 * no retention at all without the block. */
static void test_retention(void **state)
{
    (void)state;
    static const struct {
        const char *block;
        int64_t keep_us, every_us; /* keep 0: refused */
        const char *expect;
    } cases[] = {
        {"{\"keep\":\"8d\"}", 8 * 86400000000LL, 3600000000LL, NULL},
        {"{\"keep\":\"36h\",\"every\":\"200ms\"}", 36 * 3600000000LL, 200000, NULL},
        {"{\"keep\":\"90m\",\"every\":\"30s\"}", 90 * 60000000LL, 30000000, NULL},
        {"{\"keep\":\"1.5d\"}", 129600000000LL, 3600000000LL, NULL},
        {"{\"every\":\"1h\"}", 0, 0, "cfg.json: retention.keep: expected how long"},
        {"{}", 0, 0, "cfg.json: retention.keep: expected how long"},
        {"{\"keep\":8}", 0, 0, "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"8 days\"}", 0, 0,
         "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"0d\"}", 0, 0, "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"-1d\"}", 0, 0, "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"nan\"}", 0, 0, "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"1e3s\"}", 0, 0, "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"99999999999999999999d\"}", 0, 0,
         "cfg.json: retention.keep: expected a duration"},
        {"{\"keep\":\"8d\",\"every\":\"\"}", 0, 0,
         "cfg.json: retention.every: expected a duration"},
        {"{\"keep\":\"8d\",\"kep\":\"9d\"}", 0, 0,
         "cfg.json: unknown key \"retention.kep\" (did you mean \"keep\"?)"},
        {"\"8d\"", 0, 0, "cfg.json: retention: expected an object"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(cases); i++) {
        char *t = ust_sprintf("{\"routes\":[" R0 "],\"retention\":%s}", cases[i].block);
        if (cases[i].expect != NULL) {
            expect_refused(cases[i].block, t, cases[i].expect);
        } else {
            ust_config *cfg = NULL;
            char *err = NULL;
            if (ust_config_parse(t, strlen(t), "cfg.json", &cfg, &err) != 0)
                fail_msg("%s: %s", cases[i].block, err);
            assert_int_equal(cfg->retention.keep_us, cases[i].keep_us);
            assert_int_equal(cfg->retention.every_us, cases[i].every_us);
            ust_config_free(cfg);
        }
        ust_free(t);
    }
    char *t = ust_sprintf("{\"routes\":[" R0 "]}");
    ust_config *cfg = NULL;
    assert_int_equal(ust_config_parse(t, strlen(t), "cfg.json", &cfg, NULL), 0);
    assert_int_equal(cfg->retention.keep_us, 0);
    ust_config_free(cfg);
    ust_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_loads),
        cmocka_unit_test(test_hash_ignores_layout),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_a_service_plugin_loads),
        cmocka_unit_test(test_broken_configs),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_webhook_route_needs_a_signature),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_secrets),
        cmocka_unit_test(test_standard_secret_must_be_base64),
        cmocka_unit_test(test_serve_refuses_a_misspelled_key),
        cmocka_unit_test(test_route_lookup),
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_parse_out_of_memory),
        cmocka_unit_test(test_retention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
