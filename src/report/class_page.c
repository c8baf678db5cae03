/* The pages of a class: a table of the candidate's reasons, then each
 * reason's divergences, one row each, the first few of a reason with their
 * full detail. */
#include "report/class_page.h"
#include "report/redact_line.h"
#include "report/event.h"
#include "report/html_escape.h"

#include <understudy/alloc.h>
#include <understudy/dir.h>
#include <understudy/error.h>
#include <understudy/log.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reasons a class's table lists; a class with more (a candidate that puts
 * an id in its reason) names how many more. */
enum { MAX_REASONS = 500 };
/* Of a row's differing fields, this many are shown, each value up to
 * MAX_VALUE bytes: the row is a summary, its detail is `understudy show`. */
enum { MAX_DIFFS = 12, MAX_VALUE = 160 };

void ust__report_put_count(FILE *f, int64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%lld", (long long)(n < 0 ? -n : n));
    if (n < 0)
        fputc('-', f);
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            fputc(',', f);
        fputc(digits[i], f);
    }
}

enum { PAGE_NAME_MAX = 48 };

static void page_name(char name[PAGE_NAME_MAX], size_t cls, int64_t page)
{
    if (page <= 1)
        snprintf(name, PAGE_NAME_MAX, "%zu.html", cls);
    else
        snprintf(name, PAGE_NAME_MAX, "%zu-%lld.html", cls, (long long)page);
}

void ust__report_put_page_name(FILE *f, size_t cls, int64_t page)
{
    char name[PAGE_NAME_MAX];
    page_name(name, cls, page);
    fputs(name, f);
}

/* A kind of reason (run.h): what the table and a heading show of it, the
 * reason itself when it is the only one of its kind. */
typedef struct reason_count {
    ust_run_reason r; /* its strings: kind and reason, owned */
    const char *shown;
} reason_count;

typedef struct pager {
    const ust_report_opts *o;
    const ust__report_model *m;
    ust_run *run;
    ust_log *log;
    size_t cls;
    size_t page_rows;
    reason_count *reasons;
    size_t n_reasons, cap_reasons;
    int64_t more_reasons, total; /* reasons past the table; the class's rows */
    FILE *f;
    char *dir;
    int64_t row, page, pages;
    int page_details; /* rows of the page with their full detail */
    int table_open;
    size_t group; /* the current reason's ordinal, from 1 */
    char *reason; /* the current reason (NULL: none, or not started) */
    int64_t in_group;
    int64_t *done, progress_total;
    /* The last "fields" written as names, and their HTML: the rows of a
     * class mostly share theirs. */
    char *names_of, *names_html;
    char **err;
} pager;

