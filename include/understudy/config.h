/* The configuration file: routes, signature schemes, field extraction,
 * plugins and comparison rules. Every error names the file, the key path and
 * what was expected. Secrets are named by environment variable only. */
#ifndef UNDERSTUDY_CONFIG_H
#define UNDERSTUDY_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/event_fields.h>
#include <understudy/sig.h>

typedef enum ust_route_kind { UST_ROUTE_WEBHOOK = 0, UST_ROUTE_API } ust_route_kind;

/* A field source: a JSON Pointer (RFC 6901) into the body, or "header:NAME";
 * NULL when not configured. One for each event field of source FIELDS
 * (UST_EVENT_FIELDS, event_fields.h), and occurred_at, which no stage reads. */
#define UST__ROUTE_FIELD_FIELDS(m) char *m;
#define UST__ROUTE_FIELD_DERIVED(m)
#define UST__ROUTE_FIELD(kind, m, column, wire, wire_at, export, source, since, desc)  \
    UST__ROUTE_FIELD_##source(m)
typedef struct ust_route_fields {
    UST_EVENT_FIELDS(UST__ROUTE_FIELD)
    char *occurred_at;
} ust_route_fields;

typedef struct ust_status_map_entry {
    char *from;  /* provider value, e.g. "payment_intent.succeeded" */
    char *state; /* "pending", "paid", "refunded" or "cancelled" */
} ust_status_map_entry;

typedef struct ust_route {
    char *path;
    ust_route_kind kind;
    char *provider;
    /* signature */
    ust_sig_scheme scheme; /* UST_SCHEME_NONE when the route has none */
    char *secret_env;
    char *sig_header; /* hmac-sha256-hex header, NULL = default */
    int64_t tolerance_s;
    char *
        secret; /* from the environment by ust_config_load_secrets; never written out */
    /* extraction */
    ust_route_fields fields;
    char *status_from; /* source of the target state, NULL if none */
    ust_status_map_entry *status_map;
    size_t n_status_map; /* 0: the value is the state itself */
    /* api routes */
    char *idem_header;   /* e.g. "Idempotency-Key" */
    char *tenant_header; /* e.g. "X-Tenant-Id", NULL if none */
    /* sample.percent in hundredths of a percent, 1..10000; 10000 (the
     * default) records every event (see capture.h) */
    int sample_bp;
} ust_route;

/* A callback for what the library has to say (a plugin's log lines, named
 * "plugin NAME: ...", the server's messages): level is UST_LOG_DEBUG ..
 * UST_LOG_ERROR (plugin.h), msg one line without its newline, borrowed for
 * the call; called from any of the library's threads. The library never
 * prints: the command line passes one that writes to stderr. */
typedef void (*ust_log_fn)(void *ctx, int level, const char *msg);

typedef struct ust_plugin_config {
    char *path;     /* shared library, NULL if exec is used */
    char **exec;    /* argv of a child process plugin, NULL-terminated, or NULL */
    char *url;      /* an HTTP service (the url kind, --respond upstream), or NULL */
    json_t *config; /* the plugin's own config object (owned reference) */
    int isolate;    /* run a .so in a child process */
    int recorded;   /* decide with each event's recorded answer (a legacy only) */
    /* "verdicts": HTTP status to verdict, read as answer.h's ust_verdict_map
     * when the plugin opens (owned reference, NULL when absent) */
    json_t *verdicts;
    int64_t timeout_ms;
    int64_t max_rss_mb;
    /* Variables its child process does not inherit, NULL-terminated: every
     * route's secret_env (set by the config loader; borrowed, or NULL). */
    char **scrub_env;
    /* The config file's folder (borrowed), where an exec program runs;
     * NULL for a config from memory: the working directory is inherited. */
    const char *dir;
    /* Where the plugin's log lines go, with its ctx: set by the caller
     * (the command line), not the file; NULL drops them. */
    ust_log_fn log;
    void *log_ctx;
    /* What its faults, restarts and stderr count into, and where its
     * stderr lines go (ust_plugin_counters_new, host.h): set by the caller,
     * not the file; NULL counts nothing. Borrowed. */
    struct ust_plugin_counters *counters;
    int64_t max_in_flight; /* the url kind: events sent at once; default 1 */
    struct {
        char *method; /* default "POST" */
        char *url;    /* NULL: no reset */
    } reset;
    /* The url kind: the proxy its calls go through; NULL: none (the
     * environment's http_proxy and the like are never followed). */
    char *proxy;
    /* The url kind: an event sent with no answer recorded (a run killed)
     * is sent again on resume, for a service that dedups on
     * Understudy-Seq; 0: it is an "outcome unknown" error decision. */
    int resend_unknown;
} ust_plugin_config;

/* import.max_line_bytes when not given: a line with a request body and a
 * recorded answer's body at the recorder's limit, each written at worst (a
 * control byte as \u00XX: 6 bytes), and 1 MiB for the headers and the rest. */
#define UST_IMPORT_DEFAULT_MAX_LINE(max_body_bytes) (12 * (max_body_bytes) + 1048576)

/* The coverage object's defaults. */
#define UST_COVERAGE_DEFAULT_SEMANTIC_WINDOW_S 600
#define UST_COVERAGE_DEFAULT_OP_LATENCY_MS 500
#define UST_COVERAGE_DEFAULT_KEY_TTL_S 86400

