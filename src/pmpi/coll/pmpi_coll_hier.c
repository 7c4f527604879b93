/* pmpi_coll_hier: the data-movement collectives across nodes on packed bytes (as Cray's MPICH2
 * on SMARTMAP): a node phase in shared memory (coll/, the node's leader gathers or distributes),
 * and the leaders' phase through PMPI_* on the private leaders' communicator (its collectives, or
 * point-to-point where only some leaders know whether a block passes INT_MAX bytes: lead_exchange).
 * The data of the
 * leaders' phase is in node order (pmpi_comm_t.pos): nodes in leaders_comm order, comm rank order
 * inside a node. A communicator whose ranks are interleaved across nodes is handled by permuting
 * pieces between comm order and node order where the data is whole (at the root, or after the
 * node broadcast), so every communicator takes the same path.
 *
 * Every call here is collective over the communicator and every branch is taken from facts all
 * ranks of a node share (root, node sizes, the byte counts the caller says are shared). */
#include "pmpi_coll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Peers wait for this rank in shared memory or in the leaders' phase: no way back. */
#define hier_alloc(bytes) util_alloc_or_die((bytes), "a collective's leaders' phase")

static int node_index_of(const pmpi_comm_t *pc, int r)
{
    for (int i = 0; i < pc->node_size; i++)
        if (pc->node_ranks[i] == r)
            return i;
    return -1;
}

/* int counts of the leaders' phase: a byte count past INT_MAX cannot travel as MPI_BYTE in one call
 * (where every rank knows the sizes, pmpi_coll_move.c takes the real MPI for such a call; where
 * they do not, the leaders take lead_exchange). */
static int icount(size_t bytes)
{
    if (bytes > INT_MAX) {
        util_error("a %zu-byte leaders' phase exceeds the int count of the MPI call", bytes);
        abort();
    }
    return (int)bytes;
}

static void leaders_layout(const pmpi_comm_t *pc, const size_t *nodebytes, int *cnt, int *dsp)
{
    size_t off = 0;
    for (int k = 0; k < pc->nnodes; k++) {
        cnt[k] = icount(nodebytes[k]);
        dsp[k] = icount(off);
        off += nodebytes[k];
    }
}

/* ---- the leaders' exchange of blocks of any size ---------------------------------------------
 * The real MPI's v calls take int counts and displacements of MPI_BYTE, so a node's block past
 * INT_MAX bytes, or one lying past INT_MAX bytes into the buffer, cannot be named in them (the
 * large-count _c forms are MPICH's alone). Where a call may need that, the leaders exchange the
 * blocks point-to-point on the leaders' communicator instead (the layer's own: no other
 * point-to-point travels on it, and a collective's messages never match it), each block one
 * element of a datatype of 1 GiB runs, every receive posted before any send, then the waits. A
 * block that is not exchanged is NO_BLOCK; a zero-byte block is still a message, so a leader whose
 * count disagrees with its peer's (an erroneous program) gets the MPI's truncation error, never a
 * stray message. */
#define NO_BLOCK SIZE_MAX
#define LEAD_RUN ((size_t)1 << 30)

MPI_Datatype hier_bytes_type(size_t off, size_t bytes, int *count_p, int *disp_p)
{
    size_t run = pmpi_layer.opt ? (size_t)pmpi_layer.opt->COLL_LEAD_RUN : 0;
    if (!run && bytes <= INT_MAX && off <= INT_MAX) {
        *count_p = (int)bytes;
        *disp_p = (int)off;
        return MPI_BYTE;
    }
    run = run && run < LEAD_RUN ? run : LEAD_RUN;
    size_t nrun = (bytes + run - 1) / run;
    if (nrun > INT_MAX) {
        util_error("a %zu-byte leaders' block needs %zu runs of %zu bytes (BOBCAT_COLL_LEAD_RUN)", bytes, nrun,
                   run);
        abort(); /* (the other leaders wait for this block) */
    }
    int runs = (int)nrun;
    int *len = hier_alloc((size_t)(runs ? runs : 1) * sizeof(int));
    MPI_Aint *at = hier_alloc((size_t)(runs ? runs : 1) * sizeof(MPI_Aint));
    for (int i = 0; i < runs; i++) {
        size_t o = (size_t)i * run;
        at[i] = (MPI_Aint)(off + o);
        len[i] = (int)(bytes - o < run ? bytes - o : run);
    }
    MPI_Datatype t = MPI_DATATYPE_NULL;
    if (PMPI_Type_create_hindexed(runs, len, at, MPI_BYTE, &t) != MPI_SUCCESS ||
        PMPI_Type_commit(&t) != MPI_SUCCESS) {
        util_error("cannot make a datatype for a %zu-byte leaders' phase", bytes);
        abort(); /* (the other leaders wait for this block) */
    }
    free(len);
    free(at);
    *count_p = 1;
    *disp_p = 0;
    return t;
}

