/* libbobcat-yield.so: makes an MPI that polls UCX give up the core while it waits, for jobs with
 * more ranks than cores. yod preloads it (after libbobcat) only when a job is oversubscribed.
 *
 * Why. MPICH (ch4:ucx) waits by polling its progress engine in a loop that never yields; it has
 * no knob for it (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's; MPI_THREAD_MULTIPLE does not yield
 * either). With 8 ranks on 2 cores a waiting rank spins out its whole time slice while the rank
 * it waits for cannot run: MPICH's own run of tests/mp/mp_nbc.c at -np 8 took 47 s, 3.3 s with
 * this library. Open MPI needs none of it: mpirun --oversubscribe sets mpi_yield_when_idle.
 * libbobcat's own waits already yield (sched_yield after a few polls).
 *
 * How. Every pass of MPICH's progress loop calls ucp_worker_progress(), through the PLT, so a
 * preloaded definition sees each one. This one calls UCX's and, after IDLE_POLLS passes in a row
 * that progressed nothing, calls sched_yield(). What the MPI computes is unchanged; only who gets
 * the core. Nothing else is interposed, and a program that does not use UCX never calls it.
 * Kept out of libbobcat so that a job with a core per rank pays nothing (not even the extra call). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* Idle passes between yields: ~50 ns each, so a waiting rank spins a few µs before it lets a
 * sleeping peer run, and a message already on its way is still picked up without a yield. */
enum { IDLE_POLLS = 64 };

typedef unsigned (*progress_fn)(void *worker);

__attribute__((visibility("default"))) unsigned ucp_worker_progress(void *worker)
{
    static progress_fn real;
    static __thread unsigned idle;
    progress_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!f) {
            /* Only libucp calls lead here, so libucp is loaded: this cannot happen short of a
             * broken install. */
            fprintf(stderr, "libbobcat-yield: ucp_worker_progress not found after this library "
                            "(%s); run without --oversubscribe or fix the UCX install\n", dlerror());
            abort();
        }
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    unsigned n = f(worker);
    if (n)
        idle = 0;
    else if (++idle >= IDLE_POLLS) {
        idle = 0;
        sched_yield();
    }
    return n;
}
