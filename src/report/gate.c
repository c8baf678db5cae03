/* The cutover gate: the run must have decided its whole log, and every
 * divergence class of it must be accepted by the triage file (or fixed, and
 * then absent from a new run). The report's verdict line is this judgement
 * too, so the two can never disagree. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/report.h>
#include <understudy/run.h>

#include <string.h>

void ust_gate_result_clear(ust_gate_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        ust_free(res->classes[i].class_name);
    ust_free(res->classes);
    ust_free(res->refusal);
    for (size_t i = 0; i < res->n_stale; i++)
        ust_free(res->stale_hints[i]);
    ust_free(res->stale);
    ust_free(res->stale_hints);
    ust_free(res->expired);
    memset(res, 0, sizeof(*res));
}

int ust_gate_pass(const ust_gate_result *res, int64_t max_open)
{
    return res->refusal == NULL && res->open_divergences <= max_open;
}

static int refuse(ust_gate_result *res, char *reason)
{
    res->refusal = reason;
    return reason ? 0 : UST_ENOMEM;
}

/* The head of the log the run read (log_path, else the one its metadata
 * names): a run is complete only when it decided up to there. */
static int log_head(ust_run *run, const char *run_path, const char *log_path,
                    int64_t *head, char **err)
{
    char *named = NULL;
    int rc = 0;
    if (log_path == NULL) {
        rc = ust_run_log(run, &named, err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return ust_errf(err, UST_EINVAL,
                            "%s: the run does not name the event log it read: pass "
                            "--log DB",
                            run_path);
        log_path = named;
    }
    ust_log *log = NULL;
    char hex[UST_SHA256_HEX_LEN + 1];
    char *why = NULL;
    rc = ust_log_open(log_path, UST_LOG_READONLY, &log, &why);
    if (rc == 0)
        rc = ust_log_head(log, head, hex, &why);
    if (rc != 0)
        ust_errf(err, rc,
                 "%s: cannot read the head of the event log %s (pass --log DB "
                 "for one that moved): %s",
                 run_path, log_path, why ? why : ust_strerror(rc));
    ust_free(why);
    ust_log_close(log);
    ust_free(named);
    return rc;
}

/* Sets res->refusal when the run cannot be judged: it never started, decided
 * nothing, or stopped short of its log's head. */
static int check_complete(ust_run *run, const char *run_path, const char *log_path,
                          const ust_run_totals *known, ust_gate_result *res, char **err)
{
    static const char *const parts[] = {"legacy_name", "candidate_name"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(parts); i++) {
        char *v = NULL;
        int rc = ust_run_meta(run, parts[i], &v, err);
        ust_free(v);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return refuse(
                res, ust_strdup("the run has no plugin metadata (it never started)"));
    }
    /* Events whose signature did not verify are recorded and never fed to
     * the plugins: a run of nothing but those compared nothing. */
    ust_run_totals own;
    const ust_run_totals *n = known ? known : &own;
    int rc = known ? 0 : ust_run_sum(run, &own, err);
    if (rc < 0)
        return rc;
    res->decided = n->events;
    if (res->decided == 0)
        return refuse(res, ust_strdup("the run decided no event"));
    if (n->fed == 0)
        return refuse(res, ust_sprintf("the run fed no event to the plugins: none of "
                                       "its %lld had a verified signature (check the "
                                       "routes' secrets)",
                                       (long long)res->decided));
    if ((rc = ust_run_cursor(run, &res->cursor, err)) != 0 ||
        (rc = log_head(run, run_path, log_path, &res->log_head, err)) != 0)
        return rc;
    if (res->cursor != res->log_head)
        return refuse(res,
                      ust_sprintf("the run decided up to seq %lld but the log's "
                                  "head is %lld",
                                  (long long)res->cursor, (long long)res->log_head));
    return 0;
}

static int add_class(ust_gate_result *res, size_t *cap, const char *name, int64_t count,
                     const ust_triage *t, unsigned char *used)
{
    ust_gate_class *grown = ust__report_grow(res->classes, cap, res->n, sizeof(*grown));
    if (grown == NULL)
        return UST_ENOMEM;
    res->classes = grown;
    ust_gate_class *c = &res->classes[res->n];
    c->class_name = ust_strdup(name ? name : "");
    if (c->class_name == NULL)
        return UST_ENOMEM;
    c->count = count;
    c->accepted = ust_triage_match(t, c->class_name);
    res->n++;
    res->divergences += count;
    if (c->accepted == NULL) {
        c->expired = ust_triage_match_expired(t, c->class_name);
        res->open_divergences += count;
        res->open_classes++;
    } else {
        used[c->accepted - t->entries] = 1;
    }
    return 0;
}

typedef struct class_reader {
    ust_gate_result *res;
    size_t cap;
    const ust_triage *t;
    unsigned char *used;
} class_reader;

static int read_class(void *ctx, const ust_run_class *c)
{
    class_reader *k = ctx;
    return add_class(k->res, &k->cap, c->name, c->count, k->t, k->used);
}

/* The entries that accepted nothing: expired ones, and stale ones (the
 * class each was written for is gone, fixed or renamed, or was never spelt
 * as the run spells it, or it only ever met error classes it may not
 * accept). */
static int list_unused(const ust_triage *t, const unsigned char *used,
                       ust_gate_result *res)
{
    size_t n = t ? t->n : 0;
    if (n == 0)
        return 0;
    res->stale = ust_calloc(n, sizeof(*res->stale));
    res->stale_hints = ust_calloc(n, sizeof(*res->stale_hints));
    res->expired = ust_calloc(n, sizeof(*res->expired));
    if (res->stale == NULL || res->stale_hints == NULL || res->expired == NULL)
        return UST_ENOMEM;
    int arrows = 0;
    for (size_t i = 0; i < res->n && !arrows; i++)
        arrows = strstr(res->classes[i].class_name, "\xe2\x86\x92") != NULL;
    for (size_t i = 0; i < n; i++) {
        const ust_triage_entry *e = &t->entries[i];
        if (e->expired) {
            res->expired[res->n_expired++] = e;
        } else if (!used[i]) {
            int rc = ust_triage_arrow_hint(e->class_glob, arrows,
                                           &res->stale_hints[res->n_stale]);
            res->stale[res->n_stale++] = e;
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

static int read_classes(ust_run *run, const ust_triage *t, ust_gate_result *res,
                        char **err)
{
    size_t n_entries = t ? t->n : 0;
    class_reader k = {res, 0, t, ust_calloc(n_entries + 1, 1)};
    int rc = k.used ? ust_run_classes(run, read_class, &k, err) : UST_ENOMEM;
    if (rc == 0)
        rc = list_unused(t, k.used, res);
    ust_free(k.used);
    return rc;
}

int ust__gate_judge(ust_run *run, const char *run_path, const char *log_path,
                    const ust_triage *t, const ust_run_tally *tally,
                    ust_run_totals *totals, ust_gate_result *res, char **err)
{
    memset(res, 0, sizeof(*res));
    /* One read transaction: the classes and the cursor of a live run are
     * read from the same commit. */
    int rc = ust_run_begin(run, err);
    if (rc == 0)
        rc = read_classes(run, t, res, err);
    if (rc == 0 && tally != NULL)
        rc = ust_run_tally_read(run, totals, tally, err);
    if (rc == 0)
        rc = check_complete(run, run_path, log_path, tally ? totals : NULL, res, err);
    ust_run_end(run);
    if (rc != 0)
        ust_gate_result_clear(res);
    return rc;
}

int ust_gate_check_runs(const char *const *run_paths, size_t n_runs,
                        const char *log_path, const ust_triage *t, ust_gate_result *res,
                        char **err)
{
    memset(res, 0, sizeof(*res));
    ust_run *run = NULL;
    int rc = ust_run_open_many(run_paths, n_runs, &run, err);
    if (rc == 0)
        rc = ust__gate_judge(run, ust_run_name(run), log_path, t, NULL, NULL, res, err);
    ust_run_close(run);
    return rc;
}

int ust_gate_check(const char *run_path, const char *log_path, const ust_triage *t,
                   ust_gate_result *res, char **err)
{
    return ust_gate_check_runs(&run_path, 1, log_path, t, res, err);
}
