/* pmpi_coll_count: MPI 4.0's large-count forms of the collectives bobcat handles with one count per
 * rank (MPI_Bcast_c, MPI_Allreduce_c, MPI_Alltoall_c, ..., and their nonblocking forms), so that a
 * program built against MPI 4 counts (PETSc with MPI large counts, VTK, mpi4py 4 on MPICH) takes
 * the same on-node paths as one that passes ints (docs/mpi.md, "Large counts").
 *
 * A count that fits an int is passed on to the int form, the layer's own entry point (its
 * statistics row counts the call). A larger one must not send this rank to the real MPI while its
 * peers, whose counts fit, go bobcat's way (a count is the rank's own; only the type signature is
 * shared): the rank passes one element of a datatype made of `count` elements instead (the same
 * signature and extent), so every rank takes the int form's path. Reductions need a predefined
 * datatype, and their count is the same on every rank (the standard says so): a large one is done
 * in pieces of 2^30 elements, each a call of the int form (element-wise, so the result is the same),
 * and, nonblocking, by the real MPI on every rank alike. A negative count is the real MPI's to
 * report.
 *
 * The persistent forms (MPI_Bcast_init_c, ...) likewise: the int form's request holds the big
 * datatype; a large reduction is the real MPI's. Only MPIs with the _c forms (MPI_VERSION 4: MPICH
 * 4 and 5) have them.
 *
 * The v forms (Gatherv, Scatterv, Allgatherv, their nonblocking and persistent forms) take their
 * count and displacement arrays as they are (pc_vec_t, pmpi_coll.h: the layer's tables are 64-bit),
 * so a rank whose own values pass INT_MAX goes the int form's way like its peers; their one scalar
 * count is a pair as above. Alltoallv/w's are in pmpi_coll_alltoallv.c, the neighbourhood forms' in
 * pmpi_coll_neighbor.c, Reduce_scatter's nonblocking and persistent ones in pmpi_coll_nb.c. */
#include "../base/pmpi_dt.h"
#include "pmpi_coll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#if MPI_VERSION >= 4

#define PIECE ((MPI_Count)1 << 30)

/* One element of *t_p is `count` elements of dt (count > INT_MAX): a struct of 2^30-element blocks
 * and the remainder, resized to dt's lower bound and count extents. 0, or the MPI's error. */
