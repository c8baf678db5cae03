#ifndef UST_HTTP_INTERNAL_H
#define UST_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include <understudy/histogram.h>
#include <understudy/host.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/serve.h>

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
} ust__slot;

/* A recorded request on its way through the writer thread. */
typedef struct ust__job {
    struct ust__job *next;
    uv_work_t work;     /* derivation on libuv's thread pool */
    uint64_t ticket;    /* arrival order: the writer takes jobs in this order */
    ust_log_record rec; /* derived fields; rec.req borrows req */
    int derive_rc;
    const ust_config *cfg;
    struct ust__server *srv;
    ust_request req;
    ust__slot *slot;
    int64_t seq;
    ust_sig_status sig;
    char *failure;        /* why the log could not take it, NULL when stored */
    ust_decision *answer; /* --respond legacy: the legacy's decision */
    size_t route_index;
    int sampled_out; /* the route's sample leaves it out: answered, not stored */
} ust__job;

typedef struct ust__queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ust__job *head, *tail;
    int stopping;
} ust__queue;

#define UST__SIG_STATES 5
#define UST__MAX_ROUTES 64

/* What /metrics shows, in memory: atomics and histograms that the loop, the
 * writer and the runner update as they go (metrics.c says what each means). */
typedef struct ust__metrics {
    atomic_llong recorded[UST__MAX_ROUTES][UST__SIG_STATES];
    atomic_llong append_failures;
    atomic_llong answers_write_failures; /* --respond legacy: batches not recorded */
    atomic_llong last_seq;               /* newest durable seq */
    atomic_llong runner_seq;             /* newest seq the runner decided */
    atomic_llong divergences, runner_events;
    atomic_llong rejected[8];                  /* 400 404 405 408 413 417 431 503 */
    atomic_llong sampled_out[UST__MAX_ROUTES]; /* answered, not recorded */
    /* µs from a request's first byte to its answer written, by route ([0]:
     * no route: refused, /healthz, /metrics) */
    ust_histogram request_us[UST__MAX_ROUTES + 1];
    ust_histogram commit_us;                       /* one fsync'd append transaction */
    ust_histogram batch_events;                    /* events in it */
    ust_histogram legacy_decide, candidate_decide; /* µs an event */
} ust__metrics;

/* What /healthz reads, written by the writer and the runner's thread and
 * read on the loop; the mutex is held only to copy or swap, never over I/O. */
#define UST__HEALTH_PENDING 4096
typedef struct ust__health {
    pthread_mutex_t mu;
    char *log_error;            /* the last append's failure; NULL once one succeeds */
    char *runner_error;         /* the last step's failure; NULL once one succeeds */
    char *answers_error;        /* the responder's last failure; NULL once it commits */
    const char *candidate_down; /* static text, or NULL while it is up */
    /* Commits the runner has not decided through, oldest first (a ring):
     * their last seq and the arrival of their first event. */
    struct {
        int64_t last_seq, received_at_us;
    } pending[UST__HEALTH_PENDING];
    size_t head, n;
} ust__health;

void ust__health_init(ust__health *h);
void ust__health_destroy(ust__health *h);
/* The writer, after each commit: rc, its message, and for a commit that
 * went through the batch's last seq and its first event's arrival. */
void ust__health_appended(struct ust__server *s, int rc, const char *err,
                          int64_t last_seq, int64_t first_received_at_us);
/* The responder (--respond legacy), after each batch it tried to record:
 * rc and its message; a success clears the failure. */
void ust__health_answered(struct ust__server *s, int rc, const char *err);
/* The runner's thread, after each step. */
void ust__health_stepped(struct ust__server *s, int rc, const char *err, int64_t cursor,
                         const char *candidate_down);
/* Arrival (µs since the epoch) of the oldest event the runner has not
 * decided, 0 when there is none: the runner's lag in time is now minus it. */
int64_t ust__health_oldest_undecided_us(struct ust__server *s);
/* The body of /healthz (ust_malloc'd) and its status, 200 or 503. */
char *ust__health_render(struct ust__server *s, int *status);

typedef struct ust__server {
    const ust_serve_opts *o;
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_async_t done_async;
    uv_signal_t sigint, sigterm;
    struct ust__conn *conns; /* every open connection */
    size_t n_conns, max_conns;
    int stopping;
    uint64_t next_ticket, next_submit;
    ust__job *reorder; /* derived, waiting for an earlier ticket; by ticket */
    int deriving;      /* jobs not yet handed to the writer */
    int finished;      /* the stop sequence has run */
    /* writer thread: requests in, results out */
    ust__queue in;
    pthread_mutex_t done_mu;
    ust__job *done_head, *done_tail;
    pthread_t writer;
    int writer_started;
    ust_log *log;
    /* follower thread: the runner, woken as events commit */
    pthread_t follower;
    int follower_started;
    pthread_mutex_t follow_mu;
    pthread_cond_t follow_cv;
    int follow_stop;
    int64_t follow_wanted;
    pthread_cond_t follow_done_cv; /* the follower thread has ended */
    int follow_done;
    atomic_int runner_stop; /* the step in progress ends at its next batch */
    int runner_left;        /* the stop left the runner behind (see follower.c) */
    ust_runner *runner;
    ust_replay_opts runner_opts;
    struct responder *responder; /* --respond legacy, else NULL */
    /* The runner's committed cursor, for retention (the follower sets it; with
     * --respond legacy it never passes the answers' cursor either). */
    atomic_llong decided_seq;
    ust__metrics metrics;
    struct ust__notify *notify; /* systemd watchdog pings, else NULL */
    /* the admin listener: /healthz, /readyz, /metrics */
    uv_tcp_t admin;
    size_t n_admin; /* its connections, apart from the public ones' cap */
    ust__health health;
} ust__server;

int ust__writer_start(ust__server *s, char **err);
void ust__writer_submit(ust__server *s, ust__job *job);
void ust__writer_stop(ust__server *s);

/* Hands committed jobs back to the loop to be answered. */
void ust__jobs_done(ust__server *s, ust__job *first, ust__job *last);

/* --respond legacy: the responder decides committed jobs before they go back. */
int ust__responder_start(ust__server *s, char **err);
void ust__responder_submit(ust__server *s, ust__job *first, ust__job *last);
void ust__responder_stop(ust__server *s);
char *ust__answers_path(const char *run_path);

/* Opens the runner, its plugins started (before the server listens); start
 * runs it on its thread. */
int ust__follower_open(ust__server *s, char **err);
int ust__follower_start(ust__server *s, char **err);
void ust__follower_notify(ust__server *s, int64_t seq);
/* Lets the runner catch up for a bounded time, then stop; 1 when it did not
 * stop in time: it is left running, and ust__follower_abandon must follow. */
int ust__follower_stop(ust__server *s);
/* Ends the process (exit status 0) with the runner left where it is. */
_Noreturn void ust__follower_abandon(ust__server *s);

/* The histograms' bounds; once, before any thread observes. */
void ust__metrics_init(ust__metrics *m);
/* systemd notifications (notify.c): READY=1 and the watchdog timer once
 * listening, STOPPING=1 and the timer closed when the stop begins. */
typedef struct ust__notify ust__notify;
void ust__notify_ready(ust__server *s, const char *listening);
void ust__notify_stopping(ust__server *s);

/* Prometheus text of the metrics, ust_malloc'd. */
char *ust__metrics_render(ust__server *s);
/* A slot's answer was written: its request's time, first byte to now. */
void ust__metrics_answered(ust__server *s, const ust__slot *slot);
void ust__metrics_rejected(ust__server *s, int status);

#endif
