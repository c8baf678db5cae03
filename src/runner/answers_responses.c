/* The answers a service gave in line (serve --respond upstream), read back
 * by seq from RUN.answers' responses table: what `log export --answers`
 * puts beside each request, so the week replays with a "recorded" legacy. */
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/runner.h>

#include <sqlite3.h>
#include <string.h>

struct ust_answers_responses {
    sqlite3 *db;
    sqlite3_stmt *get;
    char *path;
};

int ust_answers_responses_open(const char *path, ust_answers_responses **out,
                               char **err)
{
    *out = NULL;
    ust_answers_responses *r = ust_calloc(1, sizeof(*r));
    if (r == NULL || (r->path = ust_strdup(path)) == NULL) {
        ust_free(r);
        return UST_ENOMEM;
    }
    int rc = ust__db_open(path, 1, NULL, "answers database", &r->db, err);
    if (rc == 0 &&
        sqlite3_prepare_v2(r->db,
                           "SELECT status, headers, body FROM responses WHERE seq = ?1",
                           -1, &r->get, NULL) != SQLITE_OK)
        rc = ust_errf(err, UST_EDB,
                      "%s: holds no answers of a service (not the RUN.answers of a"
                      " serve --respond upstream)",
                      path);
    if (rc != 0) {
        ust_answers_responses_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

void ust_answers_responses_close(ust_answers_responses *r)
{
    if (r == NULL)
        return;
    sqlite3_finalize(r->get);
    sqlite3_close(r->db);
    ust_free(r->path);
    ust_free(r);
}

int ust_answers_response_get(ust_answers_responses *r, int64_t seq, ust_response *out,
                             char **err)
{
    memset(out, 0, sizeof(*out));
    sqlite3_reset(r->get);
    sqlite3_bind_int64(r->get, 1, seq);
    int rc = ust__db_step(r->get, r->path, err);
    if (rc != 1)
        return rc;    /* 0: the service gave no answer to seq (or it failed) */
    ust_request held; /* the unpacker fills a request's headers */
    memset(&held, 0, sizeof(held));
    rc = ust_headers_unpack(sqlite3_column_blob(r->get, 1),
                            (size_t)sqlite3_column_bytes(r->get, 1), &held, err);
    out->status = sqlite3_column_int(r->get, 0);
    out->headers = held.headers;
    out->n_headers = held.n_headers;
    int blen = sqlite3_column_bytes(r->get, 2);
    if (rc == 0 && blen > 0) {
        out->body = ust_malloc((size_t)blen);
        if (out->body == NULL)
            rc = UST_ENOMEM;
        else {
            memcpy(out->body, sqlite3_column_blob(r->get, 2), (size_t)blen);
            out->body_len = (size_t)blen;
        }
    }
    sqlite3_reset(r->get);
    if (rc != 0) {
        ust_response_clear(out);
        return rc;
    }
    return 1;
}
