/* util_thread: the library's own threads (the engine's helper, the progress agent) and the futex
 * they and the layer's lock sleep on. */
#include "util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

long util_futex(_Atomic uint32_t *word, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, NULL, NULL, 0);
}

int util_thread_start(pthread_t *t, void *(*fn)(void *), const char *name)
{
    pthread_attr_t at;
    sigset_t all, old;
    int rc = pthread_attr_init(&at);
    if (rc != 0)
        return rc;
    pthread_attr_setstacksize(&at, 256 * 1024);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the program's threads' */
    rc = pthread_create(t, &at, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc == 0)
        pthread_setname_np(*t, name);
    return rc;
}
