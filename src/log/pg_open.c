/* The PostgreSQL event log (docs/log.md). */
#include "log/log_internal.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

static int pg_open(const char *path, unsigned flags, ust_log **out, char **err)
{
    (void)flags;
    *out = NULL;
    return ust_errf(err, UST_EINVAL, "%s: the PostgreSQL event log is not built yet",
                    path);
}

const ust__log_backend ust__log_pg = {.name = "PostgreSQL", .open = pg_open};
