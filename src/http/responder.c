/* --respond legacy: the harness is the endpoint and the legacy's decision is
 * the answer. A responder thread owns its own legacy plugin, state store and
 * answers database: it decides each event right after the writer committed
 * it, in seq order, records the decision, and only then lets the loop
 * answer. The candidate is decided later by the runner, off this path, so it
 * can neither change nor delay an answer. */
#include "http/http_internal.h"
#include "runner/answers.h"
#include "runner/decision_row.h"
#include "runner/event_view.h"
#include "runner/rundb.h"

#include <understudy/priority.h>
#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <string.h>

typedef struct responder {
    sqlite3 *db;
    ust_store *store;
    ust_plugin *legacy;
    sqlite3_stmt *insert, *cursor;
    ust__queue q;
    pthread_t thread;
    /* A batch failed: the log holds events past the answers' cursor that
     * were answered 503 and not decided. They are decided before the next
     * batch, or that batch would move the cursor past them for good. */
    int behind;
} responder;

static int fed(const ust_log_record *rec)
{
    return rec->route != NULL &&
           (rec->sig == UST_SIG_VERIFIED || rec->sig == UST_SIG_UNSIGNED);
}

/* Decides one event and records it; *out (may be NULL) receives the decision. */
static int decide(ust__server *s, const ust_log_record *rec, ust_decision *out,
                  char **err)
{
    responder *rp = s->responder;
    ust_event ev;
    ust_decision d;
    int viewed = ust__event_view(s->o->cfg, rec, &ev);
    if (!viewed && ust_event_derive_ex(s->o->cfg, &rec->req, UST_DERIVE_SKIP_SIGNATURE,
                                       &ev, err) != 0)
        return UST_ENOMEM;
    ev.seq = rec->seq;
    ev.sig = rec->sig;
    ust_plugin_decide(rp->legacy, &ev, &rec->req, &d);
    sqlite3_stmt *st = rp->insert;
    sqlite3_bind_int64(st, 1, rec->seq);
    if (d.entity || ev.identity)
        sqlite3_bind_text(st, 2, d.entity ? d.entity : ev.identity, -1,
                          SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    ust__decision_bind(st, 3, &d);
    int rc = sqlite3_step(st) == SQLITE_DONE
                 ? 0
                 : ust_errf(err, UST_EDB, "answers: %s", sqlite3_errmsg(rp->db));
    sqlite3_reset(st);
    if (!viewed)
        ust_event_clear(&ev);
    if (out != NULL)
        *out = d;
    else
        ust_decision_clear(&d);
    return rc;
}

/* The answers' transaction is rolled back, and with it what the legacy's
 * store cached beyond it, so the next requests see only recorded state. */
static void roll_back(responder *rp)
{
    sqlite3_exec(rp->db, "ROLLBACK", NULL, NULL, NULL);
    ust_store_discard(rp->store);
    ust_plugin_discard(rp->legacy);
}

static int commit_through(ust__server *s, int64_t seq, char **err)
{
    responder *rp = s->responder;
    int rc = ust_store_flush(rp->store, err);
    sqlite3_bind_int64(rp->cursor, 1, seq);
    if (rc == 0 && sqlite3_step(rp->cursor) != SQLITE_DONE)
        rc = ust_errf(err, UST_EDB, "answers: %s", sqlite3_errmsg(rp->db));
    sqlite3_reset(rp->cursor);
    if (rc == 0 && sqlite3_exec(rp->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = ust_errf(err, UST_EDB, "answers: %s", sqlite3_errmsg(rp->db));
    if (rc != 0)
        roll_back(rp);
    return rc;
}

/* Decides what the log holds beyond the answers' cursor, up to seq limit:
 * after a restart (those requests were never answered; the clients will
 * retry), and after a failed batch. */
static int catch_up(ust__server *s, int64_t limit, char **err)
{
    responder *rp = s->responder;
    ust_log *log = NULL;
    int rc = ust_log_open(s->o->log_path, UST_LOG_READONLY, &log, err);
    ust_log_cursor *cur = NULL;
    int64_t from = 0;
    if (rc == 0)
        rc = ust__rundb_cursor(rp->db, &from, err);
    if (rc == 0)
        rc = ust_log_cursor_open(log, from, &cur, err);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int64_t last = 0;
    if (rc == 0)
        sqlite3_exec(rp->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    while (rc == 0 && (rc = ust_log_cursor_next(cur, &rec, err)) == 1) {
        if (rec.seq > limit) {
            rc = 0;
            break;
        }
        rc = fed(&rec) ? decide(s, &rec, NULL, err) : 0;
        last = rec.seq;
    }
    if (rc == 0)
        rc = last > 0 ? commit_through(s, last, err)
                      : (sqlite3_exec(rp->db, "COMMIT", NULL, NULL, NULL), 0);
    else
        roll_back(rp);
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
    return rc;
}

static void *responder_main(void *arg)
{
    ust__server *s = arg;
    responder *rp = s->responder;
    ust_name_thread("ust-respond");
    for (;;) {
        pthread_mutex_lock(&rp->q.mu);
        while (rp->q.head == NULL && !rp->q.stopping)
            pthread_cond_wait(&rp->q.cv, &rp->q.mu);
        ust__job *batch = rp->q.head, *last = rp->q.tail;
        rp->q.head = rp->q.tail = NULL;
        pthread_mutex_unlock(&rp->q.mu);
        if (batch == NULL)
            break; /* stopping and drained */
        char *err = NULL;
        int rc = 0;
        if (rp->behind) {
            int64_t first = 0;
            for (ust__job *j = batch; j != NULL && first == 0; j = j->next)
                if (j->failure == NULL && j->seq > 0)
                    first = j->seq;
            if (first > 0 && (rc = catch_up(s, first - 1, &err)) == 0)
                rp->behind = 0;
        }
        if (rc == 0)
            rc = sqlite3_exec(rp->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
                     ? 0
                     : UST_EDB;
        int64_t through = 0;
        for (ust__job *j = batch; j != NULL; j = j->next) {
            if (j->failure != NULL || j->seq == 0)
                continue;
            through = j->seq;
            j->rec.seq = j->seq;
            if (rc == 0 && fed(&j->rec)) {
                j->answer = ust_calloc(1, sizeof(*j->answer));
                rc = j->answer ? decide(s, &j->rec, j->answer, &err) : UST_ENOMEM;
            }
        }
        if (rc == 0 && through > 0)
            rc = commit_through(s, through, &err);
        else if (rc == 0)
            sqlite3_exec(rp->db, "COMMIT", NULL, NULL, NULL);
        if (rc != 0) {
            /* The events are durable; the decision is not: answer 503 so the
             * client retries; they are decided before the next batch. */
            for (ust__job *j = batch; j != NULL; j = j->next)
                if (j->failure == NULL)
                    j->failure =
                        ust_sprintf("the legacy decision could not be recorded: %s",
                                    err ? err : ust_strerror(rc));
            roll_back(rp);
            rp->behind = 1;
        }
        if (rc != 0 || through > 0) /* a batch of only refusals writes nothing */
            ust__health_answered(s, rc, err ? err : ust_strerror(rc));
        ust_free(err);
        ust__jobs_done(s, batch, last);
        if (rc == 0 && through > 0)
            ust__follower_notify(s, through);
    }
    return NULL;
}

static void responder_free(ust__server *s)
{
    responder *rp = s->responder;
    ust_plugin_unload(rp->legacy);
    ust_store_close(rp->store);
    sqlite3_finalize(rp->insert);
    sqlite3_finalize(rp->cursor);
    sqlite3_close(rp->db);
    ust_free(rp);
    s->responder = NULL;
}

char *ust__answers_path(const char *run_path)
{
    return ust_sprintf("%s.answers", run_path);
}

int ust__responder_start(ust__server *s, char **err)
{
    responder *rp = ust_calloc(1, sizeof(*rp));
    if (rp == NULL)
        return UST_ENOMEM;
    s->responder = rp;
    char *path = ust__answers_path(s->o->run_path);
    const ust_plugin_config *pc = &s->o->cfg->legacy;
    int rc = path ? ust__answers_open(path, 0, &rp->db, err) : UST_ENOMEM;
    ust_free(path);
    if (rc == 0 && s->o->legacy_path == NULL && pc->path == NULL && pc->exec == NULL)
        rc = ust_errf(err, UST_EINVAL,
                      "--respond legacy: no legacy plugin (plugins.legacy)");
    if (rc == 0)
        rc = ust_store_open(rp->db, &rp->store, err);
    if (rc == 0)
        rc = ust_plugin_open(pc, s->o->legacy_path, "legacy", 0, rp->store, &rp->legacy,
                             err);
    if (rc == 0 &&
        (sqlite3_prepare_v2(rp->db, UST__ANSWERS_INSERT, -1, &rp->insert, NULL) ||
         sqlite3_prepare_v2(rp->db, UST__ANSWERS_CURSOR, -1, &rp->cursor, NULL)))
        rc = ust_errf(err, UST_EDB, "answers: %s", sqlite3_errmsg(rp->db));
    if (rc == 0)
        rc = catch_up(s, INT64_MAX, err);
    pthread_mutex_init(&rp->q.mu, NULL);
    pthread_cond_init(&rp->q.cv, NULL);
    if (rc == 0 && pthread_create(&rp->thread, NULL, responder_main, s) != 0)
        rc = ust_errf(err, UST_ENOMEM, "cannot start the responder thread");
    if (rc != 0)
        responder_free(s);
    return rc;
}

void ust__responder_submit(ust__server *s, ust__job *first, ust__job *last)
{
    responder *rp = s->responder;
    pthread_mutex_lock(&rp->q.mu);
    if (rp->q.tail)
        rp->q.tail->next = first;
    else
        rp->q.head = first;
    rp->q.tail = last;
    pthread_cond_signal(&rp->q.cv);
    pthread_mutex_unlock(&rp->q.mu);
}

void ust__responder_stop(ust__server *s)
{
    responder *rp = s->responder;
    if (rp == NULL)
        return;
    pthread_mutex_lock(&rp->q.mu);
    rp->q.stopping = 1;
    pthread_cond_signal(&rp->q.cv);
    pthread_mutex_unlock(&rp->q.mu);
    pthread_join(rp->thread, NULL);
    responder_free(s);
}
