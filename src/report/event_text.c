/* One event as text for a terminal (understudy show). A payload must not
 * drive the terminal: control characters (C0, DEL, C1), bidi controls and
 * bytes that are not UTF-8 are written escaped, never raw. */
#include "report/event.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>

#include <stdio.h>
#include <string.h>

/* s with everything a terminal would act on escaped; newlines kept when
 * multiline (a body's lines), else shown as \n. */
static void put_term(FILE *f, const char *s, int multiline)
{
    if (s == NULL)
        return;
    size_t n = strlen(s);
    int utf8 = ust_utf8_valid((const unsigned char *)s, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        uint32_t bidi = c == 0xE2 ? ust_utf8_bidi_control(s + i) : 0;
        if (c == '\n' && multiline)
            fputc('\n', f);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs(multiline ? "\t" : "\\t", f);
        else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8))
            fprintf(f, "\\x%02x", c);
        else if (c == 0xC2 && (unsigned char)s[i + 1] >= 0x80 &&
                 (unsigned char)s[i + 1] <= 0x9F) /* a C1 control */
            fprintf(f, "\\u%04x", (unsigned char)s[++i]);
        else if (bidi != 0) {
            fprintf(f, "{U+%04X}", (unsigned)bidi);
            i += 2;
        } else
            fputc(c, f);
    }
}

/* put_term's output as a string, for a table cell (ust_free'd). */
static char *term_text(const char *s)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (m == NULL)
        return NULL;
    put_term(m, s ? s : "", 0);
    fclose(m);
    char *out = ust_strdup(buf);
    free(buf);
    return out;
}

/* Rows of cells (already escaped; NULL shown empty), columns padded to their
 * widest cell up to a cap, indented by two spaces. */
enum { MAX_COLUMNS = 10, MAX_WIDTH = 40 };

static void put_table(FILE *f, char **cells, size_t rows, size_t cols)
{
    size_t w[MAX_COLUMNS] = {0};
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            size_t len = cells[r * cols + c] ? strlen(cells[r * cols + c]) : 0;
            if (len > w[c])
                w[c] = len < MAX_WIDTH ? len : MAX_WIDTH;
        }
    for (size_t r = 0; r < rows; r++) {
        char **row = cells + r * cols;
        size_t last = cols; /* no padding after the last cell with text */
        while (last > 1 && (row[last - 1] == NULL || row[last - 1][0] == '\0'))
            last--;
        fputs(" ", f);
        for (size_t c = 0; c < last; c++) {
            const char *s = row[c] ? row[c] : "";
            if (c + 1 < last)
                fprintf(f, " %-*s ", (int)w[c], s);
            else
                fprintf(f, " %s", s);
        }
        fputc('\n', f);
    }
}

static void free_cells(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ust_free(cells[i]);
    ust_free(cells);
}

static char *side_text(const json_t *entry, const char *side)
{
    json_t *v = json_object_get(entry, side);
    if (v == NULL)
        return ust_strdup("(absent)");
    char *json = ust__report_json_compact(v);
    char *t = term_text(json);
    ust_free(json);
    return t;
}

static void write_diff(FILE *f, const json_t *diff)
{
    size_t n = json_array_size(diff);
    if (n == 0)
        return;
    char **cells = ust_calloc((n + 1) * 3, sizeof(char *));
    if (cells == NULL)
        return;
    cells[0] = ust_strdup("field");
    cells[1] = ust_strdup("legacy");
    cells[2] = ust_strdup("candidate");
    size_t i;
    json_t *entry;
    json_array_foreach(diff, i, entry)
    {
        cells[(i + 1) * 3] =
            term_text(json_string_value(json_object_get(entry, "field")));
        cells[(i + 1) * 3 + 1] = side_text(entry, "legacy");
        cells[(i + 1) * 3 + 2] = side_text(entry, "candidate");
    }
    fputs("\ndifferences:\n", f);
    put_table(f, cells, n + 1, 3);
    free_cells(cells, (n + 1) * 3);
}

static void write_pairs(FILE *f, const char *title, const ust__report_pair *p, size_t n)
{
    fprintf(f, "%s:\n", title);
    char **cells = ust_calloc(n ? n * 2 : 1, sizeof(char *));
    if (cells == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        cells[i * 2] = term_text(p[i].name);
        cells[i * 2 + 1] = p[i].value ? term_text(p[i].value) : ust_strdup("(absent)");
    }
    put_table(f, cells, n, 2);
    free_cells(cells, n * 2);
}

static void write_block(FILE *f, const char *text)
{
    put_term(f, text, 1);
    if (text != NULL && *text && text[strlen(text) - 1] != '\n')
        fputc('\n', f);
}

static void write_message(FILE *f, const char *what, const ust__report_message *m)
{
    char title[64];
    snprintf(title, sizeof(title), "%s headers (in arrival order)", what);
    write_pairs(f, title, m->headers, m->n_headers);
    if (m->body_len == 0) {
        fprintf(f, "%s body: none\n", what);
        return;
    }
    fprintf(f, "%s body as it arrived (%zu bytes):\n", what, m->body_len);
    if (m->withheld)
        fputs("  (not shown: the run's redaction rules mask a field of it, and raw"
              " bytes cannot be masked in part; the masked body follows)\n",
              f);
    else if (m->text != NULL)
        write_block(f, m->text);
    else {
        fputs("  (not UTF-8 text, or holds NUL bytes: its bytes in base64)\n", f);
        write_block(f, m->base64);
    }
    if (m->pretty != NULL) {
        fprintf(f, "%s body as JSON:\n", what);
        char *pretty = json_dumps(m->pretty, JSON_INDENT(2));
        write_block(f, pretty);
        ust_free(pretty);
    }
}

