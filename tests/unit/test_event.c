/* The canonical event: request hash, JSON Pointer, Idempotency-Key syntax and
 * derivation against the documented example config. */
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
#include <understudy/request.h>
#include <understudy/sig.h>

#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRIPE_SECRET "whsec_test_stripe_secret"
#define STANDARD_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define T0 1764410400

static ust_config *example(void)
{
    const char *root = getenv("UST_SOURCE_DIR");
    char *path = ust_sprintf("%s/tests/data/config.json", root != NULL ? root : ".");
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(path, &cfg, &err) != 0)
        fail_msg("%s", err != NULL ? err : "?");
    ust_free(path);
    setenv("UNDERSTUDY_STRIPE_SECRET", STRIPE_SECRET, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", STANDARD_SECRET, 1);
    if (ust_config_load_secrets(cfg, &err) != 0)
        fail_msg("%s", err != NULL ? err : "?");
    return cfg;
}

static void make_request(ust_request *req, const char *target, const char *body)
{
    memset(req, 0, sizeof(*req));
    req->received_at_us = (int64_t)T0 * 1000000 + 123456;
    req->remote = ust_strdup("127.0.0.1:5000");
    req->method = ust_strdup("POST");
    req->target = ust_strdup(target);
    assert_int_equal(ust_request_add_header(req, "Content-Type", "application/json"),
                     0);
    if (body != NULL && *body != '\0') {
        req->body_len = strlen(body);
        req->body = ust_memdup(body, req->body_len);
    }
}

static void hash_of(const char *body, char hex[UST_SHA256_HEX_LEN + 1], int *is_json)
{
    assert_int_equal(
        ust_request_hash((const unsigned char *)body, strlen(body), hex, is_json), 0);
}

static void test_request_hash(void **state)
{
    (void)state;
    char a[65], b[65], c[65], d[65];
    int ja, jb;
    hash_of("{\"id\":\"evt_1\",\"data\":{\"amount\":2000,\"currency\":\"usd\"}}", a,
            &ja);
    hash_of("{ \"data\" : {\"currency\":\"usd\",\n\t\"amount\": 2000 },\n "
            "\"id\":\"evt_1\" }",
            b, &jb);
    hash_of("{\"id\":\"evt_1\",\"data\":{\"amount\":2001,\"currency\":\"usd\"}}", c,
            NULL);
    assert_true(ja && jb);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);

    /* The hash is that of the canonical text. */
    const char *canon =
        "{\"data\":{\"amount\":2000,\"currency\":\"usd\"},\"id\":\"evt_1\"}";
    ust_sha256_hex(canon, strlen(canon), d);
    assert_string_equal(a, d);

    /* Not JSON: the raw bytes. */
    const char *raw = "amount=2000&currency=usd";
    hash_of(raw, c, &ja);
    assert_false(ja);
    ust_sha256_hex(raw, strlen(raw), d);
    assert_string_equal(c, d);

    /* Bytes with NULs and invalid UTF-8, and the empty body. */
    const unsigned char bin[] = {'{', 0, 0xff, 0xfe, '}'};
    assert_int_equal(ust_request_hash(bin, sizeof(bin), c, &ja), 0);
    assert_false(ja);
    ust_sha256_hex(bin, sizeof(bin), d);
    assert_string_equal(c, d);
    assert_int_equal(ust_request_hash(NULL, 0, c, &ja), 0);
    assert_false(ja);
    ust_sha256_hex("", 0, d);
    assert_string_equal(c, d);
}

static void test_request_hash_large(void **state)
{
    (void)state;
    /* Larger than the hash staging buffer, with a long string in it. */
    size_t n = 20000;
    char *body = ust_malloc(n + 64);
    strcpy(body, "{\"b\":\"");
    memset(body + 6, 'x', n);
    strcpy(body + 6 + n, "\",\"a\":[1,2,3]}");
    char *canon = ust_malloc(n + 64);
    strcpy(canon, "{\"a\":[1,2,3],\"b\":\"");
    memset(canon + 18, 'x', n);
    strcpy(canon + 18 + n, "\"}");
    char h1[65], h2[65];
    hash_of(body, h1, NULL);
    ust_sha256_hex(canon, strlen(canon), h2);
    assert_string_equal(h1, h2);
    ust_free(body);
    ust_free(canon);
}

