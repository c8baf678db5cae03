/* What plugins did wrong, counted for /metrics: process-wide atomics, bumped
 * by the threads that talk to the plugins, read by a scrape. */
#include "plugin/child.h"

#include <stdatomic.h>
#include <string.h>

static atomic_ullong errors[2][UST_FAULT_COUNT];
static atomic_ullong restarts[2];

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

void ust__plugin_fault(const char *ns, ust_plugin_fault f)
{
    if (f >= 0 && f < UST_FAULT_COUNT)
        atomic_fetch_add_explicit(&errors[role(ns)][f], 1, memory_order_relaxed);
}

void ust__plugin_restarted(const char *ns)
{
    atomic_fetch_add_explicit(&restarts[role(ns)], 1, memory_order_relaxed);
}

void ust_plugin_fault_stats_get(ust_plugin_fault_stats *out)
{
    for (int r = 0; r < 2; r++) {
        for (int f = 0; f < UST_FAULT_COUNT; f++)
            out->errors[r][f] =
                atomic_load_explicit(&errors[r][f], memory_order_relaxed);
        out->restarts[r] = atomic_load_explicit(&restarts[r], memory_order_relaxed);
    }
}
