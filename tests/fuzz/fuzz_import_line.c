/* `log import` on one input: the bytes are a JSONL file (normally one line)
 * read through ust_log_import, the command's own path: line splitting,
 * ust_jsonl_parse, derivation under a fixed config (every signature scheme,
 * field extraction, a status map, an api route with Idempotency-Key) and
 * the append to a real event log. The log lives in a scratch directory on
 * tmpfs when there is one (the import commits with synchronous=FULL) and is
 * started again now and then so it does not grow without bound.
 * Invariants: an import is all or nothing (a refused input leaves the head
 * where it was, and the refusal names the input); one that succeeds
 * appends as many events as it says, and each recorded answer it kept
 * exports as a line that parses back to the same answer. */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/log.h>

#include <limits.h>
#include <string.h>
#include <unistd.h>

#define LABEL "fuzz.jsonl"
#define ROWS_BEFORE_RESTART 20000

static const char config_text[] =
    "{\"routes\": ["
    "{\"path\": \"/webhooks/stripe\", \"kind\": \"webhook\", \"provider\": \"stripe\","
    " \"signature\": {\"scheme\": \"stripe\", \"secret_env\": \"FUZZ_STRIPE_SECRET\"},"
    " \"fields\": {\"event_id\": \"/id\", \"event_type\": \"/type\","
    "  \"occurred_at\": \"/created\", \"transaction_id\": \"/data/object/id\","
    "  \"amount\": \"/data/object/amount\", \"currency\": \"/data/object/currency\","
    "  \"intent\": \"/data/object/metadata/order_id\"},"
    " \"status\": {\"from\": \"/type\", \"map\": {\"payment_intent.created\": "
    "\"pending\", \"payment_intent.succeeded\": \"paid\", \"charge.refunded\": "
    "\"refunded\"}}},"
    "{\"path\": \"/webhooks/standard\", \"kind\": \"webhook\", \"provider\": \"acme\","
    " \"signature\": {\"scheme\": \"standard-webhooks\", \"secret_env\": "
    "\"FUZZ_STANDARD_SECRET\"},"
    " \"fields\": {\"event_id\": \"header:webhook-id\", \"event_type\": \"/type\","
    "  \"transaction_id\": \"/data/payment_id\", \"amount\": \"/data/amount\","
    "  \"currency\": \"/data/currency\", \"intent\": \"/data/order_id\"},"
    " \"status\": {\"from\": \"/data/status\"}},"
    "{\"path\": \"/webhooks/github\", \"kind\": \"webhook\", \"provider\": \"github\","
    " \"signature\": {\"scheme\": \"hmac-sha256-hex\", \"secret_env\": "
    "\"FUZZ_GITHUB_SECRET\"},"
    " \"fields\": {\"event_id\": \"header:X-GitHub-Delivery\", \"event_type\": "
    "\"header:X-GitHub-Event\"}},"
    "{\"path\": \"/payments\", \"kind\": \"api\", \"provider\": \"api\","
    " \"idempotency\": {\"header\": \"Idempotency-Key\", \"tenant_header\": "
    "\"X-Tenant-Id\"},"
    " \"fields\": {\"amount\": \"/amount\", \"currency\": \"/currency\", \"intent\": "
    "\"/order_id\"}}"
    "], \"import\": {\"max_line_bytes\": 2048}}";

static ust_config *cfg;
static ust_log *event_log;
static char dir[PATH_MAX], db[PATH_MAX + 16];
static int64_t rows;

static void fail(const char *what, char *err)
{
    fprintf(stderr, "fuzz_import_line: %s: %s\n", what, err ? err : "?");
    abort();
}

static void remove_log(void)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < UST_ARRAY_SIZE(suffixes); i++) {
        snprintf(path, sizeof(path), "%s%s", db, suffixes[i]);
        (void)unlink(path);
    }
}

static void open_log(void)
{
    char *err = NULL;
    remove_log();
    if (ust_log_open(db, UST_LOG_CREATE, &event_log, &err) != 0)
        fail(db, err);
    rows = 0;
}

static void at_exit(void)
{
    ust_log_close(event_log);
    remove_log();
    (void)rmdir(dir);
    ust_config_free(cfg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("FUZZ_STRIPE_SECRET", "whsec_understudy_test_secret_0001", 1);
    setenv("FUZZ_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    setenv("FUZZ_GITHUB_SECRET", "It's a Secret to Everybody", 1);
    char *err = NULL;
    if (ust_config_parse(config_text, sizeof(config_text) - 1, "fuzz-config", &cfg,
                         &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0)
        fail("config", err);
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/understudy-fuzz-XXXXXX", base ? base : "/tmp");
    if (mkdtemp(dir) == NULL)
        fail("mkdtemp", dir);
    snprintf(db, sizeof(db), "%s/events.db", dir);
    open_log();
    atexit(at_exit);
    return 0;
}

static int64_t head(void)
{
    int64_t seq = 0;
    char hex[UST_SHA256_HEX_LEN + 1];
    char *err = NULL;
    if (ust_log_head(event_log, &seq, hex, &err) != 0)
        fail("head", err);
    return seq;
}

/* Non-blank lines, as import counts them (CR and LF at a line's end go). */
static int64_t count_lines(const uint8_t *data, size_t size)
{
    int64_t n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        size_t end = i;
        while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n'))
            end--;
        n += end > start;
        start = i + 1;
    }
    return n;
}

/* Every row appended after seq `after` exports as a line that parses back
 * to the same recorded answer: what import kept, export gives back. */
static void check_answers_round_trip(int64_t after)
{
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    char *err = NULL;
    if (ust_log_cursor_open(event_log, after, &cur, &err) != 0)
        fail("cursor", err);
    while (ust_log_cursor_next(cur, &rec, &err) == 1) {
        char *line = ust_jsonl_format(&rec, 0);
        ust_request req;
        ust_response a;
        FUZZ_CHECK(line != NULL &&
                   ust_jsonl_parse_exchange(line, strlen(line), &req, &a, NULL) == 0);
        const ust_response *b = &rec.response;
        FUZZ_CHECK(a.status == b->status && a.n_headers == b->n_headers &&
                   a.body_len == b->body_len &&
                   (a.body_len == 0 || memcmp(a.body, b->body, a.body_len) == 0));
        for (size_t i = 0; i < a.n_headers; i++)
            FUZZ_CHECK(strcmp(a.headers[i].name, b->headers[i].name) == 0 &&
                       strcmp(a.headers[i].value, b->headers[i].value) == 0);
        ust_request_clear(&req);
        ust_response_clear(&a);
        ust_free(line);
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (rows > ROWS_BEFORE_RESTART) {
        ust_log_close(event_log);
        open_log();
    }
    /* fmemopen of 0 bytes fails on older glibc: give it one NUL-free byte. */
    FILE *in = size > 0 ? fmemopen((void *)data, size, "r") : fmemopen("\n", 1, "r");
    if (in == NULL)
        abort();
    int64_t before = head(), n = -1;
    char *err = NULL;
    int rc = ust_log_import(event_log, cfg, in, LABEL, &n, &err);
    fclose(in);
    int64_t after = head();
    if (rc == 0) {
        FUZZ_CHECK(err == NULL && after - before == n);
        FUZZ_CHECK(n == count_lines(data, size));
        rows += n;
        check_answers_round_trip(before);
    } else {
        FUZZ_CHECK(after == before);
        FUZZ_CHECK(err != NULL);
        FUZZ_CHECK(rc != UST_EPARSE || strncmp(err, LABEL ":", 11) == 0);
    }
    ust_free(err);
    return 0;
}
