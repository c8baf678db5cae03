/* Import and export of interchange JSONL. Import derives every event again
 * (exported derived fields are ignored) and appends a whole file or nothing. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/capture.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMPORT_BATCH 512
/* A batch is appended once its lines hold this much too, and a line
 * buffer grown past a big line's size is let go after it: a file of large
 * events holds a few of them at a time, not 512, nor its largest line's
 * buffer to the end. */
#define IMPORT_BATCH_BYTES (16u << 20)
#define IMPORT_LINE_KEPT (1u << 20)

static int copy_text(char **to, const char *from)
{
    return from != NULL && (*to = ust_strdup(from)) == NULL ? UST_ENOMEM : 0;
}

/* A derived field from the event into the row: its strings move (the event
 * is cleared after), the route's path is copied (the event borrows it). */
#define FROM_EVENT_TEXT(m)                                                             \
    rec->m = ev->m;                                                                    \
    ev->m = NULL;
#define FROM_EVENT_ROUTE(m)                                                            \
    if (copy_text(&rec->m, ev->m ? ev->m->path : NULL) != 0)                           \
        return UST_ENOMEM;
#define FROM_EVENT_SHA(m) memcpy(rec->m, ev->m, sizeof(rec->m));
#define FROM_EVENT_SIG(m) rec->m = ev->m;
#define FROM_EVENT_AMOUNT(m)                                                           \
    rec->m = ev->m;                                                                    \
    rec->has_##m = ev->has_##m;
#define FROM_EVENT_CONFIG(m) memcpy(rec->m, cfg->hash, sizeof(rec->m));
#define FROM_EVENT(kind, m, column, wire, wire_at, export, source, since, desc)        \
    FROM_EVENT_##kind(m)

/* Borrows the request (shallow copy) and takes the derived fields. */
static int record_from_event(ust_log_record *rec, const ust_request *req, ust_event *ev,
                             const ust_config *cfg)
{
    memset(rec, 0, sizeof(*rec));
    rec->req = *req;
    UST_EVENT_FIELDS(FROM_EVENT)
    return 0;
}

static void clear_derived(ust_log_record *rec)
{
    memset(&rec->req, 0, sizeof(rec->req)); /* borrowed, not ours to free */
    memset(&rec->response, 0, sizeof(rec->response));
    ust_log_record_clear(rec);
}

int ust_log_record_derive(const ust_config *cfg, ust_request *req, ust_log_record *rec,
                          char **err)
{
    ust_event ev;
    int rc = ust_event_derive(cfg, req, &ev, err);
    /* After derivation (the config refuses to mask a header it reads), before
     * the row exists: a masked value is never written anywhere. */
    if (rc == 0 && ust_capture_mask(cfg, req) != 0)
        rc = ust_errf(err, UST_ENOMEM, "out of memory");
    if (rc == 0)
        rc = record_from_event(rec, req, &ev, cfg);
    ust_event_clear(&ev);
    if (rc != 0)
        clear_derived(rec);
    return rc;
}

void ust_log_record_clear_derived(ust_log_record *rec)
{
    clear_derived(rec);
}

int ust_log_append_requests(ust_log *log, const ust_config *cfg, ust_request *reqs,
                            size_t n, int64_t *first_seq, ust_sig_status *sigs,
                            char **err)
{
    return ust_log_append_exchanges(log, cfg, reqs, NULL, n, first_seq, sigs, err);
}

