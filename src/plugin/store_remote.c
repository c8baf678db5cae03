/* The state store in a plugin's child process: the cache of store.c, with
 * misses asked of the parent in binary frames (frame.h) and the call's writes
 * sent with its decision. */
#include "plugin/frame.h"
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
    /* Pipelined: decide frames that arrived while waiting for a reply (the
     * next events), kept for the shim's loop. */
    struct deferred {
        unsigned char *payload;
        size_t n;
    } * deferred;
    size_t head_deferred, n_deferred, cap_deferred;
    ust__frame_out request; /* a get, to the parent */
    ust__frame_out writes;  /* the call's writes, sent with its decision */
    uint32_t n_writes;
} remote;

static int defer_frame(remote *s, unsigned char *payload, size_t n)
{
    if (s->head_deferred == s->n_deferred)
        s->head_deferred = s->n_deferred = 0;
    if (s->n_deferred == s->cap_deferred) {
        size_t cap = s->cap_deferred ? s->cap_deferred * 2 : 16;
        struct deferred *grown = ust_realloc(s->deferred, cap * sizeof(*grown));
        if (grown == NULL)
            return UST_ENOMEM;
        s->deferred = grown;
        s->cap_deferred = cap;
    }
    s->deferred[s->n_deferred++] = (struct deferred){payload, n};
    return 0;
}

unsigned char *ust__store_remote_next_deferred(ust_store *store, size_t *n)
{
    remote *s = store->backing;
    if (s->head_deferred == s->n_deferred)
        return NULL;
    struct deferred d = s->deferred[s->head_deferred++];
    *n = d.n;
    return d.payload;
}

/* The get of key to the parent and its reply's payload (free()), or NULL. */
static unsigned char *remote_call(remote *s, const char *key, size_t *n)
{
    ust__frame_begin(&s->request, UST__FRAME_GET);
    ust__frame_string(&s->request, key);
    ust__frame_end(&s->request);
    if (ust__frame_fwrite(s->out, &s->request) != 0)
        return NULL;
    /* The host may have sent the next events already: they are kept for
     * later, and the reply is the first frame that is not a decide. */
    for (;;) {
        unsigned char *reply = ust__frame_fread(s->in, n);
        if (reply == NULL || reply[0] != UST__FRAME_DECIDE || *n == 0)
            return reply;
        if (defer_frame(s, reply, *n) != 0) {
            free(reply);
            return NULL;
        }
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
    size_t n = 0;
    unsigned char *r = remote_call(s, key_name(k), &n);
    if (r == NULL)
        return UST_EIO;
    ust__frame_in in = {r, n, 0, NULL};
    int rc = ust__frame_read_u8(&in) == UST__FRAME_VALUE ? 0 : UST_EIO;
    const char *v = ust__frame_read_string(&in);
    if (in.bad != NULL)
        rc = UST_EIO;
    else if (rc == 0 && v != NULL &&
             (*value = ust__arena_memdup(&store->cache_mem, v, strlen(v))) == NULL)
        rc = UST_ENOMEM;
    free(r);
    return rc;
}

/* The call's writes, kept for its decision frame (key, then value or null
 * for a delete): the parent keeps or drops them with the decision. */
static int remote_end_call(ust_store *store, int keep)
{
    remote *s = store->backing;
    ust__frame_out *w = &s->writes;
    w->len = w->start = 0;
    w->error = 0;
    s->n_writes = 0;
    for (size_t i = 0; keep && i < store->n_stage; i++) {
        const staged *st = &store->stage[i];
        ust__frame_string(w, key_name(st->key));
        ust__frame_string(w, st->value);
        s->n_writes++;
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
    for (size_t i = s->head_deferred; i < s->n_deferred; i++)
        free(s->deferred[i].payload);
    ust_free(s->deferred);
    ust__frame_out_free(&s->request);
    ust__frame_out_free(&s->writes);
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

const unsigned char *ust__store_remote_writes(ust_store *store, size_t *len,
                                              uint32_t *n)
{
    remote *s = store->backing;
    *len = s->writes.len;
    *n = s->n_writes;
    return s->writes.buf;
}
