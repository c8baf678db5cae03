/* The recorder's HTTP front, shared by the files that make it up: its
 * state (the server, its connections, each request's answer slot) and the
 * functions one file of it calls in another. The files, one concept each:
 *   server.c    start and stop: wiring the stages, the stop sequence
 *   listen.c    the listen and admin addresses, and binding them
 *   conn.c      connections: reads, flow control, answers written in order
 *   pipeline.c  a request from its parse to the deriver, and back answered
 *   reply.c     each answer's bytes: status, headers, body
 *   admin.c     the admin listener's /healthz, /readyz and /metrics
 * Everything here runs on the loop's thread. */
#ifndef UST_HTTP_SERVER_H
#define UST_HTTP_SERVER_H

#include "http/deriver.h"
#include "http/follower.h"
#include "http/health.h"
#include "http/metrics.h"
#include "http/notify.h"
#include "http/queue.h"
#include "http/request_parse.h"
#include "http/responder.h"
#include "http/say.h"
#include "http/writer.h"

#include <understudy/serve.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

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
    size_t owed; /* bytes counted as owed for it, overhead included (ust__conn_owe()) */
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
    /* Answer bytes owed to clients and not yet written (each answer's
     * UST__ANSWER_OVERHEAD included), the answers, and the connections not
     * read meanwhile (limits.max_owed_bytes*). */
    size_t owed, n_owed, n_held_back;
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

/* ---- conn.c ---- */

/* What an answer owed takes in serve beyond its own bytes: its slot (64
 * bytes), the write request queued on the socket (200), the allocator's
 * headers and rounding of those and of the answer, and its share of the
 * heap's fragmentation. Counted with its bytes, so that limits.max_owed_bytes*
 * bound the memory the answers hold, not only their bytes: a client
 * pipelining requests for ~100-byte answers and reading none grew serve by
 * ~4x the limit without it. Measured so (test_tiny_pipelined_answers_count_
 * their_memory, `--respond ack`, 131,000 answers of 127 bytes owed): serve
 * grew 464 bytes an answer, 337 beyond its bytes; with room. */
#define UST__ANSWER_OVERHEAD 384

/* The listeners' connection callback: accepts, or refuses at the caps. */
void ust__conn_accept(uv_stream_t *server, int status);
/* Closes c (once); its answers still with the writer are dropped on return. */
void ust__conn_close(ust__conn *c);
/* Writes every answer at the head of c's queue that is ready. */
void ust__conn_flush(ust__conn *c);
/* The next answer slot of c, in arrival order; NULL when out of memory. */
ust__slot *ust__conn_new_slot(ust__conn *c);
/* slot is now owed an answer of bytes (0: written or dropped): counted,
 * with UST__ANSWER_OVERHEAD, for its connection (NULL: gone) and the
 * server. */
void ust__conn_owe(ust__server *s, ust__conn *c, ust__slot *slot, size_t bytes);
/* Whether c, or the server, owes more than limits.max_owed_bytes* allow. */
int ust__conn_owes_too_much(const ust__conn *c);
/* Times the request being read out after limits.header_timeout_ms. */
void ust__conn_arm_timer(ust__conn *c);
/* Reads again every connection held back that now owes little enough. */
void ust__conn_read_on_held(ust__server *s);

/* ---- pipeline.c ---- */

/* The parser's callbacks for a public or admin connection. */
extern const ust__reqparse_ops ust__request_ops;
/* done_async's callback: the finished jobs answered on their connections. */
void ust__pipeline_done(uv_async_t *a);

/* ---- reply.c ---- */

/* slot's answer: status, type, extra header lines ("Name: v\r\n"...,
 * or NULL) and body; none for a 204 or 304. */
void ust__reply_set(ust__slot *slot, int status, const char *content_type,
                    const char *extra_headers, const char *body);
/* slot's answer: {"error": why} with status. */
void ust__reply_error(ust__slot *slot, int status, const char *why);
/* The answer to a job back from the writer (or responder) in its slot. */
void ust__reply_job(ust__job *job);

/* ---- admin.c ---- */

/* Answers the admin request c has just read. */
void ust__admin_answer(ust__conn *c, int keep_alive);

/* ---- listen.c ---- */

/* "HOST:PORT" into addr; what names the setting in messages ("listen" or
 * "admin_listen"). */
int ust__listen_parse(const char *what, const char *listen,
                      struct sockaddr_storage *addr, char **err);
/* The admin address: admin_listen, or loopback on listen's port + 1. */
int ust__listen_admin_address(const ust_serve_opts *o,
                              const struct sockaddr_storage *listen,
                              struct sockaddr_storage *addr, char **err);
/* "HOST:PORT" of a ("?" for a host neither IPv4 nor IPv6). */
void ust__listen_addr_name(const struct sockaddr_storage *a, char *out, size_t cap);
/* Binds tcp to addr and listens with ust__conn_accept; label names the
 * setting in the error. */
int ust__listen_on(uv_tcp_t *tcp, const struct sockaddr_storage *addr,
                   const char *label, char **err);

/* ---- server.c ---- */

/* Runs the stop sequence once stopping and nothing is left to wait for. */
void ust__server_maybe_finish_stop(ust__server *s);

#endif
