/* pmpi_coll_move: the data-movement collectives on one node, in place: Gather (each rank writes
 * its piece at the root), Scatter (each reads its piece at the root), Allgather (each reads every
 * piece), Alltoall (each reads its block from every rank), and the v-variants (Gatherv: the root
 * reads every piece; Scatterv: the root writes every piece; Allgatherv: each reads every piece).
 * Communicators that span nodes run them hierarchically (pmpi_coll_hier.c: node phase in shared
 * memory, leaders' phase through PMPI_*). Alltoallv/w, the nonblocking and the neighbourhood
 * collectives have files of their own (pmpi_coll_alltoallv.c, pmpi_coll_nb.c and _nbv.c,
 * pmpi_coll_neighbor.c).
 *
 * Datatypes: the algorithms move packed signature bytes. A dense type (memory == signature) is
 * used where it lies; any other type is packed into, or unpacked from, a segment buffer on the
 * rank that owns it — a local decision, so ranks with different datatypes of one signature still
 * take the same path. */
#include "pmpi_coll.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static pmpi_stat_t st_gather = {.name = "Gather", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_gatherv = {.name = "Gatherv", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_scatter = {.name = "Scatter", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_scatterv = {.name = "Scatterv", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_allgather = {.name = "Allgather", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_allgatherv = {.name = "Allgatherv", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_alltoall = {.name = "Alltoall", .alg_names = {"inplace", "hier"}};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_gather, &st_gatherv, &st_scatter, &st_scatterv, &st_allgather, &st_allgatherv, &st_alltoall};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

static void oom(size_t bytes) { util_out_of_memory("a collective buffer", bytes); }

enum { A_INPLACE, A_HIER };

/* The communicator if this collective runs here; else NULL with the reason. Across nodes only
 * with BOBCAT_COLL_HIER (then the hierarchical path). */
static pmpi_comm_t *move_setup(MPI_Comm comm, pc_alg_t knob, pmpi_why_t *why_p)
{
    pmpi_comm_t *pc = NULL;
    if (knob == PC_MPI || !(pc = pmpi_comm_get_coll(comm))) {
        *why_p = knob == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm);
        return NULL;
    }
    pmpi_why_t hw = pc_hier_why(pc);
    if (hw != PMPI_WHY_NONE) {
        *why_p = hw;
        return NULL;
    }
    return pc;
}

/* count * n fits an int (the packing calls count in ints). */
static int fits(int count, int n) { return count >= 0 && (long long)count * n <= INT_MAX; }

/* Across nodes the leaders' phase moves node blocks as int MPI_BYTE counts: the whole (n pieces
 * of `piece` bytes; Alltoall: n rows of them) must fit. From facts all ranks share. */
static int hier_fits(const pmpi_comm_t *pc, long long piece, int rows)
{
    return pc->nnodes == 1 || (double)piece * pc->size * rows <= (double)INT_MAX;
}

static void *xalloc(size_t bytes) { return util_alloc_or_die(bytes, "a collective buffer"); }

/* Gather across nodes: pieces packed (in the segment unless I lead my node), hier_gatherv, the
 * root unpacks the comm-ordered whole (or receives it straight in rbuf when rtype is dense). */
