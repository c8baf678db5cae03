/* Idempotency-Key header values (src/event/idem_key.c): the whole input is
 * the value as the HTTP parser would hand it over (a C string). A key that
 * parses is non-empty printable ASCII, no longer than the value, and written
 * back as an sf-string it parses to itself. */
#include "fuzz.h"

#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>

/* The RFC 8941 sf-string of key: quotes, with '"' and '\' escaped. */
static char *quote(const char *key)
{
    size_t n = strlen(key);
    char *q = malloc(2 * n + 3), *w = q;
    if (q == NULL)
        abort();
    *w++ = '"';
    for (const char *r = key; *r; r++) {
        if (*r == '"' || *r == '\\')
            *w++ = '\\';
        *w++ = *r;
    }
    *w++ = '"';
    *w = '\0';
    return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *value = fuzz_cstr(data, size);
    char *key = NULL;
    int rc = ust_idem_key_parse(value, &key);
    FUZZ_CHECK(rc == 0 || rc == UST_EPARSE || rc == UST_ENOMEM);
    if (rc == 0) {
        size_t n = strlen(key);
        FUZZ_CHECK(n > 0 && n <= strlen(value));
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(key[i] >= 0x20 && key[i] <= 0x7e);
        char *q = quote(key), *again = NULL;
        FUZZ_CHECK(ust_idem_key_parse(q, &again) == 0 && strcmp(again, key) == 0);
        ust_free(again);
        free(q);
    } else {
        FUZZ_CHECK(key == NULL);
    }
    ust_free(key);
    free(value);
    return 0;
}
