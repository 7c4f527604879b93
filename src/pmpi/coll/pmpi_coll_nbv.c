/* pmpi_coll_nbv: the nonblocking v/w forms (MPI_Igatherv, Iscatterv, Iallgatherv, Ialltoallv,
 * Ialltoallw) on the ring of pmpi_coll_nb.c, as requests of bobcat's: coll_nb.c's GATHERV, SCATTERV,
 * ALLGATHERV and ALLTOALLV calls, whose units any rank making progress may do (docs/mpi.md,
 * "Nonblocking and persistent collectives").
 *
 * Which calls run here, from facts every rank shares: the communicator has a ring (one node, at
 * least two ranks, registered) and BOBCAT_COLL_NBC is not mpi. Every valid datatype is handled (the
 * blocks move as packed bytes, and a type that is not dense is packed or unpacked by the rank that
 * owns the block), so no rank's datatypes decide anything another rank would have to know: as the
 * blocking Alltoallw (pmpi_coll_alltoallv.c), a block's type is looked at only where the block is not
 * empty (programs pass MPI_DATATYPE_NULL there). Only arguments the standard calls erroneous
 * (negative counts, a null type or count array where data moves, MPI_IN_PLACE where it is not
 * allowed, one buffer for both sides) go to the real MPI, which reports them. On communicators of
 * one rank the real MPI does the call (why.setup). Across nodes every form runs hierarchically:
 * Iallgatherv as Iallgather (iallgatherv_hier: every rank knows every count), the others by each
 * node's leader from its node's tables ("across nodes" below: MPI makes a count significant only
 * at the rank that passes it and the root, so no leader knows its node's sizes by itself).
 *
 * Where the blocks lie, a local decision per block: a block of a dense type inside the segment is
 * read or written where it lies; any other (stack, static data, a non-contiguous type) is packed
 * into, or lands in, one heap block of the call's and is unpacked into the user's memory when the
 * request completes; the request holds those datatypes until then. The same heap block holds the
 * call's table (coll_nb.c, "Tables"): this rank's counts and addresses, so node mates reach them
 * whatever memory the program's arrays are in. A rank's own piece or block is copied at the start,
 * without the ring. Ialltoallv/w in place: the blocks peers read are copies (this rank's unit
 * overwrites them meanwhile).
 *
 * The arrays arrive as pc_vec_t (pmpi_coll.h): the int forms' and MPI 4.0's large-count forms'
 * (MPI_Igatherv_c, ..., pmpi_coll_count.c) alike, and the persistent forms' 64-bit copies. */
#include "pmpi_coll.h"
#include "../base/pmpi_dt.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static pmpi_stat_t st_igatherv = {.name = "Igatherv", .alg_names = {"ring", "hier"}};
static pmpi_stat_t st_iscatterv = {.name = "Iscatterv", .alg_names = {"ring", "hier"}};
static pmpi_stat_t st_iallgatherv = {.name = "Iallgatherv", .alg_names = {"ring", "hier"}};
static pmpi_stat_t st_ialltoallv = {.name = "Ialltoallv", .alg_names = {"ring", "hier"}};
static pmpi_stat_t st_ialltoallw = {.name = "Ialltoallw", .alg_names = {"ring", "hier"}};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stat_t *all[] = {&st_igatherv, &st_iscatterv, &st_iallgatherv, &st_ialltoallv, &st_ialltoallw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pmpi_stats_register(all[i]);
}

static void *xmalloc(size_t bytes) { return util_alloc_or_die(bytes ? bytes : 1, "a nonblocking v/w collective"); }

/* ---- a call's blocks and their staging ---------------------------------------------------------- */

/* One block of this rank's side: where the program has it, and where the call reads or writes it. */
typedef struct {
    char *at;        /* the program's memory (buffer + displacement) */
    MPI_Count count; /* elements */
    int ti;          /* the index of their type in the call's table of types */
    int copy;      /* a send block peers must read from a copy (in place) */
    size_t bytes;
    char *use;     /* set by nbv_place: at itself, or its place in the call's heap block */
} blk_t;

/* A staged receive block, unpacked at completion. */
typedef struct {
    const char *src;
    char *at;
    MPI_Count count;
    int ti;
} job_t;

typedef struct {
    int ntypes, njobs, staged;
    MPI_Datatype *user, *held; /* the program's types; held (MPI_DATATYPE_NULL: not needed) */
    pc_dt_t *d;
    job_t *jobs;
    char *mem;                 /* heap (the segment): the table, packed sends, staged receives */
    uint64_t *tab;
    struct lead *L;            /* across nodes, a leader's work (below); NULL elsewhere */
} nbv_t;

/* An empty block's type: not looked at. */
static const pc_dt_t none = {.size = 0, .lb = 0, .extent = 0, .dense = 1, .predefined = 1};
/* Packed bytes (MPI_BYTE). */
static const pc_dt_t packed_bytes = {.size = 1, .lb = 0, .extent = 1, .dense = 1, .predefined = 1};

/* The facts of a side of count elements of dt (none when empty); -1 if erroneous. */
static int side(MPI_Count count, MPI_Datatype dt, pc_dt_t *d_p)
{
    if (count < 0)
        return -1;
    if (!count) {
        *d_p = none;
        return 0;
    }
    return pc_dt(dt, d_p);
}

/* One type for n counts (a v form's side): looked at if any count is not 0; -1 if erroneous. */
static int vside(pc_vec_t counts, pc_vec_t displs, int n, MPI_Datatype dt, pc_dt_t *d_p)
{
    if (!counts.p || !displs.p)
        return -1;
    int any = 0;
    for (int r = 0; r < n; r++) {
        long long c = pc_at(counts, r);
        if (c < 0)
            return -1;
        any |= c > 0;
    }
    return side(any, dt, d_p);
}

