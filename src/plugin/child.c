/* The child-process kind: the host side of the JSON-lines plugin protocol,
 * with a program (exec) or understudy's own shim around an isolated .so on
 * the other end. */
#define _GNU_SOURCE /* close_range */
#include "plugin/faults.h"
#include "plugin/frame.h"
#include "plugin/kind.h"
#include "plugin/link.h"
#include "plugin/wire.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/priority.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_TIMEOUT_MS 10000
#define MAX_BACKOFF_EVENTS 1024
#define EXIT_GRACE_MS 200 /* for a child whose output ended to exit */
/* Timeouts in a row that take a plugin down: a hung child then costs the
 * runner this many timeout_ms, not one per event (see ensure_up). */
#define TIMEOUTS_DOWN 3
#define UST__STR2(x) #x
#define UST__STR(x) UST__STR2(x)

extern char **environ;

typedef struct ust__child ust__child;

struct ust__child {
    const ust_plugin_config *pc;
    char *so_path, *ns, *config_text;
    char *shim; /* the binary whose shim subcommand runs so_path */
    ust_store *store;
    pid_t pid; /* also its process group's id */
    int to_fd, from_fd, err_fd, pid_fd;
    ust__link *link;           /* the pipes, from the start */
    ust__stderr_budget budget; /* of its stderr, across restarts */
    char name[64], version[64];
    int pipeline;        /* its hello allows events to be sent ahead */
    int raw_request;     /* its hello did not decline the body and headers */
    int background;      /* at background priority, with its link */
    uint64_t generation; /* counts starts: a batch knows which child it went to */
    ust_plugin_batch *last_started; /* events must reach the child in order */
    int64_t skip_events; /* events to answer "down" before the next restart */
    int64_t backoff;     /* doubles on each failed start, capped */
    int timeouts;        /* decides in a row that timed out */
    const char *down_why;
    int down;             /* went down and has not started again since */
    int answered;         /* this start of the child has answered an event */
    int64_t answered_seq; /* the last one */
    char unsent[256];     /* why the event send_from stopped at was not sent */
};

/* Whether the child has exited, without reaping it: while it is a zombie
 * its pid stays its process group's id, which nothing else can take. */
static int has_exited(pid_t pid, int block)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    int rc;
    do
        rc = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    while (rc != 0 && errno == EINTR);
    return rc != 0 || info.si_pid == pid; /* an error: there is nothing to wait for */
}

/* SIGKILL to the child's group, and to the child itself in case its group
 * could not be made. */
