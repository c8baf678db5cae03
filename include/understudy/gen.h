/* `understudy gen`: synthetic traffic from a seed, with a truth file. */
#ifndef UNDERSTUDY_GEN_H
#define UNDERSTUDY_GEN_H

#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/progress.h>

/* The kinds of cases, in this order: single deliveries, identical retries,
 * late redeliveries with a new id, out-of-order pairs, semantic duplicates,
 * API requests with keys, API retries after completion, concurrent repeats,
 * invalid signatures. */
#define UST_GEN_KINDS 9
extern const char *const ust_gen_kind_names[UST_GEN_KINDS];

typedef struct ust_gen_opts {
    const ust_config *cfg; /* a stripe route with its secret loaded, and an api route */
    uint64_t seed;
    int64_t events;
    int64_t start_us, span_us;
    int mix[UST_GEN_KINDS]; /* weights */
    FILE *out;              /* interchange JSONL, in time order */
    FILE *truth; /* {"seq", "class", "fields"} per expected divergence, or NULL */
    ust_progress progress; /* events written, of o->events */
} ust_gen_opts;

void ust_gen_default_mix(int mix[UST_GEN_KINDS]);
/* "retry=10,semantic=5": sets the named weights. UST_EINVAL with *err. */
int ust_gen_parse_mix(const char *text, int mix[UST_GEN_KINDS], char **err);

/* Writes exactly o->events events. Memory holds only the events planned for
 * later (retries days ahead), not the whole output. */
int ust_gen(const ust_gen_opts *o, int64_t *written, char **err);

#endif
