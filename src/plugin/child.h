/* Plugins in a child process: an `exec` plugin in any language, or a .so
 * isolated in a forked child. Faults (a crash, an exit, garbage, a decide
 * over timeout_ms, RSS over max_rss_mb) become error decisions with their
 * cause; the child is restarted, after a back-off counted in events. */
#ifndef UST_PLUGIN_CHILD_H
#define UST_PLUGIN_CHILD_H

#include <understudy/config.h>
#include <understudy/host.h>

typedef struct ust__child ust__child;

/* so_path: isolate that shared library; else pc->exec is run. Starts the
 * child and waits for its hello. flags: UST_PLUGIN_BACKGROUND. UST_EPLUGIN with *err on
 * failure. */
int ust__child_open(const ust_plugin_config *pc, const char *so_path, const char *ns,
                    unsigned flags, ust_store *store, ust__child **out, char **err);
void ust__child_close(ust__child *c);
const char *ust__child_name(const ust__child *c);
/* Stops it, to start afresh on the next event (see ust_plugin_discard). */
void ust__child_discard(ust__child *c);
/* Why it is down (a static text), or NULL while it is up: down from a
 * start that failed, or timeouts in a row, until it starts again. */
const char *ust__child_down(const ust__child *c);
/* Whether its last hello left out "raw_request":false. */
int ust__child_wants_raw_request(const ust__child *c);
const char *ust__child_version(const ust__child *c);
void ust__child_decide(ust__child *c, const ust_event *ev, const ust_request *req,
                       ust_decision *out);
/* A batch in two halves, so the host can work while the child decides:
 * start queues the batch for the child (all of it to a child that pipelines,
 * else its first event), finish takes every decision (sending the rest as it
 * goes); after a fault the events not yet decided go again to the restarted
 * child. */
void ust__child_batch_start(ust__child *c, ust_plugin_batch *b);
void ust__child_batch_finish(ust__child *c, ust_plugin_batch *b, ust_decision **outs);
/* Both halves at once. */
void ust__child_decide_batch(ust__child *c, const ust_event *const *evs,
                             const ust_request *const *reqs, size_t n,
                             ust_decision **outs);

/* Counts a fault, or a restart, of the plugin in namespace ns (faults.c). */
void ust__plugin_fault(const char *ns, ust_plugin_fault f);
void ust__plugin_restarted(const char *ns);

/* ust_plugin_load for the forked child: the same, without hashing the file
 * (the host has; see loader.c). */
int ust__plugin_load_forked(const char *path, const char *ns, json_t *config,
                            ust_store *store, ust_plugin **out, char **err);
/* The forked child's side for an isolated .so: never returns. */
void ust__shim_main(const char *so_path, const char *ns, int in_fd, int out_fd);

#endif
