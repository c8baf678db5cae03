/* The state store's write path beside SQLite's own floor: the same keys
 * (shaped like the reference plugins' keys: event ids, entities, orders,
 * fingerprints, in two namespaces; their ids scattered as a log's event ids
 * arrive) written (a) through ust_store, staged per decide call and flushed
 * every 4,000 keys, and (b) by a bare prepared INSERT into the same table,
 * in transactions of 4,000 keys. Into a database in memory, or DB_PATH (a
 * file set up as a run database: WAL, synchronous NORMAL, 64 MiB of cache),
 * where a write's pages reach the WAL. CPU seconds of the process (user +
 * system) per key. usage: bench_store [KEYS] [ROUNDS] [DB_PATH] */
#include "bench_common.h"

#include <understudy/host.h>
#include <understudy/runner.h>

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 4000

static const char *const schema =
    "CREATE TABLE state(key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)"
    " WITHOUT ROWID";

static const char *ns_of(long j)
{
    return j & 1 ? "candidate" : "legacy";
}

/* Key j as the table holds it (namespace, unit separator, key) into full;
 * returns the key alone, inside full. Both sides pay for making it. */
static const char *key_of(long j, char *full, size_t cap, char *v, size_t vcap)
{
    long id = (long)((unsigned long)(j / 4) * 2654435761ul % 100000000ul);
    static const char *const shapes[] = {"event|stripe|evt_%ld", "entity|stripe:pi_%ld",
                                         "order|order_%ld", "sem|%ld|eur|1000"};
    int ns_len = snprintf(full, cap, "%s\x1f", ns_of(j));
    snprintf(full + ns_len, cap - (size_t)ns_len, shapes[j % 4], id);
    snprintf(v, vcap, "paid|%ld|1795946400000000", id);
    return full + ns_len;
}

/* One way of writing: a key, then the end of a transaction's keys. */
typedef struct writer {
    sqlite3 *db;
    sqlite3_stmt *insert; /* bare */
    ust_store *store;     /* or through the store */
} writer;

static void write_key(writer *w, const char *ns, const char *full, const char *k,
                      const char *v)
{
    if (w->store != NULL) {
        ust_store_begin_call(w->store, ns);
        if (ust_store_put(w->store, k, v) != 0 || ust_store_end_call(w->store, 1) != 0)
            exit(2);
        return;
    }
    sqlite3_bind_text(w->insert, 1, full, -1, SQLITE_STATIC);
    sqlite3_bind_text(w->insert, 2, v, -1, SQLITE_STATIC);
    if (sqlite3_step(w->insert) != SQLITE_DONE)
        exit(2);
    sqlite3_reset(w->insert);
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char *db_path; /* NULL: in memory */

/* A new database, in memory or at db_path (the run database's settings). */
static sqlite3 *open_db(void)
{
    sqlite3 *db = NULL;
    if (db_path == NULL) {
        sqlite3_open(":memory:", &db);
        return db;
    }
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[4096];
        snprintf(p, sizeof(p), "%s%s", db_path, suffixes[i]);
        unlink(p);
    }
    sqlite3_open(db_path, &db);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                 " PRAGMA cache_size=-65536; PRAGMA wal_autocheckpoint=16384",
                 NULL, NULL, NULL);
    return db;
}

/* CPU microseconds per key. */
static double run(writer *w, long n)
{
    char full[96], v[64], *err = NULL;
    double t0 = cpu_now();
    for (long i = 0; i < n; i += BATCH) {
        sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL);
        for (long j = i; j < i + BATCH && j < n; j++) {
            const char *k = key_of(j, full, sizeof(full), v, sizeof(v));
            write_key(w, ns_of(j), full, k, v);
        }
        if (w->store != NULL && ust_store_flush(w->store, &err) != 0) {
            fprintf(stderr, "%s\n", err);
            exit(2);
        }
        sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL);
    }
    return (cpu_now() - t0) * 1e6 / n;
}

static double bare_sqlite(long n)
{
    writer w = {open_db(), NULL, NULL};
    sqlite3_exec(w.db, schema, NULL, NULL, NULL);
    sqlite3_prepare_v2(w.db, "INSERT INTO state VALUES(?1, ?2)", -1, &w.insert, NULL);
    double us = run(&w, n);
    sqlite3_finalize(w.insert);
    sqlite3_close(w.db);
    return us;
}

static double through_store(long n)
{
    writer w = {open_db(), NULL, NULL};
    char *err = NULL;
    if (ust_store_open(w.db, &w.store, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    double us = run(&w, n);
    ust_store_close(w.store);
    sqlite3_close(w.db);
    return us;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 4000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    db_path = argc > 3 ? argv[3] : NULL;
    double a[16], b[16];
    for (int r = 0; r < rounds && r < 16; r++) {
        a[r] = bare_sqlite(n);
        b[r] = through_store(n);
    }
    double fa = bench_median(a, rounds), fb = bench_median(b, rounds);
    printf("%ld keys, median of %d rounds, database %s, CPU time\n", n, rounds,
           db_path ? db_path : "in memory");
    printf("bare SQLite INSERT:  %6.2f us/key\n", fa);
    printf("ust_store put+flush: %6.2f us/key (%.2fx)\n", fb, fb / fa);
    return 0;
}
