/* The HTTP/1.1 front of the recorder, its start and stop: the stages
 * (loop -> deriver -> writer (-> responder) -> loop, and the runner
 * following the log) wired together, both listeners bound only once
 * everything that decides is up, and the stop sequence that drains them in
 * order. libuv for the sockets, Debian's http-parser for the protocol; a
 * bad request gets a small JSON answer and the server goes on serving
 * everyone else. Answers leave in the order requests arrived, so
 * pipelining is safe. (server.h names the other files of the server.) */
#include "http/server.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sigpipe.h>

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the stages' sinks, wired in serve() ------------------------------- */

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
    ust__server_maybe_finish_stop(ctx);
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

/* ---- stop -------------------------------------------------------------- */

/* Once stopping and every connection is closed and every request it read
 * is with the writer: let the writer drain, the runner catch up (for a
 * bounded time: see follower.c), and close. */
void ust__server_maybe_finish_stop(ust__server *s)
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
            ust__conn_close(c);
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
            ust__conn_close(c);
        else
            c->tail->close_after = 1;
        c = next;
    }
    ust__server_maybe_finish_stop(s);
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

/* ---- start ------------------------------------------------------------- */

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

/* The loop closed and what lives beside it freed: after a failed start and
 * after a stop alike. */
static void close_loop(ust__server *s)
{
    uv_loop_close(s->loop);
    ust__jobq_destroy(&s->done);
    ust__deriver_destroy(&s->deriver);
    ust__class_counts_destroy(&s->classes);
    ust__health_destroy(&s->health);
    ust_free(s->loop);
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
    int rc = s->loop ? ust__listen_parse("listen", o->listen, &addr, err) : UST_ENOMEM;
    if (rc == 0)
        rc = ust__listen_admin_address(o, &addr, &admin, err);
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
        rc = ust__listen_on(&s->listener, &addr, "listen", err);
    if (rc == 0)
        rc = ust__listen_on(&s->admin, &admin,
                            o->admin_listen
                                ? "the admin listener, admin_listen"
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
        close_loop(s);
        remove_made(&made);
        return rc;
    }
    ust_free(made.answers); /* they are the run's now */
    uv_async_init(s->loop, &s->done_async, ust__pipeline_done);
    s->done_async.data = s;
    uv_async_init(s->loop, &s->stop_async, on_stop);
    s->stop_async.data = s;
    if (o->started != NULL)
        o->started(o->started_ctx, s);
    s->notify = ust__notify_ready(s->loop, o->listen);
    uv_run(s->loop, UV_RUN_DEFAULT);
    ust__pipeline_done(&s->done_async); /* anything the writer finished last */
    /* Before the loop closes: a stop sent after this would write to its
     * closed descriptor. */
    if (o->started != NULL)
        o->started(o->started_ctx, NULL);
    if (s->runner_left) {
        leave_runner(s);
        return UST_SERVE_RUNNER_LEFT; /* its thread uses s: nothing is freed */
    }
    close_loop(s);
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
