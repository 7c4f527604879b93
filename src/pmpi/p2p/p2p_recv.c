/* p2p_recv: the receives — MPI_Recv, MPI_Irecv, MPI_Mrecv/Imrecv (their _c forms with an MPI 4
 * library: p2p_recv_api.h is included twice) — and the probes.
 *
 * A blocking receive from one node mate with nothing before it in MPI's order takes its message
 * straight from the pair's fast-box cell (no request, no posted list); otherwise it waits on an
 * engine request on its stack, or (a non-contiguous type, a wildcard across nodes) on a request of
 * the pool through MPI_Wait. */
#include "p2p.h"

#include <limits.h>
#include <stdlib.h>

typedef pmpi_dt_info_t dtinfo_t;

/* Polls of the pair's cell by a blocking receive before it posts a request and waits the general
 * way (which also yields, and drives the real MPI when a job spans nodes): 16 x BOBCAT_COLL_SPIN
 * (a few microseconds: a poll is an L1 hit until the line moves, and a round trip between two
 * chips can take most of a microsecond), and a few only when ranks outnumber cores (the sender may
 * be waiting for this core). */
static inline unsigned recv_box_polls(void)
{
    if (pmpi_layer.spin <= 1)
        return 4;
    /* at most 65536 (some 100 us): a large BOBCAT_COLL_SPIN must not keep the real MPI unpolled */
    return pmpi_layer.spin >= 4096 ? 65536u : 16u * (unsigned)pmpi_layer.spin;
}

/* The pair's next message straight from its cell (bobcat_msg_recv_box) into dst: 1 if taken (status
 * set), 0 if the receive must be posted. */
static inline __attribute__((always_inline)) int recv_cell(const p2p_comm_t *c, void *dst, size_t cap, int src,
                                                           int tag, MPI_Status *st)
{
    int32_t got_tag;
    uint64_t got_len;
    if (!bobcat_msg_recv_box(c->ctx, src, tag == MPI_ANY_TAG ? MSG_ANY : tag, c->local[src], dst, cap,
                             recv_box_polls(), &got_tag, &got_len))
        return 0;
    if (st != MPI_STATUS_IGNORE)
        p2p_status_set(st, src, got_tag, (MPI_Count)got_len, 0);
    return 1;
}

/* 1 if the receive was done here (*rc_p: its result). try_box 0: recv_fast has looked at the cell
 * already (and counted the call). */
