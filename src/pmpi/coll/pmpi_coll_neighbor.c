/* pmpi_coll_neighbor: the neighbourhood collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall
 * (v, w) and their MPI_Ineighbor_* forms) on Cartesian, graph and distributed-graph communicators,
 * over the layer's own point-to-point: p2p_isend_any / p2p_irecv_any, which move a node mate's
 * block by single copy through SMARTMAP and an off-node one through the real MPI, and handle any
 * datatype. A nonblocking call is a request of bobcat's (p2p's P2P_K_EXT kind) holding its inner
 * requests, so MPI_Wait/Test and their all/any/some forms complete it in any order and in arrays
 * mixed with point-to-point and real requests; the blocking forms start and wait.
 *
 * Which calls run here, from facts every member shares: the communicator has a shadow (p2p.h: a
 * registered communicator with a topology, from a constructor p2p_comm_api.c intercepts or a dup of
 * one), a private communicator of the same members that the messages travel on, so they never match
 * the program's. Anything else (the layer off, a communicator made by MPI_Comm_idup or by a
 * constructor not intercepted, BOBCAT_COLL_NEIGHBOR=mpi) goes to the real MPI's own call, whole, on
 * every member alike, and BOBCAT_STATS says why (a row per call: Neighbor_alltoall, ...).
 *
 * The neighbours (MPI 4.0 section 8.6), asked of the MPI on the first call and kept with the
 * communicator: Cartesian, for each dimension the -1 then the +1 neighbour (MPI_Cart_shift; a
 * periodic dimension of one rank is the rank itself, a non-periodic edge MPI_PROC_NULL, whose block
 * is neither sent nor received: the receive block is left alone); graph, MPI_Graph_neighbors for
 * both lists; distributed graph, MPI_Dist_graph_neighbors' sources and destinations, in order.
 *
 * Pairing: the receives are posted in list order, then the sends in list order, all of one call
 * with one tag per direction, so MPI's non-overtaking order pairs the j-th occurrence of B in A's
 * out-list with the j-th occurrence of A in B's in-list (repeated neighbours and self-loops
 * included), and calls in flight on one communicator pair by their start order, which MPI makes the
 * same on every member. A Cartesian dimension of one or two periodic ranks makes the -1 and +1
 * neighbour one rank, and there the standard (MPI 4.0, Annex B.1.1: errata of 3.1 from
 * mpi-forum/mpi-issues#153) wants block k of the sender in block k^1 of the receiver, which the
 * order alone does not give: on a Cartesian communicator block k is sent with tag k and received
 * with tag k^1 (the -1 block comes from the neighbour's +1 send). The real MPIs installed here get
 * that case wrong in some calls (Open MPI 4.1's nonblocking alltoall forms, MPICH 4.0's alltoallv/w):
 * there bobcat's result is the standard's and differs from theirs (tests/mp/mp_neighbor.c).
 *
 * MPI 4.0's large-count forms (MPI_Neighbor_alltoallv_c, ..., MPICH) are the same calls: counts and
 * displacements are read through pc_vec_t, and point-to-point takes 64-bit counts. */
#include "pmpi_coll.h"
#include "../p2p/p2p.h"

#include <stdlib.h>
#include <string.h>

enum { A_CART, A_GRAPH, A_DIST };
#define NBR_ALGS {"cart", "graph", "dist-graph"}
static pmpi_stat_t st_ag = {.name = "Neighbor_allgather", .alg_names = NBR_ALGS};
static pmpi_stat_t st_agv = {.name = "Neighbor_allgatherv", .alg_names = NBR_ALGS};
static pmpi_stat_t st_a2a = {.name = "Neighbor_alltoall", .alg_names = NBR_ALGS};
static pmpi_stat_t st_a2av = {.name = "Neighbor_alltoallv", .alg_names = NBR_ALGS};
static pmpi_stat_t st_a2aw = {.name = "Neighbor_alltoallw", .alg_names = NBR_ALGS};
static pmpi_stat_t st_iag = {.name = "Ineighbor_allgather", .alg_names = NBR_ALGS};
static pmpi_stat_t st_iagv = {.name = "Ineighbor_allgatherv", .alg_names = NBR_ALGS};
static pmpi_stat_t st_ia2a = {.name = "Ineighbor_alltoall", .alg_names = NBR_ALGS};
static pmpi_stat_t st_ia2av = {.name = "Ineighbor_alltoallv", .alg_names = NBR_ALGS};
static pmpi_stat_t st_ia2aw = {.name = "Ineighbor_alltoallw", .alg_names = NBR_ALGS};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_ag, &st_agv, &st_a2a, &st_a2av, &st_a2aw, &st_iag, &st_iagv, &st_ia2a, &st_ia2av, &st_ia2aw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

