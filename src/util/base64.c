#include <understudy/alloc.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <openssl/evp.h>
#include <string.h>

/* Encodes in pieces a multiple of 3 bytes long, so they concatenate into
 * the encoding of the whole (EVP_EncodeBlock also takes only an int). */
#define B64_PIECE (3 * 4096)

int ust_base64_write(const unsigned char *data, size_t len,
                     int (*out)(const char *, size_t, void *), void *arg)
{
    unsigned char text[4 * B64_PIECE / 3 + 1];
    for (size_t done = 0; done < len;) {
        size_t chunk = len - done > B64_PIECE ? B64_PIECE : len - done;
        int n = EVP_EncodeBlock(text, data + done, (int)chunk);
        if (out((const char *)text, (size_t)n, arg) != 0)
            return -1;
        done += chunk;
    }
    return 0;
}

static int append_to(const char *s, size_t n, void *arg)
{
    char **at = arg;
    memcpy(*at, s, n);
    *at += n;
    return 0;
}

char *ust_base64_encode(const unsigned char *data, size_t len)
{
    char *out = ust_malloc(4 * ((len + 2) / 3) + 1);
    if (out == NULL)
        return NULL;
    char *at = out;
    ust_base64_write(data, len, append_to, &at);
    *at = '\0';
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
