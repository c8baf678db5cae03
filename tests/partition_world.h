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
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/gen.jsonl", w->dir);
    ust_gen_opts o;
    memset(&o, 0, sizeof(o));
    o.cfg = cfg;
    o.seed = 7;
    o.events = n;
    o.span_us = 2LL * 86400 * 1000000;
    ust_time_parse("2026-11-23T00:00:00Z", &o.start_us);
    ust_gen_default_mix(o.mix);
    o.out = fopen(out, "wb");
    char *err = NULL;
    int64_t written = 0;
    if (ust_gen(&o, &written, &err) != 0)
        fail_msg("gen: %s", err);
    fclose(o.out);
    unlink(w->log_path);
    ust_log *log = NULL;
    assert_int_equal(ust_log_open(w->log_path, UST_LOG_CREATE, &log, &err), 0);
    FILE *in = fopen(out, "rb");
    if (ust_log_import(log, cfg, in, "gen.jsonl", NULL, &err) != 0)
        fail_msg("import: %s", err);
    fclose(in);
    ust_log_close(log);
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
    size_t size = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &size);
    ust_replay_opts o = world_opts(w, lp, cp, out);
    o.cfg = cfg;
    o.run_path = rp;
    o.commit_every = 0;
    o.partition = p;
    int rc = ust_replay(&o, st, err);
    fclose(out);
    if (lines != NULL)
        *lines = buf;
    else
        free(buf);
    return rc;
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