/* ---- the neighbours ----------------------------------------------------------------------------- */

/* One malloc'd block (the communicator's entry frees it with free()): this, then src and dst. */
typedef struct {
    int kind;          /* A_CART, A_GRAPH, A_DIST */
    int indeg, outdeg;
    int pinits;        /* persistent calls made on the communicator (every member counts alike) */
    int *src;          /* receive block i comes from src[i] (MPI_PROC_NULL: none) */
    int *dst;          /* send block i goes to dst[i] */
} nbr_t;

static nbr_t *nbr_alloc(int kind, int indeg, int outdeg)
{
    nbr_t *nb = malloc(sizeof *nb + sizeof(int) * ((size_t)indeg + (size_t)outdeg));
    if (!nb)
        return NULL;
    nb->kind = kind;
    nb->pinits = 0;
    nb->indeg = indeg;
    nb->outdeg = outdeg;
    nb->src = (int *)(void *)(nb + 1);
    nb->dst = nb->src + indeg;
    return nb;
}

/* comm's neighbours in the standard's order (local calls only); NULL if out of memory. */
static nbr_t *nbr_build(MPI_Comm comm)
{
    int topo = MPI_UNDEFINED, rank = 0;
    PMPI_Topo_test(comm, &topo);
    PMPI_Comm_rank(comm, &rank);
    nbr_t *nb = NULL;
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        int *dims = malloc(sizeof(int) * 3 * (size_t)(nd > 0 ? nd : 1));
        if (!dims)
            return NULL;
        int *periods = dims + nd, *coords = periods + nd;
        if (nd > 0)
            PMPI_Cart_get(comm, nd, dims, periods, coords);
        nb = nbr_alloc(A_CART, 2 * nd, 2 * nd);
        for (int d = 0; nb && d < nd; d++) {
            int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
            if (dims[d] > 1)
                PMPI_Cart_shift(comm, d, 1, &lo, &hi);
            else if (periods[d])
                lo = hi = rank;
            nb->src[2 * d] = nb->dst[2 * d] = lo;
            nb->src[2 * d + 1] = nb->dst[2 * d + 1] = hi;
        }
        free(dims);
    } else if (topo == MPI_GRAPH) {
        int n = 0;
        PMPI_Graph_neighbors_count(comm, rank, &n);
        nb = nbr_alloc(A_GRAPH, n, n);
        if (nb && n > 0) {
            PMPI_Graph_neighbors(comm, rank, n, nb->src);
            memcpy(nb->dst, nb->src, sizeof(int) * (size_t)n);
        }
    } else if (topo == MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        nb = nbr_alloc(A_DIST, in, out);
        int *w = weighted ? malloc(sizeof(int) * ((size_t)in + (size_t)out + 1)) : NULL;
        if (nb && (w || !weighted)) {
            PMPI_Dist_graph_neighbors(comm, in, nb->src, w ? w : MPI_UNWEIGHTED, out, nb->dst,
                                      w ? w + in : MPI_UNWEIGHTED);
        } else {
            free(nb);
            nb = NULL;
        }
        free(w);
    }
    return nb;
}

/* ---- one call: its arguments, its inner requests ------------------------------------------------ */

typedef enum { K_AG, K_AGV, K_A2A, K_A2AV, K_A2AW } nbr_kind_t;

/* The arguments of any of the five calls (what a call does not have stays 0). */
typedef struct {
    nbr_kind_t kind;
    const void *sbuf;
    MPI_Count scount;
    pc_vec_t scounts, sdispls;       /* (int, or the large-count form's MPI_Count and MPI_Aint) */
    const MPI_Aint *sdispw;          /* Alltoallw: byte displacements */
    MPI_Datatype stype;
    const MPI_Datatype *stypes;
    void *rbuf;
    MPI_Count rcount;
    pc_vec_t rcounts, rdispls;
    const MPI_Aint *rdispw;
    MPI_Datatype rtype;
    const MPI_Datatype *rtypes;
} nbr_args_t;

