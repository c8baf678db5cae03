/* understudy config doc|show */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: understudy config doc\n"
    "       understudy config show --config FILE\n"
    "\n"
    "doc: prints docs/config.md's key tables, generated from the config's rows,\n"
    "and the event's field tables (docs/interchange.md, protocol.md), generated\n"
    "from UST_EVENT_FIELDS, each between \"<!-- config doc: NAME -->\" and\n"
    "\"<!-- end config doc: NAME -->\"; sh scripts/config-doc.sh BIN puts them in\n"
    "the pages.\n"
    "show: loads FILE as every command does and prints its effective config as\n"
    "JSON, every default filled in; a secret is shown as the name of its\n"
    "environment variable, never its value (the variables are not read).\n"
    "Exit 0 when printed, 2 when FILE is refused (the message says why).\n";

static int print_owned(char *text)
{
    if (text == NULL)
        return ust_cli_fail(NULL, "out of memory");
    fputs(text, stdout);
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] != '\n')
        fputc('\n', stdout);
    ust_free(text);
    return UST_EXIT_OK;
}

static int config_doc(int argc, char **argv)
{
    const ust_cli_opt opts[] = {UST_CLI_END};
    int rc = ust_cli_parse("config doc", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if ((rc = ust_cli_no_more_args("config doc", argc, argv, optind)) != UST_EXIT_OK)
        return rc;
    char *text = NULL;
    (void)ust_config_doc(&text);
    return print_owned(text);
}

static int config_show(int argc, char **argv)
{
    const char *path = NULL;
    const ust_cli_opt opts[] = {UST_CLI_STR("config", &path), UST_CLI_END};
    int rc = ust_cli_parse("config show", argc, argv, opts, usage);
    if (rc != UST_CLI_GO_ON)
        return rc;
    if ((rc = ust_cli_no_more_args("config show", argc, argv, optind)) != UST_EXIT_OK)
        return rc;
    ust_config *cfg = NULL;
    if ((rc = ust_cli_load_config("config show", path, 0, &cfg)) != UST_EXIT_OK)
        return rc;
    char *text = NULL;
    (void)ust_config_show(cfg, &text);
    ust_config_free(cfg);
    return print_owned(text);
}

int ust_cli_config(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "doc") == 0)
        return config_doc(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "show") == 0)
        return config_show(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return ust_cli_usage(usage, 1);
    return ust_cli_usage(usage, 0);
}
