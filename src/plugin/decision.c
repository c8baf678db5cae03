/* Decisions as the host keeps them, and their JSON form. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/host.h>

#include <string.h>

static const char *const verdict_names[] = {
    [UST_VERDICT_APPLIED] = "applied",
    [UST_VERDICT_DUPLICATE] = "duplicate",
    [UST_VERDICT_REJECTED] = "rejected",
    [UST_VERDICT_CONFLICT] = "conflict",
    [UST_VERDICT_IN_PROGRESS] = "in_progress",
    [UST_VERDICT_INVALID] = "invalid",
    [UST_VERDICT_ERROR] = "error",
};

const char *ust_verdict_name(ust_verdict v)
{
    if (v < UST_VERDICT_APPLIED || v > UST_VERDICT_ERROR)
        return "unknown";
    return verdict_names[v];
}

int ust_verdict_parse(const char *name, ust_verdict *out)
{
    for (int v = UST_VERDICT_APPLIED; v <= UST_VERDICT_ERROR; v++) {
        if (strcmp(name, verdict_names[v]) == 0) {
            *out = (ust_verdict)v;
            return 0;
        }
    }
    return UST_EINVAL;
}

void ust_decision_clear(ust_decision *d)
{
    if (d == NULL)
        return;
    ust_free(d->body);
    json_decref(d->headers);
    ust_free(d->entity);
    ust_free(d->state_before);
    ust_free(d->state_after);
    ust_free(d->reason);
    for (size_t i = 0; i < d->n_flags; i++)
        ust_free(d->flags[i]);
    ust_free(d->flags);
    ust_free(d->error);
    memset(d, 0, sizeof(*d));
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *ust_decision_to_json(const ust_decision *d)
{
    json_t *o = json_object();
    json_t *flags = json_array();
    if (o == NULL || flags == NULL) {
        json_decref(o);
        json_decref(flags);
        return NULL;
    }
    json_object_set_new(o, "verdict", json_string(ust_verdict_name(d->verdict)));
    json_object_set_new(o, "status", json_integer(d->http_status));
    json_object_set_new(o, "state", string_or_null(d->state_after));
    json_object_set_new(o, "state_before", string_or_null(d->state_before));
    json_object_set_new(o, "entity", string_or_null(d->entity));
    for (size_t i = 0; i < d->n_flags; i++)
        json_array_append_new(flags, json_string(d->flags[i]));
    json_object_set_new(o, "flags", flags);
    json_error_t jerr;
    json_t *body = d->body ? json_loads(d->body, JSON_DECODE_ANY, &jerr) : NULL;
    json_object_set_new(o, "body", body ? body : json_null());
    json_object_set_new(o, "headers",
                        d->headers ? json_incref(d->headers) : json_object());
    if (d->reason)
        json_object_set_new(o, "reason", json_string(d->reason));
    if (d->error)
        json_object_set_new(o, "error", json_string(d->error));
    return o;
}