static nbv_t *nbv_new(int njobs_max, int ntypes, const MPI_Datatype *types, const pc_dt_t *d)
{
    nbv_t *v = xmalloc(sizeof *v + (size_t)ntypes * (2 * sizeof(MPI_Datatype) + sizeof(pc_dt_t)) +
                       (size_t)njobs_max * sizeof(job_t));
    v->ntypes = ntypes;
    v->njobs = v->staged = 0;
    v->d = (pc_dt_t *)(v + 1);
    v->jobs = (job_t *)(v->d + ntypes);
    v->user = (MPI_Datatype *)(v->jobs + njobs_max);
    v->held = v->user + ntypes;
    memcpy(v->d, d, sizeof(pc_dt_t) * (size_t)ntypes);
    memcpy(v->user, types, sizeof(MPI_Datatype) * (size_t)ntypes);
    for (int i = 0; i < ntypes; i++)
        v->held[i] = MPI_DATATYPE_NULL;
    v->mem = NULL;
    v->tab = NULL;
    v->L = NULL;
    return v;
}

#define ROUND(b) (((b) + 15) & ~(size_t)15)

/* A block peers reach where it lies: dense, and all of it in the segment. */
static int direct(const blk_t *b, const pc_dt_t *d)
{
    return d->dense && smap_is_shared(b->at) && smap_is_shared(b->at + b->bytes - 1);
}

/* Place the send blocks (peers read them) and the receive blocks (peers write them), and make the
 * call's heap block: a table of tabwords words, then the staged blocks. */
static void nbv_place(nbv_t *v, blk_t *s, int ns, blk_t *r, int nr, size_t tabwords)
{
    size_t need = ROUND(tabwords * sizeof(uint64_t));
    for (int i = 0; i < ns; i++) {
        s[i].use = NULL;
        if (!s[i].bytes)
            continue;
        if (!s[i].copy && direct(&s[i], &v->d[s[i].ti]))
            s[i].use = s[i].at;
        else
            need += ROUND(s[i].bytes);
    }
    for (int i = 0; i < nr; i++) {
        r[i].use = NULL;
        if (!r[i].bytes)
            continue;
        if (direct(&r[i], &v->d[r[i].ti]))
            r[i].use = r[i].at;
        else
            need += ROUND(r[i].bytes);
    }
    v->mem = xmalloc(need);
    v->tab = (uint64_t *)v->mem;
    char *p = v->mem + ROUND(tabwords * sizeof(uint64_t));
    for (int i = 0; i < ns; i++)
        if (s[i].bytes && !s[i].use) {
            pc_pack(s[i].at, s[i].count, v->user[s[i].ti], &v->d[s[i].ti], p);
            s[i].use = p;
            p += ROUND(s[i].bytes);
            v->staged = 1;
        }
    for (int i = 0; i < nr; i++)
        if (r[i].bytes && !r[i].use) {
            int ti = r[i].ti;
            if (v->held[ti] == MPI_DATATYPE_NULL && (v->held[ti] = pmpi_dt_hold(v->user[ti])) == MPI_DATATYPE_NULL) {
                util_error("could not hold a datatype for a nonblocking v/w collective");
                abort();
            }
            v->jobs[v->njobs++] = (job_t){p, r[i].at, r[i].count, ti};
            r[i].use = p;
            p += ROUND(r[i].bytes);
            v->staged = 1;
        }
}

/* The request completed: lay the staged receive blocks out, let go of the types and the memory. */
static void nbv_done(void *st)
{
    nbv_t *v = st;
    for (int i = 0; i < v->njobs; i++) {
        const job_t *j = &v->jobs[i];
        pc_unpack(j->src, j->count, v->held[j->ti], &v->d[j->ti], j->at);
    }
    for (int i = 0; i < v->ntypes; i++)
        if (v->held[i] != MPI_DATATYPE_NULL) {
            pmpi_dt_release(v->held[i], v->user[i]);
            v->held[i] = MPI_DATATYPE_NULL;
        }
    free(v->mem);
    v->mem = NULL;
}

static void lead_types_free(struct lead *L);

static void nbv_release(void *st)
{
    nbv_t *v = st;
    if (v->L)
        lead_types_free(v->L); /* (a call that never finished: its leaders' types) */
    free(v->L);
    free(v);
}

static const pc_nbv_ops_t nbv_ops = {nbv_done, nbv_release};

/* This rank's own piece or block, from its send side to its receive side, at the start. */
static void own_copy(const void *sat, MPI_Count sc, MPI_Datatype st, const pc_dt_t *sd, void *rat, MPI_Count rc,
                     MPI_Datatype rt, const pc_dt_t *rd)
{
    size_t sb = (size_t)sc * (size_t)sd->size, rb = (size_t)rc * (size_t)rd->size, b = sb < rb ? sb : rb;
    if (!b)
        return;
    if (sd->dense && rd->dense) {
        memcpy(rat, sat, b);
        return;
    }
    char *t = xmalloc(sb);
    pc_pack(sat, sc, st, sd, t);
    if (rd->dense)
        memcpy(rat, t, b);
    else
        pmpi_dt_unpack(t, (MPI_Count)b, rat, rc, rt);
    free(t);
}

static blk_t *blocks(int n)
{
    blk_t *b = xmalloc(sizeof(blk_t) * (size_t)n);
    memset(b, 0, sizeof(blk_t) * (size_t)n);
    return b;
}

static int go(struct nb_comm *ring, coll_nb_t *a, nbv_t *v, pmpi_stat_t *st, size_t bytes, MPI_Comm comm, MPI_Request *req)
{
    a->tab = v->tab;
    pmpi_stat_path(st, v->staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 0);
    return pc_nbv_start(ring, a, &nbv_ops, v, comm, req);
}

static void to_mpi(pmpi_stat_t *st, pmpi_why_t why)
{
    pmpi_stat_mpi(st, why, 0);
    pmpi_real_requests = 1;
}

/* ---- across nodes: the leader does its node's part through the windows ------------------------------ */

/* The forms whose counts only each rank knows (Igatherv, Iscatterv, Ialltoallv/w) across nodes
 * (pc_nbv_hier_start): every rank writes its table as on one node, and its node's leader, once it
 * has the tables' addresses, moves every block that stays on the node from where it lies to where it
 * lands, packs what leaves the node per destination node (in node order: sending rank, then
 * receiving rank), runs the leaders' call through the real MPI on packed bytes, and unpacks what
 * arrives into its node's ranks' blocks. The node's ranks wait for their leader's release, so their
 * tables and blocks stay put meanwhile. Both sides' counts come from the tables of the ranks the
 * standard makes them significant at, so every leader knows its own counts in the leaders' call. */
