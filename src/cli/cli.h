/* Subcommands of the understudy executable. Each parses its flags and calls
 * module functions; exit status 0 success, 1 a finding, 2 usage or input. */
#ifndef UST_CLI_H
#define UST_CLI_H

#include <stdio.h>

#include <understudy/config.h>
#include <understudy/progress.h>

#include <getopt.h>
#include <stdint.h>

enum { UST_EXIT_OK = 0, UST_EXIT_FINDING = 1, UST_EXIT_USAGE = 2 };

int ust_cli_log(int argc, char **argv);
int ust_cli_serve(int argc, char **argv);
int ust_cli_replay(int argc, char **argv);
int ust_cli_report(int argc, char **argv);
int ust_cli_gate(int argc, char **argv);
int ust_cli_drive(int argc, char **argv);
int ust_cli_gen(int argc, char **argv);
int ust_cli_show(int argc, char **argv);
int ust_cli_config(int argc, char **argv);

/* Prints "understudy: <msg>" to stderr and frees msg (may be NULL, then
 * fallback is used). Returns UST_EXIT_USAGE. */
int ust_cli_fail(char *msg, const char *fallback);

/* Writes usage to stdout (help asked) or stderr (usage error), then a last
 * line "understudy VERSION". */
int ust_cli_usage(const char *text, int asked);

/* Loads the config at path (required), and its secrets when asked; on
 * failure prints why and returns UST_EXIT_USAGE with *cfg NULL. */
int ust_cli_load_config(const char *cmd, const char *path, int secrets,
                        ust_config **cfg);

/* ---- options ------------------------------------------------------------ */

/* A command declares its options in a table (ending with UST_CLI_END) and
 * ust_cli_parse runs getopt on it; --help needs no entry. */
typedef enum ust_cli_opt_kind {
    UST_CLI_LAST = 0, /* the end of the table */
    UST_CLI_VALUE,    /* --name VALUE */
    UST_CLI_SET,      /* --name: *(int *)text = 1 */
    UST_CLI_PROGRESS, /* --progress and --quiet, into *(int *)text */
} ust_cli_opt_kind;

typedef struct ust_cli_opt {
    const char *name; /* without the dashes */
    ust_cli_opt_kind kind;
    /* UST_CLI_VALUE: where the value's text goes (a const char *; NULL when
     * only conv's result is wanted); else the int the kind sets. */
    void *text;
    /* UST_CLI_VALUE: when set, converts the value into *out as it is given;
     * nonzero is a usage error saying bad. */
    int (*conv)(const char *value, void *out);
    void *out;
    const char *bad;
} ust_cli_opt;

/* clang-format off */
#define UST_CLI_STR(name, to) {(name), UST_CLI_VALUE, (to), NULL, NULL, NULL}
#define UST_CLI_CONV(name, conv, out, bad) {(name), UST_CLI_VALUE, NULL, (conv), (out), (bad)}
#define UST_CLI_FLAG(name, to) {(name), UST_CLI_SET, (to), NULL, NULL, NULL}
#define UST_CLI_PROGRESS_FLAGS(to) {"progress", UST_CLI_PROGRESS, (to), NULL, NULL, NULL}
#define UST_CLI_END {NULL, UST_CLI_LAST, NULL, NULL, NULL, NULL}
/* The files serve and replay both take, into their options struct o. */
#define UST_CLI_RUN_FILES(o)                                                  \
    UST_CLI_STR("log", &(o).log_path), UST_CLI_STR("run", &(o).run_path),     \
    UST_CLI_STR("legacy", &(o).legacy_path),                                  \
    UST_CLI_STR("candidate", &(o).candidate_path)
/* clang-format on */

/* What ust_cli_parse returns when the command goes on. */
#define UST_CLI_GO_ON (-1)

/* Parses the options of argv (argv[0] is the command's name) by the table,
 * up to the first operand, which optind then indexes. Returns UST_CLI_GO_ON,
 * or the status the command exits with: UST_EXIT_OK after --help showed
 * usage on stdout, UST_EXIT_USAGE after saying what is wrong (an unknown
 * option, or one without its value, also shows usage on stderr). A NULL
 * usage leaves both to the caller: the table then declares --help itself. */