static void write_request(FILE *f, const ust__report_event *e)
{
    if (!e->has_request) {
        fputs("\nrequest: unavailable (the event log cannot be read, or does not"
              " hold this seq)\n",
              f);
        return;
    }
    char at[32];
    ust_time_format(e->received_at, at);
    fputs("\nrequest: ", f);
    put_term(f, e->method, 0);
    fputc(' ', f);
    put_term(f, e->target, 0);
    fputs(" from ", f);
    put_term(f, e->remote, 0);
    fprintf(f, " at %s\n", at);
    write_message(f, "request", &e->req);
    fputc('\n', f);
    write_pairs(f, "derived fields", e->derived, e->n_derived);
    if (e->response_status != 0) {
        fprintf(f, "\nrecorded answer: %d\n", e->response_status);
        write_message(f, "answer", &e->resp);
    }
}

static void write_decision(FILE *f, const char *who, const json_t *d)
{
    char *text = d ? json_dumps(d, JSON_INDENT(2)) : NULL;
    fprintf(f, "\n%s decision:\n", who);
    write_block(f, text);
    ust_free(text);
}

static char *amount_text(const ust__report_story_row *r)
{
    if (!r->has_amount)
        return term_text(r->currency);
    char *joined =
        ust_sprintf("%lld %s", (long long)r->amount, r->currency ? r->currency : "");
    char *t = term_text(joined);
    ust_free(joined);
    return t;
}

enum { STORY_COLUMNS = 10 };

static void story_row(char **c, const ust__report_story_row *r, int64_t shown)
{
    char at[32];
    ust_time_format(r->at, at);
    c[0] = ust_sprintf("%lld", (long long)r->seq);
    c[1] = ust_strdup(at);
    c[2] = term_text(r->event_id);
    c[3] = term_text(r->event_type);
    c[4] = amount_text(r);
    c[5] = term_text(r->lv ? r->lv : "not fed");
    c[6] = term_text(r->ls);
    c[7] = term_text(r->cv ? r->cv : "not fed");
    c[8] = term_text(r->cs);
    c[9] = ust_strdup(r->seq == shown ? "<- this divergence"
                      : r->follow_on  ? "follow-on"
                      : r->diverged   ? "divergence"
                                      : "");
}

static void write_story(FILE *f, const ust__report_event *e)
{
    static const char *const head[STORY_COLUMNS] = {"seq",
                                                    "received",
                                                    "event id",
                                                    "event type",
                                                    "amount",
                                                    "legacy verdict",
                                                    "legacy state",
                                                    "candidate verdict",
                                                    "candidate state",
                                                    ""};
    size_t rows = e->n_story + 1;
    char **cells = ust_calloc(rows * STORY_COLUMNS, sizeof(char *));
    if (cells == NULL)
        return;
    for (size_t c = 0; c < STORY_COLUMNS; c++)
        cells[c] = ust_strdup(head[c]);
    for (size_t i = 0; i < e->n_story; i++)
        story_row(cells + (i + 1) * STORY_COLUMNS, &e->story[i], e->seq);
    fputs("\ntimeline of ", f);
    put_term(f, e->entity, 0);
    fprintf(f, " (%zu event%s%s):\n", e->n_story, e->n_story == 1 ? "" : "s",
            e->story_truncated ? ", first 100 shown" : "");
    put_table(f, cells, rows, STORY_COLUMNS);
    free_cells(cells, rows * STORY_COLUMNS);
}

void ust__report_event_text(FILE *f, const ust__report_event *e)
{
    char at[32];
    ust_time_format(e->self.at, at);
    fprintf(f, "seq %lld, received %s, event type ", (long long)e->seq, at);
    put_term(f, e->self.event_type ? e->self.event_type : "(none)", 0);
    fputc('\n', f);
    fputs("legacy:    ", f);
    put_term(f, e->self.lv ? e->self.lv : "not fed", 0);
    fputs(", state ", f);
    put_term(f, e->self.ls ? e->self.ls : "(none)", 0);
    fputs("\ncandidate: ", f);
    put_term(f, e->self.cv ? e->self.cv : "not fed", 0);
    fputs(", state ", f);
    put_term(f, e->self.cs ? e->self.cs : "(none)", 0);
    fputc('\n', f);
    if (e->divergence == NULL) {
        fputs(e->self.lv != NULL ? "no divergence\n"
                                 : "not fed to the plugins (see its signature)\n",
              f);
    } else {
        fputs("divergence: ", f);
        put_term(f, json_string_value(json_object_get(e->divergence, "class")), 0);
        fputs(e->self.follow_on ? " (a follow-on)\n" : "\n", f);
        write_diff(f, json_object_get(e->divergence, "diff"));
    }
    if (e->repeats.seq != 0) {
        char then[32];
        ust_time_format(e->repeats.at, then);
        fputs("semantic duplicate of ", f);
        put_term(f, e->repeats.identity, 0);
        fprintf(f, " (seq %lld, received %s)\n", (long long)e->repeats.seq, then);
    }
    write_request(f, e);
    if (e->divergence != NULL) {
        write_decision(f, "legacy", json_object_get(e->divergence, "legacy"));
        write_decision(f, "candidate", json_object_get(e->divergence, "candidate"));
    }
    if (e->entity != NULL)
        write_story(f, e);
}
