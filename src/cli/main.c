#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/version.h>

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: understudy <command> [options]\n"
    "\n"
    "commands:\n"
    "  serve --config FILE                     record live callbacks, durably\n"
    "  log import|export|verify|stats|prune   the append-only event log\n"
    "  replay --config FILE --log DB --run DB  feed a log to legacy and candidate\n"
    "  report --run DB --out DIR [--triage F]  HTML, Markdown and JSONL of a run\n"
    "  gate --run DB --triage FILE             may the candidate take over?\n"
    "  show --run DB SEQ                       one event: request, decisions, diff\n"
    "  drive --config FILE --render|--check|--target ... SCENARIO...\n"
    "                                          scripted traffic and its outcome\n"
    "  config doc | show --config FILE         the config's key tables; its effective\n"
    "                                          values, defaults filled in\n"
    "  gen --config FILE --events N --seed S --out OUT.jsonl [--truth FILE]\n"
    "                                          synthetic traffic, deterministic\n"
    "\n"
    "  --version                               understudy's version\n"
    "\n"
    "Every command has --help. Exit status: 0 success, 1 a finding (tampering,\n"
    "divergences not triaged), 2 a usage or input error.\n";

int ust_cli_fail(char *msg, const char *fallback)
{
    fprintf(stderr, "understudy: %s\n", msg ? msg : fallback);
    ust_free(msg);
    return UST_EXIT_USAGE;
}

int ust_cli_usage(const char *text, int asked)
{
    FILE *to = asked ? stdout : stderr;
    /* Every usage ends with the version, so a pasted --help says which. */
    fprintf(to, "%s\nunderstudy %s\n", text, ust_version());
    return asked ? UST_EXIT_OK : UST_EXIT_USAGE;
}

/* Each command is handed its own argv: argv[0] is the command's name. */
static const struct {
    const char *name;
    int (*run)(int, char **);
} commands[] = {
    {"log", ust_cli_log},   {"serve", ust_cli_serve}, {"replay", ust_cli_replay},
    {"gen", ust_cli_gen},   {"drive", ust_cli_drive}, {"report", ust_cli_report},
    {"gate", ust_cli_gate}, {"show", ust_cli_show},   {"config", ust_cli_config},
};

int main(int argc, char **argv)
{
    /* Not a command: the host runs its isolated plugins so (host.h). */
    if (argc >= 2 && strcmp(argv[1], UST_PLUGIN_SHIM_COMMAND) == 0)
        return ust_plugin_shim_main(argc, argv);
    if (argc < 2)
        return ust_cli_usage(usage, 0);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        strcmp(cmd, "help") == 0)
        return ust_cli_usage(usage, 1);
    if (strcmp(cmd, "--version") == 0) {
        printf("understudy %s\n", ust_version());
        return UST_EXIT_OK;
    }
    for (size_t i = 0; i < UST_ARRAY_SIZE(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "understudy: unknown command \"%s\"\n", cmd);
    return ust_cli_usage(usage, 0);
}
