/* The HTTP/1.1 front of the recorder: libuv for the sockets, Debian's
 * http-parser for the protocol. Limits are checked before anything is
 * allocated for them; a bad request gets a small JSON answer saying what was
 * wrong and the server goes on serving everyone else. Answers leave in the
 * order requests arrived, so pipelining is safe. */
#include "http/deriver.h"
#include "http/follower.h"
#include "http/health.h"
#include "http/metrics.h"
#include "http/notify.h"
#include "http/queue.h"
#include "http/request_parse.h"
#include "http/responder.h"
#include "http/upstream.h"
#include "http/say.h"
#include "http/writer.h"

#include <understudy/array.h>
#include <understudy/clock.h>
#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sigpipe.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* One request of a connection, answered in the order it arrived
 * (pipelining). A slot outlives its connection when the writer still holds
 * its request: conn is then NULL and the answer is dropped. */
typedef struct ust__slot {
    struct ust__slot *next;
    struct ust__conn *conn;
    int ready;
    int close_after;
    char *response; /* full HTTP response, ust_malloc'd */
    size_t response_len;
    uint64_t started_ns; /* the request's first byte (uv_hrtime), 0: no request */
    size_t route;        /* its route's index + 1, 0 for none (for /metrics) */
    size_t owed;         /* answer bytes counted as owed for it (see owe()) */
} ust__slot;

/* The server: the loop's connections, and the parts it wires together
 * (each its own struct, none reaching into another). */
typedef struct ust_server {
    const ust_serve_opts *o;
    ust__logger log;
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_async_t done_async;   /* jobs in done */
    uv_async_t stop_async;   /* ust_serve_stop */
    struct ust__conn *conns; /* every open connection */
    size_t n_conns, max_conns;
    int stopping;
    ust__deriver deriver; /* read -> derived -> the writer */
    int finished;         /* the stop sequence has run */
    ust__jobq done;       /* committed (and decided) jobs, to be answered */
    ust__writer writer;
    ust__responder_opts responder_opts;
    ust__responder *responder; /* --respond legacy, else NULL */
    ust__follower follower;
    int following;   /* a run database: the follower was opened */
    int runner_left; /* the stop left the runner behind (see follower.c) */
    ust__metrics metrics;
    ust__class_counts classes;
    ust__notify *notify; /* systemd watchdog pings, else NULL */
    /* the admin listener: /healthz, /readyz, /metrics */
    uv_tcp_t admin;
    size_t n_admin; /* its connections, apart from the public ones' cap */
    ust__health health;
    /* Answer bytes owed to clients and not yet written, and the
     * connections not read meanwhile (limits.max_owed_bytes*). */
    size_t owed, n_held_back;
    size_t answer_bound;      /* an answer still to come counts this much */
    char read_buf[64 * 1024]; /* see on_alloc */
} ust__server;

typedef struct ust__conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    ust__reqparse rp; /* the request being read */
    ust__server *srv;
    struct ust__conn *next, *prev;
    char remote[64];
    /* answers, in arrival order */
    ust__slot *head, *tail;
    int handles; /* open uv handles (tcp, timer) */
    int closing, reading;
    int writes;    /* answers handed to the socket, not yet written */
    int peer_done; /* the client half-closed: answer what it sent, then close */
    int idle;      /* kept alive, owing nothing, reading nothing */
    /* When the first byte of the request being read came (uv_hrtime), 0
     * between requests: /metrics times requests from there. */
    uint64_t started_ns;
    int admin; /* came in on the admin listener */
    /* Flow control: the answer bytes this connection is owed; while it (or
     * the server) owes too much it is not read, and what was read past the
     * request that tipped it over waits in held. */
    size_t owed;
    int held_back;
    char *held;
    size_t held_len;
} ust__conn;

typedef struct write_req {
    uv_write_t req;
    ust__slot *slot;
} write_req;

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Content";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Status";
    }
}

/* ---- answers ----------------------------------------------------------- */

/* A 204 or a 304 has no body, and says no length (RFC 9110 8.6, 15.3.5,
 * 15.4.5): a length there would be read by some as the size of a body to
 * come. Whatever body was given is dropped, and with it its type. */
static void set_response(ust__slot *slot, int status, const char *content_type,
                         const char *extra_headers, const char *body)
{
    if (status == 204 || status == 304) {
        slot->response =
            ust_sprintf("HTTP/1.1 %d %s\r\n%s%s\r\n", status, reason_phrase(status),
                        extra_headers ? extra_headers : "",
                        slot->close_after ? "Connection: close\r\n" : "");
        slot->response_len = slot->response ? strlen(slot->response) : 0;
        slot->ready = 1;
        return;
    }
    size_t blen = strlen(body);
    slot->response =
        ust_sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                    "%s%s\r\n%s",
                    status, reason_phrase(status), content_type, blen,
                    extra_headers ? extra_headers : "",
                    slot->close_after ? "Connection: close\r\n" : "", body);
    slot->response_len = slot->response ? strlen(slot->response) : 0;
    slot->ready = 1;
}

static void set_json_error(ust__slot *slot, int status, const char *why)
{
    json_t *o = json_pack("{s:s}", "error", why);
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    set_response(slot, status, "application/json", NULL, body ? body : "{}");
    ust_free(body);
}

static void conn_close(ust__conn *c);
static void flush(ust__conn *c);
static int maybe_close_drained(ust__conn *c);
static void maybe_idle(ust__conn *c);
static void read_on_held(ust__server *s);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* ---- answers owed ------------------------------------------------------ */

