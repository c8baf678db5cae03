/* What an isolated plugin's child writes to the host after its hello: binary
 * frames (src/plugin/frame.h), taken the way the host's link takes them
 * (src/plugin/link.c): each length checked with ust__frame_length, then the
 * payload through ust__frame_take, which validates a decision with the
 * checks of an in-process plugin's answer. The input is a run of frames; the
 * first incomplete or oversize one ends it, as it ends the child's
 * conversation. Invariants: an accepted decision's writes are all there
 * (each with a key), and written back with ust__frame_decision (what the
 * shim sends) and taken again, it is the same decision with the same
 * writes. */
#include "fuzz.h"

#include "plugin/frame.h"

static ust__body_memo memo; /* as the link keeps one across its frames */

static int same_string(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The writes of line, each checked to be there; their count. */
static uint32_t walk_writes(ust__line *line)
{
    size_t at = 0;
    const char *key = NULL, *value = NULL;
    uint32_t n = 0;
    int rc;
    while ((rc = ust__frame_next_write(line, &at, &key, &value)) == 0) {
        FUZZ_CHECK(key != NULL);
        n++;
    }
    FUZZ_CHECK(rc == 1);
    return n;
}

static void check_round_trip(ust__line *line)
{
    const ust_decision *d = &line->decision;
    ust__frame_out f;
    memset(&f, 0, sizeof(f));
    ust__frame_decision(&f, line->seq, d,
                        (const unsigned char *)line->text + line->writes_at,
                        line->frame_len - line->writes_at, line->n_writes);
    FUZZ_CHECK(f.error == 0);
    uint32_t n = 0;
    FUZZ_CHECK(ust__frame_length(f.buf, f.len, &n) == 1 &&
               n + UST__FRAME_HEAD == f.len);
    unsigned char *payload = malloc((size_t)n + 1);
    FUZZ_CHECK(payload != NULL);
    memcpy(payload, f.buf + UST__FRAME_HEAD, n);
    payload[n] = '\0';
    ust__line again;
    ust__frame_take(payload, n, &again, &memo);
    FUZZ_CHECK(again.bad_frame[0] == '\0' && again.is_decision && again.bad == NULL);
    const ust_decision *a = &again.decision;
    FUZZ_CHECK(again.seq == line->seq);
    FUZZ_CHECK(a->verdict == d->verdict && a->http_status == d->http_status);
    FUZZ_CHECK(same_string(a->body, d->body));
    FUZZ_CHECK((a->headers == NULL && d->headers == NULL) ||
               json_equal(a->headers, d->headers));
    FUZZ_CHECK(same_string(a->entity, d->entity) &&
               same_string(a->state_before, d->state_before) &&
               same_string(a->state_after, d->state_after) &&
               same_string(a->reason, d->reason));
    FUZZ_CHECK(a->n_flags == d->n_flags);
    for (size_t i = 0; i < d->n_flags; i++)
        FUZZ_CHECK(strcmp(a->flags[i], d->flags[i]) == 0);
    FUZZ_CHECK(again.n_writes == line->n_writes &&
               walk_writes(&again) == line->n_writes);
    ust__line_clear(&again);
    ust__frame_out_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    for (;;) {
        uint32_t n = 0;
        if (ust__frame_length(data + at, size - at, &n) != 1)
            break;
        unsigned char *payload = malloc((size_t)n + 1);
        FUZZ_CHECK(payload != NULL);
        if (n > 0)
            memcpy(payload, data + at + UST__FRAME_HEAD, n);
        payload[n] = '\0';
        at += UST__FRAME_HEAD + n;
        ust__line line;
        ust__frame_take(payload, n, &line, &memo);
        if (line.bad_frame[0] == '\0' && line.is_decision && line.bad == NULL) {
            FUZZ_CHECK(walk_writes(&line) == line.n_writes);
            check_round_trip(&line);
        }
        if (line.bad_frame[0] != '\0')
            FUZZ_CHECK(!line.is_decision && line.type == NULL);
        ust__line_clear(&line);
    }
    return 0;
}
