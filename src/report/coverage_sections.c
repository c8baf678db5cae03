/* The Coverage section of index.html and summary.md: each kind with its
 * count, and for a kind the traffic never exercised, the scenario file that
 * does. The kind names and scenario paths are understudy's own constants
 * (coverage.h), plain ASCII without markup: written as they are. */
#include "report/model.h"

#include <stdio.h>

static const char unknown[] =
    "The event log could not be read: what the traffic exercised is unknown.";
static const char intro[] =
    "Counted from the canonical events of the log, up to the run's cursor (never "
    "from a plugin's verdict); docs/semantics.md defines each kind.";

void ust__report_write_coverage_html(FILE *f, const ust__report_model *m)
{
    fputs("<h2 id=coverage>Coverage: what the traffic exercised</h2>", f);
    if (!m->has_coverage) {
        fprintf(f, "<p class=open>%s</p>", unknown);
        return;
    }
    fprintf(f,
            "<p class=muted>%s</p><table><tr><th>kind</th><th>events</th>"
            "<th>note</th></tr>",
            intro);
    for (int k = 0; k < UST_COVERAGE_N; k++) {
        int64_t n = m->coverage.counts[k];
        fprintf(f, "<tr><td><code>%s</code></td><td class=\"n%s\">%lld</td><td>",
                ust_coverage_kind_name((ust_coverage_kind)k), n ? "" : " zero",
                (long long)n);
        if (n == 0)
            fprintf(f,
                    "<span class=open>not exercised</span>: no event of this kind; "
                    "<code>%s</code> exercises it",
                    ust_coverage_kind_scenario((ust_coverage_kind)k));
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

void ust__report_write_coverage_markdown(FILE *f, const ust__report_model *m)
{
    fputs("\n## Coverage: what the traffic exercised\n\n", f);
    if (!m->has_coverage) {
        fprintf(f, "**%s**\n", unknown);
        return;
    }
    fprintf(f, "%s\n\n| kind | events | note |\n|---|---:|---|\n", intro);
    for (int k = 0; k < UST_COVERAGE_N; k++) {
        int64_t n = m->coverage.counts[k];
        fprintf(f, "| `%s` | %lld | ", ust_coverage_kind_name((ust_coverage_kind)k),
                (long long)n);
        if (n == 0)
            fprintf(f, "**not exercised**: no event of this kind; `%s` exercises it",
                    ust_coverage_kind_scenario((ust_coverage_kind)k));
        fputs(" |\n", f);
    }
}
