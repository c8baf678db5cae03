/* The libcurl client (http_client.h) against a real HTTP service on
 * 127.0.0.1 (tests/http_service.py): keep-alive, the request as given, the
 * answer as it came, and every way a call fails with its cause. */
#include "http_service.h"
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/http_client.h>

#include <jansson.h>
#include <string.h>

static ust_test_service svc;
static ust_http_client *client;

static int setup(void **state)
{
    (void)state;
    const char *args[] = {"--slow-ms", "3000", NULL};
    ust_test_service_start(&svc, args);
    char *err = NULL;
    assert_int_equal(ust_http_client_new(&client, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ust_http_client_free(client);
    ust_test_service_stop(&svc);
    return 0;
}

static void call(const char *method, const char *path, const ust_header *h, size_t nh,
                 const char *body, size_t body_len, int64_t timeout_ms,
                 ust_http_result *r)
{
    char url[256];
    snprintf(url, sizeof(url), "%s%s", svc.base, path);
    ust_http_call c = {method,   url,       h, nh, (const unsigned char *)body,
                       body_len, timeout_ms};
    assert_int_equal(ust_http_client_send(client, &c, r), 0);
}

/* The service's record of the last request it received. */
static json_t *last_record(void)
{
    ust_http_result r;
    call("GET", "/__log", NULL, 0, NULL, 0, 10000, &r);
    assert_int_equal(r.failure, 0);
    json_t *log = ust_json_loadb((const char *)r.body, r.body_len, 0, NULL);
    assert_non_null(log);
    json_t *recs = json_object_get(log, "records");
    json_t *last = json_incref(json_array_get(recs, json_array_size(recs) - 1));
    json_decref(log);
    ust_http_result_clear(&r);
    return last;
}

static void test_connections_are_kept_alive_between_calls(void **state)
{
    (void)state;
    long conn[3];
    for (int i = 0; i < 3; i++) {
        ust_http_result r;
        call("POST", "/a", NULL, 0, "{}", 2, 10000, &r);
        assert_int_equal(r.failure, 0);
        assert_int_equal(r.status, 200);
        ust_http_result_clear(&r);
        json_t *rec = last_record();
        conn[i] = (long)json_integer_value(json_object_get(rec, "conn"));
        json_decref(rec);
    }
    assert_true(conn[0] > 0);
    assert_int_equal(conn[0], conn[1]);
    assert_int_equal(conn[1], conn[2]);
}

static void test_the_request_goes_as_given(void **state)
{
    (void)state;
    const ust_header h[] = {{"Host", "svc.example:443"},
                            {"Z-First", "1"},
                            {"Content-Type", "application/json"},
                            {"A-Second", "two"},
                            {"Z-First", "again"},
                            {"Empty", ""}};
    static const char body[] = "{\"a\":\0\"\xff\"}";
    ust_http_result r;
    call("PATCH", "/p/x?q=1&r", h, 6, body, sizeof(body) - 1, 10000, &r);
    assert_int_equal(r.status, 200);
    ust_http_result_clear(&r);
    json_t *rec = last_record();
    assert_string_equal(json_string_value(json_object_get(rec, "method")), "PATCH");
    assert_string_equal(json_string_value(json_object_get(rec, "target")),
                        "/p/x?q=1&r");
    /* Our headers in our order; libcurl's framing (Content-Length) aside,
     * nothing of its own (no Accept, no Expect). */
    json_t *hs = json_object_get(rec, "headers");
    size_t k = 0, i;
    json_t *pair;
    json_array_foreach(hs, i, pair)
    {
        const char *name = json_string_value(json_array_get(pair, 0));
        const char *value = json_string_value(json_array_get(pair, 1));
        if (strcasecmp(name, "Content-Length") == 0) {
            assert_string_equal(value, "10");
            continue;
        }
        assert_true(k < 6);
        assert_string_equal(name, h[k].name);
        assert_string_equal(value, h[k].value);
        k++;
    }
    assert_int_equal(k, 6);
    /* The body byte for byte, NUL and invalid UTF-8 included. */
    const char *b64 = json_string_value(json_object_get(rec, "body"));
    assert_string_equal(b64, "eyJhIjoAIv8ifQ==");
    json_decref(rec);
}

static void test_the_answer_comes_as_it_came(void **state)
{
    (void)state;
    const ust_header h[] = {{"X-Answer-Verdict", "duplicate"},
                            {"X-Answer-Entity", "stripe:pi_1"}};
    ust_http_result r;
    call("POST", "/status/409", h, 2, "{}", 2, 10000, &r);
    assert_int_equal(r.failure, 0);
    assert_null(r.cause);
    assert_int_equal(r.status, 409);
    assert_int_equal(r.body_len, strlen("{\"status\": true}"));
    assert_memory_equal(r.body, "{\"status\": true}", r.body_len);
    /* In order: the server's own first, then the two it was asked for. */
    size_t ct = SIZE_MAX, v = SIZE_MAX, e = SIZE_MAX;
    for (size_t i = 0; i < r.n_headers; i++) {
        if (strcmp(r.headers[i].name, "Content-Type") == 0)
            ct = i;
        if (strcmp(r.headers[i].name, "Understudy-Verdict") == 0) {
            v = i;
            assert_string_equal(r.headers[i].value, "duplicate");
        }
        if (strcmp(r.headers[i].name, "Understudy-Entity") == 0) {
            e = i;
            assert_string_equal(r.headers[i].value, "stripe:pi_1");
        }
    }
    assert_true(ct < v && v < e && e < r.n_headers);
    ust_http_result_clear(&r);
}

/* A POST of {} to path within timeout_ms fails with failure, its cause
 * saying cause (and also, when not NULL). */
static void expect_failure(const char *path, int64_t timeout_ms, int failure,
                           const char *cause, const char *also)
{
    ust_http_result r;
    call("POST", path, NULL, 0, "{}", 2, timeout_ms, &r);
    assert_int_equal(r.failure, failure);
    assert_non_null(strstr(r.cause, cause));
    if (also != NULL)
        assert_non_null(strstr(r.cause, also));
    ust_http_result_clear(&r);
}

static void test_a_call_past_its_timeout_is_a_timeout_with_its_cause(void **state)
{
    (void)state;
    expect_failure("/slow", 200, UST_ETIMEOUT, "no answer within 200 ms", "/slow");
}

static void test_a_refused_connection_is_an_io_failure(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", ust_test_closed_port());
    ust_http_call c = {"POST", url, NULL, 0, NULL, 0, 5000};
    ust_http_result r;
    assert_int_equal(ust_http_client_send(client, &c, &r), 0);
    assert_int_equal(r.failure, UST_EIO);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.cause, "cannot connect"));
    ust_http_result_clear(&r);
}

