/* A database a failed start created, removed again with the files SQLite
 * keeps beside it: a start that could not start leaves nothing behind that
 * looks like a log or a run (see log.h). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/array.h>

#include <unistd.h>

void ust_db_remove(const char *path)
{
    if (ust__log_backend_for(path) != &ust__log_sqlite)
        return;
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(suffixes); i++) {
        char *file = ust_sprintf("%s%s", path, suffixes[i]);
        if (file != NULL)
            unlink(file);
        ust_free(file);
    }
}
