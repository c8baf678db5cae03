/* Reading a run database (see run.h): the queries of report, gate and drive,
 * kept beside the schema they read (rundb.c). */
#include "runner/run_handle.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/run.h>

#include <sqlite3.h>
#include <string.h>

/* ust_reason_kind(text): the text with each run of digits as one '#'
 * (run.h, ust_run_reason); NULL stays NULL. */
static void reason_kind(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const unsigned char *s = sqlite3_value_text(argv[0]);
    if (s == NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    int n = sqlite3_value_bytes(argv[0]);
    char *out = sqlite3_malloc(n + 1);
    if (out == NULL) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        int digit = s[i] >= '0' && s[i] <= '9';
        if (!digit)
            out[k++] = (char)s[i];
        else if (i == 0 || s[i - 1] < '0' || s[i - 1] > '9')
            out[k++] = '#';
    }
    sqlite3_result_text(ctx, out, k, sqlite3_free);
}

int ust__run_register_functions(sqlite3 *db)
{
    return sqlite3_create_function(db, "ust_reason_kind", 1,
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                   reason_kind, NULL, NULL) == SQLITE_OK
               ? 0
               : UST_EDB;
}

int ust_run_open(const char *path, ust_run **out, char **err)
{
    *out = NULL;
    ust_run *run = ust_calloc(1, sizeof(*run));
    if (run == NULL || (run->path = ust_strdup(path)) == NULL) {
        ust_free(run);
        return UST_ENOMEM;
    }
    char *why = NULL;
    int rc = ust__db_open(path, 1, NULL, "run database", &run->db, &why);
    ust_free(why);
    if (rc == 0)
        rc = ust__run_register_functions(run->db);
    if (rc != 0) {
        /* The words report and gate have always used for a run that is not
         * there. */
        ust_run_close(run);
        return ust_errf(err, UST_EIO, "%s: cannot open run database", path);
    }
    *out = run;
    return 0;
}

const char *ust_run_name(const ust_run *run)
{
    return run->path;
}

void ust_run_close(ust_run *run)
{
    if (run == NULL)
        return;
    sqlite3_close(run->db);
    ust_free(run->path);
    ust_free(run);
}

int ust_run_begin(ust_run *run, char **err)
{
    return ust__rundb_exec(run->db, "BEGIN", err);
}

void ust_run_end(ust_run *run)
{
    sqlite3_exec(run->db, "COMMIT", NULL, NULL, NULL);
}