static int add_reason(void *ctx, const ust_run_reason *r)
{
    pager *p = ctx;
    p->total += r->count;
    if (p->n_reasons == MAX_REASONS) {
        p->more_reasons++;
        return 0;
    }
    reason_count *grown =
        ust__report_grow(p->reasons, &p->cap_reasons, p->n_reasons, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    p->reasons = grown;
    reason_count *rc = &p->reasons[p->n_reasons];
    rc->r = *r;
    rc->r.kind = r->kind ? ust_strdup(r->kind) : NULL;
    rc->r.reason = r->reason ? ust_strdup(r->reason) : NULL;
    if ((r->kind && rc->r.kind == NULL) || (r->reason && rc->r.reason == NULL)) {
        ust_free((char *)rc->r.kind);
        ust_free((char *)rc->r.reason);
        return UST_ENOMEM;
    }
    rc->shown = rc->r.reasons == 1 ? rc->r.reason : rc->r.kind;
    p->n_reasons++;
    return 0;
}

static void clear_reasons(pager *p)
{
    for (size_t i = 0; i < p->n_reasons; i++) {
        ust_free((char *)p->reasons[i].r.kind);
        ust_free((char *)p->reasons[i].r.reason);
    }
    p->n_reasons = 0;
    p->more_reasons = 0;
    p->total = 0;
}

void ust__report_put_reason(FILE *f, const char *reason)
{
    if (reason == NULL) {
        fputs("<span class=muted>(no reason given)</span>", f);
        return;
    }
    fputs("<q>", f);
    ust__html_esc(f, reason);
    fputs("</q>", f);
}

static void put_link(pager *p, int64_t page, const char *rel, const char *label)
{
    fprintf(p->f, " <a rel=%s href=\"", rel);
    ust__report_put_page_name(p->f, p->cls, page);
    fprintf(p->f, "\">%s</a>", label);
}

/* Which rows the page holds, and the way to the others. */
static void put_nav(pager *p)
{
    int64_t first = (p->page - 1) * (int64_t)p->page_rows + 1;
    int64_t last = p->page * (int64_t)p->page_rows;
    fputs("<p class=nav>divergences ", p->f);
    ust__report_put_count(p->f, p->total ? first : 0);
    fputs("&ndash;", p->f);
    ust__report_put_count(p->f, last < p->total ? last : p->total);
    fputs(" of ", p->f);
    ust__report_put_count(p->f, p->total);
    fprintf(p->f, " &middot; page %lld of %lld", (long long)p->page,
            (long long)p->pages);
    if (p->page > 1)
        put_link(p, p->page - 1, "prev", "&larr; previous");
    if (p->page < p->pages)
        put_link(p, p->page + 1, "next", "next &rarr;");
    fputs("</p>", p->f);
}

/* Page 1's table of the reasons, each linked to the page its rows start. */
static void put_reasons(pager *p)
{
    fputs("<h2 id=reasons>The candidate's reasons</h2><table><tr><th>reason</th>"
          "<th>divergences</th></tr>",
          p->f);
    int64_t before = 0;
    for (size_t i = 0; i < p->n_reasons; i++) {
        fputs("<tr><td><a href=\"", p->f);
        ust__report_put_page_name(p->f, p->cls, before / (int64_t)p->page_rows + 1);
        fprintf(p->f, "#reason-%zu\">", i + 1);
        ust__report_put_reason(p->f, p->reasons[i].shown);
        fputs("</a>", p->f);
        if (p->reasons[i].r.reasons > 1) {
            fputs(" <span class=muted>(", p->f);
            ust__report_put_count(p->f, p->reasons[i].r.reasons);
            fputs(" reasons of this kind, # for their numbers)</span>", p->f);
        }
        fputs("</td><td class=n>", p->f);
        ust__report_put_count(p->f, p->reasons[i].r.count);
        fputs("</td></tr>", p->f);
        before += p->reasons[i].r.count;
    }
    fputs("</table>", p->f);
    if (p->more_reasons > 0) {
        fputs("<p class=muted>", p->f);
        ust__report_put_count(p->f, p->more_reasons);
        fputs(" more reasons: their rows follow those above.</p>", p->f);
    }
}

static int64_t value_rows_max(const pager *p)
{
    return p->o->value_rows_max ? (int64_t)p->o->value_rows_max
                                : UST__REPORT_VALUE_ROWS_MAX;
}

static int open_page(pager *p, int64_t page)
{
    char name[PAGE_NAME_MAX];
    page_name(name, p->cls, page);
    char *path = ust_sprintf("%s/%s", p->dir, name);
    p->f = path ? fopen(path, "wb") : NULL;
    int rc =
        p->f ? 0 : ust_errf(p->err, UST_EIO, "%s: cannot write", path ? path : name);
    ust_free(path);
    if (rc != 0)
        return rc;
    p->page = page;
    p->page_details = 0;
    const ust__report_class *c = &p->m->classes[p->cls];
    ust__report_html_head(p->f, "understudy: class ", c->name);
    fputs("<p><a href=\"../index.html#class-", p->f);
    fprintf(p->f, "%zu\">&larr; the report</a></p><h1>", p->cls);
    ust__html_esc(p->f, c->name);
    fputs("</h1>", p->f);
    put_nav(p);
    fputs("<p class=muted>The full detail of a row (the request, both decisions, the"
          " entity's story): <code>understudy show --run ",
          p->f);
    ust__html_esc(p->f, p->o->run_path);
    fputs(" SEQ</code>", p->f);
    if (p->total > value_rows_max(p))
        fprintf(p->f,
                "; in a class of more than %lld divergences a row names the fields"
                " that differ, and its values are in its detail, divergences.jsonl and"
                " <code>show</code>",
                (long long)value_rows_max(p));
    fputs("</p>", p->f);
    if (page == 1) {
        put_reasons(p);
    } else {
        fputs("<p><a href=\"", p->f);
        ust__report_put_page_name(p->f, p->cls, 1);
        fputs("#reasons\">the candidate's reasons</a></p>", p->f);
    }
    return 0;
}

static void close_table(pager *p)
{
    if (p->table_open)
        fputs("</table>", p->f);
    p->table_open = 0;
}

static int close_page(pager *p)
{
    if (p->f == NULL)
        return 0;
    close_table(p);
    put_nav(p);
    fputs("</body></html>\n", p->f);
    int bad = ferror(p->f);
    bad |= fclose(p->f) != 0;
    p->f = NULL;
    return bad ? ust_errf(p->err, UST_EIO, "%s: a class page's write failed", p->dir)
               : 0;
}

/* The heading of the current reason's rows (again on a page they go on to)
 * and their table's head. */
static void open_group(pager *p, int continued)
{
    if (continued)
        fputs("<h2>", p->f);
    else
        fprintf(p->f, "<h2 id=reason-%zu>", p->group);
    const reason_count *known =
        p->group <= p->n_reasons ? &p->reasons[p->group - 1] : NULL;
    ust__report_put_reason(p->f, known ? known->shown : p->reason);
    if (known != NULL) {
        fputs(" <span class=muted>(", p->f);
        ust__report_put_count(p->f, known->r.count);
        fputs(continued ? ", continued)</span>" : ")</span>", p->f);
    }
    fputs("</h2><table class=rows><tr><th>seq</th><th>received</th><th>entity</th>"
          "<th>differing fields: legacy &rarr; candidate</th></tr>",
          p->f);
    p->table_open = 1;
}

static void put_value(FILE *f, const char *tag, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *shown = text ? text : "(absent)";
    size_t len = strlen(shown);
    int cut = len > MAX_VALUE;
    if (cut) {
        len = MAX_VALUE;
        while (len > 0 && ((unsigned char)shown[len] & 0xC0) == 0x80)
            len--; /* not inside a UTF-8 sequence */
        text[len] = '\0';
    }
    fprintf(f, "<%s>", tag);
    ust__html_esc(f, shown);
    fprintf(f, "%s</%s>", cut ? "&hellip;" : "", tag);
    ust_free(text);
}

/* The names of a "fields" array, as HTML. */
static void put_names(FILE *f, const char *fields)
{
    json_error_t jerr;
    json_t *names = json_loads(fields, 0, &jerr);
    size_t i;
    json_t *n;
    fputs("<code>", f);
    json_array_foreach(names, i, n)
    {
        fputs(i ? ", " : "", f);
        ust__html_esc(f, json_string_value(n));
    }
    fputs("</code>", f);
    json_decref(names);
}

static int put_names_of(pager *p, const char *fields)
{
    fields = fields ? fields : "[]";
    if (p->names_of == NULL || strcmp(p->names_of, fields) != 0) {
        ust_free(p->names_of);
        free(p->names_html);
        p->names_html = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&p->names_html, &len);
        p->names_of = ust_strdup(fields);
        if (mem == NULL || p->names_of == NULL) {
            if (mem != NULL)
                fclose(mem);
            return UST_ENOMEM;
        }
        put_names(mem, fields);
        if (fclose(mem) != 0)
            return UST_ENOMEM;
    }
    fputs(p->names_html, p->f);
    return 0;
}

