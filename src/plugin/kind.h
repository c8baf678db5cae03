/* A kind of plugin: how the host starts one, has it decide, and stops it.
 * A ust_plugin (plugin.c) is a kind's table and that kind's state; nothing
 * outside plugin.c's kind_for asks which kind a plugin is. The kinds: a .so
 * in process (loader.c) and a child process speaking the JSON-lines
 * protocol, running a program or understudy's shim around a .so (child.c).
 * Another kind (a service over HTTP) is one more table and one more line in
 * kind_for: a table assumes no library file, and a decide that fails is an
 * error decision with its cause, which the runner records like any other. */
#ifndef UST_PLUGIN_KIND_H
#define UST_PLUGIN_KIND_H

#include <understudy/config.h>
#include <understudy/hash.h>
#include <understudy/host.h>

/* What a kind is started from, borrowed for the plugin's life. */
typedef struct ust__plugin_start {
    const ust_plugin_config *pc;
    const char *path; /* the library (pc->path or its override), or NULL */
    const char *ns;   /* the state namespace, "legacy" or "candidate" */
    unsigned flags;   /* UST_PLUGIN_BACKGROUND */
    ust_store *store;
    int no_identity;            /* the shim: the host has hashed the file already */
    const ust_journal *journal; /* the runner's, or NULL */
} ust__plugin_start;

typedef struct ust__plugin_kind {
    /* Starts the plugin and waits until it can decide: *impl is the kind's
     * state, id the plugin's identity for the run (the SHA-256 hex of its
     * code, or of what names it). UST_EPLUGIN with *err naming the file or
     * program and why. */
    int (*open)(const ust__plugin_start *st, void **impl,
                char id[UST_SHA256_HEX_LEN + 1], char **err);
    void (*close)(void *impl);
    const char *(*name)(const void *impl);
    const char *(*version)(const void *impl);
    int (*wants_raw_request)(const void *impl);
    /* Fills *out, always. A plugin that failed, or could not be reached,
     * gives verdict error with the cause in out->error, counted with
     * ust__plugin_fault; the store keeps the call's writes only when the
     * decision is not an error (ust_store_begin_call / end_call). */
    void (*decide)(void *impl, const ust_event *ev, const ust_request *req,
                   ust_decision *out);

    /* Optional, NULL when the kind has nothing to do there. */
    /* A batch decided while the caller works (see ust_plugin_batch_start);
     * NULL: the batch is decided one event after another at finish. */
    void (*batch_start)(void *impl, ust_plugin_batch *b);
    void (*batch_finish)(void *impl, ust_plugin_batch *b, ust_decision **outs);
    /* Forgets what it holds beyond the store (see ust_plugin_discard). */
    void (*discard)(void *impl);
    /* Why it is down (a static text), or NULL while it is up. */
    const char *(*down)(const void *impl);
    /* decide, given also the answer the request was given when it was
     * recorded (a = NULL or status 0: none); NULL: the kind does not read
     * it and decide is called. */
    void (*decide_answered)(void *impl, const ust_event *ev, const ust_request *req,
                            const ust_response *a, ust_decision *out);
    /* 1 when it keeps a journal (see ust_plugin_journaled). */
    int (*journaled)(const void *impl);
} ust__plugin_kind;

/* The operations every kind has, from its functions named <prefix>_open ...
 * <prefix>_decide: a kind's table starts with them, the optional ones after. */
#define UST__PLUGIN_KIND_REQUIRED(prefix)                                              \
    .open = prefix##_open, .close = prefix##_close, .name = prefix##_name,             \
    .version = prefix##_version, .wants_raw_request = prefix##_wants_raw_request,      \
    .decide = prefix##_decide

/* A kind that decides a batch while the caller works has all three of
 * <prefix>_batch_start, <prefix>_batch_finish and <prefix>_discard. */
#define UST__PLUGIN_KIND_BATCHED(prefix)                                               \
    .batch_start = prefix##_batch_start, .batch_finish = prefix##_batch_finish,        \
    .discard = prefix##_discard

/* A .so in the host's process (loader.c). */
extern const ust__plugin_kind ust__plugin_kind_inproc;
/* A child process on the protocol: exec, or an isolated .so (child.c). */
extern const ust__plugin_kind ust__plugin_kind_child;
/* Production's recorded answers as the decisions (recorded.c). */
extern const ust__plugin_kind ust__plugin_kind_recorded;
/* A service over HTTP (url.c). */
extern const ust__plugin_kind ust__plugin_kind_url;

/* Opens a plugin of that kind (plugin.c): the shim uses it for the .so it
 * runs. */
int ust__plugin_open_kind(const ust__plugin_kind *kind, const ust__plugin_start *st,
                          ust_plugin **out, char **err);

#endif
