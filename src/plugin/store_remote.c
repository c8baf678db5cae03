/* The state store in a plugin's child process: the cache of store.c, with
 * misses asked of the parent over the protocol's pipes and the call's writes
 * sent with its decision. */
#include "plugin/store_internal.h"
#include "plugin/store_remote.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdlib.h>
#include <string.h>

/* The parent's store, reached over the protocol's pipes. The namespace is
 * this plugin's alone, so what it read or wrote stays valid in the cache: a
 * key costs one round trip the first time, and writes go to the parent with
 * the decision. */
typedef struct remote {
    FILE *in, *out; /* replies from the parent, requests to it */
    /* When the namespace was empty as the child started: every key it holds
     * is one it wrote, so a key neither cached nor in `written` is absent
     * without asking. */
    int complete;
    uint64_t *written;
    /* Pipelined: lines that arrived while waiting for a reply (the next
     * events), kept for the shim's loop. */
    char **deferred;
    size_t n_deferred, cap_deferred;
    ust_jsonw writes; /* the call's writes, sent with its decision */
} remote;

static int defer_line(remote *s, char *line)
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

char *ust__store_remote_next_deferred(ust_store *store)
{
    remote *s = store->backing;
    if (s->n_deferred == 0)
        return NULL;
    char *line = s->deferred[0];
    memmove(s->deferred, s->deferred + 1, (s->n_deferred - 1) * sizeof(*s->deferred));
    s->n_deferred--;
    return line;
}

/* One request to the parent and its reply (a JSON object), or NULL. */
static json_t *remote_call(remote *s, json_t *msg)
{
    char *line = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (line == NULL || fprintf(s->out, "%s\n", line) < 0 || fflush(s->out)) {
        ust_free(line);
        return NULL;
    }
    ust_free(line);
    /* The host may have sent the next events already: they are kept for
     * later, and the reply is the first line that is not a "decide". */
    for (;;) {
        char *reply = NULL;
        size_t cap = 0;
        if (getline(&reply, &cap, s->in) <= 0) {
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

/* A key neither cached nor written is asked of the parent, unless the
 * namespace started empty and this child never wrote it. */
static int remote_miss(ust_store *store, const char *k, size_t klen, uint64_t h,
                       char **value)
{
    remote *s = store->backing;
    (void)klen;
    *value = NULL;
    if (s->complete && !bloom_may_have(s->written, h))
        return 0;
    json_t *r =
        remote_call(s, json_pack("{s:s,s:s}", "type", "get", "key", key_name(k)));
    if (r == NULL)
        return UST_EIO;
    const char *v = json_string_value(json_object_get(r, "value"));
    int rc = 0;
    if (v != NULL &&
        (*value = ust__arena_memdup(&store->cache_mem, v, strlen(v))) == NULL)
        rc = UST_ENOMEM;
    json_decref(r);
    return rc;
}

/* The call's writes, kept for its decision message ([key, value] or
 * [key, null] for a delete, one line rather than one per write): the parent
 * keeps or drops them with the decision. */
static int remote_end_call(ust_store *store, int keep)
{
    remote *s = store->backing;
    ust_jsonw *w = &s->writes;
    ust_jsonw_reset(w);
    for (size_t i = 0; keep && i < store->n_stage; i++) {
        const staged *st = &store->stage[i];
        if (w->len == 0)
            ust_jsonw_array(w);
        ust_jsonw_array(w);
        ust_jsonw_string(w, key_name(st->key));
        ust_jsonw_string(w, st->value);
        ust_jsonw_end_array(w);
        if (w->error != 0)
            return UST_ENOMEM;
        if (s->written != NULL)
            bloom_add(s->written, ust_fnv1a64(st->key, st->klen));
    }
    return 0;
}

/* The parent has every write: nothing to flush. */
static void remote_applied(ust_store *store, entry *e)
{
    (void)store, (void)e;
}

static void remote_after_call(ust_store *store)
{
    if (ust__store_cache_full(store))
        ust__store_clear_cache(store);
}

static void remote_close(ust_store *store)
{
    remote *s = store->backing;
    if (s == NULL)
        return;
    ust_free(s->written);
    for (size_t i = 0; i < s->n_deferred; i++)
        free(s->deferred[i]);
    ust_free(s->deferred);
    ust_jsonw_free(&s->writes);
    ust_free(s);
}

static const ust__store_ops remote_ops = UST__STORE_OPS(remote);

ust_store *ust__store_remote(FILE *in, FILE *out, int complete)
{
    remote *s = ust_calloc(1, sizeof(*s));
    ust_store *store = s ? ust__store_new(&remote_ops, s) : NULL;
    if (store == NULL) {
        ust_free(s);
        return NULL;
    }
    s->in = in;
    s->out = out;
    s->written = complete ? ust_calloc(BLOOM_BITS / 64, sizeof(uint64_t)) : NULL;
    s->complete = s->written != NULL;
    return store;
}

const char *ust__store_remote_writes(ust_store *store)
{
    remote *s = store->backing;
    if (s->writes.len == 0)
        return NULL;
    ust_jsonw_end_array(&s->writes);
    return s->writes.buf;
}
