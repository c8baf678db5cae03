/* Import and export of interchange JSONL. Import derives every event again
 * (exported derived fields are ignored) and appends a whole file or nothing. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMPORT_BATCH 512

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
#define FROM_EVENT(kind, m, column, wire, wire_at, export, source) FROM_EVENT_##kind(m)

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

/* A batch of parsed lines, before derivation. */
typedef struct import_batch {
    ust_request reqs[IMPORT_BATCH];
    ust_response answers[IMPORT_BATCH];
    size_t n;
} import_batch;

/* The thread that derives and appends each batch while the importing one
 * reads and parses the next: the body's second parse, its hashes and the
 * signature run on the other core. One batch at a time, in the order
 * handed over, so the rows and the chain are what one thread appends. */
typedef struct import_deriver {
    ust_log *log;
    const ust_config *cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    import_batch *queued; /* handed over, not appended yet */
    int64_t appended;     /* events appended so far */
    int stop;             /* nothing more will be handed over */
    int rc;               /* the first batch that failed, with err */
    char *err;
} import_deriver;

/* Derives and appends b (or only lets it go after a failure). */
static void deriver_run(import_deriver *d, import_batch *b, int failed)
{
    char *err = NULL;
    size_t n = b->n;
    int rc = failed;
    if (failed == 0)
        rc = flush(d->log, d->cfg, b->reqs, b->answers, &b->n, &err);
    for (size_t i = 0; i < b->n; i++) {
        ust_request_clear(&b->reqs[i]);
        ust_response_clear(&b->answers[i]);
    }
    b->n = 0;
    pthread_mutex_lock(&d->mu);
    if (failed == 0 && rc != 0) {
        d->rc = rc;
        d->err = err;
        err = NULL;
    } else if (rc == 0) {
        d->appended += (int64_t)n;
    }
    d->queued = NULL;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    ust_free(err);
}

static void *derive_batches(void *arg)
{
    import_deriver *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->queued == NULL && !d->stop)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->queued == NULL)
            break;
        import_batch *b = d->queued;
        int failed = d->rc;
        pthread_mutex_unlock(&d->mu);
        deriver_run(d, b, failed);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Waits until the deriver has appended what it was handed; its rc, and the
 * events appended in *appended. */
static int deriver_idle(import_deriver *d, int64_t *appended)
{
    pthread_mutex_lock(&d->mu);
    while (d->queued != NULL)
        pthread_cond_wait(&d->cv, &d->mu);
    int rc = d->rc;
    *appended = d->appended;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Hands b over (the deriver idle); without a thread, runs it here. */
static void deriver_hand(import_deriver *d, import_batch *b, int threaded)
{
    if (!threaded) {
        d->queued = b;
        deriver_run(d, b, 0);
        return;
    }
    pthread_mutex_lock(&d->mu);
    d->queued = b;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Reads and parses into one batch while the deriver derives and appends
 * the other. A line that does not parse is reported only once the batches
 * before it are in: an earlier failure is the one to tell. */
static int import_lines(import_deriver *d, import_batch *slots, int threaded, FILE *in,
                        const char *label, const ust_progress *progress, char **err)
{
    int64_t bytes = 0, size = progress != NULL ? input_size(in, &bytes) : -1;
    int64_t appended = 0;
    import_batch *b = &slots[0];
    size_t lineno = 0;
    char *line = NULL, *mine = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        bytes += len;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue; /* blank lines carry nothing */
        char *why = NULL;
        rc = ust_jsonl_parse_exchange(line, (size_t)len, &b->reqs[b->n],
                                      &b->answers[b->n], &why);
        if (rc != 0) {
            rc = ust_errf(&mine, rc, "%s:%zu: %s", label, lineno,
                          why ? why : ust_strerror(rc));
            ust_free(why);
            break;
        }
        if (++b->n < IMPORT_BATCH)
            continue;
        /* The other batch is in before this one is handed over. */
        if ((rc = deriver_idle(d, &appended)) != 0)
            break;
        tell(progress, appended, bytes, size);
        deriver_hand(d, b, threaded);
        b = b == &slots[0] ? &slots[1] : &slots[0];
    }
    free(line);
    if (rc == 0 && ferror(in))
        rc = ust_errf(&mine, UST_EIO, "%s: read error", label);
    if (rc == 0 && b->n > 0 && (rc = deriver_idle(d, &appended)) == 0)
        deriver_hand(d, b, threaded);
    int derived = deriver_idle(d, &appended);
    for (size_t i = 0; i < b->n; i++) { /* a batch that was not handed over */
        ust_request_clear(&b->reqs[i]);
        ust_response_clear(&b->answers[i]);
    }
    b->n = 0;
    if (derived != 0) {
        rc = ust_errf(err, derived, "%s", d->err ? d->err : ust_strerror(derived));
    } else if (rc != 0) {
        rc = ust_errf(err, rc, "%s", mine ? mine : ust_strerror(rc));
    } else {
        tell(progress, appended, size, size); /* at the end: all of it read */
    }
    ust_free(mine);
    return rc;
}

int ust_log_import_progress(ust_log *log, const ust_config *cfg, FILE *in,
                            const char *label, const ust_progress *progress,
                            int64_t *n_out, char **err)
{
    if (n_out != NULL)
        *n_out = 0;
    import_batch *slots = ust_calloc(2, sizeof(*slots));
    if (slots == NULL)
        return UST_ENOMEM;
    import_deriver d;
    memset(&d, 0, sizeof(d));
    d.log = log;
    d.cfg = cfg;
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    int rc = ust_log_begin(log, err);
    pthread_t thread;
    int threaded = rc == 0 && pthread_create(&thread, NULL, derive_batches, &d) == 0;
    if (rc == 0)
        rc = import_lines(&d, slots, threaded, in, label, progress, err);
    if (threaded) {
        pthread_mutex_lock(&d.mu);
        d.stop = 1;
        pthread_cond_broadcast(&d.cv);
        pthread_mutex_unlock(&d.mu);
        pthread_join(thread, NULL);
    }
    pthread_cond_destroy(&d.cv);
    pthread_mutex_destroy(&d.mu);
    ust_free(d.err);
    ust_free(slots);
    if (rc == 0)
        rc = ust_log_commit(log, err);
    else
        ust_log_rollback(log);
    if (rc == 0 && n_out != NULL)
        *n_out = d.appended;
    return rc;
}

int ust_import_format_parse(const char *name, ust_import_format *out)
{
    static const char *const names[] = {"jsonl", "har", "goreplay"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
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
        rc = ust_log_record_derive(cfg, &e->req, &recs[built], &why);
        if (rc != 0) {
            rc = ust_errf(err, rc, "%s: %s: %s", label, e->where,
                          why ? why : ust_strerror(rc));
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
        char *line = ust_jsonl_format(&rec, with_derived);
        rc = line == NULL ? UST_ENOMEM : 0;
        if (line != NULL && (fputs(line, out) == EOF || fputc('\n', out) == EOF))
            rc = ust_errf(err, UST_EIO, "export: write failed");
        ust_free(line);
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    return rc < 0 ? rc : 0;
}