static void test_a_close_mid_answer_and_garbage_are_io_failures(void **state)
{
    (void)state;
    expect_failure("/cut", 10000, UST_EIO, "closed mid-answer", NULL);
    expect_failure("/garbage", 10000, UST_EIO, "not HTTP", NULL);
    /* The client is still good after both. */
    ust_http_result r;
    call("GET", "/a", NULL, 0, NULL, 0, 10000, &r);
    assert_int_equal(r.failure, 0);
    assert_int_equal(r.status, 200);
    ust_http_result_clear(&r);
}

static void test_many_calls_keep_the_order_they_wait_for(void **state)
{
    (void)state;
    /* Two chains: 0 <- 2 <- 4 and 1 <- 3 <- 5, all at once otherwise. */
    enum { N = 6 };
    ust_http_call calls[N];
    ust_header hs[N][1];
    char seqs[N][8];
    char url[128];
    snprintf(url, sizeof(url), "%s/a", svc.base);
    size_t after[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(seqs[i], sizeof(seqs[i]), "%zu", 100 + i);
        hs[i][0] = (ust_header){"Understudy-Seq", seqs[i]};
        calls[i] = (ust_http_call){"POST", url, hs[i], 1, NULL, 0, 10000};
        after[i] = i >= 2 ? i - 2 : SIZE_MAX;
    }
    ust_http_result outs[N];
    assert_int_equal(ust_http_client_send_many(client, calls, N, after, 4, outs), 0);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(outs[i].failure, 0);
        assert_int_equal(outs[i].status, 200);
        ust_http_result_clear(&outs[i]);
    }
    ust_http_result r;
    call("GET", "/__log", NULL, 0, NULL, 0, 10000, &r);
    json_t *log = ust_json_loadb((const char *)r.body, r.body_len, 0, NULL);
    ust_http_result_clear(&r);
    long start[N] = {0}, end[N] = {0};
    size_t i;
    json_t *rec;
    json_array_foreach(json_object_get(log, "records"), i, rec)
    {
        const char *seq = json_string_value(json_object_get(rec, "seq"));
        if (seq == NULL || atoi(seq) < 100 || atoi(seq) >= 100 + N)
            continue;
        start[atoi(seq) - 100] =
            (long)json_integer_value(json_object_get(rec, "start"));
        end[atoi(seq) - 100] = (long)json_integer_value(json_object_get(rec, "end"));
    }
    json_decref(log);
    for (size_t j = 2; j < N; j++) {
        assert_true(end[j - 2] > 0);
        assert_true(start[j] > end[j - 2]);
    }
}

