/* Configuration: one JSON file, validated completely at load so that every
 * later stage can trust it. Each level is a table of rows (schema.h): the
 * top level and the server's blocks here, a route's in config_route.c, the
 * plugins' in config_plugin.c. Each refusal names the file, the key path
 * and what was expected; a secret appears only by the name of its
 * variable. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include "event/config_internal.h"
#include "event/event_internal.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#define DOC(t, d, text) .doc_type = (t), .doc_default = (d), .doc = (text)
#define CFG_AT(m) .off = offsetof(ust_config, m)

/* Answers serve holds for clients that have not read them (see
 * docs/recorder.md): four of --respond upstream's largest per connection. */
#define DEFAULT_MAX_OWED_BYTES (64 << 20)
#define DEFAULT_MAX_OWED_BYTES_TOTAL (256 << 20)
#define MAX_SECONDS 1000000000LL /* µs of it fit an int64 */
#define DEFAULT_CACHE_MB 64
#define MAX_CACHE_MB (1LL << 20) /* 1 TiB: its bytes fit a size_t */
#define DEFAULT_RETENTION_EVERY_US 3600000000LL

static const ust__key limits_rows[] = {
    {.key = "max_body_bytes",
     .type = UST__KEY_SIZE,
     .def = 1048576,
     CFG_AT(limits.max_body_bytes),
     DOC("positive integer", "`1048576` (1 MiB)",
         "A request whose body is longer is answered 413 and not recorded. A declared "
         "`Content-Length` over the limit is refused before the body is read.")},
    {.key = "max_headers",
     .type = UST__KEY_SIZE,
     .def = 64,
     CFG_AT(limits.max_headers),
     DOC("positive integer", "`64`",
         "A request with more header lines is answered 431.")},
    {.key = "header_timeout_ms",
     .type = UST__KEY_POSINT,
     .def = 10000,
     CFG_AT(limits.header_timeout_ms),
     DOC("positive integer", "`10000`",
         "How long one request may take to arrive, from its first byte (or from the "
         "connection's opening, for its first request) until the end of its body; a "
         "slower one is answered 408 and the connection closed.")},
    {.key = "idle_timeout_ms",
     .type = UST__KEY_POSINT,
     .def = 30000,
     CFG_AT(limits.idle_timeout_ms),
     DOC("positive integer", "`30000`",
         "A keep-alive connection that owes no answer and has no request under way is "
         "closed after this long idle (see [recorder.md](recorder.md)).")},
    {.key = "max_connections",
     .type = UST__KEY_SIZE,
     .def = 1024,
     CFG_AT(limits.max_connections),
     DOC("positive integer", "`1024`",
         "Open connections at most (kept 64 below the descriptor limit, which `serve` "
         "raises to its hard limit at start). At the cap the oldest idle keep-alive "
         "connection makes room; when none is idle a newcomer gets 503.")},
    {.key = "max_owed_bytes",
     .type = UST__KEY_SIZE,
     .def = DEFAULT_MAX_OWED_BYTES,
     CFG_AT(limits.max_owed_bytes),
     DOC("positive integer", "`67108864` (64 MiB)",
         "Answer bytes one connection may be owed (answers being decided counted at "
         "their largest, see [recorder.md](recorder.md#connections)) before `serve` "
         "stops reading it; it is read again once its answers drain below. Each "
         "answer also counts 384 bytes for what it holds in `serve` beside its bytes, "
         "so the limit bounds memory however small the answers: 64 MiB is some "
         "130,000 answers of `--respond ack`'s ~130 bytes. One request in flight is "
         "always allowed.")},
    {.key = "max_owed_bytes_total",
     .type = UST__KEY_SIZE,
     .def = DEFAULT_MAX_OWED_BYTES_TOTAL,
     CFG_AT(limits.max_owed_bytes_total),
     DOC("positive integer", "`268435456` (256 MiB)",
         "The same across every connection (each answer with its 384 bytes): at or "
         "over it, no connection is read until the answers owed drain below.")},
};
const ust__section ust__config_limits = UST__SECTION("limits", limits_rows);

