/* Masking named fields (card numbers, e-mails) in every payload a report
 * shows. */
#include <understudy/alloc.h>
#include <understudy/event.h>
#include <understudy/redact.h>

#include <string.h>
#include <strings.h>

static int named(const json_t *rules, const char *key)
{
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *r = json_string_value(rule);
        if (r != NULL && r[0] != '/' && strcmp(r, key) == 0)
            return 1;
    }
    return 0;
}

static void mask_names(json_t *v, const json_t *rules)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *child;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, child)
        {
            if (named(rules, k))
                json_object_set_new(v, k, json_string("[redacted]"));
            else
                mask_names(child, rules);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) mask_names(child, rules);
    }
}

int ust_redact_header(const json_t *rules, const char *name)
{
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *r = json_string_value(rule);
        if (name != NULL && r != NULL && strcasecmp(name, r) == 0)
            return 1;
    }
    return 0;
}

void ust_redact_json(json_t *doc, const json_t *rules)
{
    if (doc == NULL || !json_is_array(rules) || json_array_size(rules) == 0)
        return;
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *r = json_string_value(rule);
        if (r == NULL || r[0] != '/')
            continue;
        char last[256];
        json_t *parent = ust_json_pointer_parent(doc, r, last, sizeof(last));
        if (json_is_object(parent) && json_object_get(parent, last) != NULL)
            json_object_set_new(parent, last, json_string("[redacted]"));
    }
    mask_names(doc, rules);
}
