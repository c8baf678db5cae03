/* The partitions of one replay read as one run (run.h: ust_run_open_many).
 *
 * The first run database is opened read-only and the others attached to it
 * (read-only too: SQLite opens an attached database with its connection's
 * flags). In front of them stand TEMP objects named as the run's tables:
 * SQLite resolves a name without a schema in temp first, so every reader of
 * run.c reads the runs together with its own query, and a filter on a view
 * of UNION ALL is pushed into each branch, where each database's index
 * serves it. The rows need no merge: a partition has rows only for the
 * events of its share, so the shares' rows are the whole run's, and each
 * reader's ORDER BY orders them. */
#include "runner/run_handle.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/run.h>
#include <understudy/runner.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* What one run says of itself, read before the runs are joined. */
typedef struct part {
    const char *path;
    json_t *meta; /* key -> value */
    int64_t cursor;
    ust_partition p; /* n 0: a run of the whole log */
} part;

/* The tables read through views of all the runs' rows (rundb.c's schema;
 * meta and cursor stand in front of theirs as one value each). */
static const char *const row_tables[] = {"decisions", "divergences", "journal"};

static int add_meta(void *ctx, const char *key, const char *value)
{
    return json_object_set_new(ctx, key, json_string(value)) == 0 ? 0 : UST_ENOMEM;
}

static const char *meta_of(const part *pt, const char *key)
{
    return json_string_value(json_object_get(pt->meta, key));
}

static int read_part(part *pt, char **err)
{
    ust_run *run = NULL;
    int rc = ust_run_open(pt->path, &run, err);
    if (rc != 0)
        return rc;
    pt->meta = json_object();
    rc = pt->meta ? ust_run_begin(run, err) : UST_ENOMEM;
    if (rc == 0) {
        rc = ust_run_meta_each(run, add_meta, pt->meta, err);
        if (rc == 0)
            rc = ust_run_cursor(run, &pt->cursor, err);
        ust_run_end(run);
    }
    ust_run_close(run);
    const char *text = rc == 0 ? meta_of(pt, "partition") : NULL;
    if (text != NULL && ust_partition_parse(text, &pt->p, NULL) != 0)
        rc = ust_errf(err, UST_EINVAL, "%s: its partition \"%s\" is not K/N", pt->path,
                      text);
    return rc;
}

/* A run of the whole log among the runs: it is read alone. */
static int refuse_whole(const part *pts, size_t n, size_t whole, char **err)
{
    for (size_t i = 0; i < n; i++)
        if (pts[i].p.n != 0)
            return ust_errf(err, UST_EINVAL,
                            "%s is a run of the whole log and %s one of partition "
                            "%u/%u: read the run of the whole log alone (one --run), "
                            "or the runs of every partition without it",
                            pts[whole].path, pts[i].path, pts[i].p.k, pts[i].p.n);
    return ust_errf(err, UST_EINVAL,
                    "%s and %s are runs of the whole log, not of its partitions "
                    "(replay --partition K/N): read one of them alone (one --run)",
                    pts[0].path, pts[1].path);
}

static int holds(const part *pts, size_t n, uint32_t k)
{
    for (size_t i = 0; i < n; i++)
        if (pts[i].p.k == k)
            return 1;
    return 0;
}

/* The runs are the shares of one split: no run of the whole log, one N,
 * each K once, none missing. */
