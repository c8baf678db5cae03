/* hmac-sha256-hex (GitHub style): <header>: sha256=<hex> over the body alone,
 * keyed with the secret string's bytes. No timestamp: replays are caught by
 * the delivery id, not here. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <openssl/crypto.h>
#include <string.h>

#define PREFIX "sha256="
#define PREFIX_LEN (sizeof(PREFIX) - 1)

static const char *header_name(const ust_sig_params *p)
{
    return p->header != NULL && p->header[0] != '\0' ? p->header
                                                     : UST_SIG_DEFAULT_HEX_HEADER;
}

static int body_mac(const char *secret, const ust_request *req,
                    unsigned char mac[UST__SIG_MAC_LEN])
{
    ust__slice part = {req->body, req->body_len};
    return ust__hmac_sha256((const unsigned char *)secret, strlen(secret), &part, 1,
                            mac);
}

static int is_sha256(const char *item, size_t len)
{
    return len >= PREFIX_LEN && memcmp(item, PREFIX, PREFIX_LEN) == 0;
}

ust_sig_status ust__hmac_hex_verify(const ust_sig_params *p, const ust_request *req)
{
    const char *h = ust_request_header(req, header_name(p));
    if (h == NULL)
        return UST_SIG_MISSING;
    if (p->secret == NULL || p->secret[0] == '\0')
        return UST_SIG_INVALID;

    /* GitHub sends one entry; a comma-separated list ("sha256=a, sha256=b")
     * is accepted so a sender can rotate secrets as with the other schemes. */
    const char *cur = h, *item;
    size_t len, n_entries = 0;
    while (ust__sig_next_item(&cur, ',', &item, &len))
        if (is_sha256(item, len))
            n_entries++;
    if (n_entries == 0)
        return UST_SIG_INVALID;

    unsigned char mac[UST__SIG_MAC_LEN];
    if (body_mac(p->secret, req, mac) != 0)
        return UST_SIG_INVALID;
    int matched = 0;
    cur = h;
    while (!matched && ust__sig_next_item(&cur, ',', &item, &len)) {
        unsigned char cand[UST__SIG_MAC_LEN];
        if (is_sha256(item, len) &&
            ust__sig_hex_decode_mac(item + PREFIX_LEN, len - PREFIX_LEN, cand) == 0 &&
            CRYPTO_memcmp(cand, mac, sizeof(mac)) == 0)
            matched = 1;
    }
    return matched ? UST_SIG_VERIFIED : UST_SIG_INVALID;
}

int ust__hmac_hex_sign(const ust_sig_params *p, ust_request *req)
{
    unsigned char mac[UST__SIG_MAC_LEN];
    char hex[2 * UST__SIG_MAC_LEN + 1];
    int rc = body_mac(p->secret, req, mac);
    if (rc != 0)
        return rc;
    ust_hex_encode(mac, sizeof(mac), hex);
    char *value = ust_sprintf(PREFIX "%s", hex);
    if (value == NULL)
        return UST_ENOMEM;
    rc = ust_request_add_header(req, header_name(p), value);
    ust_free(value);
    return rc;
}
