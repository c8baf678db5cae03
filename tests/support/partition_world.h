/* Partitioned runs for tests (test_partition.c, test_partition_report.c):
 * a generated log in a world's folder, and replays of it as a partition
 * (replay --partition K/N) or whole into run databases beside it. */
#ifndef UST_TEST_PARTITION_WORLD_H
#define UST_TEST_PARTITION_WORLD_H

#include "replay_world.h"

#include <understudy/gen.h>

/* A generated log of n events (seed 7) in w's log. */
void gen_log(world *w, const ust_config *cfg, int64_t n);

/* The run database named name in w's folder. */
void run_path(const world *w, const char *name, char out[PATH_MAX]);

/* Replays w's log under cfg into the run database name, as partition p;
 * divergence lines into *lines (malloc'd). 0, or the refusal's code with
 * *err. */
int replay_as(world *w, const ust_config *cfg, const char *name, ust_partition p,
              char **lines, ust_replay_stats *st, char **err);

char *replay_ok(world *w, const ust_config *cfg, const char *name, ust_partition p,
                ust_replay_stats *st);

#endif
