/* What plugins did wrong and what their children wrote to stderr, counted
 * for /metrics in the counters the caller gave their config: atomics bumped
 * by the threads that talk to the plugins, read by a scrape. */
#include "plugin/faults.h"

#include <understudy/alloc.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

struct ust_plugin_counters {
    atomic_ullong errors[2][UST_FAULT_COUNT];
    atomic_ullong restarts[2];
    atomic_ullong forwarded_lines, forwarded_bytes, dropped_lines, dropped_bytes;
    ust_plugin_stderr_fn sink;
    void *sink_data;
    pthread_mutex_t sink_mu; /* one line at a time, from any link's thread */
};

ust_plugin_counters *ust_plugin_counters_new(ust_plugin_stderr_fn sink, void *data)
{
    ust_plugin_counters *c = ust_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->sink = sink;
    c->sink_data = data;
    pthread_mutex_init(&c->sink_mu, NULL);
    return c;
}

void ust_plugin_counters_free(ust_plugin_counters *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->sink_mu);
    ust_free(c);
}

static const char *const fault_names[UST_FAULT_COUNT] = {
    "timeout", "crash",  "exit", "protocol", "bad_decision",
    "rss",     "decide", "down", "start",    "internal"};

const char *ust_plugin_fault_name(ust_plugin_fault f)
{
    return f >= 0 && f < UST_FAULT_COUNT ? fault_names[f] : "?";
}

static int role(const char *ns)
{
    return ns != NULL && strcmp(ns, "legacy") == 0 ? 0 : 1;
}

void ust__plugin_fault(ust_plugin_counters *c, const char *ns, ust_plugin_fault f)
{
    if (c != NULL && f >= 0 && f < UST_FAULT_COUNT)
        atomic_fetch_add_explicit(&c->errors[role(ns)][f], 1, memory_order_relaxed);
}

void ust__plugin_restarted(ust_plugin_counters *c, const char *ns)
{
    if (c != NULL)
        atomic_fetch_add_explicit(&c->restarts[role(ns)], 1, memory_order_relaxed);
}

void ust_plugin_fault_stats_get(const ust_plugin_counters *c,
                                ust_plugin_fault_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (c == NULL)
        return;
    for (int r = 0; r < 2; r++) {
        for (int f = 0; f < UST_FAULT_COUNT; f++)
            out->errors[r][f] =
                atomic_load_explicit(&c->errors[r][f], memory_order_relaxed);
        out->restarts[r] = atomic_load_explicit(&c->restarts[r], memory_order_relaxed);
    }
}

void ust__plugin_stderr_counted(ust_plugin_counters *c, uint64_t forwarded_lines,
                                uint64_t forwarded_bytes, uint64_t dropped_lines,
                                uint64_t dropped_bytes)
{
    if (c == NULL)
        return;
    atomic_fetch_add(&c->forwarded_lines, forwarded_lines);
    atomic_fetch_add(&c->forwarded_bytes, forwarded_bytes);
    atomic_fetch_add(&c->dropped_lines, dropped_lines);
    atomic_fetch_add(&c->dropped_bytes, dropped_bytes);
}

void ust__plugin_stderr_emit(ust_plugin_counters *c, const char *text, size_t len)
{
    if (c == NULL || c->sink == NULL)
        return;
    pthread_mutex_lock(&c->sink_mu);
    c->sink(text, len, c->sink_data);
    pthread_mutex_unlock(&c->sink_mu);
}

void ust_plugin_stderr_stats_get(const ust_plugin_counters *c,
                                 ust_plugin_stderr_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (c == NULL)
        return;
    out->forwarded_lines = atomic_load(&c->forwarded_lines);
    out->forwarded_bytes = atomic_load(&c->forwarded_bytes);
    out->dropped_lines = atomic_load(&c->dropped_lines);
    out->dropped_bytes = atomic_load(&c->dropped_bytes);
}
