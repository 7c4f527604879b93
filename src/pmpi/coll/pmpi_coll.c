/* pmpi_coll: MPI_Barrier, MPI_Bcast and the reductions over coll/'s on-node algorithms, with the
 * inter-node phase on the leaders' communicator through PMPI_* (as Cray's MPICH2 on SMARTMAP).
 *
 * Every decision that picks a path is made from what all ranks share (the communicator, the
 * signature's byte count, the datatype and op of a reduction, the knobs), never from a rank's own
 * buffers: one rank's stack buffer must not send it to PMPI while its peers wait in shared memory.
 * A buffer a peer must reach but that is outside the segment is copied through it (staged). */
#include "pmpi_coll.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Marker the evaluation looks for (bobcat.evaluation.configs.mpi_layer) to record that lwk runs this layer. */
BOBCAT_EXPORT const char bobcat_coll_layer[] = "in-place collectives over SMARTMAP";

enum { A_SERIAL, A_PARALLEL, A_FUSED, A_HIER };
static pmpi_stat_t st_barrier = {.name = "Barrier", .alg_names = {"counter", "hier"}};
static pmpi_stat_t st_bcast = {.name = "Bcast", .alg_names = {"inplace", "hier", "split"}};
static pmpi_stat_t st_reduce = {.name = "Reduce", .alg_names = {"serial", "parallel", "fused", "hier"}};
static pmpi_stat_t st_allreduce = {.name = "Allreduce", .alg_names = {"serial", "parallel", "fused", "hier"}};
static pmpi_stat_t st_rsb = {.name = "Reduce_scatter_block", .alg_names = {"parallel", "hier"}};
static pmpi_stat_t st_rs = {.name = "Reduce_scatter", .alg_names = {"parallel", "hier"}};
static pmpi_stat_t st_scan = {.name = "Scan", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_exscan = {.name = "Exscan", .alg_names = {"inplace", "hier"}};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_barrier, &st_bcast, &st_reduce, &st_allreduce, &st_rsb, &st_rs, &st_scan, &st_exscan};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

/* A reduction input peers read: the user's buffer if in the segment (or if it travels inline:
 * small and serial), else a copy of its span. */
static const void *red_in(const void *in, size_t span, int inlined, void **tmp_p)
{
    *tmp_p = NULL;
    if (!span || inlined || smap_is_shared(in))
        return in;
    void *t = malloc(span);
    if (!t) {
        /* Peers are about to wait for this rank in shared memory: no way back to PMPI. */
        util_error("out of heap for a %zu-byte reduction buffer: raise the heap (yod --heap)", span);
        abort();
    }
    memcpy(t, in, span);
    *tmp_p = t;
    return t;
}

static void *seg_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        util_error("out of heap for a %zu-byte collective buffer: raise the heap (yod --heap)", bytes);
        abort();
    }
    return p;
}

/* Byte counts of a whole call over int-counted MPI calls: big ones in pieces of 1 GiB. */
static int bcast_bytes(const pmpi_comm_t *pc, void *buf, size_t bytes, int lroot)
{
    int rc = MPI_SUCCESS;
    for (size_t off = 0; off < bytes && rc == MPI_SUCCESS;) {
        int n = bytes - off > ((size_t)1 << 30) ? 1 << 30 : (int)(bytes - off);
        rc = pc_lead_bcast(pc, (char *)buf + off, n, MPI_BYTE, lroot);
        off += (size_t)n;
    }
    return rc;
}

/* MPI_Barrier's work. `count`: the program's call, counted in the statistics; the layer's own
 * (pmpi_barrier: a window's fence) is not, or the account would show barriers nobody called. */
