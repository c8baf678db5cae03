/* summary.md: the essentials for a pull request or a ticket. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>

/* Text in a table cell (or a line of prose): the characters that would end
 * the row or the cell, or start markup (raw HTML, an image fetched from
 * anywhere, a link, an entity), are escaped, so the text reads as it is. */
static const char *const cell_escape[256] = {
    ['|'] = "\\|", ['\\'] = "\\\\", ['!'] = "\\!",  ['['] = "\\[",
    [']'] = "\\]", ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;",
    ['`'] = "'",   ['\r'] = " ",    ['\n'] = " ",
};

/* Text inside a `code span`: nothing is markup there but its backquote,
 * and a line break would end the list item. */
static const char *const code_escape[256] = {['`'] = "'", ['\r'] = " ", ['\n'] = " "};

static void cell(FILE *f, const char *s)
{
    ust__report_put_escaped(f, s, cell_escape, UST__REPORT_BIDI_VISIBLE);
}

int ust__report_write_markdown(const ust__report_model *m, const char *path, char **err)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot write", path);
    char a[32] = "-", b[32] = "-";
    if (m->events > 0) {
        ust_time_format(m->first_at, a);
        ust_time_format(m->last_at, b);
    }
    int pass = ust_gate_pass(&m->gate, 0);
    fprintf(f, "# understudy report\n\n**%s**: ",
            pass ? "Every divergence is triaged" : "Not ready for cutover");
    if (m->gate.refusal != NULL) {
        cell(f, m->gate.refusal);
        fputs("; ", f);
    }
    fprintf(f, "%lld divergence(s) in %zu class(es), %lld open in %lld class(es).\n\n",
            (long long)m->divergences, m->n_classes,
            (long long)m->gate.open_divergences, (long long)m->gate.open_classes);
    fprintf(
        f, "- span: %s – %s\n- events: %lld read, %lld decided by both, %lld not fed\n",
        a, b, (long long)m->events, (long long)m->fed, (long long)(m->events - m->fed));
    const char *keys[] = {"legacy_name",       "legacy_version",  "candidate_name",
                          "candidate_version", "log_head_sha256", "config_sha256"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        fprintf(f, "- %s: `", keys[i]);
        ust__report_put_escaped(f, json_string_value(json_object_get(m->meta, keys[i])),
                                code_escape, UST__REPORT_BIDI_VISIBLE);
        fputs("`\n", f);
    }
    fputs("\n## Legacy × candidate verdicts\n\n| legacy \\\\ candidate |", f);
    for (int c = 0; c < UST__REPORT_VERDICTS; c++)
        fprintf(f, " %s |", ust__report_verdict_label(c));
    fputs("\n|---|", f);
    for (int c = 0; c < UST__REPORT_VERDICTS; c++)
        fputs("---:|", f);
    fputs("\n", f);
    for (int l = 0; l < UST__REPORT_VERDICTS; l++) {
        fprintf(f, "| %s |", ust__report_verdict_label(l));
        for (int c = 0; c < UST__REPORT_VERDICTS; c++)
            fprintf(f, " %lld |", (long long)m->matrix[l][c]);
        fputs("\n", f);
    }
    fputs("\n## Divergence classes\n\n| class | count | follow-on | fields | triage |\n"
          "|---|---:|---:|---|---|\n",
          f);
    for (size_t i = 0; i < m->n_detailed; i++) {
        const ust__report_class *c = &m->classes[i];
        fputs("| ", f);
        cell(f, c->name);
        fprintf(f, " | %lld | %lld | ", (long long)c->count, (long long)c->follow_ons);
        char *fs = json_dumps(json_array_get(c->field_sets, 0), JSON_COMPACT);
        cell(f, fs);
        ust_free(fs);
        fputs(" | ", f);
        ust__report_put_triage(f, c->accepted, cell_escape, "accepted: ", "**open**",
                               0);
        fputs(" |\n", f);
    }
    if (m->gate.n_stale > 0)
        fputs("\n## Stale triage entries\n\nThey accept no class of this run.\n\n"
              "| class | owner |\n|---|---|\n",
              f);
    ust__report_put_stale(f, &m->gate, cell_escape, "| ", " | ", " |\n");
    if (m->n_classes > m->n_detailed)
        fprintf(f, "\n%zu more classes: see divergences.jsonl.\n",
                m->n_classes - m->n_detailed);
    ust__report_write_coverage_markdown(f, m);
    if (fclose(f) != 0)
        return ust_errf(err, UST_EIO, "%s: write failed", path);
    return 0;
}
