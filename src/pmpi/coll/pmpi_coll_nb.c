/* pmpi_coll_nb: the nonblocking collectives (MPI_Ibarrier, Ibcast, Ireduce, Iallreduce, Iallgather,
 * Ialltoall, Igather, Iscatter, Ireduce_scatter(_block), Iscan, Iexscan; the v/w forms are in
 * pmpi_coll_nbv.c, on the same ring through pc_nbv_start, and across nodes through
 * pc_nbv_iallgatherv_hier and pc_nbv_hier_start) over coll/'s ring (coll_nb.c), as requests of bobcat's (p2p's P2P_K_EXT kind), so that MPI_Wait/Test and their
 * all/any/some forms complete them in any order and in arrays mixed with point-to-point and real
 * requests, and every progress pass (p2p_progress: any wait, test, or call that progresses) moves
 * them along.
 *
 * Which calls run here, from facts every rank of the communicator shares: the communicator has a
 * ring area (agreed when it was registered: one node, at least two ranks, the engine on everywhere),
 * BOBCAT_COLL_NBC is not mpi, and the arguments are ones the blocking collective would take
 * (count > 0 or nothing to move, a datatype and op bobcat can describe, an int-sized whole). Anything
 * else goes to the real MPI's own nonblocking collective, whole, on every rank alike, and BOBCAT_STATS
 * says why (a row per call: Iallreduce, ...).
 *
 * Buffers: what a peer reads or writes must be in the segment, so a rank stages (at the start, a
 * local decision) a buffer outside it or of a non-contiguous type, and unstages the result when its
 * request completes; the request holds the datatypes it still needs. In-place forms whose result
 * would overwrite an input another unit still reads (Ialltoall, Ireduce_scatter, Iscan) stage the
 * input. Calls that travel in the slots (small) need neither. */
#include "pmpi_coll.h"
#include "../p2p/p2p.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { A_INLINE, A_RING, A_LOCAL, A_HIER };
#define NB_ALGS {"inline", "ring", "local", "hier"}
static pmpi_stat_t st_ibarrier = {.name = "Ibarrier", .alg_names = {"ring", "hier"}};
static pmpi_stat_t st_ibcast = {.name = "Ibcast", .alg_names = NB_ALGS};
static pmpi_stat_t st_ireduce = {.name = "Ireduce", .alg_names = NB_ALGS};
static pmpi_stat_t st_iallreduce = {.name = "Iallreduce", .alg_names = NB_ALGS};
static pmpi_stat_t st_iallgather = {.name = "Iallgather", .alg_names = NB_ALGS};
static pmpi_stat_t st_ialltoall = {.name = "Ialltoall", .alg_names = NB_ALGS};
static pmpi_stat_t st_igather = {.name = "Igather", .alg_names = NB_ALGS};
static pmpi_stat_t st_iscatter = {.name = "Iscatter", .alg_names = NB_ALGS};
static pmpi_stat_t st_irsb = {.name = "Ireduce_scatter_block", .alg_names = NB_ALGS};
static pmpi_stat_t st_irs = {.name = "Ireduce_scatter", .alg_names = NB_ALGS};
static pmpi_stat_t st_iscan = {.name = "Iscan", .alg_names = NB_ALGS};
static pmpi_stat_t st_iexscan = {.name = "Iexscan", .alg_names = NB_ALGS};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_ibarrier, &st_ibcast, &st_ireduce, &st_iallreduce, &st_iallgather, &st_ialltoall,
                          &st_igather, &st_iscatter, &st_irsb, &st_irs, &st_iscan, &st_iexscan};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

/* ---- the communicator's ring, and the groups with calls in flight ---------------------------- */

typedef struct nb_comm {
    coll_nb_group_t g;
    uintptr_t *base;
    int active;               /* on the list of groups with calls in flight */
    int pinits;               /* persistent collectives made on the communicator so far */
    struct nb_comm *next;
    /* A persistent collective's channel with an area of its own (solo_channel): group rank 0 makes
     * it at the init and tells the others where it is by an inline broadcast on the communicator's
     * ring (setup: NULL once complete); calls started before then are held (its g.area is NULL
     * until then: coll_nb_start holds them, coll_nb_set_area lets them go). */
    coll_nb_t *setup;
    uint64_t setup_addr;      /* the area, in group rank 0's view */
    coll_nb_area_t *solo;     /* ... in mine, once known (its refs: the ranks still using it) */
    int orphan;               /* its request was freed before the setup completed */
    p2p_comm_t *pin;          /* the program's communicator, kept until the setup completes (its
                                 ring must outlive the setup, even past MPI_Comm_free) */
} nb_comm_t;

/* While a persistent request starts its call: the channel it runs on instead of the main ring. */
static nb_comm_t *nb_channel;
int (*pc_nbv_persist_start)(const pc_nbv_args_t *a, MPI_Comm comm, MPI_Request *req);
/* ... and on a communicator across nodes, the request (its node channel, its leaders' request). */
struct pcoll;
static struct pcoll *nb_pers;
static int pers_tag(const struct pcoll *p); /* its leaders' phase's tag over point-to-point */

static nb_comm_t *active_head;
struct nb_req;
static struct nb_req *hier_head; /* calls across nodes in flight */
static int hier_progress(void);

/* Communicators the setups of solo channels kept, let go at the end of a progress pass, where no
 * list of this file is being walked (the last reference may free a communicator, and its rings). */
static p2p_comm_t **unpins;
static int nunpins, capunpins;

static void unpin_later(p2p_comm_t *c)
{
    if (nunpins == capunpins) {
        int cap = capunpins ? 2 * capunpins : 8;
        p2p_comm_t **u = realloc(unpins, sizeof *u * (size_t)cap);
        if (!u) {
            util_error("out of memory for a persistent collective");
            abort();
        }
        unpins = u, capunpins = cap;
    }
    unpins[nunpins++] = c;
    p2p_ext_pending = 1;
}

/* A solo channel whose setup is complete now or was before: its ring known, its held calls go. */
static int solo_ready(nb_comm_t *ch)
{
    if (!ch->setup)
        return 1;
    if (!coll_nb_test(ch->setup))
        return 0;
    free(ch->setup);
    ch->setup = NULL;
    if (ch->pin)
        unpin_later(ch->pin);
    ch->pin = NULL;
    ch->solo = (coll_nb_area_t *)(uintptr_t)(ch->setup_addr + ch->base[0]);
    coll_nb_set_area(&ch->g, coll_nb_solo_ring(ch->solo)); /* (the calls held meanwhile go) */
    return 1;
}

/* A channel nobody here uses any more (off the active list): freed, and a solo one's area let go
 * (group rank 0 frees it once every rank has). */
static void solo_drop(nb_comm_t *ch)
{
    if (ch->solo) {
        int last = atomic_fetch_sub_explicit(&ch->solo->refs, 1, memory_order_acq_rel) == 1;
        if (ch->g.rank == 0)
            pmpi_free_when_unused(ch->solo, &ch->solo->refs, last);
    }
    free(ch->base);
    free(ch);
}

static void nb_progress_all(void)
{
    for (nb_comm_t **pp = &active_head; *pp;) {
        nb_comm_t *nc = *pp;
        if (nc->setup && !solo_ready(nc)) {
            pp = &nc->next;
        } else if (nc->orphan) { /* (its request is gone: the setup was all that kept it) */
            *pp = nc->next;
            solo_drop(nc);
        } else if (coll_nb_progress(&nc->g)) {
            pp = &nc->next;
        } else {
            nc->active = 0;
            *pp = nc->next;
        }
    }
    int hier = hier_progress(); /* (also clears the progress thread's cue when none is left) */
    while (nunpins)
        p2p_comm_unref(unpins[--nunpins]);
    p2p_ext_pending = active_head != NULL || hier;
}

static void nb_activate(nb_comm_t *nc)
{
    if (!nc->active) {
        nc->active = 1;
        nc->next = active_head;
        active_head = nc;
    }
    p2p_ext_pending = 1;
}

/* Off the active list, if it is on it. */
static void nb_deactivate(nb_comm_t *nc)
{
    for (nb_comm_t **pp = &active_head; *pp; pp = &(*pp)->next)
        if (*pp == nc) {
            *pp = nc->next;
            break;
        }
    nc->active = 0;
}

static void lean_forget(const struct nb_comm *nc);

static void nb_comm_free(p2p_comm_t *c)
{
    nb_comm_t *nc = c->nb;
    /* Its requests pinned the entry, so none is in flight: it is not on the active list. */
    nb_deactivate(nc);
    lean_forget(nc);
    p2p_ext_pending = active_head != NULL;
    free(nc->base);
    free(nc);
    c->nb = NULL;
}

/* The ring of comm, made on first use (local: the area was agreed at registration). NULL: none. */
static nb_comm_t *nb_comm_of(MPI_Comm comm, pmpi_comm_t *pc, p2p_comm_t **c_p)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    *c_p = c;
    if (!c || !c->nb_view)
        return NULL;
    if (c->nb)
        return c->nb;
    nb_comm_t *nc = calloc(1, sizeof *nc);
    uintptr_t *base = malloc(sizeof(uintptr_t) * (size_t)pc->size);
    if (!nc || !base) {
        /* A ring that every member agreed on cannot be dropped by one: the peers would wait. */
        util_error("out of memory for a communicator's nonblocking collectives");
        abort();
    }
    for (int r = 0; r < pc->size; r++)
        base[r] = r == pc->rank ? 0 : pc->peer_base[r];
    nc->base = base;
    nc->g = (coll_nb_group_t){.size = pc->size, .rank = pc->rank, .base = base, .area = (char *)c->nb_view,
                              .depth = COLL_NB_DEPTH, .help = pc_knobs.nbc_help};
    p2p_nb_free = nb_comm_free;
    p2p_ext_progress = nb_progress_all;
    c->nb = nc;
    return nc;
}

/* A communicator whose leaders' phase is point-to-point has no node communicator, whose ring the
 * node phases of its calls across nodes would take: its node part made a ring area instead
 * (pc->node_nb), and this is its ring, made on first use and freed with the communicator (which
 * the real MPI frees only once no request uses it: p2p_comm_free_deferred). */
static int node_ring_slot = -1;

static void node_ring_free(pmpi_comm_t *pc, void *ext)
{
    (void)pc;
    nb_comm_t *nc = ext;
    nb_deactivate(nc);
    lean_forget(nc);
    p2p_ext_pending = active_head != NULL || hier_head != NULL;
    free(nc->base);
    free(nc);
}

__attribute__((constructor)) static void node_ring_register(void)
{
    node_ring_slot = pmpi_comm_ext_register(node_ring_free);
}

static nb_comm_t *node_ring_of(pmpi_comm_t *pc)
{
    if (node_ring_slot < 0 || !pc->node_nb)
        return NULL;
    if (pc->ext[node_ring_slot])
        return pc->ext[node_ring_slot];
    nb_comm_t *nc = calloc(1, sizeof *nc);
    uintptr_t *base = malloc(sizeof(uintptr_t) * (size_t)pc->node_size);
    if (!nc || !base) {
        util_error("out of memory for a communicator's nonblocking collectives");
        abort();
    }
    memcpy(base, pc->cn.base, sizeof(uintptr_t) * (size_t)pc->node_size);
    nc->base = base;
    nc->g = (coll_nb_group_t){.size = pc->node_size, .rank = pc->node_rank, .base = base,
                              .area = (char *)pc->node_nb, .depth = COLL_NB_DEPTH, .help = pc_knobs.nbc_help};
    p2p_ext_progress = nb_progress_all;
    pc->ext[node_ring_slot] = nc;
    return nc;
}

/* ---- a call as a request ---------------------------------------------------------------------- */

typedef struct nb_req {
    coll_nb_t c;
    nb_comm_t *nc;
    pc_buf_t in, out;        /* staged input / output (tmp: ours) */
    MPI_Datatype out_held;   /* the datatype unstaging needs, held (MPI_DATATYPE_NULL: none) */
    MPI_Datatype out_user;
    void *extra;             /* a private copy (in-place input) freed at the end */
    void *raw_user, *raw_tmp; /* a reduction's result staged as it lies in memory */
    size_t raw_span;
    size_t *counts;
    int local_done;          /* complete from the start (nothing to move, one rank) */
    /* Across nodes (hier): step 0 the node call c (has_c), step 1 the leader's call through the
     * real MPI (real), step 2 the node call c2 (has_c2), which the leader holds until step 1 ends. */
    int hier, step, leader, has_c, has_c2;
    coll_nb_t c2;
    MPI_Request real;
    coll_nb_kind_t lkind;    /* the leaders' call: BARRIER, BCAST (bytes), ALLREDUCE (in place),
                                REDUCE (in place at the root), ALLGATHER, GATHER or SCATTER (the
                                nodes' blocks, in place at the root; lcount: nodes, counts and
                                displacements in lcd), REDUCE_SCATTER (in place, the nodes' counts
                                in lcd), ALLTOALL (a2a) */
    void *lbuf;
    int lcount, lroot, ldisp; /* ldisp: GATHER/SCATTER, my node's block's bytes */
    MPI_Datatype ldt;
    MPI_Op lop;
    MPI_Comm lcomm;
    int lself;               /* the leaders' rooted call's root is my node's leader */
    int *lcd;                /* the leaders' v call's counts, then displacements (bytes; lcount each) */
    void *scratch;           /* a leader's block for its node (freed at release) */
    void *own_dst;           /* Iscatter's leader: its own piece, copied out of its node's block */
    const void *own_src;     /* once the leaders' phase has brought it */
    size_t own_bytes;
    struct a2a *a2a;         /* Ialltoall across nodes: the leader's staging (below) */
    void *sx, *se;           /* Iscan/Iexscan across nodes, a leader: its node phase's input (its
                                own, then with the earlier nodes' prefix folded in on the left)
                                and that prefix (the leaders' MPI_Iexscan's result) */
    int sfold;               /* ... the prefix exists (not the first node): fold it in */
    struct nb_req *hnext;    /* the list of calls across nodes in flight */
    coll_op_t kop;           /* a reduction's op, kept until the request is retired (op_keep) */
    int kop_set;
    const pc_nbv_ops_t *vops; /* a v/w form's staging (pmpi_coll_nbv.c), its state vst */
    void *vst;
    const pc_nbv_lead_t *vlead; /* ... across nodes, its leader's work (lkind COLL_NB_N): the node's
                                   tables' addresses gathered in scratch (lcount words) */
    uint64_t vtab;           /* ... my table's address, which the node phase gathers */
    const pmpi_comm_t *lpc;  /* the leaders' phase is point-to-point (pc->lead_tag >= 0): the
                                communicator's node part; NULL: the real MPI's call on lcomm */
    pc_lead_nb_t *lnb;       /* ... its state while it runs */
    struct pcoll *pers;      /* a start of this persistent collective: its leaders' phase is the
                                real MPI's persistent request made at its init, or over
                                point-to-point with the request's tag (pers_lead_start) */
    struct pcoll *pinit;     /* not a call: that request's init, waiting for its turn among the
                                leaders' calls (pers_queue) */
    int err;                 /* what its completion reports (MPI_ERR_TRUNCATE: a root's own piece
                                did not fit) */
    int unstarted;           /* set up by start(), published by req_out once the request is made
                                (lean_start says why last) */
} nb_req_t;

/* ---- across nodes: node phase, leaders' phase, node phase --------------------------------------- */

/* Ialltoall across nodes (ialltoall_hier), a leader's staging: its node's send buffers gathered
 * (G: node rank i's whole buffer at i * n * b), the off-node blocks packed per node pair for the
 * leaders' MPI_Ialltoallv and received from it (far_s, far_r: [destination][source] per node,
 * counts and displacements in cnt: 4 x nnodes bytes), and the node's results assembled (A: node
 * rank i's at i * n * b) for the node to take. The layout of the nodes is copied from the
 * communicator (which the program may free while the call is in flight). */
typedef struct a2a {
    char *G, *A, *far_s, *far_r;
    int own_g, own_a;        /* G, A are ours to free (not the send buffer, the result) */
    int *cnt;                /* scnt, sdsp, rcnt, rdsp */
    int *first, *count;      /* per node: its first comm rank, its ranks (the comm is blocked) */
    int n, nnodes, myk, ns;
    size_t b;
} a2a_t;

static void a2a_free(a2a_t *a)
{
    if (!a)
        return;
    if (a->own_g)
        free(a->G);
    if (a->own_a)
        free(a->A);
    free(a->far_s), free(a->far_r), free(a->cnt), free(a->first), free(a);
}

/* The off-node blocks of the node's ranks, per destination node k: [destination j of k][source i]. */
static void a2a_pack(a2a_t *a)
{
    size_t b = a->b, nb = (size_t)a->n * b, off = 0;
    for (int k = 0; k < a->nnodes; k++) {
        if (k != a->myk)
            for (int j = a->first[k]; j < a->first[k] + a->count[k]; j++)
                for (int i = 0; i < a->ns; i++, off += b)
                    memcpy(a->far_s + off, a->G + (size_t)i * nb + (size_t)j * b, b);
    }
}

/* Each node rank i's result: from node mate p, p's block for i out of G; from a rank of node m, its
 * block out of what node m's leader sent ([i][source]). */
static void a2a_assemble(a2a_t *a)
{
    size_t b = a->b, nb = (size_t)a->n * b;
    int f = a->first[a->myk], *rdsp = a->cnt + 3 * a->nnodes;
    for (int i = 0; i < a->ns; i++) {
        char *out = a->A + (size_t)i * nb;
        for (int m = 0; m < a->nnodes; m++)
            for (int r = a->first[m], p = 0; p < a->count[m]; r++, p++)
                memcpy(out + (size_t)r * b,
                       m == a->myk ? a->G + (size_t)p * nb + (size_t)(f + i) * b
                                   : a->far_r + rdsp[m] + ((size_t)i * (size_t)a->count[m] + (size_t)p) * b,
                       b);
    }
}

/* Node rank -> what to add to its pointers for my view (a leader alone on its node: itself). */
static const uintptr_t *node_base(const nb_req_t *q)
{
    static const uintptr_t alone = 0;
    return q->nc ? q->nc->g.base : &alone;
}

/* A v/w form's leader (pc_nbv_hier_start): its node's part, with the tables in my view, and the
 * leaders' exchange into w. */
static void vlead_start(nb_req_t *q, pc_lead_nb_args_t *w)
{
    const uintptr_t *base = node_base(q);
    uint64_t *t = q->scratch;
    for (int i = 1; i < q->lcount; i++)
        t[i] += base[i];
    q->vlead->start(q->vst, t, base, w);
}

