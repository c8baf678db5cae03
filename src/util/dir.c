/* Output folders made when missing (dir.h). */
#include <understudy/alloc.h>
#include <understudy/dir.h>
#include <understudy/error.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* The folder part (prefix of dir up to its end) made, or found a folder. */
static int make_one(const char *dir, const char *part, char **err)
{
    if (mkdir(part, 0755) == 0)
        return 0;
    int why = errno;
    struct stat st;
    /* EEXIST, or EACCES/EROFS on a folder that is already there. */
    if (stat(part, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        return ust_errf(err, UST_EIO,
                        "%s: cannot create the directory: %s exists and is not a "
                        "directory",
                        dir, part);
    }
    return ust_errf(err, UST_EIO, "%s: cannot create the directory %s (%s)", dir, part,
                    strerror(why));
}

int ust_mkdir_p(const char *dir, char **err)
{
    char *part = ust_strdup(dir);
    if (part == NULL)
        return UST_ENOMEM;
    int rc = 0;
    /* Each prefix that ends before a '/' (the root and "//" skipped), then
     * the whole. */
    for (char *p = part + 1; rc == 0 && *p != '\0'; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        rc = make_one(dir, part, err);
        *p = '/';
    }
    if (rc == 0 && *part != '\0')
        rc = make_one(dir, part, err);
    ust_free(part);
    return rc;
}

int ust_mkdir_parent(const char *path, char **err)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL || slash == path)
        return 0;
    char *dir = ust_strndup(path, (size_t)(slash - path));
    if (dir == NULL)
        return UST_ENOMEM;
    int rc = ust_mkdir_p(dir, err);
    ust_free(dir);
    return rc;
}