/* slot now counts bytes as owed (0: written or dropped), for its
 * connection (NULL: gone) and the server. */
static void owe(ust__server *s, ust__conn *c, ust__slot *slot, size_t bytes)
{
    s->owed = s->owed - slot->owed + bytes;
    if (c != NULL)
        c->owed = c->owed - slot->owed + bytes;
    slot->owed = bytes;
}

static int owes_too_much(const ust__conn *c)
{
    const ust_config *cfg = c->srv->o->cfg;
    return c->owed >= cfg->limits.max_owed_bytes ||
           c->srv->owed >= cfg->limits.max_owed_bytes_total;
}

static void after_write(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    ust__conn *c = w->slot->conn;
    int close_after = w->slot->close_after || status < 0;
    if (c != NULL && status == 0)
        ust__metrics_answered(&c->srv->metrics, w->slot->started_ns, w->slot->route);
    if (c != NULL)
        owe(c->srv, c, w->slot, 0);
    ust_free(w->slot->response);
    ust_free(w->slot);
    ust_free(w);
    if (c == NULL)
        return;
    c->writes--;
    if (close_after)
        conn_close(c);
    else if (maybe_close_drained(c) == 0)
        maybe_idle(c);
    read_on_held(c->srv);
}

/* Writes every answer at the head of the queue that is ready. */
static void flush(ust__conn *c)
{
    while (c->head != NULL && c->head->ready && !c->closing) {
        ust__slot *slot = c->head;
        c->head = slot->next;
        if (c->head == NULL)
            c->tail = NULL;
        write_req *w = ust_calloc(1, sizeof(*w));
        if (w == NULL || slot->response == NULL) {
            owe(c->srv, c, slot, 0);
            ust_free(w);
            ust_free(slot->response);
            ust_free(slot);
            conn_close(c);
            return;
        }
        w->slot = slot;
        uv_buf_t buf = uv_buf_init(slot->response, (unsigned)slot->response_len);
        if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, after_write) != 0) {
            owe(c->srv, c, slot, 0);
            ust_free(slot->response);
            ust_free(slot);
            ust_free(w);
            conn_close(c);
            return;
        }
        c->writes++;
        if (slot->close_after) {
            uv_read_stop((uv_stream_t *)&c->tcp);
            c->reading = 0;
            return; /* nothing after this answer goes out */
        }
    }
}

static ust__slot *new_slot(ust__conn *c)
{
    ust__slot *slot = ust_calloc(1, sizeof(*slot));
    if (slot == NULL)
        return NULL;
    slot->conn = c;
    /* The answer to the request being read (see on_expect_continue). */
    slot->started_ns = c->started_ns;
    c->started_ns = 0;
    if (c->tail)
        c->tail->next = slot;
    else
        c->head = slot;
    c->tail = slot;
    return slot;
}

/* ---- connections ------------------------------------------------------- */

static void maybe_finish_stop(ust__server *s);

static void maybe_free(ust__conn *c)
{
    if (c->handles > 0)
        return;
    ust__server *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    ust__reqparse_clear(&c->rp);
    ust_free(c);
    maybe_finish_stop(s);
}

/* Once stopping and every connection is closed and every request it read
 * is with the writer: let the writer drain, the runner catch up (for a
 * bounded time: see follower.c), and close. */
static void maybe_finish_stop(ust__server *s)
{
    if (!s->stopping || s->deriver.owed > 0 || s->finished)
        return;
    /* Admin connections do not hold the stop back (a monitor polling
     * /readyz would keep it waiting); they close after their answer. */
    for (ust__conn *c = s->conns; c != NULL; c = c->next)
        if (!c->admin)
            return;
    s->finished = 1;
    uv_close((uv_handle_t *)&s->admin, NULL);
    for (ust__conn *c = s->conns; c != NULL; c = c->next)
        if (c->head == NULL)
            conn_close(c);
        else
            c->tail->close_after = 1;
    ust__writer_stop(&s->writer);
    ust__responder_stop(s->responder);
    s->responder = NULL;
    s->runner_left = ust__follower_stop(&s->follower);
    /* Closing the log checkpoints it, which goes best with no reader left:
     * after the runner (a runner left behind: see ust_serve). */
    if (!s->runner_left)
        ust__writer_close(&s->writer);
    ust__deriver_close(&s->deriver);
    uv_close((uv_handle_t *)&s->done_async, NULL);
    uv_close((uv_handle_t *)&s->stop_async, NULL);
}

static void on_handle_closed(uv_handle_t *h)
{
    ust__conn *c = h->data;
    c->handles--;
    maybe_free(c);
}

