/* The host's end of a plugin child's pipes, driven by a thread of its own.
 * The runner's thread queues events, encoded as it queues them (a frame for
 * the shim costs little), and takes the parsed lines in the order they came;
 * the thread writes what was queued, and reads the child's lines or frames
 * and parses them, so the parse an answer costs runs beside the runner
 * rather than on its path. */
#ifndef UST_PLUGIN_LINK_H
#define UST_PLUGIN_LINK_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "plugin/line.h"

#include <understudy/event.h>
#include <understudy/host.h>

typedef struct ust__link ust__link;

/* What a plugin may write to its stderr: a token bucket of bytes, kept by
 * the plugin across the restarts of its child (see link.c for the rates). */
typedef struct ust__stderr_budget {
    double tokens;
    int64_t at_ms;   /* last refill; 0: never (the bucket starts full) */
    int dropping;    /* in a run of dropped lines, told when it starts */
    int64_t told_ms; /* when a run was last told: at most once a minute */
} ust__stderr_budget;

typedef struct ust__link_opts {
    int to_fd, from_fd; /* the child's stdin and stdout */
    int err_fd;         /* its stderr, read line by line; -1: none */
    int pid_fd;         /* a pidfd of the child: its exit ends the link; -1: none */
    pid_t pid;
    int measure_rss;               /* lines carry the RSS of pid */
    int background;                /* the thread runs at background priority */
    ust__stderr_budget *budget;    /* with err_fd; the caller's, outlives the link */
    const char *label;             /* "candidate[name]": stderr lines are prefixed */
    ust_plugin_counters *counters; /* the stderr's counts and sink, or NULL */
    int binary; /* after the first line (the hello), binary frames both ways */
} ust__link_opts;

/* Starts the thread on the child's pipes, which stay the caller's to close
 * after ust__link_stop. 0 or UST_ENOMEM / UST_EIO. */
int ust__link_start(const ust__link_opts *o, ust__link **out);

/* Renames the child in the prefix of its stderr lines (after its hello). */
void ust__link_set_label(ust__link *l, const char *label);

/* Queues an event, encoded at once (a JSON line, or a frame once the link
 * is binary): the link keeps no pointer to ev or req. req NULL: the child
 * declined the raw request (no body, no headers). 0, UST_ENOMEM, or
 * UST_ELIMIT with *size the frame's length (after its head) when it is over
 * UST__MAX_LINE: nothing is queued. */
int ust__link_send_event(ust__link *l, const ust_event *ev, const ust_request *req,
                         size_t *size);

/* Queues a message as a JSON line (the link takes msg). */
int ust__link_send(ust__link *l, json_t *msg);
/* Queues n bytes of frames (copied). */
int ust__link_send_bytes(ust__link *l, const void *buf, size_t n);

/* The next line, waiting until deadline_ms (CLOCK_MONOTONIC): 0 and *line
 * (release with ust__line_clear), UST_ETIMEOUT at the deadline, UST_EEOF once
 * the child's output ended or the child exited (what it wrote before comes
 * first), UST_EIO once it could not be read, UST_EPARSE once a line grew past
 * the size limit. */
int ust__link_receive(ust__link *l, int64_t deadline_ms, ust__line *line);
/* Once the child's output ended inside a frame, how far in it was ("" when
 * it did not): said beside the child's exit. */
const char *ust__link_end_note(ust__link *l);

/* The link's reader alone, for tests/fuzz/fuzz_child_link.c: a link with no
 * child, no descriptor and no thread (binary: frames after the first line),
 * fed with ust__link_feed, its lines taken with ust__link_receive and
 * released with ust__link_stop. 0 or UST_ENOMEM. */
int ust__link_open_reader(int binary, ust__link **out);
/* n bytes (copied) as one read of the child's stdout would give them, parsed
 * by the same code; n 0: the output's end, as a read of 0 bytes. */
void ust__link_feed(ust__link *l, const void *p, size_t n);

/* CLOCK_MONOTONIC in ms: the clock of the deadlines above. */
int64_t ust__mono_ms(void);

/* Stops and joins the thread; what was queued and not written is dropped.
 * NULL is a no-op. */
void ust__link_stop(ust__link *l);

#endif
