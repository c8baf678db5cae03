/* The state store in a plugin's child process: the cache of store.c, with
 * misses asked of the parent over the protocol's pipes and the call's writes
 * sent with its decision. */
#include "plugin/store_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

static int defer_line(ust_store *s, char *line)
{
    if (s->n_deferred == s->cap_deferred) {
        size_t cap = s->cap_deferred ? s->cap_deferred * 2 : 16;
        char **grown = ust_realloc(s->deferred, cap * sizeof(*grown));
        if (grown == NULL)
            return UST_ENOMEM;
        s->deferred = grown;
        s->cap_deferred = cap;
    }
    s->deferred[s->n_deferred++] = line;
    return 0;
}

char *ust__store_remote_next_deferred(ust_store *s)
{
    if (s->n_deferred == 0)
        return NULL;
    char *line = s->deferred[0];
    memmove(s->deferred, s->deferred + 1, (s->n_deferred - 1) * sizeof(*s->deferred));
    s->n_deferred--;
    return line;
}

ust_store *ust__store_remote(FILE *in, FILE *out, int complete)
{
    ust_store *s = ust__store_new();
    if (s == NULL)
        return NULL;
    s->remote_in = in;
    s->remote_out = out;
    s->written = complete ? ust_calloc(BLOOM_BITS / 64, sizeof(uint64_t)) : NULL;
    s->remote_complete = s->written != NULL;
    return s;
}

/* One request to the parent and its reply (a JSON object), or NULL. */
static json_t *remote_call(ust_store *s, json_t *msg)
{
    char *line = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (line == NULL || fprintf(s->remote_out, "%s\n", line) < 0 ||
        fflush(s->remote_out)) {
        ust_free(line);
        return NULL;
    }
    ust_free(line);
    /* The host may have sent the next events already: they are kept for
     * later, and the reply is the first line that is not a "decide". */
    for (;;) {
        char *reply = NULL;
        size_t cap = 0;
        if (getline(&reply, &cap, s->remote_in) <= 0) {
            free(reply);
            return NULL;
        }
        json_error_t jerr;
        json_t *j = ust_json_loads(reply, JSON_ALLOW_NUL, &jerr);
        const char *type = json_string_value(json_object_get(j, "type"));
        if (type != NULL && strcmp(type, "decide") == 0) {
            json_decref(j);
            if (defer_line(s, reply) != 0) {
                free(reply);
                return NULL;
            }
            continue;
        }
        free(reply);
        return j;
    }
}

/* The parent's value of store key k: 0 and *value (ust_malloc'd, NULL when
 * absent), or UST_EIO. */
int ust__store_remote_get(ust_store *s, const char *k, char **value)
{
    *value = NULL;
    json_t *r =
        remote_call(s, json_pack("{s:s,s:s}", "type", "get", "key", key_name(k)));
    if (r == NULL)
        return UST_EIO;
    const char *v = json_string_value(json_object_get(r, "value"));
    int rc = 0;
    if (v != NULL && (*value = ust_strdup(v)) == NULL)
        rc = UST_ENOMEM;
    json_decref(r);
    return rc;
}

/* Keeps a write of the call for the decision message: [key, value] or
 * [key, null] for a delete. */
int ust__store_remote_keep_write(ust_store *s, const staged *st)
{
    ust_jsonw *w = &s->remote_writes;
    if (w->len == 0)
        ust_jsonw_array(w);
    ust_jsonw_array(w);
    ust_jsonw_string(w, key_name(st->key));
    ust_jsonw_string(w, st->value);
    ust_jsonw_end_array(w);
    return w->error == 0 ? 0 : w->error == UST_ENOMEM ? UST_ENOMEM : UST_EINVAL;
}

const char *ust__store_remote_writes(ust_store *s)
{
    if (s->remote_writes.len == 0)
        return NULL;
    ust_jsonw_end_array(&s->remote_writes);
    return s->remote_writes.buf;
}
