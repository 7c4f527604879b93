/* pmpi_rma_sync: the synchronisation calls of the windows bobcat handles.
 *
 * bobcat's puts, gets and accumulates are complete when they return (copies and atomics through
 * SMARTMAP), so what is left to synchronise is who may go when:
 *  - fence: a memory fence and bobcat's MPI_Barrier on the window's communicator;
 *  - PSCW: a target's MPI_Win_post adds 1 to a counter per origin in each origin's control block
 *    (post[target]); MPI_Win_start waits until the counter of every target exceeds the posts it has
 *    consumed; MPI_Win_complete adds 1 to each target's `done`; MPI_Win_wait waits until `done`
 *    reaches the origins its posts named. Counters only grow, so nothing is reset between epochs;
 *  - passive target: a lock word in each target's control block (exclusive: RMA_LOCK_EXCL; shared:
 *    a count); flushes are memory fences. On a window that spans nodes the lock is the real
 *    window's, the one lock off-node origins take too (`hold`); flushes call the real one only
 *    when an operation went there since.
 * For the pairs that go through the real window (pmpi_rma.h: `spans`, unreachable ranks, dynamic
 * windows), the real window's own calls are made beside these, on the subgroups they concern. */
#include "pmpi_rma.h"

#include <stdlib.h>
#include <string.h>

static void sync_count(rma_win_t *w) { rma_count(w, RMA_SYNC, PMPI_PATH_INPLACE, 0); }

/* An origin's way to target t: through SMARTMAP or the staged path (its window memory is in its
 * segment or staged, or possibly per address for a dynamic window) ... */
static int fast_to(const rma_win_t *w, int t)
{
    const rma_peer_t *p = &w->peer[t];
    return p->ctl && (w->dynamic || p->base || p->staged);
}
/* ... and through the real window (both for a dynamic window's node mates without the staged path;
 * both on a window that spans nodes, whose accumulates always go there). */
static int real_to(const rma_win_t *w, int t) { return rma_dyn_real(w) || w->spans || !fast_to(w, t); }
/* The same seen from target me: origin o reaches me through SMARTMAP or the staged path. */
static int fast_from(const rma_win_t *w, int o)
{
    const rma_peer_t *m = &w->peer[w->me];
    return w->peer[o].ctl && (w->dynamic || m->base || m->staged);
}
static int real_from(const rma_win_t *w, int o) { return rma_dyn_real(w) || w->spans || !fast_from(w, o); }

/* ---- fence ---- */

BOBCAT_EXPORT int MPI_Win_fence(int assert, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_fence(assert, win));
    if (w->start_n >= 0 || w->post_open || w->nlocked || w->lock_all)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst);
    if (w->mixed) {
        int rc = PMPI_AWAY(PMPI_Win_fence(assert, win));
        if (rc != MPI_SUCCESS)
            return rc;
    }
    /* Every rank's epoch ends (its operations are complete: they were when they returned) before
     * any starts the next, and a target's own stores before the fence are seen after it. */
    pmpi_barrier(w->comm);
    w->fence_open = !(assert & MPI_MODE_NOSUCCEED);
    sync_count(w);
    return MPI_SUCCESS;
}

/* ---- PSCW ---- */

/* The comm ranks of group's members (n of them, malloc'd), or NULL with *n = -1. */
static int *group_ranks(rma_win_t *w, MPI_Group g, int *n)
{
    int gn = 0;
    if (PMPI_Group_size(g, &gn) != MPI_SUCCESS) {
        *n = -1;
        return NULL;
    }
    int *seq = malloc(sizeof(int) * (size_t)(gn ? gn : 1)), *out = malloc(sizeof(int) * (size_t)(gn ? gn : 1));
    for (int i = 0; i < gn; i++)
        seq[i] = i;
    if (PMPI_Group_translate_ranks(g, gn, seq, w->group, out) != MPI_SUCCESS) {
        free(seq);
        free(out);
        *n = -1;
        return NULL;
    }
    for (int i = 0; i < gn; i++)
        if (out[i] == MPI_UNDEFINED) {
            free(seq);
            free(out);
            *n = -1;
            return NULL;
        }
    free(seq);
    *n = gn;
    return out;
}