static void kill_all(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Kills the child and every process of its group, and reaps it; describes
 * how it ended into why (cap bytes). 1 when a signal ended it that the host
 * did not send: it crashed. */
static int reap(ust__child *c, int kill_it, char *why, size_t cap)
{
    if (c->pid <= 0)
        return 0;
    if (kill_it)
        kill_all(c->pid);
    /* Its output ended: it is exiting, or it closed its stdout and lives on.
     * The first gets a moment to say how it ended; the second is killed
     * rather than waited for. */
    int exited = has_exited(c->pid, 0);
    for (int waited = 0; !kill_it && !exited && waited < EXIT_GRACE_MS; waited++) {
        usleep(1000);
        exited = has_exited(c->pid, 0);
    }
    if (!exited) {
        kill_all(c->pid);
        kill_it = 1;
        has_exited(c->pid, 1);
    }
    /* What it started dies with it, before its pid (the group's id) is
     * released: a process it forked must not outlive it, let alone the
     * host. One that left the group (setsid) is out of reach. */
    kill(-c->pid, SIGKILL);
    int status = 0;
    pid_t got;
    do
        got = waitpid(c->pid, &status, 0);
    while (got < 0 && errno == EINTR);
    ust__link_stop(c->link);
    c->link = NULL;
    int crashed = got == c->pid && !kill_it && WIFSIGNALED(status);
    if (why != NULL && got == c->pid && !kill_it) {
        if (WIFSIGNALED(status))
            snprintf(why, cap, "killed by signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else if (WIFEXITED(status))
            snprintf(why, cap, "exited with status %d", WEXITSTATUS(status));
    }
    close(c->to_fd);
    close(c->from_fd);
    close(c->err_fd);
    if (c->pid_fd >= 0)
        close(c->pid_fd);
    c->pid = 0;
    return crashed;
}

/* The host's environment without the variables the config names as
 * secret_env: the secrets are the host's, never a plugin's. An array of
 * borrowed strings (ust_free the array only); NULL when out of memory. */
static char **scrubbed_environment(char *const *scrub)
{
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL)
        n++;
    char **env = ust_calloc(n + 1, sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int secret = 0;
        for (size_t j = 0; scrub != NULL && scrub[j] != NULL && !secret; j++) {
            size_t len = strlen(scrub[j]);
            secret = strncmp(environ[i], scrub[j], len) == 0 && environ[i][len] == '=';
        }
        if (!secret)
            env[kept++] = environ[i];
    }
    return env;
}

/* "cannot WHAT ARG: errno's text" on the child's stderr, which the host
 * reads and shows with the plugin's name. One write(2): between fork and
 * exec the child of a multithreaded host must not touch stdio's locks. */
static void child_says(const char *what, const char *arg, int e)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "cannot %s %s: %s\n", what, arg, strerror(e));
    if (n > 0)
        (void)!write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static int spawn(ust__child *c, char **err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errs[2] = {-1, -1};
    pid_t pid = -1;
    /* An isolated .so: understudy's own binary again, in its hidden shim
     * subcommand, so the child starts as a process of its own (none of the
     * host's threads, locks or memory) rather than a fork that never execs. */
    char *shim_argv[] = {c->shim, UST_PLUGIN_SHIM_COMMAND, c->so_path, c->ns, NULL};
    const char *what = "create pipes";
    pid_t host = getpid();
    char **env = scrubbed_environment(c->pc->scrub_env);
    if (env == NULL) {
        what = "copy the environment";
        errno = ENOMEM;
    } else if (pipe(in) == 0 && pipe(out) == 0 && pipe(errs) == 0) {
        fflush(NULL);
        what = "fork";
        pid = fork();
    }
    if (pid < 0) { /* a failed start leaks nothing: it is retried */
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0)
                close(in[i]);
            if (out[i] >= 0)
                close(out[i]);
            if (errs[i] >= 0)
                close(errs[i]);
        }
        ust_free(env);
        return ust_errf(err, UST_EPLUGIN, "cannot %s: %s", what, strerror(e));
    }
    if (pid == 0) {
        /* It dies with the host, even one that exits at once on a second
         * signal while this child hangs: no orphan outlives understudy. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != host)
            _exit(1);
        /* A group of its own, killed whole: what it forks goes with it. */
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(errs[1], 2);
        /* Nothing of the host's in the child: not its files (its databases
         * and, under serve, its sockets), not its signal handlers, not its
         * signal mask. */
        if (close_range(3, ~0U, 0) != 0)
            for (int fd = 3; fd < 65536; fd++)
                close(fd);
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (c->background)
            ust_background_thread();
        environ = env;
        if (c->so_path != NULL) {
            execve(c->shim, shim_argv, env);
            child_says("run", c->shim, errno);
            _exit(127);
        }
        /* A program runs in its config's folder, which its relative
         * arguments (a script) are written from (config.h). */
        if (c->pc->dir != NULL && chdir(c->pc->dir) != 0) {
            child_says("enter", c->pc->dir, errno);
            _exit(127);
        }
        execvpe(c->pc->exec[0], c->pc->exec, env);
        child_says("run", c->pc->exec[0], errno);
        _exit(127);
    }
    ust_free(env);
    /* Here too, so the group exists before the host may signal it. */
    setpgid(pid, pid);
    close(in[0]);
    close(out[1]);
    close(errs[1]);
    c->pid = pid;
    c->to_fd = in[1];
    c->from_fd = out[0];
    c->err_fd = errs[0];
    /* Its exit, seen even when what it started holds its stdout open. An
     * older kernel without pidfds sees the end of the pipe only. */
    c->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
    return 0;
}