/* Block k of mine to leader k (sp[k], sb[k] bytes) and block k from leader k into rp[k] (rb[k]
 * bytes), leaders_comm order, my own index skipped (the caller copies its own block). */
static void lead_exchange(const pmpi_comm_t *pc, char *const *sp, const size_t *sb, char *const *rp,
                          const size_t *rb)
{
    int N = pc->nnodes, myk = pc->leader_rank[pc->rank], nq = 0;
    MPI_Request *q = hier_alloc(2 * (size_t)N * sizeof(MPI_Request));
    MPI_Datatype *t = hier_alloc(2 * (size_t)N * sizeof(MPI_Datatype));
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < N; k++) {
            const size_t *b = pass ? sb : rb;
            if (k == myk || !b || b[k] == NO_BLOCK)
                continue;
            int n, zero;
            t[nq] = hier_bytes_type(0, b[k], &n, &zero);
            if (pass)
                pc_lead_isend(pc, sp[k], n, t[nq], k, &q[nq]);
            else
                pc_lead_irecv(pc, rp[k], n, t[nq], k, &q[nq]);
            nq++;
        }
    pc_lead_waitall(pc, nq, q);
    for (int i = 0; i < nq; i++)
        if (t[i] != MPI_BYTE)
            PMPI_Type_free(&t[i]);
    free(q);
    free(t);
}

/* n blocks of NO_BLOCK (then the caller names the ones exchanged). */
static size_t *no_blocks(int n)
{
    size_t *b = hier_alloc((size_t)n * sizeof(size_t));
    for (int i = 0; i < n; i++)
        b[i] = NO_BLOCK;
    return b;
}

/* The leaders' phase of a rooted call, Gatherv (gather: the node blocks into `all` at the root's
 * leader, lroot) or Scatterv (from it): the MPI's call for a uniform one (Gather, Scatter: its
 * callers take the real MPI for a whole past INT_MAX bytes, as every rank can tell), else
 * lead_exchange (the other leaders cannot know whether the root's layout fits). nb: the node totals
 * (at the root's leader); nbuf, mytot: my node's block. */
static void lead_rooted(pmpi_comm_t *pc, int lroot, int gather, int uniform, const size_t *nb, char *all,
                        char *nbuf, size_t mytot)
{
    int N = pc->nnodes, at_root = pc->leader_rank[pc->rank] == lroot;
    if (uniform) {
        int *cnt = NULL, *dsp = NULL;
        if (at_root) {
            cnt = hier_alloc(2 * (size_t)N * sizeof(int));
            dsp = cnt + N;
            leaders_layout(pc, nb, cnt, dsp);
        }
        if (gather)
            pc_lead_gatherv(pc, nbuf, icount(mytot), all, cnt, dsp, lroot);
        else
            pc_lead_scatterv(pc, all, cnt, dsp, nbuf, icount(mytot), lroot);
        free(cnt);
        return;
    }
    char **bp = hier_alloc((size_t)N * sizeof(char *));
    size_t *bb = no_blocks(N), off = 0;
    for (int k = 0; at_root && k < N; off += nb[k], k++) {
        bp[k] = all + off;
        bb[k] = nb[k];
        if (k == lroot && mytot)
            memcpy(gather ? all + off : nbuf, gather ? nbuf : all + off, mytot);
    }
    if (!at_root)
        bp[lroot] = nbuf, bb[lroot] = mytot;
    int sends = gather ? !at_root : at_root;
    lead_exchange(pc, sends ? bp : NULL, sends ? bb : NULL, sends ? NULL : bp, sends ? NULL : bb);
    free(bp);
    free(bb);
}

