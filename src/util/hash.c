#include <understudy/error.h>
#include <understudy/hash.h>

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>

/* OpenSSL 3 looks EVP_sha256() up in its provider tables, under a lock, on
 * every init it is given to; a digest fetched once is not looked up again.
 * Fetched on first use and kept for the life of the process. */
static EVP_MD *sha256_fetched;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

const struct evp_md_st *ust_sha256_md(void)
{
    pthread_once(&sha256_once, sha256_fetch);
    return sha256_fetched != NULL ? sha256_fetched : EVP_sha256();
}

void ust_sha256(const void *data, size_t len, unsigned char out[UST_SHA256_LEN])
{
    unsigned int n = UST_SHA256_LEN;
    EVP_Digest(data, len, out, &n, ust_sha256_md(), NULL);
}

int ust_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                    unsigned char out[UST_SHA256_LEN])
{
    size_t n = 0;
    if (key_len == 0 ||
        EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, key_len, data, len, out,
                  UST_SHA256_LEN, &n) == NULL ||
        n != UST_SHA256_LEN)
        return UST_ENOMEM;
    return 0;
}

void ust_hex_encode(const unsigned char *bytes, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * n] = '\0';
}

void ust_sha256_hex(const void *data, size_t len, char hex[UST_SHA256_HEX_LEN + 1])
{
    unsigned char md[UST_SHA256_LEN];
    ust_sha256(data, len, md);
    ust_hex_encode(md, sizeof(md), hex);
}

uint64_t ust_sha256_u64(const void *data, size_t len)
{
    unsigned char md[UST_SHA256_LEN];
    ust_sha256(data, len, md);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | md[i];
    return v;
}

int ust_sha256_file_hex(const char *path, char hex[UST_SHA256_HEX_LEN + 1])
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return UST_EIO;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc =
        ctx != NULL && EVP_DigestInit_ex(ctx, ust_sha256_md(), NULL) ? 0 : UST_ENOMEM;
    unsigned char buf[65536];
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, sizeof(buf), f)) > 0)
        if (!EVP_DigestUpdate(ctx, buf, n))
            rc = UST_EIO;
    if (rc == 0 && ferror(f))
        rc = UST_EIO;
    unsigned char md[UST_SHA256_LEN];
    unsigned int mdlen = sizeof(md);
    if (rc == 0 && !EVP_DigestFinal_ex(ctx, md, &mdlen))
        rc = UST_EIO;
    if (rc == 0)
        ust_hex_encode(md, sizeof(md), hex);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    return rc;
}
