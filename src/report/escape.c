#include "report/escape.h"

#include <understudy/codec.h>

#include <stdint.h>
#include <string.h>

void ust__report_put_escapedn(FILE *f, const char *s, size_t n,
                              const char *const *replace, const char *bidi_format)
{
    if (s == NULL)
        return;
    /* Plain runs go out in one write: a report streams every divergence. */
    const char *run = s, *end = s + n;
    for (; s < end; s++) {
        uint32_t cp =
            (unsigned char)*s == 0xE2 && end - s >= 3 ? ust_utf8_bidi_control(s) : 0;
        const char *r = cp == 0 && replace != NULL ? replace[(unsigned char)*s] : NULL;
        if (cp == 0 && r == NULL)
            continue;
        fwrite(run, 1, (size_t)(s - run), f);
        if (cp != 0) {
            fprintf(f, bidi_format, (unsigned)cp);
            s += 2;
        } else {
            fputs(r, f);
        }
        run = s + 1;
    }
    fwrite(run, 1, (size_t)(s - run), f);
}

void ust__report_put_escaped(FILE *f, const char *s, const char *const *replace,
                             const char *bidi_format)
{
    ust__report_put_escapedn(f, s, s != NULL ? strlen(s) : 0, replace, bidi_format);
}
