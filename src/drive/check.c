/* Checking a run against the scenarios it was made from: each step's
 * verdicts for both plugins, and exactly the divergences each scenario
 * expects, no more. */
#include <understudy/alloc.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/run.h>

#include <stdlib.h>
#include <string.h>

typedef struct checker {
    ust_run *run;
    FILE *out;
    int live;
    long mismatches;
    int rc; /* a read that failed: the check stops, it never passes */
    char **err;
} checker;

static const char *expected_for(json_t *expect, const char *side, int copy)
{
    json_t *v = json_object_get(expect, side);
    return json_is_array(v) ? json_string_value(json_array_get(v, (size_t)copy))
                            : json_string_value(v);
}

static void mismatch(checker *k, const ust_scenario *s, size_t step, int copy,
                     int64_t seq, const char *what)
{
    fprintf(k->out, "MISMATCH %s (%s) step %zu", s->name, s->file, step);
    if (s->steps[step].copies > 1)
        fprintf(k->out, " copy %d", copy);
    fprintf(k->out, " (seq %lld): %s\n", (long long)seq, what);
    k->mismatches++;
}

typedef struct side_outcome {
    const char *side;
    char *verdict;
} side_outcome;

static int take_outcome(void *ctx, const ust_run_event *e)
{
    side_outcome *o = ctx;
    const char *v = !e->fed                          ? "not_fed"
                    : strcmp(o->side, "legacy") == 0 ? e->legacy_verdict
                                                     : e->candidate_verdict;
    o->verdict = ust_strdup(v ? v : "?");
    return 0;
}

/* The outcome of one side at seq: its verdict, or "not_fed". */
static char *outcome(checker *k, int64_t seq, const char *side, int *found)
{
    side_outcome o = {side, NULL};
    int got = ust_run_event_at(k->run, seq, take_outcome, &o, k->err);
    *found = got == 1;
    if (got < 0)
        k->rc = got;
    return o.verdict;
}

static void check_step(checker *k, const ust_scenario *s, size_t i, int64_t first_seq)
{
    const ust_step *st = &s->steps[i];
    static const char *const sides[] = {"legacy", "candidate"};
    for (int side = 0; side < 2; side++) {
        /* Live, the copies of a burst arrive in any order: compare as a set. */
        int used[1000] = {0};
        for (int c = 0; c < st->copies; c++) {
            int found;
            char *got = outcome(k, first_seq + c, sides[side], &found);
            if (k->rc != 0)
                return;
            if (!found) {
                mismatch(k, s, i, c, first_seq + c, "no decision in the run");
                continue;
            }
            const char *want = expected_for(st->expect, sides[side], c);
            int ok = strcmp(got, want) == 0;
            if (k->live && st->timing_sensitive)
                ok = 1; /* decided is all a live run can promise here */
            else if (k->live && st->copies > 1) {
                ok = 0;
                for (int e = 0; e < st->copies && !ok; e++)
                    if (!used[e] &&
                        strcmp(got, expected_for(st->expect, sides[side], e)) == 0)
                        ok = used[e] = 1;
            }
            if (!ok) {
                char *what = ust_sprintf("%s %s, expected %s", sides[side], got, want);
                mismatch(k, s, i, c, first_seq + c, what ? what : "?");
                ust_free(what);
            }
            ust_free(got);
        }
    }
}

typedef struct divergence_check {
    checker *k;
    const ust_scenario *s;
    const int64_t *step_seq;
    int *matched;
} divergence_check;

