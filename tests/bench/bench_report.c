/* Report size and memory on a run with many divergences: every event of the
 * generated log diverges (API requests without an Idempotency-Key, which the
 * legacy executes and the candidate refuses). The report runs in a child so
 * its peak RSS is its own; the baseline is a plain dump of the divergences
 * table to a file, in the same run.
 * usage: bench_report DIR BUILD_DIR [EVENTS]   (run from the source tree) */
#include "bench_common.h"

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/log.h>
#include <understudy/report.h>
#include <understudy/runner.h>

#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void build_log(const char *path, const ust_config *cfg, long n)
{
    ust_log *log = NULL;
    char *err = NULL;
    if (ust_log_open(path, UST_LOG_CREATE, &log, &err) != 0)
        exit(2);
    enum { BATCH = 4096 };
    static ust_request reqs[BATCH];
    for (long i = 0; i < n;) {
        size_t k = 0;
        for (; k < BATCH && i < n; k++, i++) {
            ust_request *r = &reqs[k];
            memset(r, 0, sizeof(*r));
            char *body = ust_sprintf("{\"order_id\":\"order_%ld\",\"amount\":%ld,"
                                     "\"currency\":\"eur\"}",
                                     i, 100 + i % 50);
            r->body = (unsigned char *)body;
            r->body_len = strlen(body);
            r->received_at_us =
                1795946400000000LL + i * 600000LL; /* a week at ~1.7/s */
            r->remote = ust_strdup("198.51.100.2:1");
            r->method = ust_strdup("POST");
            r->target = ust_strdup("/payments");
            ust_request_add_header(r, "X-Tenant-Id", i % 3 ? "tenant-a" : "tenant-b");
        }
        if (ust_log_append_requests(log, cfg, reqs, k, NULL, NULL, &err) != 0)
            exit(2);
        for (size_t j = 0; j < k; j++)
            ust_request_clear(&reqs[j]);
    }
    ust_log_close(log);
}

/* Runs fn in a child; returns seconds, and the child's peak RSS in KiB. */
static double in_child(void (*fn)(void *), void *arg, long *rss)
{
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    *rss = ru.ru_maxrss;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        exit(2);
    return bench_now() - t0;
}

struct job {
    const char *run, *out;
    ust_replay_opts *replay;
};

static void do_replay(void *arg)
{
    struct job *j = arg;
    ust_replay_stats st;
    char *err = NULL;
    if (ust_replay(j->replay, &st, &err) != 0) {
        fprintf(stderr, "replay: %s\n", err);
        _exit(2);
    }
}

static void do_report(void *arg)
{
    struct job *j = arg;
    ust_report_opts o = {.run_path = j->run, .out_dir = j->out};
    char *err = NULL;
    if (ust_report_write(&o, &err) != 0) {
        fprintf(stderr, "report: %s\n", err);
        _exit(2);
    }
}

static void do_dump(void *arg)
{
    struct job *j = arg;
    char *path = ust_sprintf("%s/plain.jsonl", j->out);
    FILE *f = fopen(path, "wb");
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (f == NULL ||
        sqlite3_open_v2(j->run, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT line FROM divergences ORDER BY seq", -1, &st,
                           NULL) != SQLITE_OK)
        _exit(2);
    while (sqlite3_step(st) == SQLITE_ROW) {
        fputs((const char *)sqlite3_column_text(st, 0), f);
        fputc('\n', f);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    fclose(f);
    ust_free(path);
}

static long file_kib(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 ? (long)(st.st_size / 1024) : -1;
}

/* The class pages in out/classes: how many, and their KiB together. */
static long class_pages(const char *out, long *kib)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/classes", out);
    DIR *d = opendir(dir);
    long n = 0, bytes = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[4500];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0) {
            n++;
            bytes += (long)st.st_size;
        }
    }
    if (d != NULL)
        closedir(d);
    *kib = bytes / 1024;
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR BUILD_DIR [EVENTS]\n", argv[0]);
        return 2;
    }
    long n = argc > 3 ? atol(argv[3]) : 1000000;
    setenv("UNDERSTUDY_STRIPE_SECRET", "whsec_x", 1);
    setenv("UNDERSTUDY_STANDARD_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    ust_config *cfg = NULL;
    char *err = NULL;
    if (ust_config_load("tests/data/config.json", &cfg, &err) != 0) {
        fprintf(stderr, "%s (run from the source tree)\n", err);
        return 2;
    }
    char log_path[4096], run_path[4096], out[4096], lp[4096], cp[4096];
    snprintf(log_path, sizeof(log_path), "%s/report-bench-events.db", argv[1]);
    snprintf(run_path, sizeof(run_path), "%s/report-bench-run.db", argv[1]);
    snprintf(out, sizeof(out), "%s/report-bench-out", argv[1]);
    /* An isolated candidate runs in understudy's shim, not in this program. */
    char shim[4096];
    snprintf(shim, sizeof(shim), "%s/src/understudy", argv[2]);
    setenv("UST_PLUGIN_SHIM", shim, 0);
    snprintf(lp, sizeof(lp), "%s/src/plugins/legacy/understudy-legacy.so", argv[2]);
    snprintf(cp, sizeof(cp), "%s/src/plugins/candidate/understudy-candidate.so",
             argv[2]);
    unlink(log_path);
    unlink(run_path);
    build_log(log_path, cfg, n);
    ust_replay_opts o = {.cfg = cfg,
                         .log_path = log_path,
                         .run_path = run_path,
                         .legacy_path = lp,
                         .candidate_path = cp};
    mkdir(out, 0755);
    struct job j = {run_path, out, &o};
    long rss_report = 0, rss_dump = 0, rss_replay = 0;
    /* Each step in its own child, so the parent stays small and each peak
     * RSS is the step's own. */
    double t_replay = in_child(do_replay, &j, &rss_replay);
    double t_report = in_child(do_report, &j, &rss_report);
    double t_dump = in_child(do_dump, &j, &rss_dump);
    printf("report of a run with %ld divergences (its replay: %.1f s)\n", n, t_replay);
    printf(
        "report:          %6.1f s, peak RSS %6.1f MiB; index.html %ld KiB, summary.md"
        " %ld KiB, divergences.jsonl %ld KiB\n",
        t_report, rss_report / 1024.0, file_kib(out, "index.html"),
        file_kib(out, "summary.md"), file_kib(out, "divergences.jsonl"));
    long pages_kib = 0;
    long pages = class_pages(out, &pages_kib);
    printf("                 class pages: %ld files, %ld KiB\n", pages, pages_kib);
    printf("plain dump:      %6.1f s, peak RSS %6.1f MiB (baseline: the JSONL alone)\n",
           t_dump, rss_dump / 1024.0);
    ust_config_free(cfg);
    return 0;
}
