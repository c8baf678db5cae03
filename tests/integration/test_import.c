/* log import --format har|goreplay: a HAR written by Debian's Chromium
 * through Playwright (tests/data/har/record.js made it), HARs and GoReplay
 * files written by hand in the documented formats, and malformed ones
 * refused whole with the position of the bad entry. */
#include "support.h"

#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/log.h>

#include <jansson.h>

#define SEP "\n\xF0\x9F\x90\xB5\xF0\x9F\x99\x88\xF0\x9F\x99\x89\n"

struct fixture {
    char dir[PATH_MAX];
    ust_log *log;
    ust_config *cfg;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    ust_test_tmpdir(f->dir);
    char path[PATH_MAX], *err = NULL;
    snprintf(path, sizeof(path), "%s/events.db", f->dir);
    if (ust_log_open(path, UST_LOG_CREATE, &f->log, &err) != 0)
        fail_msg("open: %s", err);
    /* The demo secret (scenarios/demo.env) signed the recorded webhooks. */
    ust_test_set_secrets("whsec_demo_stripe_secret_for_understudy");
    ust_test_source_path("tests/data/config.json", path);
    f->cfg = ust_test_load_config(path);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ust_log_close(f->log);
    ust_config_free(f->cfg);
    ust_test_rmdir(f->dir);
    free(f);
    return 0;
}

static int64_t head(struct fixture *f)
{
    int64_t seq = 0;
    char hex[UST_SHA256_HEX_LEN + 1], *err = NULL;
    assert_int_equal(ust_log_head(f->log, &seq, hex, &err), 0);
    return seq;
}

/* Imports text (written to dir/name) in format: the return code, with the
 * counts and the message (ust_free'd by the caller). */
static int import_text(struct fixture *f, const char *name, const char *text,
                       size_t len, ust_import_format format, int64_t *n,
                       int64_t *skipped, char **err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", f->dir, name);
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(text, 1, len, out), len);
    fclose(out);
    FILE *in = fopen(path, "rb");
    int rc = ust_log_import_capture(f->log, f->cfg, in, name, format, n, skipped, err);
    fclose(in);
    return rc;
}

/* The rows from seq after+1 on, into recs (cleared by the caller): how many. */
static size_t read_rows(struct fixture *f, int64_t after, ust_log_record *recs,
                        size_t cap)
{
    ust_log_cursor *cur = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_cursor_open(f->log, after, &cur, &err), 0);
    size_t n = 0;
    memset(recs, 0, cap * sizeof(*recs));
    while (n < cap && ust_log_cursor_next(cur, &recs[n], &err) == 1)
        n++;
    ust_log_cursor_close(cur);
    return n;
}