static void conn_close(ust__conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (c->admin)
        c->srv->n_admin--;
    else
        c->srv->n_conns--;
    if (c->held_back)
        c->srv->n_held_back--;
    c->held_back = 0;
    ust_free(c->held);
    c->held = NULL;
    /* Answers still owed by the writer are dropped when they come back (and
     * stop counting as owed then). */
    for (ust__slot *slot = c->head; slot != NULL;) {
        ust__slot *next = slot->next;
        if (slot->ready) {
            owe(c->srv, c, slot, 0);
            ust_free(slot->response);
            ust_free(slot);
        } else {
            slot->conn = NULL;
        }
        slot = next;
    }
    c->head = c->tail = NULL;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

/* A request that cannot be read to its end: answer, then close. */
static void refuse(ust__conn *c, int status, const char *why)
{
    ust__metrics_rejected(&c->srv->metrics, status);
    ust__slot *slot = new_slot(c);
    if (slot == NULL) {
        conn_close(c);
        return;
    }
    slot->close_after = 1;
    set_json_error(slot, status, why);
    uv_timer_stop(&c->timer);
    flush(c);
}

static void on_timeout(uv_timer_t *t)
{
    ust__conn *c = t->data;
    refuse(c, 408, "the request was not complete in time");
}

static void arm_timer(ust__conn *c)
{
    c->idle = 0;
    uv_timer_start(&c->timer, on_timeout,
                   (uint64_t)c->srv->o->cfg->limits.header_timeout_ms, 0);
}

static void on_idle(uv_timer_t *t)
{
    conn_close(t->data);
}

/* A keep-alive connection that owes nothing and reads no request holds a
 * descriptor for nothing: after idle_timeout_ms it is closed. */
static void maybe_idle(ust__conn *c)
{
    if (c->closing || c->peer_done || c->head != NULL || c->writes > 0 ||
        c->rp.in_message)
        return;
    c->idle = 1;
    uv_timer_start(&c->timer, on_idle, (uint64_t)c->srv->o->cfg->limits.idle_timeout_ms,
                   0);
}

/* Closes a half-closed connection once every answer it is owed is out;
 * nonzero when it did. */
static int maybe_close_drained(ust__conn *c)
{
    if (!c->peer_done || c->head != NULL || c->writes > 0)
        return 0;
    conn_close(c);
    return 1;
}

/* No memory for a connection. libuv has accepted the socket and keeps it
 * in the listener's accepted_fd until uv_accept takes it, and stops
 * accepting while it is there: closed unanswered, so the next one is read. */
static void shed(uv_stream_t *server)
{
    if (server->accepted_fd >= 0) {
        close(server->accepted_fd);
        server->accepted_fd = -1;
    }
}

/* ---- requests -------------------------------------------------------- */

static int on_message_begin(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    if (c->started_ns == 0) /* a request pipelined behind another, in one read */
        c->started_ns = uv_hrtime();
    arm_timer(c);
    return 0;
}

/* Queued with the answers, so it leaves after those owed before it, when
 * this read is parsed: the client waits for it to send the body. */
static int on_expect_continue(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ust__slot *slot = new_slot(c);
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

static void answer_plain(ust__conn *c, int status, const char *ct, const char *extra,
                         const char *body, int keep_alive)
{
    ust__slot *slot = new_slot(c);
    if (slot == NULL)
        return;
    slot->close_after = !keep_alive;
    set_response(slot, status, ct, extra, body);
}

/* The admin listener's three paths; nothing there is ever recorded. */
static void answer_admin(ust__conn *c, int keep_alive)
{
    ust__server *s = c->srv;
    char path[UST__MAX_TARGET + 1];
    ust_request_path(&c->rp.req, path, sizeof(path));
    const char *json = "application/json";
    if (strcmp(path, "/healthz") != 0 && strcmp(path, "/readyz") != 0 &&
        strcmp(path, "/metrics") != 0) {
        answer_plain(c, 404, json, NULL,
                     "{\"error\":\"the admin listener serves /healthz, /readyz and"
                     " /metrics\"}",
                     keep_alive);
    } else if (c->rp.parser.method != HTTP_GET) {
        answer_plain(c, 405, json, "Allow: GET\r\n", "{\"error\":\"use GET\"}",
                     keep_alive);
    } else if (strcmp(path, "/healthz") == 0) {
        int status;
        char *body = ust__health_render(&s->health, atomic_load(&s->metrics.last_seq),
                                        atomic_load(&s->metrics.runner_seq),
                                        s->o->cfg->health.max_lag_s, &status);
        answer_plain(c, status, json, NULL, body ? body : "{\"status\":\"degraded\"}",
                     keep_alive);
        ust_free(body);
    } else if (strcmp(path, "/readyz") == 0) {
        /* The loop runs once the log, the plugins and both listeners are up. */
        answer_plain(c, s->stopping ? 503 : 200, json, NULL,
                     s->stopping ? "{\"status\":\"stopping\"}"
                                 : "{\"status\":\"ready\"}",
                     keep_alive);
    } else {
        int64_t oldest = ust__health_oldest_undecided_us(
            &s->health, atomic_load(&s->metrics.runner_seq));
        int64_t now = ust_time_wall_us();
        ust__metrics_view v = {
            .cfg = s->o->cfg,
            .connections = s->n_conns,
            .owed_bytes = s->owed,
            .held_back = s->n_held_back,
            .lag_seconds =
                oldest != 0 && now > oldest ? (double)(now - oldest) / 1e6 : 0,
            .classes = s->following ? &s->classes : NULL,
        };
        char *text = ust__metrics_render(&s->metrics, &v);
        answer_plain(c, 200, "text/plain; version=0.0.4", NULL, text ? text : "",
                     keep_alive);
        ust_free(text);
    }
}

/* The last stage's sink: jobs back to the loop to be answered, and the
 * runner told what is durable (and, with a responder, decided). */
static void jobs_done(void *ctx, ust__job *first, ust__job *last, int64_t through)
{
    ust__server *s = ctx;
    ust__jobq_put(&s->done, first, last);
    uv_async_send(&s->done_async);
    if (through > 0 && s->following)
        ust__follower_notify(&s->follower, through);
}

/* --respond legacy: the writer's sink. The responder is started before the
 * ports are bound, so before any job is committed. */
static void to_responder(void *ctx, ust__job *first, ust__job *last, int64_t through)
{
    (void)through; /* the responder names what it decided */
    ust__responder_put(((ust__server *)ctx)->responder, first, last);
}

/* The deriver's: a batch was handed to the writer. */
static void derived(void *ctx)
{
    maybe_finish_stop(ctx);
}

/* The deriver's sinks. */
static void to_writer(void *ctx, ust__job *first, ust__job *last, int64_t through)
{
    (void)through;
    ust__writer_put(&((ust__server *)ctx)->writer, first, last);
}

static void sampled_out(void *ctx, ust__job *first, ust__job *last, int64_t through)
{
    jobs_done(ctx, first, last, through);
}

static int on_message_complete(ust__reqparse *rp)
{
    ust__conn *c = rp->data;
    ust__server *s = c->srv;
    http_parser *p = &rp->parser;
    uv_timer_stop(&c->timer);
    int keep_alive = http_should_keep_alive(p) && !s->stopping && !c->peer_done;
    if (c->admin) {
        answer_admin(c, keep_alive);
        ust_request_clear(&rp->req);
        flush(c);
        return 0;
    }
    const ust_route *route = ust_config_route(s->o->cfg, rp->req.target);
    if (route == NULL || p->method != HTTP_POST) {
        ust__metrics_rejected(&s->metrics, route ? 405 : 404);
        ust__slot *slot = new_slot(c);
        if (slot != NULL) {
            slot->close_after = !keep_alive;
            slot->route = route ? (size_t)(route - s->o->cfg->routes) + 1 : 0;
            if (route == NULL)
                set_json_error(slot, 404, "no route for this path");
            else
                set_response(slot, 405, "application/json", "Allow: POST\r\n",
                             "{\"error\":\"use POST\"}");
        }
        ust_request_clear(&rp->req);
        flush(c);
        return 0;
    }
    ust__job *job = ust_calloc(1, sizeof(*job));
    if (job == NULL ||
        ust__reqparse_take(rp, c->remote, ust_time_wall_us(), &job->req) != 0 ||
        (job->slot = new_slot(c)) == NULL) {
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
     * can be. Owing too much, the connection is read no further for now
     * (a client pipelining requests it does not read the answers to). */
    owe(s, c, slot, s->answer_bound);
    if (owes_too_much(c))
        ust__reqparse_pause(rp);
    ust__deriver_add(&s->deriver, job);
    return 0;
}

static const ust__reqparse_ops request_ops = {
    .begin = on_message_begin,
    .expect_continue = on_expect_continue,
    .complete = on_message_complete,
};

/* Every read lands in the loop's one buffer: the parser copies what it
 * keeps before the read callback returns, and the loop reads one socket at
 * a time, so no read needs a buffer of its own. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    ust__conn *c = h->data;
    buf->base = c->srv->read_buf;
    buf->len = sizeof(c->srv->read_buf);
}

/* A request left c owing too much (on_message_complete paused the
 * parser): c is not read, and the len bytes read past that request wait,
 * until it and the server owe less (read_on_held). */
static void hold_back(ust__conn *c, const char *rest, size_t len)
{
    if (len > 0 && (c->held = ust_malloc(len)) == NULL) {
        conn_close(c); /* its requests are recorded all the same */
        return;
    }
    if (len > 0)
        memcpy(c->held, rest, len);
    c->held_len = len;
    c->held_back = 1;
    c->srv->n_held_back++;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

/* n bytes of c's requests, to its parser. */
static void parse(ust__conn *c, const char *buf, size_t n)
{
    const char *why = NULL;
    if (c->started_ns == 0)
        c->started_ns = uv_hrtime();
    int status = ust__reqparse_feed(&c->rp, buf, n, &why);
    if (status != 0) {
        refuse(c, status, why);
        return;
    }
    if (c->rp.paused)
        hold_back(c, buf + c->rp.used, n - c->rp.used);
    if (!c->closing) {
        flush(c);
        maybe_idle(c);
    }
}

/* Every connection held back that, with the server, owes little enough
 * now is read again: first what it had read past the pause (which may
 * hold it back again), then its socket. Not while stopping: a connection
 * then closes once its answers are out. */
static void read_on_held(ust__server *s)
{
    for (ust__conn *c = s->conns; c != NULL && s->n_held_back > 0; c = c->next) {
        if (!c->held_back || c->closing || s->stopping || owes_too_much(c))
            continue;
        c->held_back = 0;
        s->n_held_back--;
        char *held = c->held;
        size_t len = c->held_len;
        c->held = NULL;
        c->held_len = 0;
        if (len > 0)
            parse(c, held, len);
        ust_free(held);
        if (!c->held_back && !c->closing && !c->peer_done && !c->reading) {
            uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
            c->reading = 1;
        }
    }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    ust__conn *c = stream->data;
    if (nread > 0 && !c->closing) {
        parse(c, buf->base, (size_t)nread);
    } else if (nread < 0 && !c->closing) {
        /* A client that half-closes after its requests waits for their
         * answers (without one it retries, and the retry is a duplicate):
         * they go out, then the connection closes. A reset has no one to
         * answer; its recorded requests stay recorded all the same. */
        uv_read_stop(stream);
        c->reading = 0;
        c->peer_done = 1;
        if (nread != UV_EOF)
            conn_close(c);
        else
            maybe_close_drained(c);
    }
}

/* The admin listener's own cap, so that probes are served when the public
 * side is at max_connections, and cannot starve it either. */
#define ADMIN_MAX_CONNS 64

/* At the cap, an idle keep-alive connection makes room for a new one (its
 * client reconnects when it has something to send); one in the middle of
 * a request or owed an answer is never closed for it, nor one that has sent
 * nothing yet: its request may be unread in the socket (header_timeout_ms
 * bounds those). */
static int close_an_idle(ust__server *s)
{
    ust__conn *oldest = NULL; /* the list is newest first */
    for (ust__conn *c = s->conns; c != NULL; c = c->next)
        if (c->idle && !c->closing && !c->admin)
            oldest = c;
    if (oldest != NULL)
        conn_close(oldest);
    return oldest != NULL;
}

static void on_connection(uv_stream_t *server, int status)
{
    ust__server *s = server->data;
    int admin = server == (uv_stream_t *)&s->admin;
    /* While stopping, the admin listener still answers: /readyz says so. */
    if (status < 0 || (s->stopping && !admin))
        return;
    ust__conn *c = ust_calloc(1, sizeof(*c));
    if (c == NULL) {
        shed(server);
        return;
    }
    c->srv = s;
    c->admin = admin;
    if (admin)
        s->n_admin++;
    else
        s->n_conns++;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->handles = 2;
    c->tcp.data = c->timer.data = c;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    char host[48] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&addr, &len) == 0) {
        if (addr.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
        } else {
            uv_ip6_name((struct sockaddr_in6 *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
        }
    }
    snprintf(c->remote, sizeof(c->remote), "%s:%d", host, port);
    ust__reqparse_init(&c->rp, s->o->cfg, &request_ops, c);
    uv_tcp_nodelay(&c->tcp, 1);
    if (admin && s->n_admin > ADMIN_MAX_CONNS) {
        refuse(c, 503, "too many admin connections; retry later");
        return;
    }
    if (!admin && s->n_conns > s->max_conns && !close_an_idle(s)) {
        /* Over the cap, and every connection busy: this one is told so and
         * closed; those open go on. */
        refuse(c, 503, "too many connections; retry later");
        return;
    }
    arm_timer(c); /* a client that connects and sends nothing is timed out too */
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    c->reading = 1;
}

/* ---- results from the writer ------------------------------------------ */

/* The legacy's answer, exactly: its status, its headers, its body. */
static void answer_with_decision(ust__slot *slot, const ust_decision *d)
{
    char *headers = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&headers, &len);
    const char *k;
    json_t *v;
    json_object_foreach(d->headers, k, v)
    {
        if (f != NULL)
            fprintf(f, "%s: %s\r\n", k, json_string_value(v));
    }
    if (f != NULL)
        fclose(f);
    set_response(slot, d->http_status, "application/json", headers,
                 d->body ? d->body : "");
    free(headers);
}

/* --respond upstream: the service's answer as it came (its status, its
 * headers in order but the hop-by-hop ones, its body byte for byte) in the
 * recorder's own framing; 502 or 504 saying why when none came. */
static void answer_as_it_came(ust__slot *slot, const ust_http_result *res)
{
    if (res->failure != 0) {
        int status;
        char *body = ust__upstream_failure_body(res, &status);
        set_response(slot, status, "application/json", NULL,
                     body ? body : "{\"error\":\"upstream\"}");
        ust_free(body);
        return;
    }
    int bodiless = res->status == 204 || res->status == 304;
    char *head = NULL;
    size_t head_len = 0;
    FILE *f = open_memstream(&head, &head_len);
    if (f == NULL)
        return; /* no response: flush closes the connection */
    fprintf(f, "HTTP/1.1 %d %s\r\n", res->status, reason_phrase(res->status));
    for (size_t i = 0; i < res->n_headers; i++)
        if (!ust_http_hop_by_hop(res->headers, res->n_headers, res->headers[i].name))
            fprintf(f, "%s: %s\r\n", res->headers[i].name, res->headers[i].value);
    if (!bodiless)
        fprintf(f, "Content-Length: %zu\r\n", res->body_len);
    fprintf(f, "%s\r\n", slot->close_after ? "Connection: close\r\n" : "");
    size_t body_len = bodiless ? 0 : res->body_len;
    if (fclose(f) == 0 &&
        (slot->response = ust_malloc(head_len + body_len + 1)) != NULL) {
        memcpy(slot->response, head, head_len);
        if (body_len > 0)
            memcpy(slot->response + head_len, res->body, body_len);
        slot->response_len = head_len + body_len;
    }
    free(head);
    slot->ready = 1;
}

static void answer_job(ust__job *job)
{
    ust__slot *slot = job->slot;
    if (job->failure != NULL && job->seq > 0) {
        set_json_error(slot, 503, job->failure); /* stored, but not decided */
    } else if (job->failure != NULL) {
        char *why = ust_sprintf("the event log cannot be written: %s", job->failure);
        set_json_error(slot, 503, why ? why : "the event log cannot be written");
        ust_free(why);
    } else if (job->sig == UST_SIG_INVALID || job->sig == UST_SIG_MISSING ||
               job->sig == UST_SIG_EXPIRED) {
        /* Recorded as evidence; never decided. */
        char body[160];
        snprintf(body, sizeof(body),
                 "{\"error\":\"signature %s\",\"recorded\":true,\"seq\":%lld}",
                 ust_sig_status_name(job->sig), (long long)job->seq);
        set_response(slot, 401, "application/json", NULL, body);
    } else if (job->sampled_out) {
        set_response(slot, 202, "application/json", NULL,
                     "{\"recorded\":false,\"sampled_out\":true}");
    } else if (job->upstream != NULL) {
        answer_as_it_came(slot, job->upstream);
    } else if (job->answer != NULL) {
        answer_with_decision(slot, job->answer);
    } else {
        char body[96];
        snprintf(body, sizeof(body), "{\"recorded\":true,\"seq\":%lld}",
                 (long long)job->seq);
        set_response(slot, 202, "application/json", NULL, body);
    }
}

static void on_done(uv_async_t *a)
{
    ust__server *s = a->data;
    ust__job *j, *last;
    size_t n;
    ust__jobq_take(&s->done, 0, 0, &j, &last, &n);
    while (j != NULL) {
        ust__job *next = j->next;
        ust__slot *slot = j->slot;
        if (slot->conn != NULL) {
            answer_job(j);
            /* Its size is known now: it replaces the bound it counted. */
            owe(s, slot->conn, slot, slot->response_len);
            flush(slot->conn);
        } else {
            owe(s, NULL, slot, 0);
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
    read_on_held(s);
}

/* ---- start and stop ---------------------------------------------------- */

static void on_listener_closed(uv_handle_t *h)
{
    (void)h;
}

static void begin_stop(ust__server *s)
{
    s->stopping = 1;
    ust__notify_stopping(s->notify);
    s->notify = NULL;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    /* Idle connections close now; busy ones once their answers are out. */
    for (ust__conn *c = s->conns; c != NULL;) {
        ust__conn *next = c->next;
        if (c->head == NULL)
            conn_close(c);
        else
            c->tail->close_after = 1;
        c = next;
    }
    maybe_finish_stop(s);
}

static void on_stop(uv_async_t *a)
{
    ust__server *s = a->data;
    if (!s->stopping)
        begin_stop(s);
}

void ust_serve_stop(ust_server *server)
{
    /* uv_async_send is async-signal-safe; sends before the loop runs the
     * callback coalesce into one. */
    uv_async_send(&server->stop_async);
}

/* what names the setting in messages: "listen" or "admin_listen". */
static int parse_listen(const char *what, const char *listen,
                        struct sockaddr_storage *addr, char **err)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": expected HOST:PORT", what, listen);
    char host[64];
    size_t n = (size_t)(colon - listen);
    if (n == 0 || n >= sizeof(host))
        return ust_errf(err, UST_EINVAL, "%s \"%s\": expected HOST:PORT", what, listen);
    memcpy(host, listen, n);
    host[n] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": bad port", what, listen);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) != 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) != 0)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": bad address", what, listen);
    return 0;
}