static void set_label(ust__child *c)
{
    char label[96];
    snprintf(label, sizeof(label), "%s[%s]", c->ns, c->name);
    if (c->link != NULL)
        ust__link_set_label(c->link, label);
}

/* Starts the child and takes its hello. */
static int start(ust__child *c, char **err)
{
    int rc = spawn(c, err);
    if (rc != 0)
        return rc;
    char label[96];
    snprintf(label, sizeof(label), "%s[%s]", c->ns, c->name);
    ust__link_opts lo = {.to_fd = c->to_fd,
                         .from_fd = c->from_fd,
                         .err_fd = c->err_fd,
                         .pid_fd = c->pid_fd,
                         .pid = c->pid,
                         .measure_rss = c->pc->max_rss_mb > 0,
                         .background = c->background,
                         .budget = &c->budget,
                         .label = label,
                         .counters = c->pc->counters,
                         .binary = c->so_path != NULL};
    c->answered = 0;
    if ((rc = ust__link_start(&lo, &c->link)) != 0) {
        reap(c, 1, NULL, 0);
        return ust_errf(err, UST_EPLUGIN, "cannot start its link: %s",
                        ust_strerror(rc));
    }
    json_error_t jerr;
    json_t *init =
        json_pack("{s:s,s:i}", "type", "init", "protocol", UST__PROTOCOL_VERSION);
    json_object_set_new(init, "config", ust_json_loads(c->config_text, 0, &jerr));
    /* A child that knows its namespace starts empty can answer "absent"
     * without asking for every new key (see the protocol). */
    json_object_set_new(init, "state_empty",
                        json_boolean(ust_store_ns_empty(c->store, c->ns)));
    /* The shim is understudy's own: after its hello, both ends speak binary
     * frames (frame.h), which a program in another language is never
     * offered. */
    if (c->so_path != NULL)
        json_object_set_new(init, "framing", json_string("binary"));
    ust__line line = {0};
    if ((rc = ust__link_send(c->link, init)) == 0)
        rc = ust__link_receive(c->link, ust__mono_ms() + START_TIMEOUT_MS, &line);
    json_t *hello = line.json;
    const char *type = json_string_value(json_object_get(hello, "type"));
    const char *framing = json_string_value(json_object_get(hello, "framing"));
    int framing_ok =
        c->so_path == NULL || (framing != NULL && strcmp(framing, "binary") == 0);
    if (rc == 0 && type && strcmp(type, "hello") == 0 &&
        json_integer_value(json_object_get(hello, "protocol")) ==
            UST__PROTOCOL_VERSION &&
        framing_ok) {
        const char *name = json_string_value(json_object_get(hello, "name"));
        const char *version = json_string_value(json_object_get(hello, "version"));
        snprintf(c->name, sizeof(c->name), "%s", name ? name : "?");
        snprintf(c->version, sizeof(c->version), "%s", version ? version : "?");
        c->pipeline = json_is_true(json_object_get(hello, "pipeline"));
        c->raw_request = !json_is_false(json_object_get(hello, "raw_request"));
        c->generation++;
        c->down = 0;
        set_label(c);
    } else {
        char why[160] = "";
        const char *msg = json_string_value(json_object_get(hello, "message"));
        if (rc == 0 && type && strcmp(type, "hello") == 0 && !framing_ok)
            snprintf(why, sizeof(why),
                     "the shim %s did not take the binary framing (another"
                     " understudy's shim? see UST_PLUGIN_SHIM)",
                     c->shim);
        else if (rc == 0 && type && strcmp(type, "hello") == 0)
            snprintf(why, sizeof(why),
                     "its hello says protocol %lld (since 2, every answer carries the"
                     " seq it answers: see include/understudy/protocol.md)",
                     (long long)json_integer_value(json_object_get(hello, "protocol")));
        reap(c, rc != UST_EIO && rc != UST_EEOF, why[0] ? NULL : why, sizeof(why));
        if (!why[0] && rc == 0) /* what it said instead */
            snprintf(why, sizeof(why), "bad line: %.80s", line.text ? line.text : "");
        rc = ust_errf(err, UST_EPLUGIN, "did not say hello (protocol %d): %s",
                      UST__PROTOCOL_VERSION,
                      msg                  ? msg
                      : rc == UST_ETIMEOUT ? "timeout"
                      : why[0]             ? why
                                           : "bad hello");
    }
    ust__line_clear(&line);
    return rc;
}