typedef struct lead {
    int n, nn, ns, myk;
    int rootk, ri;                       /* Igatherv/Iscatterv: the root's node, and the root's
                                            node rank if that is mine (else -1) */
    int *by_pos, *first, *count, *mates; /* node order; node k's first place and ranks; my node's
                                            comm ranks by node rank (copied: the communicator may be
                                            freed before the call completes) */
    int *cnt;                            /* the leaders' call's counts and displacements (4 nn) */
    MPI_Datatype *types;                 /* Ialltoallw's: send then receive types (2 nn), or NULL */
    char *S, *R;                         /* its packed bytes */
} lead_t;

static lead_t *lead_new(const pmpi_comm_t *pc, int root)
{
    int n = pc->size, nn = pc->nnodes, ns = pc->node_size;
    lead_t *L = xmalloc(sizeof *L + sizeof(int) * ((size_t)n + 6 * (size_t)nn + (size_t)ns));
    L->n = n, L->nn = nn, L->ns = ns, L->myk = pc->leader_rank[pc->rank];
    L->rootk = pc->leader_rank[root];
    L->ri = L->rootk == L->myk ? pmpi_comm_node_rank(pc, root) : -1;
    L->by_pos = (int *)(L + 1);
    L->first = L->by_pos + n;
    L->count = L->first + nn;
    L->cnt = L->count + nn;
    L->mates = L->cnt + 4 * nn;
    memcpy(L->by_pos, pc->by_pos, sizeof(int) * (size_t)n);
    memcpy(L->first, pc->node_first, sizeof(int) * (size_t)nn);
    memcpy(L->count, pc->node_count, sizeof(int) * (size_t)nn);
    memcpy(L->mates, pc->node_ranks, sizeof(int) * (size_t)ns);
    L->types = NULL;
    L->S = L->R = NULL;
    return L;
}

/* Node rank i's table, and a pointer of its (0: none) in my view. */
static const uint64_t *tab_of(const uint64_t *tabs, int i) { return (const uint64_t *)(uintptr_t)tabs[i]; }
static char *at_of(uint64_t w, const uintptr_t *base, int i) { return w ? (char *)(uintptr_t)(w + base[i]) : NULL; }

static void copy_bytes(char *to, const char *from, size_t b)
{
    if (b)
        memcpy(to, from, b);
}

/* Ialltoallv/w (tables as on one node: t[q] where my block for q lies, t[n + q] its bytes, t[2n + q]
 * where q's block for me lands, t[3n + q] the bytes I expect). The leaders' call is MPI_Ialltoallw,
 * so that a block past INT_MAX bytes, or one lying past INT_MAX bytes into the packed bytes, is one
 * element of a datatype of its own (hier_bytes_type): each leader names its blocks as they fit, and
 * the type signatures (so many bytes) match whatever the other leader chose. */
static void lead_types_free(struct lead *L)
{
    for (int i = 0; L->types && i < 2 * L->nn; i++)
        if (L->types[i] != MPI_BYTE)
            PMPI_Type_free(&L->types[i]);
    free(L->types);
    L->types = NULL;
}

/* Every leaders' block empty (MPI_BYTE, count 0) until the start names its own; the types of a
 * persistent call's previous start are gone already (its finish freed them). */
static void lead_prepare(lead_t *L)
{
    lead_types_free(L);
    L->types = xmalloc(2 * (size_t)L->nn * sizeof(MPI_Datatype));
    for (int i = 0; i < 2 * L->nn; i++)
        L->types[i] = MPI_BYTE;
    memset(L->cnt, 0, 4 * (size_t)L->nn * sizeof(int));
}

static void a2av_start(void *st, const uint64_t *tabs, const uintptr_t *base, pc_lead_nb_args_t *w)
{
    lead_t *L = ((nbv_t *)st)->L;
    int n = L->n, nn = L->nn, ns = L->ns;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) {
            const uint64_t *ti = tab_of(tabs, i), *tj = tab_of(tabs, j);
            int qi = L->mates[i], qj = L->mates[j];
            size_t b = ti[n + qj] < tj[3 * n + qi] ? ti[n + qj] : tj[3 * n + qi];
            if (i != j)
                copy_bytes(at_of(tj[2 * n + qi], base, j), at_of(ti[qj], base, i), b);
        }
    int *sc = L->cnt, *sd = sc + nn, *rc = sd + nn, *rd = rc + nn;
    lead_prepare(L);
    MPI_Datatype *ty = L->types;
    size_t so = 0, ro = 0;
    for (int k = 0; k < nn; k++) {
        size_t a = 0, b = 0;
        for (int x = L->first[k]; x < L->first[k] + L->count[k] && k != L->myk; x++)
            for (int i = 0; i < ns; i++) {
                a += tab_of(tabs, i)[n + L->by_pos[x]];
                b += tab_of(tabs, i)[3 * n + L->by_pos[x]];
            }
        ty[k] = hier_bytes_type(so, a, &sc[k], &sd[k]);
        ty[nn + k] = hier_bytes_type(ro, b, &rc[k], &rd[k]);
        so += a, ro += b;
    }
    char *o = L->S = xmalloc(so);
    L->R = xmalloc(ro);
    for (int k = 0; k < nn; k++) /* sending rank, then receiving rank */
        for (int i = 0; i < ns && k != L->myk; i++)
            for (int x = L->first[k]; x < L->first[k] + L->count[k]; x++) {
                const uint64_t *ti = tab_of(tabs, i);
                int p = L->by_pos[x];
                copy_bytes(o, at_of(ti[p], base, i), ti[n + p]);
                o += ti[n + p];
            }
    *w = (pc_lead_nb_args_t){.kind = COLL_NB_ALLTOALLV, .buf = L->S, .cnt = sc, .dsp = sd, .st = ty,
                             .out = L->R, .rcnt = rc, .rdsp = rd, .rt = ty + nn};
}

