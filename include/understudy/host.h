/* The host side of plugins: loading, the per-plugin state store, and calling
 * decide safely. A plugin that fails, returns garbage or an oversize body
 * produces an `error` decision, never a crash of the host. */
#ifndef UNDERSTUDY_HOST_H
#define UNDERSTUDY_HOST_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/event.h>
#include <understudy/hash.h>
#include <understudy/http_client.h>
#include <understudy/jsonw.h>
#include <understudy/plugin.h>
#include <understudy/request.h>

/* ---- state store ------------------------------------------------------- */

/* Key/value state of every plugin, one namespace each, cached in memory in
 * front of a table its owner keeps (the runner: the run database's `state`
 * table, ust_store_open in runner.h). Writes made during one decide are
 * staged and applied together (ust_store_end_call with keep=1) or dropped. */
typedef struct ust_store ust_store;

/* A row of the table: its key is the namespace, the unit separator and the
 * plugin's key (klen bytes, then a '\0'). */
typedef struct ust_store_row {
    const char *key;
    size_t klen;
    const char *value; /* NULL: the key is deleted */
} ust_store_row;

/* The table behind the cache, as its owner reaches it; t is the owner's.
 * The store knows no more of it than these. */
typedef struct ust_store_table {
    /* The value of key: take(ctx, value, its length) once when the table
     * holds it (the value borrowed for that call) and what take returned;
     * 0 when it does not; a negative error when the read failed. */
    int (*get)(void *t, const char *key, size_t klen,
               int (*take)(void *ctx, const char *value, size_t len), void *ctx);
    /* fn(ctx, key, klen) for every key the table holds. 0 or negative. */
    int (*each_key)(void *t, void (*fn)(void *ctx, const char *key, size_t klen),
                    void *ctx, char **err);
    /* The rows, in key order and each key once, into the table. 0 or a
     * negative error (the caller rolls back what was written). */
    int (*write)(void *t, const ust_store_row *rows, size_t n, char **err);
    /* 0 when the table holds no key k with lo <= k < hi (text, compared
     * bytewise); 1 when it does, or cannot tell. */
    int (*any_key_in)(void *t, const char *lo, const char *hi);
    /* Frees t. */
    void (*close)(void *t);
} ust_store_table;

/* A store caching table t, which it owns from here (closed on failure too).
 * Every key of the table is read once, to know which keys are new. */
int ust_store_open_table(const ust_store_table *ops, void *t, ust_store **out,
                         char **err);
void ust_store_close(ust_store *s);
/* Starts a decide call in namespace ns (borrowed, must outlive the call). */
void ust_store_begin_call(ust_store *s, const char *ns);
/* 1 and *value (borrowed until the call ends), 0 absent, negative error. */
int ust_store_get(ust_store *s, const char *key, const char **value);
int ust_store_put(ust_store *s, const char *key, const char *value);
int ust_store_delete(ust_store *s, const char *key);
/* 1 created, 0 existed, negative error. */
int ust_store_claim(ust_store *s, const char *key, const char *value);
/* keep=1 applies the staged writes, keep=0 drops them. 0 or UST_ENOMEM. */
int ust_store_end_call(ust_store *s, int keep);
/* No key of ns in the store (cache or table)? Told to a child at start.
 * This and ust_store_flush are for a store of ust_store_open_table. */
int ust_store_ns_empty(ust_store *s, const char *ns);

/* Writes every applied change to the table. Call inside the transaction
 * that also records the decisions they belong to. */
int ust_store_flush(ust_store *s, char **err);

/* After the caller rolled back the transaction a flush wrote into, or
 * dropped writes it had not flushed: forgets every cached key, so the store
 * holds nothing the table does not. */
void ust_store_discard(ust_store *s);

/* Bytes the store's cache holds: its arena of keys and values (old values
 * included) and its hash table. For the store's own thread (/metrics gets
 * it from there). */
size_t ust_store_cache_bytes(const ust_store *s);
/* The cache is emptied after a flush that leaves it over bytes (or 262,144
 * keys); 64 MiB unless set. */
void ust_store_set_cache_limit(ust_store *s, size_t bytes);

/* ---- decisions --------------------------------------------------------- */