static int gather_hier(pmpi_comm_t *pc, const void *sbuf, int scount, MPI_Datatype stype, const pc_dt_t *sd, void *rbuf,
                       int rcount, MPI_Datatype rtype, const pc_dt_t *rd, int root)
{
    int me = pc->rank, n = pc->size, leader = pc->leader == me, rc;
    pc_buf_t in = {0};
    size_t b;
    if (me == root && sbuf == MPI_IN_PLACE) {
        b = (size_t)rcount * (size_t)rd->size;
        rc = pc_in(&in, (char *)rbuf + (MPI_Aint)root * rcount * rd->extent, rcount, rtype, rd, !leader);
    } else {
        b = (size_t)scount * (size_t)sd->size;
        rc = pc_in(&in, sbuf, scount, stype, sd, !leader);
    }
    if (rc)
        oom(b);
    char *whole = me == root ? (rd->dense ? rbuf : xalloc(b * (size_t)n)) : NULL;
    hier_gatherv(pc, root, in.p, b, NULL, 1, whole);
    if (me == root && !rd->dense) {
        pc_unpack(whole, rcount * n, rtype, rd, rbuf);
        free(whole);
    }
    pmpi_stat_path(&st_gather, in.tmp || (me == root && !rd->dense) ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, b, A_HIER);
    pc_in_done(&in);
    return MPI_SUCCESS;
}