static void a2av_finish(void *st, const uint64_t *tabs, const uintptr_t *base)
{
    lead_t *L = ((nbv_t *)st)->L;
    int n = L->n, nn = L->nn, ns = L->ns;
    const char *o = L->R;
    for (int k = 0; k < nn; k++)
        for (int x = L->first[k]; x < L->first[k] + L->count[k] && k != L->myk; x++)
            for (int j = 0; j < ns; j++) {
                const uint64_t *tj = tab_of(tabs, j);
                int p = L->by_pos[x];
                copy_bytes(at_of(tj[2 * n + p], base, j), o, tj[3 * n + p]);
                o += tj[3 * n + p];
            }
    free(L->S);
    free(L->R);
    L->S = L->R = NULL;
    lead_types_free(L);
}

static const pc_nbv_lead_t a2av_lead = {a2av_start, a2av_finish};

/* Igatherv and Iscatterv: a rank's table is t[0] = its own piece's bytes (sent or received; 0 at
 * the root, whose own piece is copied at the start), t[1] = where it lies or lands; the root's also
 * t[2 + q] = rank q's piece's bytes, t[2 + n + q] = where it lands or lies. The root's node's leader
 * moves its node's pieces between the root's blocks and its mates' directly; every other leader
 * moves its node's pieces as one block to or from the root's node's leader, in node order. The
 * leaders' call is MPI_Ialltoallw, every block but those empty, as in Ialltoallv/w: only the root's
 * leader knows where the blocks lie, so no other leader could tell that an Igatherv's int counts
 * and displacements would fit, while a datatype per block names any size (the MPIs send no
 * message for an empty block, so it moves what MPI_Igatherv would). */
static unsigned long long rooted_node_bytes(const lead_t *L, const uint64_t *R, int k)
{
    unsigned long long b = 0;
    for (int x = L->first[k]; x < L->first[k] + L->count[k]; x++)
        b += R[2 + L->by_pos[x]];
    return b;
}

/* The root's node's leader: the mates' pieces and the root's blocks, then the leaders' counts. */
static size_t rooted_root_node(lead_t *L, const uint64_t *tabs, const uintptr_t *base, int gather)
{
    int n = L->n, nn = L->nn, ri = L->ri;
    const uint64_t *R = tab_of(tabs, ri);
    for (int i = 0; i < L->ns; i++) {
        const uint64_t *t = tab_of(tabs, i);
        int q = L->mates[i];
        size_t b = t[0] < R[2 + q] ? t[0] : R[2 + q];
        if (i == ri)
            continue;
        if (gather)
            copy_bytes(at_of(R[2 + n + q], base, ri), at_of(t[1], base, i), b);
        else
            copy_bytes(at_of(t[1], base, i), at_of(R[2 + n + q], base, ri), b);
    }
    /* the leaders' blocks: Igatherv's receive side, Iscatterv's send side */
    int *c = L->cnt + (gather ? 2 * nn : 0), *d = c + nn;
    MPI_Datatype *ty = L->types + (gather ? nn : 0);
    size_t o = 0;
    for (int k = 0; k < nn; k++) {
        size_t b = k == L->myk ? 0 : rooted_node_bytes(L, R, k);
        ty[k] = hier_bytes_type(o, b, &c[k], &d[k]);
        o += b;
    }
    return o;
}

/* Another node's leader: its node's pieces' bytes together. */
static size_t rooted_my_node(const lead_t *L, const uint64_t *tabs)
{
    size_t o = 0;
    for (int i = 0; i < L->ns; i++)
        o += tab_of(tabs, i)[0];
    return o;
}

/* The leaders' exchange (a side without data points its buffer at the counts: never read). */
static void rooted_call(lead_t *L, pc_lead_nb_args_t *w)
{
    int nn = L->nn, *sc = L->cnt, *sd = sc + nn, *rc = sd + nn, *rd = rc + nn;
    void *sb = L->S ? (void *)L->S : (void *)L->cnt, *rb = L->R ? (void *)L->R : (void *)L->cnt;
    *w = (pc_lead_nb_args_t){.kind = COLL_NB_ALLTOALLV, .buf = sb, .cnt = sc, .dsp = sd, .st = L->types,
                             .out = rb, .rcnt = rc, .rdsp = rd, .rt = L->types + nn};
}

/* The root's node's pieces move in or out of the root's blocks in node order (k != mine). */
static void rooted_pack(const lead_t *L, const uint64_t *tabs, const uintptr_t *base, char *o, int gather)
{
    int n = L->n, ri = L->ri;
    const uint64_t *R = tab_of(tabs, ri);
    for (int k = 0; k < L->nn; k++)
        for (int x = L->first[k]; x < L->first[k] + L->count[k] && k != L->myk; x++) {
            int p = L->by_pos[x];
            if (gather)
                copy_bytes(at_of(R[2 + n + p], base, ri), o, R[2 + p]);
            else
                copy_bytes(o, at_of(R[2 + n + p], base, ri), R[2 + p]);
            o += R[2 + p];
        }
}

/* My node's pieces, in node rank order, to or from one block. */
static void mates_pack(const lead_t *L, const uint64_t *tabs, const uintptr_t *base, char *o, int in)
{
    for (int i = 0; i < L->ns; i++) {
        const uint64_t *t = tab_of(tabs, i);
        if (in)
            copy_bytes(o, at_of(t[1], base, i), t[0]);
        else
            copy_bytes(at_of(t[1], base, i), o, t[0]);
        o += t[0];
    }
}

static void gatherv_start(void *st, const uint64_t *tabs, const uintptr_t *base, pc_lead_nb_args_t *w)
{
    lead_t *L = ((nbv_t *)st)->L;
    lead_prepare(L);
    if (L->ri >= 0) {
        L->R = xmalloc(rooted_root_node(L, tabs, base, 1));
    } else {
        size_t b = rooted_my_node(L, tabs);
        L->S = xmalloc(b);
        mates_pack(L, tabs, base, L->S, 1);
        L->types[L->rootk] = hier_bytes_type(0, b, &L->cnt[L->rootk], &L->cnt[L->nn + L->rootk]);
    }
    rooted_call(L, w);
}

static void rooted_finish(void *st, const uint64_t *tabs, const uintptr_t *base)
{
    lead_t *L = ((nbv_t *)st)->L;
    if (L->ri >= 0 && L->R) /* Igatherv's root's node */
        rooted_pack(L, tabs, base, L->R, 1);
    else if (L->ri < 0 && L->R) /* Iscatterv's other nodes */
        mates_pack(L, tabs, base, L->R, 0);
    free(L->S);
    free(L->R);
    L->S = L->R = NULL;
    lead_types_free(L);
}

