#define _GNU_SOURCE /* pthread_setname_np */
#include <understudy/priority.h>

#include <pthread.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void ust_background_thread(void)
{
    /* PRIO_PROCESS with a thread id: on Linux, nice is per thread. */
    id_t tid = (id_t)syscall(SYS_gettid);
    int now = getpriority(PRIO_PROCESS, tid);
    if (now < UST_BACKGROUND_NICE)
        (void)setpriority(PRIO_PROCESS, tid, UST_BACKGROUND_NICE);
}

void ust_name_thread(const char *name)
{
    (void)pthread_setname_np(pthread_self(), name);
}