static int barrier(MPI_Comm comm, int count)
{
    pmpi_comm_t *pc = NULL;
    if (pc_knobs.barrier == PC_MPI || !(pc = pmpi_comm_get_coll(comm))) {
        if (count)
            pmpi_stat_mpi(&st_barrier, pc_knobs.barrier == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm), 0);
        return PMPI_AWAY(PMPI_Barrier(comm));
    }
    pmpi_why_t hw = pc_hier_why(pc);
    if (hw != PMPI_WHY_NONE) {
        if (count)
            pmpi_stat_mpi(&st_barrier, hw, 0);
        return PMPI_AWAY(PMPI_Barrier(comm));
    }
    coll_barrier(&pc->cn);
    if (pc->nnodes > 1) {
        /* Node arrived, leaders meet, node released: nobody leaves before everyone arrived. */
        if (pc->leader == pc->rank)
            pc_lead_barrier(pc);
        coll_barrier(&pc->cn);
    }
    /* The real MPI's barrier would have received what a peer sent before arriving (its messages
     * travel in order with the barrier's): an MPICH access epoch's completion, say, that the
     * target's MPI_Win_test must see right after the barrier (mpi4py's test_rma). Ours travels in
     * shared memory, so with RMA windows alive, one progress pass of the real MPI on the way out. */
    if (pmpi_rma_windows)
        pmpi_mpi_progress();
    if (count)
        pmpi_stat_path(&st_barrier, PMPI_PATH_INPLACE, 0, pc->nnodes > 1 ? 1 : 0);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    PMPI_GUARD();
    return barrier(comm, 1);
}

int pmpi_barrier(MPI_Comm comm) { return barrier(comm, 0); }

BOBCAT_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    PMPI_GUARD();
    pmpi_comm_t *pc = NULL;
    pc_dt_t d;
    if (pc_knobs.bcast == PC_MPI || !(pc = pmpi_comm_get_coll(comm))) {
        pmpi_stat_mpi(&st_bcast, pc_knobs.bcast == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm), 0);
        return PMPI_AWAY(PMPI_Bcast(buf, count, dt, root, comm));
    }
    pmpi_why_t hw = pc_hier_why(pc);
    if (count <= 0 || root < 0 || root >= pc->size || buf == MPI_IN_PLACE || pc_dt(dt, &d) != 0 || d.size == 0 ||
        hw != PMPI_WHY_NONE) {
        pmpi_stat_mpi(&st_bcast, hw != PMPI_WHY_NONE ? hw : PMPI_WHY_VARIANT, 0);
        return PMPI_AWAY(PMPI_Bcast(buf, count, dt, root, comm)); /* nothing to move, or an error for the MPI to report */
    }
    size_t bytes = (size_t)count * (size_t)d.size;
    int me = pc->rank, hier = pc->nnodes > 1;
    pc_buf_t b;
    /* Small broadcasts travel in the root's slot: no peer reads its buffer then. */
    int shared = bytes > COLL_INLINE_MAX;
    int ok = me == root ? pc_in(&b, buf, count, dt, &d, shared)
                        : pc_out(&b, buf, count, dt, &d, shared && hier && pc->leader == me, 0);
    if (ok != 0) {
        util_error("out of heap for a %zu-byte broadcast: raise the heap (yod --heap)", bytes);
        abort();
    }
    /* A receiver whose count differs from the root's (erroneous) learns it from the root's words
     * on its node; across nodes a leader learns it from the real MPI, and says so to its node. */
    int mism = 0, lerr = MPI_SUCCESS;
    if (!hier) {
        mism = coll_bcast(&pc->cn, root, b.p, bytes);
    } else {
        int rnode = pc->node[root];
        if (pc->node[me] == rnode)
            mism = coll_bcast(&pc->cn, pmpi_comm_node_rank(pc, root), b.p, bytes);
        if (pc->leader == me)
            lerr = bcast_bytes(pc, b.p, bytes, pc->leader_rank[root]);
        if (pc->node[me] != rnode)
            mism = coll_bcast_failed(&pc->cn, 0, b.p, bytes, lerr != MPI_SUCCESS);
    }
    pmpi_stat_path(&st_bcast, b.tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes,
                   hier ? 1 : coll_tune.split_min && bytes > COLL_INLINE_MAX && bytes >= coll_tune.split_min ? 2 : 0);
    if (me == root)
        pc_in_done(&b);
    else
        pc_out_done(&b);
    /* a count mismatch as MPICH says it; a leader's own failure is the real MPI's class */
    int err = pc_bcast_mism_err(mism);
    if (err == MPI_SUCCESS && lerr != MPI_SUCCESS && PMPI_Error_class(lerr, &err) != MPI_SUCCESS)
        err = MPI_ERR_OTHER;
    return err == MPI_SUCCESS ? err : (PMPI_Comm_call_errhandler(comm, err), err);
}

