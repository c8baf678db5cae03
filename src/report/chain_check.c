/* Whether the events a run read are the ones the log's hash chain vouches
 * for: the chain walked from the log's first row to the run's cursor. Over
 * a long run that is as long a read as the rest of the report, of another
 * file, so it runs on a thread of its own meanwhile. */
#include "report/model.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/log.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ust__report_chain {
    char *log_path, *why_none; /* one of the two */
    int64_t cursor;
    char anchor[UST_SHA256_HEX_LEN + 1]; /* "" when the run recorded none there */
    pthread_t thread;
    int started;
    json_t *result;
};

static json_t *not_verified(const char *reason)
{
    return json_pack("{sbss}", "verified", 0, "reason", reason ? reason : "unknown");
}

static json_t *check(const ust__report_chain *c)
{
    if (c->log_path == NULL)
        return not_verified(c->why_none);
    if (c->cursor <= 0)
        return not_verified("the run decided no event");
    ust_log *log = NULL;
    char *err = NULL;
    json_t *out;
    ust_log_verify_result res;
    memset(&res, 0, sizeof(res));
    int rc = ust_log_open(c->log_path, UST_LOG_READONLY, &log, &err);
    if (rc == 0)
        rc = ust_log_verify_through(log, c->cursor, c->anchor[0] ? c->anchor : NULL,
                                    &res, &err);
    if (rc == 0) {
        out = json_pack("{sbsIss}", "verified", 1, "through_seq", (json_int_t)c->cursor,
                        "sha256", res.head_hash);
    } else if (rc == UST_ETAMPER) {
        char *why = ust_sprintf("seq %lld: %s", (long long)res.bad_seq, res.reason);
        out = not_verified(why);
        ust_free(why);
    } else {
        out = not_verified(err);
    }
    json_decref(res.streams); /* a PostgreSQL log's stream heads: not reported */
    ust_free(err);
    ust_log_close(log);
    return out;
}

static void *check_thread(void *arg)
{
    ust__report_chain *c = arg;
    c->result = check(c);
    return NULL;
}

int ust__report_chain_start(const char *log_path, int64_t cursor, const json_t *meta,
                            ust__report_chain **out)
{
    ust__report_chain *c = ust_calloc(1, sizeof(*c));
    if (c == NULL)
        return UST_ENOMEM;
    c->cursor = cursor;
    c->log_path = log_path ? ust_strdup(log_path) : NULL;
    c->why_none = log_path ? NULL : ust_strdup("the run names no event log");
    const char *seq = json_string_value(json_object_get(meta, "log_head_seq"));
    const char *hex = json_string_value(json_object_get(meta, "log_head_sha256"));
    if (seq && hex && strtoll(seq, NULL, 10) == cursor &&
        strlen(hex) == UST_SHA256_HEX_LEN)
        memcpy(c->anchor, hex, sizeof(c->anchor));
    if (c->log_path == NULL && c->why_none == NULL) {
        ust_free(c);
        return UST_ENOMEM;
    }
    /* Without a thread, the check runs when it is waited for. */
    c->started = pthread_create(&c->thread, NULL, check_thread, c) == 0;
    *out = c;
    return 0;
}

json_t *ust__report_chain_finish(ust__report_chain *c)
{
    if (c == NULL)
        return NULL;
    if (c->started)
        pthread_join(c->thread, NULL);
    else
        c->result = check(c);
    json_t *out = c->result;
    ust_free(c->log_path);
    ust_free(c->why_none);
    ust_free(c);
    return out;
}
