/* What the recorder keeps of a request: credentials masked at capture (a
 * keyed digest, never the value, in the log files and every export), bodies
 * redacted on export, and per-route sampling by entity. The real binary on
 * 127.0.0.1, the real log files and their raw bytes. */
#define _GNU_SOURCE 1 /* memmem */
#include "serve_client.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/capture.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sqlite3.h>
#include <time.h>

#define SECRET "whsec_capture_test"
#define TOKEN "Bearer sk_live_secret"
#define COOKIE "a=b_cookie_9f3e"
#define MASK_KEY "capture-test-key-0123456789abcdef"

typedef serve_world world;

static int setup(void **state)
{
    world *w = serve_world_new(NULL, SECRET);
    setenv("UNDERSTUDY_MASK_KEY", MASK_KEY, 1);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    serve_world_free(*state);
    return 0;
}

/* The example config with edit applied (may be NULL: as it is), at w->cfg. */
static void write_config(world *w, void (*edit)(json_t *doc))
{
    char src[PATH_MAX];
    ust_test_source_path("tests/data/config.json", src);
    json_error_t jerr;
    json_t *doc = json_load_file(src, 0, &jerr);
    assert_non_null(doc);
    json_object_del(doc, "plugins");
    json_object_del(doc, "run");
    json_object_del(doc, "log");
    if (edit != NULL)
        edit(doc);
    assert_int_equal(json_dump_file(doc, w->cfg, 0), 0);
    json_decref(doc);
}

static void start(world *w)
{
    const char *args[] = {"--config", w->cfg, "--listen", "127.0.0.1:0",
                          "--log",    w->log, NULL};
    w->srv = server_start(args);
}

/* A Stripe callback for transaction txn, signed now; extra is more header
 * lines. */
static char *stripe_request(const char *evt, const char *txn, const char *extra,
                            const char *secret)
{
    char *body =
        ust_sprintf("{\"id\":\"%s\",\"type\":\"payment_intent.succeeded\",\"data\":{"
                    "\"object\":{\"id\":\"%s\",\"amount\":100,\"currency\":\"eur\","
                    "\"receipt_email\":\"payer@example.com\","
                    "\"metadata\":{\"order_id\":\"o_%s\"}}}}",
                    evt, txn, evt);
    char *sig = server_stripe_signature(body, (int64_t)time(NULL), secret);
    char *raw = ust_sprintf("POST /webhooks/stripe HTTP/1.1\r\nHost: test\r\n"
                            "Content-Type: application/json\r\nStripe-Signature: %s\r\n"
                            "%sContent-Length: %zu\r\n\r\n%s",
                            sig, extra ? extra : "", strlen(body), body);
    ust_free(sig);
    ust_free(body);
    return raw;
}

static void post(world *w, const char *raw, http_resp *r)
{
    assert_true(http_once(w->srv.port, raw, strlen(raw), r) > 0);
}

/* The whole file, or NULL when it does not exist; *len its size. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

static int file_has(const char *path, const char *needle)
{
    size_t len = 0;
    char *buf = slurp(path, &len);
    int found = buf != NULL && memmem(buf, len, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}

/* The log's three files, none of which may hold needle. */
static void log_files_lack(const world *w, const char *needle)
{
    const char *suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char path[PATH_MAX + 8];
        snprintf(path, sizeof(path), "%s%s", w->log, suffix[i]);
        if (file_has(path, needle))
            fail_msg("%s holds \"%s\"", path, needle);
    }
}

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `log export` of the log into out, with more arguments; its exit status. */
static int export_log(const world *w, const char *out, const char *more)
{
    char *cmd = ust_sprintf("'%s' log export --log '%s' --out '%s' %s 2>/dev/null",
                            getenv("UST_BIN"), w->log, out, more ? more : "");
    int rc = run(cmd);
    ust_free(cmd);
    return rc;
}

/* The digest the docs promise: "hmac-sha256:" and the hex of the first 16
 * bytes of HMAC-SHA256(key, value), computed here with OpenSSL directly. */