static const ust__key import_rows[] = {
    {.key = "max_line_bytes",
     .type = UST__KEY_SIZE,
     CFG_AT(import.max_line_bytes),
     DOC("positive integer",
         "12 × `limits.max_body_bytes` + 1 MiB (`13631488`, 13 MiB, with the default "
         "body limit)",
         "`log import` (JSONL) refuses a longer line, naming the file and the line, "
         "and reads no further into it: memory for a line stays within this however "
         "long the line is. The default holds a line that `serve` could have recorded: "
         "a request body and a recorded answer's body at the body limit, each written "
         "at worst (a control byte is 6 bytes, `\\u00XX`), and 1 MiB for the headers "
         "and the rest. Raise it with `limits.max_body_bytes`, or alone for answers "
         "bigger than the body limit. HAR and GoReplay files are one document, read "
         "whole.")},
};
const ust__section ust__config_import = UST__SECTION("import", import_rows);

static const ust__key health_rows[] = {
    {.key = "max_lag_s",
     .type = UST__KEY_POSINT,
     .def = 300,
     .max = MAX_SECONDS,
     .max_what = "at most 1000000000 seconds",
     CFG_AT(health.max_lag_s),
     DOC("positive integer", "`300`",
         "`/healthz` names `runner_lag` (503) when the oldest event the live runner "
         "has not decided arrived longer ago than this many seconds. A tenth of it "
         "also bounds how long the live runner waits while the recorder is busy (100 "
         "events or more committed within 100 ms), leaving it the CPU: its lag by "
         "arrival times, and the wait itself on a clock that never steps (arrival "
         "times are the wall clock's, which can be stepped back).")},
};
const ust__section ust__config_health = UST__SECTION("health", health_rows);

static const ust__key cache_rows[] = {
    {.key = "state_mb",
     .type = UST__KEY_POSINT,
     .def = DEFAULT_CACHE_MB,
     .max = MAX_CACHE_MB,
     .max_what = "at most 1048576 (MiB)",
     CFG_AT(cache.state_mb),
     DOC("positive integer, MiB", "`64`",
         "The state store's cache: the keys the plugins read and wrote (absent ones "
         "too), their values (a replaced value stays until the cache empties) and its "
         "hash table. After a commit that leaves it over this (or over 262,144 keys) "
         "it is emptied; later reads go to the run database. `/metrics` shows its size "
         "(`understudy_runner_state_cache_bytes`) and this bound. A plugin isolated in "
         "a child process keeps a cache of its own there, at the default bound.")},
    {.key = "run_pages_mb",
     .type = UST__KEY_POSINT,
     .def = DEFAULT_CACHE_MB,
     .max = MAX_CACHE_MB,
     .max_what = "at most 1048576 (MiB)",
     CFG_AT(cache.run_pages_mb),
     DOC("positive integer, MiB", "`64`",
         "SQLite's page cache of the run database (decisions, divergences and the "
         "state table). A smaller one costs reads from the kernel's page cache when "
         "the state table outgrows it.")},
};
const ust__section ust__config_cache = UST__SECTION("cache", cache_rows);

static const ust__key coverage_rows[] = {
    {.key = "semantic_window_s",
     .type = UST__KEY_POSINT,
     .def = UST_COVERAGE_DEFAULT_SEMANTIC_WINDOW_S,
     .max = MAX_SECONDS,
     .max_what = "at most 1000000000",
     CFG_AT(coverage.semantic_window_s),
     DOC("positive integer", "`600`",
         "A move to paid counts as a `semantic_pair` when another transaction of the "
         "same provider, intent, amount and currency moved to paid at most this many "
         "seconds before.")},
    {.key = "op_latency_ms",
     .type = UST__KEY_POSINT,
     .def = UST_COVERAGE_DEFAULT_OP_LATENCY_MS,
     .max = MAX_SECONDS,
     .max_what = "at most 1000000000",
     CFG_AT(coverage.op_latency_ms),
     DOC("positive integer", "`500`",
         "A repeat of an Idempotency-Key with the first request's hash is an "
         "`api_concurrent_repeat` when it arrived less than this many milliseconds "
         "after the first, else an `api_completed_repeat`.")},
    {.key = "key_ttl_s",
     .type = UST__KEY_POSINT,
     .def = UST_COVERAGE_DEFAULT_KEY_TTL_S,
     .max = MAX_SECONDS,
     .max_what = "at most 1000000000",
     CFG_AT(coverage.key_ttl_s),
     DOC("positive integer", "`86400`",
         "A request whose key first came more than this many seconds before is an "
         "`api_after_ttl`.")},
};
const ust__section ust__config_coverage = UST__SECTION("coverage", coverage_rows);

