/* The state store of a plugin isolated in a child process (the shim): the
 * cache of store.c in front of the parent's store, reached over the
 * protocol. */
#ifndef UST_PLUGIN_STORE_REMOTE_H
#define UST_PLUGIN_STORE_REMOTE_H

#include <understudy/host.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Operations go to the parent in binary frames (frame.h; in = replies, out =
 * requests). ns_was_empty: the parent's namespace held no key at start. */
ust_store *ust__store_remote(FILE *in, FILE *out, int ns_was_empty);
/* The writes of the call that just ended, to send with its decision: *n
 * (key, value or null) string pairs in *len bytes. Valid until the next
 * call begins. */
const unsigned char *ust__store_remote_writes(ust_store *s, size_t *len, uint32_t *n);
/* A decide frame's payload (free(), *n its length) that arrived while a
 * remote store waited for a reply, or NULL: the child's loop reads these
 * before reading stdin again. */
unsigned char *ust__store_remote_next_deferred(ust_store *s, size_t *n);

#endif