static void test_forwarded_headers_drop_the_hop_by_hop_ones(void **state)
{
    (void)state;
    ust_request req;
    memset(&req, 0, sizeof(req));
    const char *pairs[][2] = {{"Connection", "keep-alive, X-Hop"},
                              {"Content-Type", "application/json"},
                              {"host", "production.example"},
                              {"Keep-Alive", "timeout=5"},
                              {"X-Hop", "mine"},
                              {"Proxy-Authorization", "secret"},
                              {"Transfer-Encoding", "chunked"},
                              {"TE", "trailers"},
                              {"Trailer", "X"},
                              {"Upgrade", "h2c"},
                              {"Content-Length", "2"},
                              {"Stripe-Signature", "t=1,v1=ab"},
                              {"connection", "X-Other"},
                              {"X-Other", "also"}};
    for (size_t i = 0; i < UST_ARRAY_SIZE(pairs); i++)
        assert_int_equal(ust_request_add_header(&req, pairs[i][0], pairs[i][1]), 0);
    ust_header *out = NULL;
    size_t n = 0;
    assert_int_equal(ust_http_forward_headers(&req, "127.0.0.1:9000", &out, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(out[0].name, "Content-Type");
    assert_string_equal(out[1].name, "host");
    assert_string_equal(out[1].value, "127.0.0.1:9000");
    assert_string_equal(out[2].name, "Stripe-Signature");
    assert_string_equal(out[2].value, "t=1,v1=ab");
    ust_free(out);
    /* No Host at all: the service's comes first. */
    ust_request_clear(&req);
    assert_int_equal(ust_request_add_header(&req, "A", "1"), 0);
    assert_int_equal(ust_http_forward_headers(&req, "svc:1", &out, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].name, "Host");
    assert_string_equal(out[0].value, "svc:1");
    assert_string_equal(out[1].name, "A");
    ust_free(out);
    ust_request_clear(&req);
}

/* The environment's http_proxy, https_proxy and all_proxy are not followed
 * (libcurl's default would send every call, credentials and all, to
 * them): the call reaches the service, nothing reaches the "proxy". A
 * proxy the caller names takes every call, the environment's no_proxy
 * aside: the service stands in for one (it records the absolute URL). */
static void test_the_environments_proxies_are_not_followed(void **state)
{
    (void)state;
    int proxy = ust_test_env_proxy();
    ust_http_client *c = NULL;
    char *err = NULL;
    assert_int_equal(ust_http_client_new(&c, &err), 0);
    char url[128];
    snprintf(url, sizeof(url), "%s/direct", svc.base);
    ust_http_call call = {"POST", url, NULL, 0, (const unsigned char *)"x", 1, 5000};
    ust_http_result r;
    assert_int_equal(ust_http_client_send(c, &call, &r), 0);
    int failure = r.failure, status = r.status;
    ust_http_result_clear(&r);
    int reached_proxy = ust_test_listener_accepted(proxy);
    ust_test_env_proxy_clear();
    assert_int_equal(reached_proxy, 0);
    assert_int_equal(failure, 0);
    assert_int_equal(status, 200);
    json_t *rec = last_record();
    assert_string_equal(json_string_value(json_object_get(rec, "target")), "/direct");
    json_decref(rec);
    /* Named: used, even for a host no_proxy lists. */
    setenv("no_proxy", "example.invalid", 1);
    assert_int_equal(ust_http_client_proxy(c, svc.base), 0);
    call.url = "http://example.invalid/named";
    assert_int_equal(ust_http_client_send(c, &call, &r), 0);
    unsetenv("no_proxy");
    assert_int_equal(r.failure, 0);
    assert_int_equal(r.status, 200);
    ust_http_result_clear(&r);
    rec = last_record();
    assert_string_equal(json_string_value(json_object_get(rec, "target")),
                        "http://example.invalid/named");
    json_decref(rec);
    ust_http_client_free(c);
    close(proxy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connections_are_kept_alive_between_calls),
        cmocka_unit_test(test_the_request_goes_as_given),
        cmocka_unit_test(test_the_answer_comes_as_it_came),
        cmocka_unit_test(test_a_call_past_its_timeout_is_a_timeout_with_its_cause),
        cmocka_unit_test(test_a_refused_connection_is_an_io_failure),
        cmocka_unit_test(test_a_close_mid_answer_and_garbage_are_io_failures),
        cmocka_unit_test(test_many_calls_keep_the_order_they_wait_for),
        cmocka_unit_test(test_forwarded_headers_drop_the_hop_by_hop_ones),
        cmocka_unit_test(test_the_environments_proxies_are_not_followed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