/* The binary to exec for the shim: UST_PLUGIN_SHIM when set (a test, whose
 * own executable has no shim subcommand, names understudy's), else this
 * process's own. */
static char *shim_binary(void)
{
    const char *env = getenv("UST_PLUGIN_SHIM");
    return ust_strdup(env != NULL && env[0] != '\0' ? env : "/proc/self/exe");
}

/* What identifies the code: the library, or the last argument of exec that
 * names a file (the script), else the command itself. A library that
 * cannot be read is refused here rather than by the child. */
static int identify(const ust_plugin_config *pc, const char *path,
                    char id[UST_SHA256_HEX_LEN + 1], char **err)
{
    const char *file = path;
    for (int i = 0; file == NULL && pc->exec[i] != NULL; i++)
        if (pc->exec[i + 1] == NULL)
            file = pc->exec[i];
    /* A program's script is named from the folder it runs in (its config's). */
    char *in_dir = path == NULL && file[0] != '/' && pc->dir != NULL
                       ? ust_sprintf("%s/%s", pc->dir, file)
                       : NULL;
    int rc = 0;
    if (ust_sha256_file_hex(in_dir != NULL ? in_dir : file, id) != 0) {
        if (path != NULL)
            rc = ust_errf(err, UST_EPLUGIN, "%s: cannot read plugin file", path);
        else
            ust_sha256_hex(file, strlen(file), id);
    }
    ust_free(in_dir);
    return rc;
}

static void child_close(void *impl)
{
    ust__child *c = impl;
    if (c == NULL)
        return;
    if (c->pid > 0) {
        ust__link_stop(c->link);
        c->link = NULL;
        close(c->to_fd); /* EOF: a well-behaved child exits */
        c->to_fd = -1;
        reap(c, 1, NULL, 0);
    }
    ust_free(c->so_path);
    ust_free(c->shim);
    ust_free(c->ns);
    ust_free(c->config_text);
    ust_free(c);
}

/* st->path: isolate that shared library; else pc->exec is run. Starts the
 * child and waits for its hello. */
static int child_open(const ust__plugin_start *st, void **impl,
                      char id[UST_SHA256_HEX_LEN + 1], char **err)
{
    *impl = NULL;
    const ust_plugin_config *pc = st->pc;
    const char *so_path = st->path;
    int rc = identify(pc, so_path, id, err);
    if (rc != 0)
        return rc;
    ust__child *c = ust_calloc(1, sizeof(*c));
    if (c == NULL)
        return UST_ENOMEM;
    c->pc = pc;
    c->store = st->store;
    c->background = (st->flags & UST_PLUGIN_BACKGROUND) != 0;
    c->ns = ust_strdup(st->ns);
    c->config_text = ust__plugin_config_text(pc->config);
    if (c->ns == NULL || c->config_text == NULL ||
        (so_path != NULL && ((c->so_path = ust_strdup(so_path)) == NULL ||
                             (c->shim = shim_binary()) == NULL))) {
        child_close(c);
        return UST_ENOMEM;
    }
    c->raw_request = 1; /* until a hello declines it */
    c->backoff = 1;
    /* Until a hello says otherwise, the plugin is named after its file. */
    const char *file = so_path ? so_path : pc->exec[0];
    const char *slash = strrchr(file, '/');
    snprintf(c->name, sizeof(c->name), "%s", slash ? slash + 1 : file);
    snprintf(c->version, sizeof(c->version), "?");
    char *why = NULL;
    rc = start(c, &why);
    if (rc != 0) {
        rc = ust_errf(err, UST_EPLUGIN, "%s: %s", file, why ? why : "cannot start");
        ust_free(why);
        child_close(c);
        return rc;
    }
    *impl = c;
    return 0;
}

/* Stops it, to start afresh on the next event (see ust_plugin_discard). */
static void child_discard(void *impl)
{
    ust__child *c = impl;
    reap(c, 1, NULL, 0);
    c->skip_events = 0;
    c->backoff = 1;
    c->timeouts = 0;
    c->last_started = NULL;
    c->down = 0;
}