static int recv_small(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, const p2p_comm_t *c,
                      MPI_Status *st, int *rc_p, int try_box)
{
    if (p2p_route(c, src, tag, count, 1) != P2P_TO_ENGINE || (src == MPI_ANY_SOURCE && c->mixed))
        return 0;
    const dtinfo_t *d = pmpi_dt_get(dt);
    if (!d->contig)
        return 0;
    size_t cap = (size_t)count * (size_t)d->size;
    void *dst = (char *)buf + d->lb;
    if (try_box)
        pmpi_stat_path(&p2p_st_recv, PMPI_PATH_INPLACE, cap, 0);
    /* From one node mate, with nothing else owed progress: its next message straight from the
     * pair's cell (the engine says when that cannot be; then the receive is posted as usual). */
    if (try_box && src >= 0 && !p2p_offq_head && !p2p_orphans_pending() && recv_cell(c, dst, cap, src, tag, st)) {
        *rc_p = MPI_SUCCESS;
        return 1;
    }
    msg_req_t m;
    bobcat_msg_recv(&m, c->ctx, src == MPI_ANY_SOURCE ? MSG_ANY : src, tag == MPI_ANY_TAG ? MSG_ANY : tag, dst, cap);
    if (!m.complete)
        bobcat_msg_progress_for(&m);
    unsigned spins = 0;
    while (!m.complete) {
        p2p_progress();
        if (m.complete)
            break;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
    p2p_status_set(st, m.st_src, m.st_tag, (MPI_Count)m.st_len, 0);
    *rc_p = MPI_SUCCESS;
    if (m.truncated) {
        PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
        *rc_p = MPI_ERR_TRUNCATE;
    }
    return 1;
}

/* Any receive, nonblocking. */
static int p2p_irecv(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    p2p_to_t to = p2p_route(c, src, tag, count, 1);
    if (to == P2P_TO_NULL) {
        *req = p2p_set.done_recv;
        return MPI_SUCCESS;
    }
    if (to == P2P_TO_MPI) {
        if (pmpi_stats_on)
            pmpi_stat_mpi(&p2p_st_recv, p2p_why_not(comm), P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_NONBLOCKING, MODE_RECV, buf, count, dt, src, tag, comm, req, NULL);
    }
    int off_only = to == P2P_TO_OFFNODE;
    if (off_only && !p2p_offq_has_comm(comm)) {
        pmpi_stat_mpi(&p2p_st_recv, PMPI_WHY_OFFNODE, P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_NONBLOCKING, MODE_RECV, buf, count, dt, src, tag, comm, req, NULL);
    }
    p2p_req_t *r = p2p_req_new();
    if (!r)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    r->comm = comm;
    r->buf = buf;
    r->count = count;
    r->type = dt;
    r->peer = src;
    r->tag = tag;
    r->mode = MODE_RECV;
    if (off_only) {
        /* Behind a wildcard on this communicator: wait in the off-node queue (the real MPI will
         * receive it into the user's type, after this call: hold it). */
        r->kind = P2P_K_DEFER;
        if (p2p_req_hold_type(r, dt) != MPI_SUCCESS) {
            p2p_req_release(r);
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
        }
        p2p_offq_add(r);
        pmpi_stat_path(&p2p_st_recv, PMPI_PATH_INPLACE, 0, 2);
        *req = p2p_handle_of(r);
        return MPI_SUCCESS;
    }
    const dtinfo_t *d = pmpi_dt_get(dt);
    void *dst = (char *)buf + d->lb;
    MPI_Count cap = count * d->size;
    int contig = d->contig;
    int mixed_wild = src == MPI_ANY_SOURCE && c->mixed;
    if (!contig && cap) {
        r->pack = malloc((size_t)cap);
        if (!r->pack) {
            p2p_req_release(r);
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
        }
        dst = r->pack;
        p2p_st_engine.extra[P2P_X_NONCONTIG]++;
    }
    /* The type is used after this call to lay the bytes out, or by the real MPI if an off-node
     * message takes the receive: hold it. */
    if ((r->pack || mixed_wild) && p2p_req_hold_type(r, dt) != MPI_SUCCESS) {
        p2p_req_release(r);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
    }
    r->kind = P2P_K_RECV;
    bobcat_msg_recv(&r->m, c->ctx, src == MPI_ANY_SOURCE ? MSG_ANY : src, tag == MPI_ANY_TAG ? MSG_ANY : tag, dst,
                    (size_t)cap);
    pmpi_stat_path(&p2p_st_recv, r->pack ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, (size_t)cap, mixed_wild);
    if (mixed_wild && !r->m.complete)
        p2p_offq_add(r);
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

int p2p_irecv_any(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                             MPI_Request *req)
{
    return p2p_irecv(buf, count, dt, src, tag, comm, req);
}

static __attribute__((noinline)) int p2p_recv(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag,
                                              MPI_Comm comm, MPI_Status *st, int try_box)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    /* From a rank off this node (or on a communicator bobcat leaves alone) with nothing of bobcat's
     * pending: the real MPI's blocking receive, whose errors (a truncation) go to the
     * communicator's handler as the MPI itself raises them (MPICH raises those of an MPI_Wait on
     * MPI_COMM_WORLD's). */
    p2p_to_t to = p2p_route(c, src, tag, count, 1);
    if (to == P2P_TO_NULL) {
        p2p_status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, 0);
        return MPI_SUCCESS;
    }
    if ((to == P2P_TO_MPI || to == P2P_TO_OFFNODE) && !p2p_need_progress()) {
        pmpi_stat_mpi(&p2p_st_recv, to == P2P_TO_OFFNODE ? PMPI_WHY_OFFNODE : p2p_why_not(comm),
                      P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_BLOCKING, MODE_RECV, buf, count, dt, src, tag, comm, NULL, st);
    }
    int rc;
    if (c && recv_small(buf, count, dt, src, tag, comm, c, st, &rc, try_box))
        return rc;
    MPI_Request req;
    rc = p2p_irecv(buf, count, dt, src, tag, comm, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&req, st);
}

