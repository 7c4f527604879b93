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
 *    a count); flushes are memory fences.
 * For the pairs that go through the real window (pmpi_rma.h: `spans`, unreachable ranks, dynamic
 * windows), the real window's own calls are made beside these, on the subgroups they concern. */
#include "pmpi_rma.h"

#include <stdlib.h>

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
    if (w->locked[rank] == RMA_L_REAL)
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
            w->lock_all = RMA_L_REAL;
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
    if (w->lock_all == RMA_L_REAL) {
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
    sync_count(w);
    return rc;
}

/* The real window holds a passive epoch on t (or on everyone): its flushes must be called too. */
static int real_locked(const rma_win_t *w, int t)
{
    return w->lock_all == RMA_L_REAL || w->lock_all_real || w->locked[t] == RMA_L_REAL || w->locked_real[t];
}
static int any_real_locked(const rma_win_t *w)
{
    if (w->lock_all == RMA_L_REAL || w->lock_all_real)
        return 1;
    if (!w->mixed)
        return 0;
    for (int t = 0; t < w->n; t++)
        if (w->locked[t] == RMA_L_REAL || w->locked_real[t])
            return 1;
    return 0;
}
static int passive(const rma_win_t *w, int t) { return w->lock_all || (t >= 0 && t < w->n && w->locked[t]); }

static int flush_one(MPI_Win win, int rank, int local, int (*real)(int, MPI_Win))
{
    rma_win_t *w = rma_get(win);
    if ((!w && RMA_ALONE(RMA_SYNC, 0)) || rank == MPI_PROC_NULL)
        return PMPI_AWAY(real(rank, win));
    (void)local;
    if (bad_rank(w, rank))
        return rma_error(w, MPI_ERR_RANK);
    if (!passive(w, rank))
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst); /* bobcat's operations completed when they returned */
    sync_count(w);
    if (real_locked(w, rank))
        return PMPI_AWAY(real(rank, win));
    return MPI_SUCCESS;
}

static int flush_all(MPI_Win win, int (*real)(MPI_Win))
{
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_SYNC, 0))
        return PMPI_AWAY(real(win));
    if (!w->lock_all && !w->nlocked)
        return rma_error(w, MPI_ERR_RMA_SYNC);
    atomic_thread_fence(memory_order_seq_cst);
    sync_count(w);
    if (any_real_locked(w))
        return PMPI_AWAY(real(win));
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
    return flush_all(win, PMPI_Win_flush_all);
}

BOBCAT_EXPORT int MPI_Win_flush_local_all(MPI_Win win)
{
    PMPI_GUARD();
    return flush_all(win, PMPI_Win_flush_local_all);
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
 * acc: an accumulate (the real window's on a window that spans nodes). */
int rma_route(const rma_win_t *w, int t, int acc)
{
    int lk = w->locked[t] ? w->locked[t] : w->lock_all;
    if (lk)
        return lk == RMA_L_REAL || !fast_to(w, t) || (acc && w->spans);
    if ((w->start_n >= 0 && w->in_start[t]) || w->fence_open)
        return !fast_to(w, t) || (acc && w->spans);
    return -1;
}