/* The same leaders' call over point-to-point (q->lpc), into q->lnb. */
static int leaders_p2p_start(nb_req_t *q)
{
    pc_lead_nb_args_t a = {.kind = q->lkind, .buf = q->lbuf, .count = q->lcount, .root = q->lroot,
                           .dt = q->lkind == COLL_NB_BCAST ? MPI_BYTE : q->ldt, .op = q->lop, .cnt = q->lcd};
    switch (q->lkind) {
    case COLL_NB_ALLTOALL: {
        a2a_t *a2 = q->a2a;
        int N = a2->nnodes, *c = a2->cnt;
        a2a_pack(a2);
        a.buf = a2->far_s, a.cnt = c, a.dsp = c + N, a.out = a2->far_r, a.rcnt = c + 2 * N, a.rdsp = c + 3 * N;
        break;
    }
    case COLL_NB_N: vlead_start(q, &a); break;
    case COLL_NB_EXSCAN: a.out = q->se; break;
    case COLL_NB_ALLGATHER:
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER: /* (a root's blocks: counts, then displacements; elsewhere my block's bytes) */
        a.dsp = q->lcd ? q->lcd + q->lcount : NULL;
        a.count = q->ldisp;
        break;
    default: break;
    }
    a.tag = q->pers ? pers_tag(q->pers) : 0; /* (after the switch: vlead_start writes all of a) */
    return pc_lead_nb_start(q->lpc, &a, &q->lnb);
}

static int leaders_start(nb_req_t *q)
{
    if (q->lpc)
        return leaders_p2p_start(q);
    pmpi_real_requests = 1;
    switch (q->lkind) {
    case COLL_NB_ALLTOALL: {
        a2a_t *a = q->a2a;
        int N = a->nnodes, *c = a->cnt;
        a2a_pack(a);
        return PMPI_Ialltoallv(a->far_s, c, c + N, MPI_BYTE, a->far_r, c + 2 * N, c + 3 * N, MPI_BYTE, q->lcomm,
                               &q->real);
    }
    case COLL_NB_N: { /* a v/w form's leader */
        pc_lead_nb_args_t w;
        vlead_start(q, &w);
        return PMPI_Ialltoallw(w.buf, w.cnt, w.dsp, w.st, w.out, w.rcnt, w.rdsp, w.rt, q->lcomm, &q->real);
    }
    case COLL_NB_BARRIER: return PMPI_Ibarrier(q->lcomm, &q->real);
    case COLL_NB_BCAST: return PMPI_Ibcast(q->lbuf, q->lcount, MPI_BYTE, q->lroot, q->lcomm, &q->real);
    case COLL_NB_REDUCE:
        return PMPI_Ireduce(q->lself ? MPI_IN_PLACE : q->lbuf, q->lself ? q->lbuf : NULL, q->lcount, q->ldt, q->lop,
                            q->lroot, q->lcomm, &q->real);
    case COLL_NB_EXSCAN: /* the node totals: the earlier nodes' prefix into se */
        return PMPI_Iexscan(q->lbuf, q->se, q->lcount, q->ldt, q->lop, q->lcomm, &q->real);
    case COLL_NB_REDUCE_SCATTER: /* the nodes' blocks, in place: mine lands at the start */
        return PMPI_Ireduce_scatter(MPI_IN_PLACE, q->lbuf, q->lcd, q->ldt, q->lop, q->lcomm, &q->real);
    case COLL_NB_ALLGATHER: { /* the nodes' blocks in place */
        const int *cd = q->lcd;
        return PMPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, q->lbuf, cd, cd + q->lcount, MPI_BYTE, q->lcomm,
                                &q->real);
    }
    case COLL_NB_GATHER: { /* lbuf: my node's block, or at the root the whole result */
        const int *cd = q->lcd;
        if (q->lself)
            return PMPI_Igatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, q->lbuf, cd, cd + q->lcount, MPI_BYTE, q->lroot,
                                 q->lcomm, &q->real);
        return PMPI_Igatherv(q->lbuf, q->ldisp, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, q->lroot, q->lcomm, &q->real);
    }
    case COLL_NB_SCATTER: {
        const int *cd = q->lcd;
        if (q->lself)
            return PMPI_Iscatterv(q->lbuf, cd, cd + q->lcount, MPI_BYTE, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, q->lroot,
                                  q->lcomm, &q->real);
        return PMPI_Iscatterv(NULL, NULL, NULL, MPI_BYTE, q->lbuf, q->ldisp, MPI_BYTE, q->lroot, q->lcomm, &q->real);
    }
    default: return PMPI_Iallreduce(MPI_IN_PLACE, q->lbuf, q->lcount, q->ldt, q->lop, q->lcomm, &q->real);
    }
}

/* A persistent collective's leaders' phase (below): its start once the request's real init is
 * made (q->real stays MPI_REQUEST_NULL until then), its end, and that init in its turn. */
static int pers_lead_start(nb_req_t *q);
static nb_comm_t *pers_node_channel(struct pcoll *p);
static void pers_lead_done(nb_req_t *q);
static void pers_init_now(struct pcoll *p);
/* 1 once that init is complete (a v/w form's: its leaders' communicator made). */
static int pers_inited(struct pcoll *p);
/* A start of the request is in flight (1) or retired (0): the request outlives MPI_Request_free
 * until then. */
static void pers_busy(struct pcoll *p, int busy);

/* Whether e is a leaders' call on lcomm that has not been made yet and that later calls there
 * must wait for (every collective's but a persistent one's start: those match by init). */
static int leaders_call_pending(const nb_req_t *e, MPI_Comm lcomm)
{
    return e->lcomm == lcomm && e->leader && e->step <= 1 && e->real == MPI_REQUEST_NULL && !e->pers;
}

/* Put q at the tail of the calls across nodes in flight (the list is in start order), which
 * progress advances. */
static void hier_append(nb_req_t *q)
{
    p2p_ext_progress = nb_progress_all; /* (a rank alone on its node has no ring that set it) */
    q->hnext = NULL;
    nb_req_t **pp = &hier_head;
    while (*pp)
        pp = &(*pp)->hnext;
    *pp = q;
    p2p_ext_pending = 1;
}

/* One look: as far as the steps go now. 1 once all are done. */
static int hier_advance(nb_req_t *q)
{
    if (q->step == 0) {
        if (q->has_c && !coll_nb_test(&q->c))
            return 0;
        q->step = 1;
    }
    if (q->step == 1) {
        if (q->leader) {
            /* The leaders' calls are collectives on the leaders' communicator: every leader starts
             * them in the order the calls were started (the list's), whatever order their node
             * phases end in. So are persistent collectives' inits; their starts are not (MPI 4.0
             * matches them by init), so they neither wait nor are waited for. */
            if (q->lpc) {
                /* Over point-to-point: one leaders' phase at a time per communicator, in the calls'
                 * order (their messages share a tag); a persistent one's start whenever its node
                 * phase is done (its request's own tag). */
                int rc = MPI_SUCCESS;
                if (!q->lnb) {
                    for (nb_req_t *e = hier_head; e && e != q && !q->pers; e = e->hnext)
                        if (e->lpc == q->lpc && e->step <= 1 && !e->pers)
                            return 0;
                    rc = q->pers ? pers_lead_start(q) : leaders_start(q);
                }
                if (rc == MPI_SUCCESS && !pc_lead_nb_test(q->lnb, &rc))
                    return 0;
                q->lnb = NULL;
                if (rc != MPI_SUCCESS && q->err == MPI_SUCCESS && PMPI_Error_class(rc, &q->err) != MPI_SUCCESS)
                    q->err = MPI_ERR_OTHER;
                goto lead_done;
            }
            if (q->real == MPI_REQUEST_NULL && !q->pers)
                for (nb_req_t *e = hier_head; e && e != q; e = e->hnext)
                    if (leaders_call_pending(e, q->lcomm))
                        return 0;
            if (q->pinit) {
                pers_init_now(q->pinit); /* (once: it does nothing after that) */
                if (!pers_inited(q->pinit))
                    return 0;
                q->step = 3;
                return 1;
            }
            if (q->real == MPI_REQUEST_NULL && (q->pers ? pers_lead_start(q) : leaders_start(q)) != MPI_SUCCESS) {
                util_error("the leaders' phase of a nonblocking collective failed to start in the real MPI");
                abort();
            }
            int flag = 0;
            if (q->real == MPI_REQUEST_NULL) /* a persistent one whose init waits for its turn */
                return 0;
            int rc = PMPI_Test(&q->real, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) { /* (the leaders' communicators return errors: an erroneous call,
                                        a broadcast's counts that differ, say; my node hears of it) */
                flag = 1;
                q->real = MPI_REQUEST_NULL;
                if (q->err == MPI_SUCCESS && PMPI_Error_class(rc, &q->err) != MPI_SUCCESS)
                    q->err = MPI_ERR_OTHER;
            }
            if (!flag)
                return 0;
        lead_done:
            if (q->pers)
                pers_lead_done(q);
            if (q->a2a)
                a2a_assemble(q->a2a);
            if (q->vlead)
                q->vlead->finish(q->vst, q->scratch, node_base(q));
            if (q->sfold) /* earlier ranks first: any op */
                q->c.op.fn(q->se, q->sx, q->c.count, &q->c.op);
            if (q->own_bytes)
                memcpy(q->own_dst, q->own_src, q->own_bytes);
            if (q->has_c2) {
                q->c2.failed = q->err != MPI_SUCCESS;
                coll_nb_release(&q->c2);
            }
        }
        q->step = 2;
    }
    if (q->step == 2) {
        if (q->has_c2 && !coll_nb_test(&q->c2))
            return 0;
        q->step = 3;
    }
    return 1;
}

/* Advance every call across nodes in flight (the leaders' phases need this rank's progress);
 * 1 if some remain. */
static int hier_progress(void)
{
    int leading = 0;
    for (nb_req_t **pp = &hier_head; *pp;) {
        if (hier_advance(*pp)) {
            nb_req_t *done = *pp;
            *pp = done->hnext;
            if (done->pinit) /* (no request of the program's holds it) */
                free(done);
        } else {
            leading |= (*pp)->leader && (*pp)->step <= 1;
            pp = &(*pp)->hnext;
        }
    }
    p2p_agent_work = leading; /* (the progress thread's cue) */
    return hier_head != NULL;
}

/* The call's own group alone; -1 for a call across nodes, which needs the full pass (its
 * leaders' phase): polling it would only spin (a Wait on an 8-byte Iallreduce across two simulated
 * nodes spent 82 % of its 7.9 us in 256 such polls). */
static int nb_poll(p2p_req_t *r)
{
    nb_req_t *q = r->ext;
    if (q->hier)
        return -1;
    return q->local_done || coll_nb_test(&q->c);
}

static int nb_test(p2p_req_t *r, int *err_p)
{
    nb_req_t *q = r->ext;
    *err_p = MPI_SUCCESS;
    if (q->hier ? !hier_advance(q) : !nb_poll(r))
        return 0;
    *err_p = q->err;
    /* a broadcast's receiver whose count differs from the root's (erroneous), as MPI_Bcast says it */
    int mism = q->c.mism ? q->c.mism : q->has_c2 ? q->c2.mism : 0;
    if (*err_p == MPI_SUCCESS)
        *err_p = pc_bcast_mism_err(mism);
    if (q->hier)
        for (nb_req_t **pp = &hier_head; *pp; pp = &(*pp)->hnext)
            if (*pp == q) {
                *pp = q->hnext;
                break;
            }
    if (!hier_head)
        p2p_agent_work = 0;
    if (q->raw_tmp) {
        memcpy(q->raw_user, q->raw_tmp, q->raw_span);
        free(q->raw_tmp);
        q->raw_tmp = NULL;
    }
    if (q->out.tmp) {
        /* unstage into the user's buffer with the datatype the request holds */
        q->out.dt = q->out_held;
        pc_out_done(&q->out);
    }
    pc_in_done(&q->in);
    if (q->vops && !q->local_done)
        q->vops->done(q->vst);
    q->local_done = 1;
    return 1;
}

/* Finished calls' states kept for the next ones (a small Iallreduce + Wait is a few hundred ns: a
 * calloc and a free of the state were a tenth of it). */
#define NB_FREE_MAX 64
static nb_req_t *nb_free_list[NB_FREE_MAX];
static int nb_nfree;

static void nb_release(p2p_req_t *r)
{
    nb_req_t *q = r->ext;
    if (!q)
        return;
    if (!q->local_done) {
        /* Freed before completion (MPI_Request_free is erroneous on these): the peers may still
         * reach its buffers, so it stays until complete. Never reached from the orphan path, which
         * releases only completed requests. */
        return;
    }
    if (q->pers)
        pers_busy(q->pers, 0);
    /* (nb_test, which completed it, unstaged and freed its staged input, output and result) */
    if (q->out_held != MPI_DATATYPE_NULL)
        pmpi_dt_release(q->out_held, q->out_user);
    if (q->kop_set)
        pc_op_let_go(&q->kop);
    free(q->extra);
    free(q->scratch);
    a2a_free(q->a2a);
    q->a2a = NULL;
    free(q->lcd);
    free(q->counts);
    if (q->vops)
        q->vops->release(q->vst);
    if (nb_nfree < NB_FREE_MAX)
        nb_free_list[nb_nfree++] = q;
    else
        free(q);
}

static const p2p_ext_ops_t nb_ops = {nb_test, nb_release, NULL, nb_poll};

/* A request of bobcat's for a call of this file's (ops and its state). */
static MPI_Request ext_request(const p2p_ext_ops_t *ops, void *ext, MPI_Comm comm)
{
    p2p_req_t *r = p2p_req_new();
    if (!r) {
        util_error("out of bobcat requests for a nonblocking collective");
        abort();
    }
    r->kind = P2P_K_EXT;
    r->ext_ops = ops;
    r->ext = ext;
    r->comm = comm;
    return p2p_handle_of(r);
}

/* ---- lean calls ------------------------------------------------------------------------------ */

/* A barrier, or an allreduce small enough to travel in the slots with a predefined op on a named
 * type, on the node: the commonest nonblocking calls, and ones whose whole work is a slot each way,
 * so the general request (nb_req_t: staging, datatypes held, leaders' phases) was most of their
 * time. Their state is the ring call alone, from a list of their own; nothing to stage, hold or
 * unstage. A call is lean when its arguments are the same as an earlier call's that the general
 * path found so (lean_red, lean_bar: every input of that decision but the buffers, which a lean
 * call checks itself), so the general path stays the one place that decides what runs here. */
typedef struct lean {
    coll_nb_t c;
    struct lean *next;
} lean_t;
static lean_t *lean_list;

static struct {
    nb_comm_t *nc; /* NULL: none */
    MPI_Comm comm;
    int count;
    MPI_Datatype dt;
    MPI_Op op;
    coll_op_t cop;
    size_t n, span;
} lean_red;
static struct {
    nb_comm_t *nc;
    MPI_Comm comm;
} lean_bar;

static void lean_forget(const nb_comm_t *nc)
{
    if (lean_red.nc == nc)
        lean_red.nc = NULL;
    if (lean_bar.nc == nc)
        lean_bar.nc = NULL;
}

static int lean_poll(p2p_req_t *r)
{
    lean_t *l = r->ext;
    return l->c.complete || coll_nb_test(&l->c);
}

static int lean_test(p2p_req_t *r, int *err_p)
{
    *err_p = MPI_SUCCESS;
    return lean_poll(r);
}

static void lean_release(p2p_req_t *r)
{
    lean_t *l = r->ext;
    if (!l->c.complete)
        return; /* freed before completion (erroneous): its ring call may still be read, so it stays */
    l->next = lean_list;
    lean_list = l;
}

static const p2p_ext_ops_t lean_ops = {lean_test, lean_release, NULL, lean_poll};

/* The request first, the publication last: a store into a line a peer has read waits for that line
 * (the peer is polling it), and stores after it queue behind it, so the fewer that follow before
 * the wait, the sooner this rank gets to look for the peers' words (in `chip` placement, where a
 * line takes ~200 ns, publishing first cost ~20 % of an 8-byte Iallreduce + Wait: docs/benchmarks.md).
 * An allreduce's op and elements: cop, n. */
static void lean_start(nb_comm_t *nc, coll_nb_kind_t kind, const coll_op_t *cop, size_t n, const void *sbuf,
                       void *rbuf, MPI_Comm comm, MPI_Request *req)
{
    lean_t *l = lean_list;
    if (l)
        lean_list = l->next;
    else
        l = memset(util_alloc_or_die(sizeof *l, "a nonblocking collective"), 0, sizeof *l);
    l->c.g = &nc->g;
    l->c.kind = kind;
    l->c.hold = 0;
    l->c.inl = kind == COLL_NB_ALLREDUCE;
    if (kind == COLL_NB_ALLREDUCE) {
        l->c.op = *cop;
        l->c.count = n;
        l->c.sbuf = sbuf;
        l->c.rbuf = rbuf;
    }
    *req = ext_request(&lean_ops, l, comm);
    nb_activate(nc);
    coll_nb_start(&l->c);
}

/* A cleared state. Through the C library's memset, not an inline one: GCC clears a struct of a
 * known size with `rep stos`, whose start-up cost on the AMD VMs measured here (about 40 cycles for
 * these 776 bytes, against 2 for the library's vector stores) was the largest single item of an
 * 8-byte MPI_Iallreduce's start (docs/benchmarks.md, "Iallreduce"). */
static nb_req_t *req_new(void)
{
    static volatile size_t state_bytes = sizeof(nb_req_t); /* (volatile: a size GCC cannot inline) */
    nb_req_t *q = nb_nfree ? nb_free_list[--nb_nfree] : malloc(sizeof *q);
    if (q)
        memset(q, 0, state_bytes);
    if (!q) {
        util_error("out of memory for a nonblocking collective");
        abort();
    }
    q->out_held = MPI_DATATYPE_NULL;
    return q;
}

/* Hand the call out as a request (complete from the start, started already, or started here last:
 * start()). */
static int req_out(nb_req_t *q, MPI_Comm comm, MPI_Request *req)
{
    *req = ext_request(&nb_ops, q, comm);
    if (!q->local_done && !q->hier)
        nb_activate(q->nc);
    if (q->unstarted) {
        q->unstarted = 0;
        coll_nb_start(&q->c);
    }
    return MPI_SUCCESS;
}

/* The buffer a call uses for an input (peers read it where `shared`) or an output (peers write it;
 * `keep`: it starts with the user's contents): the user's, or a segment copy, packed if the type is
 * not dense. An output's copy holds its datatype until unstaged. */
static const void *stage_in(nb_req_t *q, const void *buf, int count, MPI_Datatype dt, const pc_dt_t *d, int shared)
{
    if (pc_in(&q->in, buf, count, dt, d, shared))
        util_out_of_memory("a nonblocking collective's input", (size_t)count * (size_t)d->size);
    return q->in.p;
}