/* Down from a start that failed, or timeouts in a row, until it starts
 * again. */
static const char *child_down(const void *impl)
{
    const ust__child *c = impl;
    return c->down ? c->down_why : NULL;
}

/* Whether its last hello left out "raw_request":false. */
static int child_wants_raw_request(const void *impl)
{
    return ((const ust__child *)impl)->raw_request;
}

static const char *child_name(const void *impl)
{
    return ((const ust__child *)impl)->name;
}

static const char *child_version(const void *impl)
{
    return ((const ust__child *)impl)->version;
}

/* The reply to a state operation, in the child's framing. */
static int reply_value(ust__child *c, const char *v, int claimed)
{
    if (c->so_path == NULL)
        return ust__link_send(
            c->link, claimed >= 0
                         ? json_pack("{s:s,s:b}", "type", "claimed", "claimed", claimed)
                         : json_pack("{s:s,s:o}", "type", "value", "value",
                                     v ? json_string(v) : json_null()));
    ust__frame_out f = {0};
    ust__frame_begin(&f, claimed >= 0 ? UST__FRAME_CLAIMED : UST__FRAME_VALUE);
    if (claimed >= 0)
        ust__frame_u8(&f, (unsigned)claimed);
    else
        ust__frame_string(&f, v);
    ust__frame_end(&f);
    int rc = f.error != 0 ? UST_ENOMEM : ust__link_send_bytes(c->link, f.buf, f.len);
    ust__frame_out_free(&f);
    return rc;
}

/* A state operation from the child, answered from the host's store. */
static int serve_op(ust__child *c, const char *type, const char *key, const char *value)
{
    if (key == NULL)
        return UST_EPARSE;
    if (strcmp(type, "get") == 0) {
        const char *v = NULL;
        int rc = ust_store_get(c->store, key, &v);
        if (rc < 0)
            return rc;
        return reply_value(c, rc ? v : NULL, -1);
    } else if (strcmp(type, "claim") == 0 && value != NULL) {
        int rc = ust_store_claim(c->store, key, value);
        if (rc < 0)
            return rc;
        return reply_value(c, NULL, rc);
    } else if ((strcmp(type, "put") == 0 && value != NULL) ||
               strcmp(type, "delete") == 0) {
        /* Notifications: staged with this decide, no reply. */
        return value ? ust_store_put(c->store, key, value)
                     : ust_store_delete(c->store, key);
    }
    return UST_EPARSE;
}

/* One write a decision carries, staged with it. */
static const char *apply_write(ust__child *c, const char *key, const char *value)
{
    int rc = value != NULL ? ust_store_put(c->store, key, value)
                           : ust_store_delete(c->store, key);
    return rc != 0 ? "the state store refused a write" : NULL;
}

/* The writes a decision carries, staged with it. NULL or what is wrong. */
static const char *apply_writes(ust__child *c, ust__line *line)
{
    if (line->frame_len > 0) {
        size_t at = 0;
        const char *key = NULL, *value = NULL, *bad = NULL;
        int rc;
        while (bad == NULL &&
               (rc = ust__frame_next_write(line, &at, &key, &value)) == 0)
            bad = apply_write(c, key, value);
        return bad != NULL ? bad : rc < 0 ? "malformed writes" : NULL;
    }
    json_t *writes = line->writes;
    size_t i;
    json_t *w;
    json_array_foreach(writes, i, w)
    {
        const char *key = json_string_value(json_array_get(w, 0));
        json_t *value = json_array_get(w, 1);
        if (key == NULL || !(json_is_string(value) || json_is_null(value)))
            return "malformed writes";
        const char *bad = apply_write(c, key, json_string_value(value));
        if (bad != NULL)
            return bad;
    }
    return NULL;
}

/* Whether an answer (a decision or an error line) is the one to event seq:
 * NULL, or the protocol error it is. An answer out of turn must not be taken
 * for the next event's, nor shift every answer after it. */
