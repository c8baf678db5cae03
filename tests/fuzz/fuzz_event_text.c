/* An event under review rendered for a terminal and as HTML
 * (src/report/event_*.c) from outside bytes: the input up to its first
 * newline is a request header's value, the rest its body (any bytes). What
 * `understudy show` writes never holds a control character (but the line
 * breaks and tabs of a body), a C1 control or a bidi control, so no payload
 * can drive the terminal; a masked header's value and the raw bytes of a
 * body a rule masks a field of are never shown. */
#define _GNU_SOURCE /* memmem */
#include "fuzz.h"

#include "report/event.h"
#include "report/event_load.h"

#include <understudy/alloc.h>
#include <understudy/codec.h>

static void check_terminal_safe(const char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        FUZZ_CHECK(c >= 0x20 || c == '\n' || c == '\t');
        FUZZ_CHECK(c != 0x7F);
        if (c == 0xC2 && i + 1 < n)
            FUZZ_CHECK((unsigned char)out[i + 1] < 0x80 ||
                       (unsigned char)out[i + 1] > 0x9F);
        if (c == 0xE2)
            FUZZ_CHECK(ust_utf8_bidi_control(out + i) == 0);
    }
}

/* No escape ends in Z: the secret cannot be spelt by escaping other bytes. */
#define SECRET "ZQ-fuzz-secret"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t head = nl ? (size_t)(nl - data) : size;
    char *value = fuzz_cstr(data, head); /* stops at a NUL, as a header would */
    const unsigned char *body = nl ? nl + 1 : NULL;
    size_t body_len = nl ? size - head - 1 : 0;
    ust__report_event e;
    memset(&e, 0, sizeof(e));
    e.seq = 1;
    e.has_request = 1;
    e.method = ust_strdup("POST");
    e.target = ust_strdup(value);
    e.remote = ust_strdup(value);
    ust_header h[2] = {{"X-Note", value}, {"X-Secret", SECRET}};
    /* the input may spell the secret itself, outside the masked header */
    int in_input = memmem(data, size, SECRET, strlen(SECRET)) != NULL;
    json_t *rules = json_pack("[ss]", "x-secret", "email");
    json_t *masked = json_array();
    int rc = ust__report_message_load(&e.req, h, 2, body, body_len, rules, masked);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(strcmp(e.req.headers[1].value, "[redacted]") == 0);
    /* a body a rule masks a field of is never shown raw */
    FUZZ_CHECK(!e.req.withheld || (e.req.text == NULL && e.req.base64 == NULL));
    /* the value as a diff entry when it is a JSON string */
    if (ust_utf8_valid((const unsigned char *)value, strlen(value)))
        e.divergence =
            json_pack("{s:[{s:s,s:s}]}", "diff", "field", "state", "legacy", value);
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    ust__report_event_text(f, &e);
    fclose(f);
    check_terminal_safe(out, n);
    FUZZ_CHECK(strstr(out, SECRET) == NULL || in_input);
    free(out);
    f = open_memstream(&out, &n);
    ust__report_event_html(f, &e, 1);
    fclose(f);
    FUZZ_CHECK(strstr(out, SECRET) == NULL || in_input);
    FUZZ_CHECK(memchr(out, '\0', n) == NULL);
    free(out);
    json_decref(masked);
    json_decref(rules);
    ust__report_event_clear(&e);
    free(value);
    return 0;
}