static void *stage_out(nb_req_t *q, void *buf, int count, MPI_Datatype dt, const pc_dt_t *d, int shared, int keep)
{
    if (pc_out(&q->out, buf, count, dt, d, shared, keep))
        util_out_of_memory("a nonblocking collective's result", (size_t)count * (size_t)d->size);
    if (q->out.tmp) {
        q->out_user = dt;
        q->out_held = pmpi_dt_hold(dt);
        if (q->out_held == MPI_DATATYPE_NULL) {
            util_error("could not hold a datatype for a nonblocking collective");
            abort();
        }
    }
    return q->out.p;
}

/* A reduction's op as the call keeps it until its request is retired (pc_op_keep: the program may
 * free the op or the datatype once the call has started); the call uses what this returns. */
static const coll_op_t *op_keep(nb_req_t *q, const coll_op_t *cop)
{
    q->kop = *cop;
    pc_op_keep(&q->kop);
    q->kop_set = 1;
    return &q->kop;
}

static void *xmalloc(size_t bytes) { return util_alloc_or_die(bytes ? bytes : 1, "a nonblocking collective"); }

/* The ring of comm if this call runs on it; else NULL with the reason. */
static nb_comm_t *nb_setup(MPI_Comm comm, pmpi_comm_t **pc_p, pmpi_why_t *why_p)
{
    pmpi_comm_t *pc = NULL;
    p2p_comm_t *c = NULL;
    *pc_p = NULL;
    if (pc_knobs.nbc == PC_MPI || !(pc = pmpi_comm_get(comm))) {
        *why_p = pc_knobs.nbc == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm);
        return NULL;
    }
    if (!pc->single_node) {
        *pc_p = pc; /* for hier_setup */
        *why_p = PMPI_WHY_MULTINODE;
        return NULL;
    }
    if (nb_channel) { /* a persistent request's start: its own channel */
        *pc_p = pc;
        return nb_channel;
    }
    nb_comm_t *nc = nb_comm_of(comm, pc, &c);
    if (!nc) {
        *why_p = PMPI_WHY_SETUP; /* one rank, or not registered (the engine is off somewhere) */
        return NULL;
    }
    *pc_p = pc;
    return nc;
}

/* The call on the ring nc, started by the req_out that follows. */
static void start(nb_req_t *q, nb_comm_t *nc, coll_nb_kind_t kind)
{
    q->nc = nc;
    q->c.g = &nc->g;
    q->c.kind = kind;
    q->unstarted = 1;
}

/* Across nodes (after nb_setup said why.multinode, with *pc_p set): the node phases on the node
 * communicator's ring (*node_p; NULL when I am alone on my node), the leaders' phase through the
 * real MPI's nonblocking call (or over point-to-point: pmpi_coll_lead.c). Needs the node part (built by an earlier blocking collective: every rank has it or none)
 * and BOBCAT_COLL_HIER. 0 when it runs so; else -1 with the reason. */
static nb_comm_t *node_ring_of(pmpi_comm_t *pc);

static int hier_setup(MPI_Comm comm, pmpi_comm_t **pc_p, nb_comm_t **node_p, pmpi_why_t *why_p)
{
    pmpi_comm_t *pc = *pc_p; /* what nb_setup found when it said why.multinode */
    *why_p = PMPI_WHY_MULTINODE;
    if (!pc_knobs.hier)
        return -1;
    if (!pc->coll_ready || !p2p_comm_lookup(comm)) {
        /* not registered; or no node part yet: no blocking collective on it so far, or none
         * allowed (pmpi_comm_coll_why: base/pmpi_comm.c, "Hidden communicators") */
        *why_p = pc->coll_ready ? PMPI_WHY_SETUP : pmpi_comm_coll_why(comm);
        return -1;
    }
    /* A communicator whose leaders' phase is point-to-point on the layer's copy of WORLD
     * (coll/pmpi_coll_lead.c) runs its nonblocking calls' that way too (pc_lead_nb_start; the v/w
     * forms' too; a persistent request's starts with a tag of its own, pers_lead_plan, for the
     * first pmpi_layer.lead_block - 2 made on it: pcoll_ours), its node phases on the ring of the
     * area its node part made (node_ring_of): unless some node has none (the same answer
     * everywhere). */
    if (pc->lead_tag >= 0 && (!pc->node_nb_ok || node_ring_slot < 0)) {
        *why_p = pmpi_layer.no_hidden_comms ? PMPI_WHY_THREADS : PMPI_WHY_FORCED;
        return -1;
    }
    *node_p = NULL;
    if (nb_pers) /* a persistent request's start: its own channel of the node's ring (or none) */
        *node_p = pers_node_channel(nb_pers);
    else if (pc->node_size > 1) {
        pmpi_comm_t *npc = pc->lead_tag >= 0 ? NULL : pmpi_comm_get(pc->node_comm);
        p2p_comm_t *c = NULL;
        *node_p = pc->lead_tag >= 0 ? node_ring_of(pc) : npc ? nb_comm_of(pc->node_comm, npc, &c) : NULL;
        if (!*node_p) {
            /* Other nodes may have theirs: no way to agree on the real MPI now. */
            util_error("no ring for the node phase of a nonblocking collective (out of memory?)");
            abort();
        }
    }
    *pc_p = pc;
    return 0;
}

/* Start the node calls (c now; c2 held on the leader until its leaders' call completes) and put
 * the call on the list that progress advances. */
static void hier_start(nb_req_t *q, pmpi_comm_t *pc, nb_comm_t *node, coll_nb_kind_t k1, coll_nb_kind_t k2)
{
    q->hier = 1;
    q->leader = pc->leader == pc->rank;
    q->lcomm = pc->leaders_comm;
    q->lpc = pc->lead_tag >= 0 ? pc : NULL;
    q->real = MPI_REQUEST_NULL;
    q->pers = nb_pers;
    if (nb_pers)
        pers_busy(nb_pers, 1);
    q->nc = node;
    q->has_c = node && k1 != COLL_NB_N;
    q->has_c2 = node && k2 != COLL_NB_N;
    if (q->has_c) {
        q->c.g = &node->g;
        q->c.kind = k1;
        coll_nb_start(&q->c);
    }
    if (q->has_c2) {
        q->c2.g = &node->g;
        q->c2.kind = k2;
        q->c2.hold = q->leader ? COLL_NB_HOLD_DATA : 0;
        coll_nb_start(&q->c2);
    }
    if (node)
        nb_activate(node);
    hier_append(q);
    if (q->leader)
        p2p_agent_wanted();
}

/* ---- the v/w forms (pmpi_coll_nbv.c): calls on the ring whose staging is theirs ---------------- */

struct nb_comm *pc_nbv_ring(MPI_Comm comm, pmpi_comm_t **pc_p, pmpi_why_t *why_p, struct nb_comm **node_p,
                            int *hier_p)
{
    nb_comm_t *nc = nb_setup(comm, pc_p, why_p);
    *node_p = NULL;
    *hier_p = !nc && *why_p == PMPI_WHY_MULTINODE && hier_setup(comm, pc_p, node_p, why_p) == 0;
    return nc;
}

int pc_nbv_start(struct nb_comm *ring, const coll_nb_t *args, const pc_nbv_ops_t *ops, void *st, MPI_Comm comm,
                 MPI_Request *req)
{
    nb_req_t *q = req_new();
    q->c = *args;
    q->vops = ops;
    q->vst = st;
    start(q, ring, args->kind);
    return req_out(q, comm, req);
}

int pc_nbv_iallgatherv_hier(pmpi_comm_t *pc, struct nb_comm *node, const void *mine, size_t bytes,
                            const uint64_t *tab, char *W, size_t total, int *lcd, const pc_nbv_ops_t *ops, void *st,
                            MPI_Comm comm, MPI_Request *req)
{
    nb_req_t *q = req_new();
    q->vops = ops;
    q->vst = st;
    q->lcd = lcd;
    if (!total) { /* every rank knows: all counts are 0 */
        ops->done(st);
        q->local_done = 1;
        return req_out(q, comm, req);
    }
    q->c.root = 0;
    q->c.sbuf = mine;
    q->c.bytes = bytes;
    q->c.tab = tab;
    q->c2.root = 0;
    q->c2.bytes = total;
    q->c2.rbuf = W;
    q->c2.inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_BCAST, total, 0);
    q->lkind = COLL_NB_ALLGATHER;
    q->lbuf = W;
    q->lcount = pc->nnodes;
    hier_start(q, pc, node, COLL_NB_GATHERV, COLL_NB_BCAST);
    return req_out(q, comm, req);
}

int pc_nbv_hier_start(pmpi_comm_t *pc, struct nb_comm *node, const uint64_t *tab, const pc_nbv_lead_t *lead,
                      const pc_nbv_ops_t *ops, void *st, MPI_Comm comm, MPI_Request *req)
{
    nb_req_t *q = req_new();
    q->vops = ops;
    q->vst = st;
    q->lkind = COLL_NB_N;
    q->vtab = (uint64_t)(uintptr_t)tab; /* (the request is in the heap, the segment: the leader reads it) */
    q->c.root = 0;
    q->c.bytes = sizeof(uint64_t);
    q->c.sbuf = &q->vtab;
    if (pc->leader == pc->rank) {
        uint64_t *t = q->scratch = xmalloc(sizeof(uint64_t) * (size_t)pc->node_size);
        t[0] = q->vtab;
        q->c.rbuf = t;
        q->lcount = pc->node_size;
        q->vlead = lead;
    }
    hier_start(q, pc, node, COLL_NB_GATHER, COLL_NB_BARRIER);
    return req_out(q, comm, req);
}

/* The statistics row's path for a call that ran here. */
static void count_path(pmpi_stat_t *st, const nb_req_t *q, size_t bytes)
{
    pmpi_stat_path(st, q->in.tmp || q->out.tmp || q->extra || q->raw_tmp ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes,
                   q->hier ? A_HIER : q->local_done ? A_LOCAL : q->c.inl ? A_INLINE : A_RING);
}

/* A call with nothing to move (every rank knows: the counts or the signature's bytes are 0): complete
 * from the start, counted as such. */
static int nothing_to_move(nb_req_t *q, pmpi_stat_t *st, MPI_Comm comm, MPI_Request *req)
{
    q->local_done = 1;
    count_path(st, q, 0);
    return req_out(q, comm, req);
}

/* ---- the entry points ------------------------------------------------------------------------- */

BOBCAT_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    if (comm == lean_bar.comm && lean_bar.nc && !nb_channel && !nb_pers) {
        pmpi_stat_path(&st_ibarrier, PMPI_PATH_INPLACE, 0, 0);
        lean_start(lean_bar.nc, COLL_NB_BARRIER, NULL, 0, NULL, NULL, comm, req);
        return MPI_SUCCESS;
    }
    pmpi_comm_t *pc;
    pmpi_why_t why;
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    if (!nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0) {
        nb_req_t *q = req_new();
        q->lkind = COLL_NB_BARRIER;
        hier_start(q, pc, node, COLL_NB_BARRIER, COLL_NB_BARRIER);
        pmpi_stat_path(&st_ibarrier, PMPI_PATH_INPLACE, 0, 1);
        return req_out(q, comm, req);
    }
    if (!nc) {
        pmpi_stat_mpi(&st_ibarrier, why, 0);
        pmpi_real_requests = 1;
        return PMPI_Ibarrier(comm, req);
    }
    pmpi_stat_path(&st_ibarrier, PMPI_PATH_INPLACE, 0, 0);
    if (!nb_channel && !nb_pers) {
        lean_bar.comm = comm;
        lean_bar.nc = nc;
        lean_start(nc, COLL_NB_BARRIER, NULL, 0, NULL, NULL, comm, req);
        return MPI_SUCCESS;
    }
    nb_req_t *q = req_new();
    start(q, nc, COLL_NB_BARRIER);
    return req_out(q, comm, req);
}

/* Whether a broadcast's arguments are an error for the real MPI to report, or (across nodes) too
 * big for the leaders' int count; else *d set. */
static int bcast_bad(const pmpi_comm_t *pc, const void *buf, int count, MPI_Datatype dt, int root, int hier,
                     pc_dt_t *d)
{
    return count < 0 || root < 0 || root >= pc->size || buf == MPI_IN_PLACE || pc_dt(dt, d) != 0 ||
           (hier && (long long)count * d->size > INT_MAX);
}

BOBCAT_EXPORT int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    pmpi_comm_t *pc;
    pmpi_why_t why;
    pc_dt_t d;
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    int hier = !nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0;
    if ((nc || hier) && bcast_bad(pc, buf, count, dt, root, hier, &d)) {
        nc = NULL;
        hier = 0;
        why = PMPI_WHY_VARIANT;
    }
    if (hier) {
        nb_req_t *q = req_new();
        size_t bytes = (size_t)count * (size_t)d.size;
        if (!bytes)
            return nothing_to_move(q, &st_ibcast, comm, req);
        int me = pc->rank, inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_BCAST, bytes, 0);
        if (me == root)
            q->c.rbuf = (void *)stage_in(q, buf, count, dt, &d, !inl);
        else
            q->c.rbuf = stage_out(q, buf, count, dt, &d, !inl, 0);
        q->c.bytes = q->c2.bytes = bytes;
        q->c.inl = q->c2.inl = inl;
        q->c2.rbuf = q->c.rbuf;
        q->lkind = COLL_NB_BCAST;
        q->lbuf = q->c.rbuf;
        q->lcount = (int)bytes;
        q->lroot = pc->leader_rank[root];
        if (pc->node[root] == pc->node[me]) { /* root's node: the node call, then the leader sends */
            q->c.root = pmpi_comm_node_rank(pc, root);
            hier_start(q, pc, node, COLL_NB_BCAST, COLL_NB_N);
        } else { /* the leader receives, then the node call from it */
            q->c2.root = 0;
            hier_start(q, pc, node, COLL_NB_N, COLL_NB_BCAST);
        }
        count_path(&st_ibcast, q, bytes);
        return req_out(q, comm, req);
    }
    if (!nc) {
        pmpi_stat_mpi(&st_ibcast, why, 0);
        pmpi_real_requests = 1;
        return PMPI_Ibcast(buf, count, dt, root, comm, req);
    }
    nb_req_t *q = req_new();
    size_t bytes = (size_t)count * (size_t)d.size;
    if (!bytes) {
        q->local_done = 1;
    } else {
        q->c.root = root;
        q->c.bytes = bytes;
        q->c.inl = coll_nb_inlines(&nc->g, COLL_NB_BCAST, bytes, 0);
        q->c.rbuf = pc->rank == root ? (void *)stage_in(q, buf, count, dt, &d, !q->c.inl)
                                     : stage_out(q, buf, count, dt, &d, !q->c.inl, 0);
        start(q, nc, COLL_NB_BCAST);
    }
    count_path(&st_ibcast, q, bytes);
    return req_out(q, comm, req);
}

/* A reduction's op and datatype as coll/ runs them, and its element count; -1 (why set) if not. */
static int red_args(int count, MPI_Datatype dt, MPI_Op op, coll_op_t *cop, size_t *n_p, pmpi_why_t *why_p)
{
    size_t mult;
    if (count < 0) {
        *why_p = PMPI_WHY_VARIANT;
        return -1;
    }
    if (pc_op(op, dt, cop, &mult, why_p) != 0)
        return -1;
    if ((unsigned long long)count * mult > INT_MAX) {
        *why_p = PMPI_WHY_VARIANT;
        return -1;
    }
    *n_p = (size_t)count * mult;
    return 0;
}

/* A reduction's input, readable by peers: the user's (or, in place, the result buffer's) contents
 * as they lie in memory (reductions run on the layout, gaps included), copied into the segment when
 * outside it; must_copy: the result overwrites what peers still read. */
static const void *red_input(nb_req_t *q, const void *in, size_t span, int inl, int must_copy)
{
    if (!span || inl || (!must_copy && smap_is_shared(in)))
        return in;
    q->extra = xmalloc(span);
    memcpy(q->extra, in, span);
    return q->extra;
}

/* A reduction's result: the user's if in the segment (or private and inline), else a segment copy
 * written back at completion (keep: it starts with the user's contents). */
static void *red_output(nb_req_t *q, void *out, size_t span, int inl, int keep)
{
    if (!span || inl || smap_is_shared(out))
        return out;
    q->raw_user = out;
    q->raw_span = span;
    q->raw_tmp = xmalloc(span);
    if (keep)
        memcpy(q->raw_tmp, out, span);
    return q->raw_tmp;
}

/* root is its node's leader (its lowest rank): the rooted calls across nodes then make the root
 * itself the leaders' root; else its leader stands in for it (the same answer on every rank). */
static int root_leads(const pmpi_comm_t *pc, int root)
{
    return pc->by_pos[pc->node_first[pc->leader_rank[root]]] == root;
}

/* The most ranks of the communicator on one node (every rank computes the same). */
static long long most_on_a_node(const pmpi_comm_t *pc)
{
    int most = 1;
    for (int k = 0; k < pc->nnodes; k++)
        most = pc->node_count[k] > most ? pc->node_count[k] : most;
    return most;
}

/* The leaders' v calls' counts (nodes' blocks of `b` bytes per rank), then displacements, in bytes. */
static int *node_blocks(const pmpi_comm_t *pc, size_t b)
{
    int nn = pc->nnodes, *cd = xmalloc(2 * (size_t)nn * sizeof(int));
    for (int k = 0; k < nn; k++) {
        cd[k] = pc->node_count[k] * (int)b;
        cd[nn + k] = pc->node_first[k] * (int)b;
    }
    return cd;
}

/* The leaders' Reduce_scatter counts: each node's elements of the result (rcounts[r] of rank r, or
 * rcounts[0] of every rank when block; mult base elements each; the comm is blocked). */
static int *node_counts(const pmpi_comm_t *pc, const int *rcounts, int block, size_t mult)
{
    int N = pc->nnodes, *cnt = xmalloc((size_t)N * sizeof(int));
    for (int j = 0; j < N; j++) {
        size_t kj = 0;
        for (int r = pc->node_first[j]; r < pc->node_first[j] + pc->node_count[j]; r++)
            kj += (size_t)rcounts[block ? 0 : r] * mult;
        cnt[j] = (int)kj;
    }
    return cnt;
}

/* The leaders' Alltoallv of an Ialltoall across nodes (b bytes a block): to and from node k, my
 * node's ranks' blocks for node k's ranks (none for my own node), packed by node: counts and
 * displacements to send, then the same to receive ([dest][source] per node; a2a_pack). *far_p: the
 * bytes each way. */
