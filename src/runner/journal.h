/* The journal of the plugins that send events out (the url kind): in the
 * run database, table journal(side, seq, state, status, headers, body,
 * failure, cause). state 'sent' is committed just before the event is sent
 * ('resent' when it is sent again: resend_unknown); 'answered' (or
 * 'answered_resent') is written with the answer, in the open transaction.
 * The runner offers it to such plugins (ust_journal, host.h). */
#ifndef UST_RUNNER_JOURNAL_H
#define UST_RUNNER_JOURNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include <understudy/http_client.h>

/* 1 when nothing was journaled for side and the cursor is 0, 0 when
 * something was, or an error. */
int ust__journal_fresh(sqlite3 *db, const char *side, char **err);
/* 0 nothing for seq, 1 sent with no answer, 2 answered (*out filled), 3
 * answered to the call sent again (*out filled). */
int ust__journal_find(sqlite3 *db, const char *side, int64_t seq, ust_http_result *out,
                      char **err);
/* Inserts 'sent' rows, or marks a seq sent again 'resent' (in the open
 * transaction; the caller commits). */
int ust__journal_intend(sqlite3 *db, const char *side, const int64_t *seqs, size_t n,
                        char **err);
int ust__journal_answer(sqlite3 *db, const char *side, int64_t seq,
                        const ust_http_result *a, char **err);

#endif
