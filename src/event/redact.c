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

/* Masks the member each pointer rule under prefix names, the rule read
 * relative to doc (which is the value at prefix; "" for a whole document). */
static void mask_pointers(json_t *doc, const char *prefix, const json_t *rules)
{
    size_t n = strlen(prefix), i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *r = json_string_value(rule);
        if (r == NULL || r[0] != '/' || strncmp(r, prefix, n) != 0 || r[n] != '/')
            continue;
        char last[256];
        json_t *parent = ust_json_pointer_parent(doc, r + n, last, sizeof(last));
        if (json_is_object(parent) && json_object_get(parent, last) != NULL)
            json_object_set_new(parent, last, json_string("[redacted]"));
    }
}

void ust_redact_json(json_t *doc, const json_t *rules)
{
    if (doc == NULL || !json_is_array(rules) || json_array_size(rules) == 0)
        return;
    mask_pointers(doc, "", rules);
    mask_names(doc, rules);
}

/* 1 when the escaped pointer token tok[0..len) is name. */
static int token_is(const char *tok, size_t len, const char *name)
{
    for (size_t j = 0; j < len; j++, name++) {
        char ch = tok[j];
        if (ch == '~' && j + 1 < len) {
            j++;
            ch = tok[j] == '0' ? '~' : '/';
        }
        if (*name != ch)
            return 0;
    }
    return *name == '\0';
}

/* 1 when a rule names the member at pointer itself or one that holds it:
 * a pointer rule equal to it or to a prefix of it (whole tokens), or a
 * field name rule equal to one of its tokens. */
static int masked_on_the_way(const char *pointer, const json_t *rules)
{
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *r = json_string_value(rule);
        size_t n = r != NULL ? strlen(r) : 0;
        if (r != NULL && r[0] == '/' && strncmp(pointer, r, n) == 0 &&
            (pointer[n] == '\0' || pointer[n] == '/'))
            return 1;
    }
    for (const char *p = pointer; *p == '/';) {
        const char *tok = p + 1, *end = strchr(tok, '/');
        size_t len = end != NULL ? (size_t)(end - tok) : strlen(tok);
        json_array_foreach(rules, i, rule)
        {
            const char *r = json_string_value(rule);
            if (r != NULL && r[0] != '/' && token_is(tok, len, r))
                return 1;
        }
        p = tok + len;
    }
    return 0;
}

int ust_redact_at(json_t *value, const char *pointer, const json_t *rules)
{
    if (value == NULL || pointer == NULL || !json_is_array(rules) ||
        json_array_size(rules) == 0)
        return 0;
    if (masked_on_the_way(pointer, rules))
        return 1;
    mask_pointers(value, pointer, rules);
    mask_names(value, rules);
    return 0;
}