static int *far_counts(const pmpi_comm_t *pc, size_t b, size_t *far_p)
{
    int N = pc->nnodes, myk = pc->leader_rank[pc->rank], *c = xmalloc(4 * (size_t)N * sizeof(int));
    size_t off = 0;
    for (int k = 0; k < N; k++) {
        size_t blk = k == myk ? 0 : (size_t)pc->node_size * (size_t)pc->node_count[k] * b;
        c[k] = c[2 * N + k] = (int)blk;
        c[N + k] = c[3 * N + k] = (int)off;
        off += blk;
    }
    *far_p = off;
    return c;
}

/* A rooted call whose root does not lead its node: on the root's node the leader stands in for it in
 * the leaders' phase, and the node's v call (Gatherv to the leader, Scatterv from it) moves one
 * block of `bytes` between the leader and the root (node rank `to`) alone. The leader's block of
 * the segment, freed at release: the v call's table (to's bytes and where they lie or land; the
 * others nothing), then the block, which is returned. */
static char *root_block(nb_req_t *q, int ns, int to, size_t bytes, const uint64_t **tab_p)
{
    size_t tab = (2 * (size_t)ns * sizeof(uint64_t) + 63) & ~(size_t)63;
    char *base = q->scratch = xmalloc(tab + bytes), *blk = base + tab;
    uint64_t *t = (uint64_t *)base;
    memset(t, 0, 2 * (size_t)ns * sizeof(uint64_t));
    t[to] = bytes;
    t[ns + to] = (uint64_t)(uintptr_t)blk;
    *tab_p = t;
    return blk;
}

/* Ireduce across nodes: each node reduces to its leader (ring), into the root's result on the root's
 * node when the root leads it and a block of the leader's otherwise, and the leaders reduce to the
 * root's node's leader through the real MPI (MPI_Ireduce, in place there). A root that does not lead
 * its node then takes the result from its leader (the node's Scatterv, held by the leader until
 * then). */
static int ireduce_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, void *rbuf, size_t n,
                        const coll_op_t *cop, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    nb_req_t *q = req_new();
    cop = op_keep(q, cop); /* (the rest of the call uses the kept op) */
    size_t span = coll_span(cop, n);
    if (!n)
        return nothing_to_move(q, &st_ireduce, comm, req);
    int me = pc->rank, inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_REDUCE, 0, span);
    int lead = root_leads(pc, root), to_root = !lead && pc->node[root] == pc->node[me];
    void *L = NULL; /* my node's partial result, at its leader */
    const void *in;
    if (me == root && lead) {
        L = red_output(q, rbuf, span, inl, sbuf == MPI_IN_PLACE);
        in = sbuf == MPI_IN_PLACE ? L : red_input(q, sbuf, span, inl, 0);
        if (!node && in != L) /* alone on my node: my input is the node's partial result */
            memcpy(L, in, span);
    } else if (me == root) { /* the result comes from my leader: a unit writes it (in the segment) */
        void *R = red_output(q, rbuf, span, 0, sbuf == MPI_IN_PLACE);
        in = sbuf == MPI_IN_PLACE ? R : red_input(q, sbuf, span, inl, 0);
        q->c2.rbuf = R;
        q->c2.bytes = span;
    } else {
        in = red_input(q, sbuf, span, inl, 0);
        if (pc->leader == me && to_root)
            L = root_block(q, pc->node_size, pmpi_comm_node_rank(pc, root), span, &q->c2.tab);
        else if (pc->leader == me)
            L = node ? (q->scratch = xmalloc(span)) : (void *)in;
    }
    q->c.op = *cop;
    q->c.count = n;
    q->c.root = 0;
    q->c.inl = inl;
    q->c.sbuf = in;
    q->c.rbuf = L;
    q->lkind = COLL_NB_REDUCE;
    q->lbuf = L;
    q->lcount = (int)n;
    q->ldt = pc_op_base(cop);
    q->lop = op;
    q->lroot = pc->leader_rank[root];
    q->lself = pc->node[root] == pc->node[me];
    q->c2.root = 0;
    hier_start(q, pc, node, COLL_NB_REDUCE, to_root ? COLL_NB_SCATTERV : COLL_NB_N);
    count_path(&st_ireduce, q, span);
    return req_out(q, comm, req);
}

/* Iallreduce across nodes: the node reduces to its leader (ring), the leaders allreduce in place
 * through the real MPI, the node gets the result from its leader (ring, held by the leader until
 * then). The result buffer R is the input too where the call is in place. */
static int iallreduce_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, void *rbuf, size_t n,
                           const coll_op_t *cop, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    nb_req_t *q = req_new();
    cop = op_keep(q, cop); /* (the rest of the call uses the kept op) */
    size_t span = coll_span(cop, n);
    if (!n)
        return nothing_to_move(q, &st_iallreduce, comm, req);
    int in_place = sbuf == MPI_IN_PLACE, inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_REDUCE, 0, span);
    void *R = red_output(q, rbuf, span, inl, in_place);
    const void *in = in_place ? R : red_input(q, sbuf, span, inl, 0);
    q->c.op = *cop;
    q->c.count = n;
    q->c.root = 0;
    q->c.inl = inl;
    q->c.sbuf = in;
    q->c.rbuf = pc->leader == pc->rank ? R : NULL;
    q->c2.root = 0;
    q->c2.bytes = span;
    q->c2.inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_BCAST, span, 0);
    q->c2.rbuf = R;
    q->lkind = COLL_NB_ALLREDUCE;
    q->lbuf = R;
    q->lcount = (int)n;
    q->ldt = pc_op_base(cop);
    q->lop = op;
    if (!node && in != R) /* alone on my node: my input is the node's partial result */
        memcpy(R, in, span);
    hier_start(q, pc, node, COLL_NB_REDUCE, COLL_NB_BCAST);
    count_path(&st_iallreduce, q, span);
    return req_out(q, comm, req);
}

/* Iscan / Iexscan across nodes (ranks grouped by node, so a rank's prefix is the earlier nodes'
 * totals, then its own node's part): the node reduces its total to the leader (ring), the leaders
 * MPI_Iexscan the totals (the earlier nodes' prefix E; none at the first node), the leader folds E
 * in on the left of its own input (x0 -> E op x0), and the node scans (exscans) with that as node
 * rank 0's input, held by the leader until then. The leader's own Iexscan result is E, copied. */
static int iscan_hier(coll_nb_kind_t kind, pmpi_stat_t *st, pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf,
                      void *rbuf, size_t n, const coll_op_t *cop, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    nb_req_t *q = req_new();
    cop = op_keep(q, cop); /* (the rest of the call uses the kept op) */
    size_t span = coll_span(cop, n);
    if (!n)
        return nothing_to_move(q, st, comm, req);
    int me = pc->rank, in_place = sbuf == MPI_IN_PLACE, leader = pc->leader == me, exscan = kind == COLL_NB_EXSCAN;
    /* Exscan leaves rank 0's result alone: a staged one starts as the user's. In place my result
     * overwrites my input, which node mates' units read: copy it. */
    void *R = red_output(q, rbuf, span, 0, in_place || (exscan && me == 0));
    const void *in = in_place ? red_input(q, R, span, 0, 1) : red_input(q, sbuf, span, 0, 0);
    q->c.op = *cop;
    q->c.count = n;
    q->c.root = 0;
    q->c.sbuf = in;
    q->c2.op = *cop;
    q->c2.count = n;
    q->c2.rbuf = R;
    q->c2.sbuf = in;
    if (leader) {
        size_t sr = (span + 63) & ~(size_t)63;
        char *T = q->scratch = xmalloc(3 * sr), *E = T + sr, *X = E + sr; /* node total, prefix, input */
        memcpy(X, in, span);
        if (!node) /* alone on my node: my input is the node's total */
            memcpy(T, in, span);
        q->sx = X;
        q->se = E;
        q->sfold = pc->leader_rank[me] > 0;
        q->c.rbuf = T;
        q->c2.sbuf = X;
        q->lbuf = T;
        if (exscan ? q->sfold : !node) { /* what no node unit writes: Exscan's E, Scan's alone E op x0 */
            q->own_dst = R;
            q->own_src = exscan ? E : X;
            q->own_bytes = span;
        }
    }
    q->lkind = COLL_NB_EXSCAN;
    q->lcount = (int)n;
    q->ldt = pc_op_base(cop);
    q->lop = op;
    hier_start(q, pc, node, COLL_NB_REDUCE, kind);
    count_path(st, q, span);
    return req_out(q, comm, req);
}

/* A reduction's buffers as the standard forbids them, for the real MPI to report (MPICH:
 * MPI_ERR_BUFFER): in place off the root, the same buffer as input and result where both count,
 * MPI_IN_PLACE as the result. */
static int red_alias(coll_nb_kind_t kind, int me, const void *sbuf, const void *rbuf, int root)
{
    if (kind == COLL_NB_REDUCE) /* (in place is sbuf's sign, and only at the root) */
        return me == root ? sbuf == rbuf || rbuf == MPI_IN_PLACE : sbuf == MPI_IN_PLACE;
    return sbuf == rbuf || rbuf == MPI_IN_PLACE;
}

/* An allreduce on nc that runs as a lean call: something to move, a predefined op on a named type,
 * and few enough bytes to travel in the slots (the MPI_Iallreduce and persistent decisions alike). */
static int lean_red_fits(const nb_comm_t *nc, const coll_op_t *cop, size_t n, MPI_Datatype dt)
{
    return n && pc_op_lasting(cop, dt) && coll_nb_inlines(&nc->g, COLL_NB_ALLREDUCE, 0, coll_span(cop, n));
}

/* Whether a reduction across nodes runs hierarchically (PMPI_WHY_NONE), else why not: the same
 * answer on every rank of a correct call. */
static pmpi_why_t red_hier_why(coll_nb_kind_t kind, const pmpi_comm_t *pc, const coll_op_t *cop, const void *sbuf,
                               const void *rbuf, int root)
{
    int scanlike = kind == COLL_NB_SCAN || kind == COLL_NB_EXSCAN;
    if ((!cop->commutative || scanlike) && !pc->blocked)
        return PMPI_WHY_ORDER;
    if (kind == COLL_NB_REDUCE && (root < 0 || root >= pc->size))
        return PMPI_WHY_VARIANT;
    return red_alias(kind, pc->rank, sbuf, rbuf, root) ? PMPI_WHY_VARIANT : PMPI_WHY_NONE;
}

static int ireduce_any(coll_nb_kind_t kind, pmpi_stat_t *st, const void *sbuf, void *rbuf, int count,
                       MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    coll_op_t cop;
    size_t n = 0;
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    if (kind == COLL_NB_REDUCE && sbuf == rbuf && sbuf != MPI_IN_PLACE && count > 0 &&
        (nc || why == PMPI_WHY_MULTINODE) && pc && pc->rank == root)
        return pc_alias_error(st, comm, req);
    if (!nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0 &&
        red_args(count, dt, op, &cop, &n, &why) == 0 &&
        (why = red_hier_why(kind, pc, &cop, sbuf, rbuf, root)) == PMPI_WHY_NONE) {
        if (kind == COLL_NB_SCAN || kind == COLL_NB_EXSCAN)
            return iscan_hier(kind, st, pc, node, sbuf, rbuf, n, &cop, op, comm, req);
        if (kind == COLL_NB_ALLREDUCE)
            return iallreduce_hier(pc, node, sbuf, rbuf, n, &cop, op, comm, req);
        return ireduce_hier(pc, node, sbuf, rbuf, n, &cop, op, root, comm, req);
    }
    if (nc && (red_args(count, dt, op, &cop, &n, &why) != 0 ||
               (kind == COLL_NB_REDUCE && (root < 0 || root >= pc->size))))
        nc = NULL;
    /* erroneous buffers, as the blocking ones (in place off a Reduce's root even with nothing to move) */
    if (nc && ((kind == COLL_NB_REDUCE && pc->rank != root && sbuf == MPI_IN_PLACE) ||
               (n && red_alias(kind, pc->rank, sbuf, rbuf, root)))) {
        nc = NULL;
        why = PMPI_WHY_VARIANT;
    }
    if (!nc) {
        pmpi_stat_mpi(st, why, 0);
        pmpi_real_requests = 1;
        switch (kind) {
        case COLL_NB_REDUCE: return PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);
        case COLL_NB_ALLREDUCE: return PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
        case COLL_NB_SCAN: return PMPI_Iscan(sbuf, rbuf, count, dt, op, comm, req);
        default: return PMPI_Iexscan(sbuf, rbuf, count, dt, op, comm, req);
        }
    }
    size_t span = coll_span(&cop, n);
    if (kind == COLL_NB_ALLREDUCE && !nb_channel && !nb_pers && lean_red_fits(nc, &cop, n, dt)) {
        lean_red.comm = comm;
        lean_red.count = count;
        lean_red.dt = dt;
        lean_red.op = op;
        lean_red.cop = cop;
        lean_red.n = n;
        lean_red.span = span;
        lean_red.nc = nc;
        pmpi_stat_path(st, PMPI_PATH_INPLACE, span, A_INLINE);
        lean_start(nc, kind, &cop, n, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf, comm, req);
        return MPI_SUCCESS;
    }
    nb_req_t *q = req_new();
    if (!n)
        return nothing_to_move(q, st, comm, req);
    q->c.op = *op_keep(q, &cop);
    q->c.count = n;
    q->c.root = root;
    q->c.inl = coll_nb_inlines(&nc->g, kind, 0, span);
    int me = pc->rank, in_place = sbuf == MPI_IN_PLACE, result = kind != COLL_NB_REDUCE || me == root;
    void *out = NULL;
    if (result) {
        /* Scan, Exscan: my result overwrites my input, which later ranks' units read: copy it. */
        int scanlike = kind == COLL_NB_SCAN || kind == COLL_NB_EXSCAN;
        /* Exscan leaves rank 0's result alone: a staged one starts as the user's */
        out = red_output(q, rbuf, span, q->c.inl, in_place || (kind == COLL_NB_EXSCAN && me == 0));
        q->c.sbuf = in_place ? red_input(q, out, span, q->c.inl, scanlike) : red_input(q, sbuf, span, q->c.inl, 0);
    } else {
        q->c.sbuf = red_input(q, sbuf, span, q->c.inl, 0);
    }
    q->c.rbuf = out;
    start(q, nc, kind);
    count_path(st, q, span);
    return req_out(q, comm, req);
}

BOBCAT_EXPORT int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                              MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return ireduce_any(COLL_NB_REDUCE, &st_ireduce, sbuf, rbuf, count, dt, op, root, comm, req);
}

BOBCAT_EXPORT int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                 MPI_Request *req)
{
    PMPI_GUARD();
    if (comm == lean_red.comm && count == lean_red.count && dt == lean_red.dt && op == lean_red.op && lean_red.nc &&
        !nb_channel && !nb_pers && !red_alias(COLL_NB_ALLREDUCE, 0, sbuf, rbuf, 0)) {
        pmpi_stat_path(&st_iallreduce, PMPI_PATH_INPLACE, lean_red.span, A_INLINE);
        lean_start(lean_red.nc, COLL_NB_ALLREDUCE, &lean_red.cop, lean_red.n, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf,
                   comm, req);
        return MPI_SUCCESS;
    }
    return ireduce_any(COLL_NB_ALLREDUCE, &st_iallreduce, sbuf, rbuf, count, dt, op, 0, comm, req);
}

BOBCAT_EXPORT int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                            MPI_Request *req)
{
    PMPI_GUARD();
    return ireduce_any(COLL_NB_SCAN, &st_iscan, sbuf, rbuf, count, dt, op, 0, comm, req);
}

BOBCAT_EXPORT int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req)
{
    PMPI_GUARD();
    return ireduce_any(COLL_NB_EXSCAN, &st_iexscan, sbuf, rbuf, count, dt, op, 0, comm, req);
}

/* Ireduce_scatter(_block): counts[r] elements of the result to rank r (rcounts[0] for every rank
 * when block); their sum over n ranks, or -1 if one is negative. */
static long long rs_total(const int *rcounts, int block, int n)
{
    long long total = 0;
    for (int r = 0; r < n; r++) {
        int k = block ? rcounts[0] : rcounts[r];
        if (k < 0)
            return -1;
        total += k;
    }
    return total;
}

/* Ireduce_scatter(_block) across nodes (ranks grouped by node, elements without a gap after the
 * last: a piece of k elements is k elements' extent): the node reduces the whole vector to its
 * leader (ring), the leaders reduce-scatter the nodes' blocks through the real MPI
 * (MPI_Ireduce_scatter, in place: the leader's node block lands at the start of its partial
 * result), and the node takes its pieces from the leader (ring: Scatter, or Scatterv from the
 * leader's table where the counts differ; held by the leader until then). K(r): elements of the
 * op's base type rank r gets (rcounts[0] for every rank when block); total: their sum. */
#define K(r) ((size_t)rcounts[block ? 0 : (r)] * mult)
static int irs_hier(pmpi_stat_t *st, pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, void *rbuf,
                    const int *rcounts, int block, size_t mult, size_t total, const coll_op_t *cop, MPI_Op op,
                    MPI_Comm comm, MPI_Request *req)
{
    int N = pc->nnodes, me = pc->rank, in_place = sbuf == MPI_IN_PLACE, leader = pc->leader == me;
    nb_req_t *q = req_new();
    cop = op_keep(q, cop); /* (the rest of the call uses the kept op) */
    if (!total)
        return nothing_to_move(q, st, comm, req);
    size_t span = coll_span(cop, total), piece = coll_span(cop, K(me));
    /* In place the whole input is in rbuf and my piece of the result overwrites its start. */
    const void *in = red_input(q, in_place ? rbuf : sbuf, span, 0, in_place);
    void *R = red_output(q, rbuf, piece, 0, 0);
    if (leader) {
        int myk = pc->leader_rank[me], f = pc->node_first[myk], ns = pc->node_count[myk];
        /* The Scatterv's table (node rank i's piece's bytes, then where it lies), then the node's
         * partial result, which becomes its block: one block of the segment, freed at release. */
        size_t tab = block ? 0 : (2 * (size_t)ns * sizeof(uint64_t) + 63) & ~(size_t)63;
        char *base = q->scratch = xmalloc(tab + span), *L = base + tab;
        if (!node) /* alone on my node: my input is the node's partial result */
            memcpy(L, in, span);
        q->lcd = node_counts(pc, rcounts, block, mult);
        if (!block) {
            uint64_t *t = (uint64_t *)base;
            size_t off = 0;
            for (int i = 0; i < ns; i++) {
                t[i] = coll_span(cop, K(f + i));
                t[ns + i] = (uint64_t)(uintptr_t)(L + off);
                off += t[i];
            }
            q->c2.tab = t;
        }
        q->c.rbuf = L;
        q->c2.sbuf = L;
        q->own_dst = R; /* node rank 0's piece, once the leaders' phase has brought it */
        q->own_src = L;
        q->own_bytes = piece;
        q->lbuf = L;
    } else {
        q->c2.rbuf = R;
    }
    q->c.op = *cop;
    q->c.count = total;
    q->c.root = 0;
    q->c.sbuf = in;
    q->c2.bytes = piece;
    q->c2.root = 0;
    q->lkind = COLL_NB_REDUCE_SCATTER;
    q->lcount = N;
    q->ldt = pc_op_base(cop);
    q->lop = op;
    hier_start(q, pc, node, COLL_NB_REDUCE, block ? COLL_NB_SCATTER : COLL_NB_SCATTERV);
    count_path(st, q, span);
    return req_out(q, comm, req);
}
#undef K

