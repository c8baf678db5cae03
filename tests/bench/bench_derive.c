/* Event derivation per core: JSON parse, canonical request hash, signature
 * check and field extraction, for Stripe-shaped bodies of 1 KiB and 4 KiB;
 * beside a bare jansson parse of the same bodies and a bare signature check.
 * usage: bench_derive CONFIG [rounds] */
#include "bench_common.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/event.h>
#include <understudy/sig.h>

#include <stdio.h>
#include <string.h>

#define SECRET "whsec_bench_secret"

static void make_request(ust_request *req, size_t size)
{
    memset(req, 0, sizeof(*req));
    char *pad = ust_malloc(size);
    memset(pad, 'x', size);
    pad[size - 1] = '\0';
    char *body = ust_sprintf(
        "{\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\",\"created\":"
        "1795946400,"
        "\"data\":{\"object\":{\"id\":\"pi_1\",\"amount\":4200,\"currency\":\"eur\","
        "\"metadata\":{\"order_id\":\"order_1\"},\"description\":\"%s\"}}}",
        pad);
    /* trim the padding so the body is exactly size bytes */
    size_t over = strlen(body) - size;
    memmove(body + strlen(body) - over - 5, body + strlen(body) - 5, 6);
    ust_free(pad);
    req->body = (unsigned char *)body;
    req->body_len = strlen(body);
    req->received_at_us = 1795946400000000LL;
    req->remote = ust_strdup("127.0.0.1:1");
    req->method = ust_strdup("POST");
    req->target = ust_strdup("/webhooks/stripe");
    ust_request_add_header(req, "Content-Type", "application/json");
    ust_sig_params p = {UST_SCHEME_STRIPE, SECRET, NULL, 300};
    ust_sig_sign(&p, 1795946400, NULL, req);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONFIG [rounds]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    setenv("UNDERSTUDY_STRIPE_SECRET", SECRET, 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load(argv[1], &cfg, &err) != 0 ||
        ust_config_load_secrets(cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    printf("derivation per core, median of %d rounds (events/s)\n", rounds);
    printf("%-6s %12s %12s %12s %10s\n", "body", "derive", "parse only", "sig only",
           "MB/s derive");
    const size_t sizes[] = {1024, 4096};
    for (int s = 0; s < 2; s++) {
        ust_request req;
        make_request(&req, sizes[s]);
        int n = sizes[s] == 1024 ? 20000 : 5000;
        double d[32], p[32], g[32];
        ust_sig_params sp = {UST_SCHEME_STRIPE, SECRET, NULL, 300};
        for (int r = 0; r < rounds && r < 32; r++) {
            double t0 = bench_now();
            for (int i = 0; i < n; i++) {
                ust_event ev;
                ust_event_derive(cfg, &req, &ev, NULL);
                if (ev.sig != UST_SIG_VERIFIED || ev.target_status == NULL)
                    return 1;
                ust_event_clear(&ev);
            }
            d[r] = n / (bench_now() - t0);
            t0 = bench_now();
            for (int i = 0; i < n; i++) {
                json_error_t jerr;
                json_t *j = json_loadb((const char *)req.body, req.body_len, 0, &jerr);
                json_decref(j);
            }
            p[r] = n / (bench_now() - t0);
            t0 = bench_now();
            for (int i = 0; i < n; i++)
                if (ust_sig_verify(&sp, &req) != UST_SIG_VERIFIED)
                    return 1;
            g[r] = n / (bench_now() - t0);
        }
        double dm = bench_median(d, rounds);
        printf("%-6zu %12.0f %12.0f %12.0f %10.1f\n", req.body_len, dm,
               bench_median(p, rounds), bench_median(g, rounds),
               dm * req.body_len / 1e6);
        ust_request_clear(&req);
    }
    ust_config_free(cfg);
    return 0;
}