static int big_type(MPI_Count count, MPI_Datatype dt, MPI_Datatype *t_p)
{
    MPI_Aint lb, ext;
    MPI_Count n = count / PIECE, r = count % PIECE;
    MPI_Datatype block = MPI_DATATYPE_NULL, blocks = MPI_DATATYPE_NULL, rest = MPI_DATATYPE_NULL,
                 s = MPI_DATATYPE_NULL;
    int rc = PMPI_Type_get_extent(dt, &lb, &ext);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_contiguous((int)PIECE, dt, &block);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_contiguous((int)n, block, &blocks); /* (n <= INT_MAX: pair() leaves larger counts to the MPI) */
    if (rc == MPI_SUCCESS && r)
        rc = PMPI_Type_contiguous((int)r, dt, &rest);
    if (rc == MPI_SUCCESS) {
        int lens[2] = {1, 1};
        MPI_Aint disp[2] = {0, (MPI_Aint)(n * PIECE) * ext};
        MPI_Datatype parts[2] = {blocks, rest};
        rc = PMPI_Type_create_struct(r ? 2 : 1, lens, disp, parts, &s);
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(s, lb, (MPI_Aint)count * ext, t_p);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_commit(t_p);
    MPI_Datatype *tmp[] = {&block, &blocks, &rest, &s};
    for (int i = 0; i < 4; i++)
        if (*tmp[i] != MPI_DATATYPE_NULL)
            pmpi_dt_free(tmp[i]);
    return rc;
}

/* Whether this rank is a rooted call's root (its root side's arguments matter): the root's rank in
 * an intracommunicator, MPI_ROOT in an intercommunicator's root group. */
static int at_root(int root, MPI_Comm comm)
{
    int inter = 0, me = -1;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 1;
    if (inter)
        return root == MPI_ROOT;
    return PMPI_Comm_rank(comm, &me) == MPI_SUCCESS && me == root;
}

/* The other side of a rooted call matters everywhere but at an intercommunicator's root group. */
static int off_root(int root) { return root != MPI_ROOT && root != MPI_PROC_NULL; }

/* A (count, datatype) pair as the int forms take it: itself, or one element of a big type (made, to
 * free after the call; MPI_DATATYPE_NULL: none). A pair that does not matter here (`buf`
 * MPI_IN_PLACE, or a rooted call's root side elsewhere than at the root) is passed with
 * count 0, whatever it was; a negative count or one beyond any memory, as -1, for the MPI to refuse. */
typedef struct {
    int count;
    MPI_Datatype dt, made;
    int rc;
} pair_t;

enum { ALL, ROOT, OFF }; /* where a side matters: every rank, the root, the others */

static pair_t pair(MPI_Count count, MPI_Datatype dt, const void *buf, int side, int root, MPI_Comm comm)
{
    pair_t p = {(int)count, dt, MPI_DATATYPE_NULL, MPI_SUCCESS};
    if (count >= 0 && count <= INT_MAX)
        return p;
    if (buf == MPI_IN_PLACE || (side == ROOT && !at_root(root, comm)) || (side == OFF && !off_root(root)))
        p.count = 0;
    else if (count < 0 || count / PIECE > INT_MAX)
        p.count = -1;
    else if ((p.rc = big_type(count, dt, &p.made)) == MPI_SUCCESS)
        p.count = 1, p.dt = p.made;
    return p;
}

static int let_go(pair_t *a, pair_t *b, int rc)
{
    pair_t *p[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (p[i] && p[i]->made != MPI_DATATYPE_NULL)
            MPI_Type_free(&p[i]->made); /* (a call still using it holds it: pmpi_dt_ref) */
    return rc;
}

/* A pair's failure to make its type: the MPI's error through the communicator's handler. */
static int failed(MPI_Comm comm, int rc)
{
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* One pair p on every rank's side (root: the call's, for pair's view of it). */
#define ONE(p, root, count_, dt_, buf_)                                                                        \
    pair_t p = pair(count_, dt_, buf_, ALL, root, comm);                                                       \
    if (p.rc != MPI_SUCCESS)                                                                                   \
        return let_go(&p, NULL, failed(comm, p.rc));

#define TWO(root, sc, st, sb, sside, rc_, rt, rb, rside)                                                        \
    pair_t s = pair(sc, st, sb, sside, root, comm), r = pair(rc_, rt, rb, rside, root, comm);                   \
    if (s.rc != MPI_SUCCESS || r.rc != MPI_SUCCESS)                                                           \
        return let_go(&s, &r, failed(comm, s.rc != MPI_SUCCESS ? s.rc : r.rc));

/* ---- broadcast and the moves: one element of a big type where a count is large ---------------- */

BOBCAT_EXPORT int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    ONE(b, 0, count, dt, buf)
    return let_go(&b, NULL, MPI_Bcast(buf, b.count, b.dt, root, comm));
}

BOBCAT_EXPORT int MPI_Ibcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm,
                               MPI_Request *req)
{
    PMPI_GUARD();
    ONE(b, 0, count, dt, buf)
    return let_go(&b, NULL, MPI_Ibcast(buf, b.count, b.dt, root, comm, req));
}

BOBCAT_EXPORT int MPI_Gather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                               MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    TWO(root, scount, stype, sbuf, OFF, rcount, rtype, NULL, ROOT)
    return let_go(&s, &r, MPI_Gather(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm));
}

BOBCAT_EXPORT int MPI_Igather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    TWO(root, scount, stype, sbuf, OFF, rcount, rtype, NULL, ROOT)
    return let_go(&s, &r, MPI_Igather(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm, req));
}

BOBCAT_EXPORT int MPI_Scatter_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    TWO(root, scount, stype, NULL, ROOT, rcount, rtype, rbuf, OFF)
    return let_go(&s, &r, MPI_Scatter(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm));
}

