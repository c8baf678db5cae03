/* Replay: the log from the run's cursor to its end, each event to both
 * plugins. A transaction holds commit_every events' decisions, divergences,
 * plugin state and the cursor, so a killed replay resumes exactly where its
 * last commit left it. Divergence lines are written after their commit, so
 * the stream never shows what the run database does not hold. */
#include "runner/answers_reader.h"
#include "runner/journal.h"
#include "runner/legacy_from.h"
#include "runner/partition.h"
#include "runner/read_ahead.h"
#include "runner/run_write.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/clock.h>
#include <understudy/codec.h>
#include <understudy/compare.h>
#include <understudy/coverage.h>
#include <understudy/error.h>
#include <understudy/event.h>
#include <understudy/host.h>
#include <understudy/http_client.h>
#include <understudy/log.h>
#include <understudy/runner.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ust_runner {
    const ust_replay_opts *o;
    ust_log *log;
    ust__run_writer run;
    ust_store *store;
    ust_plugin *legacy, *candidate;
    ust__answers_reader answers; /* serve --respond legacy: the answered decisions */
    ust__legacy_from from;       /* replay --legacy-from: an earlier run's */
    char **lines;                /* divergence lines of the open transaction */
    size_t n_lines, cap_lines;
    char *redact;     /* the config's redact list as JSON text */
    char *coverage;   /* what the report counts coverage with (JSON) */
    char *legacy_url; /* without a legacy plugin: its url, the password removed */
    /* N_BATCHES: one being finished, one started, the others read ahead */
    struct batch *batches;
    /* The last event decided, and the last one committed (what the run
     * database says): a step that fails goes back to the second. */
    unsigned char last_hash[UST_SHA256_LEN], committed_hash[UST_SHA256_LEN];
    int64_t last_seq, committed_seq;
    /* The journal offered to plugins that send events out, and what its
     * commits need from the step under way. */
    ust_journal journal;
    ust_replay_stats *step_stats;
    unsigned long step_refused;
};

typedef struct ust_runner replay;

/* A run is one (config, legacy, candidate) triple: resuming it with other
 * parts would mix two experiments in one set of results. The meta key holds
 * value, or also (when not NULL) in a run made before. */
static int check_identity(replay *r, const char *key, const char *value,
                          const char *also, char **err)
{
    char *stored = NULL;
    int rc = ust__rundb_meta_get(r->run.db, key, &stored);
    if (rc < 0)
        return ust_errf(err, rc, "%s: cannot read run metadata", r->o->run_path);
    if (rc == 0)
        rc = ust__run_writer_meta(&r->run, key, value, err);
    else if (strcmp(stored, value) != 0 && (also == NULL || strcmp(stored, also) != 0))
        rc = ust_errf(err, UST_EINVAL,
                      "%s: this run was made with %s %s, not %s: use a new --run "
                      "database",
                      r->o->run_path, key, stored, value);
    else
        rc = 0;
    ust_free(stored);
    return rc;
}