static const char *header(const ust_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

/* ---- the HAR Chromium wrote -------------------------------------------- */

static void test_a_har_written_by_chromium_imports(void **state)
{
    struct fixture *f = *state;
    char path[PATH_MAX], *err = NULL;
    ust_test_source_path("tests/data/har/chromium.har", path);
    FILE *in = fopen(path, "rb");
    int64_t n = -1, skipped = -1;
    if (ust_log_import_capture(f->log, f->cfg, in, "chromium.har", UST_IMPORT_HAR, &n,
                               &skipped, &err) != 0)
        fail_msg("import: %s", err);
    fclose(in);
    /* The page's GET / and the POST to /unrouted have no route. */
    assert_int_equal(n, 4);
    assert_int_equal(skipped, 2);

    /* What the browser sent, read from the HAR independently of the import. */
    json_error_t jerr;
    json_t *har = json_load_file(path, 0, &jerr);
    assert_non_null(har);
    json_t *entries = json_object_get(json_object_get(har, "log"), "entries");
    assert_int_equal(json_array_size(entries), 6);
    /* Written by the browser, not by hand. */
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(har, "log"), "browser"), "name")),
        "chromium");
    ust_log_record rows[8];
    assert_int_equal(read_rows(f, 0, rows, 8), 4);
    const char *targets[] = {"/webhooks/stripe", "/webhooks/stripe",
                             "/payments?source=har", "/payments?source=har"};
    for (size_t i = 0; i < 4; i++) {
        json_t *e = json_array_get(entries, i + 1); /* entry 1 is GET / */
        json_t *req = json_object_get(e, "request");
        const ust_request *got = &rows[i].req;
        assert_string_equal(got->method, "POST");
        assert_string_equal(got->target, targets[i]);
        int64_t at = 0;
        assert_int_equal(
            ust_time_parse(json_string_value(json_object_get(e, "startedDateTime")),
                           &at),
            0);
        assert_int_equal(got->received_at_us, at);
        /* The body byte for byte (the payment's holds "café ✓" in UTF-8). */
        json_t *text = json_object_get(json_object_get(req, "postData"), "text");
        assert_int_equal(got->body_len, json_string_length(text));
        assert_memory_equal(got->body, json_string_value(text), got->body_len);
        /* Every header, in the HAR's order. */
        json_t *hs = json_object_get(req, "headers");
        assert_int_equal(got->n_headers, json_array_size(hs));
        for (size_t k = 0; k < got->n_headers; k++) {
            json_t *h = json_array_get(hs, k);
            assert_string_equal(got->headers[k].name,
                                json_string_value(json_object_get(h, "name")));
            assert_string_equal(got->headers[k].value,
                                json_string_value(json_object_get(h, "value")));
        }
        assert_string_equal(got->remote, "-");
        /* The log keeps the answer Chromium saw, body byte for byte. */
        json_t *res = json_object_get(e, "response");
        assert_int_equal(rows[i].response.status,
                         json_integer_value(json_object_get(res, "status")));
        json_t *content = json_object_get(json_object_get(res, "content"), "text");
        assert_int_equal(rows[i].response.body_len, json_string_length(content));
        assert_memory_equal(rows[i].response.body, json_string_value(content),
                            rows[i].response.body_len);
    }
    /* The webhooks were signed in the browser's run: they verify. */
    assert_int_equal(rows[0].sig, UST_SIG_VERIFIED);
    assert_int_equal(rows[1].sig, UST_SIG_VERIFIED);
    assert_string_equal(rows[0].event_id, "evt_har_1");
    assert_string_equal(rows[1].event_id, "evt_har_2");
    assert_non_null(strstr(rows[2].req.body ? (const char *)rows[2].req.body : "",
                           "caf\xc3\xa9 \xe2\x9c\x93"));
    assert_string_equal(ust_request_header(&rows[2].req, "Idempotency-Key"),
                        "key-har-1");
    assert_string_equal(rows[3].identity, rows[2].identity);
    for (size_t i = 0; i < 4; i++)
        ust_log_record_clear(&rows[i]);

    /* The answers each request got, as the parser hands them to the log. */
    char *buf = ust_test_read_file(path);
    ust__capture c;
    assert_int_equal(ust__har_parse(buf, strlen(buf), "chromium.har", &c, &err), 0);
    free(buf);
    assert_int_equal(c.n, 6);
    const int statuses[] = {200, 200, 200, 201, 201, 404};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(c.v[i].response.status, statuses[i]);
    ust_response *r = &c.v[1].response;
    assert_string_equal(header(r->headers, r->n_headers, "Content-Type"),
                        "application/json");
    const char want[] = "{\"received\":true,\"id\":\"evt_har_1\"}";
    assert_int_equal(r->body_len, sizeof(want) - 1);
    assert_memory_equal(r->body, want, r->body_len);
    r = &c.v[3].response;
    assert_string_equal(header(r->headers, r->n_headers, "Idempotent-Replayed"),
                        "false");
    assert_memory_equal(r->body, "{\"id\":\"pay_key-har-1\"", 21);
    assert_string_equal(c.v[1].where, "entry 2");
    ust__capture_clear(&c);
    json_decref(har);
}

/* ---- HARs by hand: HTTP/2, base64, offsets ------------------------------- */

