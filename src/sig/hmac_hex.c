/* hmac-sha256-hex (GitHub style): <header>: sha256=<hex> over the body alone,
 * keyed with the secret string's bytes. No timestamp: replays are caught by
 * the delivery id, not here. */
#include <understudy/alloc.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/sig.h>

#include "sig/sig_internal.h"

#include <string.h>

#define PREFIX "sha256="
#define PREFIX_LEN (sizeof(PREFIX) - 1)

static const char *header_name(const ust_sig_params *p)
{
    return ust__sig_named_header(&ust__sig_hmac_hex, p->header);
}

/* The MAC of the body under m; m NULL (the secret could not key one) fails. */
static int body_mac(ust__sig_mac *m, const ust_request *req,
                    unsigned char mac[UST__SIG_MAC_LEN])
{
    ust__slice part = {req->body, req->body_len};
    return m != NULL ? ust__sig_mac_run(m, &part, 1, mac) : UST_ENOMEM;
}

static int is_sha256(const char *item, size_t len)
{
    return len >= PREFIX_LEN && memcmp(item, PREFIX, PREFIX_LEN) == 0;
}

static ust_sig_status hex_verify(const ust_sig_params *p, const ust_request *req)
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
    ust__sig_mac *m = ust__sig_secret_mac(p->secret);
    int rc = body_mac(m, req, mac);
    if (rc != 0)
        return UST_SIG_INVALID;
    return ust__sig_hex_listed(h, PREFIX, mac) ? UST_SIG_VERIFIED : UST_SIG_INVALID;
}

static int hex_text(ust__sig_mac *m, const void *msg, char buf[UST__SIG_TEXT_CAP])
{
    unsigned char mac[UST__SIG_MAC_LEN];
    int rc = body_mac(m, msg, mac);
    if (rc == 0)
        ust_hex_encode(mac, sizeof(mac), buf);
    return rc;
}

/* sha256=<hex>[, sha256=<hex>...]: one entry per mac, in order. */
static int hex_sign(const ust_sig_params *p, ust__sig_mac *const *macs, size_t n_macs,
                    int64_t timestamp_s, const char *msg_id, ust_request *req)
{
    (void)timestamp_s;
    (void)msg_id;
    char *value;
    int rc = ust__sig_join(&value, "", ", ", PREFIX, macs, n_macs, hex_text, req);
    if (rc == 0)
        rc = ust_request_add_header(req, header_name(p), value);
    ust_free(value);
    return rc;
}

const ust__sig_scheme ust__sig_hmac_hex = {
    .info =
        {
            .named_header = 1,
            .secret_what = "a usable secret",
            .wrong_secret = "whsec_a_wrong_secret",
            .previous_secret = NULL, /* the driver has always sent one entry */
        },
    .headers = {UST_SIG_DEFAULT_HEX_HEADER, NULL},
    .key = NULL, /* the secret string's bytes */
    .verify = hex_verify,
    .sign = hex_sign,
};
