/* The triage file: which divergence classes people have looked at and
 * accepted, why, and who owns that decision. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/report.h>

#include <stdio.h>
#include <string.h>

/* The arrow of every class name (ust_divergence_class), U+2192. */
#define ARROW "\xe2\x86\x92"

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
    static const char arrow[] = " " ARROW " ";
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

/* The first entry, expired or not as asked, that accepts cls. */
static const ust_triage_entry *first_match(const ust_triage *t, const char *cls,
                                           int expired)
{
    int named_only = is_error_class(cls);
    for (size_t i = 0; t != NULL && i < t->n; i++) {
        const char *glob = t->entries[i].class_glob;
        if (t->entries[i].expired == expired &&
            (named_only ? strcmp(glob, cls) == 0 : ust_glob_match(glob, cls)))
            return &t->entries[i];
    }
    return NULL;
}

const ust_triage_entry *ust_triage_match(const ust_triage *t, const char *cls)
{
    return first_match(t, cls, 0);
}

const ust_triage_entry *ust_triage_match_expired(const ust_triage *t, const char *cls)
{
    return first_match(t, cls, 1);
}

/* ---- the arrow a pattern may have meant ---------------------------------- */

/* A word that can stand for a verdict in a pattern: a verdict's name, or
 * letters and '_' with a '*'. */
static int verdict_like(const char *w, size_t n)
{
    char name[32];
    ust_verdict v;
    if (n == 0 || n >= sizeof(name))
        return 0;
    memcpy(name, w, n);
    name[n] = '\0';
    return strchr(name, '*') != NULL || ust_verdict_parse(name, &v) == 0;
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || c == '_' || c == '*';
}

/* What may stand between the two verdicts: not a word, nor what names the
 * event type or route before them. */
static int between_char(char c)
{
    return !word_char(c) && strchr(":.", c) == NULL && !(c >= '0' && c <= '9') &&
           !(c >= 'A' && c <= 'Z');
}

/* Whether s[0, n) holds something an arrow points with: '>', or U+2192,
 * U+21D2, U+27F6 (→ ⇒ ⟶). */
static int has_arrow_head(const char *s, size_t n)
{
    static const char *const heads[] = {ARROW, "\xe2\x87\x92", "\xe2\x9f\xb6"};
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '>')
            return 1;
        for (size_t k = 0; k < UST_ARRAY_SIZE(heads); k++)
            if (i + 3 <= n && memcmp(s + i, heads[k], 3) == 0)
                return 1;
    }
    return 0;
}

int ust_triage_arrow_hint(const char *pattern, int classes_have_arrow, char **out)
{
    *out = NULL;
    /* A class ends in "LEGACY → CANDIDATE": find the pattern's two last
     * words, [b1, e1) and [b2, n), and what is between them. */
    size_t n = strlen(pattern), b2 = n;
    while (b2 > 0 && word_char(pattern[b2 - 1]))
        b2--;
    size_t e1 = b2;
    while (e1 > 0 && between_char(pattern[e1 - 1]))
        e1--;
    size_t b1 = e1;
    while (b1 > 0 && word_char(pattern[b1 - 1]))
        b1--;
    if (e1 == b2 || !verdict_like(pattern + b1, e1 - b1) ||
        !verdict_like(pattern + b2, n - b2))
        return 0;
    const char *between = pattern + e1;
    size_t len = b2 - e1;
    if (len == 5 && memcmp(between, " " ARROW " ", 5) == 0)
        return 0; /* the arrow is as it should be: the class is gone */
    /* An arrow typed otherwise ("=>", "-->", " > ", no spaces), or none
     * where every class of the run has one. */
    if (!has_arrow_head(between, len) &&
        (!classes_have_arrow || strstr(pattern, ARROW) != NULL))
        return 0;
    *out = ust_sprintf("%.*s " ARROW " %s", (int)e1, pattern, pattern + b2);
    return *out ? 0 : UST_ENOMEM;
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
        ust_free(t->entries[i].expires);
    }
    ust_free(t->entries);
    ust_free(t);
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

/* YYYY-MM-DD, a day of the calendar (not 2026-02-30). */
static int valid_date(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    if (strlen(s) != sizeof(shape) - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != '-')
            return 0;
    char midnight[32];
    int64_t us;
    snprintf(midnight, sizeof(midnight), "%sT00:00:00Z", s);
    return ust_time_parse(midnight, &us) == 0;
}