static void test_canonical(void **state)
{
    (void)state;
    json_error_t e;
    json_t *v = json_loads(
        "{\"b\": 1, \"a\": [1, 2, {\"d\": null, \"c\": \"x/\\u00e9\"}]}", 0, &e);
    assert_non_null(v);
    char *s = ust_json_canonical(v);
    assert_string_equal(s, "{\"a\":[1,2,{\"c\":\"x/\xc3\xa9\",\"d\":null}],\"b\":1}");
    ust_free(s);
    json_decref(v);
    json_t *n = json_integer(42);
    s = ust_json_canonical(n);
    assert_string_equal(s, "42");
    ust_free(s);
    json_decref(n);
    assert_null(ust_json_canonical(NULL));
}

/* Deterministic pseudo-random trees: the streamed request hash must equal
 * the SHA-256 of json_dumps' canonical text for every one of them. */
static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static json_t *random_string(void)
{
    static const char *pieces[] = {"a",
                                   "b",
                                   "ab",
                                   "",
                                   "B",
                                   "\"",
                                   "\\",
                                   "/",
                                   "\x01",
                                   "\x1f",
                                   "\b",
                                   "\f",
                                   "\n",
                                   "\r",
                                   "\t",
                                   "\x7f",
                                   "\xc3\xa9",
                                   "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80",
                                   "~",
                                   " "};
    char buf[64] = "";
    size_t n = rng() % 6;
    for (size_t i = 0; i < n; i++)
        strcat(buf, pieces[rng() % UST_ARRAY_SIZE(pieces)]);
    return json_string(buf);
}

static json_t *random_tree(int depth)
{
    switch (rng() % (depth > 5 ? 6 : 8)) {
    case 0:
        return json_integer((json_int_t)rng() - (json_int_t)(1u << 23));
    case 1:
        return json_integer(rng() % 2 ? INT64_MAX : INT64_MIN);
    case 2:
        return json_real((double)rng() / 7.0 - 1000.0);
    case 3:
        return random_string();
    case 4:
        return rng() % 2 ? json_true() : json_false();
    case 5:
        return json_null();
    case 6: {
        json_t *a = json_array();
        size_t n = rng() % 5;
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, random_tree(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        size_t n = rng() % (rng() % 4 == 0 ? 50 : 6);
        for (size_t i = 0; i < n; i++) {
            json_t *k = random_string();
            json_object_set_new(o, json_string_value(k), random_tree(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

static void test_hash_matches_jansson(void **state)
{
    (void)state;
    for (int i = 0; i < 2000; i++) {
        json_t *tree = random_tree(0);
        if (!json_is_object(tree) && !json_is_array(tree)) {
            json_t *wrap = json_array();
            json_array_append_new(wrap, tree);
            tree = wrap;
        }
        /* The body as a client might send it: indented, unsorted. */
        char *body = json_dumps(tree, JSON_INDENT(2));
        char *canon = ust_json_canonical(tree);
        assert_non_null(body);
        assert_non_null(canon);
        char h1[65], h2[65];
        int is_json;
        hash_of(body, h1, &is_json);
        assert_true(is_json);
        ust_sha256_hex(canon, strlen(canon), h2);
        if (strcmp(h1, h2) != 0)
            fail_msg("tree %d differs: %s", i, canon);
        ust_free(body);
        ust_free(canon);
        json_decref(tree);
    }
}

static char *nested(size_t depth)
{
    char *body = ust_malloc(2 * depth + 1);
    memset(body, '[', depth);
    memset(body + depth, ']', depth);
    body[2 * depth] = '\0';
    return body;
}

static void test_deep_body(void **state)
{
    (void)state;
    ust_config *cfg = example();
    char *body = nested(10000);
    ust_request req;
    make_request(&req, "/webhooks/stripe", body);
    ust_event ev;
    char *err = NULL;
    assert_int_equal(ust_event_derive(cfg, &req, &ev, &err), 0);
    assert_false(ev.body_is_json);
    char hex[65];
    ust_sha256_hex(body, strlen(body), hex);
    assert_string_equal(ev.request_sha256, hex);
    assert_null(ev.event_id);
    assert_null(ev.identity);
    assert_string_equal(ev.provider, "stripe");
    ust_event_clear(&ev);
    ust_request_clear(&req);
    ust_free(body);

    /* Within jansson's limit it is JSON, and canonical. */
    body = nested(1000);
    int is_json;
    hash_of(body, hex, &is_json);
    assert_true(is_json);
    ust_free(body);
    ust_config_free(cfg);
}

static void test_json_pointer(void **state)
{
    (void)state;
    /* RFC 6901 section 5's document. */
    const char *doc = "{\"foo\":[\"bar\",\"baz\"],\"\":0,\"a/b\":1,\"c%d\":2,\"e^f\":3,"
                      "\"g|h\":4,\"i\\\\j\":5,\"k\\\"l\":6,\" \":7,\"m~n\":8,"
                      "\"~1\":9,\"deep\":{\"x\":[{\"y\":\"z\"}]}}";
    json_error_t e;
    json_t *root = json_loads(doc, 0, &e);
    assert_non_null(root);
    assert_ptr_equal(ust_json_pointer(root, ""), root);
    assert_string_equal(json_string_value(ust_json_pointer(root, "/foo/0")), "bar");
    assert_string_equal(json_string_value(ust_json_pointer(root, "/foo/1")), "baz");
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/")), 0);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/a~1b")), 1);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/c%d")), 2);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/e^f")), 3);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/g|h")), 4);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/i\\j")), 5);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/k\"l")), 6);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/ ")), 7);
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/m~0n")), 8);
    /* "~01" is "~1", not "/" (unescape ~1 before ~0 would be wrong). */
    assert_int_equal(json_integer_value(ust_json_pointer(root, "/~01")), 9);
    assert_string_equal(json_string_value(ust_json_pointer(root, "/deep/x/0/y")), "z");
    /* Pointers to nothing: past the end, not an index, a bad escape, no
     * leading slash, a missing member. */
    static const char *const absent[] = {
        "/foo/2",   "/foo/-",  "/foo/01",
        "/foo/+1",  "/foo/",   "/foo/99999999999999999999999",
        "/foo/0/x", "/m~2n",   "/m~",
        "foo",      "/missing"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(absent); i++)
        assert_null(ust_json_pointer(root, absent[i]));
    assert_null(ust_json_pointer(NULL, "/foo"));
    json_decref(root);
}

