/* Reading ahead on a thread of its own: while the replay decides one batch
 * of events, the next ones are read from the log and made into events on
 * the other core. fill(ctx, slot, &more, &err) fills slot after slot (the
 * i-th fill gets slot i % n_slots), in order, never one the caller still
 * holds; the caller takes the filled slots in the same order and gives each
 * back when it is done with it. Reading has no effect on anything else, so
 * what was read ahead and never taken is simply dropped. */
#ifndef UST_RUNNER_READ_AHEAD_H
#define UST_RUNNER_READ_AHEAD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Fills slot; *more 0 when no fill may follow (the end, a limit). 0, or an
 * error (which also ends the reading). Runs on the reading thread. */
typedef int (*ust__read_ahead_fill)(void *ctx, size_t slot, int *more, char **err);

typedef struct ust__read_ahead {
    pthread_mutex_t mu;
    pthread_cond_t filled, freed;
    pthread_t thread;
    int started;
    size_t n_slots;
    uint64_t produced, taken, returned;
    int done;  /* the last fill said no more, or failed */
    int quit;  /* the caller stops early */
    int rc;    /* the last fill's */
    char *err; /* and its message, until taken */
    ust__read_ahead_fill fill;
    void *ctx;
    const char *name; /* the thread's, as top -H shows it */
} ust__read_ahead;

/* Starts the thread (named name). 0 or UST_ENOMEM with *err. */
int ust__read_ahead_start(ust__read_ahead *ra, size_t n_slots,
                          ust__read_ahead_fill fill, void *ctx, const char *name,
                          char **err);
/* The next filled slot into *slot, waiting for it; *more as its fill said.
 * Returns that fill's result (its message into *err). Not called again
 * after *more 0 or an error. */
int ust__read_ahead_take(ust__read_ahead *ra, size_t *slot, int *more, char **err);
/* The oldest slot taken and not given back is free to fill again. */
void ust__read_ahead_give_back(ust__read_ahead *ra);
/* Stops the thread (a fill under way ends first) and waits for it. */
void ust__read_ahead_stop(ust__read_ahead *ra);

#endif
