/* The triage file from memory: ust_triage_parse is what ust_triage_load
 * runs on the file's bytes. A file that loads is matched against fixed
 * class names, and each entry's class gets its arrow hint.
 * Invariants: a refusal names the file; "->" is read as the arrow (only
 * "-->" and the like stay); an error class is accepted only by an entry
 * that names it exactly; nothing expired accepts; a hint differs from the
 * pattern, has the arrow, and is itself spelt right (no hint of its own). */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/report.h>

#define LABEL "fuzz-triage.json"
#define ARROW "\xe2\x86\x92"

static const char *const classes[] = {
    "payment_intent.succeeded: applied " ARROW " rejected",
    "payment_intent.succeeded: applied " ARROW " error",
    "payment_intent.succeeded: error " ARROW " applied",
    "/payments: duplicate " ARROW " duplicate",
    "charge.refunded: in_progress " ARROW " conflict",
};

static void check_entry(const ust_triage_entry *e)
{
    const char *g = e->class_glob;
    FUZZ_CHECK(g != NULL && *g != '\0' && e->reason != NULL && e->owner != NULL);
    for (const char *p = strstr(g, "->"); p != NULL; p = strstr(p + 1, "->"))
        FUZZ_CHECK(p > g && p[-1] == '-');
    FUZZ_CHECK(e->expires == NULL || strlen(e->expires) == 10);
    FUZZ_CHECK(!e->expired || e->expires != NULL);
    char *hint = NULL;
    FUZZ_CHECK(ust_triage_arrow_hint(g, 1, &hint) == 0);
    if (hint != NULL) {
        FUZZ_CHECK(strcmp(hint, g) != 0 && strstr(hint, " " ARROW " ") != NULL);
        char *again = NULL;
        FUZZ_CHECK(ust_triage_arrow_hint(hint, 1, &again) == 0 && again == NULL);
        ust_free(hint);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust_triage *t = NULL;
    char *err = NULL;
    if (ust_triage_parse((const char *)data, size, LABEL, &t, &err) != 0) {
        FUZZ_CHECK(t == NULL && err != NULL && strstr(err, LABEL) != NULL);
        ust_free(err);
        return 0;
    }
    FUZZ_CHECK(t != NULL && err == NULL);
    for (size_t i = 0; i < t->n; i++)
        check_entry(&t->entries[i]);
    for (size_t i = 0; i < UST_ARRAY_SIZE(classes); i++) {
        const ust_triage_entry *e = ust_triage_match(t, classes[i]);
        FUZZ_CHECK(e == NULL ||
                   (!e->expired && ust_glob_match(e->class_glob, classes[i])));
        if (e != NULL && strstr(classes[i], "error") != NULL)
            FUZZ_CHECK(strcmp(e->class_glob, classes[i]) == 0);
        const ust_triage_entry *x = ust_triage_match_expired(t, classes[i]);
        FUZZ_CHECK(x == NULL || x->expired);
    }
    ust_triage_free(t);
    return 0;
}