/* One divergence of the run: expected by the scenario, or a mismatch. */
static int check_divergence(void *ctx, const ust_run_divergence *d)
{
    divergence_check *dc = ctx;
    checker *k = dc->k;
    const ust_scenario *s = dc->s;
    json_t *want = s->divergences;
    size_t n_want = json_array_size(want);
    int64_t seq = d->seq;
    const char *cls = d->class_name, *fields = d->fields;
    size_t step = 0;
    while (step + 1 < s->n_steps && dc->step_seq[step + 1] <= seq)
        step++;
    int copy = (int)(seq - dc->step_seq[step]);
    int found = 0;
    for (size_t w = 0; w < n_want && !found; w++) {
        json_t *e = json_array_get(want, w);
        json_t *wcopy = json_object_get(e, "copy");
        char *wfields = json_dumps(json_object_get(e, "fields"), JSON_COMPACT);
        if (!dc->matched[w] &&
            (size_t)json_integer_value(json_object_get(e, "step")) == step &&
            (wcopy == NULL || json_integer_value(wcopy) == copy || k->live) &&
            strcmp(json_string_value(json_object_get(e, "class")), cls) == 0 &&
            wfields && strcmp(wfields, fields) == 0)
            found = dc->matched[w] = 1;
        ust_free(wfields);
    }
    if (!found && !(k->live && s->steps[step].timing_sensitive)) {
        char *what = ust_sprintf("unexpected divergence %s %s", cls, fields);
        mismatch(k, s, step, copy, seq, what ? what : "?");
        ust_free(what);
    }
    return 0;
}

/* Every expected divergence present (class and fields), nothing else. */
static void check_divergences(checker *k, const ust_scenario *s,
                              const int64_t *step_seq, int64_t first, int64_t last)
{
    json_t *want = s->divergences;
    size_t n_want = json_array_size(want);
    int *matched = ust_calloc(n_want ? n_want : 1, sizeof(int));
    if (matched == NULL) {
        k->rc = UST_ENOMEM;
        return;
    }
    divergence_check dc = {k, s, step_seq, matched};
    ust_run_filter f = {.from = first, .to = last};
    int row = ust_run_divergences(k->run, &f, check_divergence, &dc, k->err);
    if (row < 0) {
        k->rc = row;
        ust_free(matched);
        return;
    }
    for (size_t w = 0; w < n_want; w++) {
        json_t *d = json_array_get(want, w);
        size_t step = (size_t)json_integer_value(json_object_get(d, "step"));
        if (matched[w] || (k->live && s->steps[step].timing_sensitive))
            continue;
        char *wfields = json_dumps(json_object_get(d, "fields"), JSON_COMPACT);
        char *what = ust_sprintf("missing divergence %s %s",
                                 json_string_value(json_object_get(d, "class")),
                                 wfields ? wfields : "");
        mismatch(k, s, step, 0, step_seq[step], what ? what : "?");
        ust_free(what);
        ust_free(wfields);
    }
    ust_free(matched);
}

int ust_scenario_check(ust_scenario *const *scenarios, size_t n, const char *run_path,
                       int live, FILE *out, char **err)
{
    checker k = {.out = out, .live = live, .err = err};
    int rc = ust_run_open(run_path, &k.run, err);
    if (rc != 0)
        return rc;
    int64_t seq = 1;
    size_t steps = 0;
    for (size_t i = 0; k.rc == 0 && i < n; i++) {
        const ust_scenario *s = scenarios[i];
        int64_t *step_seq = ust_calloc(s->n_steps, sizeof(int64_t));
        if (step_seq == NULL) {
            k.rc = UST_ENOMEM;
            break;
        }
        int64_t first = seq;
        for (size_t j = 0; k.rc == 0 && j < s->n_steps; j++) {
            step_seq[j] = seq;
            check_step(&k, s, j, seq);
            seq += s->steps[j].copies;
            steps++;
        }
        if (k.rc == 0)
            check_divergences(&k, s, step_seq, first, seq - 1);
        ust_free(step_seq);
    }
    if (k.rc == 0)
        fprintf(out, "%zu scenario(s), %zu step(s), %ld mismatch(es)\n", n, steps,
                k.mismatches);
    ust_run_close(k.run);
    return k.rc != 0 ? k.rc : k.mismatches ? 1 : 0;
}
