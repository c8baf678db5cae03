/* Shared helpers for the cmocka suites: temporary directories that are
 * removed afterwards, paths of the source tree and of the built binary and
 * plugins, running the binary, and the plugin host suites' state store. */
#ifndef UST_TEST_SUPPORT_H
#define UST_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* mkdtemp under $TMPDIR (or /tmp); the path is static storage per call site. */
void ust_test_tmpdir(char out[PATH_MAX]);

void ust_test_rmdir(const char *dir);

/* A file of the source tree, e.g. "tests/data/config.json". */
void ust_test_source_path(const char *rel, char out[PATH_MAX]);

/* A test plugin of this build: tests/plugins/<name>.so. */
void ust_test_fixture_path(const char *name, char out[PATH_MAX]);

/* The reference plugin name ("legacy" or "candidate") of this build. */
void ust_test_plugin_path(const char *name, char out[PATH_MAX]);

void ust_test_write_file(const char *path, const char *text);

/* A whole file's text (malloc'd). */
char *ust_test_read_file(const char *path);

/* Runs the understudy binary with args (shell words), its output (stdout and
 * stderr) going to dir/cli.out; the exit status, the output in *out
 * (malloc'd) unless out is NULL. */
int ust_test_run_cli(const char *dir, const char *args, char **out);

/* ---- dt2: what the event, config and wire suites check the same way ---- */
#include <understudy/config.h>
#include <understudy/event.h>

#include <sqlite3.h>

/* The config parsed from text, name the file its messages say; the test
 * fails if it does not parse. */
ust_config *ust_test_parse_config(const char *text, const char *name);
/* The first row sql gives on the database at path, its first n columns as
 * ints in out; the test fails if there is no row. */
void ust_test_sql_row(const char *path, const char *sql, int *out, int n);
/* Runs sql on the database at path (to break it on purpose, or fix it); the
 * test fails with SQLite's message if it fails. */
void ust_test_sql(const char *path, const char *sql);
/* What derive gives and the plugin wire carries of an event alike: its id,
 * type, target status, intent and amount are these. */
void ust_test_expect_event(const ust_event *ev, const char *event_id,
                           const char *event_type, const char *target_status,
                           const char *intent, int64_t amount);
/* ---- end of dt2 ---------------------------------------------------------- */

/* ---- Failing the Nth allocation (SQLite's test_malloc) -------------------
 * After ust_test_alloc_fail(n, persist) the next n allocations through the
 * seam (ust_malloc, ust_realloc and jansson's, on any thread) succeed, then
 * one is refused (persist 0) or every later one is (persist 1), until
 * ust_test_alloc_restore(), which returns how many were refused: a run that
 * refused none had all the memory it asked for. The usual loop runs an
 * operation for n = 0, 1, 2, ... until such a run. */
#include <stdatomic.h>
#include <understudy/alloc.h>

void ust_test_alloc_fail(long n, int persist);
long ust_test_alloc_restore(void);
/* One turn of that loop for ust_json_loads of text, every allocation from
 * the nth on refused: 1 when none was (the tree parsed, and freed), else 0,
 * having checked that the refusal came back as no tree and jansson's
 * out-of-memory error. */
int ust_test_json_loads_failing(const char *text, long n);
/* ---- end of failing the Nth allocation ---------------------------------- */

/* ---- what several suites set up the same way --------------------------- */

#include <understudy/alloc.h>
#include <understudy/config.h>
#include <understudy/drive.h>
#include <understudy/log.h>

/* The signing secrets the test configs name: Stripe's as given, and the
 * standard-webhooks one every suite shares. */
void ust_test_set_secrets(const char *stripe);

/* The config at path with its secrets; the test fails saying why if not. */
ust_config *ust_test_load_config(const char *path);

/* For a suite whose state is a calloc'd struct that begins with its
 * temporary directory (char[PATH_MAX]): removes the one, frees the other. */
int ust_test_tmpdir_teardown(void **state);

/* The log file at path verifies, with checked events. */
void ust_test_expect_log_verifies(const char *path, int64_t checked);

/* The scenario rendered from start_us, appended to log. */
void ust_test_append_scenario(ust_log *log, const ust_config *cfg,
                              const ust_scenario *sc, int64_t start_us);

/* The log at log_path replayed under cfg through the reference legacy and
 * candidate plugins into the run at run_path; a failure fails the test. */
#include <understudy/runner.h>

void ust_test_replay_reference(const ust_config *cfg, const char *log_path,
                               const char *run_path);

/* n generated events (seed, 2 days from 2026-11-23, the default mix) under
 * cfg written to out, and their truth to truth (NULL: none). */
#include <understudy/codec.h>
#include <understudy/gen.h>

void ust_test_generate(const ust_config *cfg, uint64_t seed, int64_t n, const char *out,
                       const char *truth);

/* The generated events in file imported, as gen.jsonl, under cfg into a
 * new log at log_path. */
void ust_test_import_generated(const ust_config *cfg, const char *file,
                               const char *log_path);

/* text (NULL: none) holds want, or the test fails naming it and showing the
 * start of text. */
void ust_test_expect_in(const char *text, const char *want);

/* text holds no bad. */
void ust_test_expect_not_in(const char *text, const char *bad);

/* got (malloc'd, freed here) is want, or the test fails showing both. */
void ust_test_expect_str(char *got, const char *want);

/* ---- dt1: a child whose output the test reads, a formatted command --- */
#include <understudy/alloc.h>

#include <unistd.h>

/* Forks; in the child (0 returned) fd (1 or 2) is the write end of a new
 * pipe, in the parent (the pid returned) *read_fd is its read end. */
pid_t ust_test_fork_piped(int fd, int *read_fd);

/* ust_test_run_cli with its arguments formatted as printf does fmt. */
__attribute__((format(printf, 3, 4))) int ust_test_cli(const char *dir, char **out,
                                                       const char *fmt, ...);

/* Neither the run database at run (its meta: the plugins' names and
 * versions) nor its report (index.html, summary.md) holds secret, such as
 * a service url's password: the report is made into dir/report. */
void ust_test_report_holds_no(const char *dir, const char *run, const char *log,
                              const char *secret);

#endif