static const char h2_har[] =
    "\xEF\xBB\xBF{\"log\": {\"version\": \"1.2\", \"creator\": {\"name\": \"DevTools\","
    " \"version\": \"1\"}, \"entries\": [{"
    "\"startedDateTime\": \"2026-11-29T12:00:00.123456+02:00\","
    "\"request\": {\"method\": \"POST\","
    " \"url\": \"https://pay.example.com/payments?x=1&y=%20#frag\","
    " \"httpVersion\": \"h2\", \"headers\": ["
    "  {\"name\": \":method\", \"value\": \"POST\"},"
    "  {\"name\": \":authority\", \"value\": \"pay.example.com\"},"
    "  {\"name\": \":scheme\", \"value\": \"https\"},"
    "  {\"name\": \":path\", \"value\": \"/payments?x=1&y=%20\"},"
    "  {\"name\": \"content-type\", \"value\": \"application/octet-stream\"},"
    "  {\"name\": \"idempotency-key\", \"value\": \"k-h2\"}],"
    " \"postData\": {\"mimeType\": \"application/octet-stream\","
    "  \"text\": \"gP4AQQ0Kww==\", \"encoding\": \"base64\"}},"
    "\"response\": {\"status\": 201, \"headers\": ["
    "  {\"name\": \":status\", \"value\": \"201\"},"
    "  {\"name\": \"content-type\", \"value\": \"application/json\"}],"
    " \"content\": {\"size\": 2, \"text\": \"e30=\", \"encoding\": \"base64\"}}},"
    "{\"startedDateTime\": \"2026-11-29T10:00:01Z\","
    "\"request\": {\"method\": \"POST\", \"url\": \"http://127.0.0.1:1/payments\","
    " \"headers\": [{\"name\": \"Host\", \"value\": \"kept\"},"
    "  {\"name\": \":authority\", \"value\": \"dropped\"}]},"
    "\"response\": {\"status\": 0, \"headers\": [], \"content\": {}}},"
    "{\"startedDateTime\": \"2026-11-29T10:00:02Z\","
    "\"request\": {\"method\": \"GET\", \"url\": \"http://127.0.0.1:1/\", \"headers\": "
    "[]},"
    "\"response\": {\"status\": -1, \"headers\": [], \"content\": {}}}"
    "]}}";

static void test_har_pseudo_headers_base64_and_offsets(void **state)
{
    struct fixture *f = *state;
    int64_t n = 0, skipped = 0;
    char *err = NULL;
    if (import_text(f, "h2.har", h2_har, sizeof(h2_har) - 1, UST_IMPORT_HAR, &n,
                    &skipped, &err) != 0)
        fail_msg("import: %s", err);
    assert_int_equal(n, 2);
    assert_int_equal(skipped, 1);
    ust_log_record rows[4];
    assert_int_equal(read_rows(f, 0, rows, 4), 2);
    const ust_request *r = &rows[0].req;
    /* +02:00 is two hours before UTC's 12:00. */
    int64_t want = 0;
    assert_int_equal(ust_time_parse("2026-11-29T10:00:00.123456Z", &want), 0);
    assert_int_equal(r->received_at_us, want);
    assert_string_equal(r->target, "/payments?x=1&y=%20");
    /* No pseudo-header is a header; :authority became Host, first. */
    assert_int_equal(r->n_headers, 3);
    assert_string_equal(r->headers[0].name, "Host");
    assert_string_equal(r->headers[0].value, "pay.example.com");
    assert_string_equal(r->headers[1].name, "content-type");
    assert_string_equal(r->headers[2].value, "k-h2");
    const unsigned char bin[] = {0x80, 0xfe, 0x00, 0x41, '\r', '\n', 0xc3};
    assert_int_equal(r->body_len, sizeof(bin));
    assert_memory_equal(r->body, bin, sizeof(bin));
    /* A Host already there stays the only one. */
    assert_int_equal(rows[1].req.n_headers, 1);
    assert_string_equal(rows[1].req.headers[0].value, "kept");
    assert_int_equal(rows[1].req.body_len, 0);
    ust_log_record_clear(&rows[0]);
    ust_log_record_clear(&rows[1]);

    ust__capture c;
    assert_int_equal(ust__har_parse(h2_har, sizeof(h2_har) - 1, "h2.har", &c, &err), 0);
    assert_int_equal(c.v[0].response.status, 201);
    assert_int_equal(c.v[0].response.n_headers, 1); /* no ":status" */
    assert_int_equal(c.v[0].response.body_len, 2);
    assert_memory_equal(c.v[0].response.body, "{}", 2);
    assert_int_equal(c.v[1].response.status, 0); /* Chromium's 0: no answer */
    assert_int_equal(c.v[2].response.status, 0); /* Playwright's -1 */
    ust__capture_clear(&c);
}