/* Reduce_scatter(_block)'s buffers as the standard forbids them (as the blocking ones: the real MPI
 * reports it): MPI_IN_PLACE as the result, or the result aliasing the input where I receive some. */
static int rs_alias(const void *sbuf, const void *rbuf, int mine)
{
    return rbuf == MPI_IN_PLACE || (sbuf == rbuf && mine > 0);
}

/* Ireduce_scatter(_block), and their persistent starts; wide: a large-count call's own counts (rcounts
 * their int copy), what the real MPI gets if it takes the call. */
static int irs_any(pmpi_stat_t *st, const void *sbuf, void *rbuf, const int *rcounts, const MPI_Count *wide, int block,
                   MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    coll_op_t cop;
    size_t mult = 1;
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    long long total = 0;
    if (!nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0 &&
        pc_op(op, dt, &cop, &mult, &why) == 0) {
        /* (the same facts on every rank: the layout, the counts, the datatype) */
        total = rs_total(rcounts, block, pc->size);
        if (!pc->blocked)
            why = PMPI_WHY_ORDER;
        else if (total < 0 || (unsigned long long)total * mult > INT_MAX || cop.tail != cop.extent ||
                 rs_alias(sbuf, rbuf, block ? rcounts[0] : rcounts[pc->rank]))
            why = PMPI_WHY_VARIANT;
        else
            return irs_hier(st, pc, node, sbuf, rbuf, rcounts, block, mult, (size_t)total * mult, &cop, op, comm,
                            req);
    }
    if (nc) {
        if (pc_op(op, dt, &cop, &mult, &why) != 0) {
            nc = NULL;
        } else {
            total = rs_total(rcounts, block, pc->size);
            if (total < 0 || (unsigned long long)total * mult > INT_MAX ||
                rs_alias(sbuf, rbuf, block ? rcounts[0] : rcounts[pc->rank])) {
                nc = NULL;
                why = PMPI_WHY_VARIANT;
            }
        }
    }
    if (!nc) {
        pmpi_stat_mpi(st, why, 0);
        pmpi_real_requests = 1;
        if (block)
            return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcounts[0], dt, op, comm, req);
#if MPI_VERSION >= 4
        if (wide) /* (the large-count form's own counts: the real MPI may read them until completion) */
            return PMPI_Ireduce_scatter_c(sbuf, rbuf, wide, dt, op, comm, req);
#endif
        return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req);
    }
    nb_req_t *q = req_new();
    int n = pc->size, me = pc->rank, mine = block ? rcounts[0] : rcounts[me];
    q->counts = xmalloc(sizeof(size_t) * (size_t)n);
    for (int r = 0; r < n; r++)
        q->counts[r] = (size_t)(block ? rcounts[0] : rcounts[r]) * mult;
    size_t span = coll_span(&cop, (size_t)total * mult);
    if (!total)
        return nothing_to_move(q, st, comm, req);
    q->c.op = *op_keep(q, &cop);
    q->c.count = (size_t)total * mult;
    q->c.counts = q->counts;
    /* In place: the whole input is in rbuf and my result lands at its start: peers read a copy. */
    q->c.sbuf = red_input(q, sbuf == MPI_IN_PLACE ? rbuf : sbuf, span, 0, sbuf == MPI_IN_PLACE);
    q->c.rbuf = red_output(q, rbuf, coll_span(&cop, (size_t)mine * mult), 0, 0);
    start(q, nc, COLL_NB_REDUCE_SCATTER);
    count_path(st, q, span);
    return req_out(q, comm, req);
}

BOBCAT_EXPORT int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                            MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return irs_any(&st_irsb, sbuf, rbuf, &rcount, NULL, 1, dt, op, comm, req);
}

BOBCAT_EXPORT int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                                      MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return irs_any(&st_irs, sbuf, rbuf, rcounts, NULL, 0, dt, op, comm, req);
}

#if MPI_VERSION >= 4
/* (here, below pmpi_coll_count.c, whose MPI_Reduce_scatter_c takes it too) */
int pc_counts_as_ints(const MPI_Count *counts, MPI_Comm comm, int **c_p, int *stack, int nstack)
{
    int n = 0;
    *c_p = stack;
    if (!counts || PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (counts[i] < 0 || counts[i] > INT_MAX)
            return -1;
    if (n > nstack)
        *c_p = util_alloc_or_die(sizeof(int) * (size_t)n, "a large-count Reduce_scatter's counts");
    for (int i = 0; i < n; i++)
        (*c_p)[i] = (int)counts[i];
    return 0;
}

BOBCAT_EXPORT int MPI_Ireduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                                        MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    int stack[64], *c;
    if (pc_counts_as_ints(rcounts, comm, &c, stack, 64))
        return PMPI_Ireduce_scatter_c(sbuf, rbuf, rcounts, dt, op, comm, req);
    int rc = irs_any(&st_irs, sbuf, rbuf, c, rcounts, 0, dt, op, comm, req); /* (c is read at the start only) */
    if (c != stack)
        free(c);
    return rc;
}
#endif

/* The moving calls: Iallgather, Ialltoall, Igather, Iscatter. */
/* The arguments of a moving call are ones bobcat takes (0; the datatypes described into *sd, *rd
 * where significant), or an error for the real MPI to report, or too big for the staging calls (1). */
static int move_bad(coll_nb_kind_t kind, const pmpi_comm_t *pc, const void *sbuf, int scount, MPI_Datatype stype,
                    pc_dt_t *sd, const void *rbuf, int rcount, MPI_Datatype rtype, pc_dt_t *rd, int root)
{
    int n = pc->size, me = pc->rank, rooted = kind == COLL_NB_GATHER || kind == COLL_NB_SCATTER;
    int sends = !(sbuf == MPI_IN_PLACE) && !(kind == COLL_NB_SCATTER && me != root),
        recvs = !(rbuf == MPI_IN_PLACE) && !(kind == COLL_NB_GATHER && me != root);
    int bad = rooted && (root < 0 || root >= n);
    bad |= kind == COLL_NB_SCATTER && me != root && !recvs;
    bad |= kind == COLL_NB_GATHER && me != root && !sends;
    bad |= !rooted && !recvs;
    if (!bad && (sbuf != MPI_IN_PLACE || kind == COLL_NB_SCATTER) && !(kind == COLL_NB_SCATTER && me != root) &&
        (scount < 0 || pc_dt(stype, sd) != 0))
        bad = 1;
    if (!bad && rbuf != MPI_IN_PLACE && !(kind == COLL_NB_GATHER && me != root) &&
        (rcount < 0 || pc_dt(rtype, rd) != 0))
        bad = 1;
    /* the same buffer on both sides where both count (erroneous, as in the blocking calls: the real
     * MPI reports it), Iallgather's also at my own block (MPI_IN_PLACE's place); an empty piece may
     * alias (mpi4py passes NULL for both) */
    if (!bad && sends && recvs && (long long)scount * sd->size > 0 &&
        (sbuf == rbuf ||
         (kind == COLL_NB_ALLGATHER && sbuf == (const char *)rbuf + (MPI_Aint)me * rcount * rd->extent)))
        bad = 1;
    /* The whole buffer (n pieces) must fit an int count for the staging calls. */
    return bad || (long long)scount * n > INT_MAX || (long long)rcount * n > INT_MAX;
}

/* The bytes of one piece (a block) of a moving call, from my side of the signature. */
static size_t move_piece(coll_nb_kind_t kind, int me, int root, const void *sbuf, int scount, const pc_dt_t *sd,
                         int rcount, const pc_dt_t *rd)
{
    int sends = kind == COLL_NB_SCATTER ? me == root : sbuf != MPI_IN_PLACE;
    return sends ? (size_t)scount * (size_t)sd->size : (size_t)rcount * (size_t)rd->size;
}

/* Iallgather across nodes, on a communicator whose ranks are grouped by node (blocked): each node
 * gathers its pieces into its leader's result, where they belong (ring), the leaders exchange their
 * nodes' blocks in place through the real MPI (MPI_Iallgatherv), and each node copies the whole
 * from its leader (ring, held by the leader until then). The result is in the segment (staged if
 * not) on every rank with node mates: they write it at the leader and read it from there. */
static int iallgather_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, int scount, MPI_Datatype stype,
                           const pc_dt_t *sd, void *rbuf, int rcount, MPI_Datatype rtype, const pc_dt_t *rd, size_t b,
                           MPI_Comm comm, MPI_Request *req)
{
    int n = pc->size, me = pc->rank, in_place = sbuf == MPI_IN_PLACE;
    nb_req_t *q = req_new();
    if (!b)
        return nothing_to_move(q, &st_iallgather, comm, req);
    int shared = node != NULL; /* alone on my node, nobody else reaches my buffers */
    char *R = stage_out(q, rbuf, rcount * n, rtype, rd, shared, in_place);
    if (pc->leader == me) {
        if (!in_place) {
            memcpy(R + (size_t)me * b, stage_in(q, sbuf, scount, stype, sd, 0), b);
            pc_in_done(&q->in);
        }
        q->c.rbuf = R + (size_t)me * b; /* my node's block begins at me, its lowest rank */
        q->lcd = node_blocks(pc, b);
        q->lcount = pc->nnodes;
    } else {
        q->c.sbuf = in_place ? R + (size_t)me * b : stage_in(q, sbuf, scount, stype, sd, shared);
    }
    q->c.bytes = b;
    q->c.root = 0;
    q->c2.root = 0;
    q->c2.bytes = b * (size_t)n;
    q->c2.inl = coll_nb_inlines(node ? &node->g : NULL, COLL_NB_BCAST, q->c2.bytes, 0);
    q->c2.rbuf = R;
    q->lkind = COLL_NB_ALLGATHER;
    q->lbuf = R;
    hier_start(q, pc, node, COLL_NB_GATHER, COLL_NB_BCAST);
    count_path(&st_iallgather, q, b);
    return req_out(q, comm, req);
}

/* Igather across nodes (ranks grouped by node): each node gathers its pieces at its leader (ring),
 * on the root's node straight into the root's result when the root leads it, elsewhere into a block
 * of the leader's, and the leaders gather the nodes' blocks at the root's node's leader through the
 * real MPI (MPI_Igatherv, in place there). A root that does not lead its node then takes the whole
 * result from its leader (the node's Scatterv, held by the leader until then). */
static int igather_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, int scount, MPI_Datatype stype,
                        const pc_dt_t *sd, void *rbuf, int rcount, MPI_Datatype rtype, const pc_dt_t *rd, size_t b,
                        int root, MPI_Comm comm, MPI_Request *req)
{
    int n = pc->size, me = pc->rank, in_place = me == root && sbuf == MPI_IN_PLACE, shared = node != NULL;
    nb_req_t *q = req_new();
    if (!b)
        return nothing_to_move(q, &st_igather, comm, req);
    char *L = NULL; /* my node's block, at its leader */
    int lead = root_leads(pc, root), to_root = !lead && pc->node[root] == pc->node[me];
    if (me == root && !lead) { /* my piece to my leader; the result from it, written by a unit */
        char *R = stage_out(q, rbuf, rcount * n, rtype, rd, 1, in_place);
        q->c.sbuf = in_place ? R + (size_t)me * b : stage_in(q, sbuf, scount, stype, sd, 1);
        q->c2.rbuf = R;
        q->c2.bytes = (size_t)n * b;
    } else if (to_root && pc->leader == me) { /* the leaders' root for mine: the whole result here */
        char *W = root_block(q, pc->node_size, pmpi_comm_node_rank(pc, root), (size_t)n * b, &q->c2.tab);
        L = W + (size_t)me * b; /* my node's block begins at me, its lowest rank */
        memcpy(L, stage_in(q, sbuf, scount, stype, sd, 0), b);
        pc_in_done(&q->in);
        q->c2.sbuf = W;
        q->lbuf = W;
        q->lcd = node_blocks(pc, b);
        q->lself = 1;
    } else if (me == root) {
        char *R = stage_out(q, rbuf, rcount * n, rtype, rd, shared, in_place);
        if (!in_place) {
            memcpy(R + (size_t)me * b, stage_in(q, sbuf, scount, stype, sd, 0), b);
            pc_in_done(&q->in);
        }
        L = R + (size_t)me * b;
        q->lbuf = R;
        q->lcd = node_blocks(pc, b);
        q->lself = 1;
    } else if (pc->leader == me) {
        const void *mine = stage_in(q, sbuf, scount, stype, sd, 0);
        if (node) {
            L = q->scratch = xmalloc((size_t)pc->node_size * b);
            memcpy(L, mine, b);
            pc_in_done(&q->in);
        } else {
            L = (char *)mine; /* sent from where it lies */
        }
        q->lbuf = L;
        q->ldisp = pc->node_size * (int)b;
    } else {
        q->c.sbuf = stage_in(q, sbuf, scount, stype, sd, 1);
    }
    q->c.bytes = b;
    q->c.root = 0;
    q->c.rbuf = L;
    q->c2.root = 0;
    q->lkind = COLL_NB_GATHER;
    q->lcount = pc->nnodes;
    q->lroot = pc->leader_rank[root];
    hier_start(q, pc, node, COLL_NB_GATHER, to_root ? COLL_NB_SCATTERV : COLL_NB_N);
    count_path(&st_igather, q, b);
    return req_out(q, comm, req);
}

/* Iscatter across nodes (ranks grouped by node): the root's node takes its pieces straight from the
 * root's buffer (ring), the leaders' call through the real MPI (MPI_Iscatterv from the root's node's
 * leader) brings every other node's block to its leader, and that node takes its pieces from the
 * leader's block (ring, held by the leader until then). A root that does not lead its node first
 * gives its leader its whole buffer (the node's Gatherv) for the leaders' call; its node's pieces
 * still come from the root's buffer, after that. */
static int iscatter_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, int scount, MPI_Datatype stype,
                         const pc_dt_t *sd, void *rbuf, int rcount, MPI_Datatype rtype, const pc_dt_t *rd, size_t b,
                         int root, MPI_Comm comm, MPI_Request *req)
{
    int n = pc->size, me = pc->rank, shared = node != NULL, root_node = pc->node[root] == pc->node[me];
    nb_req_t *q = req_new();
    if (!b)
        return nothing_to_move(q, &st_iscatter, comm, req);
    int lead = root_leads(pc, root), to_leader = !lead && root_node;
    coll_nb_t *nodecall = root_node && lead ? &q->c : &q->c2;
    if (to_leader) { /* c: the root's whole buffer to the leader; c2: the node's pieces from the root */
        q->c2.root = pmpi_comm_node_rank(pc, root);
        q->c2.bytes = b;
    }
    if (me == root) {
        const char *S = stage_in(q, sbuf, scount * n, stype, sd, shared);
        if (rbuf != MPI_IN_PLACE) {
            pc_buf_t own;
            if (pc_out(&own, rbuf, rcount, rtype, rd, 0, 0))
                util_out_of_memory("a nonblocking collective's result", b);
            memcpy(own.p, S + (size_t)me * b, b);
            pc_out_done(&own);
        }
        if (to_leader) {
            q->c.sbuf = S;
            q->c.bytes = (size_t)n * b;
            q->c2.sbuf = S + (size_t)pc->leader * b; /* my node's block begins at its leader */
        } else {
            nodecall->sbuf = S + (size_t)me * b; /* my node's block begins at me, its lowest rank */
            q->lbuf = (void *)S;
            q->lcd = node_blocks(pc, b);
            q->lself = 1;
        }
    } else if (to_leader) {
        q->c2.rbuf = stage_out(q, rbuf, rcount, rtype, rd, 1, 0);
        if (pc->leader == me) {
            q->lbuf = root_block(q, pc->node_size, pmpi_comm_node_rank(pc, root), (size_t)n * b, &q->c.tab);
            q->lcd = node_blocks(pc, b);
            q->lself = 1;
        }
    } else if (pc->leader == me) {
        char *R = stage_out(q, rbuf, rcount, rtype, rd, 0, 0);
        if (node) { /* my node's block lands in mine; my own piece is copied out of it */
            char *L = q->scratch = xmalloc((size_t)pc->node_size * b);
            q->own_dst = R;
            q->own_src = L;
            q->own_bytes = b;
            nodecall->sbuf = L;
            q->lbuf = L;
        } else {
            q->lbuf = R;
        }
        q->ldisp = pc->node_size * (int)b;
    } else {
        nodecall->rbuf = stage_out(q, rbuf, rcount, rtype, rd, 1, 0);
    }
    if (!to_leader) {
        nodecall->bytes = b;
        nodecall->root = 0;
    }
    q->lkind = COLL_NB_SCATTER;
    q->lcount = pc->nnodes;
    q->lroot = pc->leader_rank[root];
    hier_start(q, pc, node, to_leader ? COLL_NB_GATHERV : root_node ? COLL_NB_SCATTER : COLL_NB_N,
               root_node && lead ? COLL_NB_N : COLL_NB_SCATTER);
    count_path(&st_iscatter, q, b);
    return req_out(q, comm, req);
}

/* Ialltoall across nodes (ranks grouped by node): each node gathers its ranks' whole send buffers
 * at its leader (ring), the leaders exchange the off-node blocks per node pair through the real MPI
 * (MPI_Ialltoallv), each leader assembles its node's results from the gathered buffers and what it
 * received (a2a_t), and each rank takes its own from the leader (ring, held by the leader until
 * then). The blocking form (hier_alltoall) packs straight from the node mates' buffers, which needs
 * them all there at once; a nonblocking call's ranks come when they come, so here every block is
 * copied to the leader and back. In place, the result's present contents are the send buffer: the
 * gather has read them before the second node call writes the result. */
