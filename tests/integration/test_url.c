/* The url plugin kind: a real service on 127.0.0.1 (tests/http_service.py)
 * as the candidate (and the legacy), replayed from a real log into a real
 * run database; the journal's at-most-once through a replay SIGKILLed for
 * real and resumed. */
#include "example_service.h"
#include "http_service.h"
#include "replay_world.h"

#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/http_client.h>

#include <jansson.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* The service's records (GET /__log); the caller decrefs. */
static json_t *service_log(const ust_test_service *svc)
{
    ust_http_client *c = NULL;
    char *err = NULL;
    assert_int_equal(ust_http_client_new(&c, &err), 0);
    char url[128];
    snprintf(url, sizeof(url), "%s/__log", svc->base);
    ust_http_call call = {"GET", url, NULL, 0, NULL, 0, 30000};
    ust_http_result r;
    assert_int_equal(ust_http_client_send(c, &call, &r), 0);
    assert_int_equal(r.failure, 0);
    json_t *log = ust_json_loadb((const char *)r.body, r.body_len, 0, NULL);
    assert_non_null(log);
    ust_http_result_clear(&r);
    ust_http_client_free(c);
    return log;
}

static void set_service(ust_plugin_config *pc, const char *base, const char *prefix)
{
    ust_free(pc->url);
    pc->url = ust_sprintf("%s%s", base, prefix);
    /* A plugin is one kind: a service has no library beside its url. */
    ust_free(pc->path);
    pc->path = NULL;
    pc->timeout_ms = 20000;
}

/* Stripe events of n_pi payments, each with per events, interleaved, the
 * kth of a payment of type types[k % 3]. */
static void stripe_events_of(world *w, int n_pi, int per, const char *const types[3])
{
    for (int k = 0; k < per; k++)
        for (int p = 0; p < n_pi; p++) {
            char evt[32], pi[32], order[32];
            snprintf(evt, sizeof(evt), "evt_%d_%d", p, k);
            snprintf(pi, sizeof(pi), "pi_%d", p);
            snprintf(order, sizeof(order), "ord_%d", p);
            world_stripe(w, (double)(k * n_pi + p), evt, types[k % 3], pi, order, 1000);
        }
    world_record(w);
}

static void stripe_events(world *w, int n_pi, int per)
{
    static const char *const types[] = {"payment_intent.created",
                                        "payment_intent.processing",
                                        "payment_intent.succeeded"};
    stripe_events_of(w, n_pi, per, types);
}

/* The test service started with args (NULL: none) as the candidate at
 * path, over a log of stripe_events(w, n_pi, per). */
static void candidate_service(world *w, ust_test_service *svc, const char *const *args,
                              int n_pi, int per, const char *path)
{
    ust_test_service_start(svc, args);
    stripe_events(w, n_pi, per);
    set_service(&w->cfg->candidate, svc->base, path);
}

/* An API request (world_api, no tenant), to be changed by the caller. */
static ust_request *world_api_last(world *w, double t_s, const char *key,
                                   const char *order)
{
    world_api(w, t_s, key, NULL, order, 100);
    return &w->reqs[w->n - 1];
}

static ust_replay_stats replay_legacy_so(world *w)
{
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, NULL, NULL);
    return world_run(&o);
}

static long count(world *w, const char *sql)
{
    char *v = world_query(w, sql);
    long n = atol(v);
    ust_free(v);
    return n;
}

/* How many times each seq 1..n was started by the service, from the
 * "started" list of its log, into received (zeroed by the caller). */
static void count_started(json_t *log, int *received, int n)
{
    size_t i;
    json_t *seq;
    json_array_foreach(json_object_get(log, "started"), i, seq)
    {
        int s = atoi(json_string_value(seq));
        assert_true(s >= 1 && s <= n);
        received[s]++;
    }
}

/* Seq s's candidate decision as "verdict:error" (caller frees). */
static char *candidate_outcome(world *w, int s)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT c_verdict || ':' || ifnull(c_error, '') FROM decisions WHERE "
             "seq = %d",
             s);
    return world_query(w, sql);
}

/* candidate_outcome, after checking seq s was sent at most once: what both
 * resend tests ask of a seq. */
static char *sent_once_verdict(world *w, const int *received, int s)
{
    if (received[s] > 1)
        fail_msg("seq %d was sent %d times", s, received[s]);
    return candidate_outcome(w, s);
}

/* Replays w's log with the candidate at svc (under /svc), fed events fed;
 * the requests the service received (its log; svc stopped, caller decrefs). */
static json_t *replay_into(world *w, ust_test_service *svc, int fed)
{
    set_service(&w->cfg->candidate, svc->base, "/svc");
    ust_replay_stats st = replay_legacy_so(w);
    assert_int_equal(st.fed, fed);
    json_t *log = service_log(svc);
    ust_test_service_stop(svc);
    return log;
}

static const char *header(json_t *rec, const char *name)
{
    size_t i;
    json_t *pair;
    json_array_foreach(json_object_get(rec, "headers"), i, pair)
    {
        if (strcasecmp(json_string_value(json_array_get(pair, 0)), name) == 0)
            return json_string_value(json_array_get(pair, 1));
    }
    return NULL;
}

