/* What a plugin's child writes to the host, read in pieces: the link's reader
 * (src/plugin/link.c, fed through ust__link_feed as a read of the child's
 * stdout feeds it) must deliver the same lines, frames and end however the
 * pipe cut the stream. A child's hello split across two reads failed its
 * start ("did not say hello: bad hello"). The input: a byte of flags (bit 0:
 * binary frames after the first line, as with an isolated .so's shim), a
 * count of cuts (mod 32), that many piece lengths (1 to 256 bytes each),
 * then the stream. The stream is read whole, in those pieces (the rest in
 * one), and a byte at a time; each reading ends with the end of the output.
 * Invariant: the three deliver the same messages (text, JSON, decision,
 * frame fields, refusal) and end the same way (code and note). */
#include "fuzz.h"

#include "plugin/link.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

/* What one reading delivered, as text: compared with memcmp. */
typedef struct reading {
    char *text;
    size_t len;
} reading;

static void put(reading *r, const void *p, size_t n)
{
    FUZZ_CHECK(ust_str_append(&r->text, &r->len, p, n) == 0);
}

static void put_str(reading *r, const char *s)
{
    put(r, s ? s : "(null)", strlen(s ? s : "(null)"));
    put(r, "\x1f", 1);
}

static void put_num(reading *r, long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", v);
    put_str(r, buf);
}

static void put_json(reading *r, const json_t *j)
{
    char *text =
        j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    put_str(r, text);
    ust_free(text);
}

static void put_line(reading *r, const ust__line *line)
{
    put(r, "\x1e", 1);
    if (line->frame_len > 0 || line->bad_frame[0]) /* its payload is bytes */
        put(r, line->text ? line->text : "", line->text ? line->frame_len : 0);
    else
        put_str(r, line->text);
    put_json(r, line->json);
    put_num(r, line->is_decision);
    put_num(r, line->has_seq ? line->seq : -1);
    put_str(r, line->bad);
    put_str(r, line->type);
    put_str(r, line->key);
    put_str(r, line->value);
    put_str(r, line->message);
    put_str(r, line->bad_frame);
    put_num(r, line->n_writes);
    put_json(r, line->writes);
    const ust_decision *d = &line->decision;
    put_num(r, d->verdict);
    put_num(r, d->http_status);
    put_str(r, d->body);
    put_json(r, d->headers);
    put_str(r, d->reason);
    put_num(r, (long long)d->n_flags);
}

/* Reads stream (n bytes) in pieces of the lengths cuts gives (then the rest
 * whole; every piece n long when each is set), and its end. */
static reading read_stream(int binary, const uint8_t *stream, size_t n,
                           const uint8_t *cuts, size_t n_cuts, int each)
{
    ust__link *l = NULL;
    FUZZ_CHECK(ust__link_open_reader(binary, &l) == 0);
    size_t at = 0;
    for (size_t i = 0; at < n && (each || i < n_cuts); i++) {
        size_t piece = each ? 1 : (size_t)cuts[i] + 1;
        if (piece > n - at)
            piece = n - at;
        ust__link_feed(l, stream + at, piece);
        at += piece;
    }
    if (at < n)
        ust__link_feed(l, stream + at, n - at);
    ust__link_feed(l, NULL, 0);
    reading r = {NULL, 0};
    for (;;) {
        ust__line line;
        int rc = ust__link_receive(l, 0, &line);
        FUZZ_CHECK(rc != UST_ETIMEOUT); /* it ended: nothing is left to wait for */
        if (rc != 0) {
            put(&r, "\x1d", 1);
            put_num(&r, rc);
            put_str(&r, ust__link_end_note(l));
            break;
        }
        put_line(&r, &line);
        ust__line_clear(&line);
    }
    ust__link_stop(l);
    return r;
}

static void expect_same(const reading *a, const reading *b)
{
    FUZZ_CHECK(a->len == b->len && memcmp(a->text, b->text, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int binary = data[0] & 1;
    size_t n_cuts = data[1] % 32;
    if (size < 2 + n_cuts)
        return 0;
    const uint8_t *cuts = data + 2, *stream = data + 2 + n_cuts;
    size_t n = size - 2 - n_cuts;
    reading whole = read_stream(binary, stream, n, NULL, 0, 0);
    reading cut = read_stream(binary, stream, n, cuts, n_cuts, 0);
    expect_same(&whole, &cut);
    reading bytes = read_stream(binary, stream, n, NULL, 0, 1);
    expect_same(&whole, &bytes);
    ust_free(whole.text);
    ust_free(cut.text);
    ust_free(bytes.text);
    return 0;
}