/* Pieces of byte counts bytes[] (comm order) between comm order (prefix offsets) and node order:
 * to_node copies comm -> node, else node -> comm. */
static void permute(const pmpi_comm_t *pc, const size_t *bytes, char *comm_order, char *node_order, int to_node)
{
    size_t *coff = hier_alloc((size_t)pc->size * sizeof(size_t)), off = 0;
    for (int r = 0; r < pc->size; r++)
        coff[r] = off, off += bytes[r];
    off = 0;
    for (int p = 0; p < pc->size; p++) {
        int r = pc->by_pos[p];
        if (to_node)
            memcpy(node_order + off, comm_order + coff[r], bytes[r]);
        else
            memcpy(comm_order + coff[r], node_order + off, bytes[r]);
        off += bytes[r];
    }
    free(coff);
}

static void to_node_order(const pmpi_comm_t *pc, const size_t *bytes, const char *comm_order, char *node_order)
{
    permute(pc, bytes, (char *)comm_order, node_order, 1);
}

static void to_comm_order(const pmpi_comm_t *pc, const size_t *bytes, const char *node_order, char *comm_order)
{
    permute(pc, bytes, comm_order, (char *)node_order, 0);
}

/* The byte count of every rank of my node at its leader (mb, node_size entries; NULL elsewhere). */
static size_t *members_bytes(pmpi_comm_t *pc, size_t mybytes, int uniform)
{
    int leader = pc->leader == pc->rank;
    size_t *mb = leader ? hier_alloc((size_t)pc->node_size * sizeof(size_t)) : NULL;
    if (uniform) {
        for (int i = 0; leader && i < pc->node_size; i++)
            mb[i] = mybytes;
    } else {
        size_t v = mybytes;
        coll_gather(&pc->cn, 0, &v, sizeof v, mb);
    }
    return mb;
}

static size_t prefix(const size_t *b, int n, size_t *displ)
{
    size_t off = 0;
    for (int i = 0; i < n; i++)
        displ[i] = off, off += b[i];
    return off;
}

/* Node totals (leaders_comm order) from every rank's byte count (comm order). */
static size_t *node_totals(const pmpi_comm_t *pc, const size_t *bytes)
{
    size_t *nb = hier_alloc((size_t)pc->nnodes * sizeof(size_t));
    memset(nb, 0, (size_t)pc->nnodes * sizeof(size_t));
    for (int r = 0; r < pc->size; r++)
        nb[pc->leader_rank[r]] += bytes[r];
    return nb;
}

/* On the root's node, the root hands its leader the node totals (non-uniform calls only: in a
 * uniform one every rank computes them). Returns them on the root and its leader. */
static size_t *root_node_totals(pmpi_comm_t *pc, int root, const size_t *bytes, size_t uniform_bytes, int uniform)
{
    int me = pc->rank, leader = pc->leader == me, N = pc->nnodes;
    if (uniform) {
        size_t *nb = hier_alloc((size_t)N * sizeof(size_t));
        for (int k = 0; k < N; k++)
            nb[k] = (size_t)pc->node_count[k] * uniform_bytes;
        return nb;
    }
    if (pc->node[me] != pc->node[root])
        return NULL;
    size_t *nb = me == root ? node_totals(pc, bytes) : hier_alloc((size_t)N * sizeof(size_t));
    if (root != pc->leader)
        coll_bcast(&pc->cn, node_index_of(pc, root), nb, (size_t)N * sizeof(size_t));
    if (me != root && !leader) {
        free(nb);
        nb = NULL;
    }
    return nb;
}

/* The byte counts of a uniform call at the root (who needs them for the permutation). */
static size_t *uniform_bytes(const pmpi_comm_t *pc, size_t b)
{
    size_t *u = hier_alloc((size_t)pc->size * sizeof(size_t));
    for (int r = 0; r < pc->size; r++)
        u[r] = b;
    return u;
}

