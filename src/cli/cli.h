/* Subcommands of the understudy executable. Each parses its flags and calls
 * module functions; exit status 0 success, 1 a finding, 2 usage or input. */
#ifndef UST_CLI_H
#define UST_CLI_H

#include <stdio.h>

#include <understudy/config.h>

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

#endif
