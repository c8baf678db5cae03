/* Divergences by class in a range of seqs. The index on class (rundb.c)
 * makes the whole run's cheap; a step's range is a short scan of seq, the
 * table's key. */
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/run.h>

struct ust_run_counts {
    sqlite3 *db;
    sqlite3_stmt *classes;
};

int ust_run_counts_open(const char *run_path, ust_run_counts **out, char **err)
{
    *out = NULL;
    ust_run_counts *rc = ust_calloc(1, sizeof(*rc));
    if (rc == NULL)
        return ust_errf(err, UST_ENOMEM, "out of memory");
    int r = ust__db_open(run_path, 1, NULL, "run database", &rc->db, err);
    if (r == 0 && sqlite3_prepare_v2(rc->db,
                                     "SELECT class, count(*) FROM divergences"
                                     " WHERE seq > ?1 AND seq <= ?2 GROUP BY class",
                                     -1, &rc->classes, NULL) != SQLITE_OK)
        r = ust_errf(err, UST_EDB, "%s: divergences: %s", run_path,
                     sqlite3_errmsg(rc->db));
    if (r != 0) {
        ust_run_counts_close(rc);
        return r;
    }
    *out = rc;
    return 0;
}

int ust_run_counts_classes(ust_run_counts *rc, int64_t after, int64_t through,
                           void (*fn)(void *ctx, const char *cls, int64_t n), void *ctx,
                           char **err)
{
    sqlite3_stmt *st = rc->classes;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int64(st, 2, through);
    int r;
    while ((r = ust__db_step(st, "divergences", err)) == 1) {
        const char *cls = (const char *)sqlite3_column_text(st, 0);
        fn(ctx, cls ? cls : "", sqlite3_column_int64(st, 1));
    }
    sqlite3_reset(st);
    return r;
}

void ust_run_counts_close(ust_run_counts *rc)
{
    if (rc == NULL)
        return;
    sqlite3_finalize(rc->classes);
    sqlite3_close(rc->db);
    ust_free(rc);
}
