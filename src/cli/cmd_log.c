/* understudy log import|export|verify|stats|prune|backup */
#include "cli/cli.h"

#include <understudy/alloc.h>
#include <understudy/capture.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/config.h>
#include <understudy/error.h>
#include <understudy/log.h>
#include <understudy/runner.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: understudy log <action> [options]\n"
    "\n"
    "  import --config FILE [--log DB] [--progress|--quiet] [FILE.jsonl|-]\n"
    "      derive and append every line of the file, all or nothing; progress\n"
    "      (count, rate, ETA from the share of the file read) on stderr when it\n"
    "      is a terminal or with --progress, none with --quiet\n"
    "  import --format har|goreplay --config FILE [--log DB] [FILE|-]\n"
    "      a HAR 1.2 file or GoReplay's file output (with its responses), all or\n"
    "      nothing; requests to no route are skipped and counted\n"
    "  export --log DB [--derived] [--out FILE] [--redact --config FILE]\n"
    "         [--answers RUN.answers]\n"
    "      write the log as interchange JSONL (stdout by default); --redact\n"
    "      masks the config's \"redact\" fields in bodies and its\n"
    "      capture.mask_headers (see docs/capture.md); --answers writes the\n"
    "      answer serve --respond upstream recorded as each event's \"response\"\n"
    "  verify --log DB [--json] [--anchor SEQ:HASH]\n"
    "      check the hash chain; exit 1 and name the first bad seq if broken;\n"
    "      --anchor: a head seq and hash kept outside the log (from an earlier\n"
    "      verify or backup) the chain must still pass through\n"
    "  stats --log DB [--json]\n"
    "      counts per route, provider and signature status; span; size on disk\n"
    "  prune --log DB --before TIME\n"
    "      remove events that arrived before TIME (RFC 3339); recorded, verifiable\n"
    "  backup --log DB --out FILE\n"
    "      a consistent copy of the log in one new file (safe while serve runs),\n"
    "      then verified; exit 1 if the copy's chain is broken\n"
    "\n"
    "--log defaults to the config's \"log\" when --config is given.\n";

struct log_opts {
    const char *config, *log, *out, *before, *anchor, *format, *answers;
    int json, derived, redact, help;
    int progress_flag; /* import only */
};

static int parse_opts(int argc, char **argv, struct log_opts *o)
{
    memset(o, 0, sizeof(*o));
    const ust_cli_opt opts[] = {UST_CLI_STR("config", &o->config),
                                UST_CLI_STR("log", &o->log),
                                UST_CLI_STR("out", &o->out),
                                UST_CLI_STR("before", &o->before),
                                UST_CLI_STR("anchor", &o->anchor),
                                UST_CLI_STR("format", &o->format),
                                UST_CLI_STR("answers", &o->answers),
                                UST_CLI_FLAG("json", &o->json),
                                UST_CLI_FLAG("derived", &o->derived),
                                UST_CLI_FLAG("redact", &o->redact),
                                UST_CLI_FLAG("help", &o->help),
                                UST_CLI_PROGRESS_FLAGS(&o->progress_flag),
                                UST_CLI_END};
    /* No usage here: the caller shows it after any error, and --help only
     * counts once every option parsed. */
    return ust_cli_parse("log", argc, argv, opts, NULL) != UST_CLI_GO_ON ? -1 : 0;
}

static int open_log(const char *path, unsigned flags, ust_log **log)
{
    char *err = NULL;
    if (ust_log_open(path, flags, log, &err) != 0)
        return ust_cli_fail(err, "cannot open the log");
    return 0;
}

