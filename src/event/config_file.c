/* The config file: read whole, parsed (config.c), and its relative paths
 * resolved against its own folder, so it works from any working
 * directory. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>
#include <understudy/error.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* *path, when relative, from dir, a real path (absolute, no symbolic link,
 * no "." or ".."): its leading "./" and "../" are taken off against dir,
 * which is exact there and keeps messages readable. */
static int resolve(const char *dir, char **path)
{
    /* A URL (the log in PostgreSQL: postgresql://...) is not a file. */
    if (*path == NULL || (*path)[0] == '/' || (*path)[0] == '\0' ||
        strstr(*path, "://") != NULL)
        return 0;
    const char *rel = *path;
    size_t len = strlen(dir);
    for (;;) {
        if (strncmp(rel, "./", 2) == 0) {
            rel += 2;
        } else if (strncmp(rel, "../", 3) == 0) {
            rel += 3;
            while (len > 1 && dir[len - 1] != '/')
                len--;
            if (len > 1)
                len--; /* the slash, unless it is the root */
        } else {
            break;
        }
        while (*rel == '/')
            rel++;
    }
    char *joined = ust_sprintf("%.*s/%s", len == 1 ? 0 : (int)len, dir, rel);
    if (joined == NULL)
        return UST_ENOMEM;
    ust_free(*path);
    *path = joined;
    return 0;
}

/* A config's paths are its folder's, so it works from any working
 * directory (a service's, a cron job's, the repository root): "log",
 * "run", a plugin's "path", and an exec program named with a '/'. A
 * program named without one is a PATH lookup and stays so; its arguments
 * are the program's own and stay as written, and it runs in the config's
 * folder, so a script named there is found from it too. Every path-valued
 * key is resolved here, once: a new one belongs in this list. */
static int resolve_paths(ust_config *cfg, const char *file, char **err)
{
    char real[PATH_MAX];
    if (realpath(file, real) == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot resolve its folder: %s", file,
                        strerror(errno));
    char *slash = strrchr(real, '/'); /* a real path is absolute */
    cfg->dir = ust_strndup(real, slash == real ? 1 : (size_t)(slash - real));
    if (cfg->dir == NULL)
        return ust_errf(err, UST_ENOMEM, "%s: out of memory", file);
    ust_plugin_config *plugins[] = {&cfg->legacy, &cfg->candidate};
    int rc = 0;
    if ((rc = resolve(cfg->dir, &cfg->log_path)) != 0 ||
        (rc = resolve(cfg->dir, &cfg->run_path)) != 0)
        return ust_errf(err, rc, "%s: out of memory", file);
    for (size_t i = 0; i < UST_ARRAY_SIZE(plugins); i++) {
        ust_plugin_config *p = plugins[i];
        p->dir = cfg->dir;
        if ((rc = resolve(cfg->dir, &p->path)) != 0 ||
            (p->exec != NULL && strchr(p->exec[0], '/') != NULL &&
             (rc = resolve(cfg->dir, &p->exec[0])) != 0))
            return ust_errf(err, rc, "%s: out of memory", file);
    }
    return 0;
}

int ust_config_load(const char *file, ust_config **out, char **err)
{
    *out = NULL;
    FILE *f = fopen(file, "rb");
    if (f == NULL)
        return ust_errf(err, UST_EIO, "%s: cannot open: %s", file, strerror(errno));
    size_t cap = 8192, len = 0;
    char *buf = ust_malloc(cap);
    int rc = buf == NULL ? UST_ENOMEM : 0;
    while (rc == 0) {
        if (len == cap) {
            char *grown = ust_realloc(buf, cap * 2);
            if (grown == NULL) {
                rc = UST_ENOMEM;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                rc = UST_EIO;
            break;
        }
    }
    int saved = errno;
    (void)fclose(f);
    if (rc == UST_EIO)
        ust_errf(err, rc, "%s: cannot read: %s", file, strerror(saved));
    else if (rc == UST_ENOMEM)
        ust_errf(err, rc, "%s: out of memory", file);
    else
        rc = ust_config_parse(buf, len, file, out, err);
    ust_free(buf);
    if (rc == 0 && (rc = resolve_paths(*out, file, err)) != 0) {
        ust_config_free(*out);
        *out = NULL;
    }
    return rc;
}
