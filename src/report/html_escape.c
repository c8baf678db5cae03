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

void ust__html_json(FILE *f, const json_t *v)
{
    char *text = v ? json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
    ust__html_esc(f, text ? text : "null");
    ust_free(text);
}

void ust__html_time(FILE *f, int64_t us)
{
    char buf[32];
    ust_time_format(us, buf);
    ust__html_esc(f, buf);
}
