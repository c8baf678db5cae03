/* The runner: each event of the log, in seq order, to the legacy and the
 * candidate; only the legacy decides; every difference is written down. */
#ifndef UNDERSTUDY_RUNNER_H
#define UNDERSTUDY_RUNNER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/host.h>
#include <understudy/log.h>
#include <understudy/progress.h>
#include <understudy/histogram.h>

/* A share of the log (replay --partition K/N): the events whose partition
 * key (the config's "partition_by": ust_event_partition_key, event.h)
 * hashes to k of n; k counts from 0. An event with no key is partition 0's.
 * The hash is the first 8 bytes of the key's SHA-256, read big-endian, mod
 * n: the same on every machine and in every version. */
typedef struct ust_partition {
    uint32_t k, n; /* n 0: the whole log */
} ust_partition;

#define UST_PARTITION_MAX 65536 /* n at most */

/* "K/N" (decimal, 0 <= K < N <= UST_PARTITION_MAX) into *out. 0, or
 * UST_EINVAL with *err saying what to give. */
int ust_partition_parse(const char *text, ust_partition *out, char **err);
/* "K/N" into buf. */
void ust_partition_format(const ust_partition *p, char buf[32]);
/* The partition of key among n (1 <= n); a NULL key is partition 0's. */
uint32_t ust_partition_of(const char *key, uint32_t n);
/* Whether p holds ev (always, when p->n is 0). */
int ust_partition_holds(const ust_partition *p, const ust_config *cfg,
                        const ust_event *ev);

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
    /* replay --legacy-from: an earlier run database of the same log, legacy
     * and config (refused otherwise, saying what differs) whose legacy
     * decisions are read back instead of decided again; the legacy is
     * started only to check that it is the same. NULL otherwise. */
    const char *legacy_from;
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
    /* replay --partition: the events of other partitions are passed over
     * (the cursor goes past them; no plugin sees them, no row holds them);
     * n 0 decides every event. */
    ust_partition partition;
} ust_replay_opts;

typedef struct ust_replay_stats {
    int64_t events;        /* read from the log in this call: fed + not_fed +
                              outside */
    int64_t fed;           /* decided by both plugins */
    int64_t not_fed;       /* signature failed or route unknown */
    int64_t outside;       /* of another partition: read and passed over */
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
/* Bytes the state store's cache holds (ust_store_cache_bytes), bounded by
 * the config's cache.state_mb after each commit; between steps. */
size_t ust_runner_state_cache_bytes(const ust_runner *r);
void ust_runner_close(ust_runner *r);

typedef struct sqlite3 sqlite3; /* <sqlite3.h>'s, for those who have it */

/* The plugins' state store over the `state` table of db (a run database, or
 * any the runner keeps one in): uses, does not own, db; creates the table
 * when missing. */
int ust_store_open(sqlite3 *db, ust_store **out, char **err);

/* The canonical event of a log row, without parsing the body again: when
 * rec was derived under cfg (same config hash), fills *ev with pointers into
 * rec (borrowed: do not ust_event_clear it) and returns 1. Otherwise returns
 * 0 and the caller derives the event from rec->req. */
int ust_event_view(const ust_config *cfg, const ust_log_record *rec, ust_event *ev);

/* ---- the answers database of `serve --respond legacy` ------------------ */

/* The legacy's decisions as they were answered, its state, and its cursor:
 * a file of its own beside the run database, so the runner's long
 * transactions never hold up an answer. The runner reads it through
 * ust_replay_opts.legacy_answers. */

/* RUN.answers beside the run database at run_path (ust_malloc'd). */
char *ust_answers_path(const char *run_path);

/* The responder's side: the answers database open for writing, its
 * statements prepared and the legacy's state store on the same connection,
 * so a decision, the state it left and the cursor commit together. */
typedef struct ust_answers ust_answers;
/* cfg (may be NULL; it must outlive a): its capture.mask_headers are
 * masked in every header stored (the decisions' and the service's
 * answers'), as a request's are; the caller still answers with its own. */
int ust_answers_writer_open(const char *path, const ust_config *cfg, ust_answers **out,
                            char **err);
/* Closes a (NULL: nothing), the WAL checkpointed into the file: nonzero
 * when a -wal was left beside it (the next open replays it). */
int ust_answers_writer_close(ust_answers *a);
/* The store the legacy plugin keeps its state in (owned by a). */
ust_store *ust_answers_store(ust_answers *a);
/* The last seq decided and committed. */
int ust_answers_cursor(ust_answers *a, int64_t *seq, char **err);
/* A transaction: begin, then put each decision, then commit through the
 * batch's last seq (the store flushed with it; through 0 leaves the
 * cursor). A failed put leaves the transaction open: roll back. A failed
 * commit has rolled back already. */
int ust_answers_begin(ust_answers *a, char **err);
int ust_answers_put(ust_answers *a, int64_t seq, const char *entity,
                    const ust_decision *d, char **err);
int ust_answers_commit(ust_answers *a, int64_t through, char **err);
/* --respond upstream: the service's answer to seq as it came (headers in
 * order, kept whole; the body byte for byte), in the same transaction as
 * its decision. */
int ust_answers_put_response(ust_answers *a, int64_t seq, int status,
                             const ust_header *headers, size_t n_headers,
                             const unsigned char *body, size_t body_len, char **err);
/* Rolls the transaction back, and with it what the store cached beyond it. */
void ust_answers_rollback(ust_answers *a);

/* The service's answers read back (log export --answers): open path
 * read-only (UST_EDB with *err when it is no answers database of --respond
 * upstream); get fills *out (owned, ust_response_clear) and returns 1, or
 * 0 when the service gave seq no answer (refused, timed out), or <0. */
typedef struct ust_answers_responses ust_answers_responses;
int ust_answers_responses_open(const char *path, ust_answers_responses **out,
                               char **err);
int ust_answers_response_get(ust_answers_responses *r, int64_t seq, ust_response *out,
                             char **err);
void ust_answers_responses_close(ust_answers_responses *r);

#endif