static int check_split(const part *pts, size_t n, char **err)
{
    for (size_t i = 0; i < n; i++)
        if (pts[i].p.n == 0)
            return refuse_whole(pts, n, i, err);
    for (size_t i = 1; i < n; i++)
        if (pts[i].p.n != pts[0].p.n)
            return ust_errf(err, UST_EINVAL,
                            "%s is partition %u/%u and %s partition %u/%u: they split "
                            "the log in different numbers of partitions; read the runs "
                            "of one split",
                            pts[0].path, pts[0].p.k, pts[0].p.n, pts[i].path,
                            pts[i].p.k, pts[i].p.n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (pts[i].p.k == pts[j].p.k)
                return ust_errf(err, UST_EINVAL,
                                "%s and %s are both partition %u/%u: give the run of "
                                "each partition once",
                                pts[i].path, pts[j].path, pts[i].p.k, pts[i].p.n);
    if (n == pts[0].p.n)
        return 0;
    /* Fewer runs than partitions, each K once: the first K none holds. */
    uint32_t k = 0;
    while (holds(pts, n, k))
        k++;
    return ust_errf(err, UST_EINVAL,
                    "the runs are %zu of the %u partitions of the log: partition "
                    "%u/%u is missing; give the run of every partition",
                    n, pts[0].p.n, k, pts[0].p.n);
}

/* The keys that differ between the shares of one replay by nature: the
 * share itself, where each stopped, and the log's path as each was given
 * it (log_file, its real path, is compared when every run has it). */
static int varies(const char *key, int log_files)
{
    static const char *const keys[] = {"partition", "cursor_hash", "log_head_seq",
                                       "log_head_sha256"};
    for (size_t i = 0; i < UST_ARRAY_SIZE(keys); i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return log_files && strcmp(key, "log_path") == 0;
}

/* What a key of the metadata says the runs were made with. */
static const char *made_with(const char *key)
{
    if (strcmp(key, "config_sha256") == 0 || strcmp(key, "legacy_config_sha256") == 0)
        return "config";
    if (strncmp(key, "log_", 4) == 0)
        return "event log";
    if (strncmp(key, "legacy_", 7) == 0)
        return "legacy plugin";
    if (strncmp(key, "candidate_", 10) == 0)
        return "candidate plugin";
    return key;
}

static int refuse_different(const part *a, const part *b, const char *key, char **err)
{
    const char *x = meta_of(a, key), *y = meta_of(b, key);
    return ust_errf(err, UST_EINVAL,
                    "%s and %s are not partitions of one replay: they were made with "
                    "another %s (%s %s%s%s in the first, %s%s%s in the second); read "
                    "the runs of one log, config and plugins",
                    a->path, b->path, made_with(key), key, x ? "\"" : "",
                    x ? x : "absent", x ? "\"" : "", y ? "\"" : "", y ? y : "absent",
                    y ? "\"" : "");
}

/* One log, one config, the same plugins: every key that does not vary by
 * nature has one value in every run. */
static int check_same(const part *pts, size_t n, char **err)
{
    int log_files = 1;
    for (size_t i = 0; i < n; i++)
        log_files &= meta_of(&pts[i], "log_file") != NULL;
    for (size_t i = 1; i < n; i++) {
        /* The keys of the first, then those of the other. */
        for (int side = 0; side < 2; side++) {
            const char *key;
            json_t *v;
            json_object_foreach(pts[side ? i : 0].meta, key, v)
            {
                const char *x = meta_of(&pts[0], key), *y = meta_of(&pts[i], key);
                if (!varies(key, log_files) && (!x || !y || strcmp(x, y) != 0))
                    return refuse_different(&pts[0], &pts[i], key, err);
            }
        }
        /* One path, two logs: the same head with another hash. */
        const char *s0 = meta_of(&pts[0], "log_head_seq"),
                   *si = meta_of(&pts[i], "log_head_seq");
        const char *h0 = meta_of(&pts[0], "log_head_sha256"),
                   *hi = meta_of(&pts[i], "log_head_sha256");
        if (s0 && si && h0 && hi && strcmp(s0, si) == 0 && strcmp(h0, hi) != 0)
            return refuse_different(&pts[0], &pts[i], "log_head_sha256", err);
    }
    return 0;
}

/* The metadata read through the runs together: the first's, with the
 * partitions' list, and where the runs stopped from the one that stopped
 * first. */
static json_t *merged_meta(const part *pts, size_t n)
{
    json_t *m = json_deep_copy(pts[0].meta);
    size_t first = 0;
    for (size_t i = 1; i < n; i++)
        if (pts[i].cursor < pts[first].cursor)
            first = i;
    static const char *const stop[] = {"log_head_seq", "log_head_sha256",
                                       "cursor_hash"};
    for (size_t i = 0; m != NULL && i < UST_ARRAY_SIZE(stop); i++) {
        json_t *v = json_object_get(pts[first].meta, stop[i]);
        if (v != NULL)
            json_object_set(m, stop[i], v);
        else
            json_object_del(m, stop[i]);
    }
    char *list = NULL;
    size_t len = 0;
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k < pts[0].p.n; k++) {
        char one[33] = ",";
        ust_partition_format(&(ust_partition){k, pts[0].p.n}, one + 1);
        rc = ust_str_append(&list, &len, one + (k == 0), strlen(one + (k == 0)));
    }
    if (m != NULL &&
        (rc != 0 || json_object_set_new(m, "partition", json_string(list)) != 0)) {
        json_decref(m);
        m = NULL;
    }
    ust_free(list);
    return m;
}

static void schema_of(size_t i, char out[24])
{
    if (i == 0)
        memcpy(out, "main", 5);
    else
        (void)snprintf(out, 24, "r%zu", i);
}

/* The statements that put the runs' rows behind the tables' names. */
static char *views_sql(size_t n)
{
    char *sql = ust_strdup("CREATE TEMP TABLE meta(key TEXT PRIMARY KEY, value TEXT"
                           " NOT NULL);");
    for (size_t t = 0; sql != NULL && t <= UST_ARRAY_SIZE(row_tables); t++) {
        int cursor = t == UST_ARRAY_SIZE(row_tables);
        /* A run whose cursor row is missing makes it NULL, which the
         * cursor's reader refuses, as it does for one run. */
        char *grown =
            cursor ? ust_sprintf("%sCREATE TEMP VIEW cursor AS SELECT 1 AS"
                                 " id, CASE count(*) WHEN %zu THEN"
                                 " min(last_seq) END AS last_seq FROM (",
                                 sql, n)
                   : ust_sprintf("%sCREATE TEMP VIEW %s AS ", sql, row_tables[t]);
        for (size_t i = 0; grown != NULL && i < n; i++) {
            char schema[24];
            schema_of(i, schema);
            char *next =
                cursor ? ust_sprintf("%s%sSELECT last_seq FROM %s.cursor WHERE"
                                     " id = 1",
                                     grown, i ? " UNION ALL " : "", schema)
                       : ust_sprintf("%s%sSELECT * FROM %s.%s", grown,
                                     i ? " UNION ALL " : "", schema, row_tables[t]);
            ust_free(grown);
            grown = next;
        }
        ust_free(sql);
        sql = grown ? ust_sprintf("%s%s", grown, cursor ? ");" : ";") : NULL;
        ust_free(grown);
    }
    return sql;
}

static int db_fail(const ust_run *run, const char *what, char **err)
{
    return ust_errf(err, UST_EDB, "%s: cannot read the runs as one (%s): %s", run->path,
                    what, sqlite3_errmsg(run->db));
}

/* Attaches the runs after the first to run->db and puts the views and the
 * merged meta in front of them. */
static int join(ust_run *run, const part *pts, size_t n, json_t *meta, char **err)
{
    for (size_t i = 1; i < n; i++) {
        char *sql = ust_sprintf("ATTACH ?1 AS r%zu", i);
        sqlite3_stmt *st = NULL;
        int ok =
            sql != NULL &&
            sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_bind_text(st, 1, pts[i].path, -1, SQLITE_STATIC) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_DONE;
        ust_free(sql);
        sqlite3_finalize(st);
        if (!ok)
            return db_fail(run, pts[i].path, err);
    }
    char *sql = views_sql(n);
    if (sql == NULL)
        return UST_ENOMEM;
    int rc = sqlite3_exec(run->db, sql, NULL, NULL, NULL) == SQLITE_OK
                 ? 0
                 : db_fail(run, "their tables differ", err);
    ust_free(sql);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(run->db, "INSERT INTO temp.meta VALUES(?1, ?2)",
                                      -1, &st, NULL) != SQLITE_OK)
        rc = db_fail(run, "meta", err);
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v)
    {
        if (rc != 0)
            break;
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, json_string_value(v), -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(run, "meta", err);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static char *joined_name(const char *const *paths, size_t n)
{
    char *name = NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        if ((i > 0 && ust_str_append(&name, &len, " + ", 3) != 0) ||
            ust_str_append(&name, &len, paths[i], strlen(paths[i])) != 0) {
            ust_free(name);
            return NULL;
        }
    return name;
}

static int open_joined(const char *const *paths, const part *pts, size_t n,
                       json_t *meta, ust_run **out, char **err)
{
    ust_run *run = ust_calloc(1, sizeof(*run));
    if (run == NULL || (run->path = joined_name(paths, n)) == NULL) {
        ust_free(run);
        return UST_ENOMEM;
    }
    int rc = ust__db_open(paths[0], 1, NULL, "run database", &run->db, err);
    if (rc == 0 && (rc = ust__run_register_functions(run->db)) != 0)
        ust_errf(err, rc, "%s: cannot read the run databases", paths[0]);
    if (rc == 0)
        rc = join(run, pts, n, meta, err);
    if (rc != 0)
        ust_run_close(run);
    else
        *out = run;
    return rc;
}

int ust_run_open_many(const char *const *paths, size_t n, ust_run **out, char **err)
{
    *out = NULL;
    if (n == 1)
        return ust_run_open(paths[0], out, err);
    if (n == 0)
        return ust_errf(err, UST_EINVAL, "no run database to read");
    if (n > UST_RUN_MANY_MAX)
        return ust_errf(err, UST_EINVAL,
                        "%zu run databases: at most %d are read as one (SQLite "
                        "attaches at most %d to one)",
                        n, UST_RUN_MANY_MAX, UST_RUN_MANY_MAX - 1);
    part *pts = ust_calloc(n, sizeof(*pts));
    int rc = pts ? 0 : UST_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        pts[i].path = paths[i];
        rc = read_part(&pts[i], err);
    }
    if (rc == 0)
        rc = check_split(pts, n, err);
    if (rc == 0)
        rc = check_same(pts, n, err);
    json_t *meta = rc == 0 ? merged_meta(pts, n) : NULL;
    if (rc == 0)
        rc = meta ? open_joined(paths, pts, n, meta, out, err) : UST_ENOMEM;
    json_decref(meta);
    for (size_t i = 0; pts != NULL && i < n; i++)
        json_decref(pts[i].meta);
    ust_free(pts);
    return rc;
}