/* Common checks of the reductions: NULL (and the reason) when the real MPI must do it. */
static pmpi_comm_t *red_setup(MPI_Comm comm, pc_alg_t knob, int count, MPI_Datatype dt, MPI_Op op, coll_op_t *cop,
                              size_t *mult_p, pmpi_why_t *why_p, int multinode_ok)
{
    pmpi_comm_t *pc = NULL;
    if (knob == PC_MPI || !(pc = pmpi_comm_get_coll(comm))) {
        *why_p = knob == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm);
        return NULL;
    }
    if (count <= 0) {
        *why_p = PMPI_WHY_VARIANT;
        return NULL;
    }
    if (pc_op(op, dt, cop, mult_p, why_p) != 0)
        return NULL;
    if ((unsigned long long)count * *mult_p > INT_MAX) {
        *why_p = PMPI_WHY_VARIANT;
        return NULL;
    }
    if (pc->nnodes > 1) {
        pmpi_why_t hw = multinode_ok ? pc_hier_why(pc) : PMPI_WHY_MULTINODE;
        if (hw != PMPI_WHY_NONE) {
            *why_p = hw;
            return NULL;
        }
        if (!cop->commutative && !pc->blocked) {
            *why_p = PMPI_WHY_ORDER;
            return NULL;
        }
    }
    return pc;
}

/* auto: serial below COLL_PARALLEL_MIN bytes, else `big` (Allreduce: fused; Reduce: parallel,
 * which already writes each slice straight into the root's result). */
static coll_alg_t pick(pc_alg_t knob, size_t span, coll_alg_t big)
{
    if (knob == PC_SERIAL)
        return COLL_ALG_SERIAL;
    if (knob == PC_PARALLEL)
        return COLL_ALG_PARALLEL;
    if (knob == PC_FUSED)
        return COLL_ALG_FUSED;
    if (knob == PC_AUTO_PARALLEL)
        big = COLL_ALG_PARALLEL; /* the auto rule of before the fused algorithm, for comparisons */
    return span >= pc_knobs.parallel_min ? big : COLL_ALG_SERIAL;
}

/* PMPI_Reduce, working around MPICH 4.0's crash when a root other than 0 passes MPI_IN_PLACE
 * (pmodels/mpich#6540, fixed in 4.1.2): the root hands a copy of its buffer's span as sbuf. */
