/* A plugin child's pipes, driven by a thread (see link.h). The thread never
 * blocks but in poll(): the child's stdin is non-blocking, so a child that
 * stops reading cannot stop the thread from reading what it writes, and a
 * stop request arrives through a wake-up pipe. It also reads the child's
 * stderr, within a budget, and watches for the child's exit (a pidfd): a
 * child whose stdout is still held open by a process it started has ended
 * all the same. */
#include "plugin/faults.h"
#include "plugin/frame.h"
#include "plugin/link.h"
#include "plugin/wire.h"

#include <understudy/clock.h>
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/priority.h>
#include <understudy/sigpipe.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A child's stderr: a burst of 64 KiB, then 64 KiB a minute (a token
 * bucket), lines of at most 4 KiB. Enough for a trace of what went wrong,
 * not for a flood that fills the host's disk or its terminal. */
#define STDERR_BURST (64 * 1024)
#define STDERR_PER_MINUTE (64 * 1024)
#define STDERR_LINE_MAX 4096

struct ust__link {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t arrived; /* a line, or the end of the child's output */
    int to_fd, from_fd, wake_rd, wake_wr, statm_fd, err_fd, pid_fd;
    /* Shared, under mu. */
    int stop, woken;
    int ended; /* 0, or why no more lines will come */
    char label[96];
    /* What is queued for the child, already encoded: the link keeps no
     * pointer to an event it was given, which may be released as soon as it
     * is answered (even by a child that answered before reading it). */
    ust__frame_out pending;
    uint64_t pending_events;
    ust_jsonw event; /* an event's JSON line, before it joins pending */
    ust__line *in;
    size_t in_head, n_in, cap_in;
    /* The thread's own. */
    ust__line *lines; /* parsed, on their way to `in` */
    size_t cap_lines;
    int binary;        /* frames after the first line */
    int binary_now;    /* the first line (the hello) was read */
    char end_note[96]; /* the output ended inside a frame */
    char *wbuf, *rbuf;
    size_t wlen, woff, wcap, rlen, rcap;
    int write_dead, read_done;
    int background;
    ust__body_memo memo; /* the child's answers' bodies */
    uint64_t events_encoded;
    /* stderr: the line being read (cut at STDERR_LINE_MAX), what was cut */
    ust__stderr_budget *budget;
    ust_plugin_counters *counters;
    char eline[STDERR_LINE_MAX];
    size_t elen, ecut;
    int err_done, exited;
};

/* ust_grow, answering 0 or UST_ENOMEM with *p updated. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    void *q = ust_grow(*p, cap, need, 64, size);
    if (q == NULL)
        return UST_ENOMEM;
    *p = q;
    return 0;
}

/* Called with mu held. One byte wakes the thread however many come before
 * it looks. */
static void wake(ust__link *l)
{
    if (!l->woken) {
        l->woken = 1;
        ssize_t w = write(l->wake_wr, "", 1);
        (void)w; /* a full wake-up pipe is awake already */
    }
}

/* Called with mu held, after something was appended to pending (from
 * `start` on): wakes the thread, or drops what was appended when it could
 * not be all. */
static int queued(ust__link *l, size_t start)
{
    if (l->pending.error != 0) {
        l->pending.len = start;
        l->pending.error = 0;
        return UST_ENOMEM;
    }
    wake(l);
    return 0;
}