/* Send block i: where, how many, of what (sext: stype's extent). */
static inline const void *send_block(const nbr_args_t *a, int i, MPI_Aint sext, MPI_Count *count_p,
                                     MPI_Datatype *dt_p)
{
    const char *s = a->sbuf;
    switch (a->kind) {
    case K_AG:
    case K_AGV: *count_p = a->scount; *dt_p = a->stype; return s;
    case K_A2A: *count_p = a->scount; *dt_p = a->stype; return s + (MPI_Aint)i * a->scount * sext;
    case K_A2AV:
        *count_p = pc_at(a->scounts, i), *dt_p = a->stype;
        return s + (MPI_Aint)pc_at(a->sdispls, i) * sext;
    default: *count_p = pc_at(a->scounts, i); *dt_p = a->stypes[i]; return s + a->sdispw[i];
    }
}

static inline void *recv_block(const nbr_args_t *a, int i, MPI_Aint rext, MPI_Count *count_p, MPI_Datatype *dt_p)
{
    char *r = a->rbuf;
    switch (a->kind) {
    case K_AG:
    case K_A2A: *count_p = a->rcount; *dt_p = a->rtype; return r + (MPI_Aint)i * a->rcount * rext;
    case K_AGV:
    case K_A2AV:
        *count_p = pc_at(a->rcounts, i), *dt_p = a->rtype;
        return r + (MPI_Aint)pc_at(a->rdispls, i) * rext;
    default: *count_p = pc_at(a->rcounts, i); *dt_p = a->rtypes[i]; return r + a->rdispw[i];
    }
}

/* Counts the real MPI would reject (negative): the call is left to it, which reports the error. */
static int args_bad(const nbr_t *nb, const nbr_args_t *a)
{
    MPI_Count c;
    MPI_Datatype dt;
    for (int i = 0; i < nb->outdeg; i++)
        if (send_block(a, i, 0, &c, &dt), c < 0)
            return 1;
    for (int i = 0; i < nb->indeg; i++)
        if (recv_block(a, i, 0, &c, &dt), c < 0)
            return 1;
    return 0;
}

#define NBR_INLINE 16
typedef struct {
    int n, left;          /* inner requests, and those not complete yet */
    int first;            /* every one before it is complete */
    int err;              /* the first error an inner request reported */
    MPI_Request *reqs;    /* MPI_REQUEST_NULL once complete */
    MPI_Request inl[NBR_INLINE];
} nbr_op_t;

static void op_free(nbr_op_t *op)
{
    if (op->reqs != op->inl)
        free(op->reqs);
}

/* Post every receive, then every send, on the shadow (see the banner for the order and tags; a
 * persistent call's tags start at tag0, the others' at 0). */
static void op_start(nbr_op_t *op, const nbr_t *nb, MPI_Comm sh, const nbr_args_t *a, int tag0)
{
    int cart = nb->kind == A_CART, n = 0;
    for (int i = 0; i < nb->indeg; i++)
        n += nb->src[i] != MPI_PROC_NULL;
    for (int i = 0; i < nb->outdeg; i++)
        n += nb->dst[i] != MPI_PROC_NULL;
    op->n = op->left = op->first = 0;
    op->err = MPI_SUCCESS;
    op->reqs = n <= NBR_INLINE ? op->inl : util_alloc_or_die(sizeof(MPI_Request) * (size_t)n, "a neighbourhood collective");
    MPI_Aint sext = 0, rext = 0;
    if (a->kind != K_A2AW) {
        /* the block strides; the send type's is needed only by Alltoall(v) */
        rext = (MPI_Aint)pmpi_dt_get(a->rtype)->extent;
        if (a->kind != K_AG && a->kind != K_AGV)
            sext = (MPI_Aint)pmpi_dt_get(a->stype)->extent;
    }
    for (int i = 0; i < nb->indeg; i++) {
        if (nb->src[i] == MPI_PROC_NULL)
            continue;
        MPI_Count count;
        MPI_Datatype dt;
        void *buf = recv_block(a, i, rext, &count, &dt);
        int rc = p2p_irecv_any(buf, count, dt, nb->src[i], tag0 + (cart ? i ^ 1 : 0), sh, &op->reqs[op->n]);
        if (rc != MPI_SUCCESS) {
            if (op->err == MPI_SUCCESS)
                op->err = rc;
            continue;
        }
        op->n++;
    }
    for (int i = 0; i < nb->outdeg; i++) {
        if (nb->dst[i] == MPI_PROC_NULL)
            continue;
        MPI_Count count;
        MPI_Datatype dt;
        const void *buf = send_block(a, i, sext, &count, &dt);
        int rc = p2p_isend_any(buf, count, dt, nb->dst[i], tag0 + (cart ? i : 0), sh, MODE_STD, &op->reqs[op->n]);
        if (rc != MPI_SUCCESS) {
            if (op->err == MPI_SUCCESS)
                op->err = rc;
            continue;
        }
        op->n++;
    }
    op->left = op->n;
}

