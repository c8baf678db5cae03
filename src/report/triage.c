/* The triage file: which divergence classes people have looked at and
 * accepted, why, and who owns that decision. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/report.h>

#include <string.h>

int ust_glob_match(const char *p, const char *t)
{
    /* Iterative matcher with one backtrack point: linear enough for class
     * names, and no recursion on hostile patterns. */
    const char *star = NULL, *resume = NULL;
    while (*t != '\0') {
        if (*p == '*') {
            star = p++;
            resume = t;
        } else if (*p == *t) {
            p++, t++;
        } else if (star != NULL) {
            p = star + 1;
            t = ++resume;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* Either side erred (ust_divergence_class writes "what: legacy → candidate"):
 * a candidate that errs on every event must not pass under "*", nor a
 * legacy that does (then nothing was compared with what production does). */
static int is_error_class(const char *cls)
{
    static const char arrow[] = " \xe2\x86\x92 ";
    static const char error[] = "error";
    const char *at = NULL;
    for (const char *p = strstr(cls, arrow); p != NULL; p = strstr(p + 1, arrow))
        at = p;
    if (at == NULL)
        return 0;
    if (strcmp(at + sizeof(arrow) - 1, error) == 0)
        return 1;
    size_t n = sizeof(error) - 1;
    return (size_t)(at - cls) >= n + 2 && strncmp(at - n, error, n) == 0 &&
           strncmp(at - n - 2, ": ", 2) == 0;
}

const ust_triage_entry *ust_triage_match(const ust_triage *t, const char *cls)
{
    int named_only = is_error_class(cls);
    for (size_t i = 0; t != NULL && i < t->n; i++) {
        const char *glob = t->entries[i].class_glob;
        if (named_only ? strcmp(glob, cls) == 0 : ust_glob_match(glob, cls))
            return &t->entries[i];
    }
    return NULL;
}

void ust_triage_free(ust_triage *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++) {
        ust_free(t->entries[i].class_glob);
        ust_free(t->entries[i].reason);
        ust_free(t->entries[i].owner);
        ust_free(t->entries[i].date);
    }
    ust_free(t->entries);
    ust_free(t);
}

static int valid_date(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    if (strlen(s) != sizeof(shape) - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != '-')
            return 0;
    return 1;
}

static int take(const char *path, size_t i, json_t *entry, const char *key,
                int required, char **out, char **err)
{
    json_t *v = json_object_get(entry, key);
    if (v == NULL && !required)
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return ust_errf(err, UST_ECONFIG,
                        "%s: accepted[%zu].%s: expected a non-empty string", path, i,
                        key);
    *out = ust_strdup(json_string_value(v));
    return *out ? 0 : UST_ENOMEM;
}

int ust_triage_load(const char *path, ust_triage **out, char **err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *doc = ust_json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL)
        return ust_errf(err, UST_ECONFIG, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                        jerr.text);
    json_t *accepted = json_object_get(doc, "accepted");
    if (!json_is_object(doc) || !json_is_array(accepted)) {
        json_decref(doc);
        return ust_errf(err, UST_ECONFIG, "%s: accepted: expected an array of entries",
                        path);
    }
    ust_triage *t = ust_calloc(1, sizeof(*t));
    size_t n = json_array_size(accepted);
    if (t == NULL ||
        (t->entries = ust_calloc(n ? n : 1, sizeof(*t->entries))) == NULL) {
        ust_free(t);
        json_decref(doc);
        return UST_ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *e = json_array_get(accepted, i);
        ust_triage_entry *te = &t->entries[i];
        t->n = i + 1;
        if (!json_is_object(e))
            rc = ust_errf(err, UST_ECONFIG, "%s: accepted[%zu]: expected an object",
                          path, i);
        else if ((rc = take(path, i, e, "class", 1, &te->class_glob, err)) == 0 &&
                 (rc = take(path, i, e, "reason", 1, &te->reason, err)) == 0 &&
                 (rc = take(path, i, e, "owner", 1, &te->owner, err)) == 0 &&
                 (rc = take(path, i, e, "date", 0, &te->date, err)) == 0 &&
                 te->date != NULL && !valid_date(te->date))
            rc = ust_errf(err, UST_ECONFIG,
                          "%s: accepted[%zu].date: expected YYYY-MM-DD", path, i);
    }
    json_decref(doc);
    if (rc != 0) {
        ust_triage_free(t);
        return rc;
    }
    *out = t;
    return 0;
}