static int scatter_hier(pmpi_comm_t *pc, const void *sbuf, int scount, MPI_Datatype stype, const pc_dt_t *sd, void *rbuf,
                        int rcount, MPI_Datatype rtype, const pc_dt_t *rd, int root)
{
    int me = pc->rank, n = pc->size, leader = pc->leader == me;
    pc_buf_t in = {0}, out = {0};
    size_t b;
    void *piece, *discard = NULL;
    if (me == root) {
        b = (size_t)scount * (size_t)sd->size;
        if (pc_in(&in, sbuf, scount * n, stype, sd, 0))
            oom(b * (size_t)n);
    } else {
        b = (size_t)rcount * (size_t)rd->size;
    }
    if (me == root && rbuf == MPI_IN_PLACE) {
        piece = discard = xalloc(b); /* my piece stays where it is in sbuf */
    } else {
        if (pc_out(&out, rbuf, rcount, rtype, rd, !leader, 0))
            oom(b);
        piece = out.p;
    }
    hier_scatterv(pc, root, in.p, NULL, 1, b, piece);
    pmpi_stat_path(&st_scatter, in.tmp || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, b, A_HIER);
    free(discard);
    pc_in_done(&in);
    pc_out_done(&out);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                             MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.gather, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = sbuf == MPI_IN_PLACE;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place)))
        pc = NULL, why = PMPI_WHY_VARIANT; /* erroneous: the real MPI reports it */
    if (pc && me == root && sbuf == rbuf && scount > 0)
        return pc_alias_error(&st_gather, comm, NULL);
    if (pc) {
        /* The piece's byte count, from what this rank knows (equal on all ranks by MPI's rules). */
        int bad = me == root ? (pc_dt(rtype, &rd) || !fits(rcount, pc->size) || (!in_place && pc_dt(stype, &sd)))
                             : pc_dt(stype, &sd);
        long long piece = me == root ? (long long)rcount * rd.size : (long long)scount * sd.size;
        if (bad || piece <= 0 || !hier_fits(pc, piece, 1))
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        pmpi_stat_mpi(&st_gather, why, 0);
        return PMPI_AWAY(PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
    }
    if (pc->nnodes > 1)
        return gather_hier(pc, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, root);
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
    /* Mismatched pieces (erroneous): the fewer bytes move, nothing is overrun, and the rank whose
     * piece did not fit (the root for its own) reports MPI_ERR_TRUNCATE, as MPICH does. */
    size_t own = me == root && !in_place ? (size_t)scount * (size_t)sd.size : bytes;
    int trunc = own > bytes;
    if (own != bytes)
        memcpy((char *)out.p + (size_t)root * bytes, in.p, own < bytes ? own : bytes);
    trunc |= coll_gather(&pc->cn, root, in_place || own != bytes ? NULL : in.p, bytes, out.p);
    pmpi_stat_path(&st_gather, in.tmp || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return trunc ? (PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE), MPI_ERR_TRUNCATE) : MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                              MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.scatter, &why);
    pc_dt_t sd = {0}, rd = {0};
    int me = pc ? pc->rank : 0, in_place = rbuf == MPI_IN_PLACE;
    if (pc && (root < 0 || root >= pc->size || (me != root && in_place)))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && me == root && sbuf == rbuf && rcount > 0)
        return pc_alias_error(&st_scatter, comm, NULL);
    if (pc) {
        int bad = me == root ? (pc_dt(stype, &sd) || !fits(scount, pc->size) || (!in_place && pc_dt(rtype, &rd)))
                             : pc_dt(rtype, &rd);
        long long piece = me == root ? (long long)scount * sd.size : (long long)rcount * rd.size;
        if (bad || piece <= 0 || !hier_fits(pc, piece, 1))
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        pmpi_stat_mpi(&st_scatter, why, 0);
        return PMPI_AWAY(PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
    }
    if (pc->nnodes > 1)
        return scatter_hier(pc, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, root);
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
    /* Mismatched pieces (erroneous): as MPI_Gather, the rank whose piece was too small (the root
     * for its own) reports MPI_ERR_TRUNCATE. */
    size_t own = me == root && !in_place ? (size_t)rcount * (size_t)rd.size : bytes;
    int trunc = own < bytes;
    if (own != bytes)
        memcpy(out.p, (const char *)in.p + (size_t)root * bytes, own < bytes ? own : bytes);
    trunc |= coll_scatter(&pc->cn, root, in.p, bytes, in_place || own != bytes ? NULL : out.p);
    pmpi_stat_path(&st_scatter, in.tmp || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return trunc ? (PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE), MPI_ERR_TRUNCATE) : MPI_SUCCESS;
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

static int vlayout(vlayout_t *v, int n, pc_vec_t counts, pc_vec_t displs, const pc_dt_t *d)
{
    v->bytes = n <= VSTACK ? v->stack : malloc(2 * (size_t)n * sizeof(size_t));
    if (!v->bytes)
        return -1;
    v->displ = v->bytes + n;
    v->packed = !d->dense;
    v->total = 0;
    for (int r = 0; r < n; r++) {
        long long c = pc_at(counts, r);
        if (c < 0) {
            vlayout_free(v);
            return -1;
        }
        /* A negative displacement is legal (the buffer pointer need not be the lowest address):
         * the byte offset wraps as an unsigned add and lands below the buffer. */
        v->bytes[r] = (size_t)c * (size_t)d->size;
        v->displ[r] = v->packed ? v->total : (size_t)((MPI_Aint)pc_at(displs, r) * d->extent);
        v->total += v->bytes[r];
    }
    return 0;
}

int pc_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
               MPI_Datatype rtype, int root, MPI_Comm comm)
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
     * wait here. Only a non-empty aliased piece is erroneous (pc_alias_error). */
    if (pc && me == root && !in_place && sbuf == rbuf && (long long)scount * sd.size > 0) {
        vlayout_free(&v);
        return pc_alias_error(&st_gatherv, comm, NULL);
    }
    if (!pc) {
        vlayout_free(&v);
        pmpi_stat_mpi(&st_gatherv, why, 0);
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_AWAY(PMPI_Gatherv_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm));
#endif
        return PMPI_AWAY(PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm));
    }
    if (pc->nnodes > 1) {
        /* Pieces packed; the root unpacks the comm-ordered whole at the displacements. */
        pc_buf_t in = {0};
        int leader = pc->leader == me, rc;
        if (me == root && in_place)
            rc = pc_in(&in, (char *)rbuf + (MPI_Aint)pc_at(displs, root) * rd.extent, pc_at(rcounts, root), rtype, &rd,
                         !leader);
        else
            rc = pc_in(&in, sbuf, scount, stype, &sd, !leader);
        if (rc)
            oom(in.bytes);
        char *whole = me == root ? xalloc(v.total) : NULL;
        hier_gatherv(pc, root, in.p, in.bytes, v.bytes, 0, whole);
        if (me == root) {
            size_t off = 0;
            for (int r = 0; r < pc->size; r++) {
                if (pc_at(rcounts, r) && !(r == root && in_place))
                    pc_unpack(whole + off, pc_at(rcounts, r), rtype, &rd,
                              (char *)rbuf + (MPI_Aint)pc_at(displs, r) * rd.extent);
                off += v.bytes[r];
            }
            free(whole);
        }
        pmpi_stat_path(&st_gatherv, in.tmp || me == root ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, in.bytes, A_HIER);
        pc_in_done(&in);
        vlayout_free(&v);
        return MPI_SUCCESS;
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
            if (!(r == root && in_place) && pc_at(rcounts, r))
                pc_unpack(dst + v.displ[r], pc_at(rcounts, r), rtype, &rd,
                          (char *)rbuf + (MPI_Aint)pc_at(displs, r) * rd.extent);
        free(dst);
        staged = 1;
    }
    pmpi_stat_path(&st_gatherv, staged || in.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, in.bytes, 0);
    pc_in_done(&in);
    vlayout_free(&v);
    return MPI_SUCCESS;
}

