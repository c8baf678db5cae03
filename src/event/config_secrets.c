/* The config's secrets: each route's signing secret and the masking key,
 * read from the environment variables the file names, never from the
 * file; a message names the variable, never its value. */
#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/sig.h>

#include "event/config_internal.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

void ust__free_secret(ust_route *r)
{
    if (r->secret != NULL) {
        OPENSSL_cleanse(r->secret, strlen(r->secret));
        ust_free(r->secret);
        r->secret = NULL;
    }
}

/* A key shorter than this is refused: the digest is only as hard to
 * guess against as the key. */
#define MASK_KEY_MIN 16

int ust_config_load_mask_key(ust_config *cfg, char **err)
{
    const char *env = cfg->capture.mask_key_env;
    if (env == NULL)
        return 0;
    const char *v = getenv(env);
    if (v == NULL || strlen(v) < MASK_KEY_MIN)
        return ust_errf(
            err, UST_ECONFIG, "%s: capture.mask_key_env: environment variable %s is %s",
            cfg->file, env,
            v == NULL ? "not set" : "shorter than 16 bytes (use a long random key)");
    size_t len = strlen(v);
    unsigned char *key = ust_malloc(len);
    if (key == NULL)
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", cfg->file);
    memcpy(key, v, len);
    OPENSSL_cleanse(cfg->capture.mask_key, cfg->capture.mask_key_len);
    ust_free(cfg->capture.mask_key);
    cfg->capture.mask_key = key;
    cfg->capture.mask_key_len = len;
    return 0;
}

int ust_config_load_secrets(ust_config *cfg, char **err)
{
    for (size_t i = 0; i < cfg->n_routes; i++) {
        ust_route *r = &cfg->routes[i];
        if (r->scheme == UST_SCHEME_NONE)
            continue;
        const char *v = getenv(r->secret_env);
        if (v == NULL || *v == '\0')
            return ust_errf(err, UST_ECONFIG,
                            "%s: routes[%zu].signature.secret_env: environment "
                            "variable %s is %s",
                            cfg->file, i, r->secret_env,
                            v == NULL ? "not set" : "empty");
        /* A secret the scheme cannot key with would make every delivery on
         * the route "invalid": refuse it now, by name, never by value. */
        int rc = ust_sig_secret_check(r->scheme, v);
        if (rc == UST_ENOMEM)
            return ust_errf(err, rc, "%s: out of memory", cfg->file);
        if (rc != 0)
            return ust_errf(err, UST_ECONFIG,
                            "%s: routes[%zu].signature.secret_env: environment "
                            "variable %s is not %s",
                            cfg->file, i, r->secret_env,
                            ust_sig_scheme_info_of(r->scheme)->secret_what);
        char *copy = ust_strdup(v);
        if (copy == NULL)
            return ust_errf(err, UST_ENOMEM, "%s: out of memory", cfg->file);
        ust__free_secret(r);
        r->secret = copy;
    }
    return 0;
}