static int prepare(ust_run *run, const char *sql, sqlite3_stmt **st, char **err)
{
    if (sqlite3_prepare_v2(run->db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    return ust_errf(err, UST_EDB, "%s: not a run database (%s)", run->path,
                    sqlite3_errmsg(run->db));
}

/* 1 a row, 0 done, <0 a read that failed (with *err). */
static int next(ust_run *run, sqlite3_stmt *st, char **err)
{
    return ust__db_step(st, run->path, err);
}

static const char *text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

static int64_t num(sqlite3_stmt *st, int col)
{
    return sqlite3_column_int64(st, col);
}

/* A limit of 0 is none (SQLite's LIMIT -1). */
static int64_t limit_of(size_t limit)
{
    return limit ? (int64_t)limit : -1;
}

int ust_run_meta(ust_run *run, const char *key, char **value, char **err)
{
    int rc = ust__rundb_meta_get(run->db, key, value);
    if (rc < 0)
        ust_errf(err, rc, "%s: cannot read the run's metadata: %s", run->path,
                 sqlite3_errmsg(run->db));
    return rc;
}

int ust_run_meta_each(ust_run *run,
                      int (*fn)(void *ctx, const char *key, const char *value),
                      void *ctx, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(run, "SELECT key, value FROM meta ORDER BY key", &st, err);
    while (rc == 0 && (rc = next(run, st, err)) == 1)
        rc = fn(ctx, text(st, 0), text(st, 1));
    sqlite3_finalize(st);
    return rc;
}

int ust_run_log(ust_run *run, char **path, char **err)
{
    /* log_file, the real path, came later than log_path, the path given. */
    int rc = ust_run_meta(run, "log_file", path, err);
    return rc == 0 ? ust_run_meta(run, "log_path", path, err) : rc;
}

int ust_run_cursor(ust_run *run, int64_t *seq, char **err)
{
    return ust__rundb_cursor(run->db, seq, err);
}

int ust_run_sum(ust_run *run, ust_run_totals *out, char **err)
{
    memset(out, 0, sizeof(*out));
    sqlite3_stmt *st = NULL;
    int rc = prepare(run,
                     "SELECT count(*), coalesce(sum(fed), 0), min(received_at),"
                     " max(received_at) FROM decisions",
                     &st, err);
    if (rc == 0 && (rc = next(run, st, err)) == 1) {
        out->events = num(st, 0);
        out->fed = num(st, 1);
        out->first_at = num(st, 2);
        out->last_at = num(st, 3);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc >= 0)
        rc = prepare(run,
                     "SELECT count(*), coalesce(sum(follow_on), 0) FROM divergences",
                     &st, err);
    if (rc == 0 && (rc = next(run, st, err)) == 1) {
        out->divergences = num(st, 0);
        out->follow_ons = num(st, 1);
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int ust_run_classes(ust_run *run, int (*fn)(void *ctx, const ust_run_class *c),
                    void *ctx, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc =
        prepare(run,
                "SELECT class, count(*), min(received_at), max(received_at),"
                " sum(follow_on) FROM divergences GROUP BY class ORDER BY 2 DESC, 1",
                &st, err);
    while (rc == 0 && (rc = next(run, st, err)) == 1) {
        ust_run_class c = {text(st, 0), num(st, 1), num(st, 2), num(st, 3), num(st, 4)};
        rc = fn(ctx, &c);
    }
    sqlite3_finalize(st);
    return rc;
}

/* A read of one text column for a class, at most limit rows. */
static int class_texts(ust_run *run, const char *sql, const char *cls, size_t limit,
                       int (*fn)(void *ctx, const char *s), void *ctx, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(run, sql, &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, cls, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, limit_of(limit));
    }
    while (rc == 0 && (rc = next(run, st, err)) == 1)
        rc = fn(ctx, text(st, 0));
    sqlite3_finalize(st);
    return rc;
}

int ust_run_class_fields(ust_run *run, const char *cls, size_t limit,
                         int (*fn)(void *ctx, const char *fields), void *ctx,
                         char **err)
{
    /* In the order each first diverged: the scan's order would differ
     * between one run and its partitions read together. */
    return class_texts(run,
                       "SELECT fields FROM divergences WHERE class = ?1"
                       " GROUP BY fields ORDER BY min(seq) LIMIT ?2",
                       cls, limit, fn, ctx, err);
}

int ust_run_class_entities(ust_run *run, const char *cls, size_t limit,
                           int (*fn)(void *ctx, const char *entity), void *ctx,
                           char **err)
{
    return class_texts(run,
                       "SELECT entity FROM divergences WHERE class = ?1 AND"
                       " entity IS NOT NULL GROUP BY entity ORDER BY min(seq)"
                       " LIMIT ?2",
                       cls, limit, fn, ctx, err);
}

int ust_run_divergence_buckets(ust_run *run, const char *cls, int64_t origin_us,
                               int64_t width_us,
                               int (*fn)(void *ctx, int64_t at, int64_t count),
                               void *ctx, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc =
        prepare(run,
                cls ? "SELECT received_at, count(*) FROM divergences WHERE class = ?1"
                      " GROUP BY (received_at - ?2) / ?3"
                    : "SELECT received_at, count(*) FROM divergences"
                      " GROUP BY (received_at - ?2) / ?3",
                &st, err);
    if (rc == 0) {
        if (cls != NULL)
            sqlite3_bind_text(st, 1, cls, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, origin_us);
        sqlite3_bind_int64(st, 3, width_us);
    }
    while (rc == 0 && (rc = next(run, st, err)) == 1)
        rc = fn(ctx, num(st, 0), num(st, 1));
    sqlite3_finalize(st);
    return rc;
}

#define DIVERGENCE_SELECT                                                              \
    "SELECT seq, received_at, class, fields, entity, follow_on, line FROM divergences"
#define DIVERGENCE_ORDER " ORDER BY seq LIMIT ?4"

int ust_run_divergences(ust_run *run, const ust_run_filter *f,
                        int (*fn)(void *ctx, const ust_run_divergence *d), void *ctx,
                        char **err)
{
    /* One statement per shape of filter, so a class's read keeps to its
     * index (divergences_class) and a range to the primary key. */
    static const char *const sql[] = {
        DIVERGENCE_SELECT DIVERGENCE_ORDER,
        DIVERGENCE_SELECT " WHERE class = ?1" DIVERGENCE_ORDER,
        DIVERGENCE_SELECT " WHERE seq BETWEEN ?2 AND ?3" DIVERGENCE_ORDER,
        DIVERGENCE_SELECT
        " WHERE class = ?1 AND seq BETWEEN ?2 AND ?3" DIVERGENCE_ORDER,
    };
    int ranged = f->from > 0 || f->to > 0;
    sqlite3_stmt *st = NULL;
    int rc = prepare(run, sql[(f->class_name != NULL) + 2 * ranged], &st, err);
    if (rc == 0) {
        if (f->class_name != NULL)
            sqlite3_bind_text(st, 1, f->class_name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, f->from);
        sqlite3_bind_int64(st, 3, f->to > 0 ? f->to : INT64_MAX);
        sqlite3_bind_int64(st, 4, limit_of(f->limit));
    }
    while (rc == 0 && (rc = next(run, st, err)) == 1) {
        ust_run_divergence d = {num(st, 0),  num(st, 1),  text(st, 2),
                                text(st, 3), text(st, 4), sqlite3_column_int(st, 5),
                                text(st, 6)};
        rc = fn(ctx, &d);
    }
    sqlite3_finalize(st);
    return rc;
}

/* A divergence with its candidate's reason and its kind (ust_run_reasoned),
 * its diff read by the expression given. */
#define REASONED_SELECT(diff)                                                          \
    "SELECT c.c_reason, v.seq, v.received_at, v.class, v.fields, v.entity,"            \
    " v.follow_on, " diff ", ust_reason_kind(c.c_reason) AS kind FROM divergences v"   \
    " JOIN decisions c ON c.seq = v.seq WHERE v.class = ?1"

static ust_run_reasoned reasoned_row(sqlite3_stmt *st)
{
    ust_run_reasoned r = {text(st, 0),
                          text(st, 8),
                          {num(st, 1), num(st, 2), text(st, 3), text(st, 4),
                           text(st, 5), sqlite3_column_int(st, 6), NULL},
                          text(st, 7)};
    return r;
}

int ust_run_class_reasons(ust_run *run, const char *cls,
                          int (*fn)(void *ctx, const ust_run_reason *r), void *ctx,
                          char **err)
{
    sqlite3_stmt *st = NULL;
    /* By reason first: the kind of each reason is made once, not per row. */
    int rc = prepare(run,
                     "SELECT ust_reason_kind(r), sum(n), count(r), min(r) FROM"
                     " (SELECT c.c_reason AS r, count(*) AS n FROM divergences v"
                     " JOIN decisions c ON c.seq = v.seq WHERE v.class = ?1"
                     " GROUP BY 1) GROUP BY 1 ORDER BY 1",
                     &st, err);
    if (rc == 0)
        sqlite3_bind_text(st, 1, cls, -1, SQLITE_STATIC);
    while (rc == 0 && (rc = next(run, st, err)) == 1) {
        ust_run_reason r = {text(st, 0), num(st, 1), num(st, 2), text(st, 3)};
        rc = fn(ctx, &r);
    }
    sqlite3_finalize(st);
    return rc;
}

int ust_run_class_by_reason(ust_run *run, const char *cls, const ust_run_reason *only,
                            int with_diff,
                            int (*fn)(void *ctx, const ust_run_reasoned *r), void *ctx,
                            char **err)
{
    /* Only the diff of the line, extracted by SQLite: the line is most of a
     * row, and parsing it whole for each row was most of a class page's
     * time. One reason: the class's index gives seq order, and the
     * decisions (a read of their pages for each row) are not needed. */
    static const char *const sql[2][2] = {
        {REASONED_SELECT("NULL") " ORDER BY kind, v.seq",
         REASONED_SELECT("json_extract(v.line, '$.diff')") " ORDER BY kind, v.seq"},
        {"SELECT NULL, seq, received_at, class, fields, entity, follow_on, NULL, NULL"
         " FROM divergences WHERE class = ?1 ORDER BY seq",
         "SELECT NULL, seq, received_at, class, fields, entity, follow_on,"
         " json_extract(line, '$.diff'), NULL FROM divergences WHERE class = ?1"
         " ORDER BY seq"}};
    sqlite3_stmt *st = NULL;
    int rc = prepare(run, sql[only != NULL][with_diff != 0], &st, err);
    if (rc == 0)
        sqlite3_bind_text(st, 1, cls, -1, SQLITE_STATIC);
    while (rc == 0 && (rc = next(run, st, err)) == 1) {
        ust_run_reasoned r = reasoned_row(st);
        if (only != NULL) {
            r.reason = only->reason;
            r.kind = only->kind;
        }
        rc = fn(ctx, &r);
    }
    sqlite3_finalize(st);
    return rc;
}

static int skipped(int64_t seq, const int64_t *skip, size_t n_skip)
{
    for (size_t i = 0; i < n_skip; i++)
        if (skip[i] == seq)
            return 1;
    return 0;
}

/* The first row of st (prepared, bound) not in skip: 1 on it, 0 none. */
static int first_kept(ust_run *run, sqlite3_stmt *st, const int64_t *skip,
                      size_t n_skip, char **err)
{
    int rc;
    while ((rc = next(run, st, err)) == 1 && skipped(num(st, 1), skip, n_skip))
        ;
    return rc;
}

int ust_run_class_nearest(ust_run *run, const char *cls, int64_t at_us,
                          const int64_t *skip, size_t n_skip,
                          int (*fn)(void *ctx, const ust_run_reasoned *r), void *ctx,
                          char **err)
{
    /* The nearest at or before, and at or after: each the first row of a
     * walk of divergences_class_at from at_us. */
    static const char *const sql[] = {
        REASONED_SELECT("NULL") " AND v.received_at <= ?2"
                                " ORDER BY v.received_at DESC, v.seq",
        REASONED_SELECT("NULL") " AND v.received_at >= ?2"
                                " ORDER BY v.received_at, v.seq",
    };
    sqlite3_stmt *st[2] = {NULL, NULL};
    int found[2] = {0, 0};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        rc = prepare(run, sql[k], &st[k], err);
        if (rc == 0) {
            sqlite3_bind_text(st[k], 1, cls, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st[k], 2, at_us);
            rc = found[k] = first_kept(run, st[k], skip, n_skip, err);
            rc = rc < 0 ? rc : 0;
        }
    }
    if (rc == 0 && (found[0] || found[1])) {
        /* As near: the earlier (each walk gives the lowest seq of a time). */
        int pick =
            !found[0] || (found[1] && num(st[1], 2) - at_us < at_us - num(st[0], 2));
        ust_run_reasoned r = reasoned_row(st[pick]);
        rc = fn(ctx, &r);
        rc = rc != 0 ? rc : 1;
    }
    sqlite3_finalize(st[0]);
    sqlite3_finalize(st[1]);
    return rc;
}

/* The divergence's follow_on by a lookup rather than a join: over the
 * partitions of a replay read as one (run_many.c), a join of the two views
 * would copy every divergence for each read, where the lookup's seq reaches
 * each run's primary key. */
#define EVENT_SELECT                                                                   \
    "SELECT d.seq, d.received_at, d.event_type, d.fed, d.diverged,"                    \
    " coalesce((SELECT v.follow_on FROM divergences v WHERE v.seq = d.seq), 0),"       \
    " d.l_verdict, d.l_state, d.c_verdict, d.c_state FROM decisions d"

/* Reads the events of st (prepared and bound), *n of them: 0 at the end,
 * fn's value when it stopped, or an error. */
static int events(ust_run *run, sqlite3_stmt *st,
                  int (*fn)(void *ctx, const ust_run_event *e), void *ctx, int *n,
                  char **err)
{
    int rc;
    while ((rc = next(run, st, err)) == 1) {
        ust_run_event e = {num(st, 0),
                           num(st, 1),
                           text(st, 2),
                           sqlite3_column_int(st, 3),
                           sqlite3_column_int(st, 4),
                           sqlite3_column_int(st, 5),
                           text(st, 6),
                           text(st, 7),
                           text(st, 8),
                           text(st, 9)};
        ++*n;
        if ((rc = fn(ctx, &e)) != 0)
            break;
    }
    return rc;
}

int ust_run_timeline(ust_run *run, const char *entity, size_t limit,
                     int (*fn)(void *ctx, const ust_run_event *e), void *ctx,
                     char **err)
{
    sqlite3_stmt *st = NULL;
    int n = 0;
    int rc = prepare(run, EVENT_SELECT " WHERE d.entity = ?1 ORDER BY d.seq LIMIT ?2",
                     &st, err);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, entity, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, limit_of(limit));
        rc = events(run, st, fn, ctx, &n, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int ust_run_event_at(ust_run *run, int64_t seq,
                     int (*fn)(void *ctx, const ust_run_event *e), void *ctx,
                     char **err)
{
    sqlite3_stmt *st = NULL;
    int n = 0;
    int rc = prepare(run, EVENT_SELECT " WHERE d.seq = ?1", &st, err);
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, seq);
        rc = events(run, st, fn, ctx, &n, err);
    }
    sqlite3_finalize(st);
    return rc != 0 ? rc : n > 0;
}
