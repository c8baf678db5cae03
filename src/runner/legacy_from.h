/* replay --legacy-from: the legacy's decisions of an earlier run read back
 * instead of decided again. The inner loop changes the candidate alone, so
 * the legacy's half of a replay is the same work every time; an earlier run
 * of the same log, legacy and legacy's config holds its outcome already, in the
 * decisions table's l_ columns (decision_row.h) and l_entity. */
#ifndef UST_RUNNER_LEGACY_FROM_H
#define UST_RUNNER_LEGACY_FROM_H

#include "runner/run_write.h"

#include <sqlite3.h>
#include <stdint.h>

#include <understudy/host.h>

typedef struct ust__legacy_from {
    sqlite3 *db;        /* NULL: not in use */
    sqlite3_stmt *scan; /* the rows in seq order (legacy_from.c) */
    int64_t at;         /* the seq of the row scan is on, -1 when none */
    const char *path;   /* borrowed */
    int64_t cursor;     /* the earlier run's: no seq beyond it is read */
    /* The legacy as the earlier run's meta names it: the new run names it
     * the same (its report and gate show the same legacy). */
    char *name, *version, *sha256;
} ust__legacy_from;

/* What the replay that reads it has: each must be the earlier run's. */
typedef struct ust__legacy_from_want {
    const char *legacy_config_sha256; /* ust_config's legacy_hash */
    /* ust_config's legacy_hash_with_places: an earlier run made before the
     * places were left out recorded this one */
    const char *legacy_config_sha256_with_places;
    const char *legacy_name, *legacy_version, *legacy_sha256;
    const char *partition; /* "K/N", "" for the whole log */
    int64_t head_seq;      /* the log's head */
    const char *head_sha256;
} ust__legacy_from_want;

/* Opens the earlier run at path read-only and checks it against want:
 * UST_EINVAL with *err naming what differs and both values when another
 * log, legacy, legacy's part of the config (legacy_config_sha256) or
 * partition made it, or none recorded that part, or when it did not decide
 * every event up to the log's head. f is left to ust__legacy_from_close. */
int ust__legacy_from_open(ust__legacy_from *f, const char *path,
                          const ust__legacy_from_want *want, char **err);
void ust__legacy_from_close(ust__legacy_from *f);
/* The legacy's decision of seq, as the earlier run stored it, into *d.
 * UST_EINVAL when it holds none (the event was not fed there). */
int ust__legacy_from_get(ust__legacy_from *f, int64_t seq, ust_decision *d, char **err);

/* A run whose legacy decisions were read from an earlier run has no legacy
 * state of its own: it resumes only with --legacy-from again, and a run
 * whose legacy decided resumes only without it (the legacy would miss the
 * state of the events it did not decide). path is --legacy-from (NULL:
 * none), cursor the run's; records it in the run's meta ("legacy_from").
 * Inside the open transaction of run. */
int ust__legacy_from_check_run(ust__run_writer *run, const char *path, int64_t cursor,
                               char **err);

#endif