void hier_gatherv(pmpi_comm_t *pc, int root, const void *piece, size_t mybytes, const size_t *bytes, int uniform,
                  void *out)
{
    size_t *ub = uniform && pc->rank == root ? uniform_bytes(pc, mybytes) : NULL;
    if (ub)
        bytes = ub;
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes;
    int lroot = pc->leader_rank[root], on_root_node = pc->node[me] == pc->node[root];
    /* 1. My node's pieces meet at its leader, in node order. */
    size_t *mb = members_bytes(pc, mybytes, uniform), *md = NULL, mytot = 0;
    char *nbuf = NULL;
    if (leader) {
        md = hier_alloc((size_t)ns * sizeof(size_t));
        mytot = prefix(mb, ns, md);
        nbuf = hier_alloc(mytot);
    }
    coll_gatherv(&pc->cn, 0, piece, mybytes, nbuf, mb, md);
    /* 2. The leaders gather the node blocks at the root's leader (lead_rooted). */
    size_t *nb = root_node_totals(pc, root, bytes, mybytes, uniform), total = 0;
    char *all = NULL;
    if (leader) {
        if (pc->leader_rank[me] == lroot) {
            for (int k = 0; k < N; k++)
                total += nb[k];
            all = hier_alloc(total);
        }
        lead_rooted(pc, lroot, 1, uniform, nb, all, nbuf, mytot);
    }
    /* 3. The root's leader hands the node-ordered whole to the root, which puts it in comm order. */
    if (on_root_node) {
        if (root != pc->leader) {
            size_t *hb = hier_alloc((size_t)ns * sizeof(size_t)), *hd = hier_alloc((size_t)ns * sizeof(size_t));
            memset(hb, 0, (size_t)ns * sizeof(size_t));
            memset(hd, 0, (size_t)ns * sizeof(size_t));
            if (me == root)
                for (int r = 0; r < pc->size; r++)
                    total += bytes[r];
            hb[node_index_of(pc, root)] = total; /* known on the leader (node totals) and the root */
            char *got = me == root ? hier_alloc(total) : NULL;
            coll_scatterv(&pc->cn, 0, all, hb, hd, got, me == root ? total : 0);
            if (me == root) {
                free(all);
                all = got;
            }
            free(hb);
            free(hd);
        }
        if (me == root)
            to_comm_order(pc, bytes, all, out);
    }
    free(all);
    free(nb);
    free(nbuf);
    free(mb);
    free(md);
    free(ub);
}

void hier_scatterv(pmpi_comm_t *pc, int root, const void *in, const size_t *bytes, int uniform, size_t mybytes,
                   void *piece)
{
    size_t *ub = uniform && pc->rank == root ? uniform_bytes(pc, mybytes) : NULL;
    if (ub)
        bytes = ub;
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes;
    int lroot = pc->leader_rank[root], on_root_node = pc->node[me] == pc->node[root];
    size_t *nb = root_node_totals(pc, root, bytes, mybytes, uniform), total = 0;
    char *all = NULL;
    /* 1. The root puts the pieces in node order and hands them to its leader. */
    if (on_root_node && (me == root || leader)) {
        for (int k = 0; k < N; k++)
            total += nb[k];
    }
    if (me == root) {
        all = hier_alloc(total);
        to_node_order(pc, bytes, in, all);
    }
    if (on_root_node && root != pc->leader) {
        size_t *hb = hier_alloc((size_t)ns * sizeof(size_t)), *hd = hier_alloc((size_t)ns * sizeof(size_t));
        memset(hb, 0, (size_t)ns * sizeof(size_t));
        memset(hd, 0, (size_t)ns * sizeof(size_t));
        hb[node_index_of(pc, root)] = total;
        char *got = leader ? hier_alloc(total) : NULL;
        coll_gatherv(&pc->cn, 0, all, me == root ? total : 0, got, hb, hd);
        if (leader)
            all = got;
        else if (me == root) {
            free(all);
            all = NULL;
        }
        free(hb);
        free(hd);
    }
    /* 2. The leaders scatter node blocks; 3. each leader hands its node's ranks their pieces. */
    size_t *mb = members_bytes(pc, mybytes, uniform), *md = NULL, mytot = 0;
    char *nbuf = NULL;
    if (leader) {
        md = hier_alloc((size_t)ns * sizeof(size_t));
        mytot = prefix(mb, ns, md);
        nbuf = hier_alloc(mytot);
        lead_rooted(pc, lroot, 0, uniform, nb, all, nbuf, mytot);
    }
    coll_scatterv(&pc->cn, 0, nbuf, mb, md, piece, mybytes);
    free(all);
    free(nb);
    free(nbuf);
    free(mb);
    free(md);
    free(ub);
}

