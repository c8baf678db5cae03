/* replay --legacy-from (legacy_from.h): the earlier run's checks, and its
 * legacy decisions read through the decision row's columns. */
#include "runner/legacy_from.h"
#include "runner/decision_row.h"
#include "runner/rundb.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* seq, fed, the legacy's own entity, then its decision's columns, from a
 * seq on. The replay asks for seqs in increasing order: one scan kept
 * stepping holds one read transaction, where a lookup per event took the
 * file's locks and read the WAL index each time (twice the legacy's own
 * decide, measured). */
#define SCAN_LEGACY                                                                    \
    "SELECT seq, fed, l_entity, " UST__DECISION_COLUMN_NAMES_AS(                       \
        l_) " FROM decisions WHERE seq >= ?1 ORDER BY seq"

/* The earlier run's value of key into *out ("" when it has none). */
static int meta(ust__legacy_from *f, const char *key, char **out, char **err)
{
    int rc = ust__rundb_meta_get(f->db, key, out);
    if (rc < 0)
        return ust_errf(err, UST_EDB,
                        "%s: cannot read the run's metadata (is it a run "
                        "database?)",
                        f->path);
    if (rc == 0 && (*out = ust_strdup("")) == NULL)
        return UST_ENOMEM;
    return 0;
}

/* Same log: the earlier run decided every event up to the head it saw, and
 * that head (its seq and its row's hash, which chains every row before it)
 * is this log's. */
static int check_log(ust__legacy_from *f, const ust__legacy_from_want *want, char **err)
{
    char *seq_text = NULL, *hash = NULL;
    int rc = ust__rundb_cursor(f->db, &f->cursor, err);
    if (rc == 0)
        rc = meta(f, "log_head_seq", &seq_text, err);
    if (rc == 0)
        rc = meta(f, "log_head_sha256", &hash, err);
    long long seq = rc == 0 && *seq_text ? strtoll(seq_text, NULL, 10) : 0;
    if (rc == 0 && f->cursor < seq)
        rc = ust_errf(err, UST_EINVAL,
                      "%s: the earlier run decided seq 1 to %lld of its log's %lld: "
                      "finish it first (replay --run %s) or replay without "
                      "--legacy-from",
                      f->path, (long long)f->cursor, seq, f->path);
    else if (rc == 0 && (seq != want->head_seq || strcmp(hash, want->head_sha256) != 0))
        rc = ust_errf(err, UST_EINVAL,
                      "%s: another log: the earlier run's log ends at seq %lld "
                      "(sha256 %s), this one at seq %lld (sha256 %s); --legacy-from "
                      "reuses the decisions of the same log only (replay the earlier "
                      "run to this log's head first, or replay without --legacy-from)",
                      f->path, seq, *hash ? hash : "none", (long long)want->head_seq,
                      want->head_sha256);
    ust_free(seq_text);
    ust_free(hash);
    return rc;
}

/* The legacy's part of the config (ust_config's legacy_hash): a run made
 * before runs recorded it names none, and its config may differ in what the
 * legacy reads; refused rather than guessed. A run made before the places
 * (run, log, listen, admin_listen) were left out of the hash recorded it
 * with them: that one is this config's too when the places are the same. */
static int check_legacy_config(ust__legacy_from *f, const ust__legacy_from_want *want,
                               char **err)
{
    char *had = NULL;
    int rc = meta(f, "legacy_config_sha256", &had, err);
    if (rc == 0 && *had == '\0')
        rc = ust_errf(err, UST_EINVAL,
                      "%s: the earlier run records no legacy_config_sha256 (this "
                      "replay's is %s): it was made before runs recorded the hash of "
                      "the legacy's part of the config; replay it once in full with "
                      "this version (without --legacy-from), then read it",
                      f->path, want->legacy_config_sha256);
    else if (rc == 0 && strcmp(had, want->legacy_config_sha256) != 0 &&
             strcmp(had, want->legacy_config_sha256_with_places) != 0)
        rc = ust_errf(err, UST_EINVAL,
                      "%s: another config for the legacy: the earlier run's "
                      "legacy_config_sha256 is %s, this replay's is %s; only "
                      "plugins.candidate, compare, redact, coverage and the places "
                      "(run, log, listen, admin_listen) may change under "
                      "--legacy-from (replay without it)",
                      f->path, had, want->legacy_config_sha256);
    ust_free(had);
    return rc;
}

