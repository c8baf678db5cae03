/* Scenarios: scripted traffic that reproduces each kind of duplicate, with
 * the outcome it must produce; rendering them to the interchange format,
 * checking a run against them, and driving them through a live server. */
#ifndef UNDERSTUDY_DRIVE_H
#define UNDERSTUDY_DRIVE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <understudy/config.h>
#include <understudy/request.h>

typedef enum ust_sign_mode {
    UST_SIGN_VALID = 0, /* signed with the route's scheme and secret */
    UST_SIGN_INVALID,   /* signed with a wrong secret */
    UST_SIGN_NONE,      /* no signature header */
    UST_SIGN_EXPIRED,   /* signed an hour before it is sent */
    UST_SIGN_ROTATED    /* a stale signature first, then the valid one */
} ust_sign_mode;

typedef struct ust_step {
    double at_s; /* offset from the scenario's start, seconds */
    const ust_route *route;
    char *body;      /* raw body bytes (NUL-terminated; may hold any text) */
    json_t *headers; /* object of extra headers, or NULL */
    ust_sign_mode sign;
    char *webhook_id;     /* standard-webhooks message id */
    int copies;           /* a parallel burst: this many at once (1 = one) */
    json_t *expect;       /* {"legacy": v, "candidate": v}: v a verdict, "not_fed",
                           * or an array with one per copy */
    int timing_sensitive; /* live, the outcome depends on timing */
} ust_step;

typedef struct ust_scenario {
    char *file, *name, *shows;
    ust_step *steps;
    size_t n_steps;
    json_t *divergences; /* [{"step": i, "copy": k, "class": ..., "fields": [...]}] */
} ust_scenario;

/* Loads and validates a scenario file against cfg's routes; every error names
 * the file and the key path. */
int ust_scenario_load(const char *path, const ust_config *cfg, ust_scenario **out,
                      char **err);
void ust_scenario_free(ust_scenario *s);

/* The requests of a scenario started at start_us, in order (copies in order),
 * signed for their times with the secrets of their routes (loaded with the
 * config's). *reqs is ust_malloc'd;
 * clear each and free the array. */
int ust_scenario_render(const ust_scenario *s, int64_t start_us, ust_request **reqs,
                        size_t *n, char **err);

/* One copy of a step as a request arriving at at_us, signed for that time. */
int ust_step_render(const ust_step *st, int64_t at_us, ust_request *r, char **err);

/* Spacing between scenarios rendered or checked together, so that no window
 * or TTL of one reaches into the next. */
#define UST_SCENARIO_SPACING_US (30LL * 86400 * 1000000)

/* Compares a run database with the scenarios, rendered in this order into a
 * fresh log (seq 1 is the first step of the first scenario). Every mismatch
 * is printed to out. 0 all match; 1 mismatches; negative on errors. With
 * live != 0, the copies of a burst are compared as a set and steps marked
 * timing_sensitive only have to be decided (the documented weaker check). */
int ust_scenario_check(ust_scenario *const *scenarios, size_t n, const char *run_path,
                       int live, FILE *out, char **err);

typedef struct ust_drive_summary {
    long sent, s2xx, s4xx, s5xx, errors;
    double latency_p50_ms, latency_p99_ms, latency_max_ms;
} ust_drive_summary;

/* Sends the scenarios over HTTP to url ("http://HOST:PORT"), offsets divided
 * by speed; the copies of a burst go at once, each on its own connection.
 * One line per request to out, then the summary. */
int ust_scenario_drive(ust_scenario *const *scenarios, size_t n, const char *url,
                       double speed, FILE *out, ust_drive_summary *sum, char **err);

#endif
