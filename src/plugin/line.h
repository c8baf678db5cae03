/* One message from a plugin child as the host takes it: a JSON line, or a
 * binary frame of the shim's (frame.h); link.c reads them, child.c acts on
 * them. */
#ifndef UST_PLUGIN_LINE_H
#define UST_PLUGIN_LINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/host.h>

/* Longest line (or binary frame) taken from a child. */
#define UST__MAX_LINE (4 << 20)

/* One line from the child, or one binary frame (frame.h). A "decision" is
 * taken apart on the link's thread too, which is most of what a decision
 * costs the host. */
typedef struct ust__line {
    json_t *json; /* NULL: the line is not JSON, or it was a decision or a frame */
    char *text;   /* the line itself, or the frame's payload (free()) */
    long rss_mib; /* the child's RSS when the line was read; 0: not measured */
    int64_t seq;  /* the event a decision or error line answers, when has_seq */
    int has_seq;
    int before_event; /* read before any event was written to the child */
    int is_decision;
    const char *bad; /* a decision refused, and why */
    ust_decision decision;
    json_t *writes; /* the decision's writes: [[key, value or null], ...] */
    /* A frame: its length; for an error, get or claim, the type and the
     * fields lent from text; a decision's writes, from writes_at on. */
    size_t frame_len, writes_at;
    uint32_t n_writes;
    const char *type, *key, *value, *message;
    char bad_frame[160]; /* not empty: the frame is not the protocol's, and why */
} ust__line;

/* Frees what the line holds and zeroes it. */
void ust__line_clear(ust__line *line);

#endif