static void test_each_event_goes_to_the_service_as_recorded(void **state)
{
    world *w = *state;
    ust_test_service svc;
    candidate_service(w, &svc, NULL, 2, 3, "/candidate");
    /* Both sides services: the legacy too is decided a batch at a time. */
    set_service(&w->cfg->legacy, svc.base, "/legacy/");
    ust_replay_opts o = world_opts(w, NULL, NULL, NULL);
    ust_replay_stats st = world_run(&o);
    assert_int_equal(st.fed, 6);
    json_t *log = service_log(&svc);
    json_t *recs = json_object_get(log, "records");
    assert_int_equal(json_array_size(recs), 12);
    char host[64];
    snprintf(host, sizeof(host), "127.0.0.1:%d", svc.port);
    size_t i;
    json_t *rec;
    int seen[2][7] = {{0}};
    json_array_foreach(recs, i, rec)
    {
        const char *target = json_string_value(json_object_get(rec, "target"));
        int side = strncmp(target, "/legacy/", 8) == 0 ? 0 : 1;
        assert_string_equal(target, side == 0 ? "/legacy/webhooks/stripe"
                                              : "/candidate/webhooks/stripe");
        int seq = atoi(header(rec, "Understudy-Seq"));
        assert_true(seq >= 1 && seq <= 6);
        seen[side][seq]++;
        const ust_request *req = &w->reqs[seq - 1];
        assert_string_equal(json_string_value(json_object_get(rec, "method")), "POST");
        assert_string_equal(header(rec, "Host"), host);
        char at[32];
        ust_time_format(req->received_at_us, at);
        assert_string_equal(header(rec, "Understudy-Received-At"), at);
        assert_string_equal(header(rec, "Stripe-Signature"),
                            ust_request_header(req, "Stripe-Signature"));
        assert_string_equal(header(rec, "Content-Type"), "application/json");
        /* The body byte for byte. */
        unsigned char *body = NULL;
        size_t len = 0;
        const char *b64 = json_string_value(json_object_get(rec, "body"));
        assert_int_equal(ust_base64_decode(b64, strlen(b64), &body, &len), 0);
        assert_int_equal(len, req->body_len);
        assert_memory_equal(body, req->body, len);
        ust_free(body);
    }
    for (int s = 1; s <= 6; s++) {
        assert_int_equal(seen[0][s], 1);
        assert_int_equal(seen[1][s], 1);
    }
    json_decref(log);
    /* 200 without Understudy-* headers: applied, on both sides. */
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE l_verdict = "
                              "'applied' AND c_verdict = 'applied'"),
                     6);
    assert_int_equal(count(w, "SELECT count(*) FROM journal WHERE state = 'answered'"),
                     12);
    /* Its identity for the run: the hash of its url. */
    char want[UST_SHA256_HEX_LEN + 1];
    ust_sha256_hex(w->cfg->candidate.url, strlen(w->cfg->candidate.url), want);
    char *have =
        world_query(w, "SELECT value FROM meta WHERE key = 'candidate_sha256'");
    assert_string_equal(have, want);
    ust_free(have);
    ust_test_service_stop(&svc);
}

static char *candidate_verdicts(world *w, const char *const *args, const char *map)
{
    ust_test_service svc;
    candidate_service(w, &svc, args, 1, 3, "");
    json_error_t je;
    if (map != NULL)
        w->cfg->candidate.verdicts = json_loads(map, 0, &je);
    replay_legacy_so(w);
    ust_test_service_stop(&svc);
    return world_query(w, "SELECT group_concat(c_verdict, ',') FROM "
                          "(SELECT c_verdict FROM decisions ORDER BY seq)");
}

static void test_understudy_verdict_in_the_answer_decides(void **state)
{
    /* Understudy-Verdict wins over the status and the map. */
    const char *args[] = {"--verdict-header", "--fail", "2=status/404", NULL};
    char *v = candidate_verdicts(*state, args, "{\"404\": \"duplicate\"}");
    assert_string_equal(v, "rejected,rejected,rejected");
    ust_free(v);
}

static void test_the_verdicts_map_comes_before_the_defaults(void **state)
{
    const char *args[] = {"--fail", "2=status/404", "--fail", "3=status/404", NULL};
    char *v = candidate_verdicts(*state, args, "{\"404\": \"duplicate\"}");
    assert_string_equal(v, "applied,duplicate,duplicate");
    ust_free(v);
    world_free(*state);
    *state = world_new();
    v = candidate_verdicts(*state, args, NULL);
    assert_string_equal(v, "applied,invalid,invalid");
    ust_free(v);
}

static void test_a_verdicts_map_that_is_wrong_refuses_to_start(void **state)
{
    world *w = *state;
    stripe_events(w, 1, 1);
    set_service(&w->cfg->candidate, "http://127.0.0.1:9", "");
    json_error_t je;
    w->cfg->candidate.verdicts = json_loads("{\"404\": \"fine\"}", 0, &je);
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, NULL, NULL);
    ust_replay_stats st;
    char *err = NULL;
    assert_int_not_equal(ust_replay(&o, &st, &err), 0);
    assert_non_null(strstr(err, "plugins.candidate.verdicts.404: not a verdict"));
    ust_free(err);
}

