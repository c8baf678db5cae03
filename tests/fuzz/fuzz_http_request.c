/* libFuzzer target: bytes off a connection through the recorder's own
 * request parser (src/http/request_parse.c, what conn.c runs), its limits
 * and, for a POST to a route, the derivation the writer stores (signature,
 * JSON fields, request hash). The first byte chooses how the rest is cut
 * into reads (1 to 256 bytes each), as the kernel would. */
#include "http/request_parse.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/log.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config_json[] =
    "{\"limits\": {\"max_body_bytes\": 4096, \"max_headers\": 16},"
    " \"routes\": ["
    "  {\"path\": \"/webhooks/stripe\", \"kind\": \"webhook\", \"provider\": "
    "\"stripe\","
    "   \"signature\": {\"scheme\": \"stripe\", \"secret_env\": \"FUZZ_STRIPE_SECRET\","
    "                   \"tolerance_s\": 300},"
    "   \"fields\": {\"event_id\": \"/id\", \"event_type\": \"/type\","
    "              \"transaction_id\": \"/data/object/id\","
    "              \"amount\": \"/data/object/amount\"},"
    "   \"status\": {\"from\": \"/type\", \"map\": {\"payment_intent.succeeded\": "
    "\"paid\"}}},"
    "  {\"path\": \"/webhooks/standard\", \"kind\": \"webhook\", \"provider\": "
    "\"acme\","
    "   \"signature\": {\"scheme\": \"standard-webhooks\","
    "                   \"secret_env\": \"FUZZ_STANDARD_SECRET\", \"tolerance_s\": "
    "300},"
    "   \"fields\": {\"event_id\": \"header:webhook-id\", \"event_type\": \"/type\"},"
    "   \"status\": {\"from\": \"/data/status\"}},"
    "  {\"path\": \"/payments\", \"kind\": \"api\", \"provider\": \"api\","
    "   \"idempotency\": {\"header\": \"Idempotency-Key\", \"tenant_header\": "
    "\"X-Tenant-Id\"},"
    "   \"fields\": {\"amount\": \"/amount\", \"currency\": \"/currency\"}}],"
    " \"plugins\": {\"legacy\": {\"path\": \"legacy.so\"},"
    "              \"candidate\": {\"path\": \"candidate.so\"}}}";

static ust_config *cfg;

/* What the server does with a complete request: a POST to a route is
 * taken and derived; anything else is answered and dropped. */
static int complete(ust__reqparse *rp)
{
    char path[UST__MAX_TARGET + 1];
    ust_request_path(&rp->req, path, sizeof(path));
    if (rp->parser.method != HTTP_POST || ust_config_route(cfg, rp->req.target) == NULL)
        return 0;
    ust_request req;
    if (ust__reqparse_take(rp, "127.0.0.1:1", 1700000000000000, &req) == 0) {
        ust_log_record rec;
        memset(&rec, 0, sizeof(rec));
        if (ust_log_record_derive(cfg, &req, &rec, NULL) == 0)
            ust_log_record_clear_derived(&rec);
    }
    ust_request_clear(&req);
    return 0;
}

static int expect_continue(ust__reqparse *rp)
{
    (void)rp;
    return 0;
}

static const ust__reqparse_ops ops = {.expect_continue = expect_continue,
                                      .complete = complete};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (cfg == NULL) {
        setenv("FUZZ_STRIPE_SECRET", "whsec_fuzz", 1);
        setenv("FUZZ_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
        if (ust_config_parse(config_json, sizeof(config_json) - 1, "fuzz", &cfg,
                             NULL) != 0 ||
            ust_config_load_secrets(cfg, NULL) != 0)
            abort();
    }
    if (size == 0)
        return 0;
    size_t cut = (size_t)data[0] + 1;
    ust__reqparse rp;
    ust__reqparse_init(&rp, cfg, &ops, NULL);
    for (size_t at = 1; at < size;) {
        size_t n = size - at < cut ? size - at : cut;
        const char *why = NULL;
        /* A read of its own, as from the socket: the parser may not look
         * past it (ASan sees to that). */
        char *buf = ust_memdup(data + at, n);
        int status = buf ? ust__reqparse_feed(&rp, buf, n, &why) : 503;
        ust_free(buf);
        if (status != 0)
            break; /* refused: the server answers and closes */
        at += n;
    }
    ust__reqparse_clear(&rp);
    return 0;
}
