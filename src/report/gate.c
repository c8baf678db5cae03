/* The cutover gate: every divergence class of the run must be accepted by
 * the triage file (or fixed, and then absent from a new run). */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/report.h>

#include <sqlite3.h>
#include <string.h>

void ust_gate_result_clear(ust_gate_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        ust_free(res->classes[i].class_name);
    ust_free(res->classes);
    memset(res, 0, sizeof(*res));
}

int ust_gate_check(const char *run_path, const ust_triage *t, ust_gate_result *res,
                   char **err)
{
    memset(res, 0, sizeof(*res));
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(run_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        ust_errf(err, UST_EIO, "%s: cannot open run database", run_path);
        sqlite3_close(db);
        return UST_EIO;
    }
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT class, count(*) FROM divergences GROUP BY class"
                           " ORDER BY 2 DESC, 1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = ust_errf(err, UST_EDB, "%s: not a run database (%s)", run_path,
                      sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    size_t cap = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (res->n == cap) {
            cap = cap ? cap * 2 : 16;
            ust_gate_class *grown = ust_realloc(res->classes, cap * sizeof(*grown));
            if (grown == NULL) {
                rc = UST_ENOMEM;
                break;
            }
            res->classes = grown;
        }
        ust_gate_class *c = &res->classes[res->n];
        c->class_name = ust_strdup((const char *)sqlite3_column_text(st, 0));
        c->count = sqlite3_column_int64(st, 1);
        if (c->class_name == NULL) {
            rc = UST_ENOMEM;
            break;
        }
        c->accepted = ust_triage_match(t, c->class_name);
        res->n++;
        res->divergences += c->count;
        if (c->accepted == NULL) {
            res->open_divergences += c->count;
            res->open_classes++;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc != 0)
        ust_gate_result_clear(res);
    return rc;
}
