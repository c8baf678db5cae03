#include "runner/answers_reader.h"
#include "runner/answers.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

int ust__answers_reader_open(ust__answers_reader *a, const char *path, char **err)
{
    memset(a, 0, sizeof(*a));
    int rc = ust__answers_open(path, 1, &a->db, err);
    if (rc == 0 &&
        sqlite3_prepare_v2(a->db, UST__ANSWERS_SELECT, -1, &a->get, NULL) != SQLITE_OK)
        rc = ust_errf(err, UST_EDB, "%s: %s", path, sqlite3_errmsg(a->db));
    return rc;
}

void ust__answers_reader_close(ust__answers_reader *a)
{
    sqlite3_finalize(a->get);
    sqlite3_close(a->db);
    memset(a, 0, sizeof(*a));
}

int ust__answers_reader_get(ust__answers_reader *a, int64_t seq, ust_decision *d,
                            char **err)
{
    sqlite3_reset(a->get);
    sqlite3_bind_int64(a->get, 1, seq);
    if (sqlite3_step(a->get) != SQLITE_ROW)
        return ust_errf(err, UST_EDB, "answers: no legacy decision for seq %lld",
                        (long long)seq);
    int rc =
        ust__decision_read(a->get, 1, (const char *)sqlite3_column_text(a->get, 0), d);
    /* Reset now: a statement left on a row keeps its read snapshot, and the
     * next step would not see the responder's newer answers. */
    sqlite3_reset(a->get);
    return rc;
}