BOBCAT_EXPORT int MPI_Iscatter_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    TWO(root, scount, stype, NULL, ROOT, rcount, rtype, rbuf, OFF)
    return let_go(&s, &r, MPI_Iscatter(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm, req));
}

BOBCAT_EXPORT int MPI_Allgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                  MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Allgather(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm));
}

BOBCAT_EXPORT int MPI_Iallgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                   MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Iallgather(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm, req));
}

BOBCAT_EXPORT int MPI_Alltoall_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Alltoall(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm));
}

BOBCAT_EXPORT int MPI_Ialltoall_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                  MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Ialltoall(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm, req));
}

/* ---- the v forms: 64-bit tables all the way (pc_vec_t), a big scalar count as one element ------- */

BOBCAT_EXPORT int MPI_Gatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, int root,
                                MPI_Comm comm)
{
    PMPI_GUARD();
    ONE(s, root, scount, stype, sbuf)
    return let_go(&s, NULL, pc_gatherv(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs), rtype,
                                       root, comm));
}

BOBCAT_EXPORT int MPI_Scatterv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                 MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, int root,
                                 MPI_Comm comm)
{
    PMPI_GUARD();
    ONE(r, root, rcount, rtype, rbuf)
    return let_go(&r, NULL, pc_scatterv(sbuf, pc_vec_count(scounts), pc_vec_aint(displs), stype, rbuf, r.count, r.dt,
                                        root, comm));
}

BOBCAT_EXPORT int MPI_Allgatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                   const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype,
                                   MPI_Comm comm)
{
    PMPI_GUARD();
    ONE(s, 0, scount, stype, sbuf)
    return let_go(&s, NULL, pc_allgatherv(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs),
                                          rtype, comm));
}

BOBCAT_EXPORT int MPI_Igatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, int root,
                                 MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(s, root, scount, stype, sbuf)
    return let_go(&s, NULL, pc_igatherv(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs), rtype,
                                        root, comm, req));
}

BOBCAT_EXPORT int MPI_Iscatterv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                  MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, int root,
                                  MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(r, root, rcount, rtype, rbuf)
    return let_go(&r, NULL, pc_iscatterv(sbuf, pc_vec_count(scounts), pc_vec_aint(displs), stype, rbuf, r.count, r.dt,
                                         root, comm, req));
}

BOBCAT_EXPORT int MPI_Iallgatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                    const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype,
                                    MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(s, 0, scount, stype, sbuf)
    return let_go(&s, NULL, pc_iallgatherv(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs),
                                           rtype, comm, req));
}

BOBCAT_EXPORT int MPI_Ialltoallv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                   MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_ialltoallvw(0, sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), &stype, rbuf, pc_vec_count(rcounts),
                          pc_vec_aint(rdispls), &rtype, comm, req);
}

BOBCAT_EXPORT int MPI_Ialltoallw_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                   const MPI_Datatype stypes[], void *rbuf, const MPI_Count rcounts[],
                                   const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                                   MPI_Request *req)
{
    PMPI_GUARD();
    return pc_ialltoallvw(1, sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), stypes, rbuf, pc_vec_count(rcounts),
                          pc_vec_aint(rdispls), rtypes, comm, req);
}

BOBCAT_EXPORT int MPI_Gatherv_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                     const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, int root,
                                     MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(s, root, scount, stype, sbuf)
    return let_go(&s, NULL,
                  pc_gatherv_init(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs), rtype, root,
                                  comm, info, req));
}

BOBCAT_EXPORT int MPI_Scatterv_init_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                      MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, int root,
                                      MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(r, root, rcount, rtype, rbuf)
    return let_go(&r, NULL,
                  pc_scatterv_init(sbuf, pc_vec_count(scounts), pc_vec_aint(displs), stype, rbuf, r.count, r.dt, root,
                                   comm, info, req));
}

