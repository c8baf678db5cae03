/* The config loader from memory: ust_config_parse is what ust_config_load
 * runs on the file's bytes, so this is the loader minus fopen. A document
 * that loads then gets its secrets (every secret_env the seeds use is set)
 * and each route derives a fixed request, so the JSON Pointers and header
 * sources it names are exercised too.
 * Invariants: a refusal says which file (the label) in its message, and
 * every route is found again by its own path. */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/event.h>

#define LABEL "fuzz.json"

static const char body[] =
    "{\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\",\"created\":1700000000,"
    "\"amount\":1250,\"currency\":\"eur\",\"order_id\":\"o-1\",\"data\":{\"object\":"
    "{\"id\":\"pi_1\",\"amount\":1250,\"currency\":\"eur\",\"metadata\":{\"order_id\":"
    "\"o-1\"}},\"payment_id\":\"pay_1\",\"status\":\"paid\",\"amount\":99,"
    "\"a/b\":{\"~\":\"x\"}}}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char *const names[] = {"UNDERSTUDY_STRIPE_SECRET",
                                        "UNDERSTUDY_STANDARD_SECRET",
                                        "UNDERSTUDY_GITHUB_SECRET", "FUZZ_SECRET"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(names); i++)
        setenv(names[i], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    return 0;
}

static void derive_on(const ust_config *cfg, const ust_route *r)
{
    ust_request req = {.received_at_us = INT64_C(1700000000) * 1000000};
    req.method = ust_strdup("POST");
    req.target = ust_sprintf("%s?x=1", r->path);
    req.remote = ust_strdup("127.0.0.1:1");
    req.body = ust_memdup(body, sizeof(body) - 1);
    req.body_len = sizeof(body) - 1;
    FUZZ_CHECK(req.method && req.target && req.remote && req.body);
    FUZZ_CHECK(ust_request_add_header(&req, "webhook-id", "msg_1") == 0);
    FUZZ_CHECK(ust_request_add_header(&req, "Idempotency-Key", "\"k-1\"") == 0);
    FUZZ_CHECK(ust_request_add_header(&req, "X-Tenant-Id", "t-1") == 0);
    FUZZ_CHECK(ust_config_route(cfg, req.target) != NULL);
    ust_event ev;
    char *err = NULL;
    int rc = ust_event_derive(cfg, &req, &ev, &err);
    FUZZ_CHECK(rc == 0); /* derivation takes any request */
    ust_event_clear(&ev);
    ust_free(err);
    ust_request_clear(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust_config *cfg = NULL;
    char *err = NULL;
    int rc = ust_config_parse((const char *)data, size, LABEL, &cfg, &err);
    if (rc != 0) {
        FUZZ_CHECK(cfg == NULL && err != NULL && strstr(err, LABEL) != NULL);
        ust_free(err);
        return 0;
    }
    FUZZ_CHECK(cfg != NULL && err == NULL);
    if (ust_config_load_secrets(cfg, &err) != 0) {
        FUZZ_CHECK(err != NULL && strstr(err, LABEL) != NULL);
        ust_free(err);
        ust_config_free(cfg);
        return 0;
    }
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const ust_route *r = &cfg->routes[i];
        const ust_route *found = ust_config_route(cfg, r->path);
        FUZZ_CHECK(found != NULL && strcmp(found->path, r->path) == 0);
        derive_on(cfg, r);
    }
    ust_config_free(cfg);
    return 0;
}