/* 1 once every inner request is complete (each is released as it completes). The caller ran
 * p2p_progress() first (p2p_req_test's rule). */
static int op_test(nbr_op_t *op)
{
    for (int i = op->first; i < op->n && op->left; i++) {
        if (op->reqs[i] == MPI_REQUEST_NULL)
            continue;
        int err = MPI_SUCCESS;
        p2p_req_t *q = p2p_req_of(op->reqs[i]);
        if (q) {
            if (!p2p_req_test(q, MPI_STATUS_IGNORE, &err))
                continue;
            p2p_req_release(q);
            op->reqs[i] = MPI_REQUEST_NULL;
        } else {
            int flag = 0;
            err = PMPI_Test(&op->reqs[i], &flag, MPI_STATUS_IGNORE);
            if (!flag && err == MPI_SUCCESS)
                continue;
            op->reqs[i] = MPI_REQUEST_NULL;
        }
        if (err != MPI_SUCCESS && op->err == MPI_SUCCESS)
            op->err = err;
        op->left--;
    }
    while (op->first < op->n && op->reqs[op->first] == MPI_REQUEST_NULL)
        op->first++;
    return op->left == 0;
}

/* ---- the decision, the count, the two ways to run a call ---------------------------------------- */

/* comm's neighbours and shadow if the call runs here; else NULL with the reason. */
static const nbr_t *nbr_setup(MPI_Comm comm, const nbr_args_t *a, MPI_Comm *shadow_p, pmpi_why_t *why_p)
{
    *why_p = PMPI_WHY_SETUP;
    if (pmpi_layer.on && pc_knobs.neighbor == PC_MPI) {
        *why_p = PMPI_WHY_FORCED;
        return NULL;
    }
    p2p_comm_t *c = pmpi_layer.on && comm != MPI_COMM_NULL ? p2p_comm_lookup(comm) : NULL;
    if (!c || c->nbr_shadow == MPI_COMM_NULL) {
        /* not registered (p2p_why_not: the layer or the engine is off, an intercommunicator, a
         * constructor we do not see), or registered without a topology (an error for the MPI) */
        if (pmpi_stats_on)
            *why_p = !pmpi_layer.on ? PMPI_WHY_OFF : c ? PMPI_WHY_SETUP : p2p_why_not(comm);
        return NULL;
    }
    if (!c->nbr && !(c->nbr = nbr_build(comm))) {
        /* The members agreed on the shadow: one cannot go to the real MPI alone, the others would wait. */
        util_error("out of memory for a communicator's neighbour lists");
        abort();
    }
    const nbr_t *nb = c->nbr;
    if (args_bad(nb, a)) {
        *why_p = PMPI_WHY_VARIANT;
        return NULL;
    }
    *shadow_p = c->nbr_shadow;
    return nb;
}

/* BOBCAT_STATS: bytes sent; staged when a block's datatype is not one run of bytes (p2p packs it). */
static void count_call(pmpi_stat_t *st, const nbr_t *nb, const nbr_args_t *a)
{
    if (!pmpi_stats_on)
        return;
    size_t bytes = 0;
    int staged = 0;
    MPI_Count count;
    MPI_Datatype dt;
    for (int i = 0; i < nb->outdeg; i++) {
        if (nb->dst[i] == MPI_PROC_NULL)
            continue;
        send_block(a, i, 0, &count, &dt);
        const pmpi_dt_info_t *d = pmpi_dt_get(dt);
        bytes += (size_t)count * (size_t)d->size;
        staged |= count > 0 && !d->contig;
    }
    for (int i = 0; i < nb->indeg; i++) {
        if (nb->src[i] == MPI_PROC_NULL)
            continue;
        recv_block(a, i, 0, &count, &dt);
        staged |= count > 0 && !pmpi_dt_get(dt)->contig;
    }
    pmpi_stat_path(st, staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, nb->kind);
}