typedef struct ust_config {
    char *file; /* path as given, for messages */
    /* The folder of the file's real path, which its relative paths (log,
     * run, plugin path, exec program) were resolved against at load; NULL
     * for a config parsed from memory, whose paths stay as written. */
    char *dir;
    char *listen, *log_path, *run_path; /* NULL when absent */
    char *admin_listen; /* /healthz, /readyz, /metrics; NULL: derived from listen */
    struct {
        size_t max_body_bytes;     /* default 1 MiB */
        size_t max_headers;        /* default 64 */
        int64_t header_timeout_ms; /* default 10000 */
        int64_t idle_timeout_ms;   /* keep-alive with nothing owed; default 30000 */
        size_t max_connections;    /* open at once; default 1024 */
        /* Answer bytes owed to clients (built or under way, not yet
         * written) past which serve stops reading a connection: one
         * connection's (default 64 MiB), every connection's (256 MiB). */
        size_t max_owed_bytes, max_owed_bytes_total;
    } limits;
    struct {
        /* log import refuses a longer JSONL line, before reading the rest
         * of it; 0 (a config built by hand): UST_IMPORT_DEFAULT_MAX_LINE. */
        size_t max_line_bytes;
    } import;
    struct {
        int64_t keep_us;  /* serve prunes rows older than this; 0: no retention */
        int64_t every_us; /* how often it looks; default an hour */
    } retention;
    struct {
        int64_t max_lag_s; /* /healthz: the runner may lag this long; default 300 */
    } health;
    /* The runner's memory (replay and serve's live runner), in MiB. */
    struct {
        int64_t state_mb;     /* the state store's cache; default 64 */
        int64_t run_pages_mb; /* SQLite's page cache of the run database; 64 */
    } cache;
    /* What coverage counts with (coverage.h, docs/semantics.md). */
    struct {
        int64_t semantic_window_s; /* default 600 */
        int64_t op_latency_ms;     /* default 500 */
        int64_t key_ttl_s;         /* default 86400 */
    } coverage;
    ust_route *routes;
    size_t n_routes;
    ust_plugin_config legacy, candidate;
    char **compare_ignore; /* JSON Pointers into the response body */
    size_t n_compare_ignore;
    char **compare_headers; /* response headers compared, case-insensitive */
    size_t n_compare_headers;
    /* Masked in every report: a JSON Pointer ("/card/number") or a field
     * name matched at any depth ("email"). */
    char **redact;
    size_t n_redact;
    /* "partition_by": the event's text fields whose first present value is
     * its partition key (replay --partition); default intent, identity */
    char **partition_by;
    size_t n_partition_by;
    /* capture: header values stored as a keyed digest, never in clear */
    struct {
        char **mask_headers; /* names, matched case-insensitively */
        size_t n_mask_headers;
        char *mask_key_env;      /* NULL: a random key drawn at load, kept in memory */
        unsigned char *mask_key; /* the HMAC key (never written out) */
        size_t mask_key_len;
    } capture;
    char hash[65]; /* SHA-256 hex of the file's canonical JSON */
    /* The same without plugins.candidate, compare, redact and coverage, and
     * without the places (run, log, listen, admin_listen): what the legacy's
     * decisions depend on (replay --legacy-from) */
    char legacy_hash[65];
    /* The same with the places in: what runs recorded before the places
     * were left out, still accepted from such a run */
    char legacy_hash_with_places[65];
    json_t *root; /* the whole document (owned) */
} ust_config;

/* Reads and validates file. 0; UST_EIO (cannot read); UST_ECONFIG with *err
 * like "cfg.json: routes[1].signature.scheme: expected one of ...". */
int ust_config_load(const char *file, ust_config **out, char **err);
/* The same from memory; label stands for the file name in messages. */
int ust_config_parse(const char *text, size_t len, const char *label, ust_config **out,
                     char **err);
void ust_config_free(ust_config *cfg);

/* Reads every route's secret from its secret_env. UST_ECONFIG naming the
 * variable (never its value) when one is unset or empty. */
int ust_config_load_secrets(ust_config *cfg, char **err);
/* The masking key from capture.mask_key_env (a no-op without one), for the
 * commands that mask (serve, log import, log export --redact); without it
 * the key drawn at load is used. UST_ECONFIG naming the variable when it is
 * unset or shorter than 16 bytes. */
int ust_config_load_mask_key(ust_config *cfg, char **err);

/* docs/config.md's key tables, generated from the config's rows, and the
 * docs' tables of the event's fields (docs/interchange.md, protocol.md),
 * generated from UST_EVENT_FIELDS: each between "<!-- config doc: NAME
 * -->" and "<!-- end config doc: NAME -->" lines (scripts/config-doc.sh
 * puts them in the pages). *out is the
 * caller's (ust_free). 0 or UST_ENOMEM. */
int ust_config_doc(char **out);
/* cfg's effective values as indented JSON, every default filled in; a
 * secret only by the name of its variable, never its value. *out is the
 * caller's (ust_free). 0 or UST_ENOMEM. */
int ust_config_show(const ust_config *cfg, char **out);

/* The route whose path equals the path of target (query ignored), or NULL. */
const ust_route *ust_config_route(const ust_config *cfg, const char *target);

/* One of the canonical states? */
int ust_state_is_valid(const char *state);

#endif
