/* p2p_send: the sends — MPI_Send, Ssend, Rsend, Bsend and their nonblocking forms (and, with an
 * MPI 4 library, the _c large-count forms: p2p_send_api.h is included twice).
 *
 * Small messages without a request: a standard, ready or buffered send of a contiguous datatype
 * to a node mate that fits an eager node or a fast-box cell is complete once linked: the blocking
 * call returns at once and the nonblocking one hands out the one shared completed request (like the
 * MPIs' own for MPI_PROC_NULL), so neither allocates, clears or retires a request. Larger blocking
 * sends wait on an engine request on their stack; everything else is a request of the pool. */
#include "p2p.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

typedef pmpi_dt_info_t dtinfo_t;

/* The bytes of a send send_small takes (contiguous, to a node mate, at most the eager limit, not
 * synchronous), else -1; *d_p: the datatype's entry. The datatype is looked at only once the other
 * arguments qualify (a bad one is the real MPI's to report), through `get`: pmpi_dt_cached (no
 * call; a miss is -1) or pmpi_dt_get. */
static inline __attribute__((always_inline)) MPI_Count small_bytes(MPI_Count count, MPI_Datatype dt, int dest,
                                                                   int tag, const p2p_comm_t *c, int mode,
                                                                   const dtinfo_t *(*get)(MPI_Datatype),
                                                                   const dtinfo_t **d_p)
{
    if (mode == MODE_SYNC || p2p_route(c, dest, tag, count, 0) != P2P_TO_ENGINE)
        return -1;
    const dtinfo_t *d = *d_p = get(dt);
    if (!d)
        return -1;
    MPI_Count bytes = count * d->size;
    return d->contig && (size_t)bytes <= p2p_set.eager_limit ? bytes : -1;
}

/* Send it (complete on return); the engine call comes last, after every other store, so that it is
 * a tail call. Returns MPI_SUCCESS. */
static inline int send_small(const void *buf, MPI_Count bytes, const dtinfo_t *d, int dest, int tag,
                             const p2p_comm_t *c)
{
    pmpi_stat_path(&p2p_st_send, PMPI_PATH_INPLACE, (size_t)bytes, 0);
    return bobcat_msg_send_eager(c->ctx, c->rank, tag, c->local[dest], (const char *)buf + d->lb, (size_t)bytes);
}

/* The path a send through the engine took, for BOBCAT_STATS. */
static inline void count_engine_send(size_t bytes, const void *data, int packed)
{
    size_t eager = p2p_set.eager_limit;
    pmpi_stat_path(&p2p_st_send, packed || (bytes > eager && !smap_is_shared(data)) ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE,
                   bytes, bytes > eager);
}

/* Any send, nonblocking, except those send_small completes (p2p_isend). */
static __attribute__((noinline)) int isend_general(const void *buf, MPI_Count count, MPI_Datatype dt, int dest,
                                                   int tag, MPI_Comm comm, int mode, MPI_Request *req)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    const dtinfo_t *sd;
    MPI_Count small;
    if (c && (small = small_bytes(count, dt, dest, tag, c, mode, pmpi_dt_get, &sd)) >= 0) {
        *req = p2p_set.done;
        return send_small(buf, small, sd, dest, tag, c);
    }
    switch (p2p_route(c, dest, tag, count, 0)) {
    case P2P_TO_NULL:
        *req = p2p_set.done; /* complete, as the MPIs' own: nothing to allocate or retire */
        return MPI_SUCCESS;
    case P2P_TO_MPI:
        if (pmpi_stats_on)
            pmpi_stat_mpi(&p2p_st_send, p2p_why_not(comm), P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_NONBLOCKING, mode, buf, count, dt, dest, tag, comm, req, NULL); /* it reports errors */
    case P2P_TO_OFFNODE:
        pmpi_stat_mpi(&p2p_st_send, PMPI_WHY_OFFNODE, P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_NONBLOCKING, mode, buf, count, dt, dest, tag, comm, req, NULL);
    case P2P_TO_ENGINE:
        break;
    }
    dtinfo_t d = *pmpi_dt_get(dt);
    const void *data = (const char *)buf + d.lb;
    MPI_Count bytes = count * d.size;
    void *pack = NULL;
    if (!d.contig && bytes) {
        pack = malloc((size_t)bytes);
        if (!pack)
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
        if (pmpi_dt_pack(buf, count, dt, pack) != bytes) {
            free(pack);
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
        }
        data = pack;
        p2p_st_engine.extra[P2P_X_NONCONTIG]++;
    } else if (mode == MODE_BUF && (size_t)bytes > p2p_set.eager_limit) {
        /* Buffered: complete locally whatever the receiver does; our copy lives in the segment. */
        pack = malloc((size_t)bytes);
        if (!pack)
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
        memcpy(pack, data, (size_t)bytes);
        data = pack;
    }
    p2p_req_t *r = p2p_req_new();
    if (!r) {
        free(pack);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    }
    r->kind = P2P_K_SEND;
    r->comm = comm;
    r->mode = mode;
    bobcat_msg_send(&r->m, c->ctx, c->rank, tag, c->local[dest], data, (size_t)bytes, mode == MODE_SYNC);
    count_engine_send((size_t)bytes, data, pack != NULL);
    if (pack) {
        if ((size_t)bytes <= p2p_set.eager_limit)
            free(pack); /* the payload is in a cell or the pending queue already */
        else
            r->pack = pack;
    }
    if (mode == MODE_BUF && !r->m.complete) {
        p2p_orphan(r);
        *req = p2p_set.done; /* complete for the program: the shared completed send stands in */
        return MPI_SUCCESS;
    }
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