/* A blocking call: start, then MPI_Wait's loop over the inner requests. */
static int run_blocking(pmpi_stat_t *st, const nbr_t *nb, MPI_Comm sh, const nbr_args_t *a, MPI_Comm comm)
{
    nbr_op_t op;
    op_start(&op, nb, sh, a, 0);
    count_call(st, nb, a);
    unsigned spins = 0;
    for (;;) {
        p2p_progress();
        if (op_test(&op))
            break;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
    op_free(&op);
    if (op.err != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, op.err);
    return op.err;
}

static int ext_test(p2p_req_t *r, int *err_p)
{
    nbr_op_t *op = r->ext;
    int done = op_test(op);
    *err_p = op->err;
    return done;
}

static void ext_release(p2p_req_t *r)
{
    nbr_op_t *op = r->ext;
    /* Released only once complete (retired, or reaped as an orphan): no inner request is left. */
    if (!op || op->left)
        return;
    op_free(op);
    free(op);
}

static const p2p_ext_ops_t nbr_ops = {ext_test, ext_release, NULL, NULL};

/* A nonblocking call: started, handed out as a request of bobcat's. */
static int run_nonblocking(pmpi_stat_t *st, const nbr_t *nb, MPI_Comm sh, const nbr_args_t *a, MPI_Comm comm,
                           MPI_Request *req, int tag0)
{
    nbr_op_t *op = util_alloc_or_die(sizeof *op, "a neighbourhood collective");
    p2p_req_t *r = p2p_req_new();
    if (!r) {
        util_error("out of bobcat requests for a neighbourhood collective");
        abort();
    }
    op_start(op, nb, sh, a, tag0);
    count_call(st, nb, a);
    r->kind = P2P_K_EXT;
    r->ext_ops = &nbr_ops;
    r->ext = op;
    r->comm = comm;
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

/* ---- persistent calls (MPI 4.0: MPI_Neighbor_allgather_init, ...) ------------------------------
 * A persistent request of bobcat's (P2P_K_PERSIST) with copies of the arrays and holds on the
 * datatypes; each MPI_Start starts the nonblocking call as its inner request. MPI 4.0 matches
 * persistent collectives by the order of their inits, not of their starts, so each request has tags
 * of its own: the k-th made on a communicator (every member counts alike) uses the block of
 * `stride` tags after the k-th (stride: the nonblocking calls' tags, 0 .. stride - 1), and calls of
 * different requests never pair whatever order ranks start them in. Past the MPI's tag bound, and
 * wherever the nonblocking call would not run here, the real MPI's persistent request serves it. */
#ifdef PCOLL
typedef struct {
    nbr_args_t a;         /* the arrays point into `arrays`; the datatypes are held */
    const MPI_Datatype *stypes_user, *rtypes_user;
    MPI_Datatype stype_user, rtype_user;
    pmpi_stat_t *st;
    int tag0;
    int outdeg, indeg;
    void *arrays;
} npers_t;

static int npers_start(p2p_req_t *r, MPI_Request *inner)
{
    npers_t *p = r->ext;
    MPI_Comm sh = MPI_COMM_NULL;
    pmpi_why_t why;
    const nbr_t *nb = nbr_setup(r->comm, &p->a, &sh, &why);
    if (!nb) /* (the communicator is gone: freed, which the program may not do before this start) */
        return PMPI_Comm_call_errhandler(r->comm, MPI_ERR_COMM), MPI_ERR_COMM;
    return run_nonblocking(p->st, nb, sh, &p->a, r->comm, inner, p->tag0);
}

static void npers_release(p2p_req_t *r)
{
    npers_t *p = r->ext;
    if (!p)
        return;
    if (p->a.kind == K_A2AW) {
        for (int i = 0; i < p->outdeg; i++)
            pmpi_dt_release(((MPI_Datatype *)p->a.stypes)[i], p->stypes_user[i]);
        for (int i = 0; i < p->indeg; i++)
            pmpi_dt_release(((MPI_Datatype *)p->a.rtypes)[i], p->rtypes_user[i]);
    } else {
        pmpi_dt_release(p->a.stype, p->stype_user);
        pmpi_dt_release(p->a.rtype, p->rtype_user);
    }
    free(p->arrays);
    free(p);
}

static const p2p_ext_ops_t npers_ops = {NULL, npers_release, npers_start, NULL};

/* The tag bound of the MPI's messages (off-node blocks travel through it). */
static int tag_ub(void)
{
    static int ub;
    if (!ub) {
        int *v = NULL, flag = 0;
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
        ub = flag && v ? *v : 32767;
    }
    return ub;
}

/* Make the persistent request if the call runs here (then 1); else 0, and the caller asks the real
 * MPI for its own (the reason counted in row st). */
static int npers_init(pmpi_stat_t *st, const nbr_args_t *a, MPI_Comm comm, MPI_Request *req)
{
    MPI_Comm sh = MPI_COMM_NULL;
    pmpi_why_t why;
    const nbr_t *nb = nbr_setup(comm, a, &sh, &why);
    /* Counted on the communicator's lists whatever this call's arguments (an erroneous count on one
     * rank must not shift the others' tags): nbr_setup built them if the communicator has a shadow. */
    p2p_comm_t *c = pmpi_layer.on && comm != MPI_COMM_NULL ? p2p_comm_lookup(comm) : NULL;
    nbr_t *cnt = c ? c->nbr : NULL;
    long long k = cnt ? cnt->pinits++ : 0;
    int stride = nb && nb->kind == A_CART && nb->outdeg > 0 ? nb->outdeg : 1;
    long long tag0 = (long long)stride * (k + 1);
    if (!nb || tag0 + stride - 1 > tag_ub()) {
        pmpi_stat_mpi(st, nb ? PMPI_WHY_VARIANT : why, 0);
        pmpi_real_requests = 1; /* the real MPI's persistent request */
        return 0;
    }
    int out = nb->outdeg, in = nb->indeg, w = a->kind == K_A2AW;
    /* counts and displacements as 64-bit words (an int or a large-count form alike), then
     * (alltoallw) the types */
    size_t words = a->kind == K_A2AV ? 2 * ((size_t)out + (size_t)in) : a->kind == K_AGV ? 2 * (size_t)in
                   : w ? (size_t)out + (size_t)in : 0;
    _Static_assert(sizeof(MPI_Count) == 8 && sizeof(MPI_Aint) == 8, "64-bit counts and displacements");
    size_t aoff = words * 8;
    size_t bytes = aoff + (w ? ((size_t)out + (size_t)in) * (sizeof(MPI_Aint) + 2 * sizeof(MPI_Datatype)) : 0);
    npers_t *p = calloc(1, sizeof *p);
    char *arr = malloc(bytes ? bytes : 1);
    p2p_req_t *r = p2p_req_new();
    if (!p || !arr || !r) {
        free(p);
        free(arr);
        if (r)
            p2p_req_release(r);
        /* (the members agreed on the tags: going to the real MPI alone would leave them waiting) */
        util_error("out of memory for a persistent neighbourhood collective");
        abort();
    }
    p->a = *a;
    p->st = st;
    p->tag0 = (int)tag0;
    p->outdeg = out;
    p->indeg = in;
    p->arrays = arr;
    char *wp = arr;
#define KEEP(field, n, T, kind)                                                                      \
    do {                                                                                             \
        T *c_ = (T *)(void *)wp;                                                                     \
        for (int i_ = 0; i_ < (n); i_++)                                                             \
            c_[i_] = (T)pc_at(a->field, i_);                                                         \
        p->a.field = (pc_vec_t){c_, kind};                                                           \
        wp += sizeof(T) * (size_t)(n);                                                               \
    } while (0)
    if (a->kind == K_AGV) {
        KEEP(rcounts, in, MPI_Count, PC_VEC_COUNT);
        KEEP(rdispls, in, MPI_Aint, PC_VEC_AINT);
    } else if (a->kind == K_A2AV) {
        KEEP(scounts, out, MPI_Count, PC_VEC_COUNT);
        KEEP(sdispls, out, MPI_Aint, PC_VEC_AINT);
        KEEP(rcounts, in, MPI_Count, PC_VEC_COUNT);
        KEEP(rdispls, in, MPI_Aint, PC_VEC_AINT);
    } else if (w) {
        KEEP(scounts, out, MPI_Count, PC_VEC_COUNT);
        KEEP(rcounts, in, MPI_Count, PC_VEC_COUNT);
    }
#undef KEEP
    if (w) {
        MPI_Aint *ap = (MPI_Aint *)(void *)(arr + aoff);
        memcpy(ap, a->sdispw, sizeof(MPI_Aint) * (size_t)out);
        memcpy(ap + out, a->rdispw, sizeof(MPI_Aint) * (size_t)in);
        p->a.sdispw = ap;
        p->a.rdispw = ap + out;
        MPI_Datatype *tp = (MPI_Datatype *)(void *)(ap + out + in), *up = tp + out + in;
        for (int i = 0; i < out; i++)
            up[i] = a->stypes[i], tp[i] = pmpi_dt_keep(a->stypes[i]);
        for (int i = 0; i < in; i++)
            up[out + i] = a->rtypes[i], tp[out + i] = pmpi_dt_keep(a->rtypes[i]);
        p->a.stypes = tp;
        p->a.rtypes = tp + out;
        p->stypes_user = up;
        p->rtypes_user = up + out;
    } else {
        p->stype_user = a->stype;
        p->rtype_user = a->rtype;
        p->a.stype = pmpi_dt_keep(a->stype);
        p->a.rtype = pmpi_dt_keep(a->rtype);
    }
    *req = p2p_persist_ext(r, &npers_ops, p, comm);
    return 1;
}
#endif

/* ---- the entry points ------------------------------------------------------------------------- */

/* The body every entry point shares: run here (blocking, or nonblocking with `request`), else the
 * real MPI's call `real`, counted in row st. */
#define NBR_CALL(st, nonblocking, real)                                                             \
    do {                                                                                            \
        MPI_Comm sh_ = MPI_COMM_NULL;                                                               \
        pmpi_why_t why_;                                                                            \
        const nbr_t *nb_ = nbr_setup(comm, &a, &sh_, &why_);                                        \
        if (!nb_) {                                                                                 \
            pmpi_stat_mpi(st, why_, 0);                                                             \
            return real;                                                                            \
        }                                                                                           \
        if (nonblocking)                                                                            \
            return run_nonblocking(st, nb_, sh_, &a, comm, request, 0);                             \
        return run_blocking(st, nb_, sh_, &a, comm);                                                \
    } while (0)

BOBCAT_EXPORT int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_ag, 0,
             PMPI_AWAY(PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    NBR_CALL(&st_iag, 1,
             PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                          const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                          MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(displs), .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_agv, 0,
             PMPI_AWAY(PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                                comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                           MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(displs), .rtype = recvtype};
    NBR_CALL(&st_iagv, 1,
             PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                       request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2a, 0,
             PMPI_AWAY(PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    NBR_CALL(&st_ia2a, 1,
             PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                         const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts),
                    .sdispls = pc_vec_int(sdispls), .stype = sendtype,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(rdispls),
                    .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2av, 0,
             PMPI_AWAY(PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                               recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                          MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                          const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                          MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts),
                    .sdispls = pc_vec_int(sdispls), .stype = sendtype,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(rdispls),
                    .rtype = recvtype};
    NBR_CALL(&st_ia2av, 1,
             PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                      comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                         const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts), .sdispw = sdispls,
                    .stypes = sendtypes,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispw = rdispls, .rtypes = recvtypes};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2aw, 0,
             PMPI_AWAY(PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                               recvtypes, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                          const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                          const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                          MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts), .sdispw = sdispls,
                    .stypes = sendtypes,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispw = rdispls, .rtypes = recvtypes};
    NBR_CALL(&st_ia2aw, 1,
             PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                      comm, request));
}

/* ---- the persistent forms' entry points (MPI 4.0; the info argument carries no hint we use) ---- */
#ifdef PCOLL
BOBCAT_EXPORT int PCOLL(Neighbor_allgather)(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                            MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    if (npers_init(&st_iag, &a, comm, request))
        return MPI_SUCCESS;
    return PCOLL_REAL(Neighbor_allgather)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                          request);
}