/* The real window's MPI_Win_post or MPI_Win_start on the members of g at group ranks idx[0..k)
 * (nothing if k is 0); *on: it was called. */
static int real_pscw(int (*call)(MPI_Group, int, MPI_Win), MPI_Group g, const int *idx, int k, int assert,
                     MPI_Win win, int *on)
{
    MPI_Group sub;
    *on = 0;
    if (k == 0)
        return MPI_SUCCESS;
    int rc = PMPI_Group_incl(g, k, idx, &sub);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_AWAY(call(sub, assert, win));
    PMPI_Group_free(&sub);
    *on = rc == MPI_SUCCESS;
    return rc;
}

BOBCAT_EXPORT int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_post(group, assert, win));
    int gn;
    int *r = group_ranks(w, group, &gn);
    if (gn < 0)
        return rma_error(w, MPI_ERR_GROUP);
    if (w->post_open) {
        free(r);
        return rma_error(w, MPI_ERR_RMA_SYNC);
    }
    int *idx = malloc(sizeof(int) * (size_t)(gn ? gn : 1)), k = 0;
    atomic_thread_fence(memory_order_seq_cst); /* my stores before the post are seen after it */
    for (int i = 0; i < gn; i++) {
        int o = r[i];
        if (fast_from(w, o)) {
            atomic_fetch_add(&w->peer[o].ctl->post[w->me], 1);
            w->done_want++;
        }
        if (real_from(w, o))
            idx[k++] = i;
    }
    int rc = real_pscw(PMPI_Win_post, group, idx, k, assert, win, &w->post_real);
    free(idx);
    free(r);
    w->post_open = 1;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_start(group, assert, win));
    if (w->start_n >= 0)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    int gn;
    int *r = group_ranks(w, group, &gn);
    if (gn < 0)
        return rma_error(w, MPI_ERR_GROUP);
    int *idx = malloc(sizeof(int) * (size_t)(gn ? gn : 1)), k = 0;
    for (int i = 0; i < gn; i++) {
        int t = r[i];
        w->start_to[i] = t;
        w->in_start[t] = 1;
        if (fast_to(w, t)) {
            unsigned spins = 0;
            while (atomic_load_explicit(&w->ctl->post[t], memory_order_acquire) <= w->post_seen[t])
                rma_relax(&spins);
            w->post_seen[t]++;
        }
        if (real_to(w, t))
            idx[k++] = i;
    }
    int rc = real_pscw(PMPI_Win_start, group, idx, k, assert, win, &w->start_real);
    free(idx);
    free(r);
    w->start_n = gn;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_complete(MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_complete(win));
    if (w->start_n < 0)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < w->start_n; i++) {
        int t = w->start_to[i];
        w->in_start[t] = 0;
        if (fast_to(w, t))
            atomic_fetch_add(&w->peer[t].ctl->done, 1);
    }
    w->start_n = -1;
    int rc = MPI_SUCCESS;
    if (w->start_real)
        rc = PMPI_AWAY(PMPI_Win_complete(win));
    w->start_real = 0;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_wait(MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_wait(win));
    if (!w->post_open)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    unsigned spins = 0;
    while (atomic_load_explicit(&w->ctl->done, memory_order_acquire) < w->done_want)
        rma_relax(&spins);
    int rc = MPI_SUCCESS;
    if (w->post_real)
        rc = PMPI_AWAY(PMPI_Win_wait(win));
    w->post_real = 0;
    w->post_open = 0;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_test(MPI_Win win, int *flag)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_Win_test(win, flag);
    if (!w->post_open)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    *flag = 0;
    if (atomic_load_explicit(&w->ctl->done, memory_order_acquire) < w->done_want) {
        rma_progress();
        return MPI_SUCCESS;
    }
    if (w->post_real) {
        /* Only once bobcat's part is over: a true answer ends the real exposure epoch. */
        int f = 0, rc = PMPI_Win_test(win, &f);
        if (rc != MPI_SUCCESS || !f)
            return rc;
        w->post_real = 0;
    }
    w->post_open = 0;
    *flag = 1;
    sync_count(w);
    return MPI_SUCCESS;
}