static int reduce_pmpi(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    int rank = -1, inter = 1;
    MPI_Aint tlb, text, lb, ext;
    if (sbuf != MPI_IN_PLACE || root == 0 || count <= 0 || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != root ||
        PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS || PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS ||
        ext < 0)
        return PMPI_AWAY(PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
    size_t span = (size_t)(count - 1) * (size_t)ext + (size_t)text;
    char *tmp = malloc(span ? span : 1);
    if (!tmp)
        return PMPI_AWAY(PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
    memcpy(tmp, (char *)rbuf + tlb, span);
    int rc = PMPI_AWAY(PMPI_Reduce(tmp - tlb, rbuf, count, dt, op, root, comm));
    free(tmp);
    return rc;
}

BOBCAT_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                             MPI_Comm comm)
{
    PMPI_GUARD();
    coll_op_t cop;
    pmpi_why_t why;
    size_t mult;
    pmpi_comm_t *pc = red_setup(comm, pc_knobs.reduce, count, dt, op, &cop, &mult, &why, 1);
    /* Erroneous arguments (the real MPI reports them): a bad root, MPI_IN_PLACE off the root; the
     * same buffer twice at the root is reported here (pc_alias_error). */
    if (pc && (root < 0 || root >= pc->size || (pc->rank != root && sbuf == MPI_IN_PLACE)))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (pc && pc->rank == root && sbuf == rbuf)
        return pc_alias_error(&st_reduce, comm, NULL);
    if (!pc) {
        pmpi_stat_mpi(&st_reduce, why, 0);
        return reduce_pmpi(sbuf, rbuf, count, dt, op, root, comm);
    }
    int me = pc->rank, in_place = me == root && sbuf == MPI_IN_PLACE;
    size_t n = (size_t)count * mult, span = coll_span(&cop, n);
    coll_alg_t alg = pick(pc_knobs.reduce, span, COLL_ALG_PARALLEL);
    void *tin, *tout = NULL;
    int inl = span <= COLL_INLINE_MAX && (alg == COLL_ALG_SERIAL || n < (size_t)pc->node_size);
    const void *ip = red_in(in_place ? rbuf : sbuf, span, inl, &tin);
    int staged = tin != NULL;
    if (pc->nnodes == 1) {
        void *ro = rbuf;
        if (me == root && alg == COLL_ALG_PARALLEL && !smap_is_shared(rbuf)) {
            /* Peers write the result: it must be in the segment. In place, the staged input is it. */
            ro = in_place ? (void *)ip : (tout = seg_alloc(span));
            staged = 1;
        } else if (me == root && in_place) {
            ro = (void *)ip;
        }
        coll_reduce(&pc->cn, root, ip, ro, n, &cop, alg);
        if (me == root && ro != rbuf)
            memcpy(rbuf, ro, span);
    } else {
        int leader = pc->leader == me, lme = pc->leader_rank[me], lroot = pc->leader_rank[root];
        void *partial = NULL, *result = NULL;
        if (leader)
            partial = tout = seg_alloc(span);
        coll_reduce(&pc->cn, 0, ip, partial, n, &cop, alg);
        if (leader) {
            result = lme == lroot ? seg_alloc(span) : NULL;
            pc_lead_reduce(pc, partial, result, (int)n, pc_op_base(&cop), op, lroot);
            if (result) {
                memcpy(partial, result, span);
                free(result);
            }
        }
        if (pc->node[me] == pc->node[root] && root != pc->leader) {
            if (leader)
                pc_lead_to_root(pc, partial, (int)n, pc_op_base(&cop), root);
            else if (me == root)
                pc_lead_to_root(pc, rbuf, (int)n, pc_op_base(&cop), root);
        } else if (me == root) {
            memcpy(rbuf, partial, span);
        }
    }
    pmpi_stat_path(&st_reduce, staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, span, pc->nnodes > 1 ? A_HIER : (int)alg);
    free(tin);
    free(tout);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    PMPI_GUARD();
    coll_op_t cop;
    pmpi_why_t why;
    size_t mult;
    pmpi_comm_t *pc = red_setup(comm, pc_knobs.allreduce, count, dt, op, &cop, &mult, &why, 1);
    if (pc && (sbuf == rbuf || rbuf == MPI_IN_PLACE))
        pc = NULL, why = PMPI_WHY_VARIANT; /* erroneous: the real MPI reports it */
    if (!pc) {
        pmpi_stat_mpi(&st_allreduce, why, 0);
        return PMPI_AWAY(PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm));
    }
    int in_place = sbuf == MPI_IN_PLACE;
    size_t n = (size_t)count * mult, span = coll_span(&cop, n);
    coll_alg_t alg = pick(pc_knobs.allreduce, span, COLL_ALG_FUSED);
    void *tin, *tout = NULL;
    int inl = span <= COLL_INLINE_MAX && (alg == COLL_ALG_SERIAL || n < (size_t)pc->node_size);
    const void *ip = red_in(in_place ? rbuf : sbuf, span, inl, &tin);
    if (pc->nnodes == 1) {
        coll_allreduce(&pc->cn, ip, tin || !in_place ? rbuf : (void *)ip, n, &cop, alg);
    } else {
        int leader = pc->leader == pc->rank;
        void *partial = NULL;
        if (leader)
            partial = tout = seg_alloc(span);
        coll_reduce(&pc->cn, 0, ip, partial, n, &cop, alg);
        if (leader)
            pc_lead_allreduce(pc, partial, (int)n, pc_op_base(&cop), op);
        coll_bcast(&pc->cn, 0, leader ? partial : rbuf, span);
        if (leader)
            memcpy(rbuf, partial, span);
    }
    pmpi_stat_path(&st_allreduce, tin ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, span, pc->nnodes > 1 ? A_HIER : (int)alg);
    free(tin);
    free(tout);
    return MPI_SUCCESS;
}

/* Reduce_scatter across nodes: node reduce of the whole vector to the leader, the leaders'
 * PMPI_Reduce_scatter of node blocks (the vector's blocks put in node order first: each element
 * reduces on its own, so moving blocks is free of order effects), then each leader hands its
 * node's ranks their blocks. ip: every rank's input (in the segment). Returns 1 if rbuf was staged. */