static int cmd_import(struct log_opts *o, int nargs, char **args)
{
    if (o->config == NULL || nargs > 1)
        return ust_cli_fail(NULL,
                            "log import: need --config FILE and at most one input "
                            "file (try --help)");
    ust_import_format format = UST_IMPORT_JSONL;
    if (o->format != NULL && ust_import_format_parse(o->format, &format) != 0)
        return ust_cli_fail(NULL,
                            "log import: --format expects jsonl, har or goreplay");
    char *err = NULL;
    ust_config *cfg = NULL;
    if (ust_config_load(o->config, &cfg, &err) != 0)
        return ust_cli_fail(err, "cannot load the config");
    const char *path = o->log ? o->log : cfg->log_path;
    int rc = UST_EXIT_USAGE;
    ust_log *log = NULL;
    FILE *in = NULL;
    const char *label = nargs == 1 ? args[0] : "-";
    if (path == NULL) {
        ust_cli_fail(NULL, "log import: no --log given and the config has no \"log\"");
        goto out;
    }
    if (ust_config_load_secrets(cfg, &err) != 0 ||
        ust_config_load_mask_key(cfg, &err) != 0) {
        ust_cli_fail(err, "secrets missing");
        goto out;
    }
    in = strcmp(label, "-") == 0 ? stdin : fopen(label, "rb");
    if (in == NULL) {
        ust_cli_fail(ust_sprintf("%s: cannot open for reading", label), NULL);
        goto out;
    }
    if (open_log(path, UST_LOG_CREATE, &log) != 0)
        goto out;
    int64_t n = 0, skipped = 0;
    if (format != UST_IMPORT_JSONL) {
        if (ust_log_import_capture(log, cfg, in, label, format, &n, &skipped, &err) !=
            0) {
            ust_cli_fail(err, "import failed");
            fprintf(stderr, "understudy: nothing from %s was appended\n", label);
            goto out;
        }
        printf("imported %lld events from %s into %s; %lld skipped (no route for"
               " their path)\n",
               (long long)n, label, path, (long long)skipped);
        rc = UST_EXIT_OK;
        goto out;
    }
    ust_cli_progress progress;
    ust_progress sink =
        ust_cli_progress_start(&progress, "import", "events", o->progress_flag);
    if (ust_cli_progress_end(
            &progress, ust_log_import_progress(log, cfg, in, label, &sink, &n, &err),
            &err, "import failed") != 0) {
        fprintf(stderr, "understudy: nothing from %s was appended\n", label);
        goto out;
    }
    printf("imported %lld events from %s into %s\n", (long long)n, label, path);
    rc = UST_EXIT_OK;
out:
    if (in != NULL && in != stdin)
        fclose(in);
    ust_log_close(log);
    ust_config_free(cfg);
    return rc;
}

/* log export --redact: each row's request as capture and reports redact it,
 * and its recorded answer the same way (headers and body). */
static int redact_record(ust_log_record *rec, void *cfg)
{
    int rc = ust_capture_redact(cfg, &rec->req);
    ust_response *a = &rec->response;
    if (rc != 0 || a->status == 0)
        return rc;
    ust_request held = {.headers = a->headers,
                        .n_headers = a->n_headers,
                        .body = a->body,
                        .body_len = a->body_len};
    rc = ust_capture_redact(cfg, &held);
    a->headers = held.headers;
    a->n_headers = held.n_headers;
    a->body = held.body;
    a->body_len = held.body_len;
    return rc;
}

/* What log export changes in each row it writes, never in the log. */
typedef struct export_edits {
    ust_config *redact;             /* --redact: the config, or NULL */
    ust_answers_responses *answers; /* --answers, or NULL */
    char **err;
} export_edits;

static int edit_record(ust_log_record *rec, void *arg)
{
    export_edits *e = arg;
    /* An answer the row holds already (imported with it) is the evidence;
     * the service's answer only fills a row that has none. */
    if (e->answers != NULL && rec->response.status == 0) {
        int rc = ust_answers_response_get(e->answers, rec->seq, &rec->response, e->err);
        if (rc < 0)
            return rc;
    }
    return e->redact != NULL ? redact_record(rec, e->redact) : 0;
}

