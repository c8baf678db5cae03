/* Partitioned runs for tests (test_partition.c, test_partition_report.c):
 * a generated log in a world's folder, and replays of it as a partition
 * (replay --partition K/N) or whole into run databases beside it. */
#ifndef UST_TEST_PARTITION_WORLD_H
#define UST_TEST_PARTITION_WORLD_H

#include "replay_world.h"

#include <understudy/gen.h>

/* A generated log of n events (seed 7) in w's log. */
static inline void gen_log(world *w, const ust_config *cfg, int64_t n)
{
    world_gen_log(w, w->log_path, cfg, 7, n);
}

/* The run database named name in w's folder. */
static inline void run_path(const world *w, const char *name, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/%s", w->dir, name);
}

/* Replays w's log under cfg into the run database name, as partition p;
 * divergence lines into *lines (malloc'd). 0, or the refusal's code with
 * *err. */
static inline int replay_as(world *w, const ust_config *cfg, const char *name,
                            ust_partition p, char **lines, ust_replay_stats *st,
                            char **err)
{
    char lp[PATH_MAX], cp[PATH_MAX], rp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_test_plugin_path("candidate", cp);
    run_path(w, name, rp);
    ust_replay_opts o = world_opts(w, lp, cp, NULL);
    o.cfg = cfg;
    o.run_path = rp;
    o.commit_every = 0;
    o.partition = p;
    return world_replay_lines(&o, lines, st, err);
}

static inline char *replay_ok(world *w, const ust_config *cfg, const char *name,
                              ust_partition p, ust_replay_stats *st)
{
    char *lines = NULL, *err = NULL;
    if (replay_as(w, cfg, name, p, &lines, st, &err) != 0)
        fail_msg("replay %s: %s", name, err);
    return lines;
}

#endif
