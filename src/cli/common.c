/* What every subcommand does the same way: its options, the config, the
 * extra-argument check, an output file, the progress of long work. */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/dir.h>
#include <understudy/host.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the library has to say: warnings and errors to our stderr. */
static void cli_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level >= UST_LOG_WARN)
        fprintf(stderr, "understudy: %s\n", msg);
}

/* A plugin child's stderr line, prefixed and within its budget, to ours: one
 * write, so lines from two children do not interleave. */
static void plugin_stderr(const char *text, size_t len, void *data)
{
    (void)data;
    while (len > 0) {
        ssize_t w = write(2, text, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        text += w;
        len -= (size_t)w;
    }
}

/* The command's plugins count into one object, which lives as long as the
 * process (a command loads one config). */
static ust_plugin_counters *plugin_counters(void)
{
    static ust_plugin_counters *counters;
    if (counters == NULL)
        counters = ust_plugin_counters_new(plugin_stderr, NULL);
    return counters;
}

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
    (*cfg)->legacy.log = (*cfg)->candidate.log = cli_log;
    ust_plugin_counters *counters = plugin_counters();
    if (counters == NULL) {
        ust_config_free(*cfg);
        *cfg = NULL;
        return ust_cli_fail(NULL, "out of memory");
    }
    (*cfg)->legacy.counters = (*cfg)->candidate.counters = counters;
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

int ust_cli_output_parent(const char *path)
{
    char *err = NULL;
    if (ust_mkdir_parent(path, &err) != 0)
        return ust_cli_fail(err, "cannot create the output's directory");
    return UST_EXIT_OK;
}

FILE *ust_cli_open_file(const char *path, const char *mode)
{
    if (ust_cli_output_parent(path) != UST_EXIT_OK)
        return NULL;
    FILE *f = fopen(path, mode);
    if (f == NULL)
        ust_cli_fail(
            ust_sprintf("%s: cannot open for writing (%s)", path, strerror(errno)),
            NULL);
    return f;
}

FILE *ust_cli_open_output(const char *path, const char *mode)
{
    return strcmp(path, "-") == 0 ? stdout : ust_cli_open_file(path, mode);
}

void ust_cli_close_output(FILE *f)
{
    if (f != NULL && f != stdout)
        fclose(f);
}

FILE *ust_cli_appended_open(ust_cli_appended *a, const char *path)
{
    a->path = path;
    a->created = strcmp(path, "-") != 0 && access(path, F_OK) != 0;
    a->f = ust_cli_open_output(path, "ab");
    return a->f;
}

void ust_cli_appended_close(ust_cli_appended *a, int failed)
{
    if (a->f == NULL)
        return;
    struct stat st;
    int empty = a->f != stdout && fflush(a->f) == 0 && fstat(fileno(a->f), &st) == 0 &&
                st.st_size == 0;
    ust_cli_close_output(a->f);
    a->f = NULL;
    if (failed && a->created && empty)
        unlink(a->path);
}

/* ---- options ------------------------------------------------------------ */

/* getopt's value for table entry i; below it are --help, --progress and
 * --quiet. */
#define OPT_HELP 0x1ff
#define OPT_VAL(i) (0x200 + (int)(i))
#define MAX_OPTS 32 /* a command's table is far smaller */

int ust_cli_parse(const char *cmd, int argc, char **argv, const ust_cli_opt *opts,
                  const char *usage)
{
    struct option longopts[MAX_OPTS + 1];
    int *progress = NULL;
    size_t n = 0;
    for (size_t i = 0; opts[i].kind != UST_CLI_LAST && n + 3 < MAX_OPTS; i++) {
        if (opts[i].kind == UST_CLI_PROGRESS) {
            progress = opts[i].text;
            longopts[n++] =
                (struct option){"progress", no_argument, NULL, UST_CLI_OPT_PROGRESS};
            longopts[n++] =
                (struct option){"quiet", no_argument, NULL, UST_CLI_OPT_QUIET};
            continue;
        }
        int has_arg = opts[i].kind == UST_CLI_VALUE ? required_argument : no_argument;
        longopts[n++] = (struct option){opts[i].name, has_arg, NULL, OPT_VAL(i)};
    }
    if (usage != NULL)
        longopts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        if (c == UST_CLI_OPT_PROGRESS || c == UST_CLI_OPT_QUIET) {
            if (ust_cli_progress_flag(cmd, c, progress) != 0)
                return UST_EXIT_USAGE;
            continue;
        }
        if (c == OPT_HELP)
            return ust_cli_usage(usage, 1);
        if (c < OPT_VAL(0)) {
            fprintf(stderr, "understudy %s: unknown or incomplete option \"%s\"\n", cmd,
                    argv[optind - 1]);
            return usage ? ust_cli_usage(usage, 0) : UST_EXIT_USAGE;
        }
        const ust_cli_opt *o = &opts[c - OPT_VAL(0)];
        if (o->kind == UST_CLI_SET) {
            *(int *)o->text = 1;
            continue;
        }
        if (o->text != NULL)
            *(const char **)o->text = optarg;
        if (o->conv != NULL && o->conv(optarg, o->out) != 0)
            return ust_cli_fail(NULL, o->bad);
    }
    return UST_CLI_GO_ON;
}

