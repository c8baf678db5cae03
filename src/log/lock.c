/* One writer process per database: an exclusive advisory lock (flock) on
 * "DB.lock", holding the holder's pid for the message a second one gets.
 * A separate file, because closing any descriptor of the database itself
 * would drop SQLite's own POSIX locks on it. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct ust_db_lock {
    int fd;
    char *path;  /* the lock file */
    int created; /* by this take: a failed start removes it (discard) */
};

/* Whether fd is still the file at path: a lock file a failed start removed
 * (ust_db_lock_discard) may have been opened before, and locked after, by
 * another process, which must then take the file now at path instead. */
static int still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int ust_db_lock_take(const char *db_path, ust_db_lock **out, char **err)
{
    *out = NULL;
    /* A log in PostgreSQL takes any number of recorders, each on a stream
     * of its own (docs/log.md): there is no file, and nothing to exclude. */
    if (ust__log_backend_for(db_path) != &ust__log_sqlite)
        return 0;
    char *path = ust_sprintf("%s.lock", db_path);
    if (path == NULL)
        return UST_ENOMEM;
    int rc = 0, created = 0, fd = -1;
again:
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        goto again; /* removed between the two opens */
    if (fd < 0) {
        rc = ust_errf(err, UST_EIO, "%s: cannot open the lock file: %s", path,
                      strerror(errno));
        goto out;
    }
    int locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (locked && !still_there(fd, path)) {
        close(fd);
        goto again;
    }
    if (!locked) {
        char pid[32] = "";
        ssize_t n = errno == EWOULDBLOCK ? pread(fd, pid, sizeof(pid) - 1, 0) : -1;
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        rc =
            errno == EWOULDBLOCK || n >= 0
                ? ust_errf(err, UST_EEXISTS,
                           "%s is in use by another understudy serve (pid %s, lock %s):"
                           " stop it, or give this one other --log and --run files",
                           db_path, pid[0] ? pid : "unknown", path)
                : ust_errf(err, UST_EIO, "%s: cannot lock: %s", path, strerror(errno));
        close(fd);
        goto out;
    }
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        /* The lock holds without the pid; only the message would lack it. */
    }
    ust_db_lock *l = ust_malloc(sizeof(*l));
    if (l == NULL) {
        if (created)
            unlink(path);
        close(fd);
        rc = UST_ENOMEM;
        goto out;
    }
    l->fd = fd;
    l->path = path;
    l->created = created;
    *out = l;
    return 0;
out:
    ust_free(path);
    return rc;
}

void ust_db_lock_release(ust_db_lock *l)
{
    if (l == NULL)
        return;
    /* The file stays: a start that went on to serve leaves it for the next,
     * which finds the pid of the last holder in it. */
    close(l->fd);
    ust_free(l->path);
    ust_free(l);
}

void ust_db_lock_discard(ust_db_lock *l)
{
    /* Removed while still held: a process that opened it meanwhile finds,
     * once it has the lock, that the file is gone (still_there). */
    if (l != NULL && l->created)
        unlink(l->path);
    ust_db_lock_release(l);
}