static const char *check_seq(ust__child *c, const ust__line *line, int64_t seq,
                             char *cause, size_t cap)
{
    if (!line->has_seq)
        snprintf(cause, cap,
                 "protocol error: a decision without the seq it answers (protocol %d)",
                 UST__PROTOCOL_VERSION);
    else if (line->seq == seq)
        return NULL;
    else if (c->answered && line->seq == c->answered_seq)
        snprintf(cause, cap, "protocol error: a second answer to seq %lld",
                 (long long)line->seq);
    else
        snprintf(cause, cap,
                 "protocol error: an answer to seq %lld while seq %lld was asked",
                 (long long)line->seq, (long long)seq);
    return cause;
}

/* Reads the exchange of event seq: state operations (answered from the
 * store), then the decision. *cause is set when the child failed (and *kind
 * to what failed); it is then gone. 1 when it failed by taking longer than
 * timeout_ms, else 0. */
static int receive_decision(ust__child *c, int64_t seq, ust_decision *out, char *cause,
                            size_t cap, ust_plugin_fault *kind)
{
    int64_t deadline = ust__mono_ms() + c->pc->timeout_ms;
    for (;;) {
        ust__line line;
        int rc = ust__link_receive(c->link, deadline, &line);
        if (rc == UST_ETIMEOUT) {
            snprintf(cause, cap, "timeout: no decision within %lld ms",
                     (long long)c->pc->timeout_ms);
            reap(c, 1, NULL, 0);
            *kind = UST_FAULT_TIMEOUT;
            return 1;
        }
        if (rc != 0) {
            int ended = rc == UST_EEOF || rc == UST_EIO;
            char note[96];
            snprintf(note, sizeof(note), "%s", ust__link_end_note(c->link));
            *kind = reap(c, !ended, cause, cap) ? UST_FAULT_CRASH
                    : ended                     ? UST_FAULT_EXIT
                                                : UST_FAULT_PROTOCOL;
            if (!cause[0])
                snprintf(cause, cap, "%s",
                         ended ? "the plugin closed its output"
                               : "a line over the size limit");
            if (note[0]) { /* a frame cut short: beside how the child ended */
                size_t len = strlen(cause);
                snprintf(cause + len, cap - len, " (%s)", note);
            }
            return 0;
        }
        json_t *j = line.json;
        const char *type = line.is_decision ? "decision"
                           : line.type      ? line.type
                                       : json_string_value(json_object_get(j, "type"));
        const char *bad = NULL;
        int over_rss = 0;
        *kind = UST_FAULT_PROTOCOL; /* unless the branch below says otherwise */
        int answer = line.is_decision || (type != NULL && strcmp(type, "error") == 0);
        if (line.bad_frame[0]) {
            /* Not a frame of the protocol: as a line that is not JSON. */
            snprintf(cause, cap, "protocol error: bad frame: %s", line.bad_frame);
            type = NULL;
        } else if (line.before_event) {
            /* Nothing was asked yet: not an answer, nor a state operation
             * (a write there would be staged with the first event's). */
            snprintf(cause, cap, "protocol error: a %s line before any event was sent",
                     type ? type : "non-JSON");
            bad = cause;
        } else if (answer && check_seq(c, &line, seq, cause, cap) != NULL) {
            bad = cause;
        } else if (type == NULL) {
            snprintf(cause, cap, "bad line: %.80s", line.text);
        } else if (line.is_decision) {
            bad = line.bad ? line.bad : apply_writes(c, &line);
            if (bad == NULL) {
                *out = line.decision;
                memset(&line.decision, 0, sizeof(line.decision));
            }
            if (bad != NULL)
                snprintf(cause, cap, "bad decision: %s", bad);
            else if ((over_rss =
                          c->pc->max_rss_mb > 0 && line.rss_mib > c->pc->max_rss_mb))
                snprintf(cause, cap, "RSS %ld MiB over max_rss_mb %lld", line.rss_mib,
                         (long long)c->pc->max_rss_mb);
            *kind = bad != NULL ? UST_FAULT_BAD_DECISION : UST_FAULT_RSS;
        } else if (strcmp(type, "error") == 0) {
            *kind = UST_FAULT_DECIDE;
            const char *m = line.frame_len > 0
                                ? line.message
                                : json_string_value(json_object_get(j, "message"));
            snprintf(cause, cap, "decide failed: %s", m ? m : "no reason given");
        } else if (serve_op(c, type,
                            line.frame_len > 0
                                ? line.key
                                : json_string_value(json_object_get(j, "key")),
                            line.frame_len > 0
                                ? line.value
                                : json_string_value(json_object_get(j, "value"))) !=
                   0) {
            if (line.frame_len > 0) /* its bytes are not text to quote */
                snprintf(cause, cap, "protocol error: a %s the host cannot serve",
                         type);
            else
                snprintf(cause, cap, "bad line: %.80s", line.text);
        } else {
            ust__line_clear(&line);
            continue; /* a state operation: the decision is still to come */
        }
        /* A line out of the protocol loses the conversation; a decision the
         * host refuses drops writes the child believes made: either way the
         * child starts over, from the host's state. */
        int desync = type == NULL ||
                     (strcmp(type, "decision") && strcmp(type, "error")) || bad != NULL;
        if (!desync) {
            c->answered = 1;
            c->answered_seq = seq;
        }
        ust__line_clear(&line);
        if (desync || over_rss)
            reap(c, 1, NULL, 0); /* the conversation is lost, or the child grew */
        return 0;
    }
}