void hier_allgatherv(pmpi_comm_t *pc, const void *piece, const size_t *bytes, void *out)
{
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes;
    size_t *mb = hier_alloc(2 * (size_t)ns * sizeof(size_t)), *md = mb + ns;
    for (int i = 0; i < ns; i++)
        mb[i] = bytes[pc->node_ranks[i]];
    prefix(mb, ns, md);
    size_t *nb = node_totals(pc, bytes), total = 0;
    for (int k = 0; k < N; k++)
        total += nb[k];
    char *all = hier_alloc(total);
    if (leader) {
        /* The node's pieces land in the leader's whole at the node's place; the leaders then fill
         * in the other nodes' blocks around it. */
        int *cnt = hier_alloc(2 * (size_t)N * sizeof(int)), *dsp = cnt + N;
        leaders_layout(pc, nb, cnt, dsp);
        coll_gatherv(&pc->cn, 0, piece, bytes[me], all + dsp[pc->leader_rank[me]], mb, md);
        pc_lead_allgatherv(pc, all, cnt, dsp);
        free(cnt);
    } else {
        coll_gatherv(&pc->cn, 0, piece, bytes[me], NULL, mb, md);
    }
    /* Every rank of the node reads the whole from its leader. */
    coll_bcast(&pc->cn, 0, all, total);
    to_comm_order(pc, bytes, all, out);
    free(all);
    free(nb);
    free(mb);
}

void hier_alltoall(pmpi_comm_t *pc, const void *in, size_t b, void *out)
{
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes, n = pc->size;
    int myk = pc->leader_rank[me];
    /* 1. Every rank of the node learns every node mate's send buffer (pointers, in place). */
    uint64_t *ptr = hier_alloc((size_t)ns * sizeof(uint64_t));
    size_t *pb = hier_alloc(2 * (size_t)ns * sizeof(size_t)), *pd = pb + ns;
    memset(pb, 0, 2 * (size_t)ns * sizeof(size_t));
    for (int i = 0; i < ns; i++)
        pb[i] = sizeof(uint64_t), pd[i] = (size_t)i * sizeof(uint64_t);
    ptr[pc->node_rank] = (uint64_t)(uintptr_t)in;
    coll_allgatherv(&pc->cn, NULL, ptr, pb, pd);
    const char **src = hier_alloc((size_t)ns * sizeof(char *)); /* node rank i's send buffer, in my view */
    for (int i = 0; i < ns; i++) {
        int r = pc->node_ranks[i];
        src[i] = r == me ? in : pmpi_peer_ptr(pc, r, (const void *)(uintptr_t)ptr[i]);
    }
    /* 2. Node-local blocks straight from the node mates' buffers (one copy). */
    for (int i = 0; i < ns; i++)
        memcpy((char *)out + (size_t)pc->node_ranks[i] * b, src[i] + (size_t)me * b, b);
    /* 3. The leader packs the off-node blocks per node pair straight from the node mates' buffers,
     * [destination j of node k][source i of mine], and the leaders exchange them. */
    int *rdsp = hier_alloc((size_t)N * sizeof(int));
    for (int k = 0, off = 0; k < N; k++) {
        rdsp[k] = off;
        off = k == myk ? off : icount((size_t)off + (size_t)ns * (size_t)pc->node_count[k] * b);
    }
    uint64_t rptr = 0;
    char *rbuf = NULL;
    if (leader) {
        int *scnt = hier_alloc(3 * (size_t)N * sizeof(int)), *sdsp = scnt + N, *rcnt = sdsp + N;
        size_t far = (size_t)(n - ns) * (size_t)ns * b, off = 0;
        char *sbuf = hier_alloc(far);
        rbuf = hier_alloc(far);
        for (int k = 0; k < N; k++) {
            sdsp[k] = icount(off);
            rcnt[k] = k == myk ? 0 : icount((size_t)ns * (size_t)pc->node_count[k] * b);
            if (k != myk)
                for (int p = pc->node_first[k]; p < pc->node_first[k] + pc->node_count[k]; p++)
                    for (int i = 0; i < ns; i++, off += b)
                        memcpy(sbuf + off, src[i] + (size_t)pc->by_pos[p] * b, b);
            scnt[k] = icount(off - (size_t)sdsp[k]);
        }
        pc_lead_alltoallv(pc, sbuf, scnt, sdsp, rbuf, rcnt, rdsp);
        free(sbuf);
        free(scnt);
        rptr = (uint64_t)(uintptr_t)rbuf;
    }
    /* 4. Every rank reads its off-node blocks from the leader's receive buffer: from node m,
     * [my node rank][source i of m]. */
    coll_bcast(&pc->cn, 0, &rptr, sizeof rptr);
    const char *got = leader ? rbuf : pmpi_peer_ptr(pc, pc->leader, (const void *)(uintptr_t)rptr);
    for (int r = 0; r < n; r++) {
        int m = pc->leader_rank[r];
        if (m == myk)
            continue;
        size_t i = (size_t)(pc->pos[r] - pc->node_first[m]);
        memcpy((char *)out + (size_t)r * b,
               got + (size_t)rdsp[m] + ((size_t)pc->node_rank * (size_t)pc->node_count[m] + i) * b, b);
    }
    /* 5. Nobody's send buffer or the leader's receive buffer is needed past this point. */
    coll_barrier(&pc->cn);
    free(rbuf);
    free(rdsp);
    free(src);
    free(pb);
    free(ptr);
}