/* Same legacy and partition, each key by key. */
static int check_parts(ust__legacy_from *f, const ust__legacy_from_want *want,
                       char **err)
{
    struct {
        const char *key, *what, *want;
        char **keep; /* the earlier run's value, kept for the new run's meta */
    } parts[] = {
        {"legacy_sha256", "legacy's file", want->legacy_sha256, &f->sha256},
        {"legacy_name", "legacy's name", want->legacy_name, &f->name},
        {"legacy_version", "legacy's version", want->legacy_version, &f->version},
        {"partition", "partition", want->partition, NULL},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < UST_ARRAY_SIZE(parts); i++) {
        char *had = NULL;
        rc = meta(f, parts[i].key, &had, err);
        if (rc == 0 && strcmp(had, parts[i].want) != 0)
            rc = ust_errf(err, UST_EINVAL,
                          "%s: another %s: the earlier run's %s is %s, this replay's "
                          "is %s; --legacy-from reuses the decisions of the same "
                          "legacy only (replay without it)",
                          f->path, parts[i].what, parts[i].key, *had ? had : "none",
                          *parts[i].want ? parts[i].want : "none");
        if (rc == 0 && parts[i].keep != NULL) {
            *parts[i].keep = had;
            had = NULL;
        }
        ust_free(had);
    }
    return rc;
}

int ust__legacy_from_open(ust__legacy_from *f, const char *path,
                          const ust__legacy_from_want *want, char **err)
{
    memset(f, 0, sizeof(*f));
    f->path = path;
    f->at = -1;
    int rc = ust__db_open(path, 1, NULL, "earlier run database", &f->db, err);
    if (rc == 0)
        rc = check_legacy_config(f, want, err);
    if (rc == 0)
        rc = check_parts(f, want, err);
    if (rc == 0)
        rc = check_log(f, want, err);
    char *before = NULL;
    if (rc == 0)
        rc = meta(f, "decided_before_l_entity", &before, err);
    if (rc == 0 && *before)
        rc = ust_errf(err, UST_EINVAL,
                      "%s: its decisions up to seq %s were written before runs kept "
                      "the legacy's own entity (l_entity), so they do not read back "
                      "whole: replay without --legacy-from once",
                      path, before);
    ust_free(before);
    if (rc == 0 &&
        sqlite3_prepare_v2(f->db, SCAN_LEGACY, -1, &f->scan, NULL) != SQLITE_OK)
        rc = ust_errf(err, UST_EINVAL,
                      "%s: its decisions cannot be read back (%s): a run made before "
                      "runs kept the legacy's entity (l_entity); replay without "
                      "--legacy-from once",
                      path, sqlite3_errmsg(f->db));
    return rc;
}

void ust__legacy_from_close(ust__legacy_from *f)
{
    sqlite3_finalize(f->scan);
    sqlite3_close(f->db);
    ust_free(f->name);
    ust_free(f->version);
    ust_free(f->sha256);
    memset(f, 0, sizeof(*f));
}

/* The scan onto the first row from seq on: 1 there (f->at its seq), 0
 * past the last row, or an error. */
static int scan_to(ust__legacy_from *f, int64_t seq, char **err)
{
    int rc = 1;
    if (f->at < 0 ||
        f->at > seq) { /* not on a row, or gone back (a step rolled back) */
        sqlite3_reset(f->scan);
        sqlite3_bind_int64(f->scan, 1, seq);
        rc = ust__db_step(f->scan, f->path, err);
    }
    while (rc == 1 && (f->at = sqlite3_column_int64(f->scan, 0)) < seq)
        rc = ust__db_step(f->scan, f->path, err);
    if (rc != 1)
        f->at = -1;
    return rc;
}

int ust__legacy_from_get(ust__legacy_from *f, int64_t seq, ust_decision *d, char **err)
{
    int rc = scan_to(f, seq, err);
    if (rc == 1 && f->at == seq && sqlite3_column_int(f->scan, 1) == 1)
        return ust__decision_read(f->scan, 3,
                                  (const char *)sqlite3_column_text(f->scan, 2), d);
    return rc < 0
               ? rc
               : ust_errf(err, UST_EINVAL,
                          "%s: the earlier run holds no legacy decision for seq %lld",
                          f->path, (long long)seq);
}

int ust__legacy_from_check_run(ust__run_writer *run, const char *path, int64_t cursor,
                               char **err)
{
    char *stored = NULL;
    int rc = ust__rundb_meta_get(run->db, "legacy_from", &stored);
    if (rc < 0)
        return ust_errf(err, rc, "%s: cannot read run metadata", run->path);
    if (cursor > 0 && (stored != NULL) != (path != NULL))
        rc = stored != NULL
                 ? ust_errf(err, UST_EINVAL,
                            "%s: this run read the legacy's decisions from %s, and "
                            "holds no legacy state: resume it with --legacy-from %s "
                            "(or use a new --run database)",
                            run->path, stored, stored)
                 : ust_errf(err, UST_EINVAL,
                            "%s: this run's legacy decided its events itself: resume "
                            "it without --legacy-from (or use a new --run database)",
                            run->path);
    else if (path != NULL)
        rc = ust__run_writer_meta(run, "legacy_from", path, err);
    else
        rc = stored != NULL
                 ? ust__rundb_exec(run->db,
                                   "DELETE FROM meta WHERE key = 'legacy_from'", err)
                 : 0;
    ust_free(stored);
    return rc;
}