static int record_identity(replay *r, char **err)
{
    /* The report has no config of its own: the run carries what it must mask. */
    json_t *redact = json_array();
    for (size_t i = 0; i < r->o->cfg->n_redact; i++)
        json_array_append_new(redact, json_string(r->o->cfg->redact[i]));
    r->redact = json_dumps(redact, JSON_COMPACT);
    json_decref(redact);
    if (r->redact == NULL)
        return UST_ENOMEM;
    /* And which routes take API requests, and the coverage params. */
    ust_coverage_params cov;
    if (ust_coverage_params_from_config(r->o->cfg, &cov) != 0)
        return UST_ENOMEM;
    r->coverage = ust_coverage_params_format(&cov);
    ust_coverage_params_clear(&cov);
    if (r->coverage == NULL)
        return UST_ENOMEM;
    /* The run database and the report name it: never with its password. */
    if (r->legacy == NULL && r->o->cfg->legacy.url != NULL &&
        (r->legacy_url = ust_http_url_shown(r->o->cfg->legacy.url)) == NULL)
        return UST_ENOMEM;
    struct {
        const char *key, *value;
    } parts[] = {
        /* Without a plugin (--respond upstream) the legacy is its url;
         * read from an earlier run, it is the one that run names. */
        {"legacy_name", r->from.db  ? r->from.name
                        : r->legacy ? ust_plugin_name(r->legacy)
                                    : "url"},
        {"legacy_version", r->from.db  ? r->from.version
                           : r->legacy ? ust_plugin_version(r->legacy)
                                       : r->legacy_url},
        {"legacy_sha256", r->from.db  ? r->from.sha256
                          : r->legacy ? ust_plugin_file_sha256(r->legacy)
                                      : ""},
        {"candidate_name", ust_plugin_name(r->candidate)},
        {"candidate_version", ust_plugin_version(r->candidate)},
        {"candidate_sha256", ust_plugin_file_sha256(r->candidate)},
        {"redact", r->redact},
        {"coverage", r->coverage},
    };
    int rc = check_identity(r, "config_sha256", r->o->cfg->hash, NULL, err);
    /* --legacy-from's; a run made before the places were left out of it
     * recorded it with them in, and is resumed as the same run. */
    if (rc == 0)
        rc = check_identity(r, "legacy_config_sha256", r->o->cfg->legacy_hash,
                            r->o->cfg->legacy_hash_with_places, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < UST_ARRAY_SIZE(parts); i++) {
        rc = check_identity(r, parts[i].key, parts[i].value, NULL, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The row at the cursor must be the one the run last decided: a run resumed
 * against another log (or a rewritten one) is refused. */
static int check_cursor_row(replay *r, int64_t cursor, char **err)
{
    if (cursor == 0)
        return 0;
    char *want = NULL;
    int rc = ust__rundb_meta_get(r->run.db, "cursor_hash", &want);
    if (rc <= 0)
        return ust_errf(err, UST_EINVAL, "%s: cursor without its hash", r->o->run_path);
    ust_log_cursor *cur = NULL;
    ust_log_record rec;
    memset(&rec, 0, sizeof(rec));
    rc = ust_log_cursor_open(r->log, cursor - 1, &cur, err);
    if (rc == 0)
        rc = ust_log_cursor_next(cur, &rec, err);
    char have[UST_SHA256_HEX_LEN + 1] = "";
    if (rc == 1 && rec.seq == cursor) {
        ust_hex_encode(rec.hash, UST_SHA256_LEN, have);
        memcpy(r->last_hash, rec.hash, UST_SHA256_LEN);
    }
    if (rc >= 0)
        rc =
            strcmp(have, want) == 0
                ? 0
                : ust_errf(err, UST_EINVAL,
                           "%s: the run stopped at seq %lld of another log (or the log "
                           "was changed): use a new --run database",
                           r->o->run_path, (long long)cursor);
    ust_log_record_clear(&rec);
    ust_log_cursor_close(cur);
    ust_free(want);
    return rc;
}

static int commit(replay *r, ust_replay_stats *stats, char **err)
{
    int rc = ust_store_flush(r->store, err);
    if (rc == 0 && r->last_seq > 0) {
        char hex[UST_SHA256_HEX_LEN + 1];
        ust_hex_encode(r->last_hash, UST_SHA256_LEN, hex);
        rc = ust__run_writer_cursor(&r->run, r->last_seq, hex, err);
    }
    if (rc == 0)
        rc = ust__run_writer_commit(&r->run, err);
    if (rc == 0) {
        r->committed_seq = r->last_seq;
        memcpy(r->committed_hash, r->last_hash, UST_SHA256_LEN);
    }
    for (size_t i = 0; i < r->n_lines; i++) {
        if (rc == 0 && r->o->divergences != NULL) {
            fputs(r->lines[i], r->o->divergences);
            fputc('\n', r->o->divergences);
        }
        ust_free(r->lines[i]);
    }
    if (rc == 0 && r->o->divergences != NULL)
        fflush(r->o->divergences);
    stats->divergences += rc == 0 ? (int64_t)r->n_lines : 0;
    r->n_lines = 0;
    return rc;
}

static int keep_line(replay *r, char *line)
{
    if (r->n_lines == r->cap_lines) {
        size_t cap = r->cap_lines ? r->cap_lines * 2 : 64;
        char **grown = ust_realloc(r->lines, cap * sizeof(*grown));
        if (grown == NULL) {
            ust_free(line);
            return UST_ENOMEM;
        }
        r->lines = grown;
        r->cap_lines = cap;
    }
    r->lines[r->n_lines++] = line;
    return 0;
}

/* The line of a divergence: its "fields" are the names of its "diff", one
 * comparison's (ust_compare_diff). */
static int write_divergence(replay *r, const ust_event *ev, const char *entity,
                            const ust_decision *l, const ust_decision *c,
                            const json_t *diff, char **err)
{
    const char *what = ev->event_type ? ev->event_type
                       : ev->route    ? ev->route->path
                                      : NULL;
    char *cls = ust_divergence_class(what, l, c);
    int follow_on = ust__run_writer_entity_diverged(&r->run, entity, err);
    char when[32];
    ust_time_format(ev->received_at_us, when);
    json_t *fields = ust_compare_diff_fields(diff);
    char *field_text = fields ? json_dumps(fields, JSON_COMPACT) : NULL;
    json_decref(fields);
    ust_jsonw w = {0};
    ust_jsonw_object(&w);
    ust_jsonw_member_int(&w, "seq", ev->seq);
    ust_jsonw_member_string(&w, "received_at", when);
    ust_jsonw_member_string(&w, "class", cls ? cls : "?");
    ust_jsonw_key(&w, "fields");
    ust_jsonw_raw(&w, field_text ? field_text : "[]",
                  field_text ? strlen(field_text) : 2);
    ust_jsonw_key(&w, "diff");
    ust_jsonw_value(&w, diff);
    ust_jsonw_member_string(&w, "entity", entity);
    ust_jsonw_key(&w, "follow_on");
    ust_jsonw_bool(&w, follow_on);
    ust_jsonw_member_string(&w, "route", ev->route ? ev->route->path : NULL);
    ust_jsonw_member_string(&w, "event_type", ev->event_type);
    ust_jsonw_key(&w, "legacy");
    ust_decision_write_json(&w, l);
    ust_jsonw_key(&w, "candidate");
    ust_decision_write_json(&w, c);
    ust_jsonw_end_object(&w);
    char *text = w.error == 0 ? w.buf : NULL;
    int rc = follow_on < 0 ? follow_on : text && field_text && cls ? 0 : UST_ENOMEM;
    if (rc == 0) {
        ust_run_divergence d = {ev->seq, ev->received_at_us, cls, field_text,
                                entity,  follow_on,          text};
        rc = ust__run_writer_divergence(&r->run, &d, err);
    }
    if (rc == 0)
        rc = keep_line(r, ust_strdup(text));
    ust_jsonw_free(&w);
    ust_free(field_text);
    ust_free(cls);
    return rc;
}

/* Events are decided in batches: the candidate gets a whole batch at once
 * (a plugin in a child process then costs one round trip per batch, not per
 * event); the legacy, the comparison and the writes follow event by event. */
#define BATCH 64

typedef struct item {
    ust_log_record rec;
    ust_event ev;
    int viewed, fed;
    int outside;    /* of another partition: passed over */
    ust_decision c; /* the candidate's */
    ust_decision l; /* a journaled legacy's, decided with its batch */
    int l_ready;
} item;

/* Under the config a row was derived with, the event is a view of the row's
 * stored fields, with no body to parse (parsing is most of the cost of
 * derivation); under another config it is derived again from the raw
 * request, as the design promises. */
static int prepare_item(replay *r, item *it, char **err)
{
    it->viewed = ust_event_view(r->o->cfg, &it->rec, &it->ev);
    int rc = it->viewed ? 0
                        : ust_event_derive_ex(r->o->cfg, &it->rec.req,
                                              UST_DERIVE_SKIP_SIGNATURE, &it->ev, err);
    if (rc != 0)
        return rc;
    it->ev.seq = it->rec.seq;
    /* The signature status is evidence from arrival; replay trusts the log,
     * which the chain protects, rather than secrets it may not have. */
    it->ev.sig = it->rec.sig;
    it->outside = !ust_partition_holds(&r->o->partition, r->o->cfg, &it->ev);
    it->fed = !it->outside && it->ev.route != NULL &&
              (it->ev.sig == UST_SIG_VERIFIED || it->ev.sig == UST_SIG_UNSIGNED);
    return 0;
}

static void release_item(item *it)
{
    ust_decision_clear(&it->c);
    ust_decision_clear(&it->l);
    if (!it->viewed)
        ust_event_clear(&it->ev);
    ust_log_record_clear(&it->rec);
    memset(it, 0, sizeof(*it));
}

static int finish(replay *r, item *it, ust_replay_stats *stats, char **err)
{
    if (it->outside) {
        /* Another runner's: only the cursor moves, so a partition's run
         * still decides up to its log's head. */
        stats->outside++;
        r->last_seq = it->rec.seq;
        memcpy(r->last_hash, it->rec.hash, UST_SHA256_LEN);
        return 0;
    }
    ust_event *ev = &it->ev;
    ust_decision l;
    memset(&l, 0, sizeof(l));
    const char *entity = ev->identity;
    json_t *diff = NULL;
    int rc = 0;
    if (it->fed) {
        int64_t t0 = ust_time_mono_us();
        /* Live with --respond legacy, the legacy decided on the request
         * path: its decision is read back, never made twice. */
        if (r->answers.db != NULL)
            rc = ust__answers_reader_get(&r->answers, ev->seq, &l, err);
        else if (r->from.db != NULL)
            rc = ust__legacy_from_get(&r->from, ev->seq, &l, err);
        else if (it->l_ready) {
            l = it->l;
            memset(&it->l, 0, sizeof(it->l));
        } else
            ust_plugin_decide_answered(r->legacy, ev, &it->rec.req, &it->rec.response,
                                       &l);
        int64_t took = ust_time_mono_us() - t0;
        stats->legacy_decide_us += took;
        if (r->o->legacy_decide != NULL)
            ust_histogram_observe(r->o->legacy_decide, took);
        entity = l.entity ? l.entity : it->c.entity ? it->c.entity : ev->identity;
        diff = ust_compare_diff(r->o->cfg, &l, &it->c);
        if (diff == NULL)
            rc = UST_ENOMEM;
        stats->fed++;
    } else {
        stats->not_fed++;
    }
    if (rc == 0)
        rc = ust__run_writer_decision(&r->run, ev, entity, it->fed,
                                      json_array_size(diff) > 0, &l, &it->c, err);
    if (rc == 0 && json_array_size(diff) > 0)
        rc = write_divergence(r, ev, entity, &l, &it->c, diff, err);
    json_decref(diff);
    ust_decision_clear(&l);
    r->last_seq = it->rec.seq;
    memcpy(r->last_hash, it->rec.hash, UST_SHA256_LEN);
    return rc;
}

/* A batch of events on its way: read and prepared, then the candidate's part
 * started (a plugin in a child process decides it while the previous batch
 * is finished here), then finished event by event. */
typedef struct batch {
    item items[BATCH];
    size_t n;
    const ust_event *evs[BATCH];
    const ust_request *reqs[BATCH];
    ust_decision *outs[BATCH];
    ust_decision *legacy_outs[BATCH];
    ust_plugin_batch pb;
    int64_t candidate_us; /* in its start and finish */
} batch;

/* Reads and prepares up to BATCH events; *more says whether the log may hold
 * more. 0 or an error. */
static int read_batch(replay *r, ust_log_cursor *cur, int64_t limit, batch *b,
                      int *more, char **err)
{
    int rc = 0;
    b->n = 0;
    while (b->n < BATCH &&
           (rc = ust_log_cursor_next(cur, &b->items[b->n].rec, err)) == 1 &&
           b->items[b->n].rec.seq <= limit &&
           (rc = prepare_item(r, &b->items[b->n], err)) == 0)
        b->n++;
    /* A full batch: there may be more. Otherwise the log ended (0), the
     * answers' limit was reached (1: that row waits for the next step), or
     * something failed. */
    *more = b->n == BATCH && rc == 0;
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (!b->items[i].fed)
            continue;
        b->evs[k] = &b->items[i].ev;
        b->reqs[k] = &b->items[i].rec.req;
        b->legacy_outs[k] = &b->items[i].l;
        b->outs[k++] = &b->items[i].c;
    }
    b->pb = (ust_plugin_batch){b->evs, b->reqs, k, 0, 0};
    return rc == 1 ? 0 : rc;
}

static void release_batch(batch *b)
{
    for (size_t i = 0; i <= b->n && i < BATCH; i++)
        release_item(&b->items[i]);
    b->n = 0;
}

/* Batches in turn: the one being finished, the one started beside it, and
 * two read ahead on the reading thread. */
#define N_BATCHES 4

/* What the reading thread reads from: a step's cursor, up to its limit. */
typedef struct reading {
    replay *r;
    ust_log_cursor *cur;
    int64_t limit;
} reading;

/* On the reading thread: the slot's earlier events are released there too
 * (their frees are as much work as their reads). */
static int fill_batch(void *ctx, size_t slot, int *more, char **err)
{
    reading *rd = ctx;
    batch *b = &rd->r->batches[slot];
    release_batch(b);
    return read_batch(rd->r, rd->cur, rd->limit, b, more, err);
}

static int journal_fresh(void *ctx, const char *side, char **err)
{
    return ust__journal_fresh(((replay *)ctx)->run.db, side, err);
}

static int journal_find(void *ctx, const char *side, int64_t seq, ust_http_result *a,
                        char **err)
{
    return ust__journal_find(((replay *)ctx)->run.db, side, seq, a, err);
}

static int journal_answer(void *ctx, const char *side, int64_t seq,
                          const ust_http_result *a, char **err)
{
    return ust__journal_answer(((replay *)ctx)->run.db, side, seq, a, err);
}

/* The intents, committed with everything decided so far: a journaled
 * plugin's batch starts only between batches (ust_runner_step), where the
 * step commits anyway, so this commit is one the step could have made. */
static int journal_intend(void *ctx, const char *side, const int64_t *seqs, size_t n,
                          char **err)
{
    replay *r = ctx;
    if (r->step_stats == NULL)
        return ust_errf(err, UST_EINVAL, "journal: no step under way");
    int rc = ust__journal_intend(r->run.db, side, seqs, n, err);
    if (rc == 0 && ust_alloc_failures() != r->step_refused)
        rc = ust_errf(err, UST_ENOMEM, "out of memory");
    if (rc == 0)
        rc = commit(r, r->step_stats, err);
    int brc = ust__run_writer_begin(&r->run, rc == 0 ? err : NULL);
    return rc != 0 ? rc : brc;
}

/* The earlier run must be of this log, legacy, config and partition; the
 * legacy, started only to be compared with the one it names, is stopped
 * again: no event goes to it. */
static int open_legacy_from(replay *r, char **err)
{
    const ust_replay_opts *o = r->o;
    char partition[32] = "";
    if (o->partition.n > 0)
        ust_partition_format(&o->partition, partition);
    int64_t head = 0;
    char head_hex[UST_SHA256_HEX_LEN + 1];
    int rc = ust_log_head(r->log, &head, head_hex, err);
    if (rc != 0)
        return rc;
    if (r->legacy == NULL)
        return ust_errf(err, UST_EINVAL,
                        "--legacy-from: the legacy must be a plugin, to be compared "
                        "with the earlier run's");
    ust__legacy_from_want want = {o->cfg->legacy_hash,
                                  o->cfg->legacy_hash_with_places,
                                  ust_plugin_name(r->legacy),
                                  ust_plugin_version(r->legacy),
                                  ust_plugin_file_sha256(r->legacy),
                                  partition,
                                  head,
                                  head_hex};
    rc = ust__legacy_from_open(&r->from, o->legacy_from, &want, err);
    ust_plugin_unload(r->legacy);
    r->legacy = NULL;
    return rc;
}

/* The run's two caches as the config sizes them (cache.state_mb,
 * cache.run_pages_mb); a config not parsed from a file leaves the defaults. */
static int size_caches(replay *r, char **err)
{
    const ust_config *cfg = r->o->cfg;
    if (cfg->cache.state_mb > 0)
        ust_store_set_cache_limit(r->store, (size_t)cfg->cache.state_mb << 20);
    if (cfg->cache.run_pages_mb <= 0)
        return 0;
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%lld;",
             (long long)cfg->cache.run_pages_mb * 1024);
    return ust__rundb_exec(r->run.db, sql, err);
}

size_t ust_runner_state_cache_bytes(const ust_runner *r)
{
    return ust_store_cache_bytes(r->store);
}

static int open_parts(replay *r, char **err)
{
    r->journal =
        (ust_journal){r, journal_fresh, journal_find, journal_intend, journal_answer};
    const ust_replay_opts *o = r->o;
    /* serve --respond upstream: the legacy is production's handler, whose
     * answers the responder recorded; the runner never calls it. */
    int answered_upstream = o->legacy_answers != NULL && o->cfg->legacy.url != NULL &&
                            o->legacy_path == NULL;
    int has_legacy =
        ust_plugin_configured(&o->cfg->legacy, o->legacy_path) || answered_upstream;
    int has_candidate = ust_plugin_configured(&o->cfg->candidate, o->candidate_path);
    if (!has_legacy || !has_candidate)
        return ust_errf(
            err, UST_EINVAL,
            "%s: no %s plugin: set plugins.%s.path (or exec, or url) or pass "
            "--%s",
            o->cfg->file, has_legacy ? "candidate" : "legacy",
            has_legacy ? "candidate" : "legacy", has_legacy ? "candidate" : "legacy");
    unsigned background = o->background ? UST_PLUGIN_BACKGROUND : 0;
    int rc;
    if ((rc = ust_log_open(o->log_path, UST_LOG_READONLY, &r->log, err)) != 0 ||
        (rc = ust__run_writer_open(&r->run, o->run_path, err)) != 0 ||
        (rc = ust_store_open(r->run.db, &r->store, err)) != 0 ||
        (rc = size_caches(r, err)) != 0 ||
        (!answered_upstream &&
         /* Started only to be checked (--legacy-from), it sends nothing. */
         (rc = ust_plugin_open_journaled(
              &o->cfg->legacy, o->legacy_path, "legacy", background, r->store,
              o->legacy_from ? NULL : &r->journal, &r->legacy, err)) != 0) ||
        /* Both must start and say hello before the first event: a candidate
         * that cannot start at all is a broken setup, not a fault to record
         * on every event (later restarts are tolerated: see child.c). */
        (rc = ust_plugin_open_journaled(&o->cfg->candidate, o->candidate_path,
                                        "candidate", background, r->store, &r->journal,
                                        &r->candidate, err)) != 0)
        return rc;
    /* A journal's intent must survive a power cut, not only a kill: each
     * commit then reaches the disk (one before each group of sends). */
    if ((ust_plugin_journaled(r->legacy) || ust_plugin_journaled(r->candidate)) &&
        (rc = ust__rundb_exec(r->run.db, "PRAGMA synchronous=FULL;", err)) != 0)
        return rc;
    if (o->legacy_from != NULL)
        return open_legacy_from(r, err);
    if (o->legacy_answers != NULL)
        return ust__answers_reader_open(&r->answers, o->legacy_answers, err);
    return 0;
}

static void close_parts(replay *r)
{
    /* The plugins first: an isolated one's link thread may still be
     * encoding events it was handed, which live in the batches. */
    ust_plugin_unload(r->legacy);
    ust_plugin_unload(r->candidate);
    for (size_t i = 0; i < r->n_lines; i++)
        ust_free(r->lines[i]);
    ust_free(r->lines);
    ust_free(r->batches);
    ust_free(r->redact);
    ust_free(r->coverage);
    ust_free(r->legacy_url);
    ust__answers_reader_close(&r->answers);
    ust__legacy_from_close(&r->from);
    ust_store_close(r->store);
    ust__run_writer_close(&r->run);
    ust_log_close(r->log);
}

static int record_log_head(replay *r, char **err)
{
    int64_t seq;
    char hex[UST_SHA256_HEX_LEN + 1];
    int rc = ust_log_head(r->log, &seq, hex, err);
    char num[32];
    snprintf(num, sizeof(num), "%lld", (long long)seq);
    /* log_path as given (the report shows it, the same from any folder);
     * log_file where it is, for gate and report run from another folder. */
    char *where = realpath(r->o->log_path, NULL);
    const char *meta[][2] = {{"log_head_seq", num},
                             {"log_head_sha256", hex},
                             {"log_path", r->o->log_path},
                             {"log_file", where ? where : r->o->log_path}};
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(meta); i++)
        rc = ust__run_writer_meta(&r->run, meta[i][0], meta[i][1], err);
    free(where); /* realpath's, from malloc */
    return rc;
}

