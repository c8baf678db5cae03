/* An HTTP answer read as a decision (answer.h). The answer becomes the
 * plugin ABI's decision and goes through the same checks as a plugin's
 * (ust__adopt), so a service is held to what a .so is held to. */
#include <understudy/alloc.h>
#include <understudy/answer.h>
#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/plugin.h>

#include "plugin/wire.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PREFIX "Understudy-"
#define MAX_FLAGS 32

int ust_verdict_map_parse(const json_t *v, const char *what, ust_verdict_map *out,
                          char **err)
{
    memset(out, 0, sizeof(*out));
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return ust_errf(err, UST_ECONFIG,
                        "%s: must be an object of HTTP status to verdict", what);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        char *end = NULL;
        long status = strtol(key, &end, 10);
        if (end == key || *end != '\0' || status < 100 || status > 599)
            return ust_errf(err, UST_ECONFIG, "%s: \"%s\" is not an HTTP status", what,
                            key);
        ust_verdict verdict;
        const char *name = json_string_value(val);
        if (name == NULL || ust_verdict_parse(name, &verdict) != 0 ||
            verdict == UST_VERDICT_ERROR)
            return ust_errf(err, UST_ECONFIG,
                            "%s.%s: not a verdict (applied, duplicate, rejected, "
                            "conflict, in_progress or invalid)",
                            what, key);
        if (out->n == UST_ARRAY_SIZE(out->status))
            return ust_errf(err, UST_ECONFIG, "%s: more than %zu entries", what,
                            out->n);
        out->status[out->n] = (int)status;
        out->verdict[out->n++] = verdict;
    }
    return 0;
}

/* The verdict the status makes; 0 when it makes none (an error). */
static ust_verdict verdict_of_status(const ust_verdict_map *map, int status)
{
    for (size_t i = 0; map != NULL && i < map->n; i++)
        if (map->status[i] == status)
            return map->verdict[i];
    if (status >= 200 && status < 300)
        return UST_VERDICT_APPLIED;
    if (status == 409)
        return UST_VERDICT_IN_PROGRESS;
    if (status == 422)
        return UST_VERDICT_CONFLICT;
    if (status >= 400 && status < 500)
        return UST_VERDICT_INVALID;
    return 0;
}

static char *trimmed_dup(const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return ust_strndup(s, n);
}

/* The body as JSON text for the decision: its own text when it parses,
 * else a JSON string of it. NULL with *why on a body that cannot be one. */
static char *body_text(const ust_http_answer *a, const char **why)
{
    if (a->body_len == 0)
        return NULL;
    if (!ust_utf8_valid(a->body, a->body_len) || memchr(a->body, '\0', a->body_len)) {
        *why = "the answer's body is not UTF-8 text";
        return NULL;
    }
    json_error_t jerr;
    json_t *parsed =
        ust_json_loadb((const char *)a->body, a->body_len, JSON_DECODE_ANY, &jerr);
    char *text = NULL;
    if (parsed != NULL)
        text = ust_strndup((const char *)a->body, a->body_len);
    else {
        json_t *s = json_stringn((const char *)a->body, a->body_len);
        char *dumped = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        text = dumped ? ust_strdup(dumped) : NULL;
        ust_free(dumped);
        json_decref(s);
    }
    json_decref(parsed);
    if (text == NULL)
        *why = "out of memory";
    return text;
}

const char *ust_http_answer_refusal(const ust_http_answer *a)
{
    const char *why = ust__status_refusal(a->status);
    for (size_t i = 0; why == NULL && i < a->n_headers; i++)
        why = ust__header_refusal(a->headers[i].name, a->headers[i].value);
    return why;
}

int ust_http_answer_decide(const ust_http_answer *a, const ust_verdict_map *map,
                           ust_decision *d)
{
    memset(d, 0, sizeof(*d));
    ust_plugin_decision pd = {.size = sizeof(pd), .http_status = a->status};
    ust_plugin_header hv[64];
    char *flags[MAX_FLAGS];
    const char *verdict_name = NULL, *why = NULL, *flags_value = NULL;
    char detail[64];
    const char *refused = ust_http_answer_refusal(a);
    if (refused != NULL) {
        ust__decision_error(d, a->status, "the answer is refused", refused);
        return d->error ? 0 : UST_ENOMEM;
    }
    for (size_t i = 0; i < a->n_headers && why == NULL; i++) {
        const char *n = a->headers[i].name, *v = a->headers[i].value;
        if (strncasecmp(n, PREFIX, sizeof(PREFIX) - 1) == 0) {
            const char *field = n + sizeof(PREFIX) - 1;
            char **slot = strcasecmp(field, "Entity") == 0         ? &pd.entity
                          : strcasecmp(field, "State-Before") == 0 ? &pd.state_before
                          : strcasecmp(field, "State") == 0        ? &pd.state_after
                          : strcasecmp(field, "Reason") == 0       ? &pd.reason
                                                                   : NULL;
            if (slot != NULL) {
                ust_free(*slot);
                *slot = ust_strdup(v);
            } else if (strcasecmp(field, "Verdict") == 0)
                verdict_name = v;
            else if (strcasecmp(field, "Flags") == 0)
                flags_value = v;
            continue;
        }
        if (ust__owned_header(n) != NULL)
            continue; /* framing: the service's, not its decision's */
        if (pd.n_headers == UST_ARRAY_SIZE(hv))
            why = "the answer has more than 64 headers";
        else
            hv[pd.n_headers++] = (ust_plugin_header){n, v};
    }
    pd.headers = pd.n_headers ? hv : NULL;
    if (why == NULL && verdict_name != NULL) {
        if (ust_verdict_parse(verdict_name, &pd.verdict) != 0 ||
            pd.verdict == UST_VERDICT_ERROR)
            why = "Understudy-Verdict is not a verdict";
    } else if (why == NULL && (pd.verdict = verdict_of_status(map, a->status)) == 0) {
        snprintf(detail, sizeof(detail), "the service answered %d", a->status);
        why = detail;
    }
    for (const char *p = flags_value; why == NULL && p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *flag = trimmed_dup(p, len);
        if (flag != NULL && *flag == '\0')
            ust_free(flag);
        else if (pd.n_flags == MAX_FLAGS) {
            ust_free(flag);
            why = "Understudy-Flags names more than 32 flags";
        } else
            flags[pd.n_flags++] = flag;
        p = comma ? comma + 1 : p + len;
    }
    pd.flags = pd.n_flags ? flags : NULL;
    if (why == NULL)
        pd.response_body = body_text(a, &why);
    int rc = 0;
    if (why == NULL) {
        const char *bad = ust__adopt(&pd, d, NULL);
        if (bad != NULL)
            ust__decision_error(d, a->status, "the answer is not a decision", bad);
    } else
        ust__decision_error(d, a->status, why, NULL);
    if (d->verdict == UST_VERDICT_ERROR && d->error == NULL)
        rc = UST_ENOMEM;
    ust_free(pd.response_body);
    ust_free(pd.entity);
    ust_free(pd.state_before);
    ust_free(pd.state_after);
    ust_free(pd.reason);
    for (size_t i = 0; i < pd.n_flags; i++)
        ust_free(flags[i]);
    return rc;
}