static int reduce_scatter_hier(pmpi_comm_t *pc, const void *ip, void *rbuf, const size_t *cnt, const size_t *displ,
                               size_t total, const coll_op_t *cop, MPI_Op op)
{
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes;
    size_t ext = cop->extent, span = coll_span(cop, total);
    coll_alg_t alg = pick(pc_knobs.reduce_scatter, span, COLL_ALG_PARALLEL);
    char *partial = leader ? seg_alloc(total * ext) : NULL, *res = NULL;
    coll_reduce(&pc->cn, 0, ip, partial, total, cop, alg);
    size_t *mb = malloc(2 * (size_t)ns * sizeof(size_t)), *md = mb + ns, at = 0;
    if (!mb)
        abort();
    for (int i = 0; i < ns; i++) {
        size_t c = cnt[pc->node_ranks[i]];
        mb[i] = coll_span(cop, c);
        md[i] = at * ext;
        at += c;
    }
    if (leader) {
        int *ncnt = malloc((size_t)N * sizeof(int));
        char *ordered = partial;
        if (!ncnt)
            abort();
        for (int k = 0; k < N; k++)
            ncnt[k] = 0;
        for (int r = 0; r < pc->size; r++)
            ncnt[pc->leader_rank[r]] += (int)cnt[r];
        if (!pc->blocked) {
            ordered = seg_alloc(total * ext);
            size_t off = 0;
            for (int p = 0; p < pc->size; p++) {
                int r = pc->by_pos[p];
                memcpy(ordered + off * ext, partial + displ[r] * ext, cnt[r] * ext);
                off += cnt[r];
            }
        }
        res = seg_alloc(at * ext);
        pc_lead_reduce_scatter(pc, ordered, res, ncnt, pc_op_base(cop), op);
        if (ordered != partial)
            free(ordered);
        free(ncnt);
    }
    size_t mine = coll_span(cop, cnt[me]);
    void *out = leader || !mine || smap_is_shared(rbuf) ? rbuf : seg_alloc(mine);
    coll_scatterv(&pc->cn, 0, res, mb, md, out, mine);
    if (out != rbuf) {
        memcpy(rbuf, out, mine);
        free(out);
    }
    free(mb);
    free(res);
    free(partial);
    return out != rbuf;
}

/* Reduce_scatter(_block) on one node: rank r reduces its block of every rank's input. */
static int reduce_scatter(pmpi_stat_t *st, const void *sbuf, void *rbuf, const int *counts, int bcount,
                          MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    coll_op_t cop;
    pmpi_why_t why;
    pmpi_comm_t *pc = NULL;
    int total = 0;
    size_t mult;
    if (pc_knobs.reduce_scatter != PC_MPI && (pc = pmpi_comm_get_coll(comm)) != NULL) {
        long long t = 0;
        for (int r = 0; r < pc->size; r++) {
            int c = counts ? counts[r] : bcount;
            if (c < 0)
                t = -(1LL << 40);
            t += c;
        }
        total = t > 0 && t <= (1LL << 30) ? (int)t : 0;
    }
    pc = red_setup(comm, pc_knobs.reduce_scatter, total, dt, op, &cop, &mult, &why, 1);
    /* A rank that receives nothing may pass any rbuf (even sbuf): falling back alone would leave
     * its peers waiting in the layer. Aliasing a non-empty result is erroneous. */
    if (pc && ((sbuf == rbuf && (counts ? counts[pc->rank] : bcount) > 0) || rbuf == MPI_IN_PLACE))
        pc = NULL, why = PMPI_WHY_VARIANT;
    if (!pc) {
        pmpi_stat_mpi(st, why, 0);
        return counts ? PMPI_AWAY(PMPI_Reduce_scatter(sbuf, rbuf, counts, dt, op, comm))
                      : PMPI_AWAY(PMPI_Reduce_scatter_block(sbuf, rbuf, bcount, dt, op, comm));
    }
    size_t *cnt = malloc(2 * (size_t)pc->size * sizeof(size_t)), *displ = cnt + pc->size, off = 0;
    if (!cnt)
        abort();
    for (int r = 0; r < pc->size; r++) {
        cnt[r] = (size_t)(counts ? counts[r] : bcount) * mult;
        displ[r] = off;
        off += cnt[r];
    }
    int in_place = sbuf == MPI_IN_PLACE;
    size_t span = coll_span(&cop, (size_t)total * mult);
    void *tin;
    const void *ip = red_in(in_place ? rbuf : sbuf, span, 0, &tin);
    int staged = tin != NULL;
    if (pc->nnodes == 1)
        coll_reduce_scatter(&pc->cn, ip, tin || !in_place ? rbuf : (void *)ip, cnt, displ, &cop);
    else
        staged |= reduce_scatter_hier(pc, ip, rbuf, cnt, displ, (size_t)total * mult, &cop, op);
    pmpi_stat_path(st, staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, span, pc->nnodes > 1 ? 1 : 0);
    free(tin);
    free(cnt);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                           MPI_Comm comm)
{
    PMPI_GUARD();
    return reduce_scatter(&st_rsb, sbuf, rbuf, NULL, rcount, dt, op, comm);
}

