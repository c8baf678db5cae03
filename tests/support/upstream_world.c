/* `serve --respond upstream` in front of a real service (upstream_world.h). */
#include "upstream_world.h"

upstream_world *upstream_world_new(void)
{
    upstream_world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->sw = serve_world_new(NULL, "whsec_upstream_test");
    snprintf(w->svc_log, sizeof(w->svc_log), "%s/service.jsonl", w->sw->dir);
    return w;
}

void upstream_service_start(upstream_world *w, int port)
{
    char script[PATH_MAX], portarg[16];
    ust_test_source_path("tests/data/upstream_service.py", script);
    snprintf(portarg, sizeof(portarg), "%d", port);
    int out_fd = -1;
    pid_t pid = ust_test_fork_piped(1, &out_fd);
    if (pid == 0) {
        execlp("python3", "python3", script, w->svc_log, portarg, (char *)NULL);
        _exit(127);
    }
    FILE *f = fdopen(out_fd, "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_int_equal(strncmp(line, "port ", 5), 0);
    w->svc = pid;
    w->svc_port = atoi(line + 5);
}

void upstream_service_kill(upstream_world *w)
{
    if (w->svc > 0) {
        kill(w->svc, SIGKILL);
        waitpid(w->svc, NULL, 0);
    }
    w->svc = 0;
}

void upstream_world_free(upstream_world *w)
{
    upstream_service_kill(w);
    serve_world_free(w->sw);
    free(w);
}

void upstream_write_config(upstream_world *w, json_t *keys)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/svc", w->svc_port);
    if (keys == NULL)
        keys = json_object();
    json_object_set_new(
        keys, "plugins",
        server_plugins(json_pack("{s:s,s:i}", "url", url, "timeout_ms", 30000), NULL));
    server_write_config_keys(w->sw->cfg, keys);
}

void upstream_serve(upstream_world *w)
{
    const char *extra[] = {"--respond", "upstream", NULL};
    serve_world_start_with(w->sw, extra);
}

int upstream_reached(const upstream_world *w)
{
    FILE *f = fopen(w->svc_log, "r");
    if (f == NULL)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

sqlite3 *upstream_open_db(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    return db;
}

void upstream_runner_reaches(const upstream_world *w, int seq)
{
    time_t until = time(NULL) + 120;
    for (;;) {
        sqlite3 *db = NULL;
        int64_t cursor = 0;
        if (sqlite3_open_v2(w->sw->run, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *q = NULL;
            if (sqlite3_prepare_v2(db, "SELECT last_seq FROM cursor", -1, &q, NULL) ==
                    SQLITE_OK &&
                sqlite3_step(q) == SQLITE_ROW)
                cursor = sqlite3_column_int64(q, 0);
            sqlite3_finalize(q);
        }
        sqlite3_close(db);
        if (cursor >= seq)
            return;
        assert_true(time(NULL) < until);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
