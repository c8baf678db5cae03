#include "report/html_escape.h"
#include "report/escape.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>

const char *const ust__html_entity[256] = {
    ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
};

void ust__html_esc(FILE *f, const char *s)
{
    ust__report_put_escaped(f, s, ust__html_entity, UST__REPORT_BIDI_VISIBLE);
}

/* json_dump_callback's out: each piece escaped as it comes. jansson cuts a
 * string's text only before a character it escapes (ASCII), so never inside
 * a UTF-8 sequence such as a bidi control. */
static int put_json_piece(const char *s, size_t n, void *f)
{
    ust__report_put_escapedn(f, s, n, ust__html_entity, UST__REPORT_BIDI_VISIBLE);
    return 0;
}

void ust__html_json(FILE *f, const json_t *v)
{
    /* Written as it is encoded: a large body is not held again as text. */
    if (v == NULL ||
        json_dump_callback(v, put_json_piece, f, JSON_INDENT(2) | JSON_ENCODE_ANY) != 0)
        ust__html_esc(f, "null");
}

void ust__html_time(FILE *f, int64_t us)
{
    char buf[32];
    ust_time_format(us, buf);
    ust__html_esc(f, buf);
}
