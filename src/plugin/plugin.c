/* A plugin as the host sees it, whatever its kind: the kind's table of
 * operations and its state. kind_for, below, is the one place that knows
 * which kinds there are. */
#include "plugin/kind.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <string.h>

struct ust_plugin {
    const ust__plugin_kind *kind;
    void *impl;
    char sha256[UST_SHA256_HEX_LEN + 1];
};

/* The kind a config asks for, or NULL when it names no plugin. */
static const ust__plugin_kind *kind_for(const ust_plugin_config *pc, const char *path)
{
    /* --legacy SO names a library in place of the config's plugin */
    if (pc->recorded && path == NULL)
        return &ust__plugin_kind_recorded;
    if (pc->url != NULL && path == NULL)
        return &ust__plugin_kind_url;
    if (path != NULL && !pc->isolate)
        return &ust__plugin_kind_inproc;
    if (path != NULL || pc->exec != NULL)
        return &ust__plugin_kind_child;
    return NULL;
}

int ust_plugin_configured(const ust_plugin_config *pc, const char *path)
{
    return kind_for(pc, path != NULL ? path : pc->path) != NULL;
}

int ust__plugin_open_kind(const ust__plugin_kind *kind, const ust__plugin_start *st,
                          ust_plugin **out, char **err)
{
    *out = NULL;
    ust_plugin *p = ust_calloc(1, sizeof(*p));
    if (p == NULL)
        return UST_ENOMEM;
    p->kind = kind;
    int rc = kind->open(st, &p->impl, p->sha256, err);
    if (rc != 0) {
        ust_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int ust_plugin_load(const char *path, const char *ns, json_t *config, ust_store *store,
                    ust_plugin **out, char **err)
{
    ust_plugin_config pc = {.path = (char *)path, .config = config};
    ust__plugin_start st = {.pc = &pc, .path = path, .ns = ns, .store = store};
    return ust__plugin_open_kind(&ust__plugin_kind_inproc, &st, out, err);
}

int ust_plugin_open(const ust_plugin_config *pc, const char *path, const char *ns,
                    unsigned flags, ust_store *store, ust_plugin **out, char **err)
{
    return ust_plugin_open_journaled(pc, path, ns, flags, store, NULL, out, err);
}

int ust_plugin_open_journaled(const ust_plugin_config *pc, const char *path,
                              const char *ns, unsigned flags, ust_store *store,
                              const ust_journal *journal, ust_plugin **out, char **err)
{
    *out = NULL;
    if (path == NULL)
        path = pc->path;
    ust__plugin_start st = {.pc = pc,
                            .path = path,
                            .ns = ns,
                            .flags = flags,
                            .store = store,
                            .journal = journal};
    const ust__plugin_kind *kind = kind_for(pc, path);
    char *why = NULL;
    int rc = kind != NULL ? ust__plugin_open_kind(kind, &st, out, &why)
                          : ust_errf(&why, UST_EPLUGIN,
                                     "neither a path, exec, url nor recorded");
    /* Which plugin of the config, then the cause (which names the file). */
    if (rc != 0)
        ust_errf(err, rc, "plugins.%s: cannot start: %s", ns,
                 why ? why : ust_strerror(rc));
    ust_free(why);
    return rc;
}

void ust_plugin_unload(ust_plugin *p)
{
    if (p == NULL)
        return;
    p->kind->close(p->impl);
    ust_free(p);
}

void ust_plugin_discard(ust_plugin *p)
{
    if (p != NULL && p->kind->discard != NULL)
        p->kind->discard(p->impl);
}

const char *ust_plugin_down(const ust_plugin *p)
{
    return p != NULL && p->kind->down != NULL ? p->kind->down(p->impl) : NULL;
}

int ust_plugin_journaled(const ust_plugin *p)
{
    return p != NULL && p->kind->journaled != NULL && p->kind->journaled(p->impl);
}

int ust_plugin_wants_raw_request(const ust_plugin *p)
{
    return p->kind->wants_raw_request(p->impl);
}

const char *ust_plugin_name(const ust_plugin *p)
{
    return p->kind->name(p->impl);
}

const char *ust_plugin_version(const ust_plugin *p)
{
    return p->kind->version(p->impl);
}

const char *ust_plugin_file_sha256(const ust_plugin *p)
{
    return p->sha256;
}

void ust_plugin_decide(ust_plugin *p, const ust_event *ev, const ust_request *req,
                       ust_decision *out)
{
    p->kind->decide(p->impl, ev, req, out);
}

void ust_plugin_decide_answered(ust_plugin *p, const ust_event *ev,
                                const ust_request *req, const ust_response *a,
                                ust_decision *out)
{
    if (p->kind->decide_answered != NULL)
        p->kind->decide_answered(p->impl, ev, req, a, out);
    else
        p->kind->decide(p->impl, ev, req, out);
}

void ust_plugin_batch_start(ust_plugin *p, ust_plugin_batch *b)
{
    if (p->kind->batch_start != NULL)
        p->kind->batch_start(p->impl, b);
}

void ust_plugin_batch_finish(ust_plugin *p, ust_plugin_batch *b, ust_decision **outs)
{
    if (p->kind->batch_finish != NULL) {
        p->kind->batch_finish(p->impl, b, outs);
        return;
    }
    for (size_t i = 0; i < b->n; i++)
        p->kind->decide(p->impl, b->evs[i], b->reqs[i], outs[i]);
}

void ust_plugin_decide_batch(ust_plugin *p, const ust_event *const *evs,
                             const ust_request *const *reqs, size_t n,
                             ust_decision **outs)
{
    ust_plugin_batch b = {evs, reqs, n, 0, 0};
    ust_plugin_batch_start(p, &b);
    ust_plugin_batch_finish(p, &b, outs);
}
