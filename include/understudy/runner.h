/* The runner: each event of the log, in seq order, to the legacy and the
 * candidate; only the legacy decides; every difference is written down. */
#ifndef UNDERSTUDY_RUNNER_H
#define UNDERSTUDY_RUNNER_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/host.h>
#include <understudy/progress.h>
#include <understudy/histogram.h>

typedef struct ust_replay_opts {
    const ust_config *cfg;
    const char *log_path;
    const char *run_path;
    const char *legacy_path;    /* NULL: the config's plugins.legacy.path */
    const char *candidate_path; /* NULL: the config's plugins.candidate.path */
    FILE *divergences;          /* JSON lines as they are committed, or NULL */
    int64_t commit_every;       /* events per transaction, rounded up to the next
                                   batch of 64; 0 = default (1000) */
    /* serve --respond legacy: the answers database holding the legacy's
     * decisions as answered; the runner reads them instead of deciding the
     * legacy again, and goes no further than they go. NULL otherwise. */
    const char *legacy_answers;
    /* serve: the runner's plugins in child processes run at background
     * priority (understudy/priority.h); the caller lowers its own thread. */
    int background;
    /* Events at most per ust_runner_step, 0 for no bound. A step reads the
     * log in one transaction: live, a bounded step keeps that short, so the
     * recorder's checkpoints are not held back behind a runner catching up. */
    int64_t step_events;
    /* NULL, or set by another thread to end a step early: it ends at its
     * next batch boundary (64 events), committing what it decided. */
    const atomic_int *stop;
    /* Events decided so far in this step, of those up to the log's head
     * when the step began; none (the live runner) when fn is NULL. */
    ust_progress progress;
    /* serve's /metrics: time in decide, µs, observed per event; NULL for
     * none. The legacy's is each event's own; the candidate's is the time
     * its batch took spread evenly over the batch's events (a child that
     * pipelines decides a batch in one round trip). */
    ust_histogram *legacy_decide, *candidate_decide;
} ust_replay_opts;

typedef struct ust_replay_stats {
    int64_t events;        /* read from the log in this call */
    int64_t fed;           /* decided by both plugins */
    int64_t not_fed;       /* signature failed or route unknown */
    int64_t divergences;   /* written in this call */
    int64_t resumed_after; /* cursor the call started from */
    int64_t legacy_decide_us, candidate_decide_us; /* time in decide (or reading
                                                      the legacy's answers) */
} ust_replay_stats;

/* Runs (or resumes) a replay. Decisions, divergences, plugin state and the
 * cursor are committed together, so an interrupted run resumes with no event
 * decided twice or skipped. A run database made with other plugins or
 * another config is refused. 0, or a negative code with *err. */
int ust_replay(const ust_replay_opts *opts, ust_replay_stats *stats, char **err);

/* A runner kept open: the live recorder calls step as events commit, and
 * each step decides every event the log holds beyond the cursor. opts must
 * outlive the runner. */
typedef struct ust_runner ust_runner;
int ust_runner_open(const ust_replay_opts *opts, ust_runner **out, char **err);
int ust_runner_step(ust_runner *r, ust_replay_stats *stats, char **err);
int64_t ust_runner_cursor(const ust_runner *r);
/* Why the candidate is down (ust_plugin_down), or NULL; between steps. */
const char *ust_runner_candidate_down(const ust_runner *r);
void ust_runner_close(ust_runner *r);

/* The plugins' state store over the `state` table of db (a run database, or
 * any the runner keeps one in): uses, does not own, db; creates the table
 * when missing. */
int ust_store_open(sqlite3 *db, ust_store **out, char **err);

#endif