BOBCAT_EXPORT int MPI_Allgatherv_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                        const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype,
                                        MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    ONE(s, 0, scount, stype, sbuf)
    return let_go(&s, NULL,
                  pc_allgatherv_init(sbuf, s.count, s.dt, rbuf, pc_vec_count(rcounts), pc_vec_aint(displs), rtype,
                                     comm, info, req));
}

BOBCAT_EXPORT int MPI_Alltoallv_init_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                       MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[],
                                       const MPI_Aint rdispls[], MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *req)
{
    PMPI_GUARD();
    return pc_alltoallvw_init(0, sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), &stype, rbuf,
                              pc_vec_count(rcounts), pc_vec_aint(rdispls), &rtype, comm, info, req);
}

BOBCAT_EXPORT int MPI_Alltoallw_init_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                       const MPI_Datatype stypes[], void *rbuf, const MPI_Count rcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm,
                                       MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_alltoallvw_init(1, sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), stypes, rbuf,
                              pc_vec_count(rcounts), pc_vec_aint(rdispls), rtypes, comm, info, req);
}

/* Reduce_scatter's counts are the same on every rank (the standard says so), so one look decides
 * for all: when each fits an int, the int form's path with an int copy of them; else the real MPI's
 * _c form on every rank alike. */
BOBCAT_EXPORT int MPI_Reduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                                       MPI_Op op, MPI_Comm comm)
{
    PMPI_GUARD();
    int stack[64], *c;
    if (pc_counts_as_ints(rcounts, comm, &c, stack, 64))
        return PMPI_AWAY(PMPI_Reduce_scatter_c(sbuf, rbuf, rcounts, dt, op, comm));
    int rc = MPI_Reduce_scatter(sbuf, rbuf, c, dt, op, comm);
    if (c != stack)
        free(c);
    return rc;
}

/* ---- reductions: the same count on every rank; a large one in pieces ------------------------- */

static const void *at_in(const void *p, MPI_Aint off) { return p == MPI_IN_PLACE || !p ? p : (const char *)p + off; }
static void *at_out(void *p, MPI_Aint off) { return p ? (char *)p + off : p; }

/* Pieces of PIECE elements: each call's offset in bytes (the datatype's extent per element). */
#define PIECES(count, dt, call)                                                                                \
    do {                                                                                                       \
        MPI_Aint lb_, ext_;                                                                                    \
        int rc_ = PMPI_Type_get_extent(dt, &lb_, &ext_);                                                       \
        if (rc_ != MPI_SUCCESS)                                                                                \
            return failed(comm, rc_);                                                                          \
        for (MPI_Count done_ = 0; done_ < (count); done_ += PIECE) {                                           \
            int n = (int)((count) - done_ < PIECE ? (count) - done_ : PIECE);                                  \
            MPI_Aint off = (MPI_Aint)done_ * ext_;                                                             \
            if ((rc_ = (call)) != MPI_SUCCESS)                                                                 \
                return rc_;                                                                                    \
        }                                                                                                      \
        return MPI_SUCCESS;                                                                                    \
    } while (0)

/* A blocking reduction X (after the entry's PMPI_GUARD): the int form, or pieces of it; a negative
 * count the real MPI's. */
#define RED_PIECES(X, ...)                                                                                     \
    if (count <= INT_MAX && count >= 0)                                                                        \
        return MPI_##X(sbuf, rbuf, (int)count, dt, op, __VA_ARGS__);                                           \
    if (count < 0)                                                                                             \
        return PMPI_AWAY(PMPI_##X##_c(sbuf, rbuf, count, dt, op, __VA_ARGS__));                                \
    PIECES(count, dt, MPI_##X(at_in(sbuf, off), at_out(rbuf, off), n, dt, op, __VA_ARGS__));

BOBCAT_EXPORT int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                               MPI_Comm comm)
{
    PMPI_GUARD();
    RED_PIECES(Reduce, root, comm)
}

BOBCAT_EXPORT int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                  MPI_Comm comm)
{
    PMPI_GUARD();
    RED_PIECES(Allreduce, comm)
}

BOBCAT_EXPORT int MPI_Scan_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    PMPI_GUARD();
    RED_PIECES(Scan, comm)
}