int ust_runner_open(const ust_replay_opts *o, ust_runner **out, char **err)
{
    *out = NULL;
    replay *r = ust_calloc(1, sizeof(*r));
    if (r == NULL)
        return UST_ENOMEM;
    r->o = o;
    int fresh = access(o->run_path, F_OK) != 0;
    /* As in a step: an in-process plugin's jansson reads its config through
     * the host's allocator, and can come back with a key cut short. */
    unsigned long refused = ust_alloc_failures();
    int rc = open_parts(r, err);
    if (rc == 0)
        rc = ust__run_writer_begin(&r->run, err);
    if (rc == 0)
        rc = record_identity(r, err);
    int64_t cursor = 0;
    if (rc == 0)
        rc = ust__rundb_cursor(r->run.db, &cursor, err);
    if (rc == 0)
        rc = ust__partition_check_run(&r->run, &o->partition, o->cfg, cursor, err);
    if (rc == 0)
        rc = ust__legacy_from_check_run(&r->run, o->legacy_from, cursor, err);
    if (rc == 0)
        rc = check_cursor_row(r, cursor, err);
    if (rc == 0 && ust_alloc_failures() != refused)
        rc = ust_errf(err, UST_ENOMEM, "out of memory");
    if (rc == 0)
        rc = ust__run_writer_commit(&r->run, err);
    if (rc != 0) {
        if (r->run.db != NULL)
            ust__run_writer_rollback(&r->run);
        close_parts(r);
        ust_free(r);
        if (fresh) /* nothing that looks like a run (no plugin, no decision) */
            ust_db_remove(o->run_path);
        return rc;
    }
    r->last_seq = r->committed_seq = cursor;
    memcpy(r->committed_hash, r->last_hash, UST_SHA256_LEN);
    *out = r;
    return 0;
}