static const ust__key compare_rows[] = {
    {.key = "ignore",
     .type = UST__KEY_STRINGS,
     CFG_AT(compare_ignore),
     .off_n = offsetof(ust_config, n_compare_ignore),
     .check = ust__pointer_valid,
     .what = "an array of JSON Pointers",
     .what_item = "a JSON Pointer (\"\" or starting with /)",
     DOC("array of JSON Pointers", "`[]`",
         "Removed from both response bodies before they are compared, for fields that "
         "legitimately differ (a generated id). A pointer that names nothing in a body "
         "is fine.")},
    {.key = "headers",
     .type = UST__KEY_STRINGS,
     CFG_AT(compare_headers),
     .off_n = offsetof(ust_config, n_compare_headers),
     .check = ust__valid_header_name,
     .what = "an array of header names",
     .what_item = "a header name",
     DOC("array of header names", "`[]`",
         "The response headers compared (case-insensitive). Headers not listed are not "
         "compared.")},
};
const ust__section ust__config_compare = UST__SECTION("compare", compare_rows);

static const ust__key retention_rows[] = {
    {.key = "keep",
     .type = UST__KEY_DURATION,
     .required = 1,
     CFG_AT(retention.keep_us),
     .missing = "how long to keep events, such as \"8d\"",
     DOC("duration string", "**required** in a `retention` block",
         "How long events are kept: `serve` prunes those that arrived (`received_at`, "
         "wall clock) longer ago than this, recorded as `log prune` records them. "
         "Nothing the runner has not decided is removed.")},
    {.key = "every",
     .type = UST__KEY_DURATION,
     .def = DEFAULT_RETENTION_EVERY_US,
     CFG_AT(retention.every_us),
     DOC("duration string", "`\"1h\"`", "How often `serve` looks.")},
};
const ust__section ust__config_retention = UST__SECTION("retention", retention_rows);

static const ust__key capture_rows[] = {
    {.key = "mask_headers",
     .type = UST__KEY_STRINGS,
     CFG_AT(capture.mask_headers),
     .off_n = offsetof(ust_config, capture.n_mask_headers),
     .check = ust__valid_header_name,
     .what = "an array of header names",
     .what_item = "a header name",
     DOC("array of header names",
         "`[\"Authorization\", \"Cookie\", \"Proxy-Authorization\"]`",
         "Headers (matched case-insensitively) whose values `serve` and `log import` "
         "store as `hmac-sha256:<32 hex digits>`, a keyed digest, never in clear. `[]` "
         "masks nothing. A header a route verifies its signature with or derives a "
         "field, the idempotency key or the tenant from is refused. A replay sees the "
         "digest, not the value (see [capture.md](capture.md)). The answers `serve "
         "--respond legacy` and `--respond upstream` record in `RUN.answers` (and so "
         "the run database's legacy decisions and `log export --answers`) have these "
         "headers masked too (a production `Set-Cookie`, when listed); the caller "
         "still gets them as they came ([recorder.md](recorder.md)).")},
    {.key = "mask_key_env",
     .type = UST__KEY_STRING,
     CFG_AT(capture.mask_key_env),
     .check = ust__valid_env_name,
     .what = "an environment variable name",
     DOC("environment variable name", "none: a random key per process",
         "The variable holding the digest's HMAC key (at least 16 bytes; unset or "
         "shorter stops `serve`, `log import` and `log export --redact`, naming the "
         "variable). With it the same value gives the same digest across restarts and "
         "machines; without it, within one run only. Plugin child processes do not "
         "inherit it.")},
};
const ust__section ust__config_capture = UST__SECTION("capture", capture_rows);

