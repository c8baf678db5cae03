/* Progress of long work (log import, replay, report, gen). The library
 * calls the callback as work is done and never prints; the command line
 * decides whether and how to show it (src/cli/common.c). */
#ifndef UNDERSTUDY_PROGRESS_H
#define UNDERSTUDY_PROGRESS_H

#include <stdint.h>

typedef struct ust_progress {
    /* done: units so far (events, or divergences for a report), never
     * decreasing; fraction: the share of the whole done, in [0, 1] and never
     * decreasing, or negative when the whole is not known (an import from a
     * pipe). Called often (up to once a unit): it must be cheap. The last
     * call of a run that succeeded has the whole: fraction 1 when known. */
    void (*fn)(void *data, int64_t done, double fraction);
    void *data;
} ust_progress;

/* Calls p's callback, when there is one (p may be NULL). */
static inline void ust_progress_tell(const ust_progress *p, int64_t done,
                                     double fraction)
{
    if (p != NULL && p->fn != NULL)
        p->fn(p->data, done, fraction);
}

#endif