void hier_alltoallv(pmpi_comm_t *pc, const void *const *sblk, const size_t *sbytes, void *const *rblk,
                    const size_t *rbytes)
{
    int me = pc->rank, leader = pc->leader == me, ns = pc->node_size, N = pc->nnodes, n = pc->size;
    int myk = pc->leader_rank[me];
    /* 1. Every rank of the node learns every node mate's table: per comm rank r, where the mate's
     * block for r lies, its length, and how much the mate expects from r. */
    uint64_t *tab = hier_alloc(3 * (size_t)n * sizeof(uint64_t));
    for (int r = 0; r < n; r++) {
        tab[3 * r] = (uint64_t)(uintptr_t)sblk[r];
        tab[3 * r + 1] = sbytes[r];
        tab[3 * r + 2] = rbytes[r];
    }
    uint64_t *ptr = hier_alloc((size_t)ns * sizeof(uint64_t));
    size_t *pb = hier_alloc(2 * (size_t)ns * sizeof(size_t)), *pd = pb + ns;
    for (int i = 0; i < ns; i++)
        pb[i] = sizeof(uint64_t), pd[i] = (size_t)i * sizeof(uint64_t);
    ptr[pc->node_rank] = (uint64_t)(uintptr_t)tab;
    coll_allgatherv(&pc->cn, NULL, ptr, pb, pd);
    const uint64_t **mt = hier_alloc((size_t)ns * sizeof(uint64_t *)); /* node rank i's table, my view */
    for (int i = 0; i < ns; i++) {
        int q = pc->node_ranks[i];
        mt[i] = q == me ? tab : pmpi_peer_ptr(pc, q, (const void *)(uintptr_t)ptr[i]);
    }
#define BLK(i, r) ((const char *)(mt[i][3 * (size_t)(r)] ? (pc->node_ranks[i] == me ? (const char *)(uintptr_t)mt[i][3 * (size_t)(r)] \
                   : (const char *)pmpi_peer_ptr(pc, pc->node_ranks[i], (const void *)(uintptr_t)mt[i][3 * (size_t)(r)])) : NULL))
    /* 2. Node-local blocks straight from the node mates' buffers (one copy). */
    for (int i = 0; i < ns; i++) {
        int q = pc->node_ranks[i];
        size_t b = (size_t)mt[i][3 * (size_t)me + 1];
        if (b > rbytes[q])
            b = rbytes[q];
        if (b && (q != me || sblk[me] != rblk[me]))
            util_copy(rblk[q], BLK(i, me), b);
    }
    /* 3. The leader packs the off-node blocks per node pair straight from the node mates' buffers,
     * [destination p of node k][source i of mine], and the leaders exchange them; what a leader
     * receives from node m is [destination i of mine][source j of m], sized from the mates' tables. */
    size_t *rdsp = hier_alloc((size_t)N * sizeof(size_t)), rfar = 0;
    for (int k = 0; k < N; k++) {
        rdsp[k] = rfar;
        if (k == myk)
            continue;
        for (int i = 0; i < ns; i++)
            for (int p = pc->node_first[k]; p < pc->node_first[k] + pc->node_count[k]; p++)
                rfar += (size_t)mt[i][3 * (size_t)pc->by_pos[p] + 2];
    }
    uint64_t rptr = 0;
    char *rbuf = NULL;
    if (leader) {
        size_t *sd = hier_alloc(3 * (size_t)N * sizeof(size_t)), *sc = sd + N, *rc = sc + N;
        size_t far = 0, off = 0;
        for (int k = 0; k < N; k++) {
            if (k == myk)
                continue;
            for (int p = pc->node_first[k]; p < pc->node_first[k] + pc->node_count[k]; p++)
                for (int i = 0; i < ns; i++)
                    far += (size_t)mt[i][3 * (size_t)pc->by_pos[p] + 1];
        }
        char *sbuf = hier_alloc(far ? far : 1);
        rbuf = hier_alloc(rfar ? rfar : 1);
        for (int k = 0; k < N; k++) {
            sd[k] = off;
            rc[k] = k == myk ? 0 : (k + 1 < N ? rdsp[k + 1] : rfar) - rdsp[k];
            if (k != myk)
                for (int p = pc->node_first[k]; p < pc->node_first[k] + pc->node_count[k]; p++)
                    for (int i = 0; i < ns; i++) {
                        int d = pc->by_pos[p];
                        size_t b = (size_t)mt[i][3 * (size_t)d + 1];
                        if (b)
                            util_copy(sbuf + off, BLK(i, d), b);
                        off += b;
                    }
            sc[k] = off - sd[k];
        }
        /* Always lead_exchange: a leader knows its own node pairs' bytes only, so no rank could
         * tell that every leader's fit the MPI's int counts (and the MPIs' own Alltoallv is such
         * a linear exchange too). */
        char **sp = hier_alloc(2 * (size_t)N * sizeof(char *)), **rp = sp + N;
        for (int k = 0; k < N; k++)
            sp[k] = sbuf + sd[k], rp[k] = rbuf + rdsp[k];
        lead_exchange(pc, sp, sc, rp, rc);
        free(sp);
        free(sbuf);
        free(sd);
        rptr = (uint64_t)(uintptr_t)rbuf;
    }
