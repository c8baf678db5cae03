/* What a report is, beside what it says: when it was made, by which
 * understudy, against which triage file (and chain_check.c: whether the
 * events its run read are the ones the log's hash chain vouches for). */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/version.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Now, or SOURCE_DATE_EPOCH (seconds since 1970, UTC) when it is set: the
 * reproducible-builds convention, so the same run gives the same bytes. */
static int generated_at(json_t *about, char **err)
{
    const char *env = getenv("SOURCE_DATE_EPOCH");
    int64_t us = ust_time_wall_us();
    if (env != NULL) {
        char *end = NULL;
        errno = 0;
        long long s = strtoll(env, &end, 10);
        if (*env < '0' || *env > '9' || *end != '\0' || errno != 0 ||
            s > 253402300799LL)
            return ust_errf(err, UST_EINVAL,
                            "SOURCE_DATE_EPOCH=\"%s\": expected whole seconds since"
                            " 1970-01-01 UTC (unset it to date the report now)",
                            env);
        us = (int64_t)s * 1000000;
    }
    char buf[32];
    ust_time_format(us, buf);
    /* Whole seconds: "YYYY-MM-DDTHH:MM:SSZ". */
    memcpy(buf + 19, "Z", 2);
    json_object_set_new(about, "generated_at", json_string(buf));
    return 0;
}

static json_t *triage_file(const ust_report_opts *o)
{
    if (o->triage == NULL)
        return json_null();
    char hex[UST_SHA256_HEX_LEN + 1];
    json_t *t = json_object();
    json_object_set_new(t, "path",
                        o->triage_path ? json_string(o->triage_path) : json_null());
    if (o->triage_path != NULL && ust_sha256_file_hex(o->triage_path, hex) == 0)
        json_object_set_new(t, "sha256", json_string(hex));
    else
        json_object_set_new(t, "sha256", json_null());
    return t;
}

int ust__report_about_load(const ust_report_opts *o, ust__report_model *m, char **err)
{
    m->about = json_object();
    if (m->about == NULL)
        return UST_ENOMEM;
    int rc = generated_at(m->about, err);
    if (rc != 0)
        return rc;
    json_object_set_new(m->about, "understudy_version", json_string(ust_version()));
    json_object_set_new(m->about, "triage", triage_file(o));
    /* Which runs it read, when it read several as one (a single run is
     * named as it always was: by the log and plugins of its Run section). */
    if (o->n_runs > 1) {
        json_t *runs = json_array();
        for (size_t i = 0; runs != NULL && i < o->n_runs; i++)
            json_array_append_new(runs, json_string(o->run_paths[i]));
        json_object_set_new(m->about, "runs", runs);
    }
    return 0;
}

static void put_text(FILE *f, const json_t *v, const ust__report_about_style *s)
{
    ust__report_put_escaped(f, json_string_value(v), s->replace,
                            UST__REPORT_BIDI_VISIBLE);
}

static void put_code(FILE *f, const json_t *v, const ust__report_about_style *s)
{
    fputs(s->code_open, f);
    ust__report_put_escaped(f, json_string_value(v), s->code_replace,
                            UST__REPORT_BIDI_VISIBLE);
    fputs(s->code_close, f);
}

static void row(FILE *f, const char *name, const ust__report_about_style *s)
{
    fputs(s->row_start, f);
    fputs(name, f);
    fputs(s->row_mid, f);
}

void ust__report_put_about(FILE *f, const json_t *about,
                           const ust__report_about_style *s)
{
    const json_t *triage = json_object_get(about, "triage");
    const json_t *chain = json_object_get(about, "log_chain");
    row(f, "generated", s);
    put_text(f, json_object_get(about, "generated_at"), s);
    fputs(s->row_end, f);
    row(f, "understudy", s);
    put_text(f, json_object_get(about, "understudy_version"), s);
    fputs(s->row_end, f);
    const json_t *runs = json_object_get(about, "runs");
    if (json_is_array(runs)) {
        /* On a line of its own (HTML's rows share one), so that the report
         * of partitions read as one differs from the whole run's by it
         * alone. */
        const char *own_line = s->row_end[strlen(s->row_end) - 1] == '\n' ? "" : "\n";
        fputs(own_line, f);
        row(f, "runs (partitions read as one)", s);
        size_t i;
        const json_t *path;
        json_array_foreach(runs, i, path)
        {
            fputs(i ? ", " : "", f);
            put_code(f, path, s);
        }
        fputs(s->row_end, f);
        fputs(own_line, f);
    }
    row(f, "triage file", s);
    if (json_is_object(triage)) {
        put_code(f, json_object_get(triage, "path"), s);
        fputs(" sha256 ", f);
        put_code(f, json_object_get(triage, "sha256"), s);
    } else {
        fputs("none (every class is open)", f);
    }
    fputs(s->row_end, f);
    row(f, "event log chain", s);
    if (json_is_true(json_object_get(chain, "verified"))) {
        fprintf(f, "%s through seq %lld (hash ", s->verified,
                (long long)json_integer_value(json_object_get(chain, "through_seq")));
        put_code(f, json_object_get(chain, "sha256"), s);
        fputs(")", f);
    } else {
        fprintf(f, "%s: ", s->not_verified);
        put_text(f, json_object_get(chain, "reason"), s);
    }
    fputs(s->row_end, f);
}
