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

/* A digit's value is its place in its alphabet: one lookup serves both the
 * base64 and the hex digits. */
static int alphabet_index(const char *alphabet, size_t n, int c)
{
    const char *at = c == 0 ? NULL : memchr(alphabet, c, n);
    return at == NULL ? -1 : (int)(at - alphabet);
}

static int b64_value(unsigned char c)
{
    return alphabet_index(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 64, c);
}

int ust_hex_digit(int c)
{
    int v = alphabet_index("0123456789abcdef", 16, c);
    return v >= 0 ? v : alphabet_index("0123456789ABCDEF", 16, c);
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