BOBCAT_EXPORT int PCOLL(Neighbor_allgatherv)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                             void *recvbuf, const int recvcounts[], const int displs[],
                                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                             MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(displs), .rtype = recvtype};
    if (npers_init(&st_iagv, &a, comm, request))
        return MPI_SUCCESS;
    return PCOLL_REAL(Neighbor_allgatherv)(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                           info, request);
}

BOBCAT_EXPORT int PCOLL(Neighbor_alltoall)(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    if (npers_init(&st_ia2a, &a, comm, request))
        return MPI_SUCCESS;
    return PCOLL_REAL(Neighbor_alltoall)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                         request);
}

BOBCAT_EXPORT int PCOLL(Neighbor_alltoallv)(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                            MPI_Info info, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts),
                    .sdispls = pc_vec_int(sdispls), .stype = sendtype,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispls = pc_vec_int(rdispls),
                    .rtype = recvtype};
    if (npers_init(&st_ia2av, &a, comm, request))
        return MPI_SUCCESS;
    return PCOLL_REAL(Neighbor_alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                          recvtype, comm, info, request);
}

BOBCAT_EXPORT int PCOLL(Neighbor_alltoallw)(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                            MPI_Info info, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_int(sendcounts), .sdispw = sdispls,
                    .stypes = sendtypes,
                    .rbuf = recvbuf, .rcounts = pc_vec_int(recvcounts), .rdispw = rdispls, .rtypes = recvtypes};
    if (npers_init(&st_ia2aw, &a, comm, request))
        return MPI_SUCCESS;
    return PCOLL_REAL(Neighbor_alltoallw)(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                          recvtypes, comm, info, request);
}
#endif

