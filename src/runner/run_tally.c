/* The run's totals with its events per route, per signature status and per
 * pair of verdicts (run.h: ust_run_tally), from one read of the decisions.
 * Each count of its own was a read of every decision, three of them a sort
 * as well: four reads of the run's largest table for one report. The keys
 * are few (the config's routes, the signature statuses, the verdicts), so
 * they are counted here, in a short list each, and sorted at the end as
 * SQLite's GROUP BY ... ORDER BY sorted them (BINARY: byte order). */
#include "runner/run_handle.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/run.h>

#include <stdlib.h>
#include <string.h>

/* One key's count: up to two texts, NULL a key of its own. */
typedef struct tally_key {
    char *part[2];
    int64_t n;
} tally_key;

typedef struct tally_list {
    tally_key *keys;
    size_t n, cap, last; /* last: the key the previous row counted */
} tally_list;

static int same_text(const char *held, const char *s)
{
    return held == NULL || s == NULL ? held == s : strcmp(held, s) == 0;
}

static int is_key(const tally_key *k, const char *a, const char *b)
{
    return same_text(k->part[0], a) && same_text(k->part[1], b);
}

static char *dup_text(const char *s, int *failed)
{
    char *d = s ? ust_strdup(s) : NULL;
    *failed |= s != NULL && d == NULL;
    return d;
}

/* Counts one row under (a, b): 0, or UST_ENOMEM. */
static int count(tally_list *l, const char *a, const char *b)
{
    if (l->n > 0 && is_key(&l->keys[l->last], a, b)) {
        l->keys[l->last].n++;
        return 0;
    }
    for (size_t i = 0; i < l->n; i++)
        if (is_key(&l->keys[i], a, b)) {
            l->keys[i].n++;
            l->last = i;
            return 0;
        }
    tally_key *grown = ust_grow(l->keys, &l->cap, l->n + 1, 16, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    l->keys = grown;
    int failed = 0;
    tally_key k = {{dup_text(a, &failed), dup_text(b, &failed)}, 1};
    l->keys[l->n] = k;
    l->last = l->n++;
    return failed ? UST_ENOMEM : 0;
}

static int by_first_part(const void *x, const void *y)
{
    return strcmp(((const tally_key *)x)->part[0], ((const tally_key *)y)->part[0]);
}

/* The keys of l (one text, never NULL) in byte order, each to fn. */
static int give_sorted(tally_list *l, int (*fn)(void *ctx, const char *key, int64_t n),
                       void *ctx)
{
    if (l->n > 1)
        qsort(l->keys, l->n, sizeof(*l->keys), by_first_part);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < l->n; i++)
        rc = fn(ctx, l->keys[i].part[0], l->keys[i].n);
    return rc;
}

static void clear(tally_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        ust_free(l->keys[i].part[0]);
        ust_free(l->keys[i].part[1]);
    }
    ust_free(l->keys);
}

static const char *text_or(sqlite3_stmt *st, int col, const char *none)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : none;
}

/* Reads the decisions once into out and the three lists. */
static int read_decisions(ust_run *run, ust_run_totals *out, tally_list lists[3],
                          char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT received_at, fed, route, signature, l_verdict,"
                           " c_verdict FROM decisions",
                           -1, &st, NULL) != SQLITE_OK)
        return ust_errf(err, UST_EDB, "%s: not a run database (%s)", run->path,
                        sqlite3_errmsg(run->db));
    int rc;
    while ((rc = ust__db_step(st, run->path, err)) == 1) {
        int64_t at = sqlite3_column_int64(st, 0);
        if (out->events == 0 || at < out->first_at)
            out->first_at = at;
        if (out->events == 0 || at > out->last_at)
            out->last_at = at;
        out->events++;
        out->fed += sqlite3_column_int64(st, 1);
        /* As the reads by route and signature named a NULL. */
        if ((rc = count(&lists[0], text_or(st, 2, "(unrouted)"), NULL)) != 0 ||
            (rc = count(&lists[1], text_or(st, 3, "(unrouted)"), NULL)) != 0 ||
            (rc = count(&lists[2], text_or(st, 4, NULL), text_or(st, 5, NULL))) != 0)
            break;
    }
    sqlite3_finalize(st);
    return rc;
}

static int divergence_totals(ust_run *run, ust_run_totals *out, char **err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            run->db, "SELECT count(*), coalesce(sum(follow_on), 0) FROM divergences",
            -1, &st, NULL) != SQLITE_OK)
        return ust_errf(err, UST_EDB, "%s: not a run database (%s)", run->path,
                        sqlite3_errmsg(run->db));
    int rc = ust__db_step(st, run->path, err);
    if (rc == 1) {
        out->divergences = sqlite3_column_int64(st, 0);
        out->follow_ons = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int ust_run_tally_read(ust_run *run, ust_run_totals *out, const ust_run_tally *t,
                       char **err)
{
    memset(out, 0, sizeof(*out));
    tally_list lists[3];
    memset(lists, 0, sizeof(lists));
    int rc = read_decisions(run, out, lists, err);
    if (rc == 0)
        rc = divergence_totals(run, out, err);
    if (rc == 0)
        rc = give_sorted(&lists[0], t->by_route, t->ctx);
    if (rc == 0)
        rc = give_sorted(&lists[1], t->by_signature, t->ctx);
    for (size_t i = 0; rc == 0 && i < lists[2].n; i++)
        rc = t->pair(t->ctx, lists[2].keys[i].part[0], lists[2].keys[i].part[1],
                     lists[2].keys[i].n);
    for (int i = 0; i < 3; i++)
        clear(&lists[i]);
    return rc;
}