static void expected_digest(const char *key, const char *value, char out[64])
{
    unsigned char mac[32];
    unsigned int n = 0;
    assert_non_null(HMAC(EVP_sha256(), key, (int)strlen(key),
                         (const unsigned char *)value, strlen(value), mac, &n));
    strcpy(out, "hmac-sha256:");
    for (int i = 0; i < 16; i++)
        sprintf(out + 12 + 2 * i, "%02x", mac[i]);
}

/* The value of header name in the first exported line holding from. */
static void exported_header(const char *jsonl, const char *name, int nth, char *out,
                            size_t cap)
{
    size_t len = 0;
    char *buf = slurp(jsonl, &len);
    assert_non_null(buf);
    buf = realloc(buf, len + 1);
    buf[len] = '\0';
    char *line = buf;
    for (int i = 0; i < nth && line != NULL; i++) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    assert_non_null(line);
    char *nl = strchr(line, '\n');
    json_error_t e;
    json_t *row = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, &e);
    assert_non_null(row);
    size_t i;
    json_t *pair;
    out[0] = '\0';
    json_array_foreach(json_object_get(row, "headers"), i, pair)
    {
        if (strcasecmp(json_string_value(json_array_get(pair, 0)), name) == 0)
            snprintf(out, cap, "%s", json_string_value(json_array_get(pair, 1)));
    }
    json_decref(row);
    free(buf);
}

/* ---- masking ------------------------------------------------------------ */

/* With the default config: Authorization and Cookie never reach the .db,
 * the -wal or an export in clear; the same token gives the same digest. */
static void test_credentials_are_masked_at_capture(void **state)
{
    world *w = *state;
    write_config(w, NULL);
    start(w);
    http_resp r;
    const char *extra = "Authorization: " TOKEN "\r\nCookie: " COOKIE "\r\n";
    for (int i = 0; i < 2; i++) {
        char evt[32];
        snprintf(evt, sizeof(evt), "evt_mask_%d", i);
        char *raw = stripe_request(evt, "pi_mask", extra, SECRET);
        post(w, raw, &r);
        ust_free(raw);
        assert_int_equal(r.status, 202);
    }
    /* While serving: the rows are in the WAL. */
    log_files_lack(w, "sk_live_secret");
    log_files_lack(w, COOKIE);
    serve_world_stop(w);
    log_files_lack(w, "sk_live_secret");
    log_files_lack(w, COOKIE);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/export.jsonl", w->dir);
    assert_int_equal(export_log(w, out, "--derived"), 0);
    assert_false(file_has(out, "sk_live_secret"));
    assert_false(file_has(out, COOKIE));
    char a0[128], a1[128], c0[128];
    exported_header(out, "Authorization", 0, a0, sizeof(a0));
    exported_header(out, "Authorization", 1, a1, sizeof(a1));
    exported_header(out, "Cookie", 0, c0, sizeof(c0));
    assert_int_equal(strlen(a0), strlen(UST_MASK_PREFIX) + UST_MASK_HEX_LEN);
    assert_int_equal(strncmp(a0, UST_MASK_PREFIX, strlen(UST_MASK_PREFIX)), 0);
    assert_string_equal(a0, a1); /* same credential, same digest */
    assert_string_not_equal(a0, c0);
    /* The body is kept as it came (its signature is over it). */
    assert_true(file_has(out, "payer@example.com"));
}

static void with_mask_key(json_t *doc)
{
    json_object_set_new(doc, "capture",
                        json_pack("{s:[s,s],s:s}", "mask_headers", "authorization",
                                  "X-Api-Key", "mask_key_env", "UNDERSTUDY_MASK_KEY"));
}

/* With mask_key_env the digest is HMAC-SHA256 under that key, the same
 * across restarts; names match case-insensitively; log import masks too,
 * and keeps a digest that is already one. */