static void scatterv_start(void *st, const uint64_t *tabs, const uintptr_t *base, pc_lead_nb_args_t *w)
{
    lead_t *L = ((nbv_t *)st)->L;
    lead_prepare(L);
    if (L->ri >= 0) {
        L->S = xmalloc(rooted_root_node(L, tabs, base, 0));
        rooted_pack(L, tabs, base, L->S, 0);
    } else {
        int nn = L->nn;
        size_t b = rooted_my_node(L, tabs);
        L->R = xmalloc(b);
        L->types[nn + L->rootk] = hier_bytes_type(0, b, &L->cnt[2 * nn + L->rootk], &L->cnt[3 * nn + L->rootk]);
    }
    rooted_call(L, w);
}

static const pc_nbv_lead_t gatherv_lead = {gatherv_start, rooted_finish};
static const pc_nbv_lead_t scatterv_lead = {scatterv_start, rooted_finish};

/* Start a call across nodes whose table is written. */
static int hier_go(pmpi_comm_t *pc, struct nb_comm *node, nbv_t *v, const pc_nbv_lead_t *lead, int root,
                   pmpi_stat_t *st, size_t bytes, MPI_Comm comm, MPI_Request *req)
{
    if (pc->leader == pc->rank)
        v->L = lead_new(pc, root);
    pmpi_stat_path(st, v->staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, bytes, 1);
    return pc_nbv_hier_start(pc, node, v->tab, lead, &nbv_ops, v, comm, req);
}

/* ---- the entry points ----------------------------------------------------------------------------- */

int pc_igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    pc_dt_t sd = none, rd = none;
    struct nb_comm *node;
    int hier;
    struct nb_comm *ring = pc_nbv_ring(comm, &pc, &why, &node, &hier);
    int in_place = sbuf == MPI_IN_PLACE;
    if (ring || hier) {
        int n = pc->size, me = pc->rank;
        int bad = root < 0 || root >= n || (me != root && in_place);
        if (!bad && !in_place)
            bad = side(scount, stype, &sd) != 0;
        if (!bad && me == root)
            bad = vside(rcounts, displs, n, rtype, &rd) != 0;
        if (!bad && me == root && !in_place && sbuf == rbuf && (size_t)scount * (size_t)sd.size > 0)
            return pc_alias_error(&st_igatherv, comm, req);
        if (bad)
            ring = NULL, hier = 0, why = PMPI_WHY_VARIANT; /* erroneous: the real MPI reports it */
    }
    if (!ring && !hier) {
        to_mpi(&st_igatherv, why);
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_Igatherv_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm, req);
#endif
        return PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, root, comm, req);
    }
    int n = pc->size, me = pc->rank;
    coll_nb_t a = {.kind = COLL_NB_GATHERV, .root = root};
    if (me != root) {
        nbv_t *v = nbv_new(0, 1, &stype, &sd);
        blk_t s = {(char *)sbuf, scount, 0, 0, (size_t)scount * (size_t)sd.size, NULL};
        nbv_place(v, &s, 1, NULL, 0, hier ? 2 : 0);
        if (hier) {
            v->tab[0] = s.bytes;
            v->tab[1] = (uint64_t)(uintptr_t)s.use;
            return hier_go(pc, node, v, &gatherv_lead, root, &st_igatherv, s.bytes, comm, req);
        }
        a.sbuf = s.use;
        a.bytes = s.bytes;
        return go(ring, &a, v, &st_igatherv, s.bytes, comm, req);
    }
    nbv_t *v = nbv_new(n, 1, &rtype, &rd);
    blk_t *r = blocks(n);
    size_t total = 0;
    for (int q = 0; q < n; q++) {
        char *at = (char *)rbuf + (MPI_Aint)pc_at(displs, q) * rd.extent;
        MPI_Count c = pc_at(rcounts, q);
        if (q != root)
            r[q] = (blk_t){at, c, 0, 0, (size_t)c * (size_t)rd.size, NULL};
        total += (size_t)c * (size_t)rd.size;
    }
    size_t h = hier ? 2 : 0; /* across nodes: my own piece's words first (none) */
    nbv_place(v, NULL, 0, r, n, h + 2 * (size_t)n);
    for (int q = 0; q < n; q++) {
        v->tab[h + q] = r[q].bytes;
        v->tab[h + n + q] = (uint64_t)(uintptr_t)r[q].use;
    }
    free(r);
    if (!in_place)
        own_copy(sbuf, scount, stype, &sd, (char *)rbuf + (MPI_Aint)pc_at(displs, root) * rd.extent,
                 pc_at(rcounts, root), rtype, &rd);
    if (hier) {
        v->tab[0] = v->tab[1] = 0;
        return hier_go(pc, node, v, &gatherv_lead, root, &st_igatherv, total, comm, req);
    }
    return go(ring, &a, v, &st_igatherv, total, comm, req);
}

