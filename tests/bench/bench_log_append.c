/* Append throughput of the event log (hash chain, derived columns, index,
 * triggers) beside a plain SQLite INSERT loop of the same rows, both in WAL
 * mode with synchronous=FULL and one transaction per batch.
 * usage: bench_log_append DIR [rounds]   (DIR on the disk to measure) */
#include "bench_common.h"

#include <understudy/alloc.h>
#include <understudy/log.h>

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BODY_BYTES 1024

static void make_records(ust_log_record *recs, int n, const char *body)
{
    for (int i = 0; i < n; i++) {
        memset(&recs[i], 0, sizeof(recs[i]));
        ust_request *r = &recs[i].req;
        r->received_at_us = 1795946400000000LL + i;
        r->remote = ust_strdup("127.0.0.1:40000");
        r->method = ust_strdup("POST");
        r->target = ust_strdup("/webhooks/stripe");
        ust_request_add_header(r, "Content-Type", "application/json");
        ust_request_add_header(
            r, "Stripe-Signature",
            "t=1795946400,v1=4d5b983073a779f9070da489c78d7c7a66a46e6441"
            "1b2cc1e948037fa1afb571");
        r->body = (unsigned char *)ust_strdup(body);
        r->body_len = BODY_BYTES;
        recs[i].route = ust_strdup("/webhooks/stripe");
        recs[i].provider = ust_strdup("stripe");
        char id[32];
        snprintf(id, sizeof(id), "evt_%d", i);
        recs[i].event_id = ust_strdup(id);
        snprintf(id, sizeof(id), "stripe:pi_%d", i);
        recs[i].identity = ust_strdup(id);
        memset(recs[i].request_sha256, 'a', 64);
        memset(recs[i].config_hash, 'b', 64);
        recs[i].sig = UST_SIG_VERIFIED;
    }
}

/* A fresh database each run: the file and its WAL and shared-memory index. */
static void remove_db(const char *path)
{
    char side[4200];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

static double run_log(const char *path, ust_log_record *recs, int batch, int batches)
{
    remove_db(path);
    ust_log *log = NULL;
    if (ust_log_open(path, UST_LOG_CREATE, &log, NULL) != 0)
        exit(1);
    double t0 = bench_now();
    for (int b = 0; b < batches; b++)
        if (ust_log_append(log, recs, (size_t)batch, NULL, NULL) != 0)
            exit(1);
    double dt = bench_now() - t0;
    ust_log_close(log);
    return (double)batch * batches / dt;
}

/* The same rows, the same durability, nothing else: no chain, no index, no
 * triggers, headers already serialised. */
static double run_plain(const char *path, ust_log_record *recs, int batch, int batches)
{
    remove_db(path);
    sqlite3 *db;
    sqlite3_open(path, &db);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE events(seq INTEGER PRIMARY KEY, received_at INTEGER,"
                 " remote TEXT, method TEXT, target TEXT, headers TEXT, body BLOB,"
                 " route TEXT, provider TEXT, event_id TEXT, identity TEXT,"
                 " request_sha256 TEXT, signature TEXT, config_hash TEXT)",
                 NULL, NULL, NULL);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "INSERT INTO events VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                       &st, NULL);
    const char *headers =
        "[[\"Content-Type\",\"application/json\"],[\"Stripe-Signature\","
        "\"t=1795946400,v1=4d5b983073a779f9070da489c78d7c7a66a46e64411b2"
        "cc1e948037fa1afb571\"]]";
    int64_t seq = 1;
    double t0 = bench_now();
    for (int b = 0; b < batches; b++) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (int i = 0; i < batch; i++) {
            ust_log_record *r = &recs[i];
            sqlite3_bind_int64(st, 1, seq++);
            sqlite3_bind_int64(st, 2, r->req.received_at_us);
            sqlite3_bind_text(st, 3, r->req.remote, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 4, r->req.method, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 5, r->req.target, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 6, headers, -1, SQLITE_STATIC);
            sqlite3_bind_blob(st, 7, r->req.body, (int)r->req.body_len, SQLITE_STATIC);
            sqlite3_bind_text(st, 8, r->route, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 9, r->provider, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 10, r->event_id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 11, r->identity, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 12, r->request_sha256, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 13, "verified", -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 14, r->config_hash, -1, SQLITE_STATIC);
            sqlite3_step(st);
            sqlite3_reset(st);
        }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    double dt = bench_now() - t0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return (double)batch * batches / dt;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [rounds]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    char log_path[4096], plain_path[4096];
    snprintf(log_path, sizeof(log_path), "%s/bench-log.db", argv[1]);
    snprintf(plain_path, sizeof(plain_path), "%s/bench-plain.db", argv[1]);
    char body[BODY_BYTES + 1];
    memset(body, 'x', BODY_BYTES);
    body[BODY_BYTES] = '\0';
    static ust_log_record recs[1024];
    make_records(recs, 1024, body);
    const int batches_for[] = {1, 64, 1024};
    const int counts[] = {400, 100, 30};
    printf("append of %d-byte events, synchronous=FULL, median of %d rounds\n",
           BODY_BYTES, rounds);
    printf("%-8s %14s %14s %8s\n", "batch", "log ev/s", "plain ev/s", "cost");
    for (int k = 0; k < 3; k++) {
        double lr[32], pr[32];
        for (int r = 0; r < rounds && r < 32; r++) {
            /* Alternate which goes first so drift hurts both alike. */
            const char *only = getenv("BENCH_ONLY");
            if (only != NULL) {
                lr[r] = strcmp(only, "log") == 0
                            ? run_log(log_path, recs, batches_for[k], counts[k])
                            : 0;
                pr[r] = strcmp(only, "plain") == 0
                            ? run_plain(plain_path, recs, batches_for[k], counts[k])
                            : 0;
            } else if (r % 2) {
                pr[r] = run_plain(plain_path, recs, batches_for[k], counts[k]);
                lr[r] = run_log(log_path, recs, batches_for[k], counts[k]);
            } else {
                lr[r] = run_log(log_path, recs, batches_for[k], counts[k]);
                pr[r] = run_plain(plain_path, recs, batches_for[k], counts[k]);
            }
        }
        double l = bench_median(lr, rounds), p = bench_median(pr, rounds);
        printf("%-8d %14.0f %14.0f %+7.1f%%\n", batches_for[k], l, p,
               (p / l - 1) * 100);
    }
    for (int i = 0; i < 1024; i++)
        ust_log_record_clear(&recs[i]);
    if (getenv("BENCH_KEEP") == NULL) {
        remove_db(log_path);
        remove_db(plain_path);
    }
    return 0;
}