/* Any send, nonblocking. A small one is over on return and hands out the shared completed request.
 * Its path makes no call but the engine's, last (a tail call), and every miss (another communicator
 * than the last, a datatype not cached) goes to isend_general: so it saves no registers, and every
 * store of a small send counts, for each one waits behind the fast-box cell's (see fbox_publish). */
static inline __attribute__((always_inline)) int p2p_isend(const void *buf, MPI_Count count, MPI_Datatype dt,
                                                           int dest, int tag, MPI_Comm comm, int mode,
                                                           MPI_Request *req)
{
    const p2p_comm_t *c = p2p_comm_last;
    const dtinfo_t *d;
    MPI_Count bytes;
    if (c && c->comm == comm && (bytes = small_bytes(count, dt, dest, tag, c, mode, pmpi_dt_cached, &d)) >= 0) {
        *req = p2p_set.done;
        return send_small(buf, bytes, d, dest, tag, c);
    }
    return isend_general(buf, count, dt, dest, tag, comm, mode, req);
}

int p2p_isend_any(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                             int mode, MPI_Request *req)
{
    return p2p_isend(buf, count, dt, dest, tag, comm, mode, req);
}

/* A blocking standard or synchronous send of a contiguous datatype to a node mate, above the eager
 * limit: the engine request on the stack and the wait here, as MPI_Wait would do it for a request
 * (progress of both worlds, a detach when the receiver is slow to match, yielding), without
 * allocating, handing out and retiring one. 1 if sent. */
#define SEND_PROGRESS_EVERY 8
static int send_large(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, const p2p_comm_t *c,
                      int mode)
{
    if ((mode != MODE_STD && mode != MODE_SYNC) || p2p_route(c, dest, tag, count, 0) != P2P_TO_ENGINE)
        return 0;
    const dtinfo_t *d = pmpi_dt_get(dt);
    if (!d->contig)
        return 0;
    size_t bytes = (size_t)count * (size_t)d->size;
    const void *data = (const char *)buf + d->lb;
    msg_req_t m;
    bobcat_msg_send(&m, c->ctx, c->rank, tag, c->local[dest], data, bytes, mode == MODE_SYNC);
    count_engine_send(bytes, data, 0);
    /* MPI_Wait's loop over p2p_req_test, with the full progress pass on every SEND_PROGRESS_EVERY-th
     * look only: in a ping-pong the receiver publishes its reply about one turnaround after it
     * signals our `done`, and a progress pass that runs meanwhile takes that reply out of its cell
     * into the unexpected queue, so the blocking receive that follows cannot take it from the cell.
     * The looks in between test the send alone (which also serves a split-copy offer) and count
     * towards the detach. (Prefetching the line where the reply will land, meanwhile, made it
     * slower: the read competes with the receiver's store; docs/benchmarks.md.) */
    unsigned polls = 0, spins = 0;
    for (unsigned k = 1;; k++) {
        if (bobcat_msg_test(&m))
            break;
        if (k % SEND_PROGRESS_EVERY == 0) {
            p2p_progress();
            polls += SEND_PROGRESS_EVERY - 1;
            if (p2p_send_settled(&m, &polls))
                break;
            p2p_poke_mpi();
        }
        p2p_relax(&spins);
    }
    return 1;
}

/* Blocking forms: start, then wait through MPI_Wait (which serves both worlds). A send bobcat
 * leaves to the real MPI with nothing of bobcat's pending is the real MPI's blocking call. */
static __attribute__((noinline)) int p2p_send(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag,
                                              MPI_Comm comm, int mode)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    const dtinfo_t *d;
    MPI_Count bytes;
    if (c && (bytes = small_bytes(count, dt, dest, tag, c, mode, pmpi_dt_get, &d)) >= 0)
        return send_small(buf, bytes, d, dest, tag, c);
    p2p_to_t to = p2p_route(c, dest, tag, count, 0);
    if (to == P2P_TO_NULL)
        return MPI_SUCCESS; /* at once, as the MPIs do (a stencil's edge sends there every step) */
    if ((to == P2P_TO_MPI || to == P2P_TO_OFFNODE) && !p2p_need_progress()) {
        pmpi_stat_mpi(&p2p_st_send, to == P2P_TO_OFFNODE ? PMPI_WHY_OFFNODE : p2p_why_not(comm),
                      P2P_MPI_BYTES(count, dt));
        return p2p_real(P2P_BLOCKING, mode, buf, count, dt, dest, tag, comm, NULL, NULL);
    }
    if (to == P2P_TO_ENGINE && send_large(buf, count, dt, dest, tag, c, mode))
        return MPI_SUCCESS;
    MPI_Request req;
    int rc = p2p_isend(buf, count, dt, dest, tag, comm, mode, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* The blocking send of the ping-pong path: between a message's arrival and the reply's publication
 * a rank runs the end of its MPI_Recv and the start of its MPI_Send, so both are kept to what a
 * small message to the last communicator's node mate needs (no frame, no register saves, the
 * datatype from the cache), as p2p_isend is; anything else takes the general path. */
static inline __attribute__((always_inline)) int send_fast(const void *buf, MPI_Count count, MPI_Datatype dt,
                                                           int dest, int tag, MPI_Comm comm, int mode)
{
    const p2p_comm_t *c = p2p_comm_last;
    const dtinfo_t *d;
    MPI_Count bytes;
    if (c && c->comm == comm && (bytes = small_bytes(count, dt, dest, tag, c, mode, pmpi_dt_cached, &d)) >= 0)
        return send_small(buf, bytes, d, dest, tag, c);
    return p2p_send(buf, count, dt, dest, tag, comm, mode);
}

#define P2P_API "p2p_send_api.h"
#include "p2p_counts.h"
