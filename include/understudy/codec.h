/* Small codecs for text formats: base64 (OpenSSL), UTF-8 validation, and
 * RFC 3339 timestamps in microseconds. */
#ifndef UNDERSTUDY_CODEC_H
#define UNDERSTUDY_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Standard base64 with padding. Returns a NUL-terminated string the caller
 * frees with ust_free, or NULL on allocation failure. */
char *ust_base64_encode(const unsigned char *data, size_t len);
/* The same text written through out in pieces of at most 16 KiB (the shape
 * of jansson's json_dump_callback_t), never whole: a body of any size costs
 * no copy. 0, or -1 as soon as out returns nonzero. */
int ust_base64_write(const unsigned char *data, size_t len,
                     int (*out)(const char *, size_t, void *), void *arg);
/* Strict decode of standard base64 (padding required, no whitespace).
 * *out (ust_malloc, may be NULL when *out_len is 0). 0; UST_EPARSE; UST_ENOMEM. */
int ust_base64_decode(const char *text, size_t text_len, unsigned char **out,
                      size_t *out_len);
/* The value of one hexadecimal digit, either case, or -1 when c is none. */
int ust_hex_digit(int c);

/* 1 when data is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int ust_utf8_valid(const unsigned char *data, size_t len);
/* The code point when NUL-terminated s starts with a Unicode bidi control
 * (U+202A..U+202E, U+2066..U+2069, 3 bytes of UTF-8), else 0: text that
 * reorders what follows it on screen, so reports show it escaped. */
uint32_t ust_utf8_bidi_control(const char *s);

/* "2026-11-29T10:00:00.123456Z" (fraction of 0 to 9 digits, 'Z' or +hh:mm)
 * to microseconds since the epoch. 0 or UST_EPARSE. */
int ust_time_parse(const char *text, int64_t *out_us);
/* Microseconds to "YYYY-MM-DDTHH:MM:SS.ffffffZ" (always 6 digits). buf >= 28. */
void ust_time_format(int64_t us, char buf[32]);
/* A duration such as "8d", "36h", "90m", "600s", "200ms" or "1.5d" (a
 * plain number is seconds) to microseconds, > 0. 0 or UST_EPARSE (also for
 * zero, a sign, spaces, or more than a century). */
int ust_duration_parse(const char *text, int64_t *out_us);

#endif