BOBCAT_EXPORT int MPI_Exscan_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                               MPI_Comm comm)
{
    PMPI_GUARD();
    RED_PIECES(Exscan, comm)
}

/* (Its blocks lie rcount apart in the input: no pieces of one call. A large block is the real
 * MPI's on every rank, as the count is the same on all.) */
BOBCAT_EXPORT int MPI_Reduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                             MPI_Op op, MPI_Comm comm)
{
    PMPI_GUARD();
    if (rcount <= INT_MAX && rcount >= 0)
        return MPI_Reduce_scatter_block(sbuf, rbuf, (int)rcount, dt, op, comm);
    return PMPI_AWAY(PMPI_Reduce_scatter_block_c(sbuf, rbuf, rcount, dt, op, comm));
}

/* A reduction that is one request (nonblocking, persistent) X: the int form, or the real MPI's _c
 * form for a large count (on every rank alike: the count is the same on all). */
#define RED_ONE(X, ...)                                                                                        \
    if (count <= INT_MAX && count >= 0)                                                                        \
        return MPI_##X(sbuf, rbuf, (int)count, dt, op, __VA_ARGS__);                                           \
    return PMPI_##X##_c(sbuf, rbuf, count, dt, op, __VA_ARGS__);

BOBCAT_EXPORT int MPI_Ireduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                                MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Ireduce, root, comm, req)
}

BOBCAT_EXPORT int MPI_Iallreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Iallreduce, comm, req)
}

BOBCAT_EXPORT int MPI_Iscan_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Iscan, comm, req)
}

BOBCAT_EXPORT int MPI_Iexscan_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Iexscan, comm, req)
}

BOBCAT_EXPORT int MPI_Ireduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt,
                                              MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Ireduce_scatter_block, comm, req)
}

/* ---- persistent (MPI 4.0's MPI_X_init_c): the int form's request, which holds its datatype ----- */

BOBCAT_EXPORT int MPI_Bcast_init_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *req)
{
    PMPI_GUARD();
    ONE(b, 0, count, dt, buf)
    return let_go(&b, NULL, MPI_Bcast_init(buf, b.count, b.dt, root, comm, info, req));
}

BOBCAT_EXPORT int MPI_Gather_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                    MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *req)
{
    PMPI_GUARD();
    TWO(root, scount, stype, sbuf, OFF, rcount, rtype, NULL, ROOT)
    return let_go(&s, &r, MPI_Gather_init(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm, info, req));
}

BOBCAT_EXPORT int MPI_Scatter_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                     MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *req)
{
    PMPI_GUARD();
    TWO(root, scount, stype, NULL, ROOT, rcount, rtype, rbuf, OFF)
    return let_go(&s, &r, MPI_Scatter_init(sbuf, s.count, s.dt, rbuf, r.count, r.dt, root, comm, info, req));
}

BOBCAT_EXPORT int MPI_Allgather_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                       MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *req)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Allgather_init(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm, info, req));
}

BOBCAT_EXPORT int MPI_Alltoall_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                      MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info,
                                      MPI_Request *req)
{
    PMPI_GUARD();
    TWO(0, scount, stype, sbuf, ALL, rcount, rtype, NULL, ALL)
    return let_go(&s, &r, MPI_Alltoall_init(sbuf, s.count, s.dt, rbuf, r.count, r.dt, comm, info, req));
}

BOBCAT_EXPORT int MPI_Reduce_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                    int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Reduce_init, root, comm, info, req)
}

BOBCAT_EXPORT int MPI_Allreduce_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                       MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Allreduce_init, comm, info, req)
}

BOBCAT_EXPORT int MPI_Scan_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Scan_init, comm, info, req)
}

BOBCAT_EXPORT int MPI_Exscan_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                    MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Exscan_init, comm, info, req)
}

BOBCAT_EXPORT int MPI_Reduce_scatter_block_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt,
                                                  MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    RED_ONE(Reduce_scatter_block_init, comm, info, req)
}

#endif
