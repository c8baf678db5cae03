/* A "recorded" legacy: production's own answer to each request, kept in the
 * log beside it (ust_log_record.response), read as the legacy's decision
 * the way every HTTP answer is (answer.h), so a week captured from
 * production replays against any candidate without calling production.
 * Nothing runs: the kind holds the verdicts map and nothing else. */
#include "plugin/faults.h"
#include "plugin/kind.h"

#include <understudy/alloc.h>
#include <understudy/answer.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include <string.h>

typedef struct recorded {
    const char *ns;
    ust_plugin_counters *counters; /* borrowed from the plugin config, or NULL */
    ust_verdict_map verdicts;
} recorded;

/* Its identity in the run: the hash of what configures it, since there is
 * no code of its own to hash. */
static int identity(const ust_plugin_config *pc, char id[UST_SHA256_HEX_LEN + 1])
{
    json_t *conf = json_object();
    json_t *verdicts = pc->verdicts ? json_incref(pc->verdicts) : json_object();
    /* set_new takes verdicts, even when it fails */
    if (conf == NULL || json_object_set_new(conf, "verdicts", verdicts) != 0 ||
        json_object_set_new(conf, "recorded", json_true()) != 0) {
        if (conf == NULL)
            json_decref(verdicts);
        json_decref(conf);
        conf = NULL;
    }
    char *text = conf ? ust_json_canonical(conf) : NULL;
    json_decref(conf);
    if (text == NULL)
        return UST_ENOMEM;
    ust_sha256_hex(text, strlen(text), id);
    ust_free(text);
    return 0;
}

static int recorded_open(const ust__plugin_start *st, void **impl,
                         char id[UST_SHA256_HEX_LEN + 1], char **err)
{
    *impl = NULL;
    recorded *r = ust_calloc(1, sizeof(*r));
    if (r == NULL)
        return UST_ENOMEM;
    r->ns = st->ns;
    r->counters = st->pc->counters;
    char what[64];
    snprintf(what, sizeof(what), "plugins.%s.verdicts", st->ns ? st->ns : "legacy");
    int rc = ust_verdict_map_parse(st->pc->verdicts, what, &r->verdicts, err);
    if (rc == 0)
        rc = identity(st->pc, id);
    if (rc != 0) {
        ust_free(r);
        return rc;
    }
    *impl = r;
    return 0;
}

static void recorded_close(void *impl)
{
    ust_free(impl);
}

static const char *recorded_name(const void *impl)
{
    (void)impl;
    return "recorded";
}

static const char *recorded_version(const void *impl)
{
    (void)impl;
    return "1";
}

/* It reads the answer, not the request (the runner has both anyway). */
static int recorded_wants_raw_request(const void *impl)
{
    (void)impl;
    return 0;
}

static void recorded_decide_answered(void *impl, const ust_event *ev,
                                     const ust_request *req, const ust_response *a,
                                     ust_decision *out)
{
    recorded *r = impl;
    (void)ev;
    (void)req;
    memset(out, 0, sizeof(*out));
    if (a == NULL || a->status == 0) {
        out->verdict = UST_VERDICT_ERROR;
        out->error = ust_strdup("no recorded answer for this event");
    } else {
        ust_http_answer answer = {a->status, a->headers, a->n_headers, a->body,
                                  a->body_len};
        ust_http_answer_decide(&answer, &r->verdicts, out);
    }
    if (out->verdict == UST_VERDICT_ERROR)
        ust__plugin_fault(r->counters, r->ns, UST_FAULT_DECIDE);
}

/* Called without an answer (serve --respond legacy, a caller that has no
 * log row): there is nothing to decide with. */
static void recorded_decide(void *impl, const ust_event *ev, const ust_request *req,
                            ust_decision *out)
{
    recorded_decide_answered(impl, ev, req, NULL, out);
}

const ust__plugin_kind ust__plugin_kind_recorded = {
    UST__PLUGIN_KIND_REQUIRED(recorded),
    .decide_answered = recorded_decide_answered,
};