/* A HAR of two good entries and then bad, one a line: refused naming entry
 * 3 and its line, nothing appended. */
static void expect_har_refused(struct fixture *f, const char *bad_entry,
                               const char *want)
{
    const char good[] =
        "{\"startedDateTime\": \"2026-11-29T10:00:00Z\", \"request\": {\"method\":"
        " \"POST\", \"url\": \"http://h/payments\", \"headers\": [], \"postData\":"
        " {\"text\": \"{}\"}}, \"response\": {\"status\": 200, \"headers\": [],"
        " \"content\": {\"text\": \"\"}}}";
    char *text =
        ust_sprintf("{\"log\": {\"version\": 1.2, \"creator\": {\"name\": \"x\"},"
                    " \"entries\": [\n%s,\n  %s,\n%s]}}",
                    good, good, bad_entry);
    int64_t before = head(f), n = -1, skipped = -1;
    char *err = NULL;
    assert_int_equal(import_text(f, "bad.har", text, strlen(text), UST_IMPORT_HAR, &n,
                                 &skipped, &err),
                     UST_EPARSE);
    ust_free(text);
    assert_non_null(err);
    if (strncmp(err, "bad.har:4: entry 3: ", 20) != 0 || strstr(err, want) == NULL)
        fail_msg("unexpected message: %s (want line 4, entry 3 and \"%s\")", err, want);
    ust_free(err);
    assert_int_equal(head(f), before);
}

#define ENTRY(started, method, url, headers, post, response)                           \
    "{\"startedDateTime\": " started ", \"request\": {\"method\": " method             \
    ", \"url\": " url ", \"headers\": " headers post "}, \"response\": " response "}"
#define OK_RESPONSE "{\"status\": 200, \"headers\": [], \"content\": {}}"
#define T "\"2026-11-29T10:00:00Z\""

static void test_a_bad_har_is_refused_whole(void **state)
{
    struct fixture *f = *state;
    expect_har_refused(f, ENTRY(T, "\"POST\"", "\"not a url\"", "[]", "", OK_RESPONSE),
                       "request.url is not a URL");
    expect_har_refused(f, ENTRY(T, "\"POST\"", "\"/payments\"", "[]", "", OK_RESPONSE),
                       "request.url is not a URL");
    expect_har_refused(f,
                       ENTRY("\"yesterday\"", "\"POST\"", "\"http://h/payments\"", "[]",
                             "", OK_RESPONSE),
                       "startedDateTime: expected an RFC 3339 time");
    expect_har_refused(
        f, ENTRY(T, "\"PO ST\"", "\"http://h/payments\"", "[]", "", OK_RESPONSE),
        "request.method: expected a method");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"",
                             "[{\"name\": \"X\", \"value\": \"a\\r\\nInjected: 1\"}]",
                             "", OK_RESPONSE),
                       "request.headers[0]: the value holds a CR, LF or NUL byte");
    /* Issue 24: a name with a trailing space reached a service as
     * "Transfer-Encoding : chunked" beside libcurl's Content-Length. */
    expect_har_refused(
        f,
        ENTRY(T, "\"POST\"", "\"http://h/payments\"",
              "[{\"name\": \"Host\", \"value\": \"h\"},"
              " {\"name\": \"Transfer-Encoding \", \"value\": \"chunked\"}]",
              "", OK_RESPONSE),
        "request.headers[1]: the name is not an HTTP token");
    expect_har_refused(f,
                       ENTRY(T, "\"DELETE /admin/users HTTP/1.1\\r\\nX: \"",
                             "\"http://h/payments\"", "[]", "", OK_RESPONSE),
                       "request.method: expected a method (an HTTP token)");
    expect_har_refused(
        f,
        ENTRY(T, "\"POST\"", "\"http://h/payments\"", "[]", "",
              "{\"status\": 200, \"headers\": [{\"name\": \"Set-Cookie\","
              " \"value\": \"a\\r\\nLocation: /x\"}], \"content\": {}}"),
        "response.headers[0]: the value holds a CR, LF or NUL byte");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"",
                             "[{\"name\": \"X\", \"value\": \"a\\u0000b\"}]", "",
                             OK_RESPONSE),
                       "holds a CR, LF or NUL byte");
    expect_har_refused(
        f, ENTRY(T, "\"POST\"", "\"http://h/payments\"", "{}", "", OK_RESPONSE),
        "request.headers: expected an array");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"", "[]",
                             ", \"postData\": {\"text\": \"@@\", \"encoding\": "
                             "\"base64\"}",
                             OK_RESPONSE),
                       "request.postData.text: not valid base64");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"", "[]",
                             ", \"postData\": {\"params\": [{\"name\": \"a\"}]}",
                             OK_RESPONSE),
                       "params without text");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"", "[]", "",
                             "{\"status\": 42, \"headers\": []}"),
                       "response.status: 42 is not an HTTP status");
    expect_har_refused(f,
                       ENTRY(T, "\"POST\"", "\"http://h/payments\"", "[]", "",
                             "{\"status\": 200, \"headers\": [], \"content\":"
                             " {\"text\": \"x\", \"encoding\": \"gzip\"}}"),
                       "response.content.encoding: expected \"base64\"");
    expect_har_refused(f, "[]", "expected an object");

    /* Not a HAR at all. */
    int64_t n = 0, skipped = 0;
    char *err = NULL;
    assert_int_equal(import_text(f, "x.har", "{\"log\": {}}", 11, UST_IMPORT_HAR, &n,
                                 &skipped, &err),
                     UST_EPARSE);
    assert_string_equal(err, "x.har: not a HAR: no log.entries array");
    ust_free(err);
    err = NULL;
    assert_int_equal(
        import_text(f, "x.har", "{\"log\"", 6, UST_IMPORT_HAR, &n, &skipped, &err),
        UST_EPARSE);
    assert_non_null(strstr(err, "x.har: not JSON: "));
    ust_free(err);
    assert_int_equal(head(f), 0);
}

