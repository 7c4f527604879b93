/* coll_sync: the waits and flags every algorithm uses (internal to coll/). */
#ifndef BOBCAT_COLL_SYNC_H
#define BOBCAT_COLL_SYNC_H

#include <sched.h>
#include "coll.h"
#include "../msg/msg.h"

/* Wait until *p >= v. Polls cn->spin times between sched_yield()s, so ranks that outnumber the
 * cores hand theirs to the rank they wait for instead of spinning out their time slice; at every
 * yield cn->progress(yields) may give the real MPI a progress call (a rank blocked in a collective
 * must still let MPI progress: MPICH grants passive-target RMA locks only from inside its progress
 * engine). How often is the MPI layer's choice (pmpi_comm.c): not on every yield in general, as
 * Open MPI's progress pass can take tens of microseconds, which a peer only a little late must not
 * pay. */
static inline void coll_wait_ge(const coll_node_t *cn, _Atomic uint64_t *p, uint64_t v)
{
    int n = 0;
    unsigned yields = 0;
    while (atomic_load_explicit(p, memory_order_acquire) < v) {
        if (++n >= cn->spin) {
            if (cn->progress)
                cn->progress(++yields);
            if (bobcat_msg_idle_hook) /* issue 10: match on-node point-to-point arrivals meanwhile */
                bobcat_msg_idle_hook();
            if (coll_tune.yield)
                coll_tune.yield();
            else
                sched_yield();
            n = 0;
        } else {
            util_poll_pause();
        }
    }
}

/* Slice r of count elements split over n ranks as evenly as possible, the first ranks taking the
 * remainder: its first element and its length (the parallel reductions' shares). */
static inline void coll_slice_of(size_t count, int n, int r, size_t *lo_p, size_t *cnt_p)
{
    size_t q = count / (size_t)n, rem = count % (size_t)n;
    *lo_p = (size_t)r * q + ((size_t)r < rem ? (size_t)r : rem);
    *cnt_p = q + ((size_t)r < rem);
}

/* A group rank's slot, in my view. */
static inline coll_slot_t *coll_slot(const coll_node_t *cn, int r) { return &cn->ctrl->slot[r]; }

/* A pointer rank r published (in its own view), in mine. */
static inline void *coll_peer(const coll_node_t *cn, int r, uint64_t w)
{
    return w ? (void *)(uintptr_t)(w + cn->base[r]) : NULL;
}

/* Publish up to 7 words for this call; the release store of seq makes them visible together. */
static inline void coll_publish(coll_node_t *cn, const uint64_t *w, int n)
{
    coll_slot_t *s = coll_slot(cn, cn->rank);
    for (int i = 0; i < n; i++)
        s->pub[cn->seq & 1].word[i] = w[i];
    atomic_store_explicit(&s->pub[cn->seq & 1].seq, cn->seq, memory_order_release);
}

/* Rank r's publication for this call (waits for it). */
static inline const coll_pub_t *coll_pub_of(const coll_node_t *cn, int r)
{
    coll_slot_t *s = coll_slot(cn, r);
    coll_wait_ge(cn, &s->pub[cn->seq & 1].seq, cn->seq);
    return &s->pub[cn->seq & 1];
}

/* I am done with every peer's data of this call (release: my reads happen before). */
static inline void coll_signal_done(coll_node_t *cn)
{
    atomic_store_explicit(&coll_slot(cn, cn->rank)->done.done, cn->seq, memory_order_release);
}

static inline void coll_wait_done(const coll_node_t *cn, int r)
{
    coll_wait_ge(cn, &coll_slot(cn, r)->done.done, cn->seq);
}

static inline void coll_wait_all_done(const coll_node_t *cn)
{
    for (int r = 0; r < cn->size; r++)
        if (r != cn->rank)
            coll_wait_done(cn, r);
}

#endif
