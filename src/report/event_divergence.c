/* A divergence line masked for review: the rules that mask a request's
 * fields mask the same names in both decisions, and in the values its
 * "diff" shows side by side. */
#include "report/event_load.h"

#include <understudy/event.h>
#include <understudy/redact.h>

#include <string.h>

static const char MASK[] = "[redacted]";

static int is_mask(const json_t *v)
{
    return json_is_string(v) && strcmp(json_string_value(v), MASK) == 0;
}

static void mask_headers(json_t *headers, const json_t *rules)
{
    const char *name;
    json_t *v;
    json_object_foreach(headers, name, v)
    {
        if (ust_redact_header(rules, name))
            json_object_set_new(headers, name, json_string(MASK));
    }
}

/* The value at pointer of a masked body: the masked value when the body
 * has one there, a mask when an enclosing member was masked, else NULL (the
 * body has nothing there). */
static json_t *masked_at(json_t *body, const char *pointer)
{
    char prefix[512];
    size_t n = strlen(pointer);
    if (n >= sizeof(prefix))
        return json_string(MASK); /* too deep to check: shown masked */
    for (size_t i = 1; i <= n; i++) {
        if (i < n && pointer[i] != '/')
            continue;
        memcpy(prefix, pointer, i);
        prefix[i] = '\0';
        json_t *v = ust_json_pointer(body, prefix);
        if (v == NULL)
            return NULL;
        if (i < n && is_mask(v))
            return json_string(MASK);
        if (i == n)
            return json_incref(v);
    }
    return NULL;
}

/* One side of a diff entry, masked as that side's decision is. */
static void mask_diff_side(json_t *entry, const char *side, const char *field,
                           json_t *decision, const json_t *rules)
{
    if (json_object_get(entry, side) == NULL)
        return;
    if (strncmp(field, "header:", 7) == 0) {
        if (ust_redact_header(rules, field + 7))
            json_object_set_new(entry, side, json_string(MASK));
    } else if (strncmp(field, "body/", 5) == 0) {
        json_t *v = masked_at(json_object_get(decision, "body"), field + 4);
        if (v != NULL)
            json_object_set_new(entry, side, v);
    } else if (strcmp(field, "body") == 0) {
        json_t *body = json_object_get(decision, "body");
        if (body != NULL)
            json_object_set(entry, side, body);
    }
}

void ust__report_redact_divergence(json_t *divergence, const json_t *rules)
{
    if (json_array_size(rules) == 0)
        return;
    static const char *const sides[] = {"legacy", "candidate"};
    for (int s = 0; s < 2; s++) {
        json_t *d = json_object_get(divergence, sides[s]);
        ust_redact_json(json_object_get(d, "body"), rules);
        mask_headers(json_object_get(d, "headers"), rules);
    }
    size_t i;
    json_t *entry;
    json_array_foreach(json_object_get(divergence, "diff"), i, entry)
    {
        const char *field = json_string_value(json_object_get(entry, "field"));
        for (int s = 0; field != NULL && s < 2; s++)
            mask_diff_side(entry, sides[s], field,
                           json_object_get(divergence, sides[s]), rules);
    }
}
