/* pmpi_coll_move: the data-movement collectives on one node, in place: Gather (each rank writes
 * its piece at the root), Scatter (each reads its piece at the root), Allgather (each reads every
 * piece), Alltoall (each reads its block from every rank), and the v-variants (Gatherv: the root
 * reads every piece; Scatterv: the root writes every piece; Allgatherv: each reads every piece).
 * Communicators that span nodes, Alltoallv/w and the nonblocking and neighbourhood collectives go
 * to the real MPI unchanged.
 *
 * Datatypes: the algorithms move packed signature bytes. A dense type (memory == signature) is
 * used where it lies; any other type is packed into, or unpacked from, a segment buffer on the
 * rank that owns it — a local decision, so ranks with different datatypes of one signature still
 * take the same path. */
#include "pmpi_coll.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static pmpi_stat_t st_gather = {.name = "Gather", .alg_names = {"inplace"}};
static pmpi_stat_t st_gatherv = {.name = "Gatherv", .alg_names = {"inplace"}};
static pmpi_stat_t st_scatter = {.name = "Scatter", .alg_names = {"inplace"}};
static pmpi_stat_t st_scatterv = {.name = "Scatterv", .alg_names = {"inplace"}};
static pmpi_stat_t st_allgather = {.name = "Allgather", .alg_names = {"inplace"}};
static pmpi_stat_t st_allgatherv = {.name = "Allgatherv", .alg_names = {"inplace"}};
static pmpi_stat_t st_alltoall = {.name = "Alltoall", .alg_names = {"inplace"}};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_gather, &st_gatherv, &st_scatter, &st_scatterv, &st_allgather, &st_allgatherv, &st_alltoall};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

static void oom(size_t bytes)
{
    util_error("out of heap for a %zu-byte collective buffer: raise the heap (yod --heap)", bytes);
    abort();
}

/* The communicator if this collective runs here; else NULL with the reason. Single node only. */
static pmpi_comm_t *move_setup(MPI_Comm comm, pc_alg_t knob, pmpi_why_t *why_p)
{
    pmpi_comm_t *pc = NULL;
    if (knob == PC_MPI || !(pc = pmpi_comm_get_coll(comm))) {
        *why_p = knob == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : (pmpi_layer.on ? PMPI_WHY_INTER : PMPI_WHY_OFF);
        return NULL;
    }
    if (pc->nnodes > 1) {
        *why_p = PMPI_WHY_MULTINODE;
        return NULL;
    }
    return pc;
}

/* count * n fits an int (the packing calls count in ints). */
static int fits(int count, int n) { return count >= 0 && (long long)count * n <= INT_MAX; }

