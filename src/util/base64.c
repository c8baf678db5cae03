#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <openssl/evp.h>
#include <string.h>

char *ust_base64_encode(const unsigned char *data, size_t len)
{
    size_t out_len = 4 * ((len + 2) / 3);
    char *out = ust_malloc(out_len + 1);
    if (out == NULL)
        return NULL;
    /* EVP_EncodeBlock takes an int length; encode in chunks that are a
     * multiple of 3 bytes so the pieces concatenate cleanly. */
    size_t done = 0, written = 0;
    while (done < len) {
        size_t chunk = len - done > 3u * (1u << 28) ? 3u * (1u << 28) : len - done;
        written += (size_t)EVP_EncodeBlock((unsigned char *)out + written, data + done,
                                           (int)chunk);
        done += chunk;
    }
    out[written] = '\0';
    return out;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int ust_base64_decode(const char *text, size_t text_len, unsigned char **out,
                      size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (text_len % 4 != 0)
        return UST_EPARSE;
    /* Validate first: EVP_DecodeBlock skips whitespace and does not report
     * how much padding it saw, so it alone cannot be strict. */
    size_t pad = 0;
    for (size_t i = 0; i < text_len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '=') {
            if (i < text_len - 2)
                return UST_EPARSE;
            pad++;
        } else if (pad > 0 || b64_value(c) < 0) {
            return UST_EPARSE;
        }
    }
    if (text_len == 0)
        return 0;
    unsigned char *buf = ust_malloc(text_len / 4 * 3 + 1);
    if (buf == NULL)
        return UST_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < text_len; i += 4) {
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)text[i + j];
            v = (v << 6) | (uint32_t)(c == '=' ? 0 : b64_value(c));
        }
        buf[n++] = (unsigned char)(v >> 16);
        buf[n++] = (unsigned char)(v >> 8);
        buf[n++] = (unsigned char)v;
    }
    n -= pad;
    *out = buf;
    *out_len = n;
    return 0;
}
