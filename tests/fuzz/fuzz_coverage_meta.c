/* The run metadata "coverage" (src/coverage/params.c): a run database is a
 * file a user hands the report, so its value is outside input. A value
 * that parses gives positive params and API routes that are a JSON array,
 * and written back it parses to the same params. */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/coverage.h>
#include <understudy/error.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *value = fuzz_cstr(data, size);
    ust_coverage_params p, q;
    char *err = NULL;
    int rc = ust_coverage_params_parse(value, &p, &err);
    FUZZ_CHECK(rc == 0 || rc == UST_EPARSE || rc == UST_ENOMEM);
    if (rc == 0) {
        FUZZ_CHECK(p.semantic_window_s > 0 && p.op_latency_ms > 0 && p.key_ttl_s > 0);
        FUZZ_CHECK(p.api_routes == NULL || p.api_routes[0] == '[');
        char *text = ust_coverage_params_format(&p);
        FUZZ_CHECK(text != NULL && ust_coverage_params_parse(text, &q, NULL) == 0);
        FUZZ_CHECK(q.semantic_window_s == p.semantic_window_s &&
                   q.op_latency_ms == p.op_latency_ms && q.key_ttl_s == p.key_ttl_s);
        FUZZ_CHECK((p.api_routes == NULL) == (q.api_routes == NULL));
        FUZZ_CHECK(p.api_routes == NULL || strcmp(p.api_routes, q.api_routes) == 0);
        ust_coverage_params_clear(&q);
        ust_free(text);
        ust_coverage_params_clear(&p);
    } else {
        FUZZ_CHECK(err != NULL || rc == UST_ENOMEM);
    }
    ust_free(err);
    free(value);
    return 0;
}
