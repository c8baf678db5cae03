/* Paths: those in a config resolve against the config file's folder, those
 * on the command line against the working directory. The binary is run from
 * a folder that is neither, with the real plugins and the sample traffic. */
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/config.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

/* A config of the sample traffic's routes whose paths are all relative. */
static const char config_text[] =
    "{\"log\": \"var/events.db\", \"run\": \"var/run.db\",\n"
    " \"routes\": [\n"
    "  {\"path\": \"/webhooks/stripe\", \"kind\": \"webhook\", \"provider\": "
    "\"stripe\",\n"
    "   \"signature\": {\"scheme\": \"stripe\", \"secret_env\": "
    "\"UNDERSTUDY_STRIPE_SECRET\", \"tolerance_s\": 300},\n"
    "   \"fields\": {\"event_id\": \"/id\", \"event_type\": \"/type\",\n"
    "     \"transaction_id\": \"/data/object/id\", \"amount\": "
    "\"/data/object/amount\",\n"
    "     \"currency\": \"/data/object/currency\",\n"
    "     \"intent\": \"/data/object/metadata/order_id\"},\n"
    "   \"status\": {\"from\": \"/type\", \"map\": {\"payment_intent.created\": "
    "\"pending\",\n"
    "     \"payment_intent.succeeded\": \"paid\", \"payment_intent.canceled\": "
    "\"cancelled\",\n"
    "     \"charge.refunded\": \"refunded\"}}},\n"
    "  {\"path\": \"/webhooks/standard\", \"kind\": \"webhook\", \"provider\": "
    "\"acme\",\n"
    "   \"signature\": {\"scheme\": \"standard-webhooks\", \"secret_env\": "
    "\"UNDERSTUDY_STANDARD_SECRET\", \"tolerance_s\": 300},\n"
    "   \"fields\": {\"event_id\": \"header:webhook-id\", \"event_type\": \"/type\",\n"
    "     \"transaction_id\": \"/data/payment_id\", \"amount\": \"/data/amount\",\n"
    "     \"currency\": \"/data/currency\", \"intent\": \"/data/order_id\"},\n"
    "   \"status\": {\"from\": \"/data/status\"}},\n"
    "  {\"path\": \"/payments\", \"kind\": \"api\", \"provider\": \"api\",\n"
    "   \"idempotency\": {\"header\": \"Idempotency-Key\", \"tenant_header\": "
    "\"X-Tenant-Id\"},\n"
    "   \"fields\": {\"amount\": \"/amount\", \"currency\": \"/currency\", \"intent\": "
    "\"/order_id\"}}],\n"
    " \"plugins\": {\n"
    "  \"legacy\": {\"path\": \"plugins/legacy.so\"},\n"
    "  \"candidate\": {\"exec\": [\"python3\", \"plugins/candidate.py\"],\n"
    "                \"config\": {\"semantic_window_s\": 600, \"key_ttl_s\": 86400,\n"
    "                           \"op_latency_ms\": 500}}}}\n";

typedef struct paths_world {
    char root[PATH_MAX];  /* the temporary directory, resolved */
    char conf[PATH_MAX];  /* root/conf: the config's folder */
    char other[PATH_MAX]; /* root/elsewhere: the working directory */
    char sample[PATH_MAX];
} paths_world;

static int setup(void **state)
{
    paths_world *w = calloc(1, sizeof(*w));
    char tmp[PATH_MAX];
    ust_test_tmpdir(tmp);
    assert_non_null(realpath(tmp, w->root));
    snprintf(w->conf, sizeof(w->conf), "%s/conf", w->root);
    snprintf(w->other, sizeof(w->other), "%s/elsewhere", w->root);
    char dir[PATH_MAX + 16], link[PATH_MAX + 32], target[PATH_MAX];
    assert_int_equal(mkdir(w->conf, 0700), 0);
    assert_int_equal(mkdir(w->other, 0700), 0);
    snprintf(dir, sizeof(dir), "%s/var", w->conf);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof(dir), "%s/plugins", w->conf);
    assert_int_equal(mkdir(dir, 0700), 0);
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(target, sizeof(target), "%s/src/plugins/legacy/understudy-legacy.so",
             build ? build : "build");
    snprintf(link, sizeof(link), "%s/plugins/legacy.so", w->conf);
    assert_int_equal(symlink(target, link), 0);
    ust_test_source_path("src/plugins/examples/candidate.py", target);
    snprintf(link, sizeof(link), "%s/plugins/candidate.py", w->conf);
    assert_int_equal(symlink(target, link), 0);
    snprintf(link, sizeof(link), "%s/config.json", w->conf);
    ust_test_write_file(link, config_text);
    ust_test_source_path("scenarios/sample.jsonl", w->sample);
    /* The sample traffic is signed with the demo secrets. */
    ust_test_set_secrets("whsec_demo_stripe_secret_for_understudy");
    *state = w;
    return 0;
}