static int cmd_export(struct log_opts *o)
{
    ust_config *cfg = NULL;
    char *err = NULL;
    if (o->redact && o->config == NULL)
        return ust_cli_fail(NULL, "log export: --redact needs --config FILE (its"
                                  " \"redact\" and capture.mask_headers)");
    if (o->redact && ust_cli_load_config("log export", o->config, 0, &cfg) != 0)
        return UST_EXIT_USAGE;
    if (cfg != NULL && ust_config_load_mask_key(cfg, &err) != 0) {
        ust_config_free(cfg);
        return ust_cli_fail(err, "masking key missing");
    }
    export_edits edits = {cfg, NULL, &err};
    if (o->answers != NULL &&
        ust_answers_responses_open(o->answers, &edits.answers, &err) != 0) {
        ust_config_free(cfg);
        return ust_cli_fail(err, "log export: --answers");
    }
    ust_log *log = NULL;
    if (open_log(o->log, UST_LOG_READONLY, &log) != 0) {
        ust_answers_responses_close(edits.answers);
        ust_config_free(cfg);
        return UST_EXIT_USAGE;
    }
    FILE *out = o->out ? ust_cli_open_file(o->out, "wb") : stdout;
    int rc = UST_EXIT_USAGE;
    if (out == NULL)
        ; /* said */
    else if (ust_log_export_edited(log, out, o->derived,
                                   cfg || edits.answers ? edit_record : NULL, &edits,
                                   &err) != 0)
        ust_cli_fail(err, "export failed");
    else if (fflush(out) != 0)
        ust_cli_fail(NULL, "export: write failed");
    else
        rc = UST_EXIT_OK;
    if (out != NULL && out != stdout && fclose(out) != 0 && rc == UST_EXIT_OK)
        rc = ust_cli_fail(NULL, "export: write failed");
    ust_answers_responses_close(edits.answers);
    ust_log_close(log);
    ust_config_free(cfg);
    return rc;
}

/* A PostgreSQL log's streams, one line each (verified through its head,
 * or up to the bad row). */
static void print_stream_heads(json_t *streams, int ok)
{
    size_t i;
    json_t *s;
    json_array_foreach(streams, i, s)
    {
        const char *hash = json_string_value(json_object_get(s, "head_hash"));
        printf("stream %lld (%s): %lld events%s, head seq %lld, head hash %s\n",
               (long long)json_integer_value(json_object_get(s, "stream")),
               json_string_value(json_object_get(s, "label")),
               (long long)json_integer_value(json_object_get(s, "events")),
               ok ? "" : " verified",
               (long long)json_integer_value(json_object_get(s, "head_seq")),
               hash ? hash : "");
    }
}

