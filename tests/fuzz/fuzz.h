/* Shared by the libFuzzer harnesses: the entry point's prototype (libFuzzer
 * declares none, and -Wmissing-prototypes wants one), a NUL-terminated copy
 * of an input, and a check that aborts so the fuzzer records the input. */
#ifndef UST_FUZZ_H
#define UST_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a C string (it may hold NULs before the end); free(). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* An invariant of the code under test: a violation is a finding, not an
 * input to ignore. assert() would vanish under NDEBUG. */
#define FUZZ_CHECK(cond)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__,       \
                    #cond);                                                            \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#endif