/* Runs the binary in the world's other folder with args (a shell fragment);
 * its exit status, stderr kept in root/err.txt. */
static int run_elsewhere(paths_world *w, const char *args)
{
    char *cmd = ust_sprintf("cd '%s' && '%s' %s >/dev/null 2>'%s/err.txt'", w->other,
                            getenv("UST_BIN"), args, w->root);
    int status = system(cmd);
    ust_free(cmd);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char path[PATH_MAX + 16], text[4096] = "";
        snprintf(path, sizeof(path), "%s/err.txt", w->root);
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
            fclose(f);
        }
        print_error("%s: %s\n", args, text);
        return -1;
    }
    return 0;
}

static int exists(const char *dir, const char *rel)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return access(path, F_OK) == 0;
}

static long long query(const char *db_dir, const char *db_rel, const char *sql)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", db_dir, db_rel);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* text with its first from replaced by to. */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    return ust_sprintf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

/* The loader makes every path of the config absolute, from the folder the
 * file is in (as its real path has it), also when the file itself is named
 * relative to the working directory; an exec command without a '/' stays a
 * PATH lookup, its arguments stay as written and it runs in that folder. */
static void test_the_loader_resolves_against_the_config_folder(void **state)
{
    paths_world *w = *state;
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(w->root), 0);
    ust_config *cfg = NULL;
    char *err = NULL;
    int rc = ust_config_load("conf/../conf/config.json", &cfg, &err);
    assert_int_equal(chdir(cwd), 0);
    if (rc != 0)
        fail_msg("%s", err);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s/var/events.db", w->conf);
    assert_string_equal(cfg->log_path, want);
    snprintf(want, sizeof(want), "%s/var/run.db", w->conf);
    assert_string_equal(cfg->run_path, want);
    snprintf(want, sizeof(want), "%s/plugins/legacy.so", w->conf);
    assert_string_equal(cfg->legacy.path, want);
    assert_string_equal(cfg->candidate.exec[0], "python3");
    assert_string_equal(cfg->candidate.exec[1], "plugins/candidate.py");
    assert_string_equal(cfg->candidate.dir, w->conf);
    assert_string_equal(cfg->legacy.dir, w->conf);
    assert_string_equal(cfg->file, "conf/../conf/config.json"); /* as given */
    ust_config_free(cfg);

    /* An absolute path stays; an exec program named with a '/' resolves. */
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/other.json", w->conf);
    char *once = replaced(config_text, "\"var/run.db\"", "\"/abs/run.db\"");
    char *twice = replaced(once, "\"python3\"", "\"bin/py3\"");
    char *text = replaced(twice, "\"var/events.db\"", "\"./../up/./events.db\"");
    ust_test_write_file(path, text);
    ust_free(once);
    ust_free(twice);
    ust_free(text);
    if (ust_config_load(path, &cfg, &err) != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg->run_path, "/abs/run.db");
    snprintf(want, sizeof(want), "%s/up/./events.db", w->root); /* leading only */
    assert_string_equal(cfg->log_path, want);
    snprintf(want, sizeof(want), "%s/bin/py3", w->conf);
    assert_string_equal(cfg->candidate.exec[0], want);
    ust_config_free(cfg);

    /* From memory there is no folder: the paths stay as written. */
    if (ust_config_parse(config_text, strlen(config_text), "mem", &cfg, &err) != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg->log_path, "var/events.db");
    assert_string_equal(cfg->legacy.path, "plugins/legacy.so");
    assert_null(cfg->candidate.dir);
    ust_config_free(cfg);
}

/* From another working directory: import writes the log where the config
 * says, replay finds both plugins (the .so by its path, the Python program's
 * script from its working directory) and writes the run where the config
 * says; nothing lands in the working directory. */
static void test_the_binary_uses_the_config_paths_from_anywhere(void **state)
{
    paths_world *w = *state;
    char *args = ust_sprintf("log import --config ../conf/config.json '%s'", w->sample);
    assert_int_equal(run_elsewhere(w, args), 0);
    ust_free(args);
    assert_true(exists(w->conf, "var/events.db"));
    assert_false(exists(w->other, "var"));
    assert_int_equal(run_elsewhere(w, "replay --config ../conf/config.json"), 0);
    assert_true(exists(w->conf, "var/run.db"));
    assert_int_equal(query(w->conf, "var/run.db", "SELECT count(*) FROM decisions"),
                     17);
    assert_int_equal(query(w->conf, "var/run.db",
                           "SELECT count(*) FROM decisions WHERE c_verdict = 'error'"
                           " OR l_verdict = 'error'"),
                     0);
    assert_false(exists(w->other, "var"));
}