static int parse_limits(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "limits", &ust__config_limits, cfg);
}

/* After limits: the default follows limits.max_body_bytes. */
static int parse_import(ust__vctx *c, json_t *root, void *base)
{
    ust_config *cfg = base;
    int rc = ust__take_section(c, root, "import", &ust__config_import, cfg);
    if (rc == 0 && cfg->import.max_line_bytes == 0) /* absent: a positive integer */
        cfg->import.max_line_bytes =
            UST_IMPORT_DEFAULT_MAX_LINE(cfg->limits.max_body_bytes);
    return rc;
}

static int parse_health(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "health", &ust__config_health, cfg);
}

/* cache: the runner's two caches, each in MiB (docs/config.md). */
static int parse_cache(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "cache", &ust__config_cache, cfg);
}

/* coverage: what the coverage counts take for a double click's window, an
 * operation's duration and a key's lifetime (docs/semantics.md). */
static int parse_coverage(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "coverage", &ust__config_coverage, cfg);
}

static int parse_compare(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "compare", &ust__config_compare, cfg);
}

/* No default for keep: how long evidence stays is the operator's call. */
static int parse_retention(ust__vctx *c, json_t *root, void *base)
{
    return ust__take_given_section(c, root, "retention", &ust__config_retention, base);
}

static const char *const default_masked[] = {"Authorization", "Cookie",
                                             "Proxy-Authorization"};

/* After routes: a header a route reads cannot be masked. */
static int parse_capture(ust__vctx *c, json_t *root, void *base)
{
    ust_config *cfg = base;
    int rc = ust__take_given_section(c, root, "capture", &ust__config_capture, cfg);
    if (rc != 0)
        return rc;
    if (cfg->capture.mask_headers == NULL) {
        size_t n = UST_ARRAY_SIZE(default_masked);
        cfg->capture.mask_headers = ust_calloc(n + 1, sizeof(char *));
        if (cfg->capture.mask_headers == NULL)
            return ust__nomem(c);
        for (size_t i = 0; i < n; i++)
            if ((cfg->capture.mask_headers[i] = ust_strdup(default_masked[i])) == NULL)
                return ust__nomem(c);
        cfg->capture.n_mask_headers = n;
    }
    size_t mark = ust__push_key(c, "capture");
    for (size_t i = 0; i < cfg->capture.n_mask_headers; i++) {
        const char *name = cfg->capture.mask_headers[i];
        for (size_t j = 0; j < cfg->n_routes; j++) {
            const char *why = ust__route_reads(&cfg->routes[j], name);
            if (why == NULL)
                continue;
            ust__push_key(c, "mask_headers");
            ust__push_index(c, i);
            char what[UST__PATH_CAP];
            (void)snprintf(what, sizeof(what),
                           "a header no route verifies or derives from (\"%s\" is "
                           "%s of routes[%zu]; masked, the stored request could "
                           "not be verified or derived again)",
                           name, why, j);
            return ust__bad(c, what);
        }
    }
    ust__pop(c, mark);
    /* Without mask_key_env the key is drawn here and lives only in this
     * process: digests match within one run, and nothing that holds the log
     * can test guesses against them. */
    cfg->capture.mask_key = ust_malloc(UST_SHA256_LEN);
    if (cfg->capture.mask_key == NULL)
        return ust__nomem(c);
    cfg->capture.mask_key_len = UST_SHA256_LEN;
    if (RAND_bytes(cfg->capture.mask_key, UST_SHA256_LEN) != 1)
        return ust_errf(c->err, UST_EIO, "%s: cannot draw a masking key", c->label);
    return 0;
}

static int valid_partition_field(const char *s)
{
    return ust_event_text_column(s) >= 0;
}

/* "partition_by": one text field of the event, or an ordered list of them
 * whose first present value is the key; absent, the intent (an order's
 * events meet in one partition), then the identity. */