static int ialltoall_hier(pmpi_comm_t *pc, nb_comm_t *node, const void *sbuf, int scount, MPI_Datatype stype,
                          const pc_dt_t *sd, void *rbuf, int rcount, MPI_Datatype rtype, const pc_dt_t *rd, size_t b,
                          MPI_Comm comm, MPI_Request *req)
{
    int n = pc->size, me = pc->rank, in_place = sbuf == MPI_IN_PLACE, shared = node != NULL, ns = pc->node_size;
    int leader = pc->leader == me, N = pc->nnodes;
    size_t nb = (size_t)n * b;
    nb_req_t *q = req_new();
    if (!b)
        return nothing_to_move(q, &st_ialltoall, comm, req);
    char *R = stage_out(q, rbuf, rcount * n, rtype, rd, shared, in_place);
    const char *S = in_place ? R : stage_in(q, sbuf, scount * n, stype, sd, shared && !leader);
    if (leader) {
        a2a_t *a = xmalloc(sizeof *a);
        memset(a, 0, sizeof *a);
        a->n = n, a->nnodes = N, a->myk = pc->leader_rank[me], a->ns = ns, a->b = b;
        a->first = xmalloc(2 * (size_t)N * sizeof(int));
        a->count = a->first + N;
        for (int k = 0; k < N; k++)
            a->first[k] = pc->node_first[k], a->count[k] = pc->node_count[k];
        if (node || in_place) { /* node rank 0's piece of the gather is mine, copied by me */
            a->G = xmalloc((size_t)ns * nb);
            a->own_g = 1;
            memcpy(a->G, S, nb);
            if (!in_place)
                pc_in_done(&q->in);
        } else {
            a->G = (char *)S;
        }
        if (node) { /* node rank 0's result is mine, copied out once the leaders' phase is over */
            a->A = xmalloc((size_t)ns * nb);
            a->own_a = 1;
            q->own_dst = R;
            q->own_src = a->A;
            q->own_bytes = nb;
        } else {
            a->A = R;
        }
        size_t off;
        a->cnt = far_counts(pc, b, &off);
        a->far_s = xmalloc(off);
        a->far_r = xmalloc(off);
        q->a2a = a;
        q->c.rbuf = a->G;
        q->c2.sbuf = a->A;
    } else {
        q->c.sbuf = S;
        q->c2.rbuf = R;
    }
    q->c.bytes = q->c2.bytes = nb;
    q->c.root = q->c2.root = 0;
    q->lkind = COLL_NB_ALLTOALL;
    hier_start(q, pc, node, COLL_NB_GATHER, COLL_NB_SCATTER);
    count_path(&st_ialltoall, q, b);
    return req_out(q, comm, req);
}

static int imove_any(coll_nb_kind_t kind, pmpi_stat_t *st, const void *sbuf, int scount, MPI_Datatype stype,
                     void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    pc_dt_t sd = {0}, rd = {0};
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    if ((kind == COLL_NB_GATHER || kind == COLL_NB_SCATTER) && sbuf == rbuf && sbuf != MPI_IN_PLACE &&
        (kind == COLL_NB_GATHER ? scount : rcount) > 0 && (nc || why == PMPI_WHY_MULTINODE) && pc && pc->rank == root)
        return pc_alias_error(st, comm, req);
    if (!nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0) {
        /* (the same facts on every rank: the communicator's layout, the root, the signature's bytes) */
        if (!pc->blocked)
            why = PMPI_WHY_ORDER;
        else if (move_bad(kind, pc, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, root))
            why = PMPI_WHY_VARIANT;
        else {
            size_t b = move_piece(kind, pc->rank, root, sbuf, scount, &sd, rcount, &rd);
            if ((long long)b * pc->size * (kind == COLL_NB_ALLTOALL ? most_on_a_node(pc) : 1) > INT_MAX)
                why = PMPI_WHY_VARIANT; /* (Ialltoall: a leader's bytes per node pair, an int count) */
            else if (kind == COLL_NB_ALLTOALL)
                return ialltoall_hier(pc, node, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, b, comm, req);
            else if (kind == COLL_NB_ALLGATHER)
                return iallgather_hier(pc, node, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, b, comm, req);
            else if (kind == COLL_NB_GATHER)
                return igather_hier(pc, node, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, b, root, comm, req);
            else
                return iscatter_hier(pc, node, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, b, root, comm, req);
        }
    }
    if (nc && move_bad(kind, pc, sbuf, scount, stype, &sd, rbuf, rcount, rtype, &rd, root)) {
        nc = NULL;
        why = PMPI_WHY_VARIANT;
    }
    if (!nc) {
        pmpi_stat_mpi(st, why, 0);
        pmpi_real_requests = 1;
        switch (kind) {
        case COLL_NB_ALLGATHER: return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
        case COLL_NB_ALLTOALL: return PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
        case COLL_NB_GATHER: return PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
        default: return PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
        }
    }
    int n = pc->size, me = pc->rank;
    nb_req_t *q = req_new();
    size_t b = move_piece(kind, me, root, sbuf, scount, &sd, rcount, &rd);
    /* A root's own piece (Igather: sent, Iscatter: received) against the piece size its buffer is
     * laid out in (b): mismatched (erroneous), the fewer bytes move and a too big one is reported at
     * the completion (MPI_ERR_TRUNCATE), as the blocking calls do. */
    size_t own = b;
    if (me == root && kind == COLL_NB_GATHER && sbuf != MPI_IN_PLACE)
        b = (size_t)rcount * (size_t)rd.size;
    else if (me == root && kind == COLL_NB_SCATTER && rbuf != MPI_IN_PLACE)
        own = (size_t)rcount * (size_t)rd.size;
    if (kind == COLL_NB_GATHER ? own > b : own < b)
        q->err = MPI_ERR_TRUNCATE;
    size_t own_b = own < b ? own : b;
    if (!b)
        return nothing_to_move(q, st, comm, req);
    q->c.bytes = b;
    q->c.root = root;
    q->c.inl = coll_nb_inlines(&nc->g, kind, b, 0);
    int shared = !q->c.inl;
    switch (kind) {
    case COLL_NB_ALLGATHER:
        if (sbuf == MPI_IN_PLACE) {
            /* my piece is already in place in rbuf: the staged result keeps it */
            q->c.rbuf = stage_out(q, rbuf, rcount * n, rtype, &rd, shared, 1);
            q->c.sbuf = (char *)q->c.rbuf + (size_t)me * b;
        } else {
            q->c.sbuf = stage_in(q, sbuf, scount, stype, &sd, shared);
            q->c.rbuf = stage_out(q, rbuf, rcount * n, rtype, &rd, shared, 0);
            if (q->c.inl) /* else my own piece is part of my unit */
                memcpy((char *)q->c.rbuf + (size_t)me * b, q->c.sbuf, b);
        }
        break;
    case COLL_NB_ALLTOALL:
        if (sbuf == MPI_IN_PLACE) {
            /* the result overwrites the blocks peers read: they read a copy */
            q->c.rbuf = stage_out(q, rbuf, rcount * n, rtype, &rd, shared, 1);
            q->extra = xmalloc(b * (size_t)n);
            memcpy(q->extra, q->c.rbuf, b * (size_t)n);
            q->c.sbuf = q->extra;
        } else {
            q->c.sbuf = stage_in(q, sbuf, scount * n, stype, &sd, shared);
            q->c.rbuf = stage_out(q, rbuf, rcount * n, rtype, &rd, shared, 0);
            if (q->c.inl)
                memcpy((char *)q->c.rbuf + (size_t)me * b, (const char *)q->c.sbuf + (size_t)me * b, b);
        }
        break;
    case COLL_NB_GATHER:
        q->c.inl = 0;
        if (me == root) {
            q->c.rbuf = stage_out(q, rbuf, rcount * n, rtype, &rd, 1, sbuf == MPI_IN_PLACE);
            if (sbuf != MPI_IN_PLACE) {
                memcpy((char *)q->c.rbuf + (size_t)me * b, stage_in(q, sbuf, scount, stype, &sd, 0), own_b);
                pc_in_done(&q->in);
            }
        } else {
            q->c.sbuf = stage_in(q, sbuf, scount, stype, &sd, 1);
        }
        break;
    default: /* SCATTER */
        q->c.inl = 0;
        if (me == root) {
            q->c.sbuf = stage_in(q, sbuf, scount * n, stype, &sd, 1);
            if (rbuf != MPI_IN_PLACE) {
                pc_buf_t own;
                if (pc_out(&own, rbuf, rcount, rtype, &rd, 0, 0))
                    util_out_of_memory("a nonblocking collective's result", b);
                memcpy(own.p, (const char *)q->c.sbuf + (size_t)me * b, own_b);
                pc_out_done(&own);
            }
        } else {
            q->c.rbuf = stage_out(q, rbuf, rcount, rtype, &rd, 1, 0);
        }
        break;
    }
    start(q, nc, kind);
    count_path(st, q, b);
    return req_out(q, comm, req);
}

BOBCAT_EXPORT int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                 MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return imove_any(COLL_NB_ALLGATHER, &st_iallgather, sbuf, scount, stype, rbuf, rcount, rtype, 0, comm, req);
}

BOBCAT_EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return imove_any(COLL_NB_ALLTOALL, &st_ialltoall, sbuf, scount, stype, rbuf, rcount, rtype, 0, comm, req);
}

BOBCAT_EXPORT int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                              MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return imove_any(COLL_NB_GATHER, &st_igather, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
}

BOBCAT_EXPORT int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                               MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return imove_any(COLL_NB_SCATTER, &st_iscatter, sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
}

/* ---- persistent collectives (MPI 4.0: MPI_Barrier_init, ...) ------------------------------------
 * A persistent request of bobcat's (P2P_K_PERSIST with a start of this file's) keeps the arguments,
 * with its own hold on the datatypes, and every MPI_Start starts the nonblocking call above as its
 * inner request, on a channel of its own (MPI 4.0 matches persistent collectives by the order of
 * their inits, not of their starts):
 * - on a communicator on one node, a channel of the communicator's ring;
 * - across nodes (wherever the nonblocking call runs hierarchically), a channel of the node's ring
 *   for the node phases, and for the leaders' phase the real MPI's own persistent request on the
 *   leaders' communicator, made at the init over a fixed block of the leader's (each start copies
 *   the node's part in and the result out). That init is a collective on the leaders'
 *   communicator: it takes its turn behind the leaders' calls of earlier nonblocking collectives
 *   still waiting for their node phases (pers_queue).
 * The v/w forms (Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw) keep copies of their arrays.
 * Across nodes a leader cannot make their real request at the init (the counts it needs are its
 * node mates'), so their init makes a copy of the leaders' communicator instead, in the same turn,
 * and each start runs the nonblocking call's own leaders' phase on it. Past COLL_NB_CHANNELS per
 * communicator a request's channel has an area of its own (solo_channel). The entry points are
 * PCOLL(X): MPI_X_init, or Open MPI 4's MPIX_X_init (pmpi_coll.h). */
#ifdef PCOLL
static nb_comm_t *pcoll_chan;   /* the channel pcoll_ours found, for the pcoll_new that follows */
static pmpi_comm_t *pcoll_span; /* ... and the communicator, if the starts run across nodes */

typedef struct pcoll {
    coll_nb_kind_t kind;
    nb_comm_t *chan;         /* its channel (on one node never NULL: without one the real MPI's
                                request is used; across nodes NULL when I am alone on my node) */
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    MPI_Datatype sdt, rdt;   /* held */
    MPI_Datatype sdt_user, rdt_user;
    MPI_Op op;               /* the reductions' (referenced: pc_op_ref), else unused */
    int *rcounts;            /* Reduce_scatter: a copy */
    int block;
    /* The v/w forms (kind GATHERV, SCATTERV, ALLGATHERV, ALLTOALLV; w: Alltoallw): copies of the
     * arrays where significant (NULL elsewhere), and Alltoallw's types held (vtypes, n each side:
     * NULL in place) with the program's (vtypes_user). */
    int w;
    MPI_Count *scnt, *rcnt;  /* (64-bit whichever form made it) */
    MPI_Aint *sdsp, *rdsp;
    MPI_Datatype *vtypes, *vtypes_user;
    int vn;
    /* Across nodes (hier), a leader: the real persistent request (MPI_REQUEST_NULL: nothing to
     * move) over lfix; a start copies lin bytes of the leaders' phase's input in, and lout bytes of
     * its result out from lout_off. queued: the init waits for its turn; made: it has had it;
     * released: the program freed the request meanwhile. */
    int hier, queued, made, released, busy;
    MPI_Request real;
    char *lfix;
    size_t lin_off, lin, lout, lout_off; /* in: lfix + lin_off from the same place of the input */
    int lcount, lroot, lself, ldisp;
    int *lcd;                /* the leaders' v call's counts, then displacements (Alltoallv: 4 arrays) */
    coll_op_t lop;           /* the reduction as the leaders' phase runs it (kept: pc_op_keep) */
    int lop_set;
    MPI_Comm lcomm;
    const pmpi_comm_t *lpc;  /* the leaders' phase is point-to-point (pc->lead_tag >= 0): no real
                                request, each start runs it with the request's tag ltag */
    int ltag;
    /* The v/w forms across nodes, a leader: no real persistent request (the counts are the node
     * mates', known at the start), but the nonblocking call's leaders' phase on a copy of the
     * leaders' communicator of the request's own (vcomm, made at the init by MPI_Comm_idup: vdup,
     * MPI_REQUEST_NULL once complete), so that each start's leaders' call pairs with the same
     * request's on the other leaders whatever order ranks start requests in. */
    MPI_Comm vcomm;
    MPI_Request vdup;
    /* On one node, a barrier, or an allreduce that travels in the slots with a predefined op on a
     * named type: its starts are lean calls on its channel (lean: 0 not known until the first
     * start, 1 yes, -1 no; lean_op, lean_n, lean_span as red_args found them). */
    int lean;
    coll_op_t lean_op;
    size_t lean_n, lean_span;
} pcoll_t;

static int pcoll_start_on(pcoll_t *p, MPI_Comm comm, MPI_Request *inner);

/* The v/w forms (Alltoallw: ALLTOALLV with w set). */
static int vw_kind(coll_nb_kind_t k)
{
    return k == COLL_NB_GATHERV || k == COLL_NB_SCATTERV || k == COLL_NB_ALLGATHERV || k == COLL_NB_ALLTOALLV;
}

static int pred_kind(coll_nb_kind_t k)
{
    return k == COLL_NB_REDUCE || k == COLL_NB_ALLREDUCE || k == COLL_NB_REDUCE_SCATTER || k == COLL_NB_SCAN ||
           k == COLL_NB_EXSCAN;
}

static int pcoll_start(p2p_req_t *r, MPI_Request *inner)
{
    pcoll_t *p = r->ext;
    if (p->hier)
        nb_pers = p;
    else
        nb_channel = p->chan;
    int rc = pcoll_start_on(p, r->comm, inner);
    nb_channel = NULL;
    nb_pers = NULL;
    return rc;
}

/* Whether a persistent collective's starts are lean calls (pcoll_t), decided at its first start from
 * what the general path would decide then (its arguments never change). */
static int pcoll_lean(pcoll_t *p)
{
    if (p->lean)
        return p->lean > 0;
    p->lean = -1;
    if (p->hier || !p->chan) /* (no channel either with BOBCAT_COLL_NBC=mpi: pcoll_ours) */
        return 0;
    if (p->kind == COLL_NB_BARRIER) {
        p->lean = 1;
    } else if (p->kind == COLL_NB_ALLREDUCE && !red_alias(COLL_NB_ALLREDUCE, 0, p->sbuf, p->rbuf, 0)) {
        pmpi_why_t why;
        size_t n = 0;
        if (red_args(p->rcount, p->rdt, p->op, &p->lean_op, &n, &why) == 0 &&
            lean_red_fits(p->chan, &p->lean_op, n, p->rdt)) {
            p->lean_n = n;
            p->lean_span = coll_span(&p->lean_op, n);
            p->lean = 1;
        }
    }
    return p->lean > 0;
}

static int pcoll_start_on(pcoll_t *p, MPI_Comm comm, MPI_Request *inner)
{
    if (pcoll_lean(p)) { /* (each start only publishes: its plan is the init's) */
        int red = p->kind == COLL_NB_ALLREDUCE;
        if (red)
            pmpi_stat_path(&st_iallreduce, PMPI_PATH_INPLACE, p->lean_span, A_INLINE);
        else
            pmpi_stat_path(&st_ibarrier, PMPI_PATH_INPLACE, 0, 0);
        lean_start(p->chan, p->kind, red ? &p->lean_op : NULL, p->lean_n,
                   red ? (p->sbuf == MPI_IN_PLACE ? p->rbuf : p->sbuf) : NULL, p->rbuf, comm, inner);
        return MPI_SUCCESS;
    }
    switch (p->kind) {
    case COLL_NB_BARRIER: return MPI_Ibarrier(comm, inner);
    case COLL_NB_BCAST: return MPI_Ibcast(p->rbuf, p->rcount, p->rdt, p->root, comm, inner);
    case COLL_NB_REDUCE:
    case COLL_NB_ALLREDUCE:
    case COLL_NB_SCAN:
    case COLL_NB_EXSCAN:
        return ireduce_any(p->kind, p->kind == COLL_NB_REDUCE ? &st_ireduce : p->kind == COLL_NB_ALLREDUCE ? &st_iallreduce
                                    : p->kind == COLL_NB_SCAN ? &st_iscan : &st_iexscan,
                           p->sbuf, p->rbuf, p->rcount, p->rdt, p->op, p->root, comm, inner);
    case COLL_NB_REDUCE_SCATTER:
        return irs_any(p->block ? &st_irsb : &st_irs, p->sbuf, p->rbuf, p->rcounts, NULL, p->block, p->rdt, p->op, comm,
                       inner);
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV:
    case COLL_NB_ALLGATHERV:
    case COLL_NB_ALLTOALLV: {
        pc_nbv_args_t a = {.kind = p->kind, .w = p->w, .root = p->root, .sbuf = p->sbuf, .scount = p->scount,
                           .scnt = p->scnt, .sdsp = p->sdsp, .sdt = p->sdt, .stypes = p->vtypes, .rbuf = p->rbuf,
                           .rcount = p->rcount, .rcnt = p->rcnt, .rdsp = p->rdsp, .rdt = p->rdt,
                           .rtypes = p->vtypes ? p->vtypes + p->vn : NULL};
        return pc_nbv_persist_start(&a, comm, inner);
    }
    default:
        return imove_any(p->kind,
                         p->kind == COLL_NB_ALLGATHER ? &st_iallgather : p->kind == COLL_NB_ALLTOALL ? &st_ialltoall
                         : p->kind == COLL_NB_GATHER ? &st_igather : &st_iscatter,
                         p->sbuf, p->scount, p->sdt, p->rbuf, p->rcount, p->rdt, p->root, comm, inner);
    }
}