static void test_a_failing_service_gives_error_decisions_with_causes(void **state)
{
    world *w = *state;
    const char *args[] = {"--slow-ms", "5000",         "--fail", "2=slow",
                          "--fail",    "3=status/500", "--fail", "4=garbage",
                          "--fail",    "5=cut",        NULL};
    ust_test_service svc;
    candidate_service(w, &svc, args, 1, 6, "");
    w->cfg->candidate.timeout_ms = 500;
    ust_plugin_counters *counters = ust_plugin_counters_new(NULL, NULL);
    assert_non_null(counters);
    w->cfg->candidate.counters = counters;
    ust_replay_stats st = replay_legacy_so(w);
    w->cfg->candidate.counters = NULL;
    assert_int_equal(st.fed, 6);
    /* Counted as the candidate's faults, like the other kinds'. */
    ust_plugin_fault_stats after;
    ust_plugin_fault_stats_get(counters, &after);
    ust_plugin_counters_free(counters);
#define FAULTS(f) (after.errors[1][f])
    assert_int_equal(FAULTS(UST_FAULT_TIMEOUT), 1);
    assert_int_equal(FAULTS(UST_FAULT_EXIT), 2);
    assert_int_equal(FAULTS(UST_FAULT_BAD_DECISION), 1);
#undef FAULTS
    /* Every legacy decision made; the candidate's failures are errors. */
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE l_verdict IS NOT "
                              "NULL AND l_verdict != 'error'"),
                     6);
    static const struct {
        int seq;
        const char *verdict, *cause;
    } want[] = {{1, "applied", ""},
                {2, "error", "no answer within 500 ms"},
                {3, "error", "the service answered 500"},
                {4, "error", "not HTTP"},
                {5, "error", "closed mid-answer"},
                {6, "applied", ""}};
    for (size_t i = 0; i < UST_ARRAY_SIZE(want); i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "SELECT c_verdict FROM decisions WHERE seq = %d",
                 want[i].seq);
        char *v = world_query(w, sql);
        assert_string_equal(v, want[i].verdict);
        ust_free(v);
        snprintf(sql, sizeof(sql), "SELECT c_error FROM decisions WHERE seq = %d",
                 want[i].seq);
        v = world_query(w, sql);
        if (want[i].cause[0] == '\0')
            assert_string_equal(v, "");
        else if (strstr(v, want[i].cause) == NULL)
            fail_msg("seq %d: %s, not %s", want[i].seq, v, want[i].cause);
        ust_free(v);
    }
    ust_test_service_stop(&svc);
}

static void test_a_service_that_is_down_gives_error_decisions(void **state)
{
    world *w = *state;
    stripe_events(w, 2, 2);
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", ust_test_closed_port());
    set_service(&w->cfg->candidate, base, "/x");
    ust_replay_stats st = replay_legacy_so(w);
    assert_int_equal(st.fed, 4);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE l_verdict IS NOT "
                              "NULL AND l_verdict != 'error'"),
                     4);
    assert_int_equal(count(w,
                           "SELECT count(*) FROM decisions WHERE c_verdict = 'error' "
                           "AND c_error LIKE '%cannot connect%'"),
                     4);
}

/* http_proxy (and https_proxy, all_proxy) in the environment is not
 * followed: every event reaches the service, nothing the "proxy"; a
 * "proxy" the plugin's config names is used (the service stands in for
 * one: it records each request's absolute URL). */
static void test_the_environments_proxy_is_not_followed(void **state)
{
    world *w = *state;
    ust_test_service svc;
    candidate_service(w, &svc, NULL, 2, 2, "/direct");
    w->cfg->candidate.timeout_ms = 5000;
    int proxy = ust_test_env_proxy();
    ust_replay_stats st = replay_legacy_so(w);
    ust_test_env_proxy_clear();
    assert_int_equal(ust_test_listener_accepted(proxy), 0);
    assert_int_equal(st.fed, 4);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE c_verdict = "
                              "'applied'"),
                     4);
    json_t *log = service_log(&svc);
    assert_int_equal(json_array_size(json_object_get(log, "records")), 4);
    json_decref(log);
    close(proxy);
    ust_test_service_stop(&svc);
}

static void test_a_named_proxy_takes_every_event(void **state)
{
    world *w = *state;
    ust_test_service svc;
    candidate_service(w, &svc, NULL, 1, 2, "");
    set_service(&w->cfg->candidate, "http://example.invalid", "/p");
    w->cfg->candidate.proxy = ust_strdup(svc.base);
    ust_replay_stats st = replay_legacy_so(w);
    assert_int_equal(st.fed, 2);
    json_t *log = service_log(&svc);
    json_t *recs = json_object_get(log, "records");
    assert_int_equal(json_array_size(recs), 2);
    for (size_t i = 0; i < 2; i++) {
        const char *target =
            json_string_value(json_object_get(json_array_get(recs, i), "target"));
        assert_int_equal(strncmp(target, "http://example.invalid/p/", 25), 0);
    }
    json_decref(log);
    ust_test_service_stop(&svc);
}

static void test_max_in_flight_keeps_each_entitys_order(void **state)
{
    world *w = *state;
    const char *args[] = {"--slow-all", "--slow-ms", "150", NULL};
    ust_test_service svc;
    enum { PIS = 5, PER = 6 };
    candidate_service(w, &svc, args, PIS, PER, "");
    w->cfg->candidate.max_in_flight = 8;
    ust_replay_stats st = replay_legacy_so(w);
    assert_int_equal(st.fed, PIS * PER);
    json_t *log = service_log(&svc);
    long start[PIS * PER + 1] = {0}, end[PIS * PER + 1] = {0};
    size_t i;
    json_t *rec;
    json_array_foreach(json_object_get(log, "records"), i, rec)
    {
        int seq = atoi(json_string_value(json_object_get(rec, "seq")));
        assert_true(seq >= 1 && seq <= PIS * PER);
        assert_int_equal(start[seq], 0); /* once */
        start[seq] = (long)json_integer_value(json_object_get(rec, "start"));
        end[seq] = (long)json_integer_value(json_object_get(rec, "end"));
    }
    json_decref(log);
    /* seq s is payment (s-1) % PIS: each payment's events one after another. */
    int overlapped = 0;
    for (int s = 1; s <= PIS * PER; s++) {
        assert_true(start[s] > 0);
        if (s + PIS <= PIS * PER)
            assert_true(start[s + PIS] > end[s]);
        if (s > 1 && start[s] < end[s - 1])
            overlapped = 1;
    }
    /* Other payments' events did overlap (the service is slow, 8 at once). */
    assert_true(overlapped);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE c_verdict = "
                              "'applied'"),
                     PIS * PER);
    ust_test_service_stop(&svc);
}