/* The differing fields: each with both values when the line carries its
 * "diff", else their names. */
static int put_fields(pager *p, const ust_run_reasoned *r)
{
    FILE *f = p->f;
    json_error_t jerr;
    json_t *diff = r->diff ? json_loads(r->diff, 0, &jerr) : NULL;
    /* Read from the run as it was decided: masked here, as every line is. */
    ust__report_redact_diff(diff, p->m->redact);
    if (json_is_array(diff)) {
        size_t i;
        json_t *d;
        json_array_foreach(diff, i, d)
        {
            if (i == MAX_DIFFS) {
                fprintf(f, "<div class=muted>%zu more</div>",
                        json_array_size(diff) - i);
                break;
            }
            fputs("<div><code>", f);
            ust__html_esc(f, json_string_value(json_object_get(d, "field")));
            fputs("</code> ", f);
            put_value(f, "del", json_object_get(d, "legacy"));
            fputs(" &rarr; ", f);
            put_value(f, "ins", json_object_get(d, "candidate"));
            fputs("</div>", f);
        }
        json_decref(diff);
        return 0;
    }
    json_decref(diff);
    return put_names_of(p, r->d.fields);
}

int ust__report_same_reason(const char *a, const char *b)
{
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* The example of the class the model loaded for index.html at seq, or
 * NULL. */
static const ust__report_event *model_example(const pager *p, int64_t seq)
{
    const ust__report_class *c =
        p->cls < p->m->n_detailed ? &p->m->classes[p->cls] : NULL;
    for (size_t k = 0; c != NULL && k < c->n_examples; k++)
        if (c->examples[k].seq == seq)
            return &c->examples[k];
    return NULL;
}

/* The full detail of a row, under it. An example the model holds is shown
 * from there: loaded again, a large event would be in memory twice. */
static int put_detail(pager *p, int64_t seq, int open)
{
    const ust__report_event *held = model_example(p, seq);
    if (held != NULL) {
        fputs("<tr class=detail><td colspan=4>", p->f);
        ust__report_event_html(p->f, held, open);
        fputs("</td></tr>", p->f);
        return 0;
    }
    ust__report_event e;
    int rc = ust__report_event_load(p->run, p->log, p->m->redact, seq, &e, p->err);
    if (rc <= 0)
        return rc;
    fputs("<tr class=detail><td colspan=4>", p->f);
    ust__report_event_html(p->f, &e, open);
    fputs("</td></tr>", p->f);
    ust__report_event_clear(&e);
    return 0;
}

static int put_row(void *ctx, const ust_run_reasoned *r)
{
    pager *p = ctx;
    int rc = 0;
    int new_group = p->group == 0 || !ust__report_same_reason(p->reason, r->kind);
    if (new_group) {
        ust_free(p->reason);
        p->reason = r->kind ? ust_strdup(r->kind) : NULL;
        if (r->kind != NULL && p->reason == NULL)
            return UST_ENOMEM;
        p->group++;
        p->in_group = 0;
    }
    if (p->row % (int64_t)p->page_rows == 0) {
        if ((rc = close_page(p)) != 0 ||
            (rc = open_page(p, p->row / (int64_t)p->page_rows + 1)) != 0)
            return rc;
        if (!new_group)
            open_group(p, 1);
    }
    if (new_group) {
        close_table(p);
        open_group(p, 0);
    }
    FILE *f = p->f;
    fprintf(f, "<tr id=seq-%lld><td class=n><a href=\"#seq-%lld\">%lld</a></td><td>",
            (long long)r->d.seq, (long long)r->d.seq, (long long)r->d.seq);
    ust__html_time(f, r->d.received_at);
    fputs("</td><td>", f);
    if (r->d.entity != NULL) {
        fputs("<code>", f);
        ust__html_esc(f, r->d.entity);
        fputs("</code>", f);
    }
    if (r->d.follow_on)
        fputs(" <span class=muted>follow-on</span>", f);
    fputs("</td><td>", f);
    if ((rc = put_fields(p, r)) != 0)
        return rc;
    /* its own reason, where its kind stands for several */
    const reason_count *known =
        p->group <= p->n_reasons ? &p->reasons[p->group - 1] : NULL;
    if (r->reason != NULL && (known == NULL || known->r.reasons > 1) &&
        !ust__report_same_reason(r->reason, r->kind)) {
        fputs("<div class=muted>", f);
        ust__report_put_reason(f, r->reason);
        fputs("</div>", f);
    }
    fputs("</td></tr>", f);
    if (p->in_group < UST__REPORT_GROUP_DETAILS &&
        p->page_details < UST__REPORT_PAGE_DETAILS) {
        rc = put_detail(p, r->d.seq, p->in_group == 0);
        p->page_details++;
    }
    p->in_group++;
    p->row++;
    ++*p->done;
    /* No line of the JSONL yet: the count stays 0, the fraction moves. */
    ust_progress_tell(&p->o->progress, 0,
                      (double)*p->done / (double)(p->progress_total + 1));
    return rc;
}

static int write_class(pager *p, size_t cls)
{
    p->cls = cls;
    p->row = 0;
    p->group = 0;
    p->in_group = 0;
    p->page = 0;
    ust_free(p->reason);
    p->reason = NULL;
    const char *name = p->m->classes[cls].name;
    /* The counts and the rows from one read: a live run's later commits
     * change neither. */
    int rc = ust_run_begin(p->run, p->err);
    if (rc != 0)
        return rc;
    clear_reasons(p);
    rc = ust_run_class_reasons(p->run, name, add_reason, p, p->err);
    p->pages = (p->total + (int64_t)p->page_rows - 1) / (int64_t)p->page_rows;
    if (p->pages == 0)
        p->pages = 1;
    const ust_run_reason *only =
        p->n_reasons == 1 && p->more_reasons == 0 && p->reasons[0].r.reasons <= 1
            ? &p->reasons[0].r
            : NULL;
    if (rc == 0)
        rc = ust_run_class_by_reason(p->run, name, only, p->total <= value_rows_max(p),
                                     put_row, p, p->err);
    if (rc == 0 && p->f == NULL && (rc = open_page(p, 1)) == 0)
        fputs("<p>No divergence of this class is left in the run.</p>", p->f);
    int closed = close_page(p);
    ust_run_end(p->run);
    return rc != 0 ? rc : closed;
}

/* A file an earlier report wrote here: "<n>.html" or "<n>-<page>.html". */
static int is_page_name(const char *name)
{
    size_t digits = strspn(name, "0123456789-");
    return digits > 0 && strcmp(name + digits, ".html") == 0;
}

static int make_dir(const ust_report_opts *o, char **dir, char **err)
{
    *dir = ust_sprintf("%s/classes", o->out_dir);
    if (*dir == NULL)
        return UST_ENOMEM;
    int rc = ust_mkdir_p(*dir, err);
    if (rc != 0)
        return rc;
    /* Pages of an earlier report (of a larger run) would outlive this one. */
    DIR *d = opendir(*dir);
    if (d == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot read the directory", *dir);
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (!is_page_name(ent->d_name))
            continue;
        char *path = ust_sprintf("%s/%s", *dir, ent->d_name);
        if (path == NULL || (unlink(path) != 0 && errno != ENOENT))
            rc = path ? ust_errf(err, UST_EIO, "%s: cannot remove an old page", path)
                      : UST_ENOMEM;
        ust_free(path);
    }
    closedir(d);
    return rc;
}

int ust__report_write_class_pages(const ust_report_opts *o, const ust__report_model *m,
                                  int64_t *done, int64_t total, char **err)
{
    pager p = {.o = o,
               .m = m,
               .page_rows = o->page_rows ? o->page_rows : UST__REPORT_PAGE_ROWS,
               .done = done,
               .progress_total = total,
               .err = err};
    int rc = make_dir(o, &p.dir, err);
    if (rc == 0)
        rc = ust_run_open(o->run_path, &p.run, err);
    if (rc == 0)
        rc = ust__report_log_open(p.run, o, &p.log, NULL, err);
    for (size_t i = 0; rc == 0 && i < m->n_detailed; i++)
        rc = write_class(&p, i);
    if (p.f != NULL)
        fclose(p.f);
    clear_reasons(&p);
    ust_free(p.reasons);
    ust_free(p.reason);
    ust_free(p.names_of);
    free(p.names_html);
    ust_free(p.dir);
    ust_log_close(p.log);
    ust_run_close(p.run);
    return rc;
}
