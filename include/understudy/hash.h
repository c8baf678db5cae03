/* SHA-256 helpers (OpenSSL EVP underneath). */
#ifndef UNDERSTUDY_HASH_H
#define UNDERSTUDY_HASH_H

#include <stddef.h>

#define UST_SHA256_LEN 32
#define UST_SHA256_HEX_LEN 64

/* out receives 32 bytes. */
void ust_sha256(const void *data, size_t len, unsigned char out[UST_SHA256_LEN]);
/* Lower-case hex of n bytes into hex (2n+1 bytes, NUL-terminated). */
void ust_hex_encode(const unsigned char *bytes, size_t n, char *hex);
/* SHA-256 of data as 64 hex chars + NUL. */
void ust_sha256_hex(const void *data, size_t len, char hex[UST_SHA256_HEX_LEN + 1]);
/* SHA-256 of a whole file as hex. 0, UST_EIO. */
int ust_sha256_file_hex(const char *path, char hex[UST_SHA256_HEX_LEN + 1]);

#endif