/* The pattern with each "->" as the arrow of class names; "-->" is left as
 * it is (ust_triage_arrow_hint then says what was meant). */
static char *read_arrows(const char *glob)
{
    char *out = ust_malloc(strlen(glob) * 3 / 2 + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (const char *p = glob; *p != '\0'; p++) {
        if (p[0] == '-' && p[1] == '>' && (p == glob || p[-1] != '-')) {
            memcpy(o, ARROW, 3);
            o += 3, p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/* A key misspelt would be a field ignored: an "expirse" that never
 * expires. */
static int known_keys(const char *path, size_t i, json_t *e, char **err)
{
    static const char *const known[] = {"class", "reason", "owner", "date", "expires"};
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v)
    {
        size_t k = 0;
        while (k < UST_ARRAY_SIZE(known) && strcmp(key, known[k]) != 0)
            k++;
        if (k == UST_ARRAY_SIZE(known))
            return ust_errf(err, UST_ECONFIG,
                            "%s: accepted[%zu]: unknown key \"%s\" (an entry has "
                            "class, reason, owner, date and expires)",
                            path, i, key);
    }
    return 0;
}

/* The classes, dates and expiry of entry i, as the file has them. */
static int take_entry(const char *path, size_t i, json_t *e, const char *today,
                      ust_triage_entry *te, char **err)
{
    char *glob = NULL;
    int rc;
    if ((rc = known_keys(path, i, e, err)) != 0 ||
        (rc = take(path, i, e, "class", 1, &glob, err)) != 0 ||
        (rc = take(path, i, e, "reason", 1, &te->reason, err)) != 0 ||
        (rc = take(path, i, e, "owner", 1, &te->owner, err)) != 0 ||
        (rc = take(path, i, e, "date", 0, &te->date, err)) != 0 ||
        (rc = take(path, i, e, "expires", 0, &te->expires, err)) != 0) {
        ust_free(glob);
        return rc;
    }
    te->class_glob = read_arrows(glob);
    ust_free(glob);
    if (te->class_glob == NULL)
        return UST_ENOMEM;
    if (te->date != NULL && !valid_date(te->date))
        return ust_errf(err, UST_ECONFIG, "%s: accepted[%zu].date: expected YYYY-MM-DD",
                        path, i);
    if (te->expires != NULL && !valid_date(te->expires))
        return ust_errf(err, UST_ECONFIG,
                        "%s: accepted[%zu].expires: expected YYYY-MM-DD, the last day "
                        "the entry accepts",
                        path, i);
    /* Dates of one shape compare as strings. */
    te->expired = te->expires != NULL && strcmp(today, te->expires) > 0;
    return 0;
}

/* The entries of doc (NULL: it did not parse, jerr says why), which takes
 * doc's reference; path names it in messages. */
static int from_doc(json_t *doc, const json_error_t *jerr, const char *path,
                    ust_triage **out, char **err)
{
    *out = NULL;
    if (doc == NULL)
        return ust_errf(err, UST_ECONFIG, "%s:%d:%d: %s", path, jerr->line,
                        jerr->column, jerr->text);
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
    /* Today, UTC: an entry expires at the end of its day. */
    char today[32];
    ust_time_format(ust_time_wall_us(), today);
    today[10] = '\0';
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *e = json_array_get(accepted, i);
        t->n = i + 1;
        if (!json_is_object(e))
            rc = ust_errf(err, UST_ECONFIG, "%s: accepted[%zu]: expected an object",
                          path, i);
        else
            rc = take_entry(path, i, e, today, &t->entries[i], err);
    }
    json_decref(doc);
    if (rc != 0) {
        ust_triage_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int ust_triage_parse(const char *text, size_t len, const char *path, ust_triage **out,
                     char **err)
{
    json_error_t jerr;
    json_t *doc = ust_json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    return from_doc(doc, &jerr, path, out, err);
}

int ust_triage_load(const char *path, ust_triage **out, char **err)
{
    json_error_t jerr;
    json_t *doc = ust_json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    return from_doc(doc, &jerr, path, out, err);
}
