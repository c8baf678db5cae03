/* Masking named fields (card numbers, e-mails) in every payload a report
 * shows. */
#include <understudy/alloc.h>
#include <understudy/event.h>
#include <understudy/report.h>

#include <string.h>

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

/* RFC 6901 unescaping of one reference token into out (cap bytes). */
static int unescape_token(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        if (n + 1 >= cap)
            return -1;
        if (s[0] == '~' && (s[1] == '0' || s[1] == '1'))
            out[n++] = s[1] == '0' ? '~' : '/', s++;
        else
            out[n++] = *s;
    }
    out[n] = '\0';
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
        const char *slash = strrchr(r, '/');
        char *parent_ptr = ust_strndup(r, (size_t)(slash - r));
        json_t *parent = parent_ptr ? ust_json_pointer(doc, parent_ptr) : NULL;
        ust_free(parent_ptr);
        char last[256];
        if (json_is_object(parent) &&
            unescape_token(slash + 1, last, sizeof(last)) == 0 &&
            json_object_get(parent, last) != NULL)
            json_object_set_new(parent, last, json_string("[redacted]"));
    }
    mask_names(doc, rules);
}