static void test_a_mask_key_from_the_environment_is_stable(void **state)
{
    world *w = *state;
    write_config(w, with_mask_key);
    http_resp r;
    for (int round = 0; round < 2; round++) {
        start(w);
        char evt[32];
        snprintf(evt, sizeof(evt), "evt_key_%d", round);
        char *raw = stripe_request(evt, "pi_key",
                                   "AUTHORIZATION: " TOKEN "\r\nx-api-key: k_123456\r\n"
                                   "Cookie: " COOKIE "\r\n",
                                   SECRET);
        post(w, raw, &r);
        ust_free(raw);
        assert_int_equal(r.status, 202);
        serve_world_stop(w);
    }
    log_files_lack(w, "sk_live_secret");
    log_files_lack(w, "k_123456");
    /* Without the variable, serve does not start (and names it). */
    char *cmd = ust_sprintf("env -u UNDERSTUDY_MASK_KEY '%s' serve --config '%s'"
                            " --listen 127.0.0.1:0 --log '%s' 2>'%s/err.txt'",
                            getenv("UST_BIN"), w->cfg, w->log, w->dir);
    assert_int_equal(run(cmd), 2);
    ust_free(cmd);
    char errf[PATH_MAX + 16];
    snprintf(errf, sizeof(errf), "%s/err.txt", w->dir);
    assert_true(file_has(errf, "capture.mask_key_env: environment variable "
                               "UNDERSTUDY_MASK_KEY is not set"));
    char out[PATH_MAX + 16], want[64], got[128];
    snprintf(out, sizeof(out), "%s/export.jsonl", w->dir);
    assert_int_equal(export_log(w, out, NULL), 0);
    expected_digest(MASK_KEY, TOKEN, want);
    for (int i = 0; i < 2; i++) {
        exported_header(out, "Authorization", i, got, sizeof(got));
        assert_string_equal(got, want);
    }
    expected_digest(MASK_KEY, "k_123456", want);
    exported_header(out, "X-Api-Key", 0, got, sizeof(got));
    assert_string_equal(got, want);
    /* Cookie is not in this config's list: kept. */
    exported_header(out, "Cookie", 0, got, sizeof(got));
    assert_string_equal(got, COOKIE);

    /* Import: a clear token in a JSONL file is masked on the way in, and
     * the exported digests come back as they were. */
    char in[PATH_MAX + 16], db2[PATH_MAX + 16], out2[PATH_MAX + 16];
    snprintf(in, sizeof(in), "%s/clear.jsonl", w->dir);
    snprintf(db2, sizeof(db2), "%s/imported.db", w->dir);
    snprintf(out2, sizeof(out2), "%s/export2.jsonl", w->dir);
    ust_test_write_file(in, "{\"v\":1,\"received_at\":\"2026-01-01T00:00:00Z\","
                            "\"remote\":\"127.0.0.1:1\",\"method\":\"POST\","
                            "\"target\":\"/payments\",\"headers\":[[\"Authorization\","
                            "\"" TOKEN "\"],[\"Idempotency-Key\",\"k1\"]],"
                            "\"body\":\"{}\"}\n");
    cmd = ust_sprintf("'%s' log import --config '%s' --log '%s' '%s' >/dev/null &&"
                      " '%s' log import --config '%s' --log '%s' '%s' >/dev/null &&"
                      " '%s' log export --log '%s' --out '%s'",
                      getenv("UST_BIN"), w->cfg, db2, in, getenv("UST_BIN"), w->cfg,
                      db2, out, getenv("UST_BIN"), db2, out2);
    assert_int_equal(run(cmd), 0);
    ust_free(cmd);
    assert_false(file_has(db2, "sk_live_secret"));
    assert_false(file_has(out2, "sk_live_secret"));
    expected_digest(MASK_KEY, TOKEN, want);
    for (int i = 0; i < 3; i++) {
        exported_header(out2, "Authorization", i, got, sizeof(got));
        assert_string_equal(got, want);
    }
}

