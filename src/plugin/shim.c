/* The child side of an isolated .so, understudy's hidden subcommand: a
 * process of its own, exec'd by the host, that loads the library and speaks
 * the protocol on stdin/stdout (its init and hello JSON lines, then binary
 * frames: frame.h), with the state store reached through the parent. A
 * crash here takes only this process down. */
#include "plugin/frame.h"
#include "plugin/kind.h"
#include "plugin/store_remote.h"
#include "plugin/wire.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>
#include <understudy/priority.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each message is flushed as it is written (here and ust__frame_fwrite):
 * decisions held back to share a write would be lost with the process if the
 * plugin crashed on a later event, and the host would blame that crash on
 * the wrong event. */
static void say(FILE *out, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text != NULL)
        fprintf(out, "%s\n", text);
    ust_free(text);
    fflush(out);
}

/* The shim's own log lines (its plugin's warnings and errors) go to its
 * stderr, which the host reads and shows with the plugin's name. */
static void shim_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level >= UST_LOG_WARN)
        fprintf(stderr, "understudy: %s\n", msg);
}

int ust_plugin_shim_main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    /* A plugin that crashes ends this process by that very signal, which
     * the host reports ("killed by signal 11"): a handler installed before
     * main (a sanitizer's, in such a build) would make it an abort, later. */
    static const int crashes[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < UST_ARRAY_SIZE(crashes); i++)
        signal(crashes[i], SIG_DFL);
    const char *so_path = argv[2], *ns = argv[3];
    char name[16];
    snprintf(name, sizeof(name), "ust-%s", ns);
    ust_name_thread(name);
    FILE *in = stdin, *out = stdout;
    char *line = NULL;
    size_t cap = 0;
    json_error_t jerr;
    json_t *init = getline(&line, &cap, in) > 0 ? ust_json_loads(line, 0, &jerr) : NULL;
    /* Only understudy's host execs its shim, and it asks for the frames. */
    const char *framing = json_string_value(json_object_get(init, "framing"));
    if (init != NULL && (framing == NULL || strcmp(framing, "binary") != 0)) {
        json_decref(init);
        init = NULL;
    }
    ust_store *store =
        ust__store_remote(in, out, json_is_true(json_object_get(init, "state_empty")));
    ust_plugin *p = NULL;
    char *err = NULL;
    ust_plugin_config pc = {.path = (char *)so_path,
                            .config = json_object_get(init, "config"),
                            .log = shim_log};
    ust__plugin_start st = {
        .pc = &pc, .path = so_path, .ns = ns, .store = store, .no_identity = 1};
    if (init == NULL || store == NULL ||
        ust__plugin_open_kind(&ust__plugin_kind_inproc, &st, &p, &err) != 0) {
        say(out, json_pack("{s:s,s:s}", "type", "error", "message",
                           err ? err : "no init message asking for binary frames"));
        ust_free(err);
        json_decref(init);
        ust_store_close(store);
        free(line);
        return 3;
    }
    json_decref(init);
    /* It may be sent events ahead: replies it waits for are told apart from
     * the events that arrive first (see the remote store). */
    say(out, json_pack("{s:s,s:i,s:s,s:s,s:b,s:b,s:s}", "type", "hello", "protocol",
                       UST__PROTOCOL_VERSION, "name", ust_plugin_name(p), "version",
                       ust_plugin_version(p), "pipeline", 1, "raw_request",
                       ust_plugin_wants_raw_request(p), "framing", "binary"));
    ust__frame_out reply = {0};
    int rc = 0;
    for (;;) {
        size_t n = 0;
        unsigned char *frame = ust__store_remote_next_deferred(store, &n);
        if (frame == NULL && (frame = ust__frame_fread(in, &n)) == NULL) {
            /* The host refuses such an event before it sends it; another
             * host's build may not: said, rather than a quiet exit 0. */
            if (n > UST__MAX_LINE) {
                fprintf(stderr,
                        "understudy: a frame of %zu bytes from the host, over the"
                        " limit of %d bytes: the shim cannot read on\n",
                        n, UST__MAX_LINE);
                rc = 4;
            }
            break;
        }
        ust_event ev;
        ust_request req;
        ust_route route;
        if (ust__frame_event_parse(frame, n, &ev, &req, &route) != 0) {
            /* Without the seq it answers: the host restarts this child. */
            ust__frame_error(&reply, 0, 0, "bad decide frame");
            ust__frame_fwrite(out, &reply);
            ust__frame_event_release(&ev, &req);
            free(frame);
            continue;
        }
        ust_decision d;
        ust_plugin_decide(p, &ev, &req, &d);
        if (d.verdict == UST_VERDICT_ERROR) {
            ust__frame_error(&reply, 1, ev.seq, d.error ? d.error : "error");
        } else {
            size_t len = 0;
            uint32_t n_writes = 0;
            const unsigned char *writes =
                ust__store_remote_writes(store, &len, &n_writes);
            ust__frame_decision(&reply, ev.seq, &d, writes, len, n_writes);
        }
        ust__frame_fwrite(out, &reply);
        ust_decision_clear(&d);
        ust__frame_event_release(&ev, &req);
        free(frame);
    }
    ust__frame_out_free(&reply);
    ust_plugin_unload(p);
    ust_store_close(store);
    free(line);
    return rc;
}