static void test_idem_key(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } good[] = {
        {"KG5LxwFBepaKHyUD", "KG5LxwFBepaKHyUD"},
        {"\"KG5LxwFBepaKHyUD\"", "KG5LxwFBepaKHyUD"},
        {"  \t8e03978e-40d5-43e8-bc93-6894a57f9324 \t",
         "8e03978e-40d5-43e8-bc93-6894a57f9324"},
        {" \"8e03978e-40d5-43e8-bc93-6894a57f9324\"  ",
         "8e03978e-40d5-43e8-bc93-6894a57f9324"},
        {"\"a\\\"b\\\\c\"", "a\"b\\c"},
        {"\"with space\"", "with space"},
        {"with space", "with space"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(good); i++) {
        char *key = NULL;
        int rc = ust_idem_key_parse(good[i].in, &key);
        if (rc != 0)
            fail_msg("case %zu (%s): rc %d", i, good[i].in, rc);
        assert_string_equal(key, good[i].out);
        ust_free(key);
    }
    static const char *badv[] = {
        "",
        "   ",
        "\t",
        "\"\"",
        "\"abc",
        "abc\"x\"",
        "\"ab\"c\"",
        "\"a\\nb\"",
        "\"a\\\"",
        "\"tab\there\"",
        "ctl\x01here",
        "del\x7f",
        "caf\xc3\xa9",
        "\"caf\xc3\xa9\"",
        "\"a\"b",
        "\"a\";p=1",
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(badv); i++) {
        char *key = (char *)1;
        int rc = ust_idem_key_parse(badv[i], &key);
        if (i == 5) {
            /* An unquoted token may hold a quote; it is the same key as its
             * sf-string form. */
            assert_int_equal(rc, 0);
            assert_string_equal(key, "abc\"x\"");
            ust_free(key);
            continue;
        }
        if (rc != UST_EPARSE)
            fail_msg("case %zu (%s): rc %d, accepted", i, badv[i], rc);
        assert_null(key);
    }
    char *key = (char *)1;
    assert_int_equal(ust_idem_key_parse(NULL, &key), UST_EPARSE);
    assert_null(key);
}

