/* The binary framing between the host and its own shim (an isolated .so):
 * the same messages as the JSON-lines protocol (include/understudy/protocol.md,
 * "Binary frames"), without a JSON encoder or parser on either side. The
 * hello and init stay JSON lines; programs in other languages keep the JSON
 * lines throughout.
 *
 * A frame is a u32 length (little-endian, the bytes after it, at most
 * UST__MAX_LINE), then a one-byte type and its fields: integers fixed-width
 * little-endian, a string a u32 length, its bytes and a NUL (0xffffffff and
 * nothing after it: null). The NUL lets the reader lend the string in place;
 * a string must hold no other NUL (the raw body may: it is bytes). */
#ifndef UST_PLUGIN_FRAME_H
#define UST_PLUGIN_FRAME_H

#include "plugin/line.h"
#include "plugin/wire.h"

#include <understudy/event.h>
#include <understudy/host.h>

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* The frame types: host to shim in capitals, shim to host in lower case. */
enum {
    UST__FRAME_DECIDE = 'D',   /* the event (and its raw request, when wanted) */
    UST__FRAME_VALUE = 'V',    /* the reply to a get: the value or null */
    UST__FRAME_CLAIMED = 'C',  /* the reply to a claim: u8 0 or 1 */
    UST__FRAME_DECISION = 'd', /* seq, the decision, its writes */
    UST__FRAME_ERROR = 'e',    /* u8 has seq, seq, message */
    UST__FRAME_GET = 'g',      /* key */
    UST__FRAME_CLAIM = 'c',    /* key, value */
};

/* The length in front of a frame. */
#define UST__FRAME_HEAD 4

/* A frame being written: frames are appended one after another, each begun
 * with ust__frame_begin and closed with ust__frame_end (which writes its
 * length). error: UST_ENOMEM once a write failed (the buffer is then left
 * as it was before the frame). */
typedef struct ust__frame_out {
    unsigned char *buf;
    size_t len, cap, start;
    int error;
} ust__frame_out;

void ust__frame_begin(ust__frame_out *f, int type);
void ust__frame_u8(ust__frame_out *f, unsigned v);
void ust__frame_i64(ust__frame_out *f, int64_t v);
void ust__frame_string(ust__frame_out *f, const char *s); /* NULL: null */
/* n bytes as they are: fields written elsewhere, or a JSON line. */
void ust__frame_raw(ust__frame_out *f, const void *p, size_t n);
void ust__frame_end(ust__frame_out *f);
void ust__frame_out_free(ust__frame_out *f);

/* A frame's payload (after its length) being read. Every read checks what
 * is left; the first failure sets bad (a static reason) and makes every
 * later read fail too. */
typedef struct ust__frame_in {
    const unsigned char *p;
    size_t n, off;
    const char *bad;
} ust__frame_in;

unsigned ust__frame_read_u8(ust__frame_in *r);
/* A string lent from the payload (NULL: null, or bad set). */
const char *ust__frame_read_string(ust__frame_in *r);

/* The shim's reader of the host's frames: the next one's payload (free()),
 * NUL-terminated, its length in *n; NULL at the end of in, or when a length
 * is over UST__MAX_LINE (then in *n, and nothing after it can be read). */
unsigned char *ust__frame_fread(FILE *in, size_t *n);
/* Writes f's frames to out and flushes them: each answer leaves at once, so
 * a crash on a later event cannot take it along. 0 or UST_EIO. */
int ust__frame_fwrite(FILE *out, ust__frame_out *f);

/* Host to shim: the decide frame of ev (req NULL: without the raw request:
 * the plugin declined it). Every header goes, as the in-process plugin sees
 * it. */
void ust__frame_decide(ust__frame_out *f, const ust_event *ev, const ust_request *req);
/* The shim's end: the event of a decide payload (type byte first), strings
 * lent from it (it must outlive them); *route carries the route's path and
 * kind. Release with ust__frame_event_release. 0, UST_EPARSE or UST_ENOMEM. */
int ust__frame_event_parse(const unsigned char *p, size_t n, ust_event *ev,
                           ust_request *req, ust_route *route);
void ust__frame_event_release(ust_event *ev, ust_request *req);

/* Shim to host: the decision frame; writes is a run of (key, value or null)
 * string pairs, n_writes of them (written with ust__frame_string). */
void ust__frame_decision(ust__frame_out *f, int64_t seq, const ust_decision *d,
                         const unsigned char *writes, size_t writes_len,
                         uint32_t n_writes);
/* Shim to host: the error frame, for the event seq when has_seq (else the
 * host cannot tell which event it answers, and restarts the child). */
void ust__frame_error(ust__frame_out *f, int has_seq, int64_t seq, const char *message);

/* The length in front of the frame at p (have bytes of it read) into *n:
 * 1 when its payload is all there, 0 when it is not yet (*n set once the
 * length itself is), -1 when the length is over UST__MAX_LINE. */
int ust__frame_length(const unsigned char *p, size_t have, uint32_t *n);

/* The host's reader of one frame from the child (the payload, type byte
 * first, its length already checked against the cap): fills line (zeroed
 * first) as a JSON line would fill it: a decision validated with the checks
 * of an in-process plugin's (ust__adopt, memo as there), seq, and for the
 * other types line->type with key, value or message lent from `payload`,
 * which the line then owns (free()). A frame that is not one of the
 * protocol's sets line->bad_frame to why. */
void ust__frame_take(unsigned char *payload, size_t n, ust__line *line,
                     ust__body_memo *memo);

/* The next write of a decision line taken by ust__frame_take (0 and *key,
 * *value (NULL: a delete), 1 when there are no more, -1 when malformed). */
int ust__frame_next_write(ust__line *line, size_t *at, const char **key,
                          const char **value);

#endif
