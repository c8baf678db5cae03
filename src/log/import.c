/* Import and export of interchange JSONL. Import derives every event again
 * (exported derived fields are ignored) and appends a whole file or nothing. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include <stdlib.h>
#include <string.h>

#define IMPORT_BATCH 512

/* Moves the request into rec and copies the derived fields it needs. */
static int record_from_event(ust_log_record *rec, ust_request *req, const ust_event *ev,
                             const ust_config *cfg)
{
    memset(rec, 0, sizeof(*rec));
    rec->req = *req;
    memset(req, 0, sizeof(*req));
    rec->sig = ev->sig;
    memcpy(rec->request_sha256, ev->request_sha256, sizeof(rec->request_sha256));
    memcpy(rec->config_hash, cfg->hash, sizeof(rec->config_hash));
    if ((ev->route && !(rec->route = ust_strdup(ev->route->path))) ||
        (ev->provider && !(rec->provider = ust_strdup(ev->provider))) ||
        (ev->event_id && !(rec->event_id = ust_strdup(ev->event_id))) ||
        (ev->identity && !(rec->identity = ust_strdup(ev->identity))))
        return UST_ENOMEM;
    return 0;
}

static int flush(ust_log *log, ust_log_record *batch, size_t *n, char **err)
{
    int rc = ust_log_append(log, batch, *n, NULL, err);
    for (size_t i = 0; i < *n; i++)
        ust_log_record_clear(&batch[i]);
    *n = 0;
    return rc;
}

int ust_log_import(ust_log *log, const ust_config *cfg, FILE *in, const char *label,
                   int64_t *n_out, char **err)
{
    if (n_out != NULL)
        *n_out = 0;
    ust_log_record *batch = ust_calloc(IMPORT_BATCH, sizeof(*batch));
    if (batch == NULL)
        return UST_ENOMEM;
    int rc = ust_log_begin(log, err);
    size_t n = 0, lineno = 0;
    int64_t total = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue; /* blank lines carry nothing */
        ust_request req;
        char *why = NULL;
        rc = ust_jsonl_parse(line, (size_t)len, &req, &why);
        if (rc != 0) {
            rc = ust_errf(err, rc, "%s:%zu: %s", label, lineno,
                          why ? why : ust_strerror(rc));
            ust_free(why);
            break;
        }
        ust_event ev;
        rc = ust_event_derive(cfg, &req, &ev, err);
        if (rc == 0)
            rc = record_from_event(&batch[n++], &req, &ev, cfg);
        ust_event_clear(&ev);
        ust_request_clear(&req);
        total++;
        if (rc == 0 && n == IMPORT_BATCH)
            rc = flush(log, batch, &n, err);
    }
    free(line);
    if (rc == 0 && ferror(in))
        rc = ust_errf(err, UST_EIO, "%s: read error", label);
    if (rc == 0)
        rc = flush(log, batch, &n, err);
    for (size_t i = 0; i < n; i++)
        ust_log_record_clear(&batch[i]);
    ust_free(batch);
    if (rc == 0)
        rc = ust_log_commit(log, err);
    else
        ust_log_rollback(log);
    if (rc == 0 && n_out != NULL)
        *n_out = total;
    return rc;
}

int ust_log_export(ust_log *log, FILE *out, int with_derived, char **err)
{
    ust_log_cursor *cur = NULL;
    int rc = ust_log_cursor_open(log, 0, &cur, err);
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    while (rc == 0 && (rc = ust_log_cursor_next(cur, &rec, err)) == 1) {
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