static const char stripe_body[] =
    "{\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\",\"created\":1764410400,"
    "\"data\":{\"object\":{\"id\":\"pi_123\",\"amount\":2000,\"currency\":\"usd\","
    "\"metadata\":{\"order_id\":\"ord_9\"}}}}";

static void test_derive_stripe(void **state)
{
    (void)state;
    ust_config *cfg = example();
    ust_request req;
    make_request(&req, "/webhooks/stripe?attempt=2", stripe_body);
    ust_sig_params p = {UST_SCHEME_STRIPE, STRIPE_SECRET, NULL, 0};
    assert_int_equal(ust_sig_sign(&p, T0, NULL, &req), 0);
    ust_event ev;
    char *err = NULL;
    assert_int_equal(ust_event_derive(cfg, &req, &ev, &err), 0);
    assert_ptr_equal(ev.route, &cfg->routes[0]);
    assert_int_equal(ev.seq, 0);
    assert_int_equal(ev.received_at_us, req.received_at_us);
    assert_string_equal(ev.provider, "stripe");
    ust_test_expect_event(&ev, "evt_1", "payment_intent.succeeded", "paid", "ord_9",
                          2000);
    assert_string_equal(ev.transaction_id, "pi_123");
    assert_string_equal(ev.currency, "usd");
    assert_string_equal(ev.identity, "stripe:pi_123");
    assert_null(ev.idem_key);
    assert_null(ev.tenant);
    assert_true(ev.body_is_json);
    assert_int_equal(ev.sig, UST_SIG_VERIFIED);
    char hex[65];
    hash_of(stripe_body, hex, NULL);
    assert_string_equal(ev.request_sha256, hex);
    ust_event_clear(&ev);
    assert_null(ev.provider);

    /* Without the signature header: missing, fields all the same. */
    ust_request bare;
    make_request(&bare, "/webhooks/stripe", stripe_body);
    assert_int_equal(ust_event_derive(cfg, &bare, &ev, &err), 0);
    assert_int_equal(ev.sig, UST_SIG_MISSING);
    assert_string_equal(ev.identity, "stripe:pi_123");
    ust_event_clear(&ev);
    ust_request_clear(&bare);
    ust_request_clear(&req);
    ust_config_free(cfg);
}

/* ev derived from req under cfg; req is cleared. */
static void derive_and_clear(const ust_config *cfg, ust_request *req, ust_event *ev)
{
    char *err = NULL;
    assert_int_equal(ust_event_derive(cfg, req, ev, &err), 0);
    ust_request_clear(req);
}

static void derive_body(const ust_config *cfg, const char *target, const char *body,
                        ust_event *ev)
{
    ust_request req;
    make_request(&req, target, body);
    derive_and_clear(cfg, &req, ev);
}

static void test_derive_stripe_variants(void **state)
{
    (void)state;
    ust_config *cfg = example();
    ust_event ev;

    /* Unmapped type: no target state. Numeric ids become decimal text;
     * a string or float amount is not minor units. */
    derive_body(cfg, "/webhooks/stripe",
                "{\"id\":17,\"type\":\"customer.created\",\"data\":{\"object\":"
                "{\"id\":9007199254740993,\"amount\":\"2000\",\"currency\":\"usd\"}}}",
                &ev);
    assert_string_equal(ev.event_id, "17");
    assert_string_equal(ev.transaction_id, "9007199254740993");
    assert_null(ev.target_status);
    assert_false(ev.has_amount);
    assert_null(ev.intent);
    assert_string_equal(ev.identity, "stripe:9007199254740993");
    ust_event_clear(&ev);

    derive_body(cfg, "/webhooks/stripe",
                "{\"id\":\"evt_2\",\"type\":\"charge.refunded\",\"data\":{\"object\":"
                "{\"amount\":20.5}}}",
                &ev);
    assert_false(ev.has_amount);
    assert_string_equal(ev.target_status, "refunded");
    assert_null(ev.transaction_id);
    assert_string_equal(ev.identity, "stripe:evt_2"); /* falls back to the event id */
    ust_event_clear(&ev);

    derive_body(cfg, "/webhooks/stripe", "{\"data\":[]}", &ev);
    assert_null(ev.identity);
    assert_null(ev.event_id);
    assert_true(ev.body_is_json);
    ust_event_clear(&ev);

    /* Malformed JSON: provider from the route, nothing from the body. */
    derive_body(cfg, "/webhooks/stripe", "{\"id\":\"evt_3\",", &ev);
    assert_false(ev.body_is_json);
    assert_string_equal(ev.provider, "stripe");
    assert_null(ev.event_id);
    assert_null(ev.identity);
    ust_event_clear(&ev);
    ust_config_free(cfg);
}

