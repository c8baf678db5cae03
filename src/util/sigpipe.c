#include <understudy/sigpipe.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>

static void pipe_only(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
}

void ust_sigpipe_block(sigset_t *old)
{
    sigset_t set;
    pipe_only(&set);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

void ust_sigpipe_restore(const sigset_t *old)
{
    if (!sigismember(old, SIGPIPE)) {
        sigset_t set;
        pipe_only(&set);
        struct timespec now = {0, 0};
        while (sigtimedwait(&set, NULL, &now) == SIGPIPE || errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, old, NULL);
}