static int addr_port(const struct sockaddr_storage *a)
{
    return a->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)a)->sin6_port)
                                    : ntohs(((const struct sockaddr_in *)a)->sin_port);
}

/* The admin address: as configured, or else loopback on the listen port
 * + 1 (a free one when listen takes a free one), so that it is never
 * reachable from where the callbacks come unless someone says so. */
static int admin_address(const ust_serve_opts *o, const struct sockaddr_storage *listen,
                         struct sockaddr_storage *addr, char **err)
{
    if (o->admin_listen != NULL)
        return parse_listen("admin_listen", o->admin_listen, addr, err);
    int port = addr_port(listen);
    if (port == 65535)
        return ust_errf(err, UST_EINVAL,
                        "listen \"%s\": the admin listener takes the next port by"
                        " default, and there is none: set \"admin_listen\" or"
                        " --admin-listen",
                        o->listen);
    return uv_ip4_addr("127.0.0.1", port ? port + 1 : 0, (struct sockaddr_in *)addr) ==
                   0
               ? 0
               : ust_errf(err, UST_EINVAL, "cannot make the admin address");
}

static int listen_on(uv_tcp_t *tcp, const struct sockaddr_storage *addr,
                     const char *label, char **err)
{
    int uvrc = uv_tcp_bind(tcp, (const struct sockaddr *)addr, 0);
    if (uvrc == 0)
        uvrc = uv_listen((uv_stream_t *)tcp, 1024, on_connection);
    if (uvrc == 0)
        return 0;
    char host[64] = "?";
    if (addr->ss_family == AF_INET6)
        uv_ip6_name((const struct sockaddr_in6 *)addr, host, sizeof(host));
    else
        uv_ip4_name((const struct sockaddr_in *)addr, host, sizeof(host));
    return ust_errf(err, UST_EIO, "cannot listen on %s:%d (%s): %s", host,
                    addr_port(addr), label, uv_strerror(uvrc));
}

