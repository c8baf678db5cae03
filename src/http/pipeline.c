/* A request through the recorder: from its parse to the deriver (and on
 * to the writer), and back from the last stage answered on its connection.
 * Limits are checked before anything is allocated for them; a bad request
 * gets a small JSON answer saying what was wrong. */
#include "http/server.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/log.h>

#include <string.h>

static int on_message_begin(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    if (c->started_ns == 0) /* a request pipelined behind another, in one read */
        c->started_ns = uv_hrtime();
    ust__conn_arm_timer(c);
    return 0;
}

/* Queued with the answers, so it leaves after those owed before it, when
 * this read is parsed: the client waits for it to send the body. */
static int on_expect_continue(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ust__slot *slot = ust__conn_new_slot(c);
    if (slot != NULL) { /* not the answer: the request's time goes on */
        c->started_ns = slot->started_ns;
        slot->started_ns = 0;
    }
    if (slot == NULL || (slot->response = ust_strdup(cont)) == NULL)
        return ust__reqparse_stop(rp, 503, "out of memory");
    slot->response_len = sizeof(cont) - 1;
    slot->ready = 1; /* written once this read is parsed */
    return 0;
}

/* slot, of c, is owed an answer of bytes; owing too much, c is read no
 * further for now (a client pipelining requests it does not read the
 * answers to). */
static void owe(ust__reqparse *rp, ust__conn *c, ust__slot *slot, size_t bytes)
{
    ust__conn_owe(c->srv, c, slot, bytes);
    if (ust__conn_owes_too_much(c))
        ust__reqparse_pause(rp);
}

static int on_message_complete(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    ust__server *s = c->srv;
    http_parser *p = &rp->parser;
    uv_timer_stop(&c->timer);
    int keep_alive = http_should_keep_alive(p) && !s->stopping && !c->peer_done;
    if (c->admin) {
        ust__admin_answer(c, keep_alive);
        ust_request_clear(&rp->req);
        ust__conn_flush(c);
        return 0;
    }
    const ust_route *route = ust_config_route(s->o->cfg, rp->req.target);
    if (route == NULL || p->method != HTTP_POST) {
        ust__metrics_rejected(&s->metrics, route ? 405 : 404);
        ust__slot *slot = ust__conn_new_slot(c);
        if (slot != NULL) {
            slot->close_after = !keep_alive;
            slot->route = route ? (size_t)(route - s->o->cfg->routes) + 1 : 0;
            if (route == NULL)
                ust__reply_error(slot, 404, "no route for this path");
            else
                ust__reply_set(slot, 405, "application/json", "Allow: POST\r\n",
                               "{\"error\":\"use POST\"}");
            owe(rp, c, slot, slot->response_len);
        }
        ust_request_clear(&rp->req);
        ust__conn_flush(c);
        return 0;
    }
    ust__job *job = ust_calloc(1, sizeof(*job));
    if (job == NULL ||
        ust__reqparse_take(rp, c->remote, ust_time_wall_us(), &job->req) != 0 ||
        (job->slot = ust__conn_new_slot(c)) == NULL) {
        if (job != NULL)
            ust_request_clear(&job->req);
        ust_free(job);
        return ust__reqparse_stop(rp, 503, "out of memory");
    }
    ust__slot *slot = job->slot;
    slot->close_after = !keep_alive;
    job->route_index = (size_t)(route - s->o->cfg->routes);
    slot->route = job->route_index + 1;
    job->cfg = s->o->cfg;
    /* Its answer's size is not known yet: it counts as the largest one
     * can be. */
    owe(rp, c, slot, s->answer_bound);
    ust__deriver_add(&s->deriver, job);
    return 0;
}

const ust__reqparse_ops ust__request_ops = {
    .begin = on_message_begin,
    .expect_continue = on_expect_continue,
    .complete = on_message_complete,
};
void ust__pipeline_done(uv_async_t *a)
{
    ust__server *s = a->data;
    ust__job *j, *last;
    size_t n;
    ust__jobq_take(&s->done, 0, 0, &j, &last, &n);
    while (j != NULL) {
        ust__job *next = j->next;
        ust__slot *slot = j->slot;
        if (slot->conn != NULL) {
            ust__reply_job(j);
            /* Its size is known now: it replaces the bound it counted. */
            ust__conn_owe(s, slot->conn, slot, slot->response_len);
            ust__conn_flush(slot->conn);
        } else {
            ust__conn_owe(s, NULL, slot, 0);
            ust_free(slot); /* its connection is gone; the event is stored all the
                             * same */
        }
        ust_log_record_clear_derived(&j->rec);
        ust_decision_clear(j->answer);
        ust_free(j->answer);
        ust_http_result_clear(j->upstream);
        ust_free(j->upstream);
        for (size_t i = 0; j->sent != NULL && i < j->req.n_headers; i++)
            ust_free(j->sent[i]);
        ust_free(j->sent);
        ust_request_clear(&j->req);
        ust_free(j->failure);
        ust_free(j);
        j = next;
    }
    ust__conn_read_on_held(s);
}