int ust_log_append_exchanges(ust_log *log, const ust_config *cfg, ust_request *reqs,
                             const ust_response *resps, size_t n, int64_t *first_seq,
                             ust_sig_status *sigs, char **err)
{
    ust_log_record *recs = ust_calloc(n ? n : 1, sizeof(*recs));
    if (recs == NULL)
        return UST_ENOMEM;
    int rc = 0;
    size_t built = 0;
    for (; rc == 0 && built < n; built++) {
        rc = ust_log_record_derive(cfg, &reqs[built], &recs[built], err);
        if (rc == 0 && resps != NULL)
            recs[built].response = resps[built]; /* borrowed, as the request */
        if (rc == 0 && sigs != NULL)
            sigs[built] = recs[built].sig;
    }
    if (rc == 0)
        rc = ust_log_append(log, recs, n, first_seq, err);
    for (size_t i = 0; i < built; i++)
        clear_derived(&recs[i]);
    ust_free(recs);
    return rc;
}

static int flush(ust_log *log, const ust_config *cfg, ust_request *batch,
                 ust_response *answers, size_t *n, char **err)
{
    int rc = ust_log_append_exchanges(log, cfg, batch, answers, *n, NULL, NULL, err);
    for (size_t i = 0; i < *n; i++) {
        ust_request_clear(&batch[i]);
        ust_response_clear(&answers[i]);
    }
    *n = 0;
    return rc;
}

/* One line of in into *buf (grown to hold it, *cap its size; the caller's
 * to ust_free), without its '\n'; *len its length, *read the bytes taken
 * from in. 1 a line, 0 the end of in, UST_ELIMIT when the line is longer
 * than max (what is left of it is not read: no line costs more memory than
 * the limit), UST_ENOMEM. */
static int read_line(FILE *in, size_t max, char **buf, size_t *cap, size_t *len,
                     int64_t *read)
{
    size_t n = 0;
    int c = EOF;
    flockfile(in);
    while ((c = getc_unlocked(in)) != EOF && c != '\n') {
        if (n == max) {
            n++;
            break;
        }
        if (n + 1 >= *cap) {
            char *grown = ust_grow(*buf, cap, n + 2, 4096, 1);
            if (grown == NULL) {
                funlockfile(in);
                return UST_ENOMEM;
            }
            *buf = grown;
        }
        (*buf)[n++] = (char)c;
    }
    funlockfile(in);
    *read += (int64_t)n + (c == '\n');
    if (n > max)
        return UST_ELIMIT;
    if (n == 0 && c == EOF)
        return 0;
    *len = n;
    return 1;
}

/* Events appended, and the share of the file read. */
static void tell(const ust_progress *p, int64_t events, int64_t bytes, int64_t size)
{
    ust_progress_tell(p, events,
                      size < 0        ? -1
                      : bytes >= size ? 1
                                      : (double)bytes / (double)size);
}

/* The size of in when it is a regular file, with the bytes already read
 * from it; -1 when not known (a pipe, a terminal). */
static int64_t input_size(FILE *in, int64_t *offset)
{
    struct stat sb;
    off_t at = ftello(in);
    *offset = at > 0 ? (int64_t)at : 0;
    if (fstat(fileno(in), &sb) != 0 || !S_ISREG(sb.st_mode) || at < 0 ||
        sb.st_size <= 0)
        return -1;
    return (int64_t)sb.st_size;
}

int ust_log_import(ust_log *log, const ust_config *cfg, FILE *in, const char *label,
                   int64_t *n_out, char **err)
{
    return ust_log_import_progress(log, cfg, in, label, NULL, n_out, err);
}

