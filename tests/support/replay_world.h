/* A small world for replay tests: a log in a temporary directory, signed
 * requests built at chosen times, a replay through the real plugins, and
 * queries on the run database. */
#ifndef UST_TEST_REPLAY_WORLD_H
#define UST_TEST_REPLAY_WORLD_H

#include "support.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/gen.h>
#include <understudy/log.h>
#include <understudy/runner.h>
#include <understudy/sig.h>

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORLD_T0 1795946400LL /* 2026-11-29T10:00:00Z */
#define WORLD_STRIPE_SECRET "whsec_test_stripe"
#define WORLD_STANDARD_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

typedef struct world {
    char dir[PATH_MAX], log_path[PATH_MAX], run_path[PATH_MAX];
    ust_config *cfg;
    ust_request reqs[256];
    size_t n;
    const void *row; /* a table-driven test's row (cmocka's prestate), or NULL */
} world;

world *world_new(void);

void world_free(world *w);

/* A fresh world before each test and its end after it, for cmocka; the
 * prestate a test was registered with becomes the world's row. */
int world_setup(void **state);

int world_teardown(void **state);

ust_request *world_request(world *w, double t_s, const char *target, const char *body);

/* A Stripe event at t_s seconds after T0, signed at sign_s (usually t_s). */
void world_stripe_signed(world *w, double t_s, double sign_s, const char *evt,
                         const char *type, const char *pi, const char *order,
                         long amount);

void world_stripe(world *w, double t_s, const char *evt, const char *type,
                  const char *pi, const char *order, long amount);

void world_standard(world *w, double t_s, const char *msg, const char *payment,
                    const char *status, const char *order, long amount);

/* An API request; key is the raw header value (NULL: no header). */
void world_api(world *w, double t_s, const char *key, const char *tenant,
               const char *order, long amount);

/* The design's scenario 5 on pi_1 (order o1, 4200): paid at 0 s, refunded
 * at 600 s, paid again with a new event id at 3600 s (evt_1 to evt_3). */
void world_scenario_5(world *w);

/* A double click: pi_3 and pi_4 paid for order o3 (1500) 3 s apart, at
 * 7200 s (evt_9 and evt_10). */
void world_double_click(world *w);

/* Appends every request built so far to the log (once). */
void world_record(world *w);

/* A fresh log of every scenario (scenarios/[0-9]*.json, in name order),
 * rendered one after the other UST_SCENARIO_SPACING_US apart from T0; the
 * world's own requests are not used. */
void world_record_scenarios(world *w);

/* Options of a replay of w's log into its run database, committing every 7
 * events (so runs cross many commits); lp and cp must outlive it. */
ust_replay_opts world_opts(world *w, const char *lp, const char *cp, FILE *divergences);

/* Runs the replay o describes; a refusal fails the test with its message. */
ust_replay_stats world_run(const ust_replay_opts *o);

/* A plugin's path: the reference ones by name ("legacy", "candidate"), the
 * others from tests/plugins (e.g. "misbehaving_decide_error", a candidate
 * that errs on every odd seq). */
void world_plugin_path(const char *name, char out[PATH_MAX]);

/* Replays into run_path with the plugins named (as world_plugin_path finds
 * them); divergence lines into *lines (malloc'd) when lines is not NULL. */
ust_replay_stats world_replay(world *w, const char *legacy, const char *candidate,
                              char **lines);

/* w's config redacts the n rules, as if its file had listed them under
 * "redact" (the run made with it carries them). */
void world_set_redact(world *w, const char *const *rules, size_t n);

/* Runs the replay o describes, its divergence lines into *lines (malloc'd;
 * NULL: dropped). 0, or the refusal's code with *err. */
int world_replay_lines(const ust_replay_opts *o, char **lines, ust_replay_stats *st,
                       char **err);

/* One text value from the run database, "" when NULL; caller frees. */
char *world_query_at(const char *path, const char *sql);

char *world_query(world *w, const char *sql);

/* The last event the run at path has decided (0: none yet). */
int world_cursor_at(const char *path);

/* A log of n generated events (seed, 2 days from 2026-11-23) at log_path,
 * derived under cfg. */
void world_gen_log(world *w, const char *log_path, const ust_config *cfg, uint64_t seed,
                   int64_t n);

/* Kills a replay of o (in a child, over and over until killed, its
 * divergence lines into a pipe) at a point decided by how: 0 = while it is
 * blocked writing divergence lines into the full pipe, after a commit and
 * with most of the log still to go; 1 and up = after a short while, which
 * may land inside a transaction. */
void world_kill_a_replay(const ust_replay_opts *opts, int how);

/* Runs sql on the run database. */
void world_exec(world *w, const char *sql);

/* "applied,duplicate,..." of one side over every event, in seq order. */
char *world_verdicts(world *w, const char *side);

/* "seq|class|fields|follow_on" of every divergence, ';'-separated. */
char *world_divergences(world *w);

/* w's divergences (as world_divergences gives them) are want and the
 * candidate erred nowhere: another way of running it decided alike. */
void world_expect_same_run_without_errors(world *w, const char *want);

#endif