/* A step failed: its transaction is rolled back, and with it everything the
 * runner holds beyond the run database (the cursor it reached, divergence
 * lines not yet written, cached state, a child's own cache), so the next
 * step decides those events again exactly as a resumed run would. */
static void roll_back_step(replay *r)
{
    ust__run_writer_rollback(&r->run);
    r->last_seq = r->committed_seq;
    memcpy(r->last_hash, r->committed_hash, UST_SHA256_LEN);
    for (size_t i = 0; i < r->n_lines; i++)
        ust_free(r->lines[i]);
    r->n_lines = 0;
    ust_store_discard(r->store);
    ust_plugin_discard(r->legacy);
    ust_plugin_discard(r->candidate);
}

/* Whether a plugin this step calls reads the raw request (body, headers):
 * if none does, rows derived under this config are read without it. */
static int raw_request_wanted(const replay *r)
{
    int legacy_called = r->legacy != NULL && r->answers.db == NULL;
    return (legacy_called && ust_plugin_wants_raw_request(r->legacy)) ||
           ust_plugin_wants_raw_request(r->candidate);
}

int ust_runner_step(ust_runner *r, ust_replay_stats *stats, char **err)
{
    memset(stats, 0, sizeof(*stats));
    /* A plugin told "out of memory" by the host answers with an error (or a
     * jansson call quietly does less): nothing decided while an allocation
     * was refused is committed, the step fails and is resumed instead. */
    unsigned long refused = ust_alloc_failures();
    int64_t every = r->o->commit_every > 0 ? r->o->commit_every : 1000;
    stats->resumed_after = r->last_seq;
    r->step_stats = stats;
    r->step_refused = refused;
    /* A journaled legacy decides a batch at a time, started beside the
     * candidate's (where a commit is safe), finished before the comparisons. */
    int legacy_batched = r->answers.db == NULL && ust_plugin_journaled(r->legacy);
    int rc = ust__run_writer_begin(&r->run, err);
    ust_log_cursor *cur = NULL;
    /* A fresh cursor each step: it reads the log as of now, new commits too. */
    if (rc == 0)
        rc = raw_request_wanted(r)
                 ? ust_log_cursor_open(r->log, r->last_seq, &cur, err)
                 : ust_log_cursor_open_fields(r->log, r->last_seq, r->o->cfg->hash,
                                              &cur, err);
    if (rc == 0 && r->batches == NULL &&
        (r->batches = ust_calloc(N_BATCHES, sizeof(batch))) == NULL)
        rc = UST_ENOMEM;
    /* Live with answers, go no further than the legacy has decided. */
    int64_t limit = INT64_MAX;
    if (rc == 0 && r->answers.db != NULL)
        rc = ust__rundb_cursor(r->answers.db, &limit, err);
    /* Read from an earlier run, go no further than it decided. */
    if (r->from.db != NULL && r->from.cursor < limit)
        limit = r->from.cursor;
    if (r->o->step_events > 0 && limit - r->last_seq > r->o->step_events)
        limit = r->last_seq + r->o->step_events;
    /* Progress: the share of the seqs from the cursor to the head now. */
    int64_t head = r->last_seq;
    const ust_progress *progress = r->o->progress.fn != NULL ? &r->o->progress : NULL;
    if (rc == 0 && progress != NULL) {
        char hex[UST_SHA256_HEX_LEN + 1];
        rc = ust_log_head(r->log, &head, hex, err);
    }
    int64_t in_tx = 0;
    /* The log is read and made into events on a thread of its own, a
     * batch or two ahead of the one being decided. */
    reading rd = {r, cur, limit};
    ust__read_ahead ra;
    memset(&ra, 0, sizeof(ra));
    if (rc == 0)
        rc = ust__read_ahead_start(&ra, N_BATCHES, fill_batch, &rd, "ust-reader", err);
    int more = rc == 0;
    batch *in_flight = NULL;
    while (rc == 0 && (more || in_flight != NULL)) {
        if (r->o->stop != NULL && atomic_load(r->o->stop)) {
            /* Asked to stop: what is finished is committed below. A batch
             * started is the candidate's alone (nothing of it is in the
             * store yet): its child is stopped rather than waited for, and
             * a later step sends those events to a fresh one. */
            if (in_flight != NULL) {
                ust_plugin_discard(r->candidate);
                if (legacy_batched)
                    ust_plugin_discard(r->legacy);
                release_batch(in_flight);
                in_flight = NULL;
            }
            break;
        }
        /* Take and start the next batch, then finish the one in flight. */
        batch *next = NULL;
        if (more) {
            size_t slot = 0;
            rc = ust__read_ahead_take(&ra, &slot, &more, err);
            next = &r->batches[slot];
        }
        if (next != NULL && next->n > 0) {
            int64_t t0 = ust_time_mono_us();
            ust_plugin_batch_start(r->candidate, &next->pb);
            next->candidate_us = ust_time_mono_us() - t0;
            stats->candidate_decide_us += next->candidate_us;
            if (legacy_batched) {
                int64_t l0 = ust_time_mono_us();
                ust_plugin_batch_start(r->legacy, &next->pb);
                stats->legacy_decide_us += ust_time_mono_us() - l0;
            }
        }
        if (in_flight != NULL) {
            int64_t t0 = ust_time_mono_us();
            ust_plugin_batch_finish(r->candidate, &in_flight->pb, in_flight->outs);
            int64_t took = ust_time_mono_us() - t0;
            stats->candidate_decide_us += took;
            in_flight->candidate_us += took;
            if (legacy_batched) {
                int64_t l0 = ust_time_mono_us();
                ust_plugin_batch_finish(r->legacy, &in_flight->pb,
                                        in_flight->legacy_outs);
                stats->legacy_decide_us += ust_time_mono_us() - l0;
                for (size_t i = 0; i < in_flight->n; i++)
                    in_flight->items[i].l_ready = in_flight->items[i].fed;
            }
            for (size_t i = 0; r->o->candidate_decide != NULL && i < in_flight->pb.n;
                 i++)
                ust_histogram_observe(r->o->candidate_decide,
                                      in_flight->candidate_us /
                                          (int64_t)in_flight->pb.n);
            for (size_t i = 0; i < in_flight->n; i++) {
                if (rc == 0)
                    rc = finish(r, &in_flight->items[i], stats, err);
                stats->events += rc == 0;
                in_tx += rc == 0;
            }
            /* Commits fall between batches: a commit inside one would record
             * candidate state beyond the cursor, and a resumed run would
             * decide those events twice. The next batch's answers are not
             * read yet, so none of its state is in the store. */
            if (rc == 0 && ust_alloc_failures() != refused)
                rc = ust_errf(err, UST_ENOMEM, "out of memory");
            if (rc == 0 && in_tx >= every) {
                rc = commit(r, stats, err);
                if (rc == 0)
                    rc = ust__run_writer_begin(&r->run, err);
                in_tx = 0;
            }
            ust__read_ahead_give_back(&ra);
            if (rc == 0)
                ust_progress_tell(progress, stats->events,
                                  r->last_seq >= head
                                      ? 1
                                      : (double)(r->last_seq - stats->resumed_after) /
                                            (double)(head - stats->resumed_after));
        }
        if (next != NULL && next->n == 0)
            ust__read_ahead_give_back(&ra);
        in_flight = next != NULL && next->n > 0 ? next : NULL;
        if (rc != 0 && in_flight != NULL) {
            /* Read what the child was sent, so the next step starts in step
             * with it; those decisions are not kept. */
            ust_plugin_batch_finish(r->candidate, &in_flight->pb, in_flight->outs);
            if (legacy_batched)
                ust_plugin_discard(r->legacy);
            release_batch(in_flight);
            in_flight = NULL;
        }
    }
    r->step_stats = NULL;
    /* What was read ahead and not decided is dropped (the next step reads
     * it again); a batch that came back empty may still hold the row read
     * past its limit (or one that failed to derive). */
    ust__read_ahead_stop(&ra);
    for (int i = 0; r->batches != NULL && i < N_BATCHES; i++)
        release_batch(&r->batches[i]);
    ust_log_cursor_close(cur);
    if (rc == 0)
        rc = record_log_head(r, err);
    if (rc == 0)
        rc = ust__run_writer_index(&r->run, err);
    if (rc == 0 && ust_alloc_failures() != refused)
        rc = ust_errf(err, UST_ENOMEM, "out of memory");
    if (rc == 0)
        rc = commit(r, stats, err);
    if (rc != 0 && r->run.db != NULL)
        roll_back_step(r);
    if (rc == 0)
        ust_progress_tell(progress, stats->events, 1);
    return rc;
}

int64_t ust_runner_cursor(const ust_runner *r)
{
    return r->last_seq;
}

const char *ust_runner_candidate_down(const ust_runner *r)
{
    return ust_plugin_down(r->candidate);
}

void ust_runner_close(ust_runner *r)
{
    if (r == NULL)
        return;
    close_parts(r);
    ust_free(r);
}

int ust_replay(const ust_replay_opts *o, ust_replay_stats *stats, char **err)
{
    memset(stats, 0, sizeof(*stats));
    ust_runner *r = NULL;
    int rc = ust_runner_open(o, &r, err);
    if (rc == 0)
        rc = ust_runner_step(r, stats, err);
    ust_runner_close(r);
    return rc;
}