/* ---- GoReplay ------------------------------------------------------------ */

/* Payloads in GoReplay's file format, \r\n messages: a request and its
 * response; a response before its request; a request without response; a
 * replayed response (type 3, ignored); a chunked request; one to no route. */
static const char gor_file[] =
    "1 a1a1a1a1a1a1a1a1a1a1a1a1 1764410400123456789 0\n"
    "POST /payments?from=gor HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "Content-Type: application/json\r\n"
    "Idempotency-Key: k-gor-1\r\n"
    "Content-Length: 40\r\n"
    "\r\n"
    "{\"amount\":700,\"currency\":\"eur\",\"x\":\"\r\n\"}" SEP
    "2 a1a1a1a1a1a1a1a1a1a1a1a1 1764410400133456789 10000000\n"
    "HTTP/1.1 201 Created\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 16\r\n"
    "\r\n"
    "{\"id\":\"pay_gor\"}" SEP
    "3 a1a1a1a1a1a1a1a1a1a1a1a1 1764410401000000000 5000000\n"
    "HTTP/1.1 500 Internal Server Error\r\n"
    "Content-Length: 0\r\n"
    "\r\n" SEP "2 c3c3c3c3c3c3c3c3c3c3c3c3 1764410402500000000 1000\n"
    "HTTP/1.1 409 Conflict\r\n"
    "Connection: close\r\n"
    "\r\n"
    "in progress" SEP "1 c3c3c3c3c3c3c3c3c3c3c3c3 1764410402000000000 0\n"
    "POST /payments HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "Transfer-Encoding: chunked\r\n"
    "Idempotency-Key: k-gor-2\r\n"
    "\r\n"
    "5\r\n{\"amo\r\n"
    "7\r\nunt\":1}\r\n"
    "0\r\n\r\n" SEP "1 b2b2b2b2b2b2b2b2b2b2b2b2 1764410401999999999 0\n"
    "POST /webhooks/stripe HTTP/1.1\r\n"
    "Host: hooks.example.com\r\n"
    "Content-Length: 2\r\n"
    "\r\n"
    "{}" SEP "1 d4d4d4d4d4d4d4d4d4d4d4d4 1764410403000000000 0\n"
    "GET /healthz HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "\r\n" SEP;

