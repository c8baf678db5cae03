/* The state store of a plugin isolated in a child process (the shim): the
 * cache of store.c in front of the parent's store, reached over the
 * protocol. */
#ifndef UST_PLUGIN_STORE_REMOTE_H
#define UST_PLUGIN_STORE_REMOTE_H

#include <understudy/host.h>

#include <stdio.h>

/* Operations go to the parent over the plugin protocol (in = replies, out =
 * requests). ns_was_empty: the parent's namespace held no key at start. */
ust_store *ust__store_remote(FILE *in, FILE *out, int ns_was_empty);
/* The writes of the call that just ended as JSON text ([[key, value or
 * null], ...]), to send with its decision; NULL when none. Valid until the
 * next call begins. */
const char *ust__store_remote_writes(ust_store *s);
/* A line (free()) that arrived while a remote store waited for a reply, or
 * NULL: the child's loop reads these before reading stdin again. */
char *ust__store_remote_next_deferred(ust_store *s);

#endif