/* The command line's own paths are the working directory's. */
static void test_command_line_paths_are_the_working_directory_s(void **state)
{
    paths_world *w = *state;
    char *args = ust_sprintf(
        "log import --config ../conf/config.json --log cli.db '%s'", w->sample);
    assert_int_equal(run_elsewhere(w, args), 0);
    ust_free(args);
    assert_true(exists(w->other, "cli.db"));
    assert_false(exists(w->conf, "cli.db"));
    assert_false(exists(w->conf, "var/events.db"));
    assert_int_equal(run_elsewhere(w, "replay --config ../conf/config.json --log cli.db"
                                      " --run cli-run.db --divergences div.jsonl"),
                     0);
    assert_true(exists(w->other, "cli-run.db"));
    assert_true(exists(w->other, "div.jsonl"));
    assert_false(exists(w->conf, "var/run.db"));
    assert_int_equal(query(w->other, "cli-run.db", "SELECT count(*) FROM decisions"),
                     17);
    /* The run also names its log by where it is: the gate, run from another
     * folder, finds it (exit 1 for the open divergences, not 2). */
    char triage[PATH_MAX + 16];
    snprintf(triage, sizeof(triage), "%s/triage.json", w->root);
    ust_test_write_file(triage, "{\"accepted\": []}");
    char *gate = ust_sprintf("cd '%s' && '%s' gate --run ../elsewhere/cli-run.db"
                             " --triage '%s' >/dev/null 2>&1",
                             w->conf, getenv("UST_BIN"), triage);
    int status = system(gate);
    ust_free(gate);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    /* A plugin named on the command line without a '/' is a file here, not
     * a name for the dynamic loader's search path. */
    char target[PATH_MAX], link[PATH_MAX + 16];
    const char *build = getenv("UST_BUILD_DIR");
    snprintf(target, sizeof(target), "%s/src/plugins/legacy/understudy-legacy.so",
             build ? build : "build");
    snprintf(link, sizeof(link), "%s/legacy.so", w->other);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(run_elsewhere(w, "replay --config ../conf/config.json --log cli.db"
                                      " --run cli-run2.db --legacy legacy.so"),
                     0);
    assert_int_equal(query(w->other, "cli-run2.db", "SELECT count(*) FROM decisions"),
                     17);
}

/* Every output named on the command line gets the folders above it made
 * when missing (report's --out DIR itself too); a part of the path that is
 * a file is named in the error, exit 2, and nothing is written. */
static void test_outputs_get_their_missing_folders(void **state)
{
    paths_world *w = *state;
    char *args = ust_sprintf("log import --config ../conf/config.json --log e.db '%s'",
                             w->sample);
    assert_int_equal(run_elsewhere(w, args), 0);
    ust_free(args);
    char scenario[PATH_MAX];
    ust_test_source_path("scenarios/01-identical-retry.json", scenario);
    const char *made[][2] = {
        {"replay --config ../conf/config.json --log e.db --run r.db"
         " --divergences div/a/d.jsonl",
         "div/a/d.jsonl"},
        {"report --run r.db --out rep/a/b", "rep/a/b/index.html"},
        {"report --run r.db --out rep/a/b/", "rep/a/b/classes"},
        {"log export --log e.db --out exp/a/e.jsonl", "exp/a/e.jsonl"},
        {"log backup --log e.db --out bak/a/b.db", "bak/a/b.db"},
        {"gen --config ../conf/config.json --events 5 --seed 1 --out gen/a/g.jsonl"
         " --truth truth/a/t.jsonl",
         "truth/a/t.jsonl"},
        {"drive --config ../conf/config.json --render ren/a/r.jsonl", "ren/a/r.jsonl"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(made); i++) {
        args = i == 6 ? ust_sprintf("%s '%s'", made[i][0], scenario)
                      : ust_strdup(made[i][0]);
        if (run_elsewhere(w, args) != 0)
            fail_msg("%s: failed", args);
        ust_free(args);
        if (!exists(w->other, made[i][1]))
            fail_msg("%s: not written", made[i][1]);
    }
    assert_true(exists(w->other, "gen/a/g.jsonl"));

    /* A file where a folder must be. */
    char plain[PATH_MAX + 16];
    snprintf(plain, sizeof(plain), "%s/plain", w->other);
    ust_test_write_file(plain, "not a folder\n");
    char *cmd = ust_sprintf("cd '%s' && '%s' report --run r.db --out plain/rep"
                            " >/dev/null 2>'%s/err.txt'",
                            w->other, getenv("UST_BIN"), w->root);
    int status = system(cmd);
    ust_free(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    char err_path[PATH_MAX + 16];
    snprintf(err_path, sizeof(err_path), "%s/err.txt", w->root);
    char *err = ust_test_read_file(err_path);
    ust_test_expect_in(err, "plain/rep: cannot create the directory: plain exists and "
                            "is not a directory");
    free(err);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, ust_test_tmpdir_teardown)
    const struct CMUnitTest tests[] = {
        T(test_the_loader_resolves_against_the_config_folder),
        T(test_the_binary_uses_the_config_paths_from_anywhere),
        T(test_command_line_paths_are_the_working_directory_s),
        T(test_outputs_get_their_missing_folders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
