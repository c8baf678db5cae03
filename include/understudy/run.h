/* Reading a run database: what a run decided, what diverged, and where it
 * stopped. The runner writes it (runner.h) and alone knows its tables;
 * report, gate and drive read it through these functions.
 *
 * A reader of rows calls fn once per row, in the order it names; the
 * strings of a row are borrowed for the call. fn returns 0 to go on,
 * anything else stops the read and is returned. A reader returns 0 when it
 * reached the end, or UST_EDB with *err (the path, then SQLite's message):
 * a read that fails part way never ends as if its result were complete.
 * The handle is for one thread at a time. */
#ifndef UNDERSTUDY_RUN_H
#define UNDERSTUDY_RUN_H

#include <stddef.h>
#include <stdint.h>

typedef struct ust_run ust_run;

/* Opens the run database at path read-only. 0, or UST_EDB with *err. */
int ust_run_open(const char *path, ust_run **out, char **err);
/* The partitions of one replay (replay --partition K/N, each in its own
 * run database) read as one run: every reader then reads their rows
 * together, as they would one run of the whole log. Refused (UST_EINVAL
 * with *err saying why) unless paths hold every partition 0/N to N-1/N of
 * one split, each once, made from one log with one config and the same
 * plugins; a run of the whole log is never mixed in. The metadata read then
 * holds one value per key: the runs' own, "partition" as their list
 * ("0/2,1/2"), and where the runs stopped (log_head_seq, log_head_sha256,
 * cursor_hash) that of the one that stopped first, as the cursor is the
 * least of theirs: the runs are read as complete only when each is. At
 * most UST_RUN_MANY_MAX paths; one is ust_run_open's. */
#define UST_RUN_MANY_MAX 11
int ust_run_open_many(const char *const *paths, size_t n, ust_run **out, char **err);
/* What names the run in messages: its path, or the paths joined by " + ". */
const char *ust_run_name(const ust_run *run);
void ust_run_close(ust_run *run);

/* One read transaction: the reads up to ust_run_end see one commit (a live
 * run is read as of one commit). */
int ust_run_begin(ust_run *run, char **err);
void ust_run_end(ust_run *run);

/* meta key -> value: 1 found (*value ust_malloc'd), 0 absent, <0 error. */
int ust_run_meta(ust_run *run, const char *key, char **value, char **err);
/* Every meta entry, by key. */
int ust_run_meta_each(ust_run *run,
                      int (*fn)(void *ctx, const char *key, const char *value),
                      void *ctx, char **err);
/* The event log the run read: where it is (its real path), or for a run
 * made before that was kept, its path as given. 1 found (*path ust_malloc'd),
 * 0 absent, <0 error. */
int ust_run_log(ust_run *run, char **path, char **err);
/* The last seq the run decided and committed. */
int ust_run_cursor(ust_run *run, int64_t *seq, char **err);

typedef struct ust_run_totals {
    int64_t events, fed;       /* events read; of those, fed to the plugins */
    int64_t first_at, last_at; /* their received_at span, 0 when none */
    int64_t divergences, follow_ons;
} ust_run_totals;

/* The run's totals, in *out (cleared first). */
int ust_run_sum(ust_run *run, ust_run_totals *out, char **err);

/* Where a report's counts of the events go: per route ("(unrouted)" for
 * none) and per signature status, each by key, and per pair of verdicts
 * (NULL: the event was not fed). */
typedef struct ust_run_tally {
    int (*by_route)(void *ctx, const char *key, int64_t count);
    int (*by_signature)(void *ctx, const char *key, int64_t count);
    int (*pair)(void *ctx, const char *legacy, const char *candidate, int64_t count);
    void *ctx;
} ust_run_tally;

/* ust_run_sum, and t's counts, from one read of the decisions. */
int ust_run_tally_read(ust_run *run, ust_run_totals *out, const ust_run_tally *t,
                       char **err);

typedef struct ust_run_class {
    const char *name;
    int64_t count, first_at, last_at, follow_ons;
} ust_run_class;

/* Divergence classes by count, descending, then by name. */
int ust_run_classes(ust_run *run, int (*fn)(void *ctx, const ust_run_class *c),
                    void *ctx, char **err);
/* Distinct "fields" arrays (JSON text) of class cls, at most limit. */
int ust_run_class_fields(ust_run *run, const char *cls, size_t limit,
                         int (*fn)(void *ctx, const char *fields), void *ctx,
                         char **err);
/* The entities where the divergences of cls started, by their first seq, at
 * most limit. */
int ust_run_class_entities(ust_run *run, const char *cls, size_t limit,
                           int (*fn)(void *ctx, const char *entity), void *ctx,
                           char **err);
