/* Masking and sampling at capture: the two decisions about what of a
 * request reaches the log, taken after derivation and before the append. */
#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/error.h>
#include <understudy/hash.h>
#include <understudy/redact.h>

#include "event/event_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ust_capture_masks(const ust_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->capture.n_mask_headers; i++)
        if (strcasecmp(cfg->capture.mask_headers[i], name) == 0)
            return 1;
    return 0;
}

/* Exactly what ust_capture_mask writes: prefix and lower-case hex. */
static int is_digest(const char *v)
{
    size_t plen = sizeof(UST_MASK_PREFIX) - 1;
    if (strncmp(v, UST_MASK_PREFIX, plen) != 0 || strlen(v) != plen + UST_MASK_HEX_LEN)
        return 0;
    for (v += plen; *v != '\0'; v++)
        if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'f')))
            return 0;
    return 1;
}

int ust_capture_mask_value(const ust_config *cfg, const char *name, const char *value,
                           char **out)
{
    *out = NULL;
    if (cfg == NULL || value == NULL || !ust_capture_masks(cfg, name) ||
        is_digest(value))
        return 0;
    unsigned char mac[UST_SHA256_LEN];
    if (cfg->capture.mask_key == NULL ||
        ust_hmac_sha256(cfg->capture.mask_key, cfg->capture.mask_key_len, value,
                        strlen(value), mac) != 0)
        return UST_ENOMEM;
    char hex[UST_MASK_HEX_LEN + 1];
    ust_hex_encode(mac, UST_MASK_HEX_LEN / 2, hex);
    *out = ust_sprintf(UST_MASK_PREFIX "%s", hex);
    return *out != NULL ? 0 : UST_ENOMEM;
}

int ust_capture_mask(const ust_config *cfg, ust_request *req)
{
    for (size_t i = 0; i < req->n_headers; i++) {
        ust_header *h = &req->headers[i];
        char *digest = NULL;
        int rc = ust_capture_mask_value(cfg, h->name, h->value, &digest);
        if (rc != 0)
            return rc;
        if (digest != NULL) {
            ust_free(h->value);
            h->value = digest;
        }
    }
    return 0;
}

int ust_capture_sampled_out(const ust_route *r, const char *identity,
                            ust_sig_status sig)
{
    if (r == NULL || r->sample_bp >= 10000 || identity == NULL ||
        (sig != UST_SIG_VERIFIED && sig != UST_SIG_UNSIGNED))
        return 0;
    return ust_sha256_u64(identity, strlen(identity)) % 10000 >= (uint64_t)r->sample_bp;
}

int ust_capture_redact(const ust_config *cfg, ust_request *req)
{
    const json_t *rules = json_object_get(cfg->root, "redact");
    int rc = ust_capture_mask(cfg, req);
    for (size_t i = 0; rc == 0 && i < req->n_headers; i++) {
        ust_header *h = &req->headers[i];
        if (!ust_redact_header(rules, h->name))
            continue;
        char *masked = ust_strdup("[redacted]");
        if (masked == NULL)
            return UST_ENOMEM;
        ust_free(h->value);
        h->value = masked;
    }
    if (rc != 0 || req->body_len == 0)
        return rc;
    json_t *body;
    if (ust__body_parse(req->body, req->body_len, &body) != 0)
        return UST_ENOMEM;
    /* json_dumps allocates through the seam (json_set_alloc_funcs) */
    char *text = NULL;
    if (body != NULL) {
        ust_redact_json(body, rules);
        text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
    }
    const char *out = body != NULL ? text : UST_REDACTED_BODY;
    size_t len = out != NULL ? strlen(out) : 0;
    unsigned char *copy = out != NULL ? ust_malloc(len) : NULL;
    if (copy != NULL)
        memcpy(copy, out, len);
    ust_free(text);
    if (copy == NULL)
        return UST_ENOMEM;
    ust_free(req->body);
    req->body = copy;
    req->body_len = len;
    return 0;
}
