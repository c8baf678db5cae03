/* Partitions of the log for runners side by side (replay --partition K/N):
 * each decides the events whose key hashes to its number. The hash is part
 * of a run's meaning (a run records "K/N" and is resumed only as that), so
 * it is fixed: SHA-256, not a hash of this build's choosing. */
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