static void test_derive_standard(void **state)
{
    (void)state;
    ust_config *cfg = example();
    const char *body =
        "{\"type\":\"payment.updated\",\"data\":{\"payment_id\":\"pay_7\","
        "\"amount\":1500,\"currency\":\"EUR\",\"order_id\":\"o-1\","
        "\"status\":\"paid\"}}";
    ust_request req;
    make_request(&req, "/webhooks/standard", body);
    ust_sig_params p = {UST_SCHEME_STANDARD_WEBHOOKS, STANDARD_SECRET, NULL, 0};
    assert_int_equal(ust_sig_sign(&p, T0, "msg_p5jXN8AQM9LWM0D4loKWxJek", &req), 0);
    ust_event ev;
    char *err = NULL;
    assert_int_equal(ust_event_derive(cfg, &req, &ev, &err), 0);
    assert_string_equal(ev.provider, "acme");
    assert_string_equal(ev.event_id, "msg_p5jXN8AQM9LWM0D4loKWxJek");
    assert_string_equal(ev.event_type, "payment.updated");
    assert_string_equal(ev.transaction_id, "pay_7");
    assert_int_equal(ev.amount, 1500);
    assert_string_equal(ev.currency, "EUR");
    assert_string_equal(ev.intent, "o-1");
    assert_string_equal(ev.target_status, "paid"); /* no map: taken as is */
    assert_string_equal(ev.identity, "acme:pay_7");
    assert_int_equal(ev.sig, UST_SIG_VERIFIED);
    ust_event_clear(&ev);
    ust_request_clear(&req);

    /* Without a map, a value that is not a canonical state is no state. */
    derive_body(cfg, "/webhooks/standard", "{\"data\":{\"status\":\"succeeded\"}}",
                &ev);
    assert_null(ev.target_status);
    assert_null(ev.event_id); /* no webhook-id header */
    assert_int_equal(ev.sig, UST_SIG_MISSING);
    ust_event_clear(&ev);
    ust_config_free(cfg);
}

static void derive_api(const ust_config *cfg, const char *key, const char *tenant,
                       ust_event *ev)
{
    ust_request req;
    make_request(&req, "/payments",
                 "{\"amount\":5000,\"currency\":\"usd\",\"order_id\":\"ord_1\"}");
    if (key != NULL)
        assert_int_equal(ust_request_add_header(&req, "idempotency-key", key), 0);
    if (tenant != NULL)
        assert_int_equal(ust_request_add_header(&req, "X-Tenant-Id", tenant), 0);
    derive_and_clear(cfg, &req, ev);
}

static void test_derive_api(void **state)
{
    (void)state;
    ust_config *cfg = example();
    ust_event a, b;
    derive_api(cfg, "KG5LxwFBepaKHyUD", "t1", &a);
    derive_api(cfg, " \"KG5LxwFBepaKHyUD\"", "t1", &b);
    assert_string_equal(a.provider, "api");
    assert_null(a.event_id);
    assert_int_equal(a.amount, 5000);
    assert_true(a.has_amount);
    assert_string_equal(a.currency, "usd");
    assert_string_equal(a.intent, "ord_1");
    assert_string_equal(a.idem_key, "KG5LxwFBepaKHyUD");
    assert_string_equal(a.tenant, "t1");
    assert_string_equal(a.identity, "/payments:t1:KG5LxwFBepaKHyUD");
    assert_string_equal(b.idem_key, a.idem_key);
    assert_string_equal(b.identity, a.identity);
    assert_string_equal(b.request_sha256, a.request_sha256);
    assert_int_equal(a.sig, UST_SIG_UNSIGNED);
    ust_event_clear(&a);
    ust_event_clear(&b);

    derive_api(cfg, "k1", NULL, &a);
    assert_null(a.tenant);
    assert_string_equal(a.identity, "/payments:-:k1");
    ust_event_clear(&a);

    derive_api(cfg, NULL, "t1", &a);
    assert_null(a.idem_key);
    assert_null(a.identity);
    assert_string_equal(a.tenant, "t1");
    ust_event_clear(&a);

    derive_api(cfg, "\"unterminated", NULL, &a);
    assert_null(a.idem_key);
    assert_null(a.identity);
    ust_event_clear(&a);
    ust_config_free(cfg);
}

