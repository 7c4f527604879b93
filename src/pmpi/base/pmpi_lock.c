/* pmpi_lock: the layer's lock under MPI_THREAD_MULTIPLE (pmpi_lock.h). */
#include "pmpi_lock.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../../msg/msg.h"
#include "../../util/util.h"

int pmpi_mt;
__thread int pmpi_depth __attribute__((tls_model("initial-exec")));

/* Ticket lock: `next` hands out tickets, `serving` is the ticket that holds the lock. On its own
 * line each, so waiters polling `serving` do not slow the holder's ticket traffic. */
static struct {
    _Alignas(64) _Atomic uint32_t next;
    _Alignas(64) _Atomic uint32_t serving;
    /* Threads inside a blocking call of the real MPI (PMPI_AWAY): while there are any, whoever lets
     * go of the lock first hands the engine to its helper thread. */
    _Alignas(64) _Atomic int away;
} L;

/* Polls of `serving` before a waiter sleeps on it. */
#define LOCK_POLLS 128

void pmpi_lock_take(void)
{
    uint32_t me = atomic_fetch_add_explicit(&L.next, 1, memory_order_relaxed);
    unsigned polls = 0;
    for (;;) {
        uint32_t s = atomic_load_explicit(&L.serving, memory_order_acquire);
        if (s == me)
            break;
        if (++polls < LOCK_POLLS)
            util_poll_pause();
        else
            util_futex(&L.serving, FUTEX_WAIT_PRIVATE, s); /* back at once if serving moved meanwhile */
    }
    /* Holding the lock means the engine is this process's: take it back from the helper if a
     * thread that let go of the lock handed it over (nothing to do otherwise). */
    bobcat_msg_away_end(1);
}

void pmpi_lock_drop(void)
{
    if (atomic_load_explicit(&L.away, memory_order_relaxed) > 0)
        bobcat_msg_away_begin(); /* receives posted: the helper serves them until the lock is taken */
    uint32_t s = atomic_load_explicit(&L.serving, memory_order_relaxed) + 1;
    /* seq_cst store then load: a waiter that took its ticket before this load is seen and woken;
     * one that takes it after sees the new `serving` before it sleeps. */
    atomic_store_explicit(&L.serving, s, memory_order_seq_cst);
    if (atomic_load_explicit(&L.next, memory_order_seq_cst) != s)
        util_futex(&L.serving, FUTEX_WAKE_PRIVATE, INT_MAX);
}

void pmpi_mt_yield(void)
{
    int d = pmpi_depth;
    /* Nobody waits for the lock and no thread is in the real MPI: a plain yield. */
    if (d == 0 || (atomic_load_explicit(&L.next, memory_order_relaxed) ==
                       atomic_load_explicit(&L.serving, memory_order_relaxed) + 1 &&
                   atomic_load_explicit(&L.away, memory_order_relaxed) == 0)) {
        sched_yield();
        return;
    }
    pmpi_depth = 0;
    pmpi_lock_drop();
    sched_yield();
    pmpi_lock_take();
    pmpi_depth = d;
}

int pmpi_mt_away_begin(void)
{
    atomic_fetch_add_explicit(&L.away, 1, memory_order_relaxed);
    int d = pmpi_depth;
    if (d == 0)
        pmpi_lock_take(); /* a pass-through: only to hand the engine over if receives are posted */
    pmpi_depth = 0;
    pmpi_lock_drop();
    return d;
}

void pmpi_mt_away_end(int d)
{
    if (d > 0) {
        pmpi_lock_take();
        pmpi_depth = d;
    }
    atomic_fetch_sub_explicit(&L.away, 1, memory_order_relaxed);
}

void pmpi_lock_start(void) { pmpi_mt = 1; }

void pmpi_lock_stop(void) { pmpi_mt = 0; }