int ust_cli_parse(const char *cmd, int argc, char **argv, const ust_cli_opt *opts,
                  const char *usage);

/* Converters for UST_CLI_CONV: a count >= 0 (int64_t), a number (uint64_t),
 * a decimal (double, atof's reading), a duration such as 7d and an RFC 3339
 * time (int64_t microseconds). */
int ust_cli_conv_count(const char *value, void *out);
int ust_cli_conv_u64(const char *value, void *out);
int ust_cli_conv_double(const char *value, void *out);
int ust_cli_conv_duration(const char *value, void *out);
int ust_cli_conv_time(const char *value, void *out);

/* UST_EXIT_USAGE, with a message, when arguments remain after the options. */
int ust_cli_no_more_args(const char *cmd, int argc, char **argv, int optind_now);
/* An output file named on the command line: the folders above it are made
 * when missing (ust_mkdir_parent), as report makes its --out DIR, then it
 * is opened. NULL (with a message) when either fails. */
FILE *ust_cli_open_file(const char *path, const char *mode);
/* The same, "-" being stdout. */
FILE *ust_cli_open_output(const char *path, const char *mode);
/* Only the folders above path (for an output a module opens itself):
 * UST_EXIT_OK, or UST_EXIT_USAGE with a message. */
int ust_cli_output_parent(const char *path);
void ust_cli_close_output(FILE *f);
/* The divergences file of serve and replay, appended to: opened as
 * ust_cli_open_output does, and noted when this open created it. Closed by
 * ust_cli_appended_close: when the command failed, a file this open created
 * and nothing was written to is removed (a failed start leaves no file). */
typedef struct ust_cli_appended {
    FILE *f;
    const char *path;
    int created;
} ust_cli_appended;
FILE *ust_cli_appended_open(ust_cli_appended *a, const char *path);
void ust_cli_appended_close(ust_cli_appended *a, int failed);

/* ---- progress of long work (log import, replay, report, gen) ----------- */

/* The values getopt gives --progress and --quiet (UST_CLI_PROGRESS_FLAGS). */
enum { UST_CLI_OPT_PROGRESS = 0x100, UST_CLI_OPT_QUIET };

/* The help text for the two, the same in every command's usage. */
#define UST_CLI_PROGRESS_HELP                                                          \
    "Progress (count, rate, ETA) goes to stderr when it is a terminal, or with\n"      \
    "--progress (then a line every 5 s, and one at the end); --quiet shows none,\n"    \
    "nor the closing summary on stderr. Errors are always shown.\n"

typedef struct ust_cli_progress {
    const char *what, *unit; /* "import", "events" */
    int show;                /* 0 no, 1 in place on a terminal, 2 a line at a time */
    int quiet;
    int drawn; /* a line in place is on the terminal */
    int64_t start_us, next_us, done;
    double fraction;
} ust_cli_progress;

/* Records option c (UST_CLI_OPT_PROGRESS or _QUIET) in *flag; both given is
 * a usage error (message, UST_EXIT_USAGE), else 0. */
int ust_cli_progress_flag(const char *cmd, int c, int *flag);
/* Shows progress on stderr when flag is --progress, or it is neither flag
 * and stderr is a terminal; --quiet shows nothing. Returns the callback for
 * the library's options. */
ust_progress ust_cli_progress_start(ust_cli_progress *p, const char *what,
                                    const char *unit, int flag);
/* Clears a line left in place. After work that succeeded (rc 0), the closing
 * line (the count, the time taken and the rate) and UST_EXIT_OK; else says
 * *err (then freed, *err NULL) or fallback as ust_cli_fail does and returns
 * UST_EXIT_USAGE. err is a pointer so that the work's call can be an
 * argument: *err is read after it. */
int ust_cli_progress_end(ust_cli_progress *p, int rc, char **err, const char *fallback);

#endif