BOBCAT_EXPORT int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                                     MPI_Comm comm)
{
    PMPI_GUARD();
    return reduce_scatter(&st_rs, sbuf, rbuf, rcounts, 0, dt, op, comm);
}

static int scan(pmpi_stat_t *st, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                int exclusive)
{
    coll_op_t cop;
    pmpi_why_t why;
    size_t mult;
    pmpi_comm_t *pc = red_setup(comm, pc_knobs.scan, count, dt, op, &cop, &mult, &why, 1);
    if (pc && (sbuf == rbuf || rbuf == MPI_IN_PLACE))
        pc = NULL, why = PMPI_WHY_VARIANT;
    /* Across nodes a rank's prefix is whole nodes then its own node's part only when the ranks
     * are grouped by node, whatever the op. */
    if (pc && pc->nnodes > 1 && !pc->blocked)
        pc = NULL, why = PMPI_WHY_ORDER;
    if (!pc) {
        pmpi_stat_mpi(st, why, 0);
        return exclusive ? PMPI_AWAY(PMPI_Exscan(sbuf, rbuf, count, dt, op, comm)) : PMPI_AWAY(PMPI_Scan(sbuf, rbuf, count, dt, op, comm));
    }
    int in_place = sbuf == MPI_IN_PLACE;
    size_t n = (size_t)count * mult, span = coll_span(&cop, n);
    void *tin;
    const void *ip = red_in(in_place ? rbuf : sbuf, span, span <= COLL_INLINE_MAX, &tin);
    if (pc->nnodes == 1) {
        coll_scan(&pc->cn, ip, tin || !in_place ? rbuf : (void *)ip, n, &cop, exclusive);
    } else {
        /* Node total to the leader (before the scan overwrites an in-place input), node scan, the
         * leaders' PMPI_Exscan of node totals, and every rank of node k > 0 folds its node's
         * prefix in on the left (earlier ranks first: any op, since the ranks are blocked). */
        int leader = pc->leader == pc->rank, k = pc->leader_rank[pc->rank];
        coll_alg_t alg = span <= COLL_INLINE_MAX ? COLL_ALG_SERIAL : pick(PC_AUTO, span, COLL_ALG_PARALLEL);
        char *partial = leader ? seg_alloc(span) : NULL, *pre = seg_alloc(span);
        coll_reduce(&pc->cn, 0, ip, partial, n, &cop, alg);
        coll_scan(&pc->cn, ip, tin || !in_place ? rbuf : (void *)ip, n, &cop, exclusive);
        if (leader)
            pc_lead_exscan(pc, partial, pre, (int)n, pc_op_base(&cop), op);
        if (k > 0) {
            coll_bcast(&pc->cn, 0, pre, span);
            if (exclusive && pc->node_rank == 0)
                memcpy(rbuf, pre, span);
            else
                cop.fn(pre, rbuf, n, &cop);
        }
        free(partial);
        free(pre);
    }
    pmpi_stat_path(st, tin ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, span, pc->nnodes > 1 ? 1 : 0);
    free(tin);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    PMPI_GUARD();
    return scan(&st_scan, sbuf, rbuf, count, dt, op, comm, 0);
}

BOBCAT_EXPORT int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    PMPI_GUARD();
    return scan(&st_exscan, sbuf, rbuf, count, dt, op, comm, 1);
}