static int cmd_verify(struct log_opts *o)
{
    long long anchor_seq = 0;
    char anchor_hex[UST_SHA256_HEX_LEN + 2] = "";
    int used = 0;
    if (o->anchor != NULL && (sscanf(o->anchor, "%lld:%65[0-9a-fA-F]%n", &anchor_seq,
                                     anchor_hex, &used) != 2 ||
                              o->anchor[used] != '\0' || anchor_seq <= 0 ||
                              strlen(anchor_hex) != UST_SHA256_HEX_LEN))
        return ust_cli_fail(NULL, "log verify: --anchor needs SEQ:HASH, a head seq and"
                                  " its 64-digit hash as verify prints them");
    ust_log *log = NULL;
    if (open_log(o->log, UST_LOG_READONLY, &log) != 0)
        return UST_EXIT_USAGE;
    ust_log_verify_result res;
    char *err = NULL;
    int rc = ust_log_verify_anchored(log, anchor_seq, anchor_hex, &res, &err);
    ust_log_close(log);
    if (rc != 0 && rc != UST_ETAMPER)
        return ust_cli_fail(err, "verify failed");
    ust_free(err);
    if (o->json) {
        json_t *j =
            json_pack("{s:b,s:I,s:I,s:s,s:I,s:I}", "ok", rc == 0, "checked",
                      (json_int_t)res.checked, "head_seq", (json_int_t)res.head_seq,
                      "head_hash", res.head_hash, "prunes", (json_int_t)res.n_prunes,
                      "pruned_through", (json_int_t)res.pruned_through);
        if (rc != 0) {
            json_object_set_new(j, "bad_seq", json_integer(res.bad_seq));
            json_object_set_new(j, "reason", json_string(res.reason));
        }
        if (res.streams != NULL)
            json_object_set(j, "streams", res.streams);
        json_dumpf(j, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(j);
    } else if (rc == 0) {
        printf("ok: %lld events verified, head seq %lld, head hash %s\n",
               (long long)res.checked, (long long)res.head_seq,
               res.head_hash[0] ? res.head_hash : "(empty log)");
        if (res.n_prunes > 0)
            printf("pruned: %lld prune(s), events through seq %lld removed\n",
                   (long long)res.n_prunes, (long long)res.pruned_through);
        if (anchor_seq > 0)
            printf("anchor: the chain passes through seq %lld with hash %s\n",
                   anchor_seq, anchor_hex);
    } else {
        printf("TAMPERED: seq %lld: %s\n", (long long)res.bad_seq, res.reason);
    }
    if (!o->json)
        print_stream_heads(res.streams, rc == 0);
    json_decref(res.streams);
    return rc == 0 ? UST_EXIT_OK : UST_EXIT_FINDING;
}

static int cmd_backup(struct log_opts *o)
{
    if (o->out == NULL)
        return ust_cli_fail(NULL, "log backup: --out FILE is required (a new file)");
    ust_log *log = NULL;
    if (open_log(o->log, UST_LOG_READONLY, &log) != 0)
        return UST_EXIT_USAGE;
    char *err = NULL;
    if (ust_cli_output_parent(o->out) != UST_EXIT_OK) {
        ust_log_close(log);
        return UST_EXIT_USAGE;
    }
    int rc = ust_log_backup(log, o->out, &err);
    ust_log_close(log);
    if (rc != 0)
        return ust_cli_fail(err, "backup failed");
    /* The copy is checked on its own: it is what a restore would use. */
    if (open_log(o->out, UST_LOG_READONLY, &log) != 0)
        return UST_EXIT_USAGE;
    ust_log_verify_result res;
    rc = ust_log_verify(log, &res, &err);
    ust_log_close(log);
    if (rc != 0 && rc != UST_ETAMPER)
        return ust_cli_fail(err, "backup written, but it cannot be verified");
    ust_free(err);
    if (rc != 0) {
        printf("TAMPERED: seq %lld: %s (in the copy %s)\n", (long long)res.bad_seq,
               res.reason, o->out);
        return UST_EXIT_FINDING;
    }
    printf("backed up %s to %s: %lld events verified, head seq %lld, head hash %s\n",
           o->log, o->out, (long long)res.checked, (long long)res.head_seq,
           res.head_hash[0] ? res.head_hash : "(empty log)");
    return UST_EXIT_OK;
}

static void print_counts(const char *title, json_t *obj)
{
    printf("%s:\n", title);
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        printf("  %-28s %lld\n", k, (long long)json_integer_value(v));
    }
}

