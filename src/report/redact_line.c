/* One masking of a divergence line for every place a report writes it
 * (divergences.jsonl, the pages' examples): its decisions and its diff are
 * the same values twice, so they are masked by the same rules together. */
#include "report/redact_line.h"

#include <understudy/redact.h>

#include <string.h>

static const char *const sides[] = {"legacy", "candidate"};

static void mask_decision(json_t *decision, const json_t *rules)
{
    ust_redact_json(json_object_get(decision, "body"), rules);
    json_t *headers = json_object_get(decision, "headers");
    const char *name;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(headers, tmp, name, value)
    {
        if (value != NULL && ust_redact_header(rules, name))
            json_object_set_new(headers, name, json_string("[redacted]"));
    }
}

/* One entry of the diff: "body<pointer>" is masked where that pointer's
 * value sits in the body, "header:NAME" as the header is. */
static void mask_entry(json_t *entry, const json_t *rules)
{
    const char *field = json_string_value(json_object_get(entry, "field"));
    if (field == NULL)
        return;
    int is_body = strncmp(field, "body", 4) == 0;
    int is_header = strncmp(field, "header:", 7) == 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(entry, sides[i]);
        if (v == NULL)
            continue;
        if ((is_body && ust_redact_at(v, field + 4, rules)) ||
            (is_header && ust_redact_header(rules, field + 7)))
            json_object_set_new(entry, sides[i], json_string("[redacted]"));
    }
}

void ust__report_redact_line(json_t *line, const json_t *rules)
{
    if (line == NULL || json_array_size(rules) == 0)
        return;
    for (size_t i = 0; i < 2; i++)
        mask_decision(json_object_get(line, sides[i]), rules);
    ust__report_redact_diff(json_object_get(line, "diff"), rules);
}

void ust__report_redact_diff(json_t *diff, const json_t *rules)
{
    if (json_array_size(rules) == 0)
        return;
    size_t i;
    json_t *entry;
    json_array_foreach(diff, i, entry) mask_entry(entry, rules);
}