BOBCAT_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.gather, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = sbuf == MPI_IN_PLACE;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place) || (me == root && sbuf == rbuf)))
        pc = NULL, why = PMPI_WHY_VARIANT; /* erroneous: the real MPI reports it */
    if (pc) {
        /* The piece's byte count, from what this rank knows (equal on all ranks by MPI's rules). */
        int bad = me == root ? (pc_dt(rtype, &rd) || !fits(rcount, pc->size) || (!in_place && pc_dt(stype, &sd)))
                             : pc_dt(stype, &sd);
        long long piece = me == root ? (long long)rcount * rd.size : (long long)scount * sd.size;
        if (bad || piece <= 0)
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        pmpi_stat_mpi(&st_gather, why, 0);
        return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    }
    pc_buf_t in = {0}, out = {0};
    size_t bytes;
    if (me == root) {
        bytes = (size_t)rcount * (size_t)rd.size;
        if (pc_out(&out, rbuf, rcount * pc->size, rtype, &rd, 1, in_place))
            oom(bytes * (size_t)pc->size);
        if (!in_place && pc_in(&in, sbuf, scount, stype, &sd, 0))
            oom(bytes);
    } else {
        bytes = (size_t)scount * (size_t)sd.size;
        if (pc_in(&in, sbuf, scount, stype, &sd, 0))
            oom(bytes);
    }
    coll_gather(&pc->cn, root, in_place ? NULL : in.p, bytes, out.p);
    pmpi_stat_path(&st_gather, in.tmp || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                              MPI_Datatype rtype, int root, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.scatter, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = rbuf == MPI_IN_PLACE;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place) || (me == root && sbuf == rbuf)))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc) {
        int bad = me == root ? (pc_dt(stype, &sd) || !fits(scount, pc->size) || (!in_place && pc_dt(rtype, &rd)))
                             : pc_dt(rtype, &rd);
        long long piece = me == root ? (long long)scount * sd.size : (long long)rcount * rd.size;
        if (bad || piece <= 0)
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        pmpi_stat_mpi(&st_scatter, why, 0);
        return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    }
    pc_buf_t in = {0}, out = {0};
    size_t bytes;
    if (me == root) {
        bytes = (size_t)scount * (size_t)sd.size;
        if (pc_in(&in, sbuf, scount * pc->size, stype, &sd, 1))
            oom(bytes * (size_t)pc->size);
        if (!in_place && pc_out(&out, rbuf, rcount, rtype, &rd, 0, 0))
            oom(bytes);
    } else {
        bytes = (size_t)rcount * (size_t)rd.size;
        if (pc_out(&out, rbuf, rcount, rtype, &rd, 0, 0))
            oom(bytes);
    }
    coll_scatter(&pc->cn, root, in.p, bytes, in_place ? NULL : out.p);
    pmpi_stat_path(&st_scatter, in.tmp || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return MPI_SUCCESS;
}

/* Byte counts and displacements of the v-variants, for a dense type (in place) or for packed
 * pieces laid end to end in a temporary (otherwise). */
#define VSTACK 32 /* ranks whose layout fits on the stack (no malloc per call for small groups) */
typedef struct {
    size_t *bytes, *displ, total;
    int packed;
    size_t stack[2 * VSTACK];
} vlayout_t;

static void vlayout_free(vlayout_t *v)
{
    if (v->bytes != v->stack)
        free(v->bytes);
    v->bytes = NULL;
}

static int vlayout(vlayout_t *v, int n, const int *counts, const int *displs, const pc_dt_t *d)
{
    v->bytes = n <= VSTACK ? v->stack : malloc(2 * (size_t)n * sizeof(size_t));
    if (!v->bytes)
        return -1;
    v->displ = v->bytes + n;
    v->packed = !d->dense;
    v->total = 0;
    for (int r = 0; r < n; r++) {
        if (counts[r] < 0) {
            vlayout_free(v);
            return -1;
        }
        /* A negative displacement is legal (the buffer pointer need not be the lowest address):
         * the byte offset wraps as an unsigned add and lands below the buffer. */
        v->bytes[r] = (size_t)counts[r] * (size_t)d->size;
        v->displ[r] = v->packed ? v->total : (size_t)((MPI_Aint)displs[r] * d->extent);
        v->total += v->bytes[r];
    }
    return 0;
}