/* The decision's fields, declared once. Generated from this table: the
 * members of ust_decision, a divergence line's decision JSON
 * (ust_decision_write_json), the child protocol's decision and its parser
 * (src/plugin/wire.c) and the decision columns of the run and answers
 * databases (src/runner/decision_row.c). Each encoding keeps the names it
 * has always had: each is a column here.
 *
 * X(kind, member, column, wire, abi, divergence, div_at); the table is
 * UST_DECISION_FIELDS_WITH(X, a) when X needs an argument a of its own, as
 * the first (a column prefix: see decision_row.h).
 *   kind       what the value is, which says how each encoding holds it:
 *              VERDICT  ust_verdict, by its name (ust_verdict_name)
 *              STATUS   int, the HTTP status
 *              TEXT     char *, owned; null when NULL
 *              ENTITY   a TEXT with no decision column: the run database
 *                       keeps one entity a row, beside both decisions
 *              FLAGS    char ** (sorted) with n_<member>; a JSON array, a
 *                       column NULL when none
 *              BODY     char *: canonical JSON text of the response body
 *              HEADERS  json_t *: object name (lower-case) -> value
 *              REASON   a TEXT left out of the JSON when NULL
 *              ERROR    a REASON the host sets (why the verdict is error),
 *                       never sent by a plugin: not on the wire
 *   member     the name in ust_decision
 *   column     the column (the run database adds l_ / c_ before it)
 *   wire       the key in the child protocol's decision
 *   abi        the member of ust_plugin_decision (plugin.h: a binary
 *              contract, a new field is appended there by hand)
 *   divergence the key in a divergence line's decision
 *   div_at     FIRST: in a divergence line, written before the others (as
 *              the format has always had it); REST: after them
 *
 * The order is that of the columns and of the wire. */
#define UST_DECISION_FIELDS_WITH(X, a)                                                 \
    X(a, VERDICT, verdict, verdict, verdict, verdict, verdict, FIRST)                  \
    X(a, STATUS, http_status, status, status, http_status, status, FIRST)              \
    /* NULL when the entity had no state */                                            \
    X(a, TEXT, state_before, state_before, state_before, state_before, state_before,   \
      REST)                                                                            \
    X(a, TEXT, state_after, state, state_after, state_after, state, FIRST)             \
    X(a, ENTITY, entity, _, entity, entity, entity, REST)                              \
    X(a, FLAGS, flags, flags, flags, flags, flags, REST)                               \
    X(a, BODY, body, body, body_json, response_body, body, REST)                       \
    X(a, HEADERS, headers, headers, headers, headers, headers, REST)                   \
    X(a, REASON, reason, reason, reason, reason, reason, REST)                         \
    X(a, ERROR, error, error, _, _, error, REST)

#define UST__DECISION_CALL(X, ...) X(__VA_ARGS__)
#define UST_DECISION_FIELDS(X) UST_DECISION_FIELDS_WITH(UST__DECISION_CALL, X)

#define UST__DECISION_MEMBER_VERDICT(m) ust_verdict m;
#define UST__DECISION_MEMBER_STATUS(m) int m;
#define UST__DECISION_MEMBER_TEXT(m) char *m;
#define UST__DECISION_MEMBER_ENTITY(m) char *m;
#define UST__DECISION_MEMBER_FLAGS(m)                                                  \
    char **m;                                                                          \
    size_t n_##m;
#define UST__DECISION_MEMBER_BODY(m) char *m;
#define UST__DECISION_MEMBER_HEADERS(m) json_t *m;
#define UST__DECISION_MEMBER_REASON(m) char *m;
#define UST__DECISION_MEMBER_ERROR(m) char *m;
#define UST__DECISION_MEMBER(kind, m, column, wire, abi, divergence, div_at)           \
    UST__DECISION_MEMBER_##kind(m)

/* A decision as the host keeps it: validated and owned (ust_malloc). */
typedef struct ust_decision {
    UST_DECISION_FIELDS(UST__DECISION_MEMBER)
} ust_decision;

void ust_decision_clear(ust_decision *d);
/* "applied", "duplicate", ... ; "unknown" out of range. */
const char *ust_verdict_name(ust_verdict v);
int ust_verdict_parse(const char *name, ust_verdict *out);
/* JSON form used in the run database and divergence lines, written into w. */
void ust_decision_write_json(ust_jsonw *w, const ust_decision *d);

/* ---- plugins ----------------------------------------------------------- */

typedef struct ust_plugin ust_plugin;
/* The counters plugins count their faults into (see below, and config.h). */
typedef struct ust_plugin_counters ust_plugin_counters;

#define UST_PLUGIN_MAX_BODY (64 * 1024)

/* dlopen(RTLD_NOW | RTLD_LOCAL) of path, checks the entry and ABI major,
 * calls create with config (may be NULL = {}). ns is the state namespace.
 * UST_EPLUGIN with *err naming the file and why. */
int ust_plugin_load(const char *path, const char *ns, json_t *config, ust_store *store,
                    ust_plugin **out, char **err);
void ust_plugin_unload(ust_plugin *p);

