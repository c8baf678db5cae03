/* The two clocks, in microseconds: every duration and every operational
 * time reads one of these, so none is read twice in different units. */
#ifndef UNDERSTUDY_CLOCK_H
#define UNDERSTUDY_CLOCK_H

#include <stdint.h>

/* A monotonic clock in microseconds, for durations (never a timestamp). */
int64_t ust_time_mono_us(void);
/* The wall clock in microseconds since the epoch: for what is operational
 * (arrival times, retention, lag), never inside a decision. */
int64_t ust_time_wall_us(void);

#endif