/* "HOST:PORT" the socket is bound to. */
static void bound_name(uv_tcp_t *tcp, char *out, size_t cap)
{
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    char host[64] = "?";
    memset(&bound, 0, sizeof(bound));
    uv_tcp_getsockname(tcp, (struct sockaddr *)&bound, &len);
    if (bound.ss_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)&bound, host, sizeof(host));
    else if (bound.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&bound, host, sizeof(host));
    snprintf(out, cap, "%s:%d", host, addr_port(&bound));
}

void ust_serve_bound(ust_server *server, int admin, char *out, size_t cap)
{
    bound_name(admin ? &server->admin : &server->listener, out, cap);
}

/* Every connection holds a descriptor: the connection cap is kept below
 * what the soft limit leaves after the log, the databases and the plugins'
 * pipes. (Raising the limit is the process's business: the CLI does.) */
static size_t connection_cap(size_t want)
{
    const rlim_t reserved = 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want + reserved)
        return want;
    return rl.rlim_cur > 2 * reserved ? rl.rlim_cur - reserved : rl.rlim_cur / 2;
}

/* The databases a start may create, each noted when it was not there
 * before: a start that fails removes those it made, with their side files,
 * and never one that was there (docs/running.md). Its locks are held (the
 * caller's), so no other serve can have opened them since. */
