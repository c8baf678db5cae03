/* --respond legacy: the harness is the endpoint and the legacy's decision is
 * the answer. A responder thread owns its own legacy plugin, state store and
 * answers database: it decides each event right after the writer committed
 * it, in seq order, records the decision, and only then lets the loop
 * answer. The candidate is decided later by the runner, off this path, so it
 * can neither change nor delay an answer. */
#include "http/responder.h"
#include "http/upstream.h"

#include <understudy/priority.h>
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/runner.h>

#include <string.h>

struct ust__responder {
    const ust__responder_opts *o;
    ust_answers *answers;
    ust_plugin *legacy;      /* --respond legacy */
    ust__upstream *upstream; /* --respond upstream */
    ust__jobq q;
    pthread_t thread;
    /* A batch failed: the log holds events past the answers' cursor that
     * were answered 503 and not decided. They are decided before the next
     * batch, or that batch would move the cursor past them for good. */
    int behind;
};

static int fed(const ust_log_record *rec)
{
    return rec->route != NULL &&
           (rec->sig == UST_SIG_VERIFIED || rec->sig == UST_SIG_UNSIGNED);
}

/* The service's answer to rec, and the decision read from it, into d;
 * without job (catch_up: it may have been forwarded before), the decision
 * that its outcome is unknown. */
static int forward(ust__responder *rp, const ust_log_record *rec, ust__job *job,
                   ust_decision *d, char **err)
{
    if (job == NULL)
        return ust__upstream_unknown(d);
    ust_http_result *res = job->upstream = ust_calloc(1, sizeof(*res));
    int rc =
        res ? ust__upstream_forward(rp->upstream, rec, job->sent, res, d) : UST_ENOMEM;
    if (rc == 0 && res->failure == 0)
        rc = ust_answers_put_response(rp->answers, rec->seq, res->status, res->headers,
                                      res->n_headers, res->body, res->body_len, err);
    /* What is recorded as refused is never relayed: the caller gets 502. */
    if (rc == 0)
        rc = ust__upstream_withhold(res);
    /* The whole cause (its url without the password) is the operator's; the
     * caller's answer says it in a few words. */
    if (rc == 0 && res->failure != 0)
        ust__say(&rp->o->log, UST_LOG_WARN, "--respond upstream: seq %lld: %s",
                 (long long)rec->seq, d->error ? d->error : res->cause);
    return rc;
}

/* Decides one event and records it; *out (may be NULL) receives the
 * decision; job (NULL in catch_up) gets the service's answer upstream. */
static int decide(ust__responder *rp, const ust_log_record *rec, ust__job *job,
                  ust_decision *out, char **err)
{
    ust_event ev;
    ust_decision d;
    int viewed = ust_event_view(rp->o->cfg, rec, &ev);
    if (!viewed && ust_event_derive_ex(rp->o->cfg, &rec->req, UST_DERIVE_SKIP_SIGNATURE,
                                       &ev, err) != 0)
        return UST_ENOMEM;
    ev.seq = rec->seq;
    ev.sig = rec->sig;
    int rc = 0;
    if (rp->upstream != NULL)
        rc = forward(rp, rec, job, &d, err);
    else
        ust_plugin_decide(rp->legacy, &ev, &rec->req, &d);
    if (rc == 0)
        rc = ust_answers_put(rp->answers, rec->seq, d.entity ? d.entity : ev.identity,
                             &d, err);
    if (!viewed)
        ust_event_clear(&ev);
    if (out != NULL)
        *out = d;
    else
        ust_decision_clear(&d);
    return rc;
}

/* The answers' transaction is rolled back, and with it what the legacy's
 * store and the legacy cached beyond it, so the next requests see only
 * recorded state. */
static void roll_back(ust__responder *rp)
{
    ust_answers_rollback(rp->answers);
    ust_plugin_discard(rp->legacy);
}

static int commit_through(ust__responder *rp, int64_t seq, char **err)
{
    int rc = ust_answers_commit(rp->answers, seq, err);
    if (rc != 0)
        roll_back(rp);
    return rc;
}

/* Decides what the log holds beyond the answers' cursor, up to seq limit:
 * after a restart (those requests were never answered; the clients will
 * retry), and after a failed batch. */
static int catch_up(ust__responder *rp, int64_t limit, char **err)
{
    ust_log *log = NULL;
    int rc = ust_log_open(rp->o->log_path, UST_LOG_READONLY, &log, err);
    ust_log_cursor *cur = NULL;
    int64_t from = 0;
    if (rc == 0)
        rc = ust_answers_cursor(rp->answers, &from, err);
    if (rc == 0)
        rc = ust_log_cursor_open(log, from, &cur, err);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    int64_t last = 0;
    if (rc == 0)
        (void)ust_answers_begin(rp->answers, NULL);
    while (rc == 0 && (rc = ust_log_cursor_next(cur, &rec, err)) == 1) {
        if (rec.seq > limit) {
            rc = 0;
            break;
        }
        rc = fed(&rec) ? decide(rp, &rec, NULL, NULL, err) : 0;
        last = rec.seq;
    }
    if (rc == 0)
        rc = last > 0 ? commit_through(rp, last, err)
                      : ((void)ust_answers_commit(rp->answers, 0, NULL), 0);
    else
        roll_back(rp);
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_log_close(log);
    return rc;
}

