/* Idempotency-Key values: the IETF draft's RFC 8941 sf-string ("...") and
 * Stripe's unquoted token are the same key. Both forms are limited to
 * printable ASCII, so a key is always safe to write into JSON and reports. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/event.h>

#include <string.h>

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static int is_printable(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e;
}

/* s[0..len) is a quoted sf-string including both quotes. */
static int parse_sf_string(const char *s, size_t len, char **out)
{
    if (len < 2 || s[len - 1] != '"')
        return UST_EPARSE;
    /* The unescaped key is never longer than the quoted text. */
    char *key = ust_malloc(len);
    if (key == NULL)
        return UST_ENOMEM;
    size_t n = 0;
    size_t i = 1;
    for (; i < len - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') {
            if (i + 1 >= len - 1 || (s[i + 1] != '"' && s[i + 1] != '\\'))
                goto bad;
            key[n++] = s[++i];
        } else if (c == '"' || !is_printable(c)) {
            goto bad; /* an inner quote ends the string early: trailing junk */
        } else {
            key[n++] = (char)c;
        }
    }
    if (n == 0)
        goto bad;
    key[n] = '\0';
    *out = key;
    return 0;
bad:
    ust_free(key);
    return UST_EPARSE;
}

int ust_idem_key_parse(const char *value, char **out)
{
    *out = NULL;
    if (value == NULL)
        return UST_EPARSE;
    const char *s = value;
    size_t len = strlen(s);
    while (len > 0 && is_ows(*s)) {
        s++;
        len--;
    }
    while (len > 0 && is_ows(s[len - 1]))
        len--;
    if (len == 0)
        return UST_EPARSE;
    if (s[0] == '"')
        return parse_sf_string(s, len, out);
    for (size_t i = 0; i < len; i++)
        if (!is_printable((unsigned char)s[i]))
            return UST_EPARSE;
    char *key = ust_strndup(s, len);
    if (key == NULL)
        return UST_ENOMEM;
    *out = key;
    return 0;
}