/* ---- MPI 4.0's large-count forms (MPICH): the same calls, their counts and displacements 64-bit ---- */
#if MPI_VERSION >= 4
BOBCAT_EXPORT int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_ag, 0, PMPI_AWAY(PMPI_Neighbor_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                            recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                            MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    NBR_CALL(&st_iag, 1, PMPI_Ineighbor_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                                    request));
}

BOBCAT_EXPORT int MPI_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                                void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                                MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AG, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    if (npers_init(&st_iag, &a, comm, request))
        return MPI_SUCCESS;
    return PMPI_Neighbor_allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                          request);
}

BOBCAT_EXPORT int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                            void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                            MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(displs),
                    .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_agv, 0, PMPI_AWAY(PMPI_Neighbor_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                                              displs, recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                             void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(displs),
                    .rtype = recvtype};
    NBR_CALL(&st_iagv, 1, PMPI_Ineighbor_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                                      recvtype, comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                                 void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                                 MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_AGV, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(displs),
                    .rtype = recvtype};
    if (npers_init(&st_iagv, &a, comm, request))
        return MPI_SUCCESS;
    return PMPI_Neighbor_allgatherv_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                           info, request);
}

BOBCAT_EXPORT int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2a, 0, PMPI_AWAY(PMPI_Neighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                            recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                           MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    NBR_CALL(&st_ia2a, 1, PMPI_Ineighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                                    request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                               MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2A, .sbuf = sendbuf, .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,
                    .rcount = recvcount, .rtype = recvtype};
    if (npers_init(&st_ia2a, &a, comm, request))
        return MPI_SUCCESS;
    return PMPI_Neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                         request);
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                                           const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                           const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                           MPI_Datatype recvtype, MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispls = pc_vec_aint(sdispls), .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(rdispls),
                    .rtype = recvtype};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2av, 0, PMPI_AWAY(PMPI_Neighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                              recvcounts, rdispls, recvtype, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                                            const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                            const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispls = pc_vec_aint(sdispls), .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(rdispls),
                    .rtype = recvtype};
    NBR_CALL(&st_ia2av, 1, PMPI_Ineighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                                      rdispls, recvtype, comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                                const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                                const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                                MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AV, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispls = pc_vec_aint(sdispls), .stype = sendtype, .rbuf = recvbuf,
                    .rcounts = pc_vec_count(recvcounts), .rdispls = pc_vec_aint(rdispls),
                    .rtype = recvtype};
    if (npers_init(&st_ia2av, &a, comm, request))
        return MPI_SUCCESS;
    return PMPI_Neighbor_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                          recvtype, comm, info, request);
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                                           const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                                           const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                           const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispw = sdispls, .stypes = sendtypes, .rbuf = recvbuf, .rcounts = pc_vec_count(recvcounts),
                    .rdispw = rdispls, .rtypes = recvtypes};
    MPI_Request *request = NULL;
    NBR_CALL(&st_a2aw, 0, PMPI_AWAY(PMPI_Neighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                              recvcounts, rdispls, recvtypes, comm)));
}

BOBCAT_EXPORT int MPI_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                                            const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                                            const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                            const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispw = sdispls, .stypes = sendtypes, .rbuf = recvbuf, .rcounts = pc_vec_count(recvcounts),
                    .rdispw = rdispls, .rtypes = recvtypes};
    NBR_CALL(&st_ia2aw, 1, PMPI_Ineighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                                      rdispls, recvtypes, comm, request));
}

BOBCAT_EXPORT int MPI_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                                const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                                void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                                const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                                MPI_Request *request)
{
    PMPI_GUARD();
    nbr_args_t a = {.kind = K_A2AW, .sbuf = sendbuf, .scounts = pc_vec_count(sendcounts),
                    .sdispw = sdispls, .stypes = sendtypes, .rbuf = recvbuf, .rcounts = pc_vec_count(recvcounts),
                    .rdispw = rdispls, .rtypes = recvtypes};
    if (npers_init(&st_ia2aw, &a, comm, request))
        return MPI_SUCCESS;
    return PMPI_Neighbor_alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                          recvtypes, comm, info, request);
}

#endif