int pc_iscatterv(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    pc_dt_t sd = none, rd = none;
    struct nb_comm *node;
    int hier;
    struct nb_comm *ring = pc_nbv_ring(comm, &pc, &why, &node, &hier);
    int in_place = rbuf == MPI_IN_PLACE;
    if (ring || hier) {
        int n = pc->size, me = pc->rank;
        int bad = root < 0 || root >= n || (me != root && in_place);
        if (!bad && !in_place)
            bad = side(rcount, rtype, &rd) != 0;
        if (!bad && me == root)
            bad = vside(scounts, displs, n, stype, &sd) != 0;
        if (!bad && me == root && !in_place && sbuf == rbuf && (size_t)rcount * (size_t)rd.size > 0)
            return pc_alias_error(&st_iscatterv, comm, req);
        if (bad)
            ring = NULL, hier = 0, why = PMPI_WHY_VARIANT;
    }
    if (!ring && !hier) {
        to_mpi(&st_iscatterv, why);
#if MPI_VERSION >= 4
        if (pc_vec_wide(scounts))
            return PMPI_Iscatterv_c(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm, req);
#endif
        return PMPI_Iscatterv(sbuf, scounts.p, displs.p, stype, rbuf, rcount, rtype, root, comm, req);
    }
    int n = pc->size, me = pc->rank;
    coll_nb_t a = {.kind = COLL_NB_SCATTERV, .root = root};
    if (me != root) {
        nbv_t *v = nbv_new(1, 1, &rtype, &rd);
        blk_t r = {rbuf, rcount, 0, 0, (size_t)rcount * (size_t)rd.size, NULL};
        nbv_place(v, NULL, 0, &r, 1, hier ? 2 : 0);
        if (hier) {
            v->tab[0] = r.bytes;
            v->tab[1] = (uint64_t)(uintptr_t)r.use;
            return hier_go(pc, node, v, &scatterv_lead, root, &st_iscatterv, r.bytes, comm, req);
        }
        a.rbuf = r.use;
        a.bytes = r.bytes;
        return go(ring, &a, v, &st_iscatterv, r.bytes, comm, req);
    }
    nbv_t *v = nbv_new(0, 1, &stype, &sd);
    blk_t *s = blocks(n);
    size_t total = 0;
    for (int q = 0; q < n; q++) {
        char *at = (char *)sbuf + (MPI_Aint)pc_at(displs, q) * sd.extent;
        MPI_Count c = pc_at(scounts, q);
        if (q != root)
            s[q] = (blk_t){at, c, 0, 0, (size_t)c * (size_t)sd.size, NULL};
        total += (size_t)c * (size_t)sd.size;
    }
    size_t h = hier ? 2 : 0; /* across nodes: my own piece's words first (none) */
    nbv_place(v, s, n, NULL, 0, h + 2 * (size_t)n);
    for (int q = 0; q < n; q++) {
        v->tab[h + q] = s[q].bytes;
        v->tab[h + n + q] = (uint64_t)(uintptr_t)s[q].use;
    }
    free(s);
    if (!in_place)
        own_copy((const char *)sbuf + (MPI_Aint)pc_at(displs, root) * sd.extent, pc_at(scounts, root), stype, &sd, rbuf,
                 rcount, rtype, &rd);
    if (hier) {
        v->tab[0] = v->tab[1] = 0;
        return hier_go(pc, node, v, &scatterv_lead, root, &st_iscatterv, total, comm, req);
    }
    return go(ring, &a, v, &st_iscatterv, total, comm, req);
}

/* Iallgatherv across nodes (pmpi_coll_nb.c's pc_nbv_iallgatherv_hier): the pieces as packed bytes
 * in node order (W; every rank knows every count, so every rank knows where each piece lies in it).
 * W is the program's result itself when the pieces lie packed in rank order there (displacements
 * the running sums of the counts, ranks grouped by node) and it is dense and in the segment; else a
 * block of the call's heap block, unpacked into the program's result when the request completes.
 * d: the receive side's facts, then the send side's. */
static int iallgatherv_hier(pmpi_comm_t *pc, struct nb_comm *node, const void *sbuf, int scount, MPI_Datatype stype,
                            void *rbuf, pc_vec_t rcounts, pc_vec_t displs, MPI_Datatype rtype, const pc_dt_t *d,
                            MPI_Comm comm, MPI_Request *req)
{
    int n = pc->size, me = pc->rank, ns = pc->node_size, in_place = sbuf == MPI_IN_PLACE;
    int lead = pc->leader == me;
    size_t *off = xmalloc(sizeof(size_t) * (size_t)n); /* comm rank -> its piece's offset in W */
    size_t total = 0;
    long long elems = 0;
    int packed = pc->blocked;
    for (int i = 0; i < n; i++) { /* node order */
        int q = pc->by_pos[i];
        off[q] = total;
        total += (size_t)pc_at(rcounts, q) * (size_t)d[0].size;
        packed &= pc_at(displs, q) == elems;
        elems += pc_at(rcounts, q);
    }
    MPI_Datatype types[2] = {rtype, stype};
    nbv_t *v = nbv_new(n, 2, types, d);
    char *mine = (char *)rbuf + (MPI_Aint)pc_at(displs, me) * d[0].extent;
    MPI_Count cme = pc_at(rcounts, me);
    blk_t s = in_place ? (blk_t){mine, cme, 0, 0, (size_t)cme * (size_t)d[0].size, NULL}
                       : (blk_t){(char *)sbuf, scount, 1, 0, (size_t)scount * (size_t)d[1].size, NULL};
    blk_t whole = {rbuf, elems, 0, 0, total, NULL};
    size_t tabwords = lead ? 2 * (size_t)ns : 0;
    char *W;
    if (packed) { /* W is the result, staged as one block if need be */
        nbv_place(v, lead ? NULL : &s, lead ? 0 : 1, &whole, 1, tabwords);
        W = whole.use;
    } else { /* W in the heap block (after the table and a staged piece), each piece unpacked at the end */
        nbv_place(v, lead ? NULL : &s, lead ? 0 : 1, NULL, 0, tabwords + ROUND(total) / sizeof(uint64_t));
        W = (char *)(v->tab + tabwords);
        v->staged |= total > 0;
        if (total && (v->held[0] = pmpi_dt_hold(rtype)) == MPI_DATATYPE_NULL) {
            util_error("could not hold a datatype for a nonblocking v/w collective");
            abort();
        }
        for (int q = 0; q < n; q++)
            if (pc_at(rcounts, q))
                v->jobs[v->njobs++] = (job_t){W + off[q], (char *)rbuf + (MPI_Aint)pc_at(displs, q) * d[0].extent,
                                              pc_at(rcounts, q), 0};
    }
    int *lcd = NULL;
    if (lead) {
        /* my piece into W now; my mates' as my table says */
        char *at = W + off[me];
        size_t room = (size_t)cme * (size_t)d[0].size;
        if (at != s.at && room <= INT_MAX)
            own_copy(s.at, s.count, types[s.ti], &v->d[s.ti], at, (int)room, MPI_BYTE, &packed_bytes);
        for (int i = 0; i < ns; i++) {
            int q = pc->node_ranks[i];
            v->tab[i] = q == me ? 0 : (size_t)pc_at(rcounts, q) * (size_t)d[0].size;
            v->tab[ns + i] = q == me ? 0 : (uint64_t)(uintptr_t)(W + off[q]);
        }
        int nn = pc->nnodes;
        lcd = xmalloc(2 * sizeof(int) * (size_t)nn);
        for (int k = 0; k < nn; k++) {
            int first = pc->node_first[k], last = first + pc->node_count[k];
            size_t end = last < n ? off[pc->by_pos[last]] : total;
            lcd[k] = (int)(end - off[pc->by_pos[first]]);
            lcd[nn + k] = (int)off[pc->by_pos[first]];
        }
    }
    free(off);
    pmpi_stat_path(&st_iallgatherv, v->staged ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, total, 1);
    return pc_nbv_iallgatherv_hier(pc, node, lead ? NULL : s.use, lead ? 0 : s.bytes, lead ? v->tab : NULL, W, total,
                                   lcd, &nbv_ops, v, comm, req);
}