BOBCAT_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                              const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.gather, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = sbuf == MPI_IN_PLACE;
    vlayout_t v;
    v.bytes = v.displ = NULL;
    v.total = 0;
    v.packed = 0;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place)))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && ((me == root && (pc_dt(rtype, &rd) || vlayout(&v, pc->size, rcounts, displs, &rd))) ||
               ((me != root || !in_place) && (pc_dt(stype, &sd) || scount < 0))))
        pc = NULL, why = PMPI_WHY_VARIANT;
    /* The root's own piece may alias its receive buffer when it is empty (mpi4py passes NULL for
     * both): legal, and a root that fell back alone would wait in the real MPI while the others
     * wait here. Only a non-empty aliased piece is erroneous (the real MPI reports it). */
    if (pc && me == root && !in_place && sbuf == rbuf && (long long)scount * sd.size > 0)
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (!pc) {
        vlayout_free(&v);
        pmpi_stat_mpi(&st_gatherv, why, 0);
        return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    }
    pc_buf_t in = {0};
    char *dst = rbuf;
    int staged = 0;
    if ((me != root || !in_place) && pc_in(&in, sbuf, scount, stype, &sd, me != root))
        oom((size_t)scount * (size_t)sd.size);
    if (me == root && v.packed && !(dst = malloc(v.total ? v.total : 1)))
        oom(v.total);
    coll_gatherv(&pc->cn, root, me == root && in_place ? NULL : in.p, in.bytes, dst, v.bytes, v.displ);
    if (me == root && v.packed) {
        for (int r = 0; r < pc->size; r++)
            if (!(r == root && in_place) && rcounts[r])
                pc_unpack(dst + v.displ[r], rcounts[r], rtype, &rd, (char *)rbuf + (MPI_Aint)displs[r] * rd.extent);
        free(dst);
        staged = 1;
    }
    pmpi_stat_path(&st_gatherv, staged || in.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, in.bytes, 0);
    pc_in_done(&in);
    vlayout_free(&v);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                               void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.scatter, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = rbuf == MPI_IN_PLACE;
    vlayout_t v;
    v.bytes = v.displ = NULL;
    v.total = 0;
    v.packed = 0;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place)))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && ((me == root && (pc_dt(stype, &sd) || vlayout(&v, pc->size, scounts, displs, &sd))) ||
               ((me != root || !in_place) && (pc_dt(rtype, &rd) || rcount < 0))))
        pc = NULL, why = PMPI_WHY_VARIANT;
    /* The root's own piece may alias its receive buffer when it is empty (mpi4py passes NULL for
     * both): legal, and a root that fell back alone would wait in the real MPI while the others
     * wait here. Only a non-empty aliased piece is erroneous (the real MPI reports it). */
    if (pc && me == root && !in_place && sbuf == rbuf && (long long)rcount * rd.size > 0)
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (!pc) {
        vlayout_free(&v);
        pmpi_stat_mpi(&st_scatterv, why, 0);
        return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    }
    pc_buf_t out = {0};
    const char *src = sbuf;
    int staged = 0;
    if ((me != root || !in_place) && pc_out(&out, rbuf, rcount, rtype, &rd, me != root, 0))
        oom((size_t)rcount * (size_t)rd.size);
    if (me == root && v.packed) {
        char *t = malloc(v.total ? v.total : 1);
        if (!t)
            oom(v.total);
        for (int r = 0; r < pc->size; r++)
            if (scounts[r])
                pc_pack((const char *)sbuf + (MPI_Aint)displs[r] * sd.extent, scounts[r], stype, &sd, t + v.displ[r]);
        src = t;
        staged = 1;
    }
    coll_scatterv(&pc->cn, root, src, v.bytes, v.displ, me == root && in_place ? NULL : out.p, out.bytes);
    pmpi_stat_path(&st_scatterv, staged || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, out.bytes, 0);
    if (src != sbuf)
        free((void *)src);
    pc_out_done(&out);
    vlayout_free(&v);
    return MPI_SUCCESS;
}

/* Allgather(v): my piece is sbuf, or (in place) rbuf + displ; peers read it, so it must be in the
 * segment and dense, else it is packed into a segment copy. */