static void test_goreplay_payloads_import_with_their_responses(void **state)
{
    struct fixture *f = *state;
    int64_t n = 0, skipped = 0;
    char *err = NULL;
    if (import_text(f, "requests.gor", gor_file, sizeof(gor_file) - 1,
                    UST_IMPORT_GOREPLAY, &n, &skipped, &err) != 0)
        fail_msg("import: %s", err);
    assert_int_equal(n, 3);
    assert_int_equal(skipped, 1); /* GET /healthz */
    ust_log_record rows[4];
    assert_int_equal(read_rows(f, 0, rows, 4), 3);
    /* In the file's order of requests; the timestamp's nanoseconds cut to
     * microseconds. */
    assert_int_equal(rows[0].req.received_at_us, 1764410400123456LL);
    assert_string_equal(rows[0].req.method, "POST");
    assert_string_equal(rows[0].req.target, "/payments?from=gor");
    assert_int_equal(rows[0].req.n_headers, 4);
    assert_string_equal(rows[0].req.headers[2].name, "Idempotency-Key");
    assert_string_equal(rows[0].req.headers[2].value, "k-gor-1");
    const char body0[] = "{\"amount\":700,\"currency\":\"eur\",\"x\":\"\r\n\"}";
    assert_int_equal(rows[0].req.body_len, sizeof(body0) - 1);
    assert_memory_equal(rows[0].req.body, body0, sizeof(body0) - 1);
    assert_int_equal(rows[1].req.received_at_us, 1764410402000000LL);
    assert_int_equal(rows[1].req.body_len, 12); /* de-chunked */
    assert_memory_equal(rows[1].req.body, "{\"amount\":1}", 12);
    assert_string_equal(rows[2].req.target, "/webhooks/stripe");
    assert_int_equal(rows[2].sig, UST_SIG_MISSING);
    /* The log keeps each request's original answer; none for the third. */
    assert_int_equal(rows[0].response.status, 201);
    assert_memory_equal(rows[0].response.body, "{\"id\":\"pay_gor\"}", 16);
    assert_int_equal(rows[1].response.status, 409);
    assert_int_equal(rows[2].response.status, 0);
    for (size_t i = 0; i < 3; i++)
        ust_log_record_clear(&rows[i]);

    ust__capture c;
    assert_int_equal(
        ust__goreplay_parse(gor_file, sizeof(gor_file) - 1, "requests.gor", &c, &err),
        0);
    assert_int_equal(c.n, 4);
    /* Its original response, not the replayed 500. */
    assert_int_equal(c.v[0].response.status, 201);
    assert_int_equal(c.v[0].response.body_len, 16);
    assert_memory_equal(c.v[0].response.body, "{\"id\":\"pay_gor\"}", 16);
    assert_string_equal(c.v[0].response.headers[0].value, "application/json");
    /* The response that came first in the file, read to its end. */
    assert_int_equal(c.v[1].response.status, 409);
    assert_int_equal(c.v[1].response.body_len, 11);
    assert_memory_equal(c.v[1].response.body, "in progress", 11);
    assert_int_equal(c.v[2].response.status, 0); /* none captured */
    assert_string_equal(c.v[2].where, "payload 6 (id b2b2b2b2b2b2b2b2b2b2b2b2)");
    ust__capture_clear(&c);
}

static void expect_goreplay_refused(struct fixture *f, const char *bad,
                                    const char *want)
{
    char *text = ust_sprintf("1 aa 1764410400000000000 0\n"
                             "POST /payments HTTP/1.1\r\nHost: h\r\n\r\n" SEP "%s" SEP,
                             bad);
    int64_t before = head(f), n = -1, skipped = -1;
    char *err = NULL;
    assert_int_equal(import_text(f, "bad.gor", text, strlen(text), UST_IMPORT_GOREPLAY,
                                 &n, &skipped, &err),
                     UST_EPARSE);
    ust_free(text);
    assert_non_null(err);
    if (strstr(err, want) == NULL)
        fail_msg("unexpected message: %s (want \"%s\")", err, want);
    ust_free(err);
    assert_int_equal(head(f), before);
}