/* ---- passive target ---- */

static void lock_shared(rma_ctl_t *c)
{
    unsigned spins = 0;
    for (;;) {
        int64_t v = atomic_fetch_add(&c->lock, 1);
        if (!(v & RMA_LOCK_EXCL))
            return;
        atomic_fetch_sub(&c->lock, 1);
        while (atomic_load_explicit(&c->lock, memory_order_relaxed) & RMA_LOCK_EXCL)
            rma_relax(&spins);
    }
}

static void unlock_ours(rma_ctl_t *c, int how)
{
    if (how == RMA_L_EXCL)
        atomic_fetch_sub(&c->lock, RMA_LOCK_EXCL);
    else if (how == RMA_L_SHARED)
        atomic_fetch_sub(&c->lock, 1);
}

static int bad_rank(const rma_win_t *w, int t) { return t < 0 || t >= w->n; }

/* A window that spans nodes: a passive epoch on a node mate takes the real window's lock, which
 * excludes the off-node origins that only the real MPI serves. An MPI may grant it lazily (at the
 * first operation or at the unlock: MPICH's ch3 does), but bobcat's loads and stores need it held
 * before they start, so a one-byte real get, flushed, proves it granted: an operation completed at
 * the target was done inside the epoch. Not under MPI_MODE_NOCHECK (no one may hold a conflicting
 * lock then) nor for an empty window part (nothing to reach). t < 0: every node mate (lock_all). */
static int hold(rma_win_t *w, int t, int assert)
{
    if (assert & MPI_MODE_NOCHECK)
        return MPI_SUCCESS;
    /* Not on the stack: MPICH 4.0.2 can complete such a get after the flush below has returned
     * (MPICH's test rma/large_acc_flush_local across simulated nodes: its byte landed in a later
     * frame, PMPI_Win_flush_local's, "stack smashing detected"); its value is never read. */
    static char b[64];
    int issued = 0;
    int lo = t < 0 ? 0 : t, hi = t < 0 ? w->n : t + 1;
    for (int r = lo; r < hi; r++)
        if (fast_to(w, r) && w->peer[r].size > 0) {
            int rc = PMPI_Get(b, 1, MPI_BYTE, r, 0, 1, MPI_BYTE, w->win);
            if (rc != MPI_SUCCESS)
                return rc;
            issued = 1;
        }
    if (!issued)
        return MPI_SUCCESS;
    return t < 0 ? PMPI_Win_flush_all(w->win) : PMPI_Win_flush(t, w->win);
}
/* Which passive epochs hold the real lock that way: a spanning window's, not a dynamic one's (its
 * addresses outside the segment go through the real window, per address). */
static int holds(const rma_win_t *w) { return w->spans && !w->dynamic; }

static void owed_clear(rma_win_t *w, int t)
{
    if (t < 0) {
        if (w->nowed)
            memset(w->owed, 0, (size_t)w->n);
        w->nowed = 0;
    } else if (w->owed[t]) {
        w->owed[t] = 0;
        w->nowed--;
    }
}

