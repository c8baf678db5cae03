/* summary.json: what the report is (its about), the run's totals, the
 * gate's verdict and the coverage, for
 * a program (CI, a dashboard) rather than a reader. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

static json_t *coverage_json(const ust__report_model *m)
{
    if (!m->has_coverage)
        return json_null();
    json_t *o = json_object();
    for (int k = 0; o != NULL && k < UST_COVERAGE_N; k++)
        json_object_set_new(o, ust_coverage_kind_name((ust_coverage_kind)k),
                            json_integer(m->coverage.counts[k]));
    return o;
}

static json_t *gate_json(const ust__report_model *m)
{
    return json_pack("{sbsIsIsoss?}", "pass", ust_gate_pass(&m->gate, 0),
                     "open_divergences", (json_int_t)m->gate.open_divergences,
                     "open_classes", (json_int_t)m->gate.open_classes, "refused",
                     json_boolean(m->gate.refusal != NULL), "refusal", m->gate.refusal);
}

int ust__report_write_summary_json(const ust__report_model *m, const char *path,
                                   char **err)
{
    json_t *doc = json_pack(
        "{sOsIsIsIsIsIsoso}", "report", m->about ? m->about : json_null(), "events",
        (json_int_t)m->events, "fed", (json_int_t)m->fed, "divergences",
        (json_int_t)m->divergences, "follow_ons", (json_int_t)m->follow_ons, "classes",
        (json_int_t)m->n_classes, "gate", gate_json(m), "coverage", coverage_json(m));
    if (doc == NULL)
        return UST_ENOMEM;
    int rc = json_dump_file(doc, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0
                 ? 0
                 : ust_errf(err, UST_EIO, "%s: cannot write", path);
    json_decref(doc);
    return rc;
}
