/* plugins.legacy and plugins.candidate, each a table of rows: a shared
 * library, a program, a service over HTTP or the recorded answers, and
 * what bounds it. */
#include <understudy/alloc.h>

#include "event/config_internal.h"

#include <string.h>

#define DOC(t, d, text) .doc_type = (t), .doc_default = (d), .doc = (text)
#define PLUGIN_AT(m) .off = offsetof(ust_plugin_config, m)

#define DEFAULT_PLUGIN_TIMEOUT_MS 1000
#define DEFAULT_PLUGIN_MAX_RSS_MB 512
#define URL_WHAT "an http:// or https:// URL"

static int http_url(const char *s)
{
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

static int proxy_url(const char *s)
{
    return http_url(s) || strncmp(s, "socks5://", 9) == 0 ||
           strncmp(s, "socks5h://", 10) == 0;
}

static const ust__key reset_rows[] = {
    {.key = "method",
     .type = UST__KEY_STRING,
     PLUGIN_AT(reset.method),
     .check = ust__nonempty,
     .what = "a non-empty string",
     DOC("non-empty string", "`\"POST\"`", "The method of the reset call.")},
    {.key = "url",
     .type = UST__KEY_STRING,
     .required = 1,
     PLUGIN_AT(reset.url),
     .check = http_url,
     .what = URL_WHAT,
     DOC("`http://` or `https://` URL", "**required**", "Where the reset call goes.")},
};
const ust__section ust__config_reset = UST__SECTION("plugins.*.reset", reset_rows);

static int parse_reset(ust__vctx *c, json_t *obj, void *base)
{
    ust_plugin_config *p = base;
    json_t *reset;
    int rc = ust__take_object(c, obj, "reset", &reset);
    if (rc != 0 || reset == NULL)
        return rc;
    size_t mark = ust__push_key(c, "reset");
    /* The url first: a reset is nothing without it. */
    if ((rc = ust__check_keys(c, reset, &ust__config_reset)) != 0 ||
        (rc = ust__take_row(c, reset, &reset_rows[1], p)) != 0 ||
        (rc = ust__take_row(c, reset, &reset_rows[0], p)) != 0)
        return rc;
    if (p->reset.method == NULL && (p->reset.method = ust_strdup("POST")) == NULL)
        return ust__nomem(c);
    ust__pop(c, mark);
    return 0;
}

/* "config", "recorded" and "verdicts" are read by parse_plugin itself,
 * before the rest: they decide what the rest may be. */
static const ust__key plugin_rows[] = {
    {.key = "path",
     .type = UST__KEY_STRING,
     PLUGIN_AT(path),
     .check = ust__nonempty,
     .what = "a non-empty string",
     DOC("non-empty string", "—",
         "A shared library exporting `ust_plugin_entry_v1` "
         "(`include/understudy/plugin.h`), from the config's folder. `--legacy SO` / "
         "`--candidate SO` (from the working directory) override it.")},
    {.key = "exec",
     .type = UST__KEY_STRINGS,
     PLUGIN_AT(exec),
     .off_n = SIZE_MAX,
     .need_items = 1,
     .check = ust__nonempty,
     .what = "a non-empty array of strings",
     .what_item = "a non-empty string",
     DOC("non-empty array of non-empty strings", "—",
         "The argv of a program speaking the JSON-lines protocol "
         "(`include/understudy/protocol.md`) on its stdin and stdout; `exec[0]` is "
         "looked up in `PATH` unless it contains a `/` (then it is a path from the "
         "config's folder), no shell is involved. The program runs in the config's "
         "folder.")},
    {.key = "config",
     .type = UST__KEY_PARSED,
     DOC("object", "`{}`",
         "The plugin's own configuration, handed to it as it is. **understudy does not "
         "check its keys**: a plugin that wants strictness must check them itself.")},
    {.key = "isolate",
     .type = UST__KEY_BOOL,
     .preset = 1,
     PLUGIN_AT(isolate),
     DOC("`true` / `false`", "legacy `false`, candidate `true`",
         "For a `path` plugin: run the library in a child process of its own "
         "(understudy's shim, exec'd) that speaks the same protocol, so a crash, a "
         "hang or a leak stays there. An `exec` plugin is always a child.")},
    {.key = "timeout_ms",
     .type = UST__KEY_POSINT,
     .def = DEFAULT_PLUGIN_TIMEOUT_MS,
     PLUGIN_AT(timeout_ms),
     DOC("positive integer", "`1000`",
         "A child-process plugin (isolated or `exec`) that takes longer for one "
         "decision gets an `error` decision and is restarted. Not applied to an "
         "in-process library.")},
    {.key = "max_rss_mb",
     .type = UST__KEY_POSINT,
     .def = DEFAULT_PLUGIN_MAX_RSS_MB,
     PLUGIN_AT(max_rss_mb),
     DOC("positive integer", "`512`",
         "A child-process plugin whose resident memory grows past this many MiB gets "
         "an `error` decision and is restarted.")},
    {.key = "url",
     .type = UST__KEY_STRING,
     PLUGIN_AT(url),
     .check = http_url,
     .what = URL_WHAT,
     DOC("`http://` or `https://` URL", "—",
         "A service over HTTP as the plugin (the `url` kind, "
         "[plugins.md](plugins.md#services-over-http-the-url-kind)): each event's "
         "original request goes to this URL followed by the request's target "
         "(`\"http://127.0.0.1:9000/prefix\"` gets `/prefix/webhooks/stripe?x=1`), and "
         "its answer is the decision. Its identity for the run (`legacy_sha256` / "
         "`candidate_sha256` in the run's meta) is the SHA-256 of this string: a run "
         "resumed against another URL is refused. For a `url` plugin `timeout_ms` "
         "bounds each whole call (connect, send, answer).")},
    {.key = "max_in_flight",
     .type = UST__KEY_POSINT,
     .def = 1,
     .max = 64,
     .max_what = "at most 64",
     PLUGIN_AT(max_in_flight),
     DOC("integer 1 to 64", "`1`",
         "(`url` only) How many events are sent at once. Above 1, events of different "
         "entities (the event's identity: Stripe's payment intent, an API call's key) "
         "overlap; each entity's events stay in seq order.")},
    {.key = "reset",
     .type = UST__KEY_PARSED,
     .parse = parse_reset,
     DOC("object `{\"method\": \"POST\", \"url\": \"…\"}`", "none",
         "(`url` only) Called once, before the first event, when a run starts from seq "
         "0 (a fresh run database: nothing journaled yet, cursor 0); never on resume. "
         "`method` defaults to `POST`, `url` is required. Anything but a 2xx answer "
         "refuses to start the run (exit 2).")},
    {.key = "recorded",
     .type = UST__KEY_BOOL,
     PLUGIN_AT(recorded),
     DOC("`true` / `false`", "`false`",
         "The legacy only: decide each event with the answer production gave it, kept "
         "in the log (imported in a capture's `\"response\"`). No program runs "
         "(`--legacy SO` runs that library in its place). An event without a recorded "
         "answer is an `error` decision `no recorded answer for this event`. "
         "[plugins.md](plugins.md#recorded-answers-as-the-legacy).")},
    {.key = "verdicts",
     .type = UST__KEY_PARSED,
     DOC("object of HTTP status to verdict", "`{}`",
         "How an answer without `Understudy-Verdict` is read: `{\"409\": "
         "\"duplicate\", \"404\": \"invalid\"}`. A status it does not name: 2xx "
         "`applied`, 409 `in_progress`, 422 `conflict`, other 4xx `invalid`, anything "
         "else an `error` decision. Verdicts: `applied`, `duplicate`, `rejected`, "
         "`conflict`, `in_progress`, `invalid`. Checked when the plugin starts.")},
    {.key = "proxy",
     .type = UST__KEY_STRING,
     PLUGIN_AT(proxy),
     .check = proxy_url,
     .what = "a proxy URL (http://, https://, socks5:// or socks5h://)",
     DOC("`http://`, `https://`, `socks5://` or `socks5h://` URL", "none",
         "(`url` only; also `serve --respond upstream`'s legacy) The proxy every call "
         "to the service goes through, `reset` included. Without it there is **no "
         "proxy**: `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` in the "
         "environment are never read (each recorded request, credentials and all, "
         "would otherwise go to whatever host they name). With it, every call goes "
         "through it, whatever `no_proxy` says.")},
    {.key = "resend_unknown",
     .type = UST__KEY_BOOL,
     PLUGIN_AT(resend_unknown),
     DOC("`true` / `false`", "`false`",
         "(`url` only) On resume, send again each event a killed run sent with no "
         "answer recorded (at most `max_in_flight` a side), instead of making it an "
         "`error` decision \"outcome unknown\". Only for a service that dedups on "
         "`Understudy-Seq` (answers a seq it already decided as the first time, as the "
         "example service does; what that takes: "
         "[plugins.md](plugins.md#services-over-http-the-url-kind)): the decision says "
         "`resent (resend_unknown): …` before its reason. "
         "[plugins.md](plugins.md#services-over-http-the-url-kind)")},
};
const ust__section ust__config_plugin = UST__SECTION("plugins", plugin_rows);

static int parse_plugin(ust__vctx *c, json_t *plugins, const char *key,
                        int isolate_default, ust_plugin_config *p)
{
    p->isolate = isolate_default;
    p->timeout_ms = DEFAULT_PLUGIN_TIMEOUT_MS;
    p->max_rss_mb = DEFAULT_PLUGIN_MAX_RSS_MB;
    p->max_in_flight = 1;
    json_t *obj = NULL;
    int rc = plugins != NULL ? ust__take_object(c, plugins, key, &obj) : 0;
    if (rc != 0)
        return rc;
    /* "config" is the plugin's own: passed on whole, its keys unchecked. */
    json_t *conf = obj != NULL ? json_object_get(obj, "config") : NULL;
    size_t mark = ust__push_key(c, key);
    if (obj != NULL && (rc = ust__check_keys(c, obj, &ust__config_plugin)) != 0)
        return rc;
    if (conf != NULL && !json_is_object(conf)) {
        ust__push_key(c, "config");
        return ust__bad(c, "an object");
    }
    /* A copy, so the plugin host may keep or change it freely. */
    p->config = conf != NULL ? json_deep_copy(conf) : json_object();
    if (p->config == NULL)
        return ust__nomem(c);
    if (obj == NULL) {
        ust__pop(c, mark);
        return 0;
    }
    if ((rc = ust__take_row(c, obj, ust__row(&ust__config_plugin, "recorded"), p)) != 0)
        return rc;
    /* Only production's answers were recorded: a candidate decides itself. */
    if (p->recorded && strcmp(key, "candidate") == 0) {
        ust__push_key(c, "recorded");
        return ust__bad(c,
                        "no \"recorded\" here: only the legacy can decide with the"
                        " recorded answers; give the candidate \"path\" or \"exec\"");
    }
    json_t *verdicts = json_object_get(obj, "verdicts");
    if (verdicts != NULL && !json_is_object(verdicts)) {
        ust__push_key(c, "verdicts");
        return ust__bad(c, "an object of HTTP status to verdict, such as"
                           " {\"404\": \"invalid\"}");
    }
    p->verdicts = json_incref(verdicts);
    int has_path = json_object_get(obj, "path") != NULL;
    int has_exec = json_object_get(obj, "exec") != NULL;
    int has_url = json_object_get(obj, "url") != NULL;
    if (has_path + has_exec + has_url + p->recorded != 1)
        return ust__bad(c,
                        "exactly one of \"path\" (a shared library), \"exec\" (argv),"
                        " \"url\" (an HTTP service) or \"recorded\": true (production's"
                        " recorded answers)");
    if ((rc = ust__take_rows(c, obj, &ust__config_plugin, p)) != 0)
        return rc;
    if (p->url == NULL &&
        (json_object_get(obj, "max_in_flight") != NULL || p->reset.url != NULL ||
         p->proxy != NULL || json_object_get(obj, "resend_unknown") != NULL))
        return ust__bad(c, "\"url\" beside \"max_in_flight\", \"reset\", \"proxy\" or "
                           "\"resend_unknown\" (the keys of a service over HTTP)");
    ust__pop(c, mark);
    return 0;
}

static int parse_legacy(ust__vctx *c, json_t *plugins, void *cfg)
{
    return parse_plugin(c, plugins, "legacy", 0, &((ust_config *)cfg)->legacy);
}

static int parse_candidate(ust__vctx *c, json_t *plugins, void *cfg)
{
    return parse_plugin(c, plugins, "candidate", 1, &((ust_config *)cfg)->candidate);
}

static const ust__key plugins_rows[] = {
    {.key = "legacy",
     .type = UST__KEY_PARSED,
     .parse = parse_legacy,
     DOC("object", "none", "The plugin whose decisions are production's.")},
    {.key = "candidate",
     .type = UST__KEY_PARSED,
     .parse = parse_candidate,
     DOC("object", "none", "The plugin under test.")},
};
const ust__section ust__config_plugins = UST__SECTION("plugins.", plugins_rows);

int ust__parse_plugins(ust__vctx *c, json_t *root, void *cfg)
{
    return ust__take_section(c, root, "plugins", &ust__config_plugins, cfg);
}

void ust__free_plugin(ust_plugin_config *p)
{
    ust_free(p->path);
    ust_free(p->url);
    json_decref(p->verdicts);
    ust__free_strv(p->exec);
    json_decref(p->config);
    ust_free(p->reset.method);
    ust_free(p->reset.url);
    ust_free(p->proxy);
}
