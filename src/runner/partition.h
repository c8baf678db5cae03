/* A partition's place in its run database (partition.c). */
#ifndef UST_RUNNER_PARTITION_H
#define UST_RUNNER_PARTITION_H

#include "runner/run_write.h"

#include <understudy/config.h>
#include <understudy/runner.h>

/* A partition's run holds its share of the log alone: resumed as another
 * share (or as the whole log), or a run of the whole log resumed as a
 * share, it would mix two selections of the log in one set of results. So
 * a run records its partition ("partition": "K/N", and "partition_by")
 * when it starts, and is refused (UST_EINVAL with *err) as any other; a
 * run of the whole log records none. cursor is the run's: a run that
 * decided nothing yet may be started as any share. Inside the open
 * transaction of run. */
int ust__partition_check_run(ust__run_writer *run, const ust_partition *p,
                             const ust_config *cfg, int64_t cursor, char **err);

#endif