typedef struct made_by_start {
    const char *log;
    const char *run;
    char *answers;
} made_by_start;

static const char *if_absent(const char *path)
{
    return path != NULL && access(path, F_OK) != 0 ? path : NULL;
}

static int note_absent(const ust_serve_opts *o, made_by_start *m)
{
    m->log = if_absent(o->log_path);
    m->run = if_absent(o->run_path);
    m->answers = NULL;
    if (o->respond_legacy && o->run_path != NULL) {
        char *answers = ust_answers_path(o->run_path);
        if (answers == NULL)
            return UST_ENOMEM;
        if (if_absent(answers) != NULL)
            m->answers = answers;
        else
            ust_free(answers);
    }
    return 0;
}

/* After everything that had them open was closed. */
static void remove_made(made_by_start *m)
{
    const char *paths[] = {m->answers, m->run, m->log};
    for (size_t i = 0; i < UST_ARRAY_SIZE(paths); i++)
        if (paths[i] != NULL)
            ust_db_remove(paths[i]);
    ust_free(m->answers);
    m->answers = NULL;
}

/* The runner left in a decide at the stop: like a kill at this moment,
 * which the run survives: its transaction holds decisions, state and
 * cursor together, and an uncommitted one is discarded when the run
 * database is next opened. The plugins' child processes die with the
 * process (see child.c). The writer is done, so the log is closed as on any
 * stop (its head recorded, the WAL checkpointed), but the runner's read of
 * the log may hold the checkpoint back: then the -wal must stay beside the
 * .db, and this says so. */