/* Divergences (of cls; NULL: of every class) per time bucket of width_us
 * counted from origin_us: at is the time of one divergence of the bucket. */
int ust_run_divergence_buckets(ust_run *run, const char *cls, int64_t origin_us,
                               int64_t width_us,
                               int (*fn)(void *ctx, int64_t at, int64_t count),
                               void *ctx, char **err);

typedef struct ust_run_divergence {
    int64_t seq, received_at;
    const char *class_name, *fields, *entity;
    int follow_on;
    const char *line; /* the divergence line, as the stream carried it */
} ust_run_divergence;

/* Which divergences to read: of class_name (NULL: any), with from <= seq
 * <= to (to 0: no bound), at most limit (0: all). */
typedef struct ust_run_filter {
    const char *class_name;
    int64_t from, to;
    size_t limit;
} ust_run_filter;

/* The divergences f selects, in seq order. */
int ust_run_divergences(ust_run *run, const ust_run_filter *f,
                        int (*fn)(void *ctx, const ust_run_divergence *d), void *ctx,
                        char **err);

/* ---- a class's divergences by the candidate's reason, for its pages --- */

/* The candidate decision's reasons are grouped by kind: the reason with
 * each run of digits as one '#' ("as stripe:pi_7 paid 3 s earlier" and "as
 * stripe:pi_40 paid 12 s earlier" are one kind), so that a reason naming an
 * id or a time does not make a group of each divergence. */
typedef struct ust_run_reason {
    const char *kind;   /* NULL: decisions without a reason */
    int64_t count;      /* divergences */
    int64_t reasons;    /* distinct reasons of the kind */
    const char *reason; /* the first of them by text (the only one, reasons 1) */
} ust_run_reason;

/* The kinds of the candidate's reasons among the divergences of cls, by
 * kind (NULL first): the order of ust_run_class_by_reason. */
int ust_run_class_reasons(ust_run *run, const char *cls,
                          int (*fn)(void *ctx, const ust_run_reason *r), void *ctx,
                          char **err);

/* A divergence with the candidate's reason and its kind (NULL: none). */
typedef struct ust_run_reasoned {
    const char *reason, *kind;
    ust_run_divergence d;
    const char *diff; /* the line's "diff" (JSON text), NULL when it has none */
} ust_run_reasoned;

/* Every divergence of cls, by the kind of its reason (as
 * ust_run_class_reasons), then seq; d.line is not read (NULL): diff carries
 * what a row shows. Streamed: the memory a read takes does not grow with
 * the class (SQLite sorts on disk). When the caller read (in the same
 * ust_run_begin) that the class has one kind of one reason, only points to
 * it and the rows come in seq order without the sort. Without with_diff,
 * diff is NULL (reading it parses each whole line). fn may read the run
 * through the same handle. */
int ust_run_class_by_reason(ust_run *run, const char *cls, const ust_run_reason *only,
                            int with_diff,
                            int (*fn)(void *ctx, const ust_run_reasoned *r), void *ctx,
                            char **err);

/* The divergence of cls received nearest to at_us (of two as near, the
 * earlier), leaving out the n_skip seqs of skip (a few: each is read past):
 * 1 after fn (d.line and diff NULL), 0 when there is none. Kept to an index
 * on (class, received_at) where the run database has it. */
int ust_run_class_nearest(ust_run *run, const char *cls, int64_t at_us,
                          const int64_t *skip, size_t n_skip,
                          int (*fn)(void *ctx, const ust_run_reasoned *r), void *ctx,
                          char **err);

/* An event as the run decided it: its verdicts and states (NULL when it was
 * not fed), whether it diverged, and whether that followed an earlier
 * divergence of its entity. */
typedef struct ust_run_event {
    int64_t seq, received_at;
    const char *event_type;
    int fed, diverged, follow_on;
    const char *legacy_verdict, *legacy_state, *candidate_verdict, *candidate_state;
} ust_run_event;

/* The events of entity, in seq order, at most limit. */
int ust_run_timeline(ust_run *run, const char *entity, size_t limit,
                     int (*fn)(void *ctx, const ust_run_event *e), void *ctx,
                     char **err);
/* The event at seq: 1 when there is one (after fn returned 0), 0 when not. */
int ust_run_event_at(ust_run *run, int64_t seq,
                     int (*fn)(void *ctx, const ust_run_event *e), void *ctx,
                     char **err);

/* ---- divergences by class, for the live recorder's /metrics ---------- */

/* Read once for a resumed run at start, then for the seqs each step of the
 * runner decided, so the counts kept in memory are those of the run's rows.
 * A connection of its own, read-only, outside any ust_run_begin. */
typedef struct ust_run_counts ust_run_counts;

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