#undef BLK
    /* 4. Every rank reads its off-node blocks from the leader's receive buffer: from node m, after
     * the blocks of the node mates before me, source j of m at the sum of what I expect from the
     * sources of m before it. */
    coll_bcast(&pc->cn, 0, &rptr, sizeof rptr);
    const char *got = leader ? rbuf : pmpi_peer_ptr(pc, pc->leader, (const void *)(uintptr_t)rptr);
    for (int m = 0; m < N; m++) {
        if (m == myk)
            continue;
        size_t off = (size_t)rdsp[m];
        for (int i = 0; i < pc->node_rank; i++)
            for (int p = pc->node_first[m]; p < pc->node_first[m] + pc->node_count[m]; p++)
                off += (size_t)mt[i][3 * (size_t)pc->by_pos[p] + 2];
        for (int p = pc->node_first[m]; p < pc->node_first[m] + pc->node_count[m]; p++) {
            int j = pc->by_pos[p];
            if (rbytes[j])
                util_copy(rblk[j], got + off, rbytes[j]);
            off += rbytes[j];
        }
    }
    /* 5. Nobody's send buffer or table, nor the leader's receive buffer, is needed past this point. */
    coll_barrier(&pc->cn);
    free(rbuf);
    free(rdsp);
    free(mt);
    free(pb);
    free(ptr);
    free(tab);
}