BOBCAT_EXPORT int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if ((!w && RMA_ALONE(RMA_SYNC, 0)) || rank == MPI_PROC_NULL)
        return PMPI_AWAY(PMPI_Win_lock(lock_type, rank, assert, win));
    if (bad_rank(w, rank))
        return rma_error(w, MPI_ERR_RANK);
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return rma_error(w, MPI_ERR_LOCKTYPE);
    if (w->locked[rank] || w->lock_all || w->start_n >= 0)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    w->fence_open = 0; /* a fence's epoch ends where a passive one begins */
    int rc = MPI_SUCCESS;
    if (w->spans || !fast_to(w, rank)) {
        rc = PMPI_AWAY(PMPI_Win_lock(lock_type, rank, assert, win));
        if (rc != MPI_SUCCESS)
            return rc;
        w->locked[rank] = RMA_L_REAL;
        /* (if the proof fails the epoch stays the real window's alone: still right) */
        if (holds(w) && fast_to(w, rank) && PMPI_AWAY(hold(w, rank, assert)) == MPI_SUCCESS)
            w->locked[rank] = lock_type == MPI_LOCK_EXCLUSIVE ? RMA_L_HELDX : RMA_L_HELD;
    } else {
        if (assert & MPI_MODE_NOCHECK) {
            w->locked[rank] = RMA_L_NOCHECK;
        } else if (lock_type == MPI_LOCK_EXCLUSIVE) {
            rma_acquire(&w->peer[rank].ctl->lock, RMA_LOCK_EXCL);
            w->locked[rank] = RMA_L_EXCL;
        } else {
            lock_shared(w->peer[rank].ctl);
            w->locked[rank] = RMA_L_SHARED;
        }
        if (rma_dyn_real(w)) { /* an address outside the target's segment goes through the real window */
            rc = PMPI_AWAY(PMPI_Win_lock(lock_type, rank, assert, win));
            w->locked_real[rank] = rc == MPI_SUCCESS;
        }
    }
    w->nlocked++;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_unlock(int rank, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if ((!w && RMA_ALONE(RMA_SYNC, 0)) || rank == MPI_PROC_NULL)
        return PMPI_AWAY(PMPI_Win_unlock(rank, win));
    if (bad_rank(w, rank))
        return rma_error(w, MPI_ERR_RANK);
    if (!w->locked[rank])
        return rma_error(w, MPI_ERR_RMA_SYNC);
    int rc = MPI_SUCCESS;
    atomic_thread_fence(memory_order_seq_cst);
    if (w->locked[rank] == RMA_L_REAL || rma_held(w->locked[rank]))
        rc = PMPI_AWAY(PMPI_Win_unlock(rank, win));
    else
        unlock_ours(w->peer[rank].ctl, w->locked[rank]);
    if (w->locked_real[rank]) {
        int rc2 = PMPI_AWAY(PMPI_Win_unlock(rank, win));
        if (rc == MPI_SUCCESS)
            rc = rc2;
        w->locked_real[rank] = 0;
    }
    w->locked[rank] = RMA_L_NONE;
    owed_clear(w, rank);
    w->nlocked--;
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_lock_all(int assert, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_lock_all(assert, win));
    if (w->lock_all || w->nlocked || w->start_n >= 0)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    w->fence_open = 0;
    int rc = MPI_SUCCESS;
    if (w->spans) {
        rc = PMPI_AWAY(PMPI_Win_lock_all(assert, win));
        if (rc == MPI_SUCCESS)
            w->lock_all = holds(w) && PMPI_AWAY(hold(w, -1, assert)) == MPI_SUCCESS ? RMA_L_HELD : RMA_L_REAL;
        sync_count(w);
        return rc;
    }
    if (assert & MPI_MODE_NOCHECK) {
        w->lock_all = RMA_L_NOCHECK;
    } else {
        for (int t = 0; t < w->n; t++)
            if (fast_to(w, t))
                lock_shared(w->peer[t].ctl);
        w->lock_all = RMA_L_SHARED;
    }
    if (w->mixed) {
        rc = PMPI_AWAY(PMPI_Win_lock_all(assert, win));
        w->lock_all_real = rc == MPI_SUCCESS;
    }
    sync_count(w);
    return rc;
}

BOBCAT_EXPORT int MPI_Win_unlock_all(MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(PMPI_Win_unlock_all(win));
    if (!w->lock_all)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    int rc = MPI_SUCCESS;
    atomic_thread_fence(memory_order_seq_cst);
    if (w->lock_all == RMA_L_REAL || rma_held(w->lock_all)) {
        rc = PMPI_AWAY(PMPI_Win_unlock_all(win));
    } else {
        if (w->lock_all == RMA_L_SHARED)
            for (int t = 0; t < w->n; t++)
                if (fast_to(w, t))
                    unlock_ours(w->peer[t].ctl, RMA_L_SHARED);
        if (w->lock_all_real)
            rc = PMPI_AWAY(PMPI_Win_unlock_all(win));
    }
    w->lock_all = 0;
    w->lock_all_real = 0;
    owed_clear(w, -1);
    sync_count(w);
    return rc;
}