static int cmd_stats(struct log_opts *o)
{
    ust_log *log = NULL;
    if (open_log(o->log, UST_LOG_READONLY, &log) != 0)
        return UST_EXIT_USAGE;
    json_t *s = NULL;
    char *err = NULL;
    int rc = ust_log_stats(log, &s, &err);
    ust_log_close(log);
    if (rc != 0)
        return ust_cli_fail(err, "stats failed");
    if (o->json) {
        json_dumpf(s, stdout, JSON_COMPACT | JSON_SORT_KEYS);
        putchar('\n');
    } else {
        json_t *first = json_object_get(s, "first_received_at");
        json_t *last = json_object_get(s, "last_received_at");
        printf("events:        %lld (seq %lld..%lld)\n",
               (long long)json_integer_value(json_object_get(s, "events")),
               (long long)json_integer_value(json_object_get(s, "first_seq")),
               (long long)json_integer_value(json_object_get(s, "last_seq")));
        printf("first arrival: %s\n",
               json_is_string(first) ? json_string_value(first) : "-");
        printf("last arrival:  %s\n",
               json_is_string(last) ? json_string_value(last) : "-");
        printf("bytes on disk: %lld\n",
               (long long)json_integer_value(json_object_get(s, "bytes_on_disk")));
        printf("prunes:        %lld (%lld events removed)\n",
               (long long)json_integer_value(json_object_get(s, "prunes")),
               (long long)json_integer_value(json_object_get(s, "pruned_events")));
        print_counts("by route", json_object_get(s, "routes"));
        print_counts("by provider", json_object_get(s, "providers"));
        print_counts("by signature", json_object_get(s, "signatures"));
        size_t i;
        json_t *st;
        json_array_foreach(json_object_get(s, "streams"), i, st)
        {
            if (i == 0)
                printf("streams:\n");
            printf("  %-4lld %-28s %lld events, opened %s\n",
                   (long long)json_integer_value(json_object_get(st, "stream")),
                   json_string_value(json_object_get(st, "label")),
                   (long long)json_integer_value(json_object_get(st, "events")),
                   json_string_value(json_object_get(st, "opened_at")));
        }
    }
    json_decref(s);
    return UST_EXIT_OK;
}

static int cmd_prune(struct log_opts *o)
{
    int64_t before;
    if (o->before == NULL || ust_time_parse(o->before, &before) != 0)
        return ust_cli_fail(NULL, "log prune: --before needs an RFC 3339 time such as "
                                  "2026-11-01T00:00:00Z");
    ust_log *log = NULL;
    if (open_log(o->log, 0, &log) != 0)
        return UST_EXIT_USAGE;
    int64_t n = 0;
    char *err = NULL;
    int rc = ust_log_prune(log, before, ust_time_wall_us(), &n, &err);
    ust_log_close(log);
    if (rc != 0)
        return ust_cli_fail(err, "prune failed");
    printf("pruned %lld events that arrived before %s\n", (long long)n, o->before);
    return UST_EXIT_OK;
}

int ust_cli_log(int argc, char **argv)
{
    if (argc < 2)
        return ust_cli_usage(usage, 0);
    const char *action = argv[1];
    struct log_opts o;
    if (strcmp(action, "--help") == 0 || strcmp(action, "-h") == 0)
        return ust_cli_usage(usage, 1);
    if (parse_opts(argc - 1, argv + 1, &o) != 0)
        return ust_cli_usage(usage, 0);
    if (o.help)
        return ust_cli_usage(usage, 1);
    int nargs = argc - 1 - optind;
    char **args = argv + 1 + optind;
    if (strcmp(action, "import") == 0)
        return cmd_import(&o, nargs, args);
    if (o.progress_flag != 0)
        return ust_cli_fail(
            ust_sprintf("log %s: --progress and --quiet are for log import", action),
            NULL);
    if (nargs > 0)
        return ust_cli_fail(
            ust_sprintf("log %s: unexpected argument \"%s\"", action, args[0]), NULL);
    if (strcmp(action, "export") != 0 && strcmp(action, "verify") != 0 &&
        strcmp(action, "stats") != 0 && strcmp(action, "prune") != 0 &&
        strcmp(action, "backup") != 0) {
        fprintf(stderr, "understudy log: unknown action \"%s\"\n", action);
        return ust_cli_usage(usage, 0);
    }
    if (o.log == NULL)
        return ust_cli_fail(ust_sprintf("log %s: --log DB is required", action), NULL);
    if (strcmp(action, "export") == 0)
        return cmd_export(&o);
    if (strcmp(action, "verify") == 0)
        return cmd_verify(&o);
    if (strcmp(action, "stats") == 0)
        return cmd_stats(&o);
    if (strcmp(action, "backup") == 0)
        return cmd_backup(&o);
    return cmd_prune(&o);
}
