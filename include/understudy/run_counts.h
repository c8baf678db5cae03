/* A reader of a run database's divergences by class, for the live
 * recorder's /metrics: read once for a resumed run at start, then for the
 * seqs each step of the runner decided, so the counts kept in memory are
 * those of the run's rows. (To be folded into understudy/run.h.) */
#ifndef UNDERSTUDY_RUN_COUNTS_H
#define UNDERSTUDY_RUN_COUNTS_H

#include <stdint.h>

typedef struct ust_run_counts ust_run_counts; /* a read-only connection */

/* Opens the run database at run_path for reading. 0, or a negative code
 * with *err. */
int ust_run_counts_open(const char *run_path, ust_run_counts **out, char **err);

/* Calls fn(ctx, class, n) once for each class of the divergences whose seq
 * is in (after, through], with their count. 0 when every class was read,
 * or a negative code with *err (the calls made stand: the caller then knows
 * its counts are partial). */
int ust_run_counts_classes(ust_run_counts *rc, int64_t after, int64_t through,
                           void (*fn)(void *ctx, const char *cls, int64_t n), void *ctx,
                           char **err);

void ust_run_counts_close(ust_run_counts *rc);

#endif
