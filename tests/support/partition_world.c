/* Partitioned runs for tests (partition_world.h). */
#include "partition_world.h"

void gen_log(world *w, const ust_config *cfg, int64_t n)
{
    world_gen_log(w, w->log_path, cfg, 7, n);
}

void run_path(const world *w, const char *name, char out[PATH_MAX])
{
    snprintf(out, PATH_MAX, "%s/%s", w->dir, name);
}

int replay_as(world *w, const ust_config *cfg, const char *name, ust_partition p,
              char **lines, ust_replay_stats *st, char **err)
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

char *replay_ok(world *w, const ust_config *cfg, const char *name, ust_partition p,
                ust_replay_stats *st)
{
    char *lines = NULL, *err = NULL;
    if (replay_as(w, cfg, name, p, &lines, st, &err) != 0)
        fail_msg("replay %s: %s", name, err);
    return lines;
}