int ust_log_import_progress(ust_log *log, const ust_config *cfg, FILE *in,
                            const char *label, const ust_progress *progress,
                            int64_t *n_out, char **err)
{
    if (n_out != NULL)
        *n_out = 0;
    int64_t bytes = 0, size = progress != NULL ? input_size(in, &bytes) : -1;
    ust_request *batch = ust_calloc(IMPORT_BATCH, sizeof(*batch));
    ust_response *answers = ust_calloc(IMPORT_BATCH, sizeof(*answers));
    if (batch == NULL || answers == NULL) {
        ust_free(batch);
        ust_free(answers);
        return UST_ENOMEM;
    }
    int rc = ust_log_begin(log, err);
    size_t n = 0, lineno = 0, held = 0, max = cfg->import.max_line_bytes;
    int64_t total = 0;
    char *line = NULL;
    size_t cap = 0, len = 0;
    int got;
    max = max > 0 ? max : UST_IMPORT_DEFAULT_MAX_LINE(cfg->limits.max_body_bytes);
    while (rc == 0 && (got = read_line(in, max, &line, &cap, &len, &bytes)) != 0) {
        lineno++;
        if (got == UST_ELIMIT) {
            rc = ust_errf(err, UST_EPARSE,
                          "%s:%zu: the line is longer than import.max_line_bytes (%zu"
                          " bytes): refused without reading the rest of it",
                          label, lineno, max);
            break;
        }
        if (got < 0) {
            rc = got;
            break;
        }
        while (len > 0 && line[len - 1] == '\r')
            len--;
        if (len == 0)
            continue; /* blank lines carry nothing */
        char *why = NULL;
        rc = ust_jsonl_parse_exchange(line, (size_t)len, &batch[n], &answers[n], &why);
        if (rc != 0) {
            rc = ust_errf(err, rc, "%s:%zu: %s", label, lineno,
                          why ? why : ust_strerror(rc));
            ust_free(why);
            break;
        }
        n++;
        total++;
        held += (size_t)len;
        if (cap > IMPORT_LINE_KEPT) {
            ust_free(line);
            line = NULL;
            cap = 0;
        }
        if ((n == IMPORT_BATCH || held >= IMPORT_BATCH_BYTES) &&
            (rc = flush(log, cfg, batch, answers, &n, err)) == 0) {
            held = 0;
            tell(progress, total, bytes, size);
        }
    }
    ust_free(line);
    if (rc == 0 && ferror(in))
        rc = ust_errf(err, UST_EIO, "%s: read error", label);
    if (rc == 0 && (rc = flush(log, cfg, batch, answers, &n, err)) == 0)
        tell(progress, total, size, size); /* at the end: all of it read */
    for (size_t i = 0; i < n; i++) {
        ust_request_clear(&batch[i]);
        ust_response_clear(&answers[i]);
    }
    ust_free(batch);
    ust_free(answers);
    if (rc == 0)
        rc = ust_log_commit(log, err);
    else
        ust_log_rollback(log);
    if (rc == 0 && n_out != NULL)
        *n_out = total;
    return rc;
}

int ust_import_format_parse(const char *name, ust_import_format *out)
{
    static const char *const names[] = {"jsonl", "har", "goreplay"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(names); i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (ust_import_format)i;
            return 0;
        }
    return UST_EINVAL;
}