static void test_derive_unknown_route(void **state)
{
    (void)state;
    ust_config *cfg = example();
    ust_event ev;
    derive_body(cfg, "/webhooks/unknown", stripe_body, &ev);
    assert_null(ev.route);
    assert_null(ev.provider);
    assert_null(ev.event_id);
    assert_null(ev.identity);
    assert_int_equal(ev.sig, UST_SIG_UNSIGNED);
    assert_true(ev.body_is_json);
    char hex[65];
    hash_of(stripe_body, hex, NULL);
    assert_string_equal(ev.request_sha256, hex);
    ust_event_clear(&ev);
    ust_config_free(cfg);
}

static void test_derive_header_sources(void **state)
{
    (void)state;
    const char *t =
        "{\"routes\":[{\"path\":\"/h\",\"kind\":\"webhook\",\"provider\":\"gh\","
        "\"signature\":{\"scheme\":\"none\"},\"fields\":{\"event_id\":\"header:X-"
        "GitHub-Delivery\","
        "\"amount\":\"header:X-Amount\",\"transaction_id\":\"/a~1b/1\"},"
        "\"status\":{\"from\":\"header:X-State\"}}]}";
    ust_config *cfg = ust_test_parse_config(t, "h.json");
    char *err = NULL;
    ust_request req;
    make_request(&req, "/h", "{\"a/b\":[\"x\",\"tx_2\"]}");
    assert_int_equal(ust_request_add_header(&req, "x-github-delivery", "d-1"), 0);
    assert_int_equal(ust_request_add_header(&req, "X-Amount", "-250"), 0);
    assert_int_equal(ust_request_add_header(&req, "X-State", "cancelled"), 0);
    ust_event ev;
    assert_int_equal(ust_event_derive(cfg, &req, &ev, &err), 0);
    assert_string_equal(ev.event_id, "d-1");
    assert_true(ev.has_amount);
    assert_int_equal(ev.amount, -250);
    assert_string_equal(ev.target_status, "cancelled");
    assert_string_equal(ev.transaction_id, "tx_2");
    assert_string_equal(ev.identity, "gh:tx_2");
    ust_event_clear(&ev);
    ust_request_clear(&req);
    ust_config_free(cfg);
}

/* Every allocation failure inside derive is UST_ENOMEM with ev cleared and
 * nothing leaked (ASan). */
static void test_derive_out_of_memory(void **state)
{
    (void)state;
    ust_config *cfg = example();
    ust_request req;
    make_request(&req, "/webhooks/stripe", stripe_body);
    int rc = UST_ENOMEM;
    long n;
    for (n = 0; rc == UST_ENOMEM && n < 1000; n++) {
        ust_event ev;
        char *err = NULL;
        ust_test_alloc_fail(n, 1);
        rc = ust_event_derive(cfg, &req, &ev, &err);
        ust_test_alloc_restore();
        if (rc == UST_ENOMEM)
            assert_null(ev.provider);
        else
            assert_int_equal(rc, 0);
        ust_event_clear(&ev);
        ust_free(err);
    }
    assert_int_equal(rc, 0);
    assert_true(n > 5);
    ust_request_clear(&req);
    ust_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_hash),
        cmocka_unit_test(test_request_hash_large),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_hash_matches_jansson),
        cmocka_unit_test(test_deep_body),
        cmocka_unit_test(test_json_pointer),
        cmocka_unit_test(test_idem_key),
        cmocka_unit_test(test_derive_stripe),
        cmocka_unit_test(test_derive_stripe_variants),
        cmocka_unit_test(test_derive_standard),
        cmocka_unit_test(test_derive_api),
        cmocka_unit_test(test_derive_unknown_route),
        cmocka_unit_test(test_derive_header_sources),
        cmocka_unit_test(test_derive_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