int ust_cli_conv_count(const char *value, void *out)
{
    char *end;
    long long n = strtoll(value, &end, 10);
    *(int64_t *)out = n;
    return *end != '\0' || n < 0;
}

int ust_cli_conv_u64(const char *value, void *out)
{
    char *end;
    *(uint64_t *)out = strtoull(value, &end, 10);
    return *end != '\0';
}

int ust_cli_conv_double(const char *value, void *out)
{
    *(double *)out = atof(value);
    return 0;
}

int ust_cli_conv_duration(const char *value, void *out)
{
    return ust_duration_parse(value, out) != 0;
}

int ust_cli_conv_time(const char *value, void *out)
{
    return ust_time_parse(value, out) != 0;
}

/* ---- progress ------------------------------------------------------------ */

/* A terminal's line is redrawn at most 4 times a second; lines into a file
 * or a pipe (--progress) come one every 5 s, so a log stays readable. */
#define PROGRESS_TTY_US 250000
#define PROGRESS_LINES_US 5000000

int ust_cli_progress_flag(const char *cmd, int c, int *flag)
{
    if (*flag != 0 && *flag != c)
        return ust_cli_fail(
            ust_sprintf("%s: --progress and --quiet contradict each other: give one",
                        cmd),
            NULL);
    *flag = c;
    return 0;
}

/* n with a comma between groups of three digits: "412,000". */
static void grouped(int64_t n, char out[32])
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%lld", (long long)(n < 0 ? 0 : n));
    int o = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

/* A duration: "7 s", "3 min 20 s", "2 h 5 min"; fractional seconds under 10 s
 * when precise is set ("0.4 s"). */
static void duration(double s, int precise, char out[32])
{
    long long whole = (long long)(s + 0.5);
    if (precise && s < 10)
        snprintf(out, 32, "%.1f s", s);
    else if (whole < 60)
        snprintf(out, 32, "%lld s", whole);
    else if (whole < 3600)
        snprintf(out, 32, "%lld min %lld s", whole / 60, whole % 60);
    else
        snprintf(out, 32, "%lld h %lld min", whole / 3600, whole % 3600 / 60);
}

static void draw(ust_cli_progress *p, int64_t now)
{
    double elapsed = (double)(now - p->start_us) / 1e6;
    char count[32], rate[32], eta[48] = "";
    grouped(p->done, count);
    grouped(elapsed > 0 ? (int64_t)((double)p->done / elapsed + 0.5) : 0, rate);
    if (p->fraction > 0 && p->fraction < 1) {
        char left[32];
        /* Rounded up: "ETA 0 s" while work remains would be a promise. */
        double left_s = elapsed * (1 - p->fraction) / p->fraction;
        duration((double)(int64_t)left_s + (left_s > (double)(int64_t)left_s), 0, left);
        snprintf(eta, sizeof(eta), ", ETA %s", left);
    }
    fprintf(stderr, "%s%s: %s %s (%s/s)%s%s", p->show == 1 ? "\r" : "", p->what, count,
            p->unit, rate, eta, p->show == 1 ? "\033[K" : "\n");
    fflush(stderr);
    p->drawn = p->show == 1;
}

/* Called up to once a unit of work: a clock read, and a draw when due. */
static void tell(void *data, int64_t done, double fraction)
{
    ust_cli_progress *p = data;
    p->done = done;
    p->fraction = fraction;
    if (p->show == 0)
        return;
    int64_t now = ust_time_mono_us();
    if (now < p->next_us)
        return;
    p->next_us = now + (p->show == 1 ? PROGRESS_TTY_US : PROGRESS_LINES_US);
    draw(p, now);
}

ust_progress ust_cli_progress_start(ust_cli_progress *p, const char *what,
                                    const char *unit, int flag)
{
    memset(p, 0, sizeof(*p));
    p->what = what;
    p->unit = unit;
    p->quiet = flag == UST_CLI_OPT_QUIET;
    int tty = isatty(2);
    if (flag == UST_CLI_OPT_PROGRESS || (flag == 0 && tty))
        p->show = tty ? 1 : 2;
    p->start_us = ust_time_mono_us();
    p->next_us = p->start_us + (p->show == 1 ? PROGRESS_TTY_US : PROGRESS_LINES_US);
    p->fraction = -1;
    return (ust_progress){tell, p};
}

int ust_cli_progress_end(ust_cli_progress *p, int rc, char **err, const char *fallback)
{
    if (p->drawn)
        fputs("\r\033[K", stderr);
    p->drawn = 0;
    if (rc != 0) {
        char *msg = *err;
        *err = NULL;
        return ust_cli_fail(msg, fallback);
    }
    if (p->show == 0)
        return UST_EXIT_OK;
    double elapsed = (double)(ust_time_mono_us() - p->start_us) / 1e6;
    char count[32], took[32], rate[32];
    grouped(p->done, count);
    duration(elapsed, 1, took);
    grouped(elapsed > 0 ? (int64_t)((double)p->done / elapsed + 0.5) : 0, rate);
    fprintf(stderr, "%s: %s %s in %s (%s/s)\n", p->what, count, p->unit, took, rate);
    fflush(stderr);
    return UST_EXIT_OK;
}