/* The real window holds a passive epoch on t (or on everyone) that may have operations of this
 * origin to complete: its flush must be called too. A held epoch's only real operations are those
 * counted as owed (accumulates, or anything to an off-node target under lock_all). */
static int real_locked(const rma_win_t *w, int t)
{
    /* (the one-node window's answer, 0, first: a held epoch is none of these) */
    if (w->lock_all == RMA_L_REAL || w->lock_all_real || w->locked[t] == RMA_L_REAL || w->locked_real[t])
        return 1;
    return w->spans && rma_held(w->locked[t] ? w->locked[t] : w->lock_all) && w->owed[t];
}
static int any_real_locked(const rma_win_t *w)
{
    if (w->lock_all == RMA_L_REAL || w->lock_all_real)
        return 1;
    if (rma_held(w->lock_all))
        return w->nowed > 0;
    if (!w->mixed)
        return 0;
    for (int t = 0; t < w->n; t++)
        if (w->locked[t] && real_locked(w, t))
            return 1;
    return 0;
}
static int passive(const rma_win_t *w, int t) { return w->lock_all || (t >= 0 && t < w->n && w->locked[t]); }

static int flush_one(MPI_Win win, int rank, int local, int (*real)(int, MPI_Win))
{
    rma_win_t *w = rma_get(win);
    if ((!w && RMA_ALONE(RMA_SYNC, 0)) || rank == MPI_PROC_NULL)
        return PMPI_AWAY(real(rank, win));
    if (bad_rank(w, rank))
        return rma_error(w, MPI_ERR_RANK);
    if (!passive(w, rank))
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst); /* bobcat's operations completed when they returned */
    sync_count(w);
    if (real_locked(w, rank)) {
        if (!local)
            owed_clear(w, rank);
        return PMPI_AWAY(real(rank, win));
    }
    if (w->mixed) /* a real flush skipped: what the real MPI owes others (their operations' target side) */
        rma_progress();
    return MPI_SUCCESS;
}

static int flush_all(MPI_Win win, int local, int (*real)(MPI_Win))
{
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(real(win));
    if (!w->lock_all && !w->nlocked)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst);
    sync_count(w);
    if (any_real_locked(w)) {
        if (!local)
            owed_clear(w, -1);
        return PMPI_AWAY(real(win));
    }
    if (w->mixed)
        rma_progress();
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_flush(int rank, MPI_Win win)
{
    PMPI_GUARD();
    return flush_one(win, rank, 0, PMPI_Win_flush);
}

BOBCAT_EXPORT int MPI_Win_flush_local(int rank, MPI_Win win)
{
    PMPI_GUARD();
    return flush_one(win, rank, 1, PMPI_Win_flush_local);
}

BOBCAT_EXPORT int MPI_Win_flush_all(MPI_Win win)
{
    PMPI_GUARD();
    return flush_all(win, 0, PMPI_Win_flush_all);
}

BOBCAT_EXPORT int MPI_Win_flush_local_all(MPI_Win win)
{
    PMPI_GUARD();
    return flush_all(win, 1, PMPI_Win_flush_local_all);
}

/* The unified model: the public and private copies are one; a fence orders this rank's loads and
 * stores against the others'. */
BOBCAT_EXPORT int MPI_Win_sync(MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_Win_sync(win);
    atomic_thread_fence(memory_order_seq_cst);
    sync_count(w);
    if (w->mixed && (w->lock_all || w->nlocked))
        return PMPI_Win_sync(win);
    return MPI_SUCCESS;
}

/* The operations' way (pmpi_rma_ops.c): -1 no epoch reaches t, 0 bobcat's, 1 the real window's.
 * acc: an accumulate (the real window's on a window that spans nodes, unless this origin holds the
 * target exclusively). */
int rma_route(const rma_win_t *w, int t, int acc)
{
    int lk = w->locked[t] ? w->locked[t] : w->lock_all;
    if (lk)
        return lk == RMA_L_REAL || !fast_to(w, t) || (acc && w->spans && lk != RMA_L_HELDX);
    if ((w->start_n >= 0 && w->in_start[t]) || w->fence_open)
        return !fast_to(w, t) || (acc && w->spans);
    return -1;
}