int pc_scatterv(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
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
     * wait here. Only a non-empty aliased piece is erroneous (pc_alias_error). */
    if (pc && me == root && !in_place && sbuf == rbuf && (long long)rcount * rd.size > 0) {
        vlayout_free(&v);
        return pc_alias_error(&st_scatterv, comm, NULL);
    }
    if (!pc) {
        vlayout_free(&v);
        pmpi_stat_mpi(&st_scatterv, why, 0);
#if MPI_VERSION >= 4
        if (pc_vec_wide(scounts))
            return PMPI_AWAY(PMPI_Scatterv_c(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm));
#endif
        return PMPI_AWAY(PMPI_Scatterv(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm));
    }
    if (pc->nnodes > 1) {
        /* The root packs the pieces end to end in comm order; each rank unpacks its own. */
        pc_buf_t out = {0};
        char *whole = NULL;
        void *piece, *discard = NULL;
        size_t mybytes;
        if (me == root) {
            whole = xalloc(v.total);
            size_t off = 0;
            for (int r = 0; r < pc->size; r++) {
                if (pc_at(scounts, r))
                    pc_pack((const char *)sbuf + (MPI_Aint)pc_at(displs, r) * sd.extent, pc_at(scounts, r), stype, &sd,
                            whole + off);
                off += v.bytes[r];
            }
        }
        if (me == root && in_place) {
            mybytes = v.bytes[root];
            piece = discard = xalloc(mybytes);
        } else {
            if (pc_out(&out, rbuf, rcount, rtype, &rd, pc->leader != me, 0))
                oom((size_t)rcount * (size_t)rd.size);
            mybytes = out.bytes;
            piece = out.p;
        }
        hier_scatterv(pc, root, whole, v.bytes, 0, mybytes, piece);
        pmpi_stat_path(&st_scatterv, out.tmp || me == root ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, mybytes, A_HIER);
        free(discard);
        free(whole);
        pc_out_done(&out);
        vlayout_free(&v);
        return MPI_SUCCESS;
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
            if (pc_at(scounts, r))
                pc_pack((const char *)sbuf + (MPI_Aint)pc_at(displs, r) * sd.extent, pc_at(scounts, r), stype, &sd,
                        t + v.displ[r]);
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

static void tables_free(MPI_Count *cnt, MPI_Count *cnt_stack, MPI_Aint *dsp, MPI_Aint *dsp_stack)
{
    if (cnt != cnt_stack)
        free(cnt);
    if (dsp != dsp_stack)
        free(dsp);
}

/* Allgather(v): my piece is sbuf, or (in place) rbuf + displ; peers read it, so it must be in the
 * segment and dense, else it is packed into a segment copy. */
static int allgatherv(pmpi_stat_t *st, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts,
                      pc_vec_t displs, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.allgather, &why);
    pc_dt_t sd = {0}, rd = {0};
    int in_place = sbuf == MPI_IN_PLACE, n = pc ? pc->size : 1, me = pc ? pc->rank : 0;
    MPI_Count *cnt = NULL, cnt_stack[VSTACK];
    MPI_Aint *dsp = NULL, dsp_stack[VSTACK];
    int v_form = rcounts.p != NULL;
    vlayout_t v;
    v.bytes = v.displ = NULL;
    v.total = 0;
    v.packed = 0;
    if (pc && rbuf == MPI_IN_PLACE)
        pc = NULL; /* erroneous: the real MPI reports it */
    if (pc) {
        cnt = n <= VSTACK ? cnt_stack : malloc((size_t)n * sizeof *cnt);
        dsp = n <= VSTACK ? dsp_stack : malloc((size_t)n * sizeof *dsp);
        if (!cnt || !dsp)
            oom(0);
        for (int r = 0; r < n; r++) {
            cnt[r] = v_form ? pc_at(rcounts, r) : rcount;
            dsp[r] = v_form ? pc_at(displs, r) : (MPI_Aint)rcount * r;
        }
        long long mine = in_place ? 0 : (long long)scount * (pc_dt(stype, &sd) ? -1 : sd.size);
        /* An empty piece may alias rbuf (legal; see Gatherv); a non-empty one is erroneous, at rbuf
         * or at my own block in it (MPI_IN_PLACE's place: MPICH reports both, every rank alike). */
        if (!in_place && mine > 0 && !pc_dt(rtype, &rd) &&
            (sbuf == rbuf || sbuf == (const char *)rbuf + (MPI_Aint)dsp[me] * rd.extent))
            mine = -1;
        if (pc_dt(rtype, &rd) || mine < 0 ||
            vlayout(&v, n, pc_vec_count(cnt), pc_vec_aint(dsp), &rd) || !v.total ||
            (!v_form && !fits(rcount, n)) ||
            (pc->nnodes > 1 && v.total > INT_MAX))
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        tables_free(cnt, cnt_stack, dsp, dsp_stack);
        vlayout_free(&v);
        pmpi_stat_mpi(st, why, 0);
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_AWAY(PMPI_Allgatherv_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm));
#endif
        return v_form ? PMPI_AWAY(PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm))
                      : PMPI_AWAY(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
    }
    if (pc->nnodes > 1) {
        pc_buf_t in = {0};
        int leader = pc->leader == me, rc;
        if (in_place)
            rc = pc_in(&in, (char *)rbuf + (MPI_Aint)dsp[me] * rd.extent, cnt[me], rtype, &rd, !leader);
        else
            rc = pc_in(&in, sbuf, scount, stype, &sd, !leader);
        if (rc)
            oom(v.bytes[me]);
        /* The whole arrives in comm order, pieces end to end: that is rbuf itself when the type is
         * dense and the displacements lay the pieces end to end (always for Allgather). */
        int direct = !v.packed;
        for (size_t r = 0, off = 0; r < (size_t)n && direct; off += v.bytes[r++])
            direct = v.displ[r] == off;
        char *whole = direct ? rbuf : xalloc(v.total);
        hier_allgatherv(pc, in.p, v.bytes, whole);
        if (!direct) {
            size_t off = 0;
            for (int r = 0; r < n; r++) {
                if (cnt[r] && !(r == me && in_place))
                    pc_unpack(whole + off, cnt[r], rtype, &rd, (char *)rbuf + (MPI_Aint)dsp[r] * rd.extent);
                off += v.bytes[r];
            }
            free(whole);
        }
        pmpi_stat_path(st, in.tmp || !direct ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, v.total, A_HIER);
        pc_in_done(&in);
        tables_free(cnt, cnt_stack, dsp, dsp_stack);
        vlayout_free(&v);
        return MPI_SUCCESS;
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
    tables_free(cnt, cnt_stack, dsp, dsp_stack);
    vlayout_free(&v);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    return allgatherv(&st_allgather, sbuf, scount, stype, rbuf, pc_vec_int(NULL), pc_vec_int(NULL), rcount, rtype,
                      comm);
}

BOBCAT_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                                 const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    return allgatherv(&st_allgatherv, sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), 0, rtype,
                      comm);
}