/* A config file for the command line: the legacy .so, the candidate a
 * service, every path absolute. */
static void write_config(world *w, const char *path, const char *url, const char *reset)
{
    char src[PATH_MAX], lp[PATH_MAX];
    ust_test_source_path("tests/data/config.json", src);
    ust_test_plugin_path("legacy", lp);
    json_error_t je;
    json_t *c = json_load_file(src, 0, &je);
    assert_non_null(c);
    json_object_set_new(c, "log", json_string(w->log_path));
    json_object_set_new(c, "run", json_string(w->run_path));
    json_t *plugins = json_object_get(c, "plugins");
    json_object_set_new(json_object_get(plugins, "legacy"), "path", json_string(lp));
    json_t *cand = json_pack("{s:s, s:i}", "url", url, "timeout_ms", 30000);
    if (reset != NULL)
        json_object_set_new(cand, "reset", json_pack("{s:s}", "url", reset));
    json_object_set_new(plugins, "candidate", cand);
    assert_int_equal(json_dump_file(c, path, JSON_INDENT(2)), 0);
    json_decref(c);
}

static pid_t start_replay(world *w, const char *cfg)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char out[PATH_MAX];
        snprintf(out, sizeof(out), "%s/replay.out", w->dir);
        FILE *f = freopen(out, "a", stderr);
        (void)f;
        execl(getenv("UST_BIN"), "understudy", "replay", "--quiet", "--config", cfg,
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_a_replay_killed_and_resumed_sends_each_seq_once(void **state)
{
    world *w = *state;
    const char *args[] = {"--slow-all", "--slow-ms", "200", NULL};
    ust_test_service svc;
    ust_test_service_start(&svc, args);
    enum { N = 40 };
    stripe_events(w, 4, N / 4);
    char cfg[PATH_MAX], reset[128];
    snprintf(cfg, sizeof(cfg), "%s/cfg.json", w->dir);
    snprintf(reset, sizeof(reset), "%s/reset", svc.base);
    write_config(w, cfg, svc.base, reset);
    pid_t pid = start_replay(w, cfg);
    /* Kill it while the service holds a request (started, not answered):
     * that seq's intent is committed, its answer can never be. */
    for (int tries = 0;; tries++) {
        assert_true(tries < 6000);
        json_t *log = service_log(&svc);
        size_t started = json_array_size(json_object_get(log, "started"));
        size_t done = json_array_size(json_object_get(log, "records"));
        json_decref(log);
        if (started >= 5 && started > done)
            break;
        sleep_ms(10);
    }
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    /* Resumed to the end. */
    pid = start_replay(w, cfg);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* Let the held request finish, then count. */
    json_t *log = NULL;
    for (int tries = 0;; tries++) {
        assert_true(tries < 6000);
        log = service_log(&svc);
        if (json_array_size(json_object_get(log, "started")) ==
            json_array_size(json_object_get(log, "records")))
            break;
        json_decref(log);
        sleep_ms(10);
    }
    int received[N + 1] = {0};
    count_started(log, received, N);
    /* Reset at the fresh start, not on resume. */
    assert_int_equal(json_integer_value(json_object_get(log, "resets")), 1);
    json_decref(log);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions"), N);
    long unknown = 0;
    for (int s = 1; s <= N; s++) {
        char *v = sent_once_verdict(w, received, s);
        if (strncmp(v, "error:outcome unknown: sent, no answer recorded", 46) == 0)
            unknown++;
        else if (strcmp(v, "applied:") != 0)
            fail_msg("seq %d: %s", s, v);
        else
            assert_int_equal(received[s], 1); /* answered: it was sent once */
        ust_free(v);
    }
    /* At least the held one; each unknown one has an intent and no answer. */
    assert_true(unknown >= 1);
    assert_int_equal(count(w, "SELECT count(*) FROM journal WHERE side = 'candidate' "
                              "AND state = 'sent'"),
                     unknown);
    ust_test_service_stop(&svc);
}

/* Sets key of the candidate (candidate 0: of the config itself) in the
 * config file at path to v (stolen). */
static void config_set(const char *path, int candidate, const char *key, json_t *v)
{
    json_error_t je;
    json_t *c = json_load_file(path, 0, &je);
    assert_non_null(c);
    json_object_set_new(
        candidate ? json_object_get(json_object_get(c, "plugins"), "candidate") : c,
        key, v);
    assert_int_equal(json_dump_file(c, path, JSON_INDENT(2)), 0);
    json_decref(c);
}

/* The seqs the run's journal holds as sent with no answer (0 ends). */
static void unknown_seqs(world *w, int *seqs, int cap)
{
    char *list = world_query(w, "SELECT group_concat(seq) FROM journal WHERE side = "
                                "'candidate' AND state IN ('sent', 'resent')");
    int n = 0;
    for (char *p = list; *p != '\0' && n < cap - 1;
         p += strcspn(p, ","), p += *p == ',')
        seqs[n++] = atoi(p);
    seqs[n] = 0;
    ust_free(list);
}

/* What kill_and_resume saw, by seq: how many times the service started
 * it, how many kills left it unknown, whether one did. */
enum { KILL_N = 48, KILL_M = 4, KILL_ROUNDS = 4 };
typedef struct kills {
    int received[KILL_N + 1], unknown_at[KILL_N + 1], was_unknown[KILL_N + 1];
} kills;

/* A replay with cfg (max_in_flight KILL_M, resend_unknown as resend) of
 * KILL_N events against svc (slow: it holds each request), SIGKILLed
 * KILL_ROUNDS times at a random point while svc holds KILL_M requests, then
 * resumed to the end: each kill leaves at most KILL_M events whose outcome
 * is unknown, at least one, and each of them reached the service. */
static void kill_and_resume(world *w, const char *cfg, ust_test_service *svc,
                            int resend, kills *k)
{
    enum { N = KILL_N, M = KILL_M };
    memset(k, 0, sizeof(*k));
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("kill_rounds seed %u\n", seed);
    srand(seed);
    for (int round = 0; round < KILL_ROUNDS; round++) {
        json_t *log = service_log(svc);
        size_t before = json_array_size(json_object_get(log, "started"));
        json_decref(log);
        /* A point after this many more requests, while the service holds
         * max_in_flight of them: each one's intent is committed, no
         * answer can be, and nothing else is on its way. */
        size_t at = before + 1 + (size_t)(rand() % 6);
        pid_t pid = start_replay(w, cfg);
        for (int tries = 0;; tries++) {
            assert_true(tries < 12000); /* a bound, not a measure */
            log = service_log(svc);
            size_t started = json_array_size(json_object_get(log, "started"));
            size_t done = json_array_size(json_object_get(log, "records"));
            json_decref(log);
            if (started >= at && started - done == M)
                break;
            sleep_ms(5);
        }
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        /* What this kill left unknown: at most M, each received. */
        int seqs[N + 1];
        unknown_seqs(w, seqs, N + 1);
        log = service_log(svc);
        int received[N + 1] = {0};
        count_started(log, received, N);
        json_decref(log);
        int fresh = 0;
        for (int i = 0; seqs[i] != 0; i++) {
            if (!resend && k->was_unknown[seqs[i]])
                continue; /* left by an earlier kill, never sent again */
            fresh++;
            k->unknown_at[seqs[i]]++;
            k->was_unknown[seqs[i]] = 1;
            if (received[seqs[i]] == 0)
                fail_msg("round %d: seq %d is unknown but never reached the service",
                         round, seqs[i]);
        }
        if (fresh > M)
            fail_msg("round %d: %d events of unknown outcome (max_in_flight %d)", round,
                     fresh, M);
        assert_true(fresh >= 1);
    }
    pid_t pid = start_replay(w, cfg);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    json_t *log = NULL;
    for (int tries = 0;; tries++) { /* the held requests end */
        assert_true(tries < 12000);
        log = service_log(svc);
        if (json_array_size(json_object_get(log, "started")) ==
            json_array_size(json_object_get(log, "records")))
            break;
        json_decref(log);
        sleep_ms(5);
    }
    count_started(log, k->received, N);
    json_decref(log);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions"), N);
    if (resend)
        assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE c_error LIKE "
                                  "'outcome unknown%'"),
                         0);
}

