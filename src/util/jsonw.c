#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>
#include <understudy/jsonw.h>

#include <string.h>

void ust_jsonw_reset(ust_jsonw *w)
{
    w->len = 0;
    w->comma = 0;
    w->error = 0;
    if (w->buf != NULL)
        w->buf[0] = '\0';
}

void ust_jsonw_free(ust_jsonw *w)
{
    ust_free(w->buf);
    memset(w, 0, sizeof(*w));
}

static int reserve(ust_jsonw *w, size_t n)
{
    if (w->error == UST_ENOMEM)
        return -1;
    if (w->len + n + 1 <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n + 1)
        cap *= 2;
    char *grown = ust_realloc(w->buf, cap);
    if (grown == NULL) {
        w->error = UST_ENOMEM;
        return -1;
    }
    w->buf = grown;
    w->cap = cap;
    return 0;
}

static void put(ust_jsonw *w, const char *s, size_t n)
{
    if (reserve(w, n) != 0)
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

/* Before a value: the comma that separates it from the one before. */
static void value(ust_jsonw *w)
{
    if (w->comma)
        put(w, ",", 1);
    w->comma = 1;
}

void ust_jsonw_object(ust_jsonw *w)
{
    value(w);
    put(w, "{", 1);
    w->comma = 0;
}

void ust_jsonw_array(ust_jsonw *w)
{
    value(w);
    put(w, "[", 1);
    w->comma = 0;
}

void ust_jsonw_end_object(ust_jsonw *w)
{
    put(w, "}", 1);
    w->comma = 1;
}

void ust_jsonw_end_array(ust_jsonw *w)
{
    put(w, "]", 1);
    w->comma = 1;
}

int ust_json_write_string(const char *str, size_t len,
                          int (*out)(const char *, size_t, void *), void *data)
{
    static const char hex[] = "0123456789ABCDEF";
    if (out("\"", 1, data) != 0)
        return -1;
    size_t run = 0; /* start of the bytes that need no escape */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)str[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (i > run && out(str + run, i - run, data) != 0)
            return -1;
        run = i + 1;
        /* The escapes JSON has a letter for, each beside its byte; any other
         * control byte goes out as \u00XX. */
        static const char named[] = "\"\"\\\\\bb\ff\nn\rr\tt";
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        const char *hit = NULL;
        for (size_t k = 0; k + 1 < sizeof(named) && hit == NULL; k += 2)
            if ((unsigned char)named[k] == c)
                hit = named + k;
        if (hit != NULL) {
            esc[1] = hit[1];
        } else {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        if (out(esc, n, data) != 0)
            return -1;
    }
    if (len > run && out(str + run, len - run, data) != 0)
        return -1;
    return out("\"", 1, data);
}

static int put_cb(const char *s, size_t n, void *data)
{
    put(data, s, n);
    return 0;
}

static void escaped(ust_jsonw *w, const char *s, size_t n)
{
    ust_json_write_string(s, n, put_cb, w);
}

void ust_jsonw_key(ust_jsonw *w, const char *name)
{
    value(w);
    escaped(w, name, strlen(name));
    put(w, ":", 1);
    w->comma = 0;
}

void ust_jsonw_stringn(ust_jsonw *w, const char *s, size_t n)
{
    if (!ust_utf8_valid((const unsigned char *)s, n)) {
        if (w->error == 0)
            w->error = UST_EPARSE;
        ust_jsonw_null(w);
        return;
    }
    value(w);
    escaped(w, s, n);
}

void ust_jsonw_string(ust_jsonw *w, const char *s)
{
    if (s == NULL)
        ust_jsonw_null(w);
    else
        ust_jsonw_stringn(w, s, strlen(s));
}

void ust_jsonw_member_string(ust_jsonw *w, const char *name, const char *s)
{
    ust_jsonw_key(w, name);
    ust_jsonw_string(w, s);
}

void ust_jsonw_member_int(ust_jsonw *w, const char *name, int64_t v)
{
    ust_jsonw_key(w, name);
    ust_jsonw_int(w, v);
}

void ust_jsonw_int(ust_jsonw *w, int64_t v)
{
    char digits[24], *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--p = '-';
    value(w);
    put(w, p, (size_t)(digits + sizeof(digits) - p));
}

void ust_jsonw_bool(ust_jsonw *w, int v)
{
    value(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void ust_jsonw_null(ust_jsonw *w)
{
    value(w);
    put(w, "null", 4);
}

void ust_jsonw_strings(ust_jsonw *w, char *const *strs, size_t n)
{
    ust_jsonw_array(w);
    for (size_t i = 0; i < n; i++)
        ust_jsonw_string(w, strs[i]);
    ust_jsonw_end_array(w);
}

void ust_jsonw_value(ust_jsonw *w, const json_t *v)
{
    value(w);
    if (json_dump_callback(v, put_cb, w, JSON_COMPACT | JSON_ENCODE_ANY) != 0 &&
        w->error == 0)
        w->error = UST_ENOMEM;
}

void ust_jsonw_raw(ust_jsonw *w, const char *json, size_t n)
{
    value(w);
    put(w, json, n);
}

void ust_jsonw_append(ust_jsonw *w, const char *s, size_t n)
{
    put(w, s, n);
}