static void test_a_bad_goreplay_file_is_refused_whole(void **state)
{
    struct fixture *f = *state;
    expect_goreplay_refused(f, "1 bb 1764410400000000000 0\nhello there\r\n\r\n",
                            "bad.gor:7: payload 2 (id bb): not an HTTP request");
    expect_goreplay_refused(
        f, "7 bb 1764410400000000000 0\nGET / HTTP/1.1\r\n\r\n",
        "bad.gor:7: payload 2 (id bb): payload type 7 is not known");
    expect_goreplay_refused(f, "GET / HTTP/1.1\r\n\r\n",
                            "bad.gor:7: payload 2: the first line is not \"<type> <id>"
                            " <timestamp_ns> ...\"");
    expect_goreplay_refused(f, "1 bb 99999999999999999999999 0\nGET / HTTP/1.1\r\n\r\n",
                            "bad.gor:7: payload 2: the first line is not");
    expect_goreplay_refused(f,
                            "1 bb 1764410400000000000 0\nPOST /payments HTTP/1.1\r\n"
                            "Content-Length: 10\r\n\r\nshort",
                            "payload 2 (id bb): not an HTTP request (it ends early)");
    expect_goreplay_refused(f,
                            "1 bb 1764410400000000000 0\nGET / HTTP/1.1\r\n\r\n"
                            "GET / HTTP/1.1\r\n\r\n",
                            "payload 2 (id bb): more than one HTTP request");
    expect_goreplay_refused(
        f, "1 bb 1764410400000000000 0\nGET http://h/ HTTP/1.1\r\n\r\n",
        "payload 2 (id bb): the request target is not a path");
    /* Issue 24: what http-parser, built lenient, takes and a service may read
     * otherwise; each named on its own line (the payload starts on 7). */
    expect_goreplay_refused(
        f,
        "1 bb 1764410400000000000 0\nPOST /payments HTTP/1.1\r\n"
        "Host: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        "bad.gor:10: payload 2 (id bb): a header: the name is not an"
        " HTTP token");
    expect_goreplay_refused(
        f,
        "1 bb 1764410400000000000 0\nPOST /payments HTTP/1.1\r\n"
        "Host: h\r\nX-Note: a\r\n Content-Length: 0\r\n\r\n",
        "bad.gor:11: payload 2 (id bb): a header line begins with a"
        " space or tab (obs-fold, RFC 9112 5.2): refused, not joined");
    expect_goreplay_refused(f,
                            "1 bb 1764410400000000000 0\nPOST /payments HTTP/1.1\r\n"
                            "X-Note: a\r\n\tb\r\n\r\n",
                            "bad.gor:10: payload 2 (id bb): a header line begins with");
    /* Found by fuzz_import_goreplay: http-parser reads "20 0 OK" as 20. */
    expect_goreplay_refused(f,
                            "2 aa 2 0\nHTTP/1.1 20 0 OK\r\nContent-Length: 0\r\n\r\n",
                            "payload 2 (id aa): not an HTTP response: status 20");
    expect_goreplay_refused(f, "2 aa 1764410400000000000 0\nnot a response",
                            "payload 2 (id aa): not an HTTP response");
    expect_goreplay_refused(f, "1 aa 1764410400000000000 0\nGET / HTTP/1.1\r\n\r\n",
                            "payload 2 (id aa): a second request with this id");
    expect_goreplay_refused(
        f,
        "2 aa 1 0\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" SEP
        "2 aa 2 0\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        "payload 3 (id aa): a second response to request payload 1");
    assert_int_equal(head(f), 0);
}

/* Found by fuzz_import_goreplay: a file of no request (empty, or only
 * answers) is no events, not undefined behaviour. */
static void test_a_goreplay_file_without_requests_is_no_events(void **state)
{
    struct fixture *f = *state;
    const char only_answer[] =
        "2 aa 1 0\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" SEP;
    int64_t n = -1, skipped = -1;
    char *err = NULL;
    assert_int_equal(
        import_text(f, "empty.gor", "", 0, UST_IMPORT_GOREPLAY, &n, &skipped, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(import_text(f, "answers.gor", only_answer, sizeof(only_answer) - 1,
                                 UST_IMPORT_GOREPLAY, &n, &skipped, &err),
                     0);
    assert_int_equal(n, 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(head(f), 0);
}

/* Every allocation the parsers make, refused in turn: each refusal is
 * UST_ENOMEM with nothing kept (ASan finds what leaks), never a capture
 * with a part missing. */
static void parse_under_failing_allocations(int har, const char *buf, size_t len)
{
    for (long n = 0;; n++) {
        ust__capture c;
        char *err = NULL;
        ust_test_alloc_fail(n, 0);
        int rc = har ? ust__har_parse(buf, len, "oom", &c, &err)
                     : ust__goreplay_parse(buf, len, "oom", &c, &err);
        long refused = ust_test_alloc_restore();
        ust_free(err);
        if (refused == 0) {
            assert_int_equal(rc, 0);
            assert_true(c.n > 0);
            ust__capture_clear(&c);
            return;
        }
        assert_int_equal(rc, UST_ENOMEM);
        assert_int_equal(c.n, 0);
    }
}

static void test_out_of_memory_while_parsing_is_refused_cleanly(void **state)
{
    (void)state;
    /* Not the Chromium HAR: Debian's jansson 2.14 itself crashes
     * (lex_unget_unsave) when growing its buffer for a long number such as
     * Playwright's "_monotonicTime" fails; this HAR has none. */
    parse_under_failing_allocations(1, h2_har, sizeof(h2_har) - 1);
    parse_under_failing_allocations(0, gor_file, sizeof(gor_file) - 1);
}

/* ---- the command --------------------------------------------------------- */

/* `log import --format format` of file into f's cli.db under cfg; its exit
 * status, its output in *out. */
static int import_cli(struct fixture *f, const char *format, const char *cfg,
                      const char *file, char **out)
{
    char args[PATH_MAX * 4];
    snprintf(args, sizeof(args),
             "log import --format %s --config '%s' --log '%s/cli.db' '%s'", format, cfg,
             f->dir, file);
    return ust_test_run_cli(f->dir, args, out);
}

static void test_the_command_imports_a_har_and_says_what_it_skipped(void **state)
{
    struct fixture *f = *state;
    char cfg[PATH_MAX], har[PATH_MAX], args[PATH_MAX * 4], *out = NULL;
    ust_test_source_path("tests/data/config.json", cfg);
    ust_test_source_path("tests/data/har/chromium.har", har);
    assert_int_equal(import_cli(f, "har", cfg, har, &out), 0);
    if (strstr(out, "imported 4 events from ") == NULL ||
        strstr(out, "; 2 skipped (no route for their path)") == NULL)
        fail_msg("unexpected output: %s", out);
    free(out);
    snprintf(args, sizeof(args), "log verify --log '%s/cli.db'", f->dir);
    assert_int_equal(ust_test_run_cli(f->dir, args, NULL), 0);

    assert_int_equal(import_cli(f, "pcap", cfg, har, &out), 2);
    assert_non_null(strstr(out, "--format expects jsonl, har or goreplay"));
    free(out);

    /* A GoReplay file refused: exit 2, the position, nothing appended. */
    char gor[PATH_MAX];
    snprintf(gor, sizeof(gor), "%s/x.gor", f->dir);
    ust_test_write_file(gor, "1 aa 1 0\nGET /payments HTTP/1.1\r\n\r\n" SEP
                             "5 bb 2 0\nGET /payments HTTP/1.1\r\n\r\n" SEP);
    assert_int_equal(import_cli(f, "goreplay", cfg, gor, &out), 2);
    if (strstr(out, "x.gor:6: payload 2 (id bb): payload type 5 is not known") ==
            NULL ||
        strstr(out, "nothing from") == NULL)
        fail_msg("unexpected output: %s", out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_har_written_by_chromium_imports, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_har_pseudo_headers_base64_and_offsets,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_bad_har_is_refused_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_goreplay_payloads_import_with_their_responses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_bad_goreplay_file_is_refused_whole,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_goreplay_file_without_requests_is_no_events, setup, teardown),
        cmocka_unit_test(test_out_of_memory_while_parsing_is_refused_cleanly),
        cmocka_unit_test_setup_teardown(
            test_the_command_imports_a_har_and_says_what_it_skipped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