/* kill_and_resume against a slow test service that answers 200 to each:
 * sent once, or again after each kill that left it unknown (resend), and
 * the decisions of those sent again say so. */
static void kill_rounds(world *w, int resend)
{
    enum { N = KILL_N };
    const char *args[] = {"--slow-all", "--slow-ms", "150", NULL};
    ust_test_service svc;
    ust_test_service_start(&svc, args);
    stripe_events(w, 6, N / 6);
    char cfg[PATH_MAX];
    snprintf(cfg, sizeof(cfg), "%s/cfg.json", w->dir);
    write_config(w, cfg, svc.base, NULL);
    config_set(cfg, 1, "max_in_flight", json_integer(KILL_M));
    if (resend)
        config_set(cfg, 1, "resend_unknown", json_true());
    kills k;
    kill_and_resume(w, cfg, &svc, resend, &k);
    for (int s = 1; s <= N; s++) {
        char sql[200];
        snprintf(sql, sizeof(sql),
                 "SELECT c_verdict || ':' || ifnull(c_error, '') || ':' || "
                 "ifnull(c_reason, '') FROM decisions WHERE seq = %d",
                 s);
        char *v = world_query(w, sql);
        /* Sent once, or again after each kill that left it unknown. */
        assert_true(k.received[s] >= 1);
        assert_true(k.received[s] <= 1 + (resend ? k.unknown_at[s] : 0));
        if (resend && k.was_unknown[s]) {
            if (strncmp(v, "applied::resent (resend_unknown)", 32) != 0)
                fail_msg("seq %d: %s", s, v);
        } else if (!resend && k.was_unknown[s]) {
            if (strncmp(v, "error:outcome unknown: sent, no answer recorded", 47) != 0)
                fail_msg("seq %d: %s", s, v);
        } else if (strncmp(v, "applied:", 8) != 0 || strstr(v, "resent") != NULL)
            fail_msg("seq %d: %s", s, v);
        ust_free(v);
    }
    ust_test_service_stop(&svc);
}

/* The candidate's decisions of the run at path, seq by seq, every field
 * but the words a resent event's reason starts with (which no comparison
 * reads), then its divergences. */
