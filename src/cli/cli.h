/* Subcommands of the understudy executable. Each parses its flags and calls
 * module functions; exit status 0 success, 1 a finding, 2 usage or input. */
#ifndef UST_CLI_H
#define UST_CLI_H

#include <stdio.h>

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

#endif
