/* One event as HTML: the values that differ side by side, the request as it
 * arrived (and its recorded answer), the derived fields and the entity's
 * story. Every string from outside goes through html_escape.h. */
#include "report/event.h"
#include "report/html_escape.h"

#include <understudy/alloc.h>

#include <string.h>

static void put_cell(FILE *f, const char *cls, const json_t *entry, const char *side)
{
    fprintf(f, "<td class=%s>", cls);
    json_t *v = json_object_get(entry, side);
    if (v == NULL) {
        fputs("<span class=absent>(absent)</span>", f);
    } else {
        char *t = ust__report_json_compact(v);
        fputs("<code>", f);
        ust__html_esc(f, t);
        fputs("</code>", f);
        ust_free(t);
    }
    fputs("</td>", f);
}

static void write_diff(FILE *f, const json_t *diff)
{
    if (json_array_size(diff) == 0)
        return;
    fputs("<table class=diff><tr><th>field</th><th>legacy</th><th>candidate</th></tr>",
          f);
    size_t i;
    json_t *entry;
    json_array_foreach(diff, i, entry)
    {
        fputs("<tr><th>", f);
        ust__html_esc(f, json_string_value(json_object_get(entry, "field")));
        fputs("</th>", f);
        put_cell(f, "legacy", entry, "legacy");
        put_cell(f, "candidate", entry, "candidate");
        fputs("</tr>", f);
    }
    fputs("</table>", f);
}

static void write_decision(FILE *f, const char *who, const json_t *d)
{
    fputs("<div><h4>", f);
    ust__html_esc(f, who);
    fputs("</h4><pre>", f);
    ust__html_json(f, d);
    fputs("</pre></div>", f);
}

static void write_pairs(FILE *f, const char *cls, const char *key, const char *value,
                        const ust__report_pair *p, size_t n)
{
    fprintf(f, "<table class=%s><tr><th>%s</th><th>%s</th></tr>", cls, key, value);
    for (size_t i = 0; i < n; i++) {
        fputs("<tr><td><code>", f);
        ust__html_esc(f, p[i].name);
        fputs("</code></td><td>", f);
        if (p[i].value != NULL) {
            fputs("<code>", f);
            ust__html_esc(f, p[i].value);
            fputs("</code>", f);
        } else {
            fputs("<span class=absent>(absent)</span>", f);
        }
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void write_message(FILE *f, const ust__report_message *m)
{
    write_pairs(f, "headers", "header", "value", m->headers, m->n_headers);
    if (m->body_len == 0) {
        fputs("<p class=muted>no body</p>", f);
        return;
    }
    fprintf(f, "<h5>body as it arrived (%zu bytes)</h5>", m->body_len);
    if (m->withheld)
        fputs("<p class=muted>not shown: the run's redaction rules mask a field of"
              " it, and raw bytes cannot be masked in part (the masked body is"
              " below)</p>",
              f);
    else if (m->text != NULL) {
        fputs("<pre class=raw>", f);
        ust__html_esc(f, m->text);
        fputs("</pre>", f);
    } else {
        fputs("<p class=muted>not UTF-8 text (or holds NUL bytes): its bytes in"
              " base64</p><pre class=raw>",
              f);
        ust__html_esc(f, m->base64);
        fputs("</pre>", f);
    }
    if (m->pretty != NULL) {
        fputs("<h5>body as JSON</h5><pre>", f);
        ust__html_json(f, m->pretty);
        fputs("</pre>", f);
    }
}

static void write_request(FILE *f, const ust__report_event *e)
{
    fputs("<h4>request as it arrived</h4>", f);
    if (!e->has_request) {
        fputs("<p class=muted>(the event log is not available)</p>", f);
        return;
    }
    fputs("<p><code>", f);
    ust__html_esc(f, e->method);
    fputs(" ", f);
    ust__html_esc(f, e->target);
    fputs("</code> from <code>", f);
    ust__html_esc(f, e->remote);
    fputs("</code> at ", f);
    ust__html_time(f, e->received_at);
    fputs("</p>", f);
    write_message(f, &e->req);
    fputs("<h4>derived fields</h4>", f);
    write_pairs(f, "derived", "field", "value", e->derived, e->n_derived);
    if (e->response_status != 0) {
        fprintf(f, "<h4>recorded answer: %d</h4>", e->response_status);
        write_message(f, &e->resp);
    }
}

static void write_repeat(FILE *f, const ust__report_event *e)
{
    if (e->repeats.seq == 0)
        return;
    fputs("<p class=repeat>semantic duplicate of <a href=\"#seq-", f);
    fprintf(f, "%lld\"><code>", (long long)e->repeats.seq);
    ust__html_esc(f, e->repeats.identity);
    fprintf(f, "</code></a> (seq %lld, received ", (long long)e->repeats.seq);
    ust__html_time(f, e->repeats.at);
    fputs(")</p>", f);
}

static void put_text_cell(FILE *f, const char *s)
{
    fputs("</td><td>", f);
    ust__html_esc(f, s);
}

static void write_story(FILE *f, const ust__report_event *e)
{
    fputs("<details open><summary>timeline of <code>", f);
    ust__html_esc(f, e->entity);
    fprintf(f,
            "</code> (%zu event%s%s)</summary><table class=story><tr><th>seq</th>"
            "<th>received</th><th>event id</th><th>event type</th><th>amount</th>"
            "<th>legacy verdict</th><th>legacy state</th><th>candidate verdict</th>"
            "<th>candidate state</th><th></th></tr>",
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
        put_text_cell(f, r->event_id);
        put_text_cell(f, r->event_type);
        fputs("</td><td class=n>", f);
        if (r->has_amount)
            fprintf(f, "%lld ", (long long)r->amount);
        ust__html_esc(f, r->currency);
        put_text_cell(f, r->lv ? r->lv : "not fed");
        put_text_cell(f, r->ls);
        put_text_cell(f, r->cv ? r->cv : "not fed");
        put_text_cell(f, r->cs);
        fputs("</td><td>", f);
        if (r->seq == e->seq)
            fputs("<strong>this divergence</strong>", f);
        else
            fputs(r->follow_on ? "follow-on" : r->diverged ? "divergence" : "", f);
        fputs("</td></tr>", f);
    }
    fputs("</table></details>", f);
}

void ust__report_event_html(FILE *f, const ust__report_event *e, int open)
{
    fprintf(
        f,
        "<details%s id=seq-%lld class=event><summary>example: seq %lld, fields <code>",
        open ? " open" : "", (long long)e->seq, (long long)e->seq);
    char *fields = ust__report_json_compact(json_object_get(e->divergence, "fields"));
    ust__html_esc(f, fields);
    ust_free(fields);
    fputs("</code></summary>", f);
    write_diff(f, json_object_get(e->divergence, "diff"));
    write_repeat(f, e);
    fputs("<details><summary>both decisions in full</summary><div class=side>", f);
    write_decision(f, "legacy", json_object_get(e->divergence, "legacy"));
    write_decision(f, "candidate", json_object_get(e->divergence, "candidate"));
    fputs("</div></details>", f);
    write_request(f, e);
    if (e->entity != NULL)
        write_story(f, e);
    fputs("</details>", f);
}