int pc_iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    pmpi_comm_t *pc;
    pmpi_why_t why;
    pc_dt_t d[2] = {none, none}; /* the receive side's, the send side's */
    struct nb_comm *node;
    int hier;
    struct nb_comm *ring = pc_nbv_ring(comm, &pc, &why, &node, &hier);
    int in_place = sbuf == MPI_IN_PLACE;
    if (ring || hier) {
        int bad = rbuf == MPI_IN_PLACE || vside(rcounts, displs, pc->size, rtype, &d[0]) != 0;
        if (!bad && !in_place) /* (aliasing rbuf or my own block in it: erroneous, as Iallgather) */
            bad = side(scount, stype, &d[1]) != 0 ||
                  ((size_t)scount * (size_t)d[1].size > 0 &&
                   (sbuf == rbuf || sbuf == (const char *)rbuf + (MPI_Aint)pc_at(displs, pc->rank) * d[0].extent));
        if (!bad && hier) { /* the leaders' counts and displacements are ints of bytes */
            long long all = 0;
            for (int q = 0; q < pc->size; q++)
                all += pc_at(rcounts, q) * (long long)d[0].size;
            bad = all > INT_MAX;
        }
        if (bad)
            ring = NULL, hier = 0, why = PMPI_WHY_VARIANT;
    }
    if (hier)
        return iallgatherv_hier(pc, node, sbuf, scount, stype, rbuf, rcounts, displs, rtype, d, comm, req);
    if (!ring) {
        to_mpi(&st_iallgatherv, why);
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts))
            return PMPI_Iallgatherv_c(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm, req);
#endif
        return PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts.p, displs.p, rtype, comm, req);
    }
    int n = pc->size, me = pc->rank;
    MPI_Datatype types[2] = {rtype, stype};
    nbv_t *v = nbv_new(n, 2, types, d);
    blk_t *r = blocks(n), s;
    size_t total = 0;
    for (int q = 0; q < n; q++) {
        char *at = (char *)rbuf + (MPI_Aint)pc_at(displs, q) * d[0].extent;
        MPI_Count c = pc_at(rcounts, q);
        if (q != me)
            r[q] = (blk_t){at, c, 0, 0, (size_t)c * (size_t)d[0].size, NULL};
        total += (size_t)c * (size_t)d[0].size;
    }
    char *mine = (char *)rbuf + (MPI_Aint)pc_at(displs, me) * d[0].extent;
    MPI_Count cme = pc_at(rcounts, me);
    if (in_place)
        s = (blk_t){mine, cme, 0, 0, (size_t)cme * (size_t)d[0].size, NULL};
    else
        s = (blk_t){(char *)sbuf, scount, 1, 0, (size_t)scount * (size_t)d[1].size, NULL};
    nbv_place(v, &s, 1, r, n, 2 * (size_t)n);
    for (int q = 0; q < n; q++) {
        v->tab[q] = r[q].bytes;
        v->tab[n + q] = (uint64_t)(uintptr_t)r[q].use;
    }
    free(r);
    if (!in_place)
        own_copy(sbuf, scount, stype, &d[1], mine, cme, rtype, &d[0]);
    coll_nb_t a = {.kind = COLL_NB_ALLGATHERV, .sbuf = s.use, .bytes = s.bytes};
    return go(ring, &a, v, &st_iallgatherv, total, comm, req);
}

/* Ialltoallv (w = 0: one type a side, displacements in its extents) and Ialltoallw (a type per
 * block, displacements in bytes). Types: receive side's at [0, nt), send side's at [nt, 2nt). */