static int allgatherv(pmpi_stat_t *st, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int *rcounts,
                      const int *displs, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.allgather, &why);
    pc_dt_t sd = {0}, rd = {0};
    int in_place = sbuf == MPI_IN_PLACE, n = pc ? pc->size : 1, me = pc ? pc->rank : 0;
    int *cnt = NULL, *dsp = NULL, cnt_stack[2 * VSTACK];
    vlayout_t v;
    v.bytes = v.displ = NULL;
    v.total = 0;
    v.packed = 0;
    if (pc && rbuf == MPI_IN_PLACE)
        pc = NULL; /* erroneous: the real MPI reports it */
    if (pc) {
        cnt = n <= VSTACK ? cnt_stack : malloc(2 * (size_t)n * sizeof(int));
        if (!cnt)
            oom(0);
        dsp = cnt + n;
        for (int r = 0; r < n; r++) {
            cnt[r] = rcounts ? rcounts[r] : rcount;
            dsp[r] = rcounts ? displs[r] : (fits(rcount, r) ? rcount * r : -1);
        }
        long long mine = in_place ? 0 : (long long)scount * (pc_dt(stype, &sd) ? -1 : sd.size);
        /* An empty piece may alias rbuf (legal; see Gatherv); a non-empty one is erroneous. */
        if (!in_place && sbuf == rbuf && mine != 0)
            mine = -1;
        if (pc_dt(rtype, &rd) || mine < 0 || vlayout(&v, n, cnt, dsp, &rd) || !v.total || (!rcounts && !fits(rcount, n)))
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        if (cnt != cnt_stack)
            free(cnt);
        vlayout_free(&v);
        pmpi_stat_mpi(st, why, 0);
        return rcounts ? PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm)
                       : PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    }
    pc_buf_t in = {0};
    const void *piece;
    int staged = 0;
    char *dst = rbuf;
    if (in_place) {
        char *at = (char *)rbuf + (MPI_Aint)dsp[me] * rd.extent;
        if (rd.dense && smap_is_shared(at) && !v.packed) {
            piece = NULL; /* peers read it where it is */
        } else {
            if (pc_in(&in, at, cnt[me], rtype, &rd, 1))
                oom(v.bytes[me]);
            piece = in.p;
        }
    } else {
        if (pc_in(&in, sbuf, scount, stype, &sd, 1))
            oom((size_t)scount * (size_t)sd.size);
        piece = in.p;
    }
    if (v.packed && !(dst = malloc(v.total)))
        oom(v.total);
    coll_allgatherv(&pc->cn, piece, dst, v.bytes, v.displ);
    if (v.packed) {
        for (int r = 0; r < n; r++)
            if (cnt[r] && !(r == me && in_place))
                pc_unpack(dst + v.displ[r], cnt[r], rtype, &rd, (char *)rbuf + (MPI_Aint)dsp[r] * rd.extent);
        free(dst);
        staged = 1;
    }
    pmpi_stat_path(st, staged || in.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, v.total, 0);
    pc_in_done(&in);
    if (cnt != cnt_stack)
        free(cnt);
    vlayout_free(&v);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                MPI_Datatype rtype, MPI_Comm comm)
{
    return allgatherv(&st_allgather, sbuf, scount, stype, rbuf, NULL, NULL, rcount, rtype, comm);
}

BOBCAT_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                                 const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    return allgatherv(&st_allgatherv, sbuf, scount, stype, rbuf, rcounts, displs, 0, rtype, comm);
}

BOBCAT_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                               MPI_Datatype rtype, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.alltoall, &why);
    pc_dt_t sd = {0}, rd = {0};
    int in_place = sbuf == MPI_IN_PLACE;
    if (pc && (sbuf == rbuf || rbuf == MPI_IN_PLACE))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && (pc_dt(rtype, &rd) || !fits(rcount, pc->size) || (long long)rcount * rd.size <= 0 ||
               (!in_place && (pc_dt(stype, &sd) || !fits(scount, pc->size)))))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (!pc) {
        pmpi_stat_mpi(&st_alltoall, why, 0);
        return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    }
    int n = pc->size;
    size_t bytes = (size_t)rcount * (size_t)rd.size;
    pc_buf_t in = {0}, out = {0};
    /* In place, my blocks are read by peers while I overwrite them: they go through a copy. */
    int rc = in_place ? pc_in(&in, rbuf, rcount * n, rtype, &rd, 1) : pc_in(&in, sbuf, scount * n, stype, &sd, 1);
    if (rc == 0 && in_place && !in.tmp) {
        /* pc_in used rbuf itself (dense, shared): force a copy. */
        if (!(in.p = malloc(in.bytes)))
            oom(in.bytes);
        memcpy(in.p, rbuf, in.bytes);
        in.tmp = 1;
    }
    if (rc || pc_out(&out, rbuf, rcount * n, rtype, &rd, 0, 0))
        oom(bytes * (size_t)n);
    coll_alltoall(&pc->cn, in.p, bytes, out.p);
    pmpi_stat_path(&st_alltoall, (in.tmp && !in_place) || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes * (size_t)n, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return MPI_SUCCESS;
}