/* After the decisions it made were rolled back: a plugin in a child process
 * is stopped, and starts afresh on its next event (its cache of the store
 * emptied, its back-off reset), as a run resumed by a new process would. In
 * process there is nothing to forget: its state is in the store. */
void ust_plugin_discard(ust_plugin *p);

/* A plugin as its config says: in process (a .so), isolated in a child
 * process (a .so with "isolate": true, the candidate's default), or a child
 * running "exec" (any language, the JSON-lines protocol). path, when not
 * NULL, replaces the config's library path. */
enum {
    /* A plugin in a child process: the child, and the host's thread that
     * talks to it, run at background priority (understudy/priority.h). For
     * the live runner's plugins. */
    UST_PLUGIN_BACKGROUND = 2
};
int ust_plugin_open(const ust_plugin_config *pc, const char *path, const char *ns,
                    unsigned flags, ust_store *store, ust_plugin **out, char **err);
/* Whether pc (with path replacing its library, when not NULL) names a
 * plugin of some kind: what ust_plugin_open would start. */
int ust_plugin_configured(const ust_plugin_config *pc, const char *path);

/* The journal of a plugin that calls out to a service (the url kind), kept
 * in the run database by the runner so that a run sends each event at most
 * once: the plugin module has no database of its own, the runner offers
 * these operations (side: the plugin's namespace, "legacy"/"candidate"). */
typedef struct ust_journal {
    void *ctx;
    /* 1 when the run starts from seq 0 and nothing was sent for side yet
     * (a reset may be called), 0 when not, or an error. */
    int (*fresh)(void *ctx, const char *side, char **err);
    /* What the journal holds for seq: 0 nothing, 1 sent with no answer
     * recorded, 2 answered (*answer filled, the caller clears it), 3
     * answered to the call sent again after an unknown outcome (filled
     * too), or an error. */
    int (*find)(void *ctx, const char *side, int64_t seq, ust_http_result *answer,
                char **err);
    /* Records that these seqs are about to be sent (a seq already sent with
     * no answer: sent again) and makes that durable (commits) with the
     * answers recorded so far, before it returns: the runner calls a
     * journaled plugin's batch_start only where a commit is safe. 0 or an
     * error: then nothing may be sent. */
    int (*intend)(void *ctx, const char *side, const int64_t *seqs, size_t n,
                  char **err);
    /* Records seq's answer (an HTTP answer, or a failure with its cause) in
     * the open transaction. */
    int (*answer)(void *ctx, const char *side, int64_t seq, const ust_http_result *a,
                  char **err);
} ust_journal;

/* ust_plugin_open with the runner's journal (borrowed for the plugin's life;
 * NULL: none, as ust_plugin_open). */
int ust_plugin_open_journaled(const ust_plugin_config *pc, const char *path,
                              const char *ns, unsigned flags, ust_store *store,
                              const ust_journal *journal, ust_plugin **out, char **err);
/* 1 when the plugin sends events out and keeps a journal: the runner then
 * decides its events a batch at a time (batch_start where a commit is
 * safe), never one by one. */
int ust_plugin_journaled(const ust_plugin *p);
const char *ust_plugin_name(const ust_plugin *p);
/* Why a plugin in a child process is down (in back-off after timeouts in a
 * row, or a start that failed), as a static text; NULL while it is up, and
 * always for one in process. Call from the thread that decides with it. */
const char *ust_plugin_down(const ust_plugin *p);
/* 0 when the plugin declared UST_PLUGIN_NO_RAW_REQUEST (in a child process:
 * "raw_request":false in its hello), else 1. */
int ust_plugin_wants_raw_request(const ust_plugin *p);
const char *ust_plugin_version(const ust_plugin *p);
const char *ust_plugin_file_sha256(const ust_plugin *p);

/* Calls decide for ev (req is the raw request it came from); *out is always
 * filled, with verdict error when the plugin failed. Store writes of the call
 * are kept only when the decision is not an error. */
void ust_plugin_decide(ust_plugin *p, const ust_event *ev, const ust_request *req,
                       ust_decision *out);
/* The same, with the answer req was given when it was recorded (the log's
 * ust_log_record.response; NULL or status 0: none), which a "recorded"
 * legacy decides with; other kinds ignore it. */
void ust_plugin_decide_answered(ust_plugin *p, const ust_event *ev,
                                const ust_request *req, const ust_response *a,
                                ust_decision *out);
/* A batch of events to decide in order, as if one by one. The arrays are the
 * caller's and must stay valid until ust_plugin_batch_finish returns. */
typedef struct ust_plugin_batch {
    const ust_event *const *evs;
    const ust_request *const *reqs;
    size_t n;
    size_t sent;         /* plugin in a child: events already sent */
    uint64_t generation; /* and to which start of the child */
} ust_plugin_batch;