static void pcoll_free(pcoll_t *p)
{
    if (p->real != MPI_REQUEST_NULL)
        PMPI_Request_free(&p->real);
    if (p->vcomm != MPI_COMM_NULL)
        PMPI_Comm_free(&p->vcomm);
    free(p->lfix);
    free(p->lcd);
    if (p->lop_set)
        pc_op_let_go(&p->lop);
    if (p->sdt != MPI_DATATYPE_NULL)
        pmpi_dt_release(p->sdt, p->sdt_user);
    if (pred_kind(p->kind))
        pmpi_dt_unref(p->rdt);
    else if (p->rdt != MPI_DATATYPE_NULL)
        pmpi_dt_release(p->rdt, p->rdt_user);
    pc_op_unref(p->op);
    if (p->chan && p->chan->setup) { /* (its setup is a call on the communicator's ring: it ends first) */
        p->chan->orphan = 1;
    } else if (p->chan && !p->chan->g.head) { /* (freed with a call in flight is erroneous: then it stays) */
        nb_deactivate(p->chan);
        solo_drop(p->chan);
    }
    free(p->rcounts);
    if (p->vtypes)
        for (int i = 0; i < 2 * p->vn; i++)
            pmpi_dt_release(p->vtypes[i], p->vtypes_user[i]);
    free(p->vtypes);
    free(p->vtypes_user);
    free(p->scnt);
    free(p->sdsp);
    free(p->rcnt);
    free(p->rdsp);
    free(p);
}

/* Freed once the program has let it go and nothing of it is pending: its init (queued, or a v/w
 * form's communicator still being made) or a start (busy; MPI_Request_free may come while one is in
 * flight, which then completes on its own). */
static void pers_maybe_free(pcoll_t *p)
{
    if (p->released && !p->queued && p->vdup == MPI_REQUEST_NULL && !p->busy)
        pcoll_free(p);
}

static void pers_busy(pcoll_t *p, int busy)
{
    p->busy = busy;
    pers_maybe_free(p);
}

static void pcoll_release(p2p_req_t *r)
{
    pcoll_t *p = r->ext;
    if (!p)
        return;
    p->released = 1;
    pers_maybe_free(p);
}

static const p2p_ext_ops_t pcoll_ops = {NULL, pcoll_release, pcoll_start, NULL};

/* ---- ... across nodes: the leaders' phase ---- */

static nb_comm_t *pers_node_channel(struct pcoll *p) { return p->chan; }

/* The leader's real persistent request, in its turn among the leaders' collectives. */
static void pers_init_now(pcoll_t *p)
{
    int rc = MPI_SUCCESS;
    MPI_Datatype dt = p->lop_set ? pc_op_base(&p->lop) : MPI_BYTE;
    if (p->made)
        return;
    p->made = 1;
    p->queued = 0;
    switch (p->kind) {
    case COLL_NB_BARRIER: rc = PCOLL_REAL(Barrier)(p->lcomm, MPI_INFO_NULL, &p->real); break;
    case COLL_NB_BCAST:
        if (p->lcount)
            rc = PCOLL_REAL(Bcast)(p->lfix, p->lcount, MPI_BYTE, p->lroot, p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_REDUCE:
        if (p->lcount)
            rc = PCOLL_REAL(Reduce)(p->lself ? MPI_IN_PLACE : p->lfix, p->lself ? p->lfix : NULL, p->lcount, dt, p->op,
                                    p->lroot, p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_ALLREDUCE:
        if (p->lcount)
            rc = PCOLL_REAL(Allreduce)(MPI_IN_PLACE, p->lfix, p->lcount, dt, p->op, p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_ALLGATHER: /* the nodes' blocks in place (iallgather_hier) */
        rc = PCOLL_REAL(Allgatherv)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p->lfix, p->lcd, p->lcd + p->lcount, MPI_BYTE,
                                    p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_GATHER: /* at the leaders' root the whole result, elsewhere my node's block */
        if (p->lself)
            rc = PCOLL_REAL(Gatherv)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p->lfix, p->lcd, p->lcd + p->lcount, MPI_BYTE,
                                     p->lroot, p->lcomm, MPI_INFO_NULL, &p->real);
        else
            rc = PCOLL_REAL(Gatherv)(p->lfix, p->ldisp, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, p->lroot, p->lcomm,
                                     MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_SCATTER:
        if (p->lself)
            rc = PCOLL_REAL(Scatterv)(p->lfix, p->lcd, p->lcd + p->lcount, MPI_BYTE, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                      p->lroot, p->lcomm, MPI_INFO_NULL, &p->real);
        else
            rc = PCOLL_REAL(Scatterv)(NULL, NULL, NULL, MPI_BYTE, p->lfix, p->ldisp, MPI_BYTE, p->lroot, p->lcomm,
                                      MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_ALLTOALL: { /* the blocks between nodes (ialltoall_hier's far_s, far_r) */
        int N = p->lcount, *c = p->lcd;
        rc = PCOLL_REAL(Alltoallv)(p->lfix, c, c + N, MPI_BYTE, p->lfix + p->lout_off, c + 2 * N, c + 3 * N, MPI_BYTE,
                                   p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    }
    case COLL_NB_REDUCE_SCATTER: /* the nodes' blocks, in place: mine lands at the start */
        rc = PCOLL_REAL(Reduce_scatter)(MPI_IN_PLACE, p->lfix, p->lcd, dt, p->op, p->lcomm, MPI_INFO_NULL, &p->real);
        break;
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV:
    case COLL_NB_ALLGATHERV:
    case COLL_NB_ALLTOALLV: /* (a collective on lcomm, made in its turn like the requests above) */
        rc = PMPI_Comm_idup(p->lcomm, &p->vcomm, &p->vdup);
        break;
    default: /* Scan, Exscan: the node totals' prefix (iscan_hier) */
        if (p->lcount)
            rc = PCOLL_REAL(Exscan)(p->lfix, p->lfix + p->lout_off, p->lcount, dt, p->op, p->lcomm, MPI_INFO_NULL,
                                    &p->real);
        break;
    }
    if (rc != MPI_SUCCESS) {
        util_error("the leaders' persistent collective failed to initialise in the real MPI");
        abort();
    }
    pers_maybe_free(p);
}

static int pers_inited(pcoll_t *p)
{
    if (p->vdup != MPI_REQUEST_NULL) {
        int done = 0;
        PMPI_Test(&p->vdup, &done, MPI_STATUS_IGNORE); /* (done: vdup is MPI_REQUEST_NULL) */
        if (!done)
            return 0;
        pers_maybe_free(p); /* (made, so not queued: 1 whether p is freed now or not) */
        return 1;
    }
    return !p->queued;
}

/* Make the leader's real request now, or queue its init behind the leaders' calls of earlier
 * nonblocking collectives that have not started yet (they wait for their node phases). A v/w
 * form's communicator, made now, stays on the list until it is complete (progress completes it). */
static void pers_queue(pcoll_t *p)
{
    int wait = 0;
    for (nb_req_t *e = hier_head; e && !wait; e = e->hnext)
        wait = leaders_call_pending(e, p->lcomm);
    if (!wait) {
        pers_init_now(p);
        if (p->vdup == MPI_REQUEST_NULL)
            return;
    } else {
        p->queued = 1;
    }
    nb_req_t *q = req_new();
    q->hier = q->leader = q->step = 1;
    q->lcomm = p->lcomm;
    q->real = MPI_REQUEST_NULL;
    q->pinit = p;
    hier_append(q);
}

static int pers_tag(const pcoll_t *p) { return p->ltag; }

/* A start's leaders' phase over point-to-point: the call the real persistent request would be
 * (pers_init_now), on the fixed block, with the request's tag. */
static int pers_p2p_start(nb_req_t *q, pcoll_t *p)
{
    pc_lead_nb_args_t a = {.kind = p->kind, .buf = p->lfix, .count = p->lcount, .root = p->lroot,
                           .dt = p->lop_set ? pc_op_base(&p->lop) : MPI_BYTE, .op = p->op, .cnt = p->lcd,
                           .tag = p->ltag};
    int N = p->lcount;
    switch (p->kind) {
    case COLL_NB_ALLGATHER:
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER: /* (a root's blocks: counts, then displacements; elsewhere my block's bytes) */
        a.dsp = p->lcd ? p->lcd + N : NULL;
        a.count = p->ldisp;
        break;
    case COLL_NB_ALLTOALL:
        a.dsp = p->lcd + N, a.out = p->lfix + p->lout_off, a.rcnt = p->lcd + 2 * N, a.rdsp = p->lcd + 3 * N;
        break;
    case COLL_NB_SCAN:
    case COLL_NB_EXSCAN: /* the node totals' prefix */
        a.kind = COLL_NB_EXSCAN;
        a.out = p->lfix + p->lout_off;
        break;
    default: break;
    }
    return pc_lead_nb_start(p->lpc, &a, &q->lnb);
}

/* A start's leaders' phase: the node's part into the fixed block, the real request started. */
static int pers_lead_start(nb_req_t *q)
{
    pcoll_t *p = q->pers;
    if (p->queued)
        return MPI_SUCCESS;
    if (vw_kind(p->kind)) { /* the nonblocking call's own leaders' call, on the request's communicator */
        if (!pers_inited(p))
            return MPI_SUCCESS;
        q->lcomm = p->vcomm;
        return leaders_start(q);
    }
    const char *src = q->lbuf;
    if (q->a2a) {
        a2a_pack(q->a2a);
        src = q->a2a->far_s;
    }
    if (p->lin)
        memcpy(p->lfix + p->lin_off, src + p->lin_off, p->lin);
    if (p->lpc)
        return pers_p2p_start(q, p);
    pmpi_real_requests = 1;
    q->real = p->real;
    return PMPI_Start(&q->real);
}

static void pers_lead_done(nb_req_t *q)
{
    pcoll_t *p = q->pers;
    void *dst = p->kind == COLL_NB_SCAN || p->kind == COLL_NB_EXSCAN ? q->se : q->a2a ? q->a2a->far_r : q->lbuf;
    if (p->lout)
        memcpy(dst, p->lfix + p->lout_off, p->lout);
}

/* A moving call's piece (bytes per rank) if it runs across nodes (as imove_any decides), else -1. */
static long long pers_move_piece(const pcoll_t *t, const pmpi_comm_t *pc)
{
    pc_dt_t sd = {0}, rd = {0};
    if (!pc->blocked ||
        move_bad(t->kind, pc, t->sbuf, t->scount, t->sdt, &sd, t->rbuf, t->rcount, t->rdt, &rd, t->root))
        return -1;
    size_t b = move_piece(t->kind, pc->rank, t->root, t->sbuf, t->scount, &sd, t->rcount, &rd);
    if ((long long)b * pc->size * (t->kind == COLL_NB_ALLTOALL ? most_on_a_node(pc) : 1) > INT_MAX)
        return -1;
    return (long long)b;
}

/* Reduce_scatter(_block)'s elements of the op's base type in all (as irs_any decides), else -1. */
static long long pers_rs_total(const pcoll_t *t, const pmpi_comm_t *pc, coll_op_t *cop, size_t *mult_p)
{
    size_t mult = 1;
    pmpi_why_t why;
    *mult_p = 1;
    if (pc_op(t->op, t->rdt, cop, &mult, &why) != 0 || !pc->blocked)
        return -1;
    long long total = rs_total(t->rcounts, t->block, pc->size);
    if (total < 0 || (unsigned long long)total * mult > INT_MAX || cop->tail != cop->extent)
        return -1;
    *mult_p = mult;
    return total * (long long)mult;
}

/* Whether the starts of this persistent call run across nodes (the same answer on every rank). */
static int pers_hier_ok(const pcoll_t *t, const pmpi_comm_t *pc)
{
    pc_dt_t d;
    coll_op_t cop;
    size_t n;
    pmpi_why_t why;
    /* The v forms' leaders' phase runs on a duplicate of the leaders' communicator (pers_init_now),
     * which the layer may not make where it makes no node-part communicators after MPI_Init
     * (base/pmpi_comm.c, "Hidden communicators"). */
    if (vw_kind(t->kind) && pmpi_layer.no_hidden_comms && pc->lead_tag < 0)
        return 0;
    switch (t->kind) {
    case COLL_NB_BARRIER: return 1;
    case COLL_NB_BCAST: return !bcast_bad(pc, t->rbuf, t->rcount, t->rdt, t->root, 1, &d);
    case COLL_NB_REDUCE:
    case COLL_NB_ALLREDUCE:
    case COLL_NB_SCAN:
    case COLL_NB_EXSCAN:
        return red_args(t->rcount, t->rdt, t->op, &cop, &n, &why) == 0 &&
               red_hier_why(t->kind, pc, &cop, t->sbuf, t->rbuf, t->root) == PMPI_WHY_NONE;
    case COLL_NB_ALLGATHER:
    case COLL_NB_ALLTOALL:
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER: return pers_move_piece(t, pc) >= 0;
    case COLL_NB_REDUCE_SCATTER: return pers_rs_total(t, pc, &cop, &n) >= 0;
    case COLL_NB_ALLGATHERV: { /* (as MPI_Iallgatherv decides: the leaders' ints of bytes) */
        long long all = 0;
        if (pc_dt(t->rdt, &d) != 0)
            return 0;
        for (int q = 0; q < pc->size; q++)
            all += (long long)t->rcnt[q] * (long long)d.size;
        return all <= INT_MAX;
    }
    default: return vw_kind(t->kind);
    }
}

/* A moving call's leaders' phase (as the *_hier calls set it): the block's bytes; p->lcount 0 if
 * nothing moves. */
static size_t pers_move_plan(pcoll_t *p, const pmpi_comm_t *pc)
{
    int me = pc->rank, N = pc->nnodes, myk = pc->leader_rank[me], ns = pc->node_size, n = pc->size;
    size_t b = (size_t)pers_move_piece(p, pc), nb = (size_t)n * b;
    if (!b)
        return 0;
    p->lcount = N;
    p->lroot = p->kind == COLL_NB_GATHER || p->kind == COLL_NB_SCATTER ? pc->leader_rank[p->root] : 0;
    p->lself = (p->kind == COLL_NB_GATHER || p->kind == COLL_NB_SCATTER) && pc->node[p->root] == pc->node[me];
    size_t mine_off = (size_t)pc->node_first[myk] * b, mine = (size_t)pc->node_count[myk] * b;
    switch (p->kind) {
    case COLL_NB_ALLTOALL: {
        size_t off;
        p->lcd = far_counts(pc, b, &off);
        p->lin = off;
        p->lout_off = off;
        p->lout = off;
        return 2 * off;
    }
    case COLL_NB_ALLGATHER:
        p->lcd = node_blocks(pc, b);
        p->lin_off = mine_off, p->lin = mine, p->lout = nb;
        return nb;
    case COLL_NB_GATHER:
        if (p->lself) {
            p->lcd = node_blocks(pc, b);
            p->lin_off = mine_off, p->lin = mine, p->lout = nb;
            return nb;
        }
        p->ldisp = ns * (int)b;
        p->lin = (size_t)ns * b;
        return p->lin;
    default: /* Scatter */
        if (p->lself) {
            p->lcd = node_blocks(pc, b);
            p->lin = nb;
            return nb;
        }
        p->ldisp = ns * (int)b;
        p->lout = (size_t)ns * b;
        return p->lout;
    }
}

/* A leader's side of a persistent call across nodes: the shape of its leaders' phase (as the
 * nonblocking call's *_hier sets it), its block, its real request. */
static void pers_lead_plan(pcoll_t *p, const pmpi_comm_t *pc)
{
    int me = pc->rank;
    size_t bytes = 0;
    p->lcomm = pc->leaders_comm;
    if (pc->lead_tag >= 0) { /* (pcoll_ours counted this one in pinits) */
        p->lpc = pc;
        p->ltag = pc->lead_tag + 2 + (pc->pinits - 1);
    }
    if (vw_kind(p->kind)) {
        if (!p->lpc)
            pers_queue(p);
        return;
    }
    if (p->kind == COLL_NB_BCAST) {
        pc_dt_t d;
        pc_dt(p->rdt, &d);
        bytes = (size_t)p->rcount * (size_t)d.size;
        p->lcount = (int)bytes;
        p->lroot = pc->leader_rank[p->root];
        p->lin = pc->node[p->root] == pc->node[me] ? bytes : 0;
        p->lout = bytes - p->lin;
    } else if (p->kind == COLL_NB_ALLGATHER || p->kind == COLL_NB_GATHER || p->kind == COLL_NB_SCATTER ||
               p->kind == COLL_NB_ALLTOALL) {
        bytes = pers_move_plan(p, pc);
    } else if (p->kind == COLL_NB_REDUCE_SCATTER) {
        size_t mult, total = (size_t)pers_rs_total(p, pc, &p->lop, &mult);
        pc_op_keep(&p->lop);
        p->lop_set = 1;
        p->lcd = node_counts(pc, p->rcounts, p->block, mult);
        p->lcount = total ? pc->nnodes : 0;
        p->lin = bytes = coll_span(&p->lop, total);
        p->lout = coll_span(&p->lop, (size_t)p->lcd[pc->leader_rank[me]]);
    } else if (p->kind != COLL_NB_BARRIER) {
        size_t n = 0;
        pmpi_why_t why;
        red_args(p->rcount, p->rdt, p->op, &p->lop, &n, &why);
        pc_op_keep(&p->lop);
        p->lop_set = 1;
        size_t span = coll_span(&p->lop, n);
        p->lcount = (int)n;
        p->lin = p->lout = bytes = span;
        if (p->kind == COLL_NB_REDUCE) {
            p->lroot = pc->leader_rank[p->root];
            p->lself = pc->node[p->root] == pc->node[me];
            p->lout = p->lself ? span : 0;
        } else if (p->kind != COLL_NB_ALLREDUCE) { /* Scan, Exscan: input, then the prefix */
            p->lout_off = (span + 63) & ~(size_t)63;
            bytes = 2 * p->lout_off;
        }
    }
    if (bytes)
        p->lfix = util_alloc_or_die(bytes, "a persistent collective's leaders' phase");
    if ((p->lcount || p->kind == COLL_NB_BARRIER) && !p->lpc)
        pers_queue(p);
}

/* Channel k of a ring of `size` ranks (a group of depth 1 over its own part of the ring's area). */
static nb_comm_t *channel_of(const nb_comm_t *nc, int size, int k)
{
    nb_comm_t *ch = calloc(1, sizeof *ch);
    uintptr_t *base = malloc(sizeof(uintptr_t) * (size_t)size);
    if (!ch || !base) {
        util_error("out of memory for a persistent collective");
        abort();
    }
    memcpy(base, nc->base, sizeof(uintptr_t) * (size_t)size);
    ch->base = base;
    ch->g = nc->g;
    ch->g.base = base;
    ch->g.area = coll_nb_channel(nc->g.area, size, k);
    ch->g.depth = 1;
    ch->g.started = ch->g.published = ch->g.wm = ch->g.peers_wm = 0;
    ch->g.head = ch->g.tail = NULL;
    return ch;
}

/* Past the area's channels: a channel with an area of its own, which group rank 0 of ring nc (the
 * communicator's, across nodes its node's) makes in its heap now and the others learn of from an
 * inline broadcast on nc, in the init's place among comm's collectives (every rank makes its inits
 * in one order, so the broadcast pairs with the same init everywhere). Its calls wait for that
 * (coll_nb_set_area), and comm stays until it is done. */
static nb_comm_t *solo_channel(nb_comm_t *nc, int size, MPI_Comm comm)
{
    nb_comm_t *ch = channel_of(nc, size, 0);
    if ((ch->pin = p2p_comm_lookup(comm)))
        ch->pin->refs++;
    coll_nb_t *s = calloc(1, sizeof *s);
    if (!s) {
        util_error("out of memory for a persistent collective");
        abort();
    }
    ch->g.area = NULL;
    ch->setup = s;
    if (nc->g.rank == 0) {
        size_t bytes = (coll_nb_solo_size(size) + COLL_LINE - 1) & ~(size_t)(COLL_LINE - 1);
        coll_nb_area_t *a = aligned_alloc(COLL_LINE, bytes);
        if (!a || !smap_is_shared(a)) {
            util_error("no heap for a persistent collective's ring (%zu bytes): raise the heap (yod --heap)", bytes);
            abort();
        }
        coll_nb_solo_init(a, size);
        ch->setup_addr = (uint64_t)(uintptr_t)a;
    }
    *s = (coll_nb_t){.g = &nc->g, .kind = COLL_NB_BCAST, .root = 0, .bytes = sizeof ch->setup_addr, .inl = 1,
                     .rbuf = &ch->setup_addr};
    coll_nb_start(s);
    nb_activate(nc);
    nb_activate(ch);
    return ch;
}

/* Whether bobcat runs this persistent collective (t: its arguments; every rank counts the inits
 * alike, as they come in one order): on a communicator on one node (pcoll_chan: the k-th init's
 * channel k of the ring, or past COLL_NB_CHANNELS a solo channel); across nodes, if it can run
 * across nodes (pcoll_span set, pcoll_chan: the node ring's channel or a solo one, NULL alone on my
 * node). If not, the real MPI's persistent request serves it. */
static int pcoll_ours(const pcoll_t *t, MPI_Comm comm)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    nb_comm_t *nc = nb_setup(comm, &pc, &why), *node = NULL;
    pcoll_chan = NULL;
    pcoll_span = NULL;
    if (!nc && why == PMPI_WHY_MULTINODE && hier_setup(comm, &pc, &node, &why) == 0 && pers_hier_ok(t, pc) &&
        (pc->lead_tag < 0 || pc->pinits < pmpi_layer.lead_block - 2)) {
        pc->pinits++;
        pcoll_chan = !node                         ? NULL
                     : pc->pinits <= COLL_NB_CHANNELS ? channel_of(node, pc->node_size, pc->pinits - 1)
                                                      : solo_channel(node, pc->node_size, comm);
        pcoll_span = pc;
        return 1;
    }
    if (!nc) {
        pmpi_real_requests = 1; /* the real MPI's persistent request */
        return 0;
    }
    nc->pinits++;
    pcoll_chan = nc->pinits <= COLL_NB_CHANNELS ? channel_of(nc, pc->size, nc->pinits - 1) : solo_channel(nc, pc->size, comm);
    return 1;
}

static int pcoll_new(pcoll_t *t, MPI_Comm comm, MPI_Request *req)
{
    p2p_req_t *r = p2p_req_new();
    pcoll_t *p = malloc(sizeof *p);
    if (!r || !p) {
        free(p);
        if (r)
            p2p_req_release(r);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    }
    *p = *t;
    p->op = pred_kind(t->kind) ? t->op : MPI_OP_NULL;
    pc_op_ref(p->op); /* (MPI_OP_NULL: nothing) */
    p->chan = pcoll_chan;
    pcoll_chan = NULL;
    p->sdt_user = t->sdt;
    p->rdt_user = t->rdt;
    p->sdt = pmpi_dt_keep(t->sdt);
    if (pred_kind(t->kind)) { /* the user's op is handed the program's own handle: referenced */
        pmpi_dt_ref(t->rdt);
        p->rdt = t->rdt;
    } else {
        p->rdt = pmpi_dt_keep(t->rdt);
    }
    p->real = p->vdup = MPI_REQUEST_NULL;
    p->vcomm = MPI_COMM_NULL;
    if (pcoll_span) {
        p->hier = 1;
        if (pcoll_span->leader == pcoll_span->rank)
            pers_lead_plan(p, pcoll_span);
        pcoll_span = NULL;
    }
    *req = p2p_persist_ext(r, &pcoll_ops, p, comm);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int PCOLL(Barrier)(MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = {.kind = COLL_NB_BARRIER, .sdt = MPI_DATATYPE_NULL, .rdt = MPI_DATATYPE_NULL};
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Barrier)(comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Bcast)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Info info,
                               MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = {.kind = COLL_NB_BCAST, .rbuf = buf, .rcount = count, .rdt = dt, .sdt = MPI_DATATYPE_NULL, .root = root};
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Bcast)(buf, count, dt, root, comm, info, req);
    return pcoll_new(&t, comm, req);
}

/* The reductions' and the moving calls' arguments, kept for the starts. */
static pcoll_t pred_args(coll_nb_kind_t kind, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                         int root)
{
    return (pcoll_t){.kind = kind, .sbuf = sbuf, .rbuf = rbuf, .rcount = count, .rdt = dt, .sdt = MPI_DATATYPE_NULL,
                     .op = op, .root = root};
}

static pcoll_t pmove_args(coll_nb_kind_t kind, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                          int rcount, MPI_Datatype rtype, int root)
{
    return (pcoll_t){.kind = kind, .sbuf = sbuf, .scount = scount, .sdt = stype, .rbuf = rbuf, .rcount = rcount,
                     .rdt = rtype, .root = root};
}

BOBCAT_EXPORT int PCOLL(Reduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                                MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pred_args(COLL_NB_REDUCE, sbuf, rbuf, count, dt, op, root);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Reduce)(sbuf, rbuf, count, dt, op, root, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Allreduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pred_args(COLL_NB_ALLREDUCE, sbuf, rbuf, count, dt, op, 0);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Allreduce)(sbuf, rbuf, count, dt, op, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Scan)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pred_args(COLL_NB_SCAN, sbuf, rbuf, count, dt, op, 0);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Scan)(sbuf, rbuf, count, dt, op, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Exscan)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pred_args(COLL_NB_EXSCAN, sbuf, rbuf, count, dt, op, 0);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Exscan)(sbuf, rbuf, count, dt, op, comm, info, req);
    return pcoll_new(&t, comm, req);
}