static char *decided(const char *path)
{
    char *d = world_query_at(
        path,
        "SELECT group_concat(seq || '|' || quote(entity) || '|' || c_verdict || '|' || "
        "c_status || '|' || quote(c_state_before) || '|' || quote(c_state) || '|' || "
        "quote(c_flags) || '|' || quote(c_body) || '|' || quote(c_headers) || '|' || "
        "quote(c_error) || '|' || quote(replace(c_reason, 'resent (resend_unknown): "
        "sent before the run stopped with no answer recorded, sent again; ', '')), "
        "char(10)) FROM (SELECT * FROM decisions ORDER BY seq)");
    char *v = world_query_at(
        path,
        "SELECT group_concat(seq || '|' || class || '|' || fields, char(10)) FROM "
        "(SELECT * FROM divergences ORDER BY seq)");
    char *out = ust_sprintf("%s\n--\n%s", d, v);
    ust_free(d);
    ust_free(v);
    return out;
}

/* Issue 24 item 9: the example service (src/plugins/examples/service.py)
 * dedups on Understudy-Seq, so with resend_unknown a replay SIGKILLed four
 * times while it held max_in_flight requests it had decided, and resumed,
 * ends with the decisions and divergences of a run never killed: an event
 * sent again is answered as the first time, not judged a duplicate of
 * itself. tests/http_service.py stands in front of it (--forward): it
 * holds each answer after the service decided. */
static void test_resend_unknown_to_the_example_service_decides_as_unkilled(void **state)
{
    world *w = *state;
    service ex;
    snprintf(ex.db, sizeof(ex.db), "%s/service.db", w->dir);
    example_service_start(&ex);
    char base[64], reset[96], cfg[PATH_MAX], once[PATH_MAX];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", ex.port);
    const char *args[] = {"--forward", base, "--slow-all", "--slow-ms", "150", NULL};
    ust_test_service svc;
    ust_test_service_start(&svc, args);
    /* Each event a delivery the service keeps (none invalid): sent again to
     * a service that did not dedup on its seq, it would be a duplicate. */
    static const char *const types[] = {"payment_intent.created",
                                        "payment_intent.succeeded", "charge.refunded"};
    stripe_events_of(w, 6, KILL_N / 6, types);
    snprintf(cfg, sizeof(cfg), "%s/cfg.json", w->dir);
    snprintf(reset, sizeof(reset), "%s/reset", svc.base);
    snprintf(once, sizeof(once), "%s/once.db", w->dir);
    write_config(w, cfg, svc.base, reset);
    config_set(cfg, 1, "max_in_flight", json_integer(KILL_M));
    config_set(cfg, 1, "resend_unknown", json_true());
    config_set(cfg, 0, "run", json_string(once));
    pid_t pid = start_replay(w, cfg);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char *n = world_query_at(once, "SELECT count(*) FROM decisions WHERE c_verdict NOT "
                                   "IN ('invalid', 'error')");
    assert_int_equal(atoi(n), KILL_N); /* each event a delivery it keeps */
    ust_free(n);
    config_set(cfg, 0, "run", json_string(w->run_path));
    kills k;
    kill_and_resume(w, cfg, &svc, 1, &k);
    int resent = 0;
    for (int s = 1; s <= KILL_N; s++)
        resent += k.received[s] > 1;
    assert_true(resent >= 1); /* the service decided it, then got it again */
    char *want = decided(once), *got = decided(w->run_path);
    assert_string_equal(got, want);
    ust_free(want);
    ust_free(got);
    assert_int_equal(
        count(w, "SELECT count(*) FROM decisions WHERE c_verdict = 'error'"), 0);
    ust_test_service_stop(&svc);
    example_service_stop(&ex, SIGTERM);
}

static void test_a_kill_leaves_at_most_max_in_flight_unknowns(void **state)
{
    kill_rounds(*state, 0);
}

static void test_resend_unknown_sends_them_again_on_resume(void **state)
{
    kill_rounds(*state, 1);
}

/* Steps that fail (an allocation refused, anywhere) are rolled back and
 * retried: what was sent is never sent again, and an answer received before
 * the rollback is still the decision. */
static void test_a_retried_step_never_sends_again(void **state)
{
    world *w = *state;
    ust_test_service svc;
    enum { N = 24 };
    candidate_service(w, &svc, NULL, 3, N / 3, "");
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, NULL, NULL);
    ust_runner *r = NULL;
    char *err = NULL;
    if (ust_runner_open(&o, &r, &err) != 0)
        fail_msg("open: %s", err);
    int failed_after_sending = 0;
    for (long n = 100; n < 200000 && ust_runner_cursor(r) < N; n = n * 3 / 2) {
        ust_replay_stats st;
        /* Every allocation from the nth on refused, on every thread: the
         * runner sees it and the step fails, wherever it was. */
        ust_test_alloc_fail(n, 1);
        int rc = ust_runner_step(r, &st, &err);
        ust_test_alloc_restore();
        ust_free(err);
        err = NULL;
        if (rc != 0 && count(w, "SELECT count(*) FROM journal") > 0)
            failed_after_sending = 1;
    }
    ust_replay_stats st;
    assert_int_equal(ust_runner_step(r, &st, &err), 0);
    ust_runner_close(r);
    assert_true(failed_after_sending);
    json_t *log = service_log(&svc);
    int received[N + 1] = {0};
    count_started(log, received, N);
    json_decref(log);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions"), N);
    for (int s = 1; s <= N; s++) {
        char *v = sent_once_verdict(w, received, s);
        if (strcmp(v, "applied:") == 0)
            assert_int_equal(received[s], 1);
        else if (strncmp(v, "error:outcome unknown", 21) != 0)
            fail_msg("seq %d: %s", s, v);
        ust_free(v);
    }
    ust_test_service_stop(&svc);
}