int pc_ialltoallvw(int w, const void *sbuf, pc_vec_t scounts, pc_vec_t sdispls, const MPI_Datatype *stypes, void *rbuf,
                   pc_vec_t rcounts, pc_vec_t rdispls, const MPI_Datatype *rtypes, MPI_Comm comm, MPI_Request *req)
{
    pmpi_stat_t *st = w ? &st_ialltoallw : &st_ialltoallv;
    pmpi_comm_t *pc;
    pmpi_why_t why;
    struct nb_comm *node;
    int hier;
    struct nb_comm *ring = pc_nbv_ring(comm, &pc, &why, &node, &hier);
    int in_place = sbuf == MPI_IN_PLACE, n = ring || hier ? pc->size : 0, nt = w ? n : 1;
    pc_dt_t *d = NULL;
    MPI_Datatype *types = NULL;
    if (ring || hier) {
        d = xmalloc(2 * (size_t)nt * sizeof(pc_dt_t));
        types = xmalloc(2 * (size_t)nt * sizeof(MPI_Datatype));
        int bad = rbuf == MPI_IN_PLACE || !rcounts.p || !rdispls.p || (!in_place && (!scounts.p || !sdispls.p));
        for (int k = 0; k < 2 && !bad; k++) { /* k = 0 the receive side, 1 the send side */
            pc_vec_t cnt = k && !in_place ? scounts : rcounts, dsp = k && !in_place ? sdispls : rdispls;
            const MPI_Datatype *ty = k && !in_place ? stypes : rtypes;
            if (w) {
                for (int q = 0; q < n && !bad; q++) {
                    types[k * nt + q] = pc_at(cnt, q) ? ty[q] : MPI_DATATYPE_NULL;
                    bad = side(pc_at(cnt, q), ty[q], &d[k * nt + q]) != 0;
                }
            } else {
                types[k] = ty[0];
                bad = vside(cnt, dsp, n, ty[0], &d[k]) != 0;
            }
        }
        if (!bad && !in_place && sbuf == rbuf)
            for (int q = 0; q < n && !bad; q++) /* the same buffer twice: erroneous unless nothing moves */
                bad = (size_t)pc_at(scounts, q) * d[nt + (w ? q : 0)].size +
                          (size_t)pc_at(rcounts, q) * d[w ? q : 0].size > 0;
        if (bad) {
            ring = NULL, hier = 0, why = PMPI_WHY_VARIANT;
            free(d);
            free(types);
        }
    }
    if (!ring && !hier) {
        to_mpi(st, why);
        const void *sb = in_place ? MPI_IN_PLACE : sbuf;
#if MPI_VERSION >= 4
        if (pc_vec_wide(rcounts)) {
            const MPI_Count *sc = scounts.p, *rc = rcounts.p;
            const MPI_Aint *sd = sdispls.p, *rd = rdispls.p;
            return w ? PMPI_Ialltoallw_c(sb, sc, sd, stypes, rbuf, rc, rd, rtypes, comm, req)
                     : PMPI_Ialltoallv_c(sb, sc, sd, stypes[0], rbuf, rc, rd, rtypes[0], comm, req);
        }
#endif
        const int *sc = scounts.p, *sd = sdispls.p, *rc = rcounts.p, *rd = rdispls.p;
        return w ? PMPI_Ialltoallw(sb, sc, sd, stypes, rbuf, rc, rd, rtypes, comm, req)
                 : PMPI_Ialltoallv(sb, sc, sd, stypes[0], rbuf, rc, rd, rtypes[0], comm, req);
    }
    int me = pc->rank;
    const char *sbase = in_place ? rbuf : sbuf;
    pc_vec_t sc = in_place ? rcounts : scounts, sdsp = in_place ? rdispls : sdispls;
    nbv_t *v = nbv_new(n, 2 * nt, types, d);
    blk_t *s = blocks(2 * n), *r = s + n;
    size_t total = 0;
    for (int q = 0; q < n; q++) {
        int rti = w ? q : 0, sti = nt + rti;
        const pc_dt_t *rd = &d[rti], *sd = &d[sti];
        MPI_Aint rdq = (MPI_Aint)pc_at(rdispls, q), sdq = (MPI_Aint)pc_at(sdsp, q);
        char *rat = (char *)rbuf + (w ? rdq : rdq * rd->extent);
        char *sat = (char *)sbase + (w ? sdq : sdq * sd->extent);
        MPI_Count scq = pc_at(sc, q), rcq = pc_at(rcounts, q);
        size_t sb = (size_t)scq * (size_t)sd->size;
        total += sb;
        if (q == me) {
            if (!in_place)
                own_copy(sat, scq, types[sti], sd, rat, rcq, types[rti], rd);
            continue;
        }
        s[q] = (blk_t){sat, scq, sti, in_place, sb, NULL};
        r[q] = (blk_t){rat, rcq, rti, 0, (size_t)rcq * (size_t)rd->size, NULL};
    }
    nbv_place(v, s, n, r, n, 4 * (size_t)n);
    for (int q = 0; q < n; q++) {
        v->tab[q] = (uint64_t)(uintptr_t)s[q].use;
        v->tab[n + q] = s[q].bytes;
        v->tab[2 * n + q] = (uint64_t)(uintptr_t)r[q].use;
        v->tab[3 * n + q] = r[q].bytes;
    }
    free(s);
    free(d);
    free(types);
    if (hier)
        return hier_go(pc, node, v, &a2av_lead, 0, st, total, comm, req);
    coll_nb_t a = {.kind = COLL_NB_ALLTOALLV};
    return go(ring, &a, v, st, total, comm, req);
}

BOBCAT_EXPORT int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                               const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_igatherv(sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), rtype, root, comm, req);
}

BOBCAT_EXPORT int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                                void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_iscatterv(sbuf, pc_vec_int(scounts), pc_vec_int(displs), stype, rbuf, rcount, rtype, root, comm, req);
}

BOBCAT_EXPORT int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                                  const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_iallgatherv(sbuf, scount, stype, rbuf, pc_vec_int(rcounts), pc_vec_int(displs), rtype, comm, req);
}

BOBCAT_EXPORT int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                                 void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
                                 MPI_Request *req)
{
    PMPI_GUARD();
    return pc_ialltoallvw(0, sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), &stype, rbuf, pc_vec_int(rcounts),
                          pc_vec_int(rdispls), &rtype, comm, req);
}

BOBCAT_EXPORT int MPI_Ialltoallw(const void *sbuf, const int scounts[], const int sdispls[],
                                 const MPI_Datatype stypes[], void *rbuf, const int rcounts[], const int rdispls[],
                                 const MPI_Datatype rtypes[], MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return pc_ialltoallvw(1, sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), stypes, rbuf, pc_vec_int(rcounts),
                          pc_vec_int(rdispls), rtypes, comm, req);
}

/* A persistent v/w collective's start (pmpi_coll_nb.c): the nonblocking call on its channel, with
 * the 64-bit copies of the arrays its init made. */
static int persist_start(const pc_nbv_args_t *a, MPI_Comm comm, MPI_Request *req)
{
    pc_vec_t sc = pc_vec_count(a->scnt), sd = pc_vec_aint(a->sdsp), rc = pc_vec_count(a->rcnt),
             rd = pc_vec_aint(a->rdsp);
    switch (a->kind) {
    case COLL_NB_GATHERV: return pc_igatherv(a->sbuf, a->scount, a->sdt, a->rbuf, rc, rd, a->rdt, a->root, comm, req);
    case COLL_NB_SCATTERV: return pc_iscatterv(a->sbuf, sc, sd, a->sdt, a->rbuf, a->rcount, a->rdt, a->root, comm, req);
    case COLL_NB_ALLGATHERV: return pc_iallgatherv(a->sbuf, a->scount, a->sdt, a->rbuf, rc, rd, a->rdt, comm, req);
    default:
        return pc_ialltoallvw(a->w, a->sbuf, sc, sd, a->w ? a->stypes : &a->sdt, a->rbuf, rc, rd,
                              a->w ? a->rtypes : &a->rdt, comm, req);
    }
}

__attribute__((constructor)) static void persist_hook(void) { pc_nbv_persist_start = persist_start; }