/* Starts a batch: a plugin in a child process is sent the first events and
 * decides them while the caller does other work (for instance finishing the
 * previous batch, whose ust_plugin_batch_finish must come first). An
 * in-process plugin does nothing until finish. */
void ust_plugin_batch_start(ust_plugin *p, ust_plugin_batch *b);
/* Every decision of the batch into outs[i], in order. */
void ust_plugin_batch_finish(ust_plugin *p, ust_plugin_batch *b, ust_decision **outs);

/* The same for n events in order, as if decided one by one; a plugin in a
 * child process gets them in one round trip. */
void ust_plugin_decide_batch(ust_plugin *p, const ust_event *const *evs,
                             const ust_request *const *reqs, size_t n,
                             ust_decision **outs);

/* ---- the shim ------------------------------------------------------------ */

/* The hidden subcommand that runs an isolated .so in a child process of its
 * own: the host execs `understudy __plugin-shim SO NS` (its own binary,
 * /proc/self/exe, or $UST_PLUGIN_SHIM) with the protocol on stdin/stdout;
 * the shim loads the .so and reaches the host's store through the protocol.
 * argv as main's; returns main's exit status. */
#define UST_PLUGIN_SHIM_COMMAND "__plugin-shim"
int ust_plugin_shim_main(int argc, char **argv);

/* ---- what plugin children write to their stderr ------------------------- */

/* A child's stderr is read by the host, line by line, each prefixed
 * "understudy: NS[NAME]: " (NS "legacy" or "candidate", NAME from its hello)
 * and passed whole, with its newline, to the sink of the plugin's counters
 * (below); a plugin may write at most 64 KiB in a burst and 64 KiB a minute
 * after that (a token bucket per plugin, across restarts), a line at most
 * 4 KiB: what is over is dropped and counted, and a run of dropped lines is
 * told, at most once a minute. The sink is called from the threads that talk
 * to the children, one line at a time (never two at once); without one the
 * lines are discarded. The command line sets one that writes to its stderr. */
typedef void (*ust_plugin_stderr_fn)(const char *text, size_t len, void *data);

/* What the plugins opened with a config's `counters` (config.h) count into:
 * their faults, restarts and stderr, and where their stderr lines go. The
 * caller's (a serve, a replay, a test), so two in one process count apart;
 * a config without one counts nothing and discards stderr. sink may be
 * NULL. NULL when out of memory. Free after every plugin using it. */
ust_plugin_counters *ust_plugin_counters_new(ust_plugin_stderr_fn sink, void *data);
void ust_plugin_counters_free(ust_plugin_counters *c);

/* Totals of c, over every plugin child counted there (for /metrics); zeros
 * for NULL. */
typedef struct ust_plugin_stderr_stats {
    uint64_t forwarded_lines, forwarded_bytes; /* the children's bytes, unprefixed */
    uint64_t dropped_lines, dropped_bytes;     /* bytes of cut lines count here too */
} ust_plugin_stderr_stats;
void ust_plugin_stderr_stats_get(const ust_plugin_counters *c,
                                 ust_plugin_stderr_stats *out);

/* ---- plugin faults ------------------------------------------------------ */

/* Why a decide became an `error` decision. */
typedef enum ust_plugin_fault {
    UST_FAULT_TIMEOUT,      /* no decision within timeout_ms */
    UST_FAULT_CRASH,        /* its process was killed by a signal */
    UST_FAULT_EXIT,         /* its process exited, or closed its output */
    UST_FAULT_PROTOCOL,     /* a line out of the protocol, or over the size limit */
    UST_FAULT_BAD_DECISION, /* a decision the host refuses */
    UST_FAULT_RSS,          /* RSS over max_rss_mb */
    UST_FAULT_DECIDE,       /* the plugin said its decide failed */
    UST_FAULT_DOWN,         /* answered at once, the plugin in back-off */
    UST_FAULT_START,        /* a restart failed */
    UST_FAULT_INTERNAL,     /* the host ran out of memory */
    UST_FAULT_COUNT
} ust_plugin_fault;
/* "timeout", "crash", ... as /metrics labels them. */
const char *ust_plugin_fault_name(ust_plugin_fault f);

/* Totals of c (for /metrics; zeros for NULL), by namespace: [0] "legacy",
 * [1] "candidate" (any other namespace counts there too). A restart is a
 * child started again after a fault, a back-off or a discarded step. */
typedef struct ust_plugin_fault_stats {
    uint64_t errors[2][UST_FAULT_COUNT];
    uint64_t restarts[2];
} ust_plugin_fault_stats;
void ust_plugin_fault_stats_get(const ust_plugin_counters *c,
                                ust_plugin_fault_stats *out);

#endif
