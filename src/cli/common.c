/* What every subcommand does the same way: the config, the extra-argument
 * check, an output file. */
#include "cli/cli.h"

#include <understudy/alloc.h>

#include <string.h>

int ust_cli_load_config(const char *cmd, const char *path, int secrets,
                        ust_config **cfg)
{
    *cfg = NULL;
    if (path == NULL)
        return ust_cli_fail(
            ust_sprintf("%s: --config FILE is required (try --help)", cmd), NULL);
    char *err = NULL;
    if (ust_config_load(path, cfg, &err) != 0)
        return ust_cli_fail(err, "cannot load the config");
    if (secrets && ust_config_load_secrets(*cfg, &err) != 0) {
        ust_config_free(*cfg);
        *cfg = NULL;
        return ust_cli_fail(err, "secrets missing");
    }
    return UST_EXIT_OK;
}

int ust_cli_no_more_args(const char *cmd, int argc, char **argv, int optind_now)
{
    if (optind_now < argc)
        return ust_cli_fail(
            ust_sprintf("%s: unexpected argument \"%s\"", cmd, argv[optind_now]), NULL);
    return UST_EXIT_OK;
}

FILE *ust_cli_open_output(const char *path, const char *mode)
{
    if (strcmp(path, "-") == 0)
        return stdout;
    FILE *f = fopen(path, mode);
    if (f == NULL)
        ust_cli_fail(ust_sprintf("%s: cannot open for writing", path), NULL);
    return f;
}

void ust_cli_close_output(FILE *f)
{
    if (f != NULL && f != stdout)
        fclose(f);
}

int ust_cli_bad_option(const char *cmd, const char *option, const char *usage)
{
    fprintf(stderr, "understudy %s: unknown or incomplete option \"%s\"\n", cmd,
            option);
    return ust_cli_usage(usage, 0);
}