/* Reduce_scatter(_block)'s arguments (rcounts still the program's), kept for the starts. */
static pcoll_t prs_args(const void *sbuf, void *rbuf, const int *rcounts, int block, MPI_Datatype dt, MPI_Op op)
{
    return (pcoll_t){.kind = COLL_NB_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .rdt = dt, .sdt = MPI_DATATYPE_NULL,
                     .op = op, .block = block, .rcounts = (int *)rcounts};
}

/* ... made bobcat's: with a copy of the counts. */
static int prs_init(pcoll_t *t, MPI_Comm comm, MPI_Request *req)
{
    int n = 1;
    PMPI_Comm_size(comm, &n);
    const int *rcounts = t->rcounts;
    t->rcounts = malloc(sizeof(int) * (size_t)(t->block ? 1 : n));
    if (!t->rcounts) {
        if (pcoll_chan) {
            free(pcoll_chan->base);
            free(pcoll_chan);
        }
        pcoll_chan = NULL;
        pcoll_span = NULL;
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    }
    memcpy(t->rcounts, rcounts, sizeof(int) * (size_t)(t->block ? 1 : n));
    int rc = pcoll_new(t, comm, req);
    if (rc != MPI_SUCCESS)
        free(t->rcounts);
    return rc;
}

BOBCAT_EXPORT int PCOLL(Reduce_scatter_block)(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op,
                                              MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = prs_args(sbuf, rbuf, &rcount, 1, dt, op);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Reduce_scatter_block)(sbuf, rbuf, rcount, dt, op, comm, info, req);
    return prs_init(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Reduce_scatter)(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                                        MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = prs_args(sbuf, rbuf, rcounts, 0, dt, op);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Reduce_scatter)(sbuf, rbuf, rcounts, dt, op, comm, info, req);
    return prs_init(&t, comm, req);
}

#if MPI_VERSION >= 4
BOBCAT_EXPORT int MPI_Reduce_scatter_init_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                                            MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    int stack[64], *c, rc;
    if (pc_counts_as_ints(rcounts, comm, &c, stack, 64))
        return PMPI_Reduce_scatter_init_c(sbuf, rbuf, rcounts, dt, op, comm, info, req);
    pcoll_t t = prs_args(sbuf, rbuf, c, 0, dt, op);
    if (!pcoll_ours(&t, comm))
        rc = PMPI_Reduce_scatter_init_c(sbuf, rbuf, rcounts, dt, op, comm, info, req);
    else
        rc = prs_init(&t, comm, req); /* (keeps a copy of c) */
    if (c != stack)
        free(c);
    return rc;
}
#endif

BOBCAT_EXPORT int PCOLL(Allgather)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                   MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pmove_args(COLL_NB_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, 0);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Allgather)(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Alltoall)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                  MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pmove_args(COLL_NB_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, 0);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Alltoall)(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Gather)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pmove_args(COLL_NB_GATHER, sbuf, scount, stype, rbuf, rcount, rtype, root);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Gather)(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, info, req);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Scatter)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    pcoll_t t = pmove_args(COLL_NB_SCATTER, sbuf, scount, stype, rbuf, rcount, rtype, root);
    if (!pcoll_ours(&t, comm))
        return PCOLL_REAL(Scatter)(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, info, req);
    return pcoll_new(&t, comm, req);
}

/* ---- the v/w forms (across nodes: pers_lead_start) ---- */

/* 64-bit copies of a v form's counts and displacements, int or large-count alike (NULL: none). */
static MPI_Count *ccopy(pc_vec_t a, int n)
{
    if (!a.p)
        return NULL;
    MPI_Count *c = util_alloc_or_die(sizeof *c * (size_t)(n ? n : 1), "a persistent collective's counts");
    for (int i = 0; i < n; i++)
        c[i] = pc_at(a, i);
    return c;
}

static MPI_Aint *acopy(pc_vec_t a, int n)
{
    if (!a.p)
        return NULL;
    MPI_Aint *c = util_alloc_or_die(sizeof *c * (size_t)(n ? n : 1), "a persistent collective's displacements");
    for (int i = 0; i < n; i++)
        c[i] = (MPI_Aint)pc_at(a, i);
    return c;
}

static int comm_n(MPI_Comm comm, int *me)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, me);
    return n;
}

int pc_gatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                    MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int me, n = comm_n(comm, &me), at = me == root;
    pcoll_t t = {.kind = COLL_NB_GATHERV, .sbuf = sbuf, .scount = scount, .rbuf = rbuf, .root = root,
                 .sdt = at && sbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : stype, .rdt = at ? rtype : MPI_DATATYPE_NULL};
    if (!pcoll_ours(&t, comm)) {
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_Gatherv_init_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm, info, req);
#endif
        return PCOLL_REAL(Gatherv)(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm, info, req);
    }
    if (at) {
        t.rcnt = ccopy(rcounts, n);
        t.rdsp = acopy(displs, n);
    }
    return pcoll_new(&t, comm, req);
}

int pc_scatterv_init(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                     MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int me, n = comm_n(comm, &me), at = me == root;
    pcoll_t t = {.kind = COLL_NB_SCATTERV, .sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .root = root,
                 .sdt = at ? stype : MPI_DATATYPE_NULL, .rdt = at && rbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : rtype};
    if (!pcoll_ours(&t, comm)) {
#if MPI_VERSION >= 4
        if (pc_vec_wide(scounts))
            return PMPI_Scatterv_init_c(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm, info, req);
#endif
        return PCOLL_REAL(Scatterv)(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm, info, req);
    }
    if (at) {
        t.scnt = ccopy(scounts, n);
        t.sdsp = acopy(displs, n);
    }
    return pcoll_new(&t, comm, req);
}

int pc_allgatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts,
                       pc_vec_t displs, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int me, n = comm_n(comm, &me);
    /* (pcoll_ours reads the counts: a copy first, freed if the real MPI takes the request) */
    pcoll_t t = {.kind = COLL_NB_ALLGATHERV, .sbuf = sbuf, .scount = scount, .rbuf = rbuf, .rdt = rtype,
                 .sdt = sbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : stype, .rcnt = ccopy(rcounts, n)};
    if (!pcoll_ours(&t, comm)) {
        free(t.rcnt);
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_Allgatherv_init_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm, info, req);
#endif
        return PCOLL_REAL(Allgatherv)(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm, info, req);
    }
    t.rdsp = acopy(displs, n);
    return pcoll_new(&t, comm, req);
}

/* Alltoallv (w = 0) and Alltoallw's init: the real MPI's request, or bobcat's with copies. */
static int alltoallvw_real(int w, const void *sbuf, pc_vec_t scounts, pc_vec_t sdispls, const MPI_Datatype *stypes,
                           void *rbuf, pc_vec_t rcounts, pc_vec_t rdispls, const MPI_Datatype *rtypes, MPI_Comm comm,
                           MPI_Info info, MPI_Request *req)
{
#if MPI_VERSION >= 4
    if (pc_vec_wide(rcounts)) {
        const MPI_Count *sc = scounts.p, *rc = rcounts.p;
        const MPI_Aint *sd = sdispls.p, *rd = rdispls.p;
        return w ? PMPI_Alltoallw_init_c(sbuf, sc, sd, stypes, rbuf, rc, rd, rtypes, comm, info, req)
                 : PMPI_Alltoallv_init_c(sbuf, sc, sd, stypes[0], rbuf, rc, rd, rtypes[0], comm, info, req);
    }
#endif
    const int *sc = scounts.p, *sd = sdispls.p, *rc = rcounts.p, *rd = rdispls.p;
    return w ? PCOLL_REAL(Alltoallw)(sbuf, sc, sd, stypes, rbuf, rc, rd, rtypes, comm, info, req)
             : PCOLL_REAL(Alltoallv)(sbuf, sc, sd, stypes[0], rbuf, rc, rd, rtypes[0], comm, info, req);
}

int pc_alltoallvw_init(int w, const void *sbuf, pc_vec_t scounts, pc_vec_t sdispls, const MPI_Datatype *stypes,
                       void *rbuf, pc_vec_t rcounts, pc_vec_t rdispls, const MPI_Datatype *rtypes, MPI_Comm comm,
                       MPI_Info info, MPI_Request *req)
{
    int me, n = comm_n(comm, &me), ip = sbuf == MPI_IN_PLACE;
    pcoll_t t = {.kind = COLL_NB_ALLTOALLV, .w = w, .sbuf = sbuf, .rbuf = rbuf,
                 .rdt = w ? MPI_DATATYPE_NULL : rtypes[0], .sdt = w || ip ? MPI_DATATYPE_NULL : stypes[0]};
    if (!pcoll_ours(&t, comm))
        return alltoallvw_real(w, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, info, req);
    t.scnt = ip ? NULL : ccopy(scounts, n);
    t.sdsp = ip ? NULL : acopy(sdispls, n);
    t.rcnt = ccopy(rcounts, n);
    t.rdsp = acopy(rdispls, n);
    if (!w)
        return pcoll_new(&t, comm, req);
    t.vn = n;
    t.vtypes = util_alloc_or_die(2 * sizeof(MPI_Datatype) * (size_t)(n ? n : 1), "a persistent collective's types");
    t.vtypes_user = util_alloc_or_die(2 * sizeof(MPI_Datatype) * (size_t)(n ? n : 1), "a persistent collective's types");
    for (int q = 0; q < n; q++) { /* the send side's, then the receive side's (in place: none sent) */
        t.vtypes_user[q] = ip || !stypes ? MPI_DATATYPE_NULL : stypes[q];
        t.vtypes_user[n + q] = rtypes ? rtypes[q] : MPI_DATATYPE_NULL;
    }
    for (int q = 0; q < 2 * n; q++)
        t.vtypes[q] = pmpi_dt_keep(t.vtypes_user[q]);
    return pcoll_new(&t, comm, req);
}

BOBCAT_EXPORT int PCOLL(Gatherv)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                                 const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info,
                                 MPI_Request *req)
{
    PMPI_GUARD();
    return pc_gatherv_init(sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), rtype, root, comm, info,
                           req);
}

BOBCAT_EXPORT int PCOLL(Scatterv)(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                                  void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *req)
{
    PMPI_GUARD();
    return pc_scatterv_init(sbuf, pc_vec_int(scounts), pc_vec_int(displs), stype, rbuf, rcount, rtype, root, comm, info,
                            req);
}

BOBCAT_EXPORT int PCOLL(Allgatherv)(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                                    const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                                    MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_allgatherv_init(sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), rtype, comm, info,
                              req);
}

BOBCAT_EXPORT int PCOLL(Alltoallv)(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                                   void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_alltoallvw_init(0, sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), &stype, rbuf, pc_vec_int(rcounts),
                              pc_vec_int(rdispls), &rtype, comm, info, req);
}

BOBCAT_EXPORT int PCOLL(Alltoallw)(const void *sbuf, const int scounts[], const int sdispls[],
                                   const MPI_Datatype stypes[], void *rbuf, const int rcounts[], const int rdispls[],
                                   const MPI_Datatype rtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_alltoallvw_init(1, sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), stypes, rbuf, pc_vec_int(rcounts),
                              pc_vec_int(rdispls), rtypes, comm, info, req);
}

#else /* no persistent collectives in this MPI: no call has q->pers or q->pinit set */
static nb_comm_t *pers_node_channel(struct pcoll *p) { return (void)p, NULL; }
static void pers_init_now(struct pcoll *p) { (void)p; }
static int pers_inited(struct pcoll *p) { return (void)p, 1; }
static void pers_busy(struct pcoll *p, int busy) { (void)p, (void)busy; }
static int pers_lead_start(nb_req_t *q) { return (void)q, MPI_ERR_INTERN; }
static void pers_lead_done(nb_req_t *q) { (void)q; }
static int pers_tag(const struct pcoll *p) { return (void)p, 0; }
#endif