static void *responder_main(void *arg)
{
    ust__responder *rp = arg;
    ust_name_thread("ust-respond");
    ust__job *batch, *last;
    size_t n;
    while (ust__jobq_take(&rp->q, 0, INT64_MAX, &batch, &last, &n) > 0) {
        char *err = NULL;
        int rc = 0;
        if (rp->behind) {
            int64_t first = 0;
            for (ust__job *j = batch; j != NULL && first == 0; j = j->next)
                if (j->failure == NULL && j->seq > 0)
                    first = j->seq;
            if (first > 0 && (rc = catch_up(rp, first - 1, &err)) == 0)
                rp->behind = 0;
        }
        if (rc == 0)
            rc = ust_answers_begin(rp->answers, NULL) == 0 ? 0 : UST_EDB;
        int64_t through = 0;
        for (ust__job *j = batch; j != NULL; j = j->next) {
            if (j->failure != NULL || j->seq == 0)
                continue;
            through = j->seq;
            j->rec.seq = j->seq;
            if (rc == 0 && fed(&j->rec) && rp->upstream != NULL) {
                rc = decide(rp, &j->rec, j, NULL, &err);
            } else if (rc == 0 && fed(&j->rec)) {
                j->answer = ust_calloc(1, sizeof(*j->answer));
                rc =
                    j->answer ? decide(rp, &j->rec, NULL, j->answer, &err) : UST_ENOMEM;
            }
        }
        if (rc == 0 && through > 0)
            rc = commit_through(rp, through, &err);
        else if (rc == 0)
            (void)ust_answers_commit(rp->answers, 0, NULL);
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
            atomic_fetch_add(&rp->o->metrics->answers_write_failures, 1);
        }
        if (rc != 0 || through > 0) /* a batch of only refusals writes nothing */
            ust__health_answered(rp->o->health, rc, err ? err : ust_strerror(rc));
        ust_free(err);
        rp->o->out.put(rp->o->out.ctx, batch, last, rc == 0 ? through : 0);
    }
    return NULL;
}

static void responder_free(ust__responder *rp)
{
    ust_plugin_unload(rp->legacy);
    ust__upstream_close(rp->upstream);
    ust_answers_writer_close(rp->answers);
    ust_free(rp);
}

int ust__responder_start(const ust__responder_opts *o, ust__responder **out, char **err)
{
    *out = NULL;
    ust__responder *rp = ust_calloc(1, sizeof(*rp));
    if (rp == NULL)
        return UST_ENOMEM;
    rp->o = o;
    char *path = ust_answers_path(o->run_path);
    const ust_plugin_config *pc = &o->cfg->legacy;
    int rc =
        path ? ust_answers_writer_open(path, o->cfg, &rp->answers, err) : UST_ENOMEM;
    ust_free(path);
    if (rc == 0 && o->upstream && o->legacy_path != NULL)
        rc = ust_errf(err, UST_EINVAL,
                      "--respond upstream: the legacy is production's handler at"
                      " plugins.legacy.url; drop --legacy %s",
                      o->legacy_path);
    else if (rc == 0 && o->upstream)
        rc = ust__upstream_open(pc, o->cfg->file, &rp->upstream, err);
    else if (rc == 0 && pc->recorded && o->legacy_path == NULL)
        rc = ust_errf(err, UST_EINVAL,
                      "--respond legacy: a recorded legacy decides with answers a log"
                      " holds, which a live request has none of: give plugins.legacy a"
                      " path or exec, or use --respond upstream with its url");
    else if (rc == 0 && !ust_plugin_configured(pc, o->legacy_path))
        rc = ust_errf(err, UST_EINVAL,
                      "--respond legacy: no legacy plugin (plugins.legacy)");
    else if (rc == 0)
        rc = ust_plugin_open(pc, o->legacy_path, "legacy", 0,
                             ust_answers_store(rp->answers), &rp->legacy, err);
    if (rc == 0)
        rc = catch_up(rp, INT64_MAX, err);
    if (rc == 0 && ust__jobq_init(&rp->q) != 0)
        rc = ust_errf(err, UST_ENOMEM, "cannot make the responder's queue");
    else if (rc == 0 && pthread_create(&rp->thread, NULL, responder_main, rp) != 0) {
        ust__jobq_destroy(&rp->q);
        rc = ust_errf(err, UST_ENOMEM, "cannot start the responder thread");
    }
    if (rc != 0) {
        responder_free(rp);
        return rc;
    }
    *out = rp;
    return 0;
}

void ust__responder_put(ust__responder *rp, ust__job *first, ust__job *last)
{
    ust__jobq_put(&rp->q, first, last);
}

void ust__responder_stop(ust__responder *rp)
{
    if (rp == NULL)
        return;
    ust__jobq_stop(&rp->q);
    pthread_join(rp->thread, NULL);
    ust__jobq_destroy(&rp->q);
    responder_free(rp);
}