static void leave_runner(ust__server *s)
{
    ust__say(&s->log, UST_LOG_WARN,
             "runner: still in a decide after %d s more: exiting without it; the next"
             " start resumes after seq %lld",
             UST__STOP_GRACE_MS / 1000, (long long)atomic_load(&s->metrics.runner_seq));
    if (ust__writer_close(&s->writer) != 0)
        ust__say(&s->log, UST_LOG_WARN,
                 "%s-wal still holds events that %s does not: keep the two files"
                 " together (the next start takes the -wal in)",
                 s->o->log_path, s->o->log_path);
}

static int serve(ust__server *s, char **err)
{
    const ust_serve_opts *o = s->o;
    ust__metrics_init(&s->metrics);
    s->max_conns = connection_cap(o->cfg->limits.max_connections);
    /* The largest answer each mode gives, with room for its head: the
     * service's (the client refuses a longer body), the legacy's decision,
     * or the recorder's own few bytes. */
    s->answer_bound = (o->respond_upstream ? UST_HTTP_MAX_BODY
                       : o->respond_legacy ? UST_PLUGIN_MAX_BODY
                                           : 0) +
                      UST__MAX_HEADER_BYTES;
    s->loop = ust_malloc(sizeof(uv_loop_t));
    struct sockaddr_storage addr, admin;
    memset(&addr, 0, sizeof(addr));
    memset(&admin, 0, sizeof(admin));
    int rc = s->loop ? parse_listen("listen", o->listen, &addr, err) : UST_ENOMEM;
    if (rc == 0)
        rc = admin_address(o, &addr, &admin, err);
    if (rc == 0 && uv_loop_init(s->loop) != 0)
        rc = ust_errf(err, UST_EIO, "cannot start the event loop");
    if (rc == 0 && ust__jobq_init(&s->done) != 0) {
        uv_loop_close(s->loop);
        rc = ust_errf(err, UST_ENOMEM, "cannot make the answers' queue");
    }
    s->deriver = (ust__deriver){.loop = s->loop,
                                .metrics = &s->metrics,
                                .store = {to_writer, s},
                                .skip = {sampled_out, s},
                                .drained = derived,
                                .ctx = s,
                                .keep_sent = o->respond_upstream};
    if (rc == 0 && ust__deriver_init(&s->deriver) != 0) {
        ust__jobq_destroy(&s->done);
        uv_loop_close(s->loop);
        rc = ust_errf(err, UST_ENOMEM, "cannot make the deriver's lock");
    }
    if (rc != 0) {
        ust_free(s->loop);
        return rc;
    }
    ust__health_init(&s->health, o->run_path != NULL);
    ust__class_counts_init(&s->classes);
    /* Both listeners are made now, so that an early failure closes them
     * alike; they are bound only once everything that decides is up. */
    uv_tcp_init(s->loop, &s->listener);
    uv_tcp_init(s->loop, &s->admin);
    s->listener.data = s->admin.data = s;
    const char *respond = o->respond_upstream ? "upstream" : "legacy";
    for (size_t i = 0; rc == 0 && o->respond_legacy && i < o->cfg->n_routes; i++)
        if (o->cfg->routes[i].sample_bp < 10000)
            rc = ust_errf(err, UST_EINVAL,
                          "--respond %s answers every request with the legacy's"
                          " decision, and routes[%zu].sample would leave some"
                          " undecided: remove the sample from %s",
                          respond, i, o->cfg->file);
    /* The writer hands on to the responder with --respond legacy, and the
     * last of them to the loop. */
    ust__sink to_loop = {jobs_done, s};
    s->writer =
        (ust__writer){.cfg = o->cfg,
                      .log_path = o->log_path,
                      .out = o->respond_legacy ? (ust__sink){to_responder, s} : to_loop,
                      .metrics = &s->metrics,
                      .health = &s->health,
                      .decided = o->run_path ? &s->follower.decided : NULL,
                      .log = s->log};
    s->responder_opts = (ust__responder_opts){.cfg = o->cfg,
                                              .log_path = o->log_path,
                                              .run_path = o->run_path,
                                              .legacy_path = o->legacy_path,
                                              .out = to_loop,
                                              .metrics = &s->metrics,
                                              .health = &s->health,
                                              .upstream = o->respond_upstream,
                                              .log = s->log};
    s->follower.runner_opts = (ust_replay_opts){.cfg = o->cfg,
                                                .log_path = o->log_path,
                                                .run_path = o->run_path,
                                                .legacy_path = o->legacy_path,
                                                .candidate_path = o->candidate_path,
                                                .divergences = o->divergences};
    s->follower.respond_legacy = o->respond_legacy;
    s->follower.metrics = &s->metrics;
    s->follower.health = &s->health;
    s->follower.classes = &s->classes;
    s->follower.log = s->log;
    /* The writer first: it creates the log the others read. Then both
     * plugins, started and past their hello, before the ports are bound: a
     * server that cannot decide never accepts a connection. */
    made_by_start made = {0};
    if (rc == 0)
        rc = note_absent(o, &made);
    if (rc == 0)
        rc = ust__writer_start(&s->writer, err);
    if (rc == 0 && o->respond_legacy) {
        rc = o->run_path
                 ? ust__responder_start(&s->responder_opts, &s->responder, err)
                 : ust_errf(err, UST_EINVAL,
                            "--respond %s needs a run database (--run)", respond);
    }
    if (rc == 0 && o->run_path != NULL) {
        rc = ust__follower_open(&s->follower, err);
        s->following = rc == 0;
    }
    if (rc == 0)
        rc = listen_on(&s->listener, &addr, "listen", err);
    if (rc == 0)
        rc =
            listen_on(&s->admin, &admin,
                      o->admin_listen ? "the admin listener, admin_listen"
                                      : "the admin listener: by default loopback on the"
                                        " listen port + 1; set admin_listen",
                      err);
    if (rc == 0 && s->following)
        rc = ust__follower_start(&s->follower, err);
    if (rc != 0) {
        ust__follower_stop(&s->follower);
        ust__writer_stop(&s->writer);
        ust__responder_stop(s->responder);
        ust__writer_close(&s->writer);
        uv_close((uv_handle_t *)&s->listener, NULL);
        uv_close((uv_handle_t *)&s->admin, NULL);
        ust__deriver_close(&s->deriver);
        uv_run(s->loop, UV_RUN_DEFAULT);
        uv_loop_close(s->loop);
        ust__jobq_destroy(&s->done);
        ust__deriver_destroy(&s->deriver);
        ust__class_counts_destroy(&s->classes);
        ust__health_destroy(&s->health);
        ust_free(s->loop);
        remove_made(&made);
        return rc;
    }
    ust_free(made.answers); /* they are the run's now */
    uv_async_init(s->loop, &s->done_async, on_done);
    s->done_async.data = s;
    uv_async_init(s->loop, &s->stop_async, on_stop);
    s->stop_async.data = s;
    if (o->started != NULL)
        o->started(o->started_ctx, s);
    s->notify = ust__notify_ready(s->loop, o->listen);
    uv_run(s->loop, UV_RUN_DEFAULT);
    on_done(&s->done_async); /* anything the writer finished last */
    /* Before the loop closes: a stop sent after this would write to its
     * closed descriptor. */
    if (o->started != NULL)
        o->started(o->started_ctx, NULL);
    if (s->runner_left) {
        leave_runner(s);
        return UST_SERVE_RUNNER_LEFT; /* its thread uses s: nothing is freed */
    }
    uv_loop_close(s->loop);
    ust__jobq_destroy(&s->done);
    ust__deriver_destroy(&s->deriver);
    ust__class_counts_destroy(&s->classes);
    ust__health_destroy(&s->health);
    ust_free(s->loop);
    return 0;
}

int ust_serve(const ust_serve_opts *o, char **err)
{
    ust__server *s = ust_calloc(1, sizeof(*s));
    if (s == NULL)
        return UST_ENOMEM;
    s->o = o;
    s->log = (ust__logger){o->log, o->log_ctx};
    /* A write to a socket the peer closed raises SIGPIPE at the writing
     * thread (libuv writes with write(2)): blocked on this thread, and so on
     * the threads it starts, so the process's disposition does not matter. */
    sigset_t old;
    ust_sigpipe_block(&old);
    int rc = serve(s, err);
    ust_sigpipe_restore(&old);
    if (rc != UST_SERVE_RUNNER_LEFT)
        ust_free(s);
    return rc;
}
