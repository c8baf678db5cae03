/* One line a plugin child writes to the host (the protocol's "decision"
 * message, include/understudy/protocol.md). The line goes the way the
 * host's link takes it (src/plugin/link.c): jansson without NULs, then the
 * "decision" member through ust__wire_decision_parse (src/plugin/wire.c),
 * which validates it as an in-process plugin's answer is validated.
 * Invariants: a decision the host accepts says what the line says (its
 * verdict and its status, not a value near it), and written back with
 * ust__wire_decision (what an isolated plugin's shim sends) and parsed
 * again, is the same decision. */
#include "fuzz.h"

#include "plugin/wire.h"

#include <understudy/jsonw.h>

static int same_string(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_round_trip(const ust_decision *d)
{
    ust_jsonw w;
    memset(&w, 0, sizeof(w));
    ust__wire_decision(&w, 1, d, NULL);
    FUZZ_CHECK(w.error == 0);
    json_error_t jerr;
    json_t *j = json_loadb(w.buf, w.len, 0, &jerr);
    FUZZ_CHECK(j != NULL);
    ust_decision again;
    const char *bad = ust__wire_decision_parse(json_object_get(j, "decision"), &again);
    FUZZ_CHECK(bad == NULL);
    FUZZ_CHECK(again.verdict == d->verdict && again.http_status == d->http_status);
    FUZZ_CHECK(same_string(again.body, d->body));
    FUZZ_CHECK((again.headers == NULL && d->headers == NULL) ||
               json_equal(again.headers, d->headers));
    FUZZ_CHECK(same_string(again.entity, d->entity) &&
               same_string(again.state_before, d->state_before) &&
               same_string(again.state_after, d->state_after) &&
               same_string(again.reason, d->reason));
    FUZZ_CHECK(again.n_flags == d->n_flags);
    for (size_t i = 0; i < d->n_flags; i++)
        FUZZ_CHECK(strcmp(again.flags[i], d->flags[i]) == 0);
    ust_decision_clear(&again);
    json_decref(j);
    ust_jsonw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *line = json_loadb((const char *)data, size, 0, &jerr);
    const char *type = json_string_value(json_object_get(line, "type"));
    if (type != NULL && strcmp(type, "decision") == 0) {
        ust_decision d;
        const char *bad =
            ust__wire_decision_parse(json_object_get(line, "decision"), &d);
        if (bad == NULL) {
            json_t *jd = json_object_get(line, "decision");
            FUZZ_CHECK(strcmp(ust_verdict_name(d.verdict),
                              json_string_value(json_object_get(jd, "verdict"))) == 0);
            FUZZ_CHECK(d.http_status ==
                       json_integer_value(json_object_get(jd, "status")));
            check_round_trip(&d);
        }
        ust_decision_clear(&d);
    }
    json_decref(line);
    return 0;
}