/* All of in, NUL-terminated. 0, UST_EIO or UST_ENOMEM. */
static int read_all(FILE *in, char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = ust_malloc(cap);
    while (b != NULL) {
        n += fread(b + n, 1, cap - n - 1, in);
        if (n + 1 < cap)
            break;
        char *grown = ust_realloc(b, cap *= 2);
        if (grown == NULL)
            ust_free(b);
        b = grown;
    }
    if (b == NULL)
        return UST_ENOMEM;
    if (ferror(in)) {
        ust_free(b);
        return UST_EIO;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* Appends the records built so far (their requests and answers borrowed
 * from the capture) and lets them go. */
static int flush_records(ust_log *log, ust_log_record *recs, size_t *n, char **err)
{
    int rc = *n > 0 ? ust_log_append(log, recs, *n, NULL, err) : 0;
    for (size_t i = 0; i < *n; i++) {
        memset(&recs[i].response, 0, sizeof(recs[i].response));
        clear_derived(&recs[i]);
    }
    *n = 0;
    return rc;
}

/* Every entry of c with a route, in one transaction. */
static int append_capture(ust_log *log, const ust_config *cfg, ust__capture *c,
                          const char *label, int64_t *n_out, int64_t *skipped,
                          char **err)
{
    ust_log_record *recs = ust_calloc(IMPORT_BATCH, sizeof(*recs));
    if (recs == NULL)
        return UST_ENOMEM;
    int rc = ust_log_begin(log, err);
    size_t built = 0;
    int64_t total = 0, skip = 0;
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        ust__capture_entry *e = &c->v[i];
        if (ust_config_route(cfg, e->req.target) == NULL) {
            skip++;
            continue;
        }
        char *why = NULL;
        /* The parsers hold each field to its own rule; this is the rule a
         * url plugin sends by, said once for every format. */
        rc = ust_request_check(&e->req, &why);
        if (rc == 0)
            rc = ust_log_record_derive(cfg, &e->req, &recs[built], &why);
        if (rc != 0) {
            rc = ust__capture_fail(err, rc, label, e->line, e->where, why);
            ust_free(why);
            break;
        }
        recs[built++].response = e->response;
        total++;
        if (built == IMPORT_BATCH)
            rc = flush_records(log, recs, &built, err);
    }
    if (rc == 0)
        rc = flush_records(log, recs, &built, err);
    for (size_t i = 0; i < built; i++) {
        memset(&recs[i].response, 0, sizeof(recs[i].response));
        clear_derived(&recs[i]);
    }
    ust_free(recs);
    if (rc == 0)
        rc = ust_log_commit(log, err);
    else
        ust_log_rollback(log);
    if (rc == 0) {
        *n_out = total;
        *skipped = skip;
    }
    return rc;
}

int ust_log_import_capture(ust_log *log, const ust_config *cfg, FILE *in,
                           const char *label, ust_import_format format, int64_t *n,
                           int64_t *skipped, char **err)
{
    int64_t n_local = 0, skipped_local = 0;
    n = n != NULL ? n : &n_local;
    skipped = skipped != NULL ? skipped : &skipped_local;
    *n = *skipped = 0;
    if (format == UST_IMPORT_JSONL)
        return ust_log_import(log, cfg, in, label, n, err);
    char *buf = NULL;
    size_t len = 0;
    int rc = read_all(in, &buf, &len);
    if (rc != 0)
        return ust_errf(err, rc, "%s: %s", label,
                        rc == UST_EIO ? "read error" : ust_strerror(rc));
    ust__capture c;
    rc = format == UST_IMPORT_HAR ? ust__har_parse(buf, len, label, &c, err)
                                  : ust__goreplay_parse(buf, len, label, &c, err);
    ust_free(buf);
    if (rc == 0)
        rc = append_capture(log, cfg, &c, label, n, skipped, err);
    ust__capture_clear(&c);
    return rc;
}

/* ust_jsonl_write's out, into a file. */
static int write_out(const char *s, size_t n, void *data)
{
    return fwrite(s, 1, n, data) == n ? 0 : -1;
}

int ust_log_export(ust_log *log, FILE *out, int with_derived, char **err)
{
    return ust_log_export_edited(log, out, with_derived, NULL, NULL, err);
}

int ust_log_export_edited(ust_log *log, FILE *out, int with_derived,
                          int (*edit)(ust_log_record *rec, void *arg), void *arg,
                          char **err)
{
    ust_log_cursor *cur = NULL;
    int rc = ust_log_cursor_open(log, 0, &cur, err);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    while (rc == 0 && (rc = ust_log_cursor_next(cur, &rec, err)) == 1) {
        if (edit != NULL && (rc = edit(&rec, arg)) != 0) {
            rc = ust_errf(err, rc, "export: seq %lld: %s", (long long)rec.seq,
                          ust_strerror(rc));
            break;
        }
        /* Written as it is encoded: a large body is never a second time
         * in memory. */
        rc = 0;
        if (ust_jsonl_write(&rec, with_derived, write_out, out) != 0 ||
            fputc('\n', out) == EOF)
            rc = ust_errf(err, UST_EIO, "export: write failed");
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    return rc < 0 ? rc : 0;
}
