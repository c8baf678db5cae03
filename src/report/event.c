/* One event for review: read from the run database and the event log. */
#include "report/event.h"
#include "report/html_escape.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/redact.h>

#include <string.h>

/* At most this many events of an entity's story are shown. */
enum { MAX_STORY = 100 };

/* The raw request of an event, as JSON for display, redacted. */
static json_t *raw_request(ust_log *log, const json_t *redact, int64_t seq)
{
    if (log == NULL)
        return NULL;
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    json_t *out = NULL;
    if (ust_log_cursor_open(log, seq - 1, &cur, NULL) == 0 &&
        ust_log_cursor_next(cur, &rec, NULL) == 1 && rec.seq == seq) {
        /* The request only: a recorded answer is shown (redacted) as the
         * legacy's decision. */
        ust_response_clear(&rec.response);
        char *line = ust_jsonl_format(&rec, 0);
        json_error_t jerr;
        out = line ? ust_json_loads(line, 0, &jerr) : NULL;
        ust_free(line);
        /* A JSON body is shown parsed, so its named fields can be masked. */
        json_t *body = json_object_get(out, "body");
        json_t *parsed = json_is_string(body)
                             ? ust_json_loads(json_string_value(body), 0, &jerr)
                             : NULL;
        if (parsed != NULL) {
            ust_redact_json(parsed, redact);
            json_object_set_new(out, "body", parsed);
        }
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(out, "headers"), i, h)
        {
            if (ust_redact_header(redact, json_string_value(json_array_get(h, 0))))
                json_array_set_new(h, 1, json_string("[redacted]"));
        }
    }
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    return out;
}

typedef struct event_loader {
    ust__report_event *e;
    const json_t *redact;
} event_loader;

static int take_divergence(void *ctx, const ust_run_divergence *d)
{
    event_loader *l = ctx;
    json_error_t jerr;
    l->e->divergence = ust_json_loads(d->line, 0, &jerr);
    ust_redact_json(
        json_object_get(json_object_get(l->e->divergence, "legacy"), "body"),
        l->redact);
    ust_redact_json(
        json_object_get(json_object_get(l->e->divergence, "candidate"), "body"),
        l->redact);
    if (d->entity != NULL && l->e->entity == NULL)
        l->e->entity = ust_strdup(d->entity);
    return 0;
}

static int add_story_row(void *ctx, const ust_run_event *ev)
{
    ust__report_event *e = ctx;
    if (e->n_story == MAX_STORY) {
        e->story_truncated = 1;
        return 1;
    }
    ust__report_story_row *r = &e->story[e->n_story++];
    r->seq = ev->seq;
    r->at = ev->received_at;
    r->event_type = ust_strdup(ev->event_type);
    r->lv = ust_strdup(ev->legacy_verdict);
    r->ls = ust_strdup(ev->legacy_state);
    r->cv = ust_strdup(ev->candidate_verdict);
    r->cs = ust_strdup(ev->candidate_state);
    r->diverged = ev->diverged;
    r->follow_on = ev->follow_on;
    return 0;
}

static int found(void *ctx, const ust_run_event *ev)
{
    (void)ctx, (void)ev;
    return 0;
}

int ust__report_event_load(ust_run *run, ust_log *log, const json_t *redact,
                           int64_t seq, ust__report_event *out, char **err)
{
    memset(out, 0, sizeof(*out));
    out->seq = seq;
    int rc = ust_run_event_at(run, seq, found, NULL, err);
    if (rc <= 0)
        return rc;
    event_loader l = {out, redact};
    ust_run_filter f = {.from = seq, .to = seq, .limit = 1};
    rc = ust_run_divergences(run, &f, take_divergence, &l, err);
    if (rc == 0 && out->entity != NULL) {
        out->story = ust_calloc(MAX_STORY, sizeof(*out->story));
        rc = out->story ? ust_run_timeline(run, out->entity, MAX_STORY + 1,
                                           add_story_row, out, err)
                        : UST_ENOMEM;
        if (rc == 1)
            rc = 0;
    }
    if (rc == 0)
        out->request = raw_request(log, redact, seq);
    if (rc != 0) {
        ust__report_event_clear(out);
        return rc;
    }
    return 1;
}

void ust__report_event_clear(ust__report_event *e)
{
    for (size_t r = 0; r < e->n_story; r++) {
        ust_free(e->story[r].event_type);
        ust_free(e->story[r].lv);
        ust_free(e->story[r].ls);
        ust_free(e->story[r].cv);
        ust_free(e->story[r].cs);
    }
    ust_free(e->story);
    ust_free(e->entity);
    json_decref(e->divergence);
    json_decref(e->request);
    memset(e, 0, sizeof(*e));
}

static void write_decision(FILE *f, const char *who, const json_t *d)
{
    fputs("<div><h4>", f);
    ust__html_esc(f, who);
    fputs("</h4><pre>", f);
    ust__html_json(f, d);
    fputs("</pre></div>", f);
}

static void write_story(FILE *f, const ust__report_event *e)
{
    fputs("<details><summary>timeline of <code>", f);
    ust__html_esc(f, e->entity);
    fprintf(
        f,
        "</code> (%zu event%s%s)</summary><table><tr><th>seq</th><th>received</th>"
        "<th>event</th><th>legacy</th><th>state</th><th>candidate</th><th>state</th>"
        "<th></th></tr>",
        e->n_story, e->n_story == 1 ? "" : "s",
        e->story_truncated ? ", first 100 shown" : "");
    for (size_t i = 0; i < e->n_story; i++) {
        const ust__report_story_row *r = &e->story[i];
        fprintf(f, "<tr%s><td class=n>%lld</td><td>",
                r->follow_on  ? " class=follow"
                : r->diverged ? " class=div"
                              : "",
                (long long)r->seq);
        ust__html_time(f, r->at);
        const char *cells[] = {r->event_type, r->lv, r->ls, r->cv, r->cs};
        for (int k = 0; k < 5; k++) {
            fputs("</td><td>", f);
            ust__html_esc(f, cells[k] ? cells[k] : (k == 1 || k == 3) ? "not fed" : "");
        }
        fputs("</td><td>", f);
        fputs(r->follow_on ? "follow-on" : r->diverged ? "divergence" : "", f);
        fputs("</td></tr>", f);
    }
    fputs("</table></details>", f);
}

void ust__report_event_html(FILE *f, const ust__report_event *e, int open)
{
    fprintf(f, "<details%s><summary>example: seq %lld, fields <code>",
            open ? " open" : "", (long long)e->seq);
    char *fields = json_dumps(json_object_get(e->divergence, "fields"), JSON_COMPACT);
    ust__html_esc(f, fields);
    ust_free(fields);
    fputs("</code></summary><div class=side>", f);
    write_decision(f, "legacy", json_object_get(e->divergence, "legacy"));
    write_decision(f, "candidate", json_object_get(e->divergence, "candidate"));
    fputs("</div><h4>request as received</h4><pre>", f);
    if (e->request != NULL)
        ust__html_json(f, e->request);
    else
        fputs("(the event log is not available)", f);
    fputs("</pre>", f);
    if (e->entity != NULL)
        write_story(f, e);
    fputs("</details>", f);
}