static void test_mask_config(void **state)
{
    (void)state;
    static const char head[] =
        "{\"routes\":[{\"path\":\"/s\",\"kind\":\"webhook\",\"provider\":\"s\","
        "\"signature\":{\"scheme\":\"stripe\",\"secret_env\":\"S\"}},"
        "{\"path\":\"/h\",\"kind\":\"webhook\",\"provider\":\"h\",\"signature\":{"
        "\"scheme\":\"hmac-sha256-hex\",\"secret_env\":\"S\",\"header\":\"X-Sig\"},"
        "\"fields\":{\"event_id\":\"header:X-Delivery\"}},"
        "{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"p\","
        "\"idempotency\":{\"tenant_header\":\"X-Tenant\"}";
    struct {
        const char *rest, *err;
    } cases[] = {
        {"}]}", NULL},
        {"}],\"capture\":{\"mask_headers\":[\"stripe-signature\"]}}",
         "cfg.json: capture.mask_headers[0]: expected a header no route verifies or "
         "derives from (\"stripe-signature\" is the signature header of routes[0]; "
         "masked, the stored request could not be verified or derived again)"},
        {"}],\"capture\":{\"mask_headers\":[\"Cookie\",\"x-sig\"]}}",
         "cfg.json: capture.mask_headers[1]: expected a header no route verifies or "
         "derives from (\"x-sig\" is the signature header of routes[1]; masked, the "
         "stored request could not be verified or derived again)"},
        {"}],\"capture\":{\"mask_headers\":[\"X-Delivery\"]}}",
         "cfg.json: capture.mask_headers[0]: expected a header no route verifies or "
         "derives from (\"X-Delivery\" is a header a field is derived from of "
         "routes[1]; masked, the stored request could not be verified or derived "
         "again)"},
        {"}],\"capture\":{\"mask_headers\":[\"idempotency-key\"]}}",
         "cfg.json: capture.mask_headers[0]: expected a header no route verifies or "
         "derives from (\"idempotency-key\" is its idempotency or tenant header of "
         "routes[2]; masked, the stored request could not be verified or derived "
         "again)"},
        {"}],\"capture\":{\"mask_headers\":[\"bad name\"]}}",
         "cfg.json: capture.mask_headers[0]: expected a header name"},
        {"}],\"capture\":{\"mask_key_env\":\"1X\"}}",
         "cfg.json: capture.mask_key_env: expected an environment variable name"},
        {"}],\"capture\":{\"mask\":[]}}",
         "cfg.json: unknown key \"capture.mask\" (known here: mask_headers, "
         "mask_key_env)"},
        {",\"sample\":{\"percent\":0}}]}",
         "cfg.json: routes[2].sample.percent: expected a number of percent, more than "
         "0 (at least 0.01) and at most 100"},
        {",\"sample\":{\"percent\":100.5}}]}",
         "cfg.json: routes[2].sample.percent: expected a number of percent, more than "
         "0 (at least 0.01) and at most 100"},
        {",\"sample\":{\"percent\":\"10\"}}]}",
         "cfg.json: routes[2].sample.percent: expected a number of percent, more than "
         "0 (at least 0.01) and at most 100"},
        {",\"sample\":{\"percent\":0.001}}]}",
         "cfg.json: routes[2].sample.percent: expected a number of percent, more than "
         "0 (at least 0.01) and at most 100"},
        {",\"sample\":{}}]}",
         "cfg.json: routes[2].sample.percent: expected a number of percent, more than "
         "0 (at least 0.01) and at most 100"},
        {",\"sample\":{\"percent\":10,\"salt\":1}}]}",
         "cfg.json: unknown key \"routes[2].sample.salt\" (known here: percent)"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(cases); i++) {
        char *text = ust_sprintf("%s%s", head, cases[i].rest);
        ust_config *cfg = NULL;
        char *err = NULL;
        int rc = ust_config_parse(text, strlen(text), "cfg.json", &cfg, &err);
        if (cases[i].err == NULL) {
            assert_int_equal(rc, 0);
            /* the defaults */
            assert_int_equal(cfg->capture.n_mask_headers, 3);
            assert_string_equal(cfg->capture.mask_headers[0], "Authorization");
            assert_string_equal(cfg->capture.mask_headers[1], "Cookie");
            assert_string_equal(cfg->capture.mask_headers[2], "Proxy-Authorization");
            assert_int_equal(cfg->routes[2].sample_bp, 10000);
        } else {
            if (rc == 0 || err == NULL || strcmp(err, cases[i].err) != 0)
                fail_msg("case %zu: rc %d, \"%s\", wanted \"%s\"", i, rc,
                         err ? err : "", cases[i].err);
        }
        ust_free(err);
        ust_config_free(cfg);
        ust_free(text);
    }
    /* A percent keeps its hundredths; the key variable must be set and long. */
    const char *ok =
        "{\"routes\":[{\"path\":\"/p\",\"kind\":\"api\",\"provider\":\"p\","
        "\"sample\":{\"percent\":12.34}}],"
        "\"capture\":{\"mask_headers\":[],\"mask_key_env\":\"UST_T_KEY\"}}";
    ust_config *cfg = NULL;
    char *err = NULL;
    assert_int_equal(ust_config_parse(ok, strlen(ok), "cfg.json", &cfg, &err), 0);
    assert_int_equal(cfg->routes[0].sample_bp, 1234);
    assert_int_equal(cfg->capture.n_mask_headers, 0);
    /* The key variable is withheld from plugin children, like secrets. */
    assert_string_equal(cfg->candidate.scrub_env[0], "UST_T_KEY");
    unsetenv("UST_T_KEY");
    assert_int_equal(ust_config_load_secrets(cfg, &err), 0); /* not a secret */
    assert_int_equal(ust_config_load_mask_key(cfg, &err), UST_ECONFIG);
    assert_string_equal(err, "cfg.json: capture.mask_key_env: environment variable "
                             "UST_T_KEY is not set");
    ust_free(err);
    err = NULL;
    setenv("UST_T_KEY", "short", 1);
    assert_int_equal(ust_config_load_mask_key(cfg, &err), UST_ECONFIG);
    assert_non_null(strstr(err, "shorter than 16 bytes"));
    ust_free(err);
    setenv("UST_T_KEY", MASK_KEY, 1);
    assert_int_equal(ust_config_load_mask_key(cfg, NULL), 0);
    assert_int_equal(cfg->capture.mask_key_len, strlen(MASK_KEY));
    ust_config_free(cfg);
}

/* ---- export --redact ---------------------------------------------------- */

static void with_redact(json_t *doc)
{
    json_object_set_new(
        doc, "redact",
        json_pack("[s,s,s]", "receipt_email", "/data/object/metadata", "x-customer"));
}

static void test_export_redact(void **state)
{
    world *w = *state;
    write_config(w, NULL);
    start(w);
    http_resp r;
    char *raw =
        stripe_request("evt_redact", "pi_redact", "X-Customer: cust_77\r\n", SECRET);
    post(w, raw, &r);
    ust_free(raw);
    assert_int_equal(r.status, 202);
    /* A body that is not JSON: it cannot be checked for the fields. */
    const char form[] = "POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key: f1\r\n"
                        "Content-Length: 27\r\n\r\nreceipt_email=p%40example.c";
    assert_true(http_once(w->srv.port, form, sizeof(form) - 1, &r) > 0);
    assert_int_equal(r.status, 202);
    serve_world_stop(w);
    write_config(w, with_redact);
    char plain[PATH_MAX + 16], red[PATH_MAX + 16], bin[PATH_MAX];
    snprintf(plain, sizeof(plain), "%s/plain.jsonl", w->dir);
    snprintf(red, sizeof(red), "%s/redacted.jsonl", w->dir);
    snprintf(bin, sizeof(bin), "%s", getenv("UST_BIN"));
    assert_int_equal(export_log(w, plain, NULL), 0);
    char *more = ust_sprintf("--redact --config '%s'", w->cfg);
    assert_int_equal(export_log(w, red, more), 0);
    ust_free(more);
    /* Without --redact the export is as before: the body verbatim. */
    assert_true(file_has(plain, "payer@example.com"));
    assert_true(file_has(plain, "o_evt_redact"));
    assert_true(file_has(plain, "p%40example.c"));
    assert_true(file_has(plain, "cust_77"));
    assert_false(file_has(red, "cust_77")); /* a header named in redact */
    assert_false(file_has(red, "payer@example.com"));
    assert_false(file_has(red, "o_evt_redact"));
    assert_false(file_has(red, "p%40example.c"));
    assert_true(file_has(red, "\\\"receipt_email\\\":\\\"[redacted]\\\""));
    assert_true(file_has(red, "\\\"metadata\\\":\\\"[redacted]\\\""));
    assert_true(file_has(red, UST_REDACTED_BODY));
    assert_true(file_has(red, "pi_redact")); /* the rest is kept */
    /* --redact needs the config that says what to redact. */
    assert_int_equal(export_log(w, red, "--redact"), 2);
}

/* ---- sampling ----------------------------------------------------------- */

#define N_TXN 40
#define SAMPLE_PERCENT 30

/* The rule the docs state, computed here with OpenSSL directly: the first 8
 * bytes of SHA-256(identity), big-endian, mod 10000, below percent * 100. */
static int expected_in(const char *identity)
{
    unsigned char d[32];
    unsigned int n = 0;
    assert_int_equal(EVP_Digest(identity, strlen(identity), d, &n, EVP_sha256(), NULL),
                     1);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | d[i];
    return v % 10000 < SAMPLE_PERCENT * 100;
}

static void with_sample(json_t *doc)
{
    json_t *routes = json_object_get(doc, "routes");
    json_object_set_new(json_array_get(routes, 0), "sample",
                        json_pack("{s:i}", "percent", SAMPLE_PERCENT));
    json_object_set_new(json_array_get(routes, 2), "sample",
                        json_pack("{s:i}", "percent", SAMPLE_PERCENT));
}

/* Sends events k0..k1-1 of every transaction; counts the answers. */
static void send_round(world *w, int k0, int k1, int *in_answers, int *out_answers)
{
    http_resp r;
    for (int t = 0; t < N_TXN; t++) {
        char txn[32], ident[48];
        snprintf(txn, sizeof(txn), "pi_s%d", t);
        snprintf(ident, sizeof(ident), "stripe:%s", txn);
        int in = expected_in(ident);
        for (int k = k0; k < k1; k++) {
            char evt[48];
            snprintf(evt, sizeof(evt), "evt_s%d_%d", t, k);
            char *raw = stripe_request(evt, txn, NULL, SECRET);
            post(w, raw, &r);
            ust_free(raw);
            assert_int_equal(r.status, 202);
            if (in) {
                assert_non_null(strstr(r.body, "\"recorded\":true"));
                (*in_answers)++;
            } else {
                assert_string_equal(r.body,
                                    "{\"recorded\":false,\"sampled_out\":true}");
                (*out_answers)++;
            }
        }
    }
}

static long long metric(world *w, const char *line_start)
{
    http_resp r;
    const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_int_equal(http_once(w->srv.admin_port, req, sizeof(req) - 1, &r), 200);
    char *at = strstr(r.body, line_start);
    assert_non_null(at);
    return atoll(at + strlen(line_start));
}

static void test_sampling_is_by_entity_and_survives_a_restart(void **state)
{
    world *w = *state;
    write_config(w, with_sample);
    int in = 0, out = 0;
    start(w);
    send_round(w, 0, 3, &in, &out);
    assert_int_equal(metric(w, "understudy_events_sampled_out_total{route=\""
                               "/webhooks/stripe\"} "),
                     out);
    serve_world_stop(w);
    /* Another process: every entity falls on the same side. */
    start(w);
    int in2 = 0, out2 = 0;
    send_round(w, 3, 5, &in2, &out2);
    assert_int_equal(metric(w, "understudy_events_sampled_out_total{route=\""
                               "/webhooks/stripe\"} "),
                     out2);
    /* Evidence is never sampled out: a bad signature on an entity that is
     * out is recorded (and refused). An API call is sampled by tenant and
     * Idempotency-Key. */
    int t_out = 0;
    char ident[48];
    for (; t_out < N_TXN; t_out++) {
        snprintf(ident, sizeof(ident), "stripe:pi_s%d", t_out);
        if (!expected_in(ident))
            break;
    }
    assert_true(t_out < N_TXN);
    char txn[32];
    snprintf(txn, sizeof(txn), "pi_s%d", t_out);
    char *raw = stripe_request("evt_forged", txn, NULL, "whsec_wrong");
    http_resp r;
    post(w, raw, &r);
    ust_free(raw);
    assert_int_equal(r.status, 401);
    int api_in = 0, api_out = 0;
    for (int k = 0; k < 20; k++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", k);
        snprintf(ident, sizeof(ident), "/payments:t1:%s", key);
        char *req = ust_sprintf("POST /payments HTTP/1.1\r\nHost: t\r\nIdempotency-Key:"
                                " %s\r\nX-Tenant-Id: t1\r\nContent-Length: 2\r\n\r\n{}",
                                key);
        post(w, req, &r);
        ust_free(req);
        assert_int_equal(r.status, 202);
        int got_in = strstr(r.body, "\"recorded\":true") != NULL;
        assert_int_equal(got_in, expected_in(ident));
        api_in += got_in;
        api_out += !got_in;
    }
    serve_world_stop(w);
    assert_true(in > 0 && out > 0); /* 40 entities at 30%: both sides occur */
    assert_int_equal(in2 * 3, in * 2);
    assert_int_equal(out2 * 3, out * 2);
    /* The log holds exactly the events of entities that are in, all of them. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(w->log, &db, SQLITE_OPEN_READONLY, NULL), 0);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT identity, signature, count(*) FROM "
                                        "events GROUP BY identity, signature",
                                        -1, &st, NULL),
                     0);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        const char *sig = (const char *)sqlite3_column_text(st, 1);
        int count = sqlite3_column_int(st, 2);
        rows += count;
        if (strcmp(sig, "invalid") == 0) {
            assert_string_equal(id + strlen("stripe:"), txn);
            assert_int_equal(count, 1);
            continue;
        }
        assert_true(expected_in(id));
        assert_int_equal(count, strncmp(id, "stripe:", 7) == 0 ? 5 : 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_int_equal(rows, in + in2 + 1 + api_in);
    assert_true(api_in + api_out == 20);
}

/* In-line use answers every request with the legacy's decision: a sample
 * would leave some unanswered, so serve refuses it. */
static void test_respond_legacy_refuses_a_sample(void **state)
{
    world *w = *state;
    write_config(w, with_sample);
    char *cmd = ust_sprintf("'%s' serve --config '%s' --listen 127.0.0.1:0 --log '%s'"
                            " --run '%s/run.db' --respond legacy 2>'%s/err.txt'",
                            getenv("UST_BIN"), w->cfg, w->log, w->dir, w->dir);
    assert_int_not_equal(run(cmd), 0);
    ust_free(cmd);
    char errf[PATH_MAX + 16];
    snprintf(errf, sizeof(errf), "%s/err.txt", w->dir);
    assert_true(file_has(errf, "routes[0].sample would leave some undecided"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mask_config),
        cmocka_unit_test_setup_teardown(test_credentials_are_masked_at_capture, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_mask_key_from_the_environment_is_stable,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_redact, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_sampling_is_by_entity_and_survives_a_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_respond_legacy_refuses_a_sample, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
