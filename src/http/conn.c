/* The recorder's connections, on the loop: each one's answers written in
 * the order its requests arrived (pipelining), its reads held back while it
 * or the server owes too many answer bytes, its timers (a request not
 * complete in time, a keep-alive connection idle), and the caps on how many
 * are open. */
#include "http/server.h"

#include <understudy/alloc.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct write_req {
    uv_write_t req;
    ust__slot *slot;
} write_req;

static int maybe_close_drained(ust__conn *c);
static void maybe_idle(ust__conn *c);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* ---- answers owed and written ------------------------------------------ */

/* The limits' rows (src/event/config.c) say it to the user, in numbers. */
_Static_assert(UST__ANSWER_OVERHEAD == 384, "config.c's limits rows say 384 bytes");

void ust__conn_owe(ust__server *s, ust__conn *c, ust__slot *slot, size_t bytes)
{
    size_t counted = bytes > 0 ? bytes + UST__ANSWER_OVERHEAD : 0;
    s->n_owed = s->n_owed - (slot->owed > 0) + (counted > 0);
    s->owed = s->owed - slot->owed + counted;
    if (c != NULL)
        c->owed = c->owed - slot->owed + counted;
    slot->owed = counted;
}

int ust__conn_owes_too_much(const ust__conn *c)
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
        ust__conn_owe(c->srv, c, w->slot, 0);
    ust_free(w->slot->response);
    ust_free(w->slot);
    ust_free(w);
    if (c == NULL)
        return;
    c->writes--;
    if (close_after)
        ust__conn_close(c);
    else if (maybe_close_drained(c) == 0)
        maybe_idle(c);
    ust__conn_read_on_held(c->srv);
}

/* Writes every answer at the head of the queue that is ready. */
void ust__conn_flush(ust__conn *c)
{
    while (c->head != NULL && c->head->ready && !c->closing) {
        ust__slot *slot = c->head;
        c->head = slot->next;
        if (c->head == NULL)
            c->tail = NULL;
        write_req *w = ust_calloc(1, sizeof(*w));
        if (w != NULL)
            w->slot = slot;
        uv_buf_t buf = uv_buf_init(slot->response, (unsigned)slot->response_len);
        if (w == NULL || slot->response == NULL ||
            uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, after_write) != 0) {
            ust__conn_owe(c->srv, c, slot, 0);
            ust_free(w);
            ust_free(slot->response);
            ust_free(slot);
            ust__conn_close(c);
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

ust__slot *ust__conn_new_slot(ust__conn *c)
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
    ust__server_maybe_finish_stop(s);
}

static void on_handle_closed(uv_handle_t *h)
{
    ust__conn *c = h->data;
    c->handles--;
    maybe_free(c);
}

void ust__conn_close(ust__conn *c)
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
            ust__conn_owe(c->srv, c, slot, 0);
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
    ust__slot *slot = ust__conn_new_slot(c);
    if (slot == NULL) {
        ust__conn_close(c);
        return;
    }
    slot->close_after = 1;
    ust__reply_error(slot, status, why);
    uv_timer_stop(&c->timer);
    ust__conn_flush(c);
}

static void on_timeout(uv_timer_t *t)
{
    ust__conn *c = t->data;
    refuse(c, 408, "the request was not complete in time");
}

void ust__conn_arm_timer(ust__conn *c)
{
    c->idle = 0;
    uv_timer_start(&c->timer, on_timeout,
                   (uint64_t)c->srv->o->cfg->limits.header_timeout_ms, 0);
}

static void on_idle(uv_timer_t *t)
{
    ust__conn_close(t->data);
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
    ust__conn_close(c);
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

/* ---- reads ------------------------------------------------------------- */

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
 * until it and the server owe less (ust__conn_read_on_held). */
static void hold_back(ust__conn *c, const char *rest, size_t len)
{
    if (len > 0 && (c->held = ust_malloc(len)) == NULL) {
        ust__conn_close(c); /* its requests are recorded all the same */
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
        ust__conn_flush(c);
        maybe_idle(c);
    }
}

/* Every connection held back that, with the server, owes little enough
 * now is read again: first what it had read past the pause (which may
 * hold it back again), then its socket. Not while stopping: a connection
 * then closes once its answers are out. */
void ust__conn_read_on_held(ust__server *s)
{
    for (ust__conn *c = s->conns; c != NULL && s->n_held_back > 0; c = c->next) {
        if (!c->held_back || c->closing || s->stopping || ust__conn_owes_too_much(c))
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
            ust__conn_close(c);
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
        ust__conn_close(oldest);
    return oldest != NULL;
}

void ust__conn_accept(uv_stream_t *server, int status)
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
        ust__conn_close(c);
        return;
    }
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    memset(&addr, 0, sizeof(addr)); /* not read: "?:0" */
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&addr, &len);
    ust__listen_addr_name(&addr, c->remote, sizeof(c->remote));
    ust__reqparse_init(&c->rp, s->o->cfg, &ust__request_ops, c);
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
    /* A client that connects and sends nothing is timed out too. */
    ust__conn_arm_timer(c);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    c->reading = 1;
}