static void test_reset_is_called_once_and_a_failing_one_refuses_to_start(void **state)
{
    world *w = *state;
    ust_test_service svc;
    candidate_service(w, &svc, NULL, 2, 4, "");
    w->cfg->candidate.reset.method = ust_strdup("POST");
    w->cfg->candidate.reset.url = ust_sprintf("%s/reset", svc.base);
    char lp[PATH_MAX];
    ust_test_plugin_path("legacy", lp);
    ust_replay_opts o = world_opts(w, lp, NULL, NULL);
    o.step_events = 3;
    /* Three runs over the log, each resuming the last. */
    for (int i = 0; i < 3; i++) {
        ust_runner *r = NULL;
        char *err = NULL;
        if (ust_runner_open(&o, &r, &err) != 0)
            fail_msg("open: %s", err);
        ust_replay_stats st;
        assert_int_equal(ust_runner_step(r, &st, &err), 0);
        ust_runner_close(r);
    }
    json_t *log = service_log(&svc);
    assert_int_equal(json_integer_value(json_object_get(log, "resets")), 1);
    assert_int_equal(json_array_size(json_object_get(log, "records")), 8);
    json_decref(log);
    ust_test_service_stop(&svc);
    /* A fresh run whose reset cannot be made does not start. */
    world *w2 = world_new();
    stripe_events(w2, 1, 1);
    set_service(&w2->cfg->candidate, svc.base, "");
    w2->cfg->candidate.reset.method = ust_strdup("PUT");
    w2->cfg->candidate.reset.url =
        ust_sprintf("http://127.0.0.1:%d/reset", ust_test_closed_port());
    ust_replay_opts o2 = world_opts(w2, lp, NULL, NULL);
    ust_replay_stats st;
    char *err = NULL;
    assert_int_not_equal(ust_replay(&o2, &st, &err), 0);
    assert_non_null(strstr(err, "plugins.candidate"));
    assert_non_null(strstr(err, w2->cfg->candidate.reset.url));
    assert_non_null(strstr(err, "reset PUT"));
    ust_free(err);
    world_free(w2);
}

static void test_the_command_line_refuses_a_failing_reset_with_exit_2(void **state)
{
    world *w = *state;
    stripe_events(w, 1, 1);
    char cfg[PATH_MAX], reset[128];
    snprintf(cfg, sizeof(cfg), "%s/cfg.json", w->dir);
    snprintf(reset, sizeof(reset), "http://127.0.0.1:%d/reset", ust_test_closed_port());
    write_config(w, cfg, "http://127.0.0.1:9/", reset);
    char args[PATH_MAX + 32], *out = NULL;
    snprintf(args, sizeof(args), "replay --config '%s'", cfg);
    assert_int_equal(ust_test_run_cli(w->dir, args, &out), 2);
    assert_non_null(strstr(out, "plugins.candidate"));
    assert_non_null(strstr(out, reset));
    free(out);
}

/* Issue 24: a recorded request that HTTP/1.1 would read as something else
 * reaches the service as nothing at all. Written to the log as a version
 * before import refused them could have (the log's own append, no import
 * in between); the url kind checks again before it sends. Without that the
 * service got a second request, DELETE /svc/accounts/42, from one value. */
static void test_a_request_that_would_split_is_not_sent(void **state)
{
    world *w = *state;
    ust_test_service svc;
    ust_test_service_start(&svc, NULL);
    world_api(w, 1, "k-1", NULL, "ord_1", 100);
    ust_request *r = world_api_last(w, 2, "k-2", "ord_2");
    assert_int_equal(ust_request_add_header(r, "X-Note",
                                            "a\r\nContent-Length: 0\r\n\r\nDELETE"
                                            " /svc/accounts/42 HTTP/1.1\r\nHost: x"),
                     0);
    r = world_api_last(w, 3, "k-3", "ord_3");
    ust_free(r->method);
    r->method = ust_strdup("DELETE /admin/users HTTP/1.1\r\nX-A:");
    r = world_api_last(w, 4, "k-4", "ord_4");
    assert_int_equal(ust_request_add_header(r, "Transfer-Encoding ", "chunked"), 0);
    world_api(w, 5, "k-5", NULL, "ord_5", 100);
    world_record(w);
    json_t *log = replay_into(w, &svc, 5);
    json_t *recs = json_object_get(log, "records");
    size_t i;
    json_t *rec;
    int seen[6] = {0};
    json_array_foreach(recs, i, rec)
    {
        const char *seq = json_string_value(json_object_get(rec, "seq"));
        if (seq == NULL)
            fail_msg("the service received a request of no event: %s %s",
                     json_string_value(json_object_get(rec, "method")),
                     json_string_value(json_object_get(rec, "target")));
        seen[atoi(seq) % 6]++;
    }
    if (json_array_size(recs) != 2) {
        char *d = world_query(w, "SELECT group_concat(seq || '=' || c_verdict || ':' ||"
                                 " ifnull(c_error, ''), ' | ') FROM decisions");
        fail_msg("the service got %zu requests; decisions: %s", json_array_size(recs),
                 d);
    }
    json_decref(log);
    assert_int_equal(seen[1], 1);
    assert_int_equal(seen[5], 1);
    static const char *const why[] = {
        "headers[2] value (of \"X-Note\"): holds a CR, LF or NUL byte",
        "method \"DELETE /admin/users HTTP/1.1\\r\\nX-A:\": not an HTTP token",
        "headers[2] name \"Transfer-Encoding \": not an HTTP token"};
    for (int s = 2; s <= 4; s++) {
        char *got = candidate_outcome(w, s);
        char *want = ust_sprintf(
            "error:not sent: the recorded request is not valid HTTP: %s", why[s - 2]);
        assert_string_equal(got, want);
        ust_free(got);
        ust_free(want);
    }
}

