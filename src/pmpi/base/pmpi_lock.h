/* pmpi_lock: the layer under MPI_THREAD_MULTIPLE (docs/mpi.md, "Threads").
 *
 * One lock serialises the layer: every MPI_* entry point bobcat defines holds it while it runs
 * (PMPI_GUARD), and lets go of it wherever it waits:
 *  - at every yield of a wait that polls another rank (p2p waits through p2p_relax, the
 *    collectives' flag waits through coll_tune.yield): another thread of this rank then runs its
 *    own call, which may be the one the awaited rank needs first;
 *  - around every blocking call into the real MPI (PMPI_AWAY), which is thread-safe on its own:
 *    threads of one rank sit in the real MPI at once, and while some do and no thread holds the
 *    lock, the engine's helper thread serves the posted receives (msg.h, "Away").
 * The lock is a ticket lock, so a thread that lets go at a yield and asks again queues behind the
 * threads already waiting (no thread can be starved by one that spins); a waiter sleeps on a futex
 * after a few polls. It is re-entrant per thread (a callback of the real MPI into the layer, on a
 * thread inside the layer, takes nothing).
 *
 * Chosen once, at MPI_Init_thread: below MPI_THREAD_MULTIPLE (or with the layer off) pmpi_mt is 0
 * and an entry point pays one load and two untaken branches. */
#ifndef BOBCAT_PMPI_LOCK_H
#define BOBCAT_PMPI_LOCK_H

#include <sched.h>

/* 1 between an MPI_Init_thread that got MPI_THREAD_MULTIPLE with the layer on and MPI_Finalize. */
extern int pmpi_mt;
/* Entries this thread is inside (the lock is held while > 0 and not away). */
extern __thread int pmpi_depth __attribute__((tls_model("initial-exec")));

void pmpi_lock_take(void);
void pmpi_lock_drop(void);

static inline int pmpi_guard_enter(void)
{
    if (__builtin_expect(!pmpi_mt, 1))
        return 0;
    if (pmpi_depth++ == 0)
        pmpi_lock_take();
    return 1;
}

static inline void pmpi_guard_leave(const int *held)
{
    if (__builtin_expect(*held, 0) && --pmpi_depth == 0)
        pmpi_lock_drop();
}

/* First statement of every MPI_* entry point of the layer: holds the lock until the function
 * returns, whichever return that is. */
#define PMPI_GUARD() int pmpi_guard_ __attribute__((cleanup(pmpi_guard_leave), unused)) = pmpi_guard_enter()

/* Let other threads in for a moment (a wait's yield): sched_yield() when not MULTIPLE. */
void pmpi_mt_yield(void);
static inline void pmpi_yield(void)
{
    if (__builtin_expect(pmpi_mt, 0))
        pmpi_mt_yield();
    else
        sched_yield();
}

/* PMPI_AWAY's two halves under MULTIPLE: let go of the lock for a blocking call of the real MPI
 * (handing the engine to the helper if receives are posted), and take it back. begin returns what
 * end needs (this thread's depth). */
int pmpi_mt_away_begin(void);
void pmpi_mt_away_end(int depth);

/* MPI_Init_thread / MPI_Finalize. */
void pmpi_lock_start(void);
void pmpi_lock_stop(void);

#endif
