/* Partitions of the log for runners side by side (replay --partition K/N):
 * each decides the events whose key hashes to its number. The hash is part
 * of a run's meaning (a run records "K/N" and is resumed only as that), so
 * it is fixed: SHA-256, not a hash of this build's choosing. */
#include "runner/partition.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>
#include <understudy/hash.h>
#include <understudy/runner.h>

#include <stdio.h>
#include <string.h>

/* A decimal number of at most 9 digits ending at *end (no sign, no space):
 * 0 with *v, -1 otherwise. */
static int decimal(const char *s, const char *end, uint32_t *v)
{
    if (s == end || end - s > 9)
        return -1;
    uint32_t n = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        n = n * 10 + (uint32_t)(*s - '0');
    }
    *v = n;
    return 0;
}

int ust_partition_parse(const char *text, ust_partition *out, char **err)
{
    const char *slash = strchr(text, '/');
    uint32_t k = 0, n = 0;
    if (slash == NULL || decimal(text, slash, &k) != 0 ||
        decimal(slash + 1, slash + strlen(slash), &n) != 0)
        return ust_errf(err, UST_EINVAL,
                        "--partition %s: expected K/N, such as 0/2 (the first of two "
                        "partitions)",
                        text);
    if (n == 0 || n > UST_PARTITION_MAX)
        return ust_errf(err, UST_EINVAL,
                        "--partition %s: N is the number of partitions, from 1 to %d",
                        text, UST_PARTITION_MAX);
    if (k >= n)
        return ust_errf(err, UST_EINVAL,
                        "--partition %s: K counts from 0, so it is below N: 0/%u to "
                        "%u/%u",
                        text, n, n - 1, n);
    out->k = k;
    out->n = n;
    return 0;
}

void ust_partition_format(const ust_partition *p, char buf[32])
{
    (void)snprintf(buf, 32, "%u/%u", p->k, p->n);
}

uint32_t ust_partition_of(const char *key, uint32_t n)
{
    if (key == NULL || n <= 1)
        return 0;
    return (uint32_t)(ust_sha256_u64(key, strlen(key)) % n);
}

int ust_partition_holds(const ust_partition *p, const ust_config *cfg,
                        const ust_event *ev)
{
    return p->n == 0 ||
           ust_partition_of(ust_event_partition_key(cfg, ev), p->n) == p->k;
}

/* How a message names the share text stands for ("K/N", or "" for the
 * whole log). */
static void describe(const char *text, char *out, size_t cap)
{
    if (*text == '\0')
        (void)snprintf(out, cap, "the whole log");
    else
        (void)snprintf(out, cap, "partition %s", text);
}

int ust__partition_check_run(ust__run_writer *run, const ust_partition *p,
                             const ust_config *cfg, int64_t cursor, char **err)
{
    char want[32] = "";
    if (p->n > 0)
        ust_partition_format(p, want);
    char *stored = NULL;
    int rc = ust__rundb_meta_get(run->db, "partition", &stored);
    if (rc < 0)
        return ust_errf(err, rc, "%s: cannot read run metadata", run->path);
    const char *had = rc == 1 ? stored : cursor > 0 ? "" : want;
    if (strcmp(had, want) != 0) {
        char was[64], asked[64];
        describe(had, was, sizeof(was));
        describe(want, asked, sizeof(asked));
        rc = ust_errf(err, UST_EINVAL,
                      "%s: this run decided %s%s, not %s%s: use a new --run database "
                      "(or pass %s%s)",
                      run->path, was, *had ? " of the log" : "", asked,
                      *want ? " of it" : "", *had ? "--partition " : "no --partition",
                      had);
        ust_free(stored);
        return rc;
    }
    int known = stored != NULL;
    ust_free(stored);
    if (known || *want == '\0')
        return 0;
    /* The key beside it, for the report (the config's hash, which the run
     * also checks, covers it already). */
    json_t *by = json_array();
    for (size_t i = 0; i < cfg->n_partition_by; i++)
        json_array_append_new(by, json_string(cfg->partition_by[i]));
    char *by_text = json_dumps(by, JSON_COMPACT);
    json_decref(by);
    rc = by_text == NULL ? UST_ENOMEM
                         : ust__run_writer_meta(run, "partition", want, err);
    if (rc == 0)
        rc = ust__run_writer_meta(run, "partition_by", by_text, err);
    ust_free(by_text);
    return rc;
}
