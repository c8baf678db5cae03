/* A write to a pipe or socket whose reader is gone raises SIGPIPE, which
 * ends the process unless it is ignored or handled. The library leaves the
 * process's dispositions to the program: a thread that writes where a peer
 * may have gone blocks SIGPIPE for itself instead (threads it starts inherit
 * the mask), and the write fails with EPIPE. */
#ifndef UNDERSTUDY_SIGPIPE_H
#define UNDERSTUDY_SIGPIPE_H

#include <signal.h>

/* Blocks SIGPIPE on the calling thread; the mask before goes into *old. */
void ust_sigpipe_block(sigset_t *old);

/* Puts back the mask ust_sigpipe_block saved. A SIGPIPE raised meanwhile is
 * taken first, when the old mask let it through, so it is not delivered
 * once unblocked. */
void ust_sigpipe_restore(const sigset_t *old);

#endif