static int parse_partition_by(ust__vctx *c, json_t *root, void *base)
{
    ust_config *cfg = base;
    char what[UST__PATH_CAP];
    (void)snprintf(what, sizeof(what), "a field of the event, one of %s",
                   ust_event_text_columns());
    json_t *v = json_object_get(root, "partition_by");
    if (v != NULL && !json_is_string(v))
        return ust__take_string_array(
            c, root, "partition_by", 1, "a field name or a non-empty array of them",
            what, valid_partition_field, &cfg->partition_by, &cfg->n_partition_by);
    const char *one = v != NULL ? json_string_value(v) : NULL;
    if (one != NULL && !valid_partition_field(one)) {
        size_t mark = ust__push_key(c, "partition_by");
        int rc = ust__bad(c, what);
        ust__pop(c, mark);
        return rc;
    }
    static const char *const default_key[] = {"intent", "identity"};
    size_t n = one != NULL ? 1 : UST_ARRAY_SIZE(default_key);
    if ((cfg->partition_by = ust_calloc(n + 1, sizeof(char *))) == NULL)
        return ust__nomem(c);
    for (size_t i = 0; i < n; i++)
        if ((cfg->partition_by[i] = ust_strdup(one ? one : default_key[i])) == NULL)
            return ust__nomem(c);
    cfg->n_partition_by = n;
    return 0;
}

#define STRING_KEY(expect) .type = UST__KEY_STRING, .what = (expect)
static const ust__key top_rows[] = {
    {.key = "listen",
     STRING_KEY("a string"),
     CFG_AT(listen),
     DOC("string `HOST:PORT`", "none",
         "Where `serve` listens, e.g. `\"127.0.0.1:8080\"`. HOST is an IPv4 or IPv6 "
         "address literal (no name lookup, no brackets); port `0` takes a free port, "
         "which `serve` prints (`listening on HOST:PORT`). `--listen` overrides it; "
         "`serve` needs one of the two. Checked when `serve` starts, not at load.")},
    {.key = "log",
     STRING_KEY("a string"),
     CFG_AT(log_path),
     DOC("string (path or URL)", "none",
         "The event log (SQLite) that `serve` writes and `replay`, `log import` read; "
         "`--log` overrides it. A `postgresql://` URL is a log in PostgreSQL "
         "([log.md](log.md#the-log-in-postgresql)), taken as written (not from the "
         "config's folder).")},
    {.key = "run",
     STRING_KEY("a string"),
     CFG_AT(run_path),
     DOC("string (path)", "none",
         "The run database: the runner's decisions and divergences. For `serve`, a "
         "runner follows the log only when a run database is given (here or `--run`); "
         "`replay` needs one.")},
    {.key = "limits",
     .type = UST__KEY_PARSED,
     .parse = parse_limits,
     DOC("object", "see below", "Limits of the HTTP recorder.")},
    {.key = "routes",
     .type = UST__KEY_PARSED,
     .required = 1,
     .parse = ust__parse_routes,
     DOC("non-empty array of objects", "**required**",
         "The routes understudy records; a request to any other path is answered 404 "
         "and not recorded.")},
    {.key = "plugins",
     .type = UST__KEY_PARSED,
     .parse = ust__parse_plugins,
     DOC("object", "none", "The legacy and candidate plugins.")},
    {.key = "compare",
     .type = UST__KEY_PARSED,
     .parse = parse_compare,
     DOC("object", "none", "How two decisions are compared.")},
    {.key = "redact",
     .type = UST__KEY_STRINGS,
     CFG_AT(redact),
     .off_n = offsetof(ust_config, n_redact),
     .check = ust__nonempty,
     .what = "an array of field names or JSON Pointers",
     .what_item = "a field name or a JSON Pointer",
     DOC("array of non-empty strings", "`[]`",
         "What every report masks, and `log export --redact`.")},
    {.key = "retention",
     .type = UST__KEY_PARSED,
     .parse = parse_retention,
     DOC("object", "none", "`serve` prunes old events while it runs (below).")},
    {.key = "capture",
     .type = UST__KEY_PARSED,
     .parse = parse_capture,
     DOC("object", "see below",
         "Header values stored as a keyed digest, never in clear.")},
    {.key = "admin_listen",
     STRING_KEY("a string"),
     CFG_AT(admin_listen),
     DOC("string `HOST:PORT`",
         "`127.0.0.1` on the `listen` port + 1 (port `0` when `listen`'s is `0`)",
         "The admin listener of `serve`: `/healthz`, `/readyz` and `/metrics`, which "
         "the recording listener does not serve (see [health.md](health.md)). Keep it "
         "on loopback or a management network, never where the callbacks come from. "
         "`--admin-listen` overrides it; `serve` prints it (`admin on HOST:PORT`). "
         "Checked when `serve` starts.")},
    {.key = "health",
     .type = UST__KEY_PARSED,
     .parse = parse_health,
     DOC("object", "see below", "What `/healthz` tolerates.")},
    {.key = "partition_by",
     .type = UST__KEY_PARSED,
     .parse = parse_partition_by,
     DOC("a field name, or a non-empty array of them", "`[\"intent\", \"identity\"]`",
         "What splits the log among partitioned runners (`replay --partition K/N`): an "
         "event's key is the value of the first of these derived fields it has, not "
         "empty. The names are the event's text fields as `log export --derived` names "
         "them: `provider`, `event_id`, `identity`, `event_type`, `transaction_id`, "
         "`target_status`, `currency`, `intent`, `idem_key`, `tenant`. Read only by "
         "`replay --partition`; see "
         "[running.md](running.md#partitioned-runners-replay---partition-kn) for the "
         "hash and what keeps a plugin's state inside one partition.")},
    {.key = "coverage",
     .type = UST__KEY_PARSED,
     .parse = parse_coverage,
     DOC("object", "see below", "The windows the report's coverage counts with.")},
    {.key = "import",
     .type = UST__KEY_PARSED,
     .parse = parse_import,
     DOC("object", "see below", "Limits of `log import`.")},
    {.key = "cache",
     .type = UST__KEY_PARSED,
     .parse = parse_cache,
     DOC("object", "see below",
         "The runner's memory: the state store's cache and the run database's page "
         "cache.")},
};
const ust__section ust__config_top = UST__SECTION("top level", top_rows);

