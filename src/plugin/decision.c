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

void ust_decision_write_json(ust_jsonw *w, const ust_decision *d)
{
    ust_jsonw_object(w);
    ust_jsonw_member_string(w, "verdict", ust_verdict_name(d->verdict));
    ust_jsonw_member_int(w, "status", d->http_status);
    ust_jsonw_member_string(w, "state", d->state_after);
    ust_jsonw_member_string(w, "state_before", d->state_before);
    ust_jsonw_member_string(w, "entity", d->entity);
    ust_jsonw_key(w, "flags");
    ust_jsonw_strings(w, d->flags, d->n_flags);
    /* The body is compact JSON with sorted keys already (the host made it so
     * when it took the decision): it goes in as it is. */
    ust_jsonw_key(w, "body");
    if (d->body != NULL)
        ust_jsonw_raw(w, d->body, strlen(d->body));
    else
        ust_jsonw_null(w);
    ust_jsonw_key(w, "headers");
    if (d->headers != NULL)
        ust_jsonw_value(w, d->headers);
    else
        ust_jsonw_raw(w, "{}", 2);
    if (d->reason)
        ust_jsonw_member_string(w, "reason", d->reason);
    if (d->error)
        ust_jsonw_member_string(w, "error", d->error);
    ust_jsonw_end_object(w);
}
