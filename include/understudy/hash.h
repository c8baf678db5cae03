/* SHA-256 helpers (OpenSSL EVP underneath), and a fast non-cryptographic
 * hash for in-memory tables. */
#ifndef UNDERSTUDY_HASH_H
#define UNDERSTUDY_HASH_H

#include <stddef.h>
#include <stdint.h>

#define UST_SHA256_LEN 32
#define UST_SHA256_HEX_LEN 64

/* OpenSSL's SHA-256, fetched once for the process (EVP_MD): given to
 * EVP_DigestInit_ex, it is not looked up again at every init. */
struct evp_md_st;
const struct evp_md_st *ust_sha256_md(void);
/* out receives 32 bytes. */
void ust_sha256(const void *data, size_t len, unsigned char out[UST_SHA256_LEN]);
/* Lower-case hex of n bytes into hex (2n+1 bytes, NUL-terminated). */
void ust_hex_encode(const unsigned char *bytes, size_t n, char *hex);
/* SHA-256 of data as 64 hex chars + NUL. */
void ust_sha256_hex(const void *data, size_t len, char hex[UST_SHA256_HEX_LEN + 1]);
/* The first 8 bytes of data's SHA-256 read as a big-endian number: a hash
 * the same on every machine and in every version, for a choice that must
 * stay put (a route's sample, a runner's partition). */
uint64_t ust_sha256_u64(const void *data, size_t len);
/* SHA-256 of a whole file as hex. 0, UST_EIO. */
int ust_sha256_file_hex(const char *path, char hex[UST_SHA256_HEX_LEN + 1]);

/* HMAC-SHA256 of data under key (key_len > 0) into out. 0, or UST_ENOMEM
 * when OpenSSL cannot allocate. */
int ust_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                    unsigned char out[UST_SHA256_LEN]);

/* 64-bit FNV-1a of n bytes: hash tables, Bloom filters, memo slots; never
 * for anything an adversary could aim at. */
static inline uint64_t ust_fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

#endif