static int parse_document(ust__vctx *c, json_t *root, ust_config *cfg)
{
    if (!json_is_object(root))
        return ust__bad(c, "an object");
    int rc = ust__check_keys(c, root, &ust__config_top);
    return rc != 0 ? rc : ust__take_rows(c, root, &ust__config_top, cfg);
}

/* Every route's secret_env, for the plugins' child processes to go without
 * (one array, shared by both plugins; freed with the config). */
static int list_secret_envs(ust_config *cfg)
{
    char **names = ust_calloc(cfg->n_routes + 2, sizeof(char *));
    if (names == NULL)
        return UST_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_routes; i++)
        if (cfg->routes[i].secret_env != NULL)
            names[n++] = cfg->routes[i].secret_env;
    if (cfg->capture.mask_key_env != NULL)
        names[n] = cfg->capture.mask_key_env;
    cfg->legacy.scrub_env = cfg->candidate.scrub_env = names;
    return 0;
}

/* What the legacy's decisions depend on: the config without what only the
 * candidate (plugins.candidate), the comparison (compare) or the report
 * (redact, coverage: each run records its own in its meta) read, nor the
 * caches' sizes (cache: what is cached is read back the same), nor, with
 * places, the keys that only say where things are: where the run goes
 * (run), where the log is (log: replay --legacy-from checks the log itself
 * by its head) and where serve listens (listen, admin_listen). Every other
 * key stays in, as an unsure one must: a key left out lets replay
 * --legacy-from reuse decisions the legacy would now make otherwise. */