/* Down for the next `backoff` events, which then doubles (capped). */
static void go_down(ust__child *c, const char *why)
{
    c->skip_events = c->backoff;
    c->backoff =
        c->backoff * 2 > MAX_BACKOFF_EVENTS ? MAX_BACKOFF_EVENTS : c->backoff * 2;
    c->down_why = why;
    c->down = 1;
}

/* A child that is down waits out its back-off, counted in events so a
 * replay is deterministic, then starts again. 0 when it is up. */
static int ensure_up(ust__child *c, char *cause, size_t cap)
{
    if (c->pid > 0)
        return 0;
    if (c->skip_events > 0) {
        c->skip_events--;
        snprintf(cause, cap, "%s", c->down_why);
        ust__plugin_fault(c->pc->counters, c->ns, UST_FAULT_DOWN);
        return -1;
    }
    char *err = NULL;
    if (start(c, &err) != 0) {
        go_down(c, "the plugin is down (restarting)");
        snprintf(cause, cap, "restart failed: %s", err ? err : "?");
        ust_free(err);
        ust__plugin_fault(c->pc->counters, c->ns, UST_FAULT_START);
        return -1;
    }
    ust__plugin_restarted(c->pc->counters, c->ns);
    return 0;
}

/* Sends events of b from `from` on: all of them to a child that pipelines
 * (the link reads its answers while it writes, so neither side can block the
 * other), else the one it is to decide next. */
static void send_from(ust__child *c, ust_plugin_batch *b, size_t from)
{
    size_t end = from, size = 0;
    while (end < b->n && (end == from || c->pipeline)) {
        int rc = ust__link_send_event(c->link, b->evs[end],
                                      c->raw_request ? b->reqs[end] : NULL, &size);
        if (rc == UST_ELIMIT)
            snprintf(c->unsent, sizeof(c->unsent),
                     "the event is %zu bytes as a frame to the plugin's process, over"
                     " the limit of %d bytes (4 MiB) a frame may have: decide it"
                     " in-process (\"isolate\": false) or record smaller requests"
                     " (limits.max_body_bytes)",
                     size, UST__MAX_LINE);
        else if (rc != 0)
            snprintf(c->unsent, sizeof(c->unsent), "cannot send the event: %s",
                     ust_strerror(rc));
        if (rc != 0)
            break;
        end++;
    }
    b->sent = end;
    b->generation = c->generation;
}

/* The event send_from could not send: an error decision saying why, on
 * stderr too (an event over a limit is the operator's to fix, not the
 * plugin's); the child, told nothing, goes on with the next event. */