/* A receive from one node mate with nothing before it in MPI's order: its message straight from the
 * pair's cell (recv_small's first step, without its frame: see send_fast in p2p_send.c). */
static inline __attribute__((always_inline)) int recv_fast(void *buf, MPI_Count count, MPI_Datatype dt, int src,
                                                           int tag, MPI_Comm comm, MPI_Status *st)
{
    const p2p_comm_t *c = p2p_comm_last;
    const dtinfo_t *d;
    if (!c || c->comm != comm || src < 0 || p2p_route(c, src, tag, count, 1) != P2P_TO_ENGINE || p2p_offq_head ||
        p2p_orphans_pending() || !(d = pmpi_dt_cached(dt)) || !d->contig)
        return p2p_recv(buf, count, dt, src, tag, comm, st, 1);
    size_t cap = (size_t)count * (size_t)d->size;
    pmpi_stat_path(&p2p_st_recv, PMPI_PATH_INPLACE, cap, 0);
    if (!recv_cell(c, (char *)buf + d->lb, cap, src, tag, st))
        return p2p_recv(buf, count, dt, src, tag, comm, st, 0);
    return MPI_SUCCESS;
}

/* ---- probes ---- */

static int probe_impl(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st, int blocking, MPI_Message *msg_p)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    p2p_to_t to = p2p_route(c, src, tag, 0, 1);
    if (to == P2P_TO_MPI || to == P2P_TO_NULL) {
        if (msg_p) {
            if (blocking)
                return PMPI_AWAY(PMPI_Mprobe(src, tag, comm, msg_p, st));
            return PMPI_Improbe(src, tag, comm, flag, msg_p, st);
        }
        if (blocking)
            return PMPI_AWAY(PMPI_Probe(src, tag, comm, st));
        return PMPI_Iprobe(src, tag, comm, flag, st);
    }
    int on = src == MPI_ANY_SOURCE || to == P2P_TO_ENGINE;
    int off = c->mixed && (src == MPI_ANY_SOURCE || to == P2P_TO_OFFNODE);
    unsigned spins = 0;
    for (;;) {
        p2p_progress();
        if (on) {
            msg_unexp_t *u = bobcat_msg_probe(c->ctx, src == MPI_ANY_SOURCE ? MSG_ANY : src,
                                              tag == MPI_ANY_TAG ? MSG_ANY : tag, msg_p != NULL);
            if (u) {
                p2p_status_set(st, u->src, u->tag, (MPI_Count)u->len, 0);
                if (msg_p) {
                    p2p_req_t *m = p2p_req_new();
                    if (!m)
                        return MPI_ERR_NO_MEM;
                    m->kind = P2P_K_NULL;
                    m->comm = comm;
                    m->buf = u; /* the message itself, until MPI_(I)mrecv */
                    *msg_p = p2p_msghandle_of(m);
                }
                if (flag)
                    *flag = 1;
                return MPI_SUCCESS;
            }
        }
        if (off) {
            int f = 0, rc;
            if (msg_p)
                rc = PMPI_Improbe(src, tag, comm, &f, msg_p, st);
            else
                rc = PMPI_Iprobe(src, tag, comm, &f, st);
            if (rc != MPI_SUCCESS || f) {
                if (flag)
                    *flag = f;
                return rc;
            }
        } else {
            p2p_poke_mpi();
        }
        if (!blocking) {
            *flag = 0;
            return MPI_SUCCESS;
        }
        p2p_relax(&spins);
    }
}

BOBCAT_EXPORT int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    PMPI_GUARD();
    return probe_impl(src, tag, comm, NULL, st, 1, NULL);
}

BOBCAT_EXPORT int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
    PMPI_GUARD();
    return probe_impl(src, tag, comm, flag, st, 0, NULL);
}

BOBCAT_EXPORT int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *st)
{
    PMPI_GUARD();
    return probe_impl(src, tag, comm, NULL, st, 1, msg);
}

BOBCAT_EXPORT int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg, MPI_Status *st)
{
    PMPI_GUARD();
    return probe_impl(src, tag, comm, flag, st, 0, msg);
}

#define P2P_API "p2p_recv_api.h"
#include "p2p_counts.h"