int ust__link_send_event(ust__link *l, const ust_event *ev, const ust_request *req,
                         size_t *size)
{
    pthread_mutex_lock(&l->mu);
    size_t start = l->pending.start = l->pending.len;
    if (l->binary) {
        ust__frame_decide(&l->pending, ev, req);
        /* The shim reads no frame over the limit (it would end, "exited
         * with status 0"): refused here, where it can be said why. */
        size_t n = l->pending.len - start - UST__FRAME_HEAD;
        if (l->pending.error == 0 && n > UST__MAX_LINE) {
            l->pending.len = start;
            pthread_mutex_unlock(&l->mu);
            *size = n;
            return UST_ELIMIT;
        }
    } else {
        ust_jsonw_reset(&l->event);
        ust__wire_decide(&l->event, ev, req);
        if (l->event.error == UST_ENOMEM)
            l->pending.error = UST_ENOMEM;
        ust__frame_raw(&l->pending, l->event.buf, l->event.len);
        ust__frame_raw(&l->pending, "\n", 1);
    }
    int rc = queued(l, start);
    if (rc == 0)
        l->pending_events++;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int ust__link_send_bytes(ust__link *l, const void *buf, size_t n)
{
    pthread_mutex_lock(&l->mu);
    size_t start = l->pending.start = l->pending.len;
    ust__frame_raw(&l->pending, buf, n);
    int rc = queued(l, start);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int ust__link_send(ust__link *l, json_t *msg)
{
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (text == NULL)
        return UST_ENOMEM;
    pthread_mutex_lock(&l->mu);
    size_t start = l->pending.start = l->pending.len;
    ust__frame_raw(&l->pending, text, strlen(text));
    ust__frame_raw(&l->pending, "\n", 1);
    int rc = queued(l, start);
    pthread_mutex_unlock(&l->mu);
    ust_free(text);
    return rc;
}

static int append_to_wbuf(const char *buf, size_t n, void *data)
{
    ust__link *l = data;
    if (grow((void **)&l->wbuf, &l->wcap, l->wlen + n + 1, 1) != 0)
        return -1;
    memcpy(l->wbuf + l->wlen, buf, n);
    l->wlen += n;
    return 0;
}

/* Called with mu held: what was queued goes after what is still to write
 * (the buffers swap when all was written, which is the usual case). */
static void take_pending(ust__link *l)
{
    if (l->woff == l->wlen)
        l->wlen = l->woff = 0;
    l->events_encoded += l->pending_events;
    l->pending_events = 0;
    if (l->write_dead || l->pending.len == 0) {
        l->pending.len = 0;
        return;
    }
    if (l->wlen == 0) {
        char *buf = l->wbuf;
        size_t cap = l->wcap;
        l->wbuf = (char *)l->pending.buf, l->wcap = l->pending.cap;
        l->wlen = l->pending.len;
        l->pending.buf = (unsigned char *)buf, l->pending.cap = cap;
    } else if (append_to_wbuf((const char *)l->pending.buf, l->pending.len, l) != 0) {
        l->write_dead = 1; /* out of memory: the child hears no more */
    }
    l->pending.len = 0;
}

static void write_some(ust__link *l)
{
    while (!l->write_dead && l->woff < l->wlen) {
        ssize_t w = write(l->to_fd, l->wbuf + l->woff, l->wlen - l->woff);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w <= 0) {
            /* The child is gone (EPIPE): its end shows on the read side. */
            l->write_dead = 1;
            l->wlen = l->woff = 0;
            return;
        }
        l->woff += (size_t)w;
    }
}

static void end(ust__link *l, int why)
{
    l->read_done = 1;
    pthread_mutex_lock(&l->mu);
    l->ended = why;
    pthread_cond_broadcast(&l->arrived);
    pthread_mutex_unlock(&l->mu);
}

/* The child's resident set in MiB, from /proc/PID/statm read again. */
static long rss_mib(ust__link *l)
{
    char buf[128];
    ssize_t n = l->statm_fd >= 0 ? pread(l->statm_fd, buf, sizeof(buf) - 1, 0) : -1;
    long size = 0, resident = 0;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
        return 0;
    return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

static void take_decision(ust__link *l, ust__line *line)
{
    json_t *seq = json_object_get(line->json, "seq");
    line->has_seq = json_is_integer(seq);
    line->seq = json_integer_value(seq);
    const char *type = json_string_value(json_object_get(line->json, "type"));
    if (type == NULL || strcmp(type, "decision") != 0)
        return;
    line->is_decision = 1;
    line->bad = ust__wire_decision_parse_memo(json_object_get(line->json, "decision"),
                                              &line->decision, &l->memo);
    line->writes = json_incref(json_object_get(line->json, "writes"));
    json_decref(line->json);
    line->json = NULL;
}

/* The bytes of a frame over the limit that its cause quotes. */
#define START_SHOWN 12

/* The next whole frame from rbuf + start into *line: 1, 0 when it is not
 * all there yet, -1 when its length is over the cap (line says so). */
static int next_frame(ust__link *l, size_t start, size_t *used, ust__line *line)
{
    size_t have = l->rlen - start;
    const unsigned char *h = (const unsigned char *)l->rbuf + start;
    uint32_t n = 0;
    int whole = ust__frame_length(h, have, &n);
    if (whole < 0 && have < START_SHOWN)
        return 0; /* the cause quotes its start: the same however it was read */
    if (whole < 0) {
        /* Its first bytes show what it was: often text a plugin printed to
         * its stdout, which is the protocol's. */
        char start_of[4 * START_SHOWN + 1];
        size_t k = 0;
        for (size_t i = 0; i < have && i < START_SHOWN; i++)
            k += (size_t)snprintf(
                start_of + k, sizeof(start_of) - k,
                h[i] >= 0x20 && h[i] < 0x7f && h[i] != '"' ? "%c" : "\\x%02x", h[i]);
        memset(line, 0, sizeof(*line));
        snprintf(line->bad_frame, sizeof(line->bad_frame),
                 "a frame of %lu bytes, over the limit of %d (it starts \"%s\")",
                 (unsigned long)n, UST__MAX_LINE, start_of);
        return -1;
    }
    if (whole == 0)
        return 0;
    unsigned char *payload = malloc(n + 1);
    if (payload == NULL)
        return -2;
    memcpy(payload, h + UST__FRAME_HEAD, n);
    payload[n] = '\0';
    ust__frame_take(payload, n, line, &l->memo);
    *used = UST__FRAME_HEAD + n;
    return 1;
}

/* Parses every whole line read so far and hands them over at once. The
 * child's RSS, read once per chunk, goes with its last line: the growth it
 * shows happened by the time that answer was written, which is as near as
 * the host can tell (the child may be events ahead of what was read). */
static void deliver_lines(ust__link *l)
{
    size_t start = 0, n_lines = 0;
    char *nl;
    int over = 0;
    for (;;) {
        ust__line line;
        if (l->binary_now) {
            size_t used = 0;
            int got = next_frame(l, start, &used, &line);
            if (got == 0)
                break;
            if (got == -2 || grow((void **)&l->lines, &l->cap_lines, n_lines + 1,
                                  sizeof(ust__line))) {
                if (got == 1)
                    ust__line_clear(&line);
                for (size_t i = 0; i < n_lines; i++)
                    ust__line_clear(&l->lines[i]);
                end(l, UST_EIO);
                return;
            }
            line.before_event = l->events_encoded == 0;
            l->lines[n_lines++] = line;
            if (got < 0) { /* nothing after it can be framed */
                over = 1;
                break;
            }
            start += used;
            continue;
        }
        if ((nl = memchr(l->rbuf + start, '\n', l->rlen - start)) == NULL)
            break;
        size_t n = (size_t)(nl - (l->rbuf + start));
        if (n > UST__MAX_LINE) { /* refused whether or not one read held it all */
            over = 1;
            break;
        }
        memset(&line, 0, sizeof(line));
        line.text = malloc(n + 1);
        if (line.text == NULL ||
            grow((void **)&l->lines, &l->cap_lines, n_lines + 1, sizeof(ust__line))) {
            free(line.text);
            for (size_t i = 0; i < n_lines; i++)
                ust__line_clear(&l->lines[i]);
            end(l, UST_EIO);
            return;
        }
        memcpy(line.text, l->rbuf + start, n);
        line.text[n] = '\0';
        json_error_t jerr;
        line.json = ust_json_loadb(line.text, n, 0, &jerr);
        /* Events are written as soon as they are encoded, before the thread
         * reads again: a line read before the first was encoded answers
         * nothing the host asked. */
        line.before_event = l->events_encoded == 0;
        take_decision(l, &line);
        l->lines[n_lines++] = line;
        start += n + 1;
        l->binary_now = l->binary; /* the hello is the last line */
    }
    memmove(l->rbuf, l->rbuf + start, l->rlen - start);
    l->rlen -= start;
    if (n_lines > 0)
        l->lines[n_lines - 1].rss_mib = rss_mib(l);
    pthread_mutex_lock(&l->mu);
    /* Lines taken leave a gap at the front; it is closed once it is as long
     * as what remains, so a backlog is not moved again for every chunk read
     * (that move was the largest part of this thread's time). */
    if (l->in_head > 0 && l->in_head >= l->n_in - l->in_head) {
        memmove(l->in, l->in + l->in_head, (l->n_in - l->in_head) * sizeof(*l->in));
        l->n_in -= l->in_head;
        l->in_head = 0;
    }
    int rc = grow((void **)&l->in, &l->cap_in, l->n_in + n_lines, sizeof(ust__line));
    if (rc == 0 && n_lines > 0) { /* none: a read that ended inside a line */
        memcpy(l->in + l->n_in, l->lines, n_lines * sizeof(ust__line));
        l->n_in += n_lines;
        pthread_cond_broadcast(&l->arrived);
    }
    pthread_mutex_unlock(&l->mu);
    if (rc != 0) {
        for (size_t i = 0; i < n_lines; i++)
            ust__line_clear(&l->lines[i]);
        end(l, UST_EIO);
    } else if (over || (!l->binary_now && l->rlen > UST__MAX_LINE)) {
        end(l, UST_EPARSE);
    }
}

/* The child's output ends with part of a frame: how much, for the cause. */
static void note_cut_frame(ust__link *l)
{
    if (!l->binary_now || l->rlen == 0)
        return;
    uint32_t n = 0;
    ust__frame_length((const unsigned char *)l->rbuf, l->rlen, &n);
    if (l->rlen < UST__FRAME_HEAD)
        snprintf(l->end_note, sizeof(l->end_note),
                 "its output ended inside a frame's length (%zu of 4 bytes)", l->rlen);
    else
        snprintf(l->end_note, sizeof(l->end_note),
                 "its output ended inside a frame (%zu of its %lu bytes)",
                 l->rlen - UST__FRAME_HEAD, (unsigned long)n);
}

/* The child's output ended (why: UST_EEOF) or could not be read. */
static void output_ended(ust__link *l, int why)
{
    note_cut_frame(l);
    end(l, why);
}

/* 1 when it read something. */
static int read_some(ust__link *l)
{
    if (grow((void **)&l->rbuf, &l->rcap, l->rlen + 65536, 1) != 0) {
        end(l, UST_EIO);
        return 0;
    }
    ssize_t r = read(l->from_fd, l->rbuf + l->rlen, l->rcap - l->rlen);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (r <= 0) {
        output_ended(l, r == 0 ? UST_EEOF : UST_EIO);
        return 0;
    }
    l->rlen += (size_t)r;
    deliver_lines(l);
    return 1;
}

void ust__link_feed(ust__link *l, const void *p, size_t n)
{
    if (l->read_done)
        return;
    if (n == 0) {
        output_ended(l, UST_EEOF);
        return;
    }
    if (grow((void **)&l->rbuf, &l->rcap, l->rlen + n, 1) != 0) {
        end(l, UST_EIO);
        return;
    }
    memcpy(l->rbuf + l->rlen, p, n);
    l->rlen += n;
    deliver_lines(l);
}

int64_t ust__mono_ms(void)
{
    return ust_time_mono_us() / 1000;
}

/* Passes "understudy: LABEL: text\n" to the sink. */
static void emit(ust__link *l, const char *text, size_t n)
{
    char buf[sizeof(l->label) + STDERR_LINE_MAX + 32];
    pthread_mutex_lock(&l->mu);
    int head = snprintf(buf, sizeof(buf), "understudy: %s: ", l->label);
    pthread_mutex_unlock(&l->mu);
    if (head < 0 || (size_t)head + n + 1 > sizeof(buf))
        return;
    memcpy(buf + head, text, n);
    buf[(size_t)head + n] = '\n';
    ust__plugin_stderr_emit(l->counters, buf, (size_t)head + n + 1);
}

/* One line of the child's stderr (n bytes kept, cut more dropped, newline
 * whether it ended with one), forwarded if the budget allows. */
static void stderr_line(ust__link *l, const char *s, size_t n, size_t cut, int newline)
{
    ust__stderr_budget *b = l->budget;
    int64_t now = ust__mono_ms();
    if (b->at_ms == 0)
        b->tokens = STDERR_BURST;
    else
        b->tokens += (double)(now - b->at_ms) * STDERR_PER_MINUTE / 60000.0;
    if (b->tokens > STDERR_BURST)
        b->tokens = STDERR_BURST;
    b->at_ms = now;
    size_t cost = n + (newline ? 1 : 0);
    if (b->tokens < (double)cost) {
        ust__plugin_stderr_counted(l->counters, 0, 0, 1, cost + cut);
        if (!b->dropping && (b->told_ms == 0 || now - b->told_ms >= 60000)) {
            b->told_ms = now;
            static const char note[] = "(stderr over its budget of 64 KiB a minute:"
                                       " lines dropped, counted in"
                                       " understudy_plugin_stderr_dropped_bytes_total;"
                                       " said at most once a minute)";
            emit(l, note, sizeof(note) - 1);
        }
        b->dropping = 1;
        return;
    }
    b->tokens -= (double)cost;
    b->dropping = 0;
    ust__plugin_stderr_counted(l->counters, 1, cost, 0, cut); /* cut: the line's tail */
    emit(l, s, n);
}

/* Reads what the child wrote to stderr, at most max bytes; 1 when it read
 * something. At its end, a last line without a newline goes too. */
static int read_stderr(ust__link *l, size_t max)
{
    char chunk[16384];
    size_t total = 0;
    while (!l->err_done && total < max) {
        ssize_t r = read(l->err_fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {
            if (l->elen > 0 || l->ecut > 0)
                stderr_line(l, l->eline, l->elen, l->ecut, 0);
            l->elen = l->ecut = 0;
            l->err_done = 1;
            break;
        }
        total += (size_t)r;
        for (ssize_t i = 0; i < r; i++) {
            if (chunk[i] == '\n') {
                stderr_line(l, l->eline, l->elen, l->ecut, 1);
                l->elen = l->ecut = 0;
            } else if (l->elen < sizeof(l->eline)) {
                l->eline[l->elen++] = chunk[i];
            } else {
                l->ecut++;
            }
        }
    }
    return total > 0;
}

static void *run(void *arg)
{
    ust__link *l = arg;
    if (l->background)
        ust_background_thread(); /* before the name, as the tests see it */
    ust_name_thread("ust-link");
    /* This thread writes to the child's stdin: a child that has closed it
     * fails the write with EPIPE, never with a SIGPIPE at the host. */
    sigset_t old;
    ust_sigpipe_block(&old);
    for (;;) {
        pthread_mutex_lock(&l->mu);
        if (l->stop) {
            pthread_mutex_unlock(&l->mu);
            /* What the child wrote to stderr before the stop still goes,
             * but no more than a pipe holds: it may be writing on. */
            if (l->err_fd >= 0)
                read_stderr(l, 65536);
            break;
        }
        take_pending(l);
        pthread_mutex_unlock(&l->mu);
        write_some(l);
        struct pollfd p[5] = {
            {l->wake_rd, POLLIN, 0},
            {l->read_done ? -1 : l->from_fd, POLLIN, 0},
            {l->woff < l->wlen ? l->to_fd : -1, POLLOUT, 0},
            {l->err_fd < 0 || l->err_done ? -1 : l->err_fd, POLLIN, 0},
            {l->pid_fd < 0 || l->exited ? -1 : l->pid_fd, POLLIN, 0},
        };
        if (poll(p, 5, -1) < 0 && errno != EINTR)
            break; /* cannot happen with valid descriptors */
        if (p[0].revents) {
            char drain[64];
            ssize_t r = read(l->wake_rd, drain, sizeof(drain));
            (void)r;
            pthread_mutex_lock(&l->mu);
            l->woken = 0;
            pthread_mutex_unlock(&l->mu);
        }
        if (p[1].revents)
            read_some(l);
        if (p[3].revents)
            read_stderr(l, 1 << 20);
        if (p[4].revents) {
            /* The child exited: what it wrote before is in the pipe and is
             * delivered first; then its output has ended, even if a process
             * it started holds the pipe open. */
            l->exited = 1;
            /* A pipe holds 64 KiB unless grown (up to 1 MiB); a process it
             * started may write on, so this reads no more than that. */
            for (int i = 0; i < 16 && !l->read_done && read_some(l); i++)
                ;
            if (!l->read_done)
                output_ended(l, UST_EEOF);
        }
    }
    ust_sigpipe_restore(&old);
    return NULL;
}

/* A link with its lock and condition, no descriptor and no thread yet. */
static ust__link *link_new(int binary, const char *label)
{
    ust__link *l = ust_calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->to_fd = l->from_fd = l->err_fd = l->pid_fd = -1;
    l->wake_rd = l->wake_wr = l->statm_fd = -1;
    l->binary = binary;
    snprintf(l->label, sizeof(l->label), "%s", label ? label : "plugin");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->arrived, &attr);
    pthread_condattr_destroy(&attr);
    return l;
}

int ust__link_open_reader(int binary, ust__link **out)
{
    *out = link_new(binary, NULL);
    if (*out == NULL)
        return UST_ENOMEM;
    (*out)->stop = 1; /* no thread to join */
    return 0;
}

int ust__link_start(const ust__link_opts *o, ust__link **out)
{
    *out = NULL;
    ust__link *l = link_new(o->binary, o->label);
    if (l == NULL)
        return UST_ENOMEM;
    int to_fd = o->to_fd, from_fd = o->from_fd;
    l->to_fd = to_fd;
    l->from_fd = from_fd;
    l->err_fd = o->budget != NULL ? o->err_fd : -1;
    l->pid_fd = o->pid_fd;
    l->budget = o->budget;
    l->counters = o->counters;
    l->background = o->background;
    int wake_fds[2];
    if (pipe(wake_fds) != 0) {
        l->stop = 1; /* no thread to join */
        ust__link_stop(l);
        return UST_EIO;
    }
    l->wake_rd = wake_fds[0];
    l->wake_wr = wake_fds[1];
    fcntl(l->wake_rd, F_SETFL, O_NONBLOCK);
    fcntl(l->wake_wr, F_SETFL, O_NONBLOCK);
    fcntl(to_fd, F_SETFL, fcntl(to_fd, F_GETFL) | O_NONBLOCK);
    fcntl(from_fd, F_SETFL, fcntl(from_fd, F_GETFL) | O_NONBLOCK);
    if (l->err_fd >= 0)
        fcntl(l->err_fd, F_SETFL, fcntl(l->err_fd, F_GETFL) | O_NONBLOCK);
    if (o->measure_rss) {
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/statm", (int)o->pid);
        l->statm_fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        l->stop = 1; /* no thread to join */
        ust__link_stop(l);
        return UST_EIO;
    }
    *out = l;
    return 0;
}

void ust__link_set_label(ust__link *l, const char *label)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->label, sizeof(l->label), "%s", label);
    pthread_mutex_unlock(&l->mu);
}