static void refuse_unsent(ust__child *c, const ust_event *ev, ust_decision *out)
{
    char line[sizeof(c->unsent) + 160];
    int n = snprintf(line, sizeof(line), "understudy: %s[%s]: seq %lld: %s\n", c->ns,
                     c->name, (long long)ev->seq, c->unsent);
    if (n > 0)
        ust__plugin_stderr_emit(c->pc->counters, line,
                                (size_t)n < sizeof(line) ? (size_t)n
                                                         : sizeof(line) - 1);
    ust__plugin_fault(c->pc->counters, c->ns, UST_FAULT_PROTOCOL);
    memset(out, 0, sizeof(*out));
    ust__decision_error(out, 500, c->unsent, NULL);
}

/* A batch in two halves, so the host can work while the child decides:
 * start queues the batch for the child (all of it to a child that pipelines,
 * else its first event), finish takes every decision (sending the rest as it
 * goes); after a fault the events not yet decided go again to the restarted
 * child. */
static void child_batch_start(void *impl, ust_plugin_batch *b)
{
    ust__child *c = impl;
    b->sent = 0;
    b->generation = c->generation;
    /* Ahead of time only if the batch before went out whole, to this very
     * child: its remaining events (or all of them, when the child was
     * replaced) must reach the child before any of this one. */
    ust_plugin_batch *prev = c->last_started;
    int prev_done =
        prev == NULL || (prev->sent == prev->n && prev->generation == c->generation);
    c->last_started = b;
    if (c->pid > 0 && prev_done)
        send_from(c, b, 0);
}

static void child_batch_finish(void *impl, ust_plugin_batch *b, ust_decision **outs)
{
    ust__child *c = impl;
    size_t i = 0;
    while (i < b->n) {
        char cause[256] = "";
        /* What went to a child that has since been replaced goes again. */
        if (c->pid <= 0 || b->generation != c->generation)
            b->sent = i;
        if (i >= b->sent) {
            if (ensure_up(c, cause, sizeof(cause)) != 0) {
                memset(outs[i], 0, sizeof(*outs[i]));
                ust__decision_error(outs[i++], 500, cause, NULL);
                continue;
            }
            send_from(c, b, i);
            if (b->sent == i) {
                refuse_unsent(c, b->evs[i], outs[i]);
                b->sent = ++i; /* the next one goes by itself */
                continue;
            }
        }
        memset(outs[i], 0, sizeof(*outs[i]));
        ust_store_begin_call(c->store, c->ns);
        ust_plugin_fault kind = UST_FAULT_PROTOCOL;
        int timed_out =
            receive_decision(c, b->evs[i]->seq, outs[i], cause, sizeof(cause), &kind);
        if (cause[0])
            ust__plugin_fault(c->pc->counters, c->ns, kind);
        /* Timeouts in a row take it down: a hung child is restarted after
         * a back-off, and the events meanwhile are answered at once. Once
         * down, one more timeout after its restart sends it down again. */
        c->timeouts = timed_out ? c->timeouts + 1 : 0;
        if (timed_out && c->timeouts >= TIMEOUTS_DOWN)
            go_down(c, "the plugin is down after " UST__STR(
                           TIMEOUTS_DOWN) " timeouts in a row (restarting)");
        if (cause[0])
            ust__decision_error(outs[i], 500, cause, NULL);
        else
            c->backoff = 1;
        ust_store_end_call(c->store, outs[i]->verdict != UST_VERDICT_ERROR);
        i++;
        if (cause[0])
            b->sent = i; /* the events after this one go again, to a new child */
    }
    if (c->last_started == b)
        c->last_started = NULL;
}

static void child_decide(void *impl, const ust_event *ev, const ust_request *req,
                         ust_decision *out)
{
    ust_plugin_batch b = {&ev, &req, 1, 0, 0};
    child_batch_start(impl, &b);
    child_batch_finish(impl, &b, &out);
}

/* Faults (a crash, an exit, garbage, a decide over timeout_ms, RSS over
 * max_rss_mb) become error decisions with their cause; the child is
 * restarted, after a back-off counted in events. */
const ust__plugin_kind ust__plugin_kind_child = {
    UST__PLUGIN_KIND_REQUIRED(child),
    UST__PLUGIN_KIND_BATCHED(child),
    .down = child_down,
};
