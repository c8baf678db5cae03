/* A consistent copy of a live log: SQLite's online backup reads one snapshot
 * (the WAL included) and writes a database file that holds it all alone. */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int ust__sqlite_backup(ust_log *log, const char *out_path, char **err)
{
    /* Never over an existing file: it may be the log itself, or a backup. */
    int fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return ust_errf(err, errno == EEXIST ? UST_EEXISTS : UST_EIO,
                        "%s: cannot create the backup (%s)", out_path,
                        errno == EEXIST ? "it exists: choose a new file"
                                        : strerror(errno));
    close(fd);
    sqlite3 *dest = NULL;
    int rc = 0;
    if (sqlite3_open_v2(out_path, &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        rc = ust_errf(err, UST_EIO, "%s: cannot open the backup: %s", out_path,
                      sqlite3_errmsg(dest));
        goto out;
    }
    sqlite3_exec(dest, "PRAGMA synchronous=FULL;", NULL, NULL, NULL);
    sqlite3_backup *b = sqlite3_backup_init(dest, "main", log->db, "main");
    if (b == NULL) {
        rc = ust_errf(err, UST_EDB, "%s: backup: %s", out_path, sqlite3_errmsg(dest));
        goto out;
    }
    /* All pages in one step, so the copy is one snapshot; a writer that holds
     * the lock for a moment makes it wait, not fail. */
    int step, tries = 0;
    while ((step = sqlite3_backup_step(b, -1)) == SQLITE_BUSY ||
           step == SQLITE_LOCKED) {
        if (++tries > 200)
            break;
        sqlite3_sleep(50);
    }
    if (sqlite3_backup_finish(b) != SQLITE_OK || step != SQLITE_DONE)
        rc =
            ust_errf(err, UST_EDB, "%s: backup of %s failed: %s", out_path, log->path,
                     step == SQLITE_DONE ? sqlite3_errmsg(dest) : sqlite3_errstr(step));
out:
    if (sqlite3_close(dest) != SQLITE_OK && rc == 0)
        rc = ust_errf(err, UST_EIO, "%s: cannot close the backup", out_path);
    if (rc != 0)
        unlink(out_path);
    return rc;
}
