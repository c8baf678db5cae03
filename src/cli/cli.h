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

/* Prints "understudy: <msg>" to stderr and frees msg (may be NULL, then
 * fallback is used). Returns UST_EXIT_USAGE. */
int ust_cli_fail(char *msg, const char *fallback);

/* Writes usage to stdout (help asked) or stderr (usage error). */
int ust_cli_usage(const char *text, int asked);

/* Loads the config at path (required), and its secrets when asked; on
 * failure prints why and returns UST_EXIT_USAGE with *cfg NULL. */
int ust_cli_load_config(const char *cmd, const char *path, int secrets,
                        ust_config **cfg);
/* Says which option was not understood, shows usage; UST_EXIT_USAGE. */
int ust_cli_bad_option(const char *cmd, const char *option, const char *usage);
/* UST_EXIT_USAGE, with a message, when arguments remain after the options. */
int ust_cli_no_more_args(const char *cmd, int argc, char **argv, int optind_now);
/* "-" is stdout; NULL (with a message) when the file cannot be opened. */
FILE *ust_cli_open_output(const char *path, const char *mode);
void ust_cli_close_output(FILE *f);

/* ---- progress of long work (log import, replay, report, gen) ----------- */

/* --progress and --quiet, for a command's getopt table. */
enum { UST_CLI_OPT_PROGRESS = 0x100, UST_CLI_OPT_QUIET };
#define UST_CLI_PROGRESS_OPTIONS                                                       \
    {"progress", no_argument, NULL, UST_CLI_OPT_PROGRESS},                             \
    {                                                                                  \
        "quiet", no_argument, NULL, UST_CLI_OPT_QUIET                                  \
    }

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
 * and stderr is a terminal; --quiet shows nothing. */
void ust_cli_progress_start(ust_cli_progress *p, const char *what, const char *unit,
                            int flag);
/* The callback for the library's options. */
ust_progress ust_cli_progress_sink(ust_cli_progress *p);
/* Clears a line left in place; after work that succeeded (ok), the closing
 * line: the count, the time taken and the rate. */
void ust_cli_progress_end(ust_cli_progress *p, int ok);

#endif
