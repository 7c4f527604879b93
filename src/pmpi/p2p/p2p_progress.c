/* p2p_progress: what moves bobcat's point-to-point along — the engine's arrivals, the off-node
 * queue, orphaned requests — and the pause of every wait loop.
 *
 * MPI_ANY_SOURCE on a communicator that spans nodes: the receive is posted in the engine (so an
 * on-node arrival can match it) and queued on the off-node queue, where progress asks the real
 * MPI with PMPI_Improbe; a message found there is given to the earliest queued receive it matches,
 * which leaves the engine (it was not matched there: one thread) and takes the message with
 * PMPI_Imrecv. While such a wildcard waits, later receives on that communicator for off-node
 * sources are not posted to the real MPI (which would let them overtake it) but queued behind it.
 * Matched probes, not PMPI_Irecv + cancel, so no message is ever received twice or lost. */
#include "p2p.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>

static inline int want(const p2p_req_t *q, int src, int tag)
{
    return (q->peer == MPI_ANY_SOURCE || q->peer == src) && (q->tag == MPI_ANY_TAG || q->tag == tag);
}

/* Give an off-node message (matched probe) to the earliest queued receive on its communicator. */
static void offq_progress(void)
{
    p2p_req_t *r = p2p_offq_head;
    while (r) {
        if (r->kind == P2P_K_RECV && r->m.complete) { /* an on-node message came first */
            p2p_req_t *n = r->onext;
            p2p_offq_remove(r);
            r = n;
            continue;
        }
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        PMPI_Improbe(r->peer, r->tag, r->comm, &flag, &msg, &st);
        if (!flag) {
            r = r->onext;
            continue;
        }
        p2p_req_t *t = p2p_offq_head;
        while (t && !(t->comm == r->comm && want(t, st.MPI_SOURCE, st.MPI_TAG) &&
                      !(t->kind == P2P_K_RECV && t->m.complete)))
            t = t->onext;
        if (!t)
            t = r;
        if (t->kind == P2P_K_RECV)
            bobcat_msg_cancel(&t->m); /* still posted: not matched on-node (we are its only thread) */
        p2p_req_t *next = t == r ? r->onext : r;
        p2p_offq_remove(t);
        if (t->pack) { /* an engine receive of a non-contiguous type: the real MPI lays it out */
            free(t->pack);
            t->pack = NULL;
        }
#if MPI_VERSION >= 4
        if (t->count > INT_MAX)
            PMPI_Imrecv_c(t->buf, t->count, t->type, &msg, &t->real);
        else
#endif
            PMPI_Imrecv(t->buf, (int)t->count, t->type, &msg, &t->real);
        t->switched = 1;
        p2p_st_engine.extra[P2P_X_OFFQ_SWITCH]++;
        r = next;
    }
}

/* Orphans that have completed leave. */
static void orphans_reap(void)
{
    p2p_req_t **pp = &p2p_orphans;
    while (*pp) {
        p2p_req_t *r = *pp;
        int err;
        if (p2p_req_test(r, MPI_STATUS_IGNORE, &err)) {
            *pp = r->fnext;
            p2p_req_release(r);
        } else {
            pp = &r->fnext;
        }
    }
}

int p2p_ext_pending;
void (*p2p_ext_progress)(void);

void p2p_progress(void)
{
    bobcat_msg_progress();
    if (p2p_ext_pending)
        p2p_ext_progress();
    if (p2p_offq_head)
        offq_progress();
    if (p2p_orphans_pending())
        orphans_reap();
}

/* Waiting on bobcat alone must not starve the real MPI's progress: off-node rendezvous, requests of
 * the real MPI's in flight (a nonblocking collective it runs), and on one node too while RMA windows
 * exist (an MPICH passive-target lock is granted, and an access epoch
 * completes, only inside the target's progress engine). Every 16th poll: one pass costs more than
 * an on-node message. */
void p2p_poke_mpi(void)
{
    static unsigned n;
    if ((p2p_set.multinode || pmpi_rma_windows || pmpi_real_requests) && (++n & 15) == 0)
        pmpi_mpi_progress();
}

/* While a rank waits inside an on-node collective: match on-node arrivals (a rendezvous or
 * synchronous sender may wait for a receive posted before the collective). The real MPI's
 * progress there is coll's own hook (cn->progress, every few yields: it is expensive). */
void p2p_idle_hook(void)
{
    static int inside;
    if (inside || !p2p_need_progress())
        return;
    inside = 1;
    p2p_progress();
    inside = 0;
}

/* Polls before yielding: the layer's rule (BOBCAT_COLL_SPIN, 1 when ranks outnumber cores), so a
 * waiting rank neither burns the core its peer needs nor gives up its own for nothing. Under
 * MPI_THREAD_MULTIPLE the yield also lets this rank's other threads into the layer. */
void p2p_relax(unsigned *spins)
{
    unsigned limit = pmpi_layer.spin > 0 ? (unsigned)pmpi_layer.spin : 16;
    if (++*spins >= limit) {
        *spins = 0;
        pmpi_yield();
    } else {
        util_poll_pause(); /* the lines this loop polls are about to be written by a peer */
    }
}
