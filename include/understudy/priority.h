/* Shadow work yields to the request path: the live runner, the plugins it
 * runs and the threads that talk to them run at a lower CPU priority than
 * recording and answering, so that a busy candidate lengthens the runner's
 * lag, never a callback's answer. */
#ifndef UNDERSTUDY_PRIORITY_H
#define UNDERSTUDY_PRIORITY_H

/* The nice value of background work (0 is normal, 19 the lowest). */
#define UST_BACKGROUND_NICE 10

/* Lowers the calling thread's priority to UST_BACKGROUND_NICE (Linux keeps a
 * nice value per thread; a process forked from it starts there too). Best
 * effort: a failure leaves the priority as it was. */
void ust_background_thread(void);

/* Names the calling thread as `top -H`, `ps -L` and `perf` show it, so an
 * operator can tell the writer from the runner (at most 15 characters; best
 * effort). */
void ust_name_thread(const char *name);

#endif