static int legacy_hash(const json_t *root, int places, char hex[UST_SHA256_HEX_LEN + 1])
{
    json_t *copy = json_deep_copy(root);
    if (copy == NULL)
        return UST_ENOMEM;
    static const char *const not_the_legacys[] = {"compare", "redact", "coverage",
                                                  "cache"};
    static const char *const where[] = {"run", "log", "listen", "admin_listen"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(not_the_legacys); i++)
        json_object_del(copy, not_the_legacys[i]);
    for (size_t i = 0; places && i < UST_ARRAY_SIZE(where); i++)
        json_object_del(copy, where[i]);
    json_object_del(json_object_get(copy, "plugins"), "candidate");
    int rc = ust__json_hash(copy, hex);
    json_decref(copy);
    return rc;
}

int ust_config_parse(const char *text, size_t len, const char *label, ust_config **out,
                     char **err)
{
    *out = NULL;
    if (label == NULL)
        label = "config";
    json_error_t e;
    json_t *root = ust_json_loadb(text != NULL ? text : "", text != NULL ? len : 0,
                                  JSON_REJECT_DUPLICATES, &e);
    if (root == NULL) {
        if (json_error_code(&e) == json_error_out_of_memory)
            return ust_errf(err, UST_ENOMEM, "%s: out of memory", label);
        return ust_errf(err, UST_ECONFIG, "%s:%d:%d: %s", label, e.line, e.column,
                        e.text);
    }
    ust_config *cfg = ust_calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        json_decref(root);
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", label);
    }
    cfg->root = root;
    ust__vctx c;
    c.label = label;
    c.err = err;
    c.len = 0;
    c.path[0] = '\0';
    int rc = 0;
    cfg->file = ust_strdup(label);
    if (cfg->file == NULL)
        rc = ust__nomem(&c);
    if (rc == 0)
        rc = parse_document(&c, root, cfg);
    if (rc == 0 && (ust__json_hash(root, cfg->hash) != 0 ||
                    legacy_hash(root, 1, cfg->legacy_hash) != 0 ||
                    legacy_hash(root, 0, cfg->legacy_hash_with_places) != 0))
        rc = ust__nomem(&c);
    if (rc == 0 && list_secret_envs(cfg) != 0)
        rc = ust__nomem(&c);
    if (rc != 0) {
        ust_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

void ust__free_strv(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++)
        ust_free(v[i]);
    ust_free(v);
}

void ust_config_free(ust_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        ust_route *r = &cfg->routes[i];
        ust__free_secret(r);
        ust__free_route(r);
    }
    ust_free(cfg->routes);
    ust__free_plugin(&cfg->legacy);
    ust__free_plugin(&cfg->candidate);
    ust_free(cfg->candidate.scrub_env); /* the legacy's is the same array */
    ust__free_strv(cfg->compare_ignore);
    ust__free_strv(cfg->compare_headers);
    ust__free_strv(cfg->redact);
    ust__free_strv(cfg->partition_by);
    ust__free_strv(cfg->capture.mask_headers);
    ust_free(cfg->capture.mask_key_env);
    if (cfg->capture.mask_key != NULL)
        OPENSSL_cleanse(cfg->capture.mask_key, cfg->capture.mask_key_len);
    ust_free(cfg->capture.mask_key);
    ust_free(cfg->listen);
    ust_free(cfg->admin_listen);
    ust_free(cfg->log_path);
    ust_free(cfg->run_path);
    ust_free(cfg->file);
    ust_free(cfg->dir);
    json_decref(cfg->root);
    ust_free(cfg);
}

const ust_route *ust_config_route(const ust_config *cfg, const char *target)
{
    if (cfg == NULL || target == NULL)
        return NULL;
    size_t len = strcspn(target, "?#");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const char *p = cfg->routes[i].path;
        if (strncmp(p, target, len) == 0 && p[len] == '\0')
            return &cfg->routes[i];
    }
    return NULL;
}

int ust_state_is_valid(const char *state)
{
    return state != NULL &&
           (strcmp(state, "pending") == 0 || strcmp(state, "paid") == 0 ||
            strcmp(state, "refunded") == 0 || strcmp(state, "cancelled") == 0);
}