/* A row whose target's path is not its route's was not written as
 * recorded (a route is matched on the whole path). libcurl resolves dot
 * segments: "/payments/../../admin/users" under the url http://svc/svc
 * reached the service as /admin/users, outside the url's prefix, and a
 * target without its '/' was sent as "/". Neither is sent now. */
static void test_a_target_outside_its_route_is_not_sent(void **state)
{
    world *w = *state;
    ust_test_service svc;
    ust_test_service_start(&svc, NULL);
    for (int s = 1; s <= 4; s++) {
        char key[16], order[16];
        snprintf(key, sizeof(key), "k-%d", s);
        snprintf(order, sizeof(order), "ord_%d", s);
        world_api(w, s, key, NULL, order, 100);
    }
    world_record(w);
    ust_test_sql(
        w->log_path,
        "DROP TRIGGER events_no_update;"
        " UPDATE events SET target = '/payments/../../admin/users' WHERE seq = 2;"
        " UPDATE events SET target = '@evil.invalid/x' WHERE seq = 3;");
    json_t *log = replay_into(w, &svc, 4);
    json_t *recs = json_object_get(log, "records");
    size_t i;
    json_t *rec;
    json_array_foreach(recs, i, rec)
    {
        const char *target = json_string_value(json_object_get(rec, "target"));
        if (target == NULL || strcmp(target, "/svc/payments") != 0)
            fail_msg("the service received %s", target ? target : "(no target)");
    }
    assert_int_equal(json_array_size(recs), 2);
    json_decref(log);
    for (int s = 2; s <= 3; s++) {
        char *got = candidate_outcome(w, s);
        assert_string_equal(got, "error:not sent: the recorded target's path is not its"
                                 " route's (/payments): the log's row was not written"
                                 " as recorded");
        ust_free(got);
    }
}

/* A url with credentials: the plugin's name in the run database and in
 * the report is the url without its password (it held it whole, and the
 * report is what people share for review). */
static void test_a_services_password_is_in_no_run_or_report(void **state)
{
    world *w = *state;
    ust_test_service svc;
    ust_test_service_start(&svc, NULL);
    world_api(w, 1, "k-1", NULL, "ord_1", 100);
    world_record(w);
    char base[128];
    snprintf(base, sizeof(base), "http://svcuser:p%%40ssWORD@%s",
             svc.base + strlen("http://"));
    set_service(&w->cfg->candidate, base, "/svc");
    ust_replay_stats st = replay_legacy_so(w);
    ust_test_service_stop(&svc);
    assert_int_equal(st.fed, 1);
    assert_int_equal(count(w, "SELECT count(*) FROM decisions WHERE c_verdict = "
                              "'applied'"),
                     1);
    ust_test_report_holds_no(w->dir, w->run_path, w->log_path, "ssWORD");
}

/* A service url refused at start is named without its password. */
static void test_a_refused_url_is_named_without_its_password(void **state)
{
    world *w = *state;
    stripe_events(w, 1, 1);
    static const char *const refused[][2] = {
        {"http://u:SECRETPW@/svc", "no host"},
        {"u:SECRETPW@127.0.0.1:9/svc", "expected http:// or https://"}};
    for (size_t i = 0; i < UST_ARRAY_SIZE(refused); i++) {
        set_service(&w->cfg->candidate, refused[i][0], "");
        char lp[PATH_MAX];
        ust_test_plugin_path("legacy", lp);
        ust_replay_opts o = world_opts(w, lp, NULL, NULL);
        ust_replay_stats st;
        char *err = NULL;
        assert_int_not_equal(ust_replay(&o, &st, &err), 0);
        ust_test_expect_in(err, refused[i][1]);
        if (strstr(err, "SECRETPW") != NULL)
            fail_msg("the refusal names the password: %s", err);
        ust_free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_a_refused_url_is_named_without_its_password, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(test_a_request_that_would_split_is_not_sent,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_a_target_outside_its_route_is_not_sent,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_a_services_password_is_in_no_run_or_report,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_each_event_goes_to_the_service_as_recorded,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_understudy_verdict_in_the_answer_decides,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_the_verdicts_map_comes_before_the_defaults,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_verdicts_map_that_is_wrong_refuses_to_start, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_failing_service_gives_error_decisions_with_causes, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_service_that_is_down_gives_error_decisions, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(test_the_environments_proxy_is_not_followed,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_a_named_proxy_takes_every_event,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(test_max_in_flight_keeps_each_entitys_order,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_replay_killed_and_resumed_sends_each_seq_once, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_kill_leaves_at_most_max_in_flight_unknowns, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(test_resend_unknown_sends_them_again_on_resume,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_resend_unknown_to_the_example_service_decides_as_unkilled, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(test_a_retried_step_never_sends_again,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(
            test_reset_is_called_once_and_a_failing_one_refuses_to_start, world_setup,
            world_teardown),
        cmocka_unit_test_setup_teardown(
            test_the_command_line_refuses_a_failing_reset_with_exit_2, world_setup,
            world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