int ust__link_receive(ust__link *l, int64_t deadline_ms, ust__line *line)
{
    struct timespec at = {(time_t)(deadline_ms / 1000),
                          (long)(deadline_ms % 1000) * 1000000};
    pthread_mutex_lock(&l->mu);
    while (l->in_head == l->n_in && !l->ended) {
        if (pthread_cond_timedwait(&l->arrived, &l->mu, &at) == ETIMEDOUT &&
            l->in_head == l->n_in && !l->ended) {
            pthread_mutex_unlock(&l->mu);
            return UST_ETIMEOUT;
        }
    }
    int rc = l->ended;
    if (l->in_head < l->n_in) {
        *line = l->in[l->in_head++];
        if (l->in_head == l->n_in)
            l->in_head = l->n_in = 0;
        rc = 0;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

const char *ust__link_end_note(ust__link *l)
{
    pthread_mutex_lock(&l->mu);
    const char *note = l->ended ? l->end_note : "";
    pthread_mutex_unlock(&l->mu);
    return note;
}

void ust__link_stop(ust__link *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    int running = !l->stop;
    l->stop = 1;
    wake(l);
    pthread_mutex_unlock(&l->mu);
    if (running)
        pthread_join(l->thread, NULL);
    for (size_t i = l->in_head; i < l->n_in; i++)
        ust__line_clear(&l->in[i]);
    if (l->wake_rd >= 0) /* a reader alone has none (ust__link_open_reader) */
        close(l->wake_rd);
    if (l->wake_wr >= 0)
        close(l->wake_wr);
    if (l->statm_fd >= 0)
        close(l->statm_fd);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->arrived);
    ust_free(l->in);
    ust_free(l->lines);
    ust_free(l->wbuf);
    ust_jsonw_free(&l->event);
    ust__frame_out_free(&l->pending);
    ust__body_memo_free(&l->memo);
    ust_free(l->rbuf);
    ust_free(l);
}