int pc_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    return allgatherv(&st_allgatherv, sbuf, scount, stype, rbuf, rcounts, displs, 0, rtype, comm);
}

BOBCAT_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                              const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    return pc_gatherv(sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), rtype, root, comm);
}

BOBCAT_EXPORT int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                               void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    return pc_scatterv(sbuf, pc_vec_int(scounts), pc_vec_int(displs), stype, rbuf, rcount, rtype, root, comm);
}

BOBCAT_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                               MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = move_setup(comm, pc_knobs.alltoall, &why);
    pc_dt_t sd = {0}, rd = {0};
    int in_place = sbuf == MPI_IN_PLACE;
    if (pc && (sbuf == rbuf || rbuf == MPI_IN_PLACE))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && (pc_dt(rtype, &rd) || !fits(rcount, pc->size) || (long long)rcount * rd.size <= 0 ||
               !hier_fits(pc, (long long)rcount * rd.size, pc->size) ||
               (!in_place && (pc_dt(stype, &sd) || !fits(scount, pc->size)))))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (!pc) {
        pmpi_stat_mpi(&st_alltoall, why, 0);
        return PMPI_AWAY(PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
    }
    int n = pc->size;
    size_t bytes = (size_t)rcount * (size_t)rd.size;
    pc_buf_t in = {0}, out = {0};
    if (pc->nnodes > 1) {
        /* Node mates read my send buffer (node-local blocks, and the leader packs my off-node
         * ones) while I write my result: it must be in the segment and, in place, a copy. */
        int rc = in_place ? pc_in(&in, rbuf, rcount * n, rtype, &rd, 1) : pc_in(&in, sbuf, scount * n, stype, &sd, 1);
        if (rc == 0 && in_place && !in.tmp) {
            in.p = xalloc(in.bytes);
            memcpy(in.p, rbuf, in.bytes);
            in.tmp = 1;
        }
        if (rc || pc_out(&out, rbuf, rcount * n, rtype, &rd, 0, 0))
            oom(bytes * (size_t)n);
        hier_alltoall(pc, in.p, bytes, out.p);
        pmpi_stat_path(&st_alltoall, (in.tmp && !in_place) || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE,
                       bytes * (size_t)n, A_HIER);
        pc_in_done(&in);
        pc_out_done(&out);
        return MPI_SUCCESS;
    }
    /* In place, my blocks are read by peers while I overwrite them: they go through a copy, unless
     * the whole buffer travels in the slots (then no buffer needs to be in the segment either). */
    int inl = bytes * (size_t)n <= COLL_INLINE_MAX;
    int rc = in_place ? pc_in(&in, rbuf, rcount * n, rtype, &rd, !inl) : pc_in(&in, sbuf, scount * n, stype, &sd, !inl);
    if (rc == 0 && in_place && !in.tmp && !inl) {
        /* pc_in used rbuf itself (dense, shared): force a copy. */
        if (!(in.p = malloc(in.bytes)))
            oom(in.bytes);
        memcpy(in.p, rbuf, in.bytes);
        in.tmp = 1;
    }
    if (rc || pc_out(&out, rbuf, rcount * n, rtype, &rd, 0, in_place && inl))
        oom(bytes * (size_t)n);
    coll_alltoall(&pc->cn, inl && in_place ? out.p : in.p, bytes, out.p);
    pmpi_stat_path(&st_alltoall, (in.tmp && !in_place) || out.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes * (size_t)n, 0);
    pc_in_done(&in);
    pc_out_done(&out);
    return MPI_SUCCESS;
}
