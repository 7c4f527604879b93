/* mp_nbcv: the nonblocking v/w collectives (MPI_Igatherv, Iscatterv, Iallgatherv, Ialltoallv,
 * Ialltoallw) against values this test computes itself, on every rank, and (through run_compare.sh)
 * against the real MPI's own result: every rank writes a digest of every receive buffer to
 * <prefix>.<rank> (the last argument).
 *
 * Cases, on the world, a reversed world and the plan node's ranks: uneven counts with zeros, blocks
 * placed in non-monotone order with gaps (the gaps must stay untouched), Iallgatherv's pieces also
 * packed in rank order (across nodes its leaders then work in the result), every root, MPI_IN_PLACE
 * where the standard allows it (Iallgatherv, Ialltoallv/w, Igatherv and Iscatterv at the root),
 * derived types (vector, contiguous, resized) that differ between sender and receiver but whose
 * signatures match, a type per peer (Ialltoallw; MPI_DATATYPE_NULL for its empty blocks on MPICH,
 * which accepts it where Open MPI 4.1 does not), data buffers and count/displacement/type arrays on
 * the heap (the segment), the stack and static data, large blocks, small blocks (a few ints: the
 * all-to-alls' senders whose blocks fit the ring's slot send them there, others not, in one call).
 * Calls are started in batches of up to 12 (more than the ring's 8 in flight) together with
 * point-to-point requests, and completed
 * with MPI_Waitall, MPI_Waitany, an MPI_Testsome loop or MPI_Wait in reverse order; two
 * communicators whose calls even and odd ranks start in opposite orders. A datatype is freed right
 * after the call that uses it starts.
 *
 * Paths (BOBCAT_STATS on and the layer on): on the node's communicator no call went to the real MPI
 * and some went through bobcat's ring, staged and not; across (simulated) nodes the world's and the
 * reversed world's calls ran hierarchically (alg.hier), none went to the real MPI; MPI_COMM_SELF's
 * always do (why.setup-failed);
 * BOBCAT_COLL_NBC=mpi sends all there (why.forced).
 *
 * Persistent forms (MPI 4.0, MPICH: MPI_Gatherv_init, ...): on the node's communicator (and the world
 * on one node) every form made once and restarted with new values, started in opposite orders on
 * odd and even ranks, each start on bobcat's path.
 *
 * Overlap: on the node's communicator rank 0 starts an Ialltoallv and an Iallgatherv and computes
 * without calling MPI until the others have completed both: they must do its units (layer on). */
/* MPICH marks statuses arguments as written: MPI_STATUSES_IGNORE (NULL) draws a warning. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bobcat/smartmap.h>
#include "mp_pcoll.h"
#include "mp_util.h"

static int wrank, wsize, layer_on;
static FILE *digest;

/* ---- where a call's buffers and arrays live: bump allocators, reset after each batch ---------- */
typedef enum { B_HEAP, B_STACK, B_STATIC, B_N } bkind_t;
static const char *bname[] = {"heap", "stack", "static"};
#define POOL (2u << 20)
static char static_pool[POOL];
static char *stack_pool; /* in main()'s frame */
static size_t used[B_N];
static void *heap_list[256];
static int nheap;

static void *get(bkind_t k, size_t bytes)
{
    size_t need = (bytes + 63) & ~(size_t)63;
    if (k != B_HEAP && used[k] + need <= POOL) {
        void *p = (k == B_STACK ? stack_pool : static_pool) + used[k];
        used[k] += need;
        return p;
    }
    void *p = malloc(need ? need : 64);
    CHECK(nheap < 256, "too many heap buffers");
    heap_list[nheap++] = p;
    return p;
}
static void reset(void)
{
    used[B_STACK] = used[B_STATIC] = 0;
    for (int i = 0; i < nheap; i++)
        free(heap_list[i]);
    nheap = 0;
}

/* ---- element layouts: how one item of a type lays its ints out ---------------------------------- */
typedef enum { K_PLAIN, K_VEC, K_CONTIG, K_RESIZED, K_N } kind_t;
static const int k_per[K_N] = {1, 2, 3, 1}; /* ints per item */
static const int k_ext[K_N] = {1, 3, 3, 2}; /* extent in ints */
static MPI_Datatype k_type[K_N];

static void types_init(void)
{
    k_type[K_PLAIN] = MPI_INT;
    MPI_Type_vector(2, 1, 2, MPI_INT, &k_type[K_VEC]);
    MPI_Type_contiguous(3, MPI_INT, &k_type[K_CONTIG]);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &k_type[K_RESIZED]);
    for (int k = 1; k < K_N; k++)
        MPI_Type_commit(&k_type[k]);
}

static size_t elem_at(kind_t k, size_t e)
{
    size_t item = e / (size_t)k_per[k], in = e % (size_t)k_per[k];
    return item * (size_t)k_ext[k] + (k == K_VEC ? 2 * in : in);
}

static int value(int s, int d, size_t e, int salt) { return (((s * 8 + d) % 64) << 22) + (int)((e * 7 + (size_t)salt) % (1u << 22)); }

static void put(char *blk, kind_t k, size_t e, int v) { memcpy(blk + elem_at(k, e) * sizeof(int), &v, sizeof v); }

/* ---- one call ------------------------------------------------------------------------------------ */
typedef enum { F_GATHERV, F_SCATTERV, F_ALLGATHERV, F_ALLTOALLV, F_ALLTOALLW, F_N } form_t;
static const char *fname[] = {"Igatherv", "Iscatterv", "Iallgatherv", "Ialltoallv", "Ialltoallw"};

typedef struct {
    form_t f;
    int n, me, root, inplace, salt, big;
    bkind_t bk;
    int derived;
    size_t *ms, *mr;           /* ints I send to r / receive from r (0: no block) */
    kind_t *ks, *kr;
    MPI_Aint *sat, *rat;       /* byte offsets of the blocks in my buffers */
    size_t sspan, rspan;
    char *sb, *rb, *expect;
    MPI_Request req;
    MPI_Datatype dup;          /* a type to free after completion (see call_start) */
    int nodig;                 /* checked, but left out of the digest (see call_new) */
    int packed;                /* Iallgatherv: the pieces in rank order without gaps (call_packed) */
    int pers;                  /* call_start makes the persistent request (MPI_*_init), not started */
    int vsalt;                 /* added to salt for the values only (a persistent restart) */
    char label[96];
} call_t;

/* Counts: uneven, with zeros; symmetric where in place needs it (Ialltoallv/w). big 2 (small, plain
 * ints): at most 40 / n bytes a block, so that a rank's blocks travel in the ring's slots
 * (coll_nb.c, "small all-to-all-v"), but out of place rank 1's block for rank 0 one int more: a
 * call where some senders are small and some not. */
static size_t cnt(const call_t *c, int s, int d)
{
    if (c->big == 2) {
        size_t fit = 40 / (size_t)c->n / sizeof(int);
        if (!c->inplace && s == 1 && d == 0)
            return fit + 1;
        return (size_t)((c->inplace ? s + d : s * 5 + d * 3) + c->salt) % (fit + 1);
    }
    static const int t[] = {0, 1, 4, 7, 2, 0, 5};
    int i = c->inplace && c->f >= F_ALLTOALLV ? (s + d + c->salt) % 7 : (s * 5 + d * 3 + c->salt) % 7;
    return (size_t)t[i] * 6 * (size_t)(c->big ? 683 : 1); /* a multiple of 6: every kind divides it */
}

/* A kind: one per side and rank for the v forms, one per peer for Ialltoallw. */
static kind_t kind(const call_t *c, int peer, int send)
{
    if (!c->derived)
        return K_PLAIN;
    if (c->f == F_ALLTOALLW)
        return (kind_t)((c->me * 2 + peer + send * 3 + c->salt) % K_N);
    return (kind_t)((c->me + send + c->salt) % K_N);
}

/* Blocks in descending rank order from shift (not monotone), each at a multiple of its extent,
 * followed by a gap that must stay untouched; packed: in rank order, no gaps (one kind). */
static size_t place(int n, const size_t *m, const kind_t *k, int shift, MPI_Aint *at, int packed)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        int r = packed ? i : ((shift - i) % n + n) % n;
        size_t ext = (size_t)k_ext[k[r]] * sizeof(int);
        off = (off + ext - 1) / ext * ext;
        at[r] = (MPI_Aint)off;
        off += m[r] / (size_t)k_per[k[r]] * ext + (packed ? 0 : 2 * sizeof(int));
    }
    return off + 16;
}

/* Which blocks move in this form, from my side. The value of block s->d: value(s, d) (Iallgatherv:
 * value(s, s), one piece for everybody). */
static void shape(call_t *c)
{
    int n = c->n, me = c->me;
    for (int r = 0; r < n; r++) {
        c->ms[r] = c->mr[r] = 0;
        c->ks[r] = kind(c, r, 1);
        c->kr[r] = kind(c, r, 0);
    }
    switch (c->f) {
    case F_GATHERV:
        c->ms[c->root] = cnt(c, me, c->root);
        if (me == c->root)
            for (int r = 0; r < n; r++)
                c->mr[r] = cnt(c, r, me);
        break;
    case F_SCATTERV:
        c->mr[c->root] = cnt(c, c->root, me);
        if (me == c->root)
            for (int r = 0; r < n; r++)
                c->ms[r] = cnt(c, me, r);
        break;
    case F_ALLGATHERV:
        for (int r = 0; r < n; r++)
            c->mr[r] = cnt(c, r, r);
        c->ms[me] = cnt(c, me, me);
        break;
    default:
        for (int r = 0; r < n; r++) {
            c->ms[r] = cnt(c, me, r);
            c->mr[r] = cnt(c, r, me);
        }
    }
    if (c->f == F_SCATTERV && c->inplace && me == c->root)
        c->mr[me] = 0; /* the root's piece stays in its send buffer */
}

static int val(const call_t *c, int s, int d, size_t e)
{
    return value(s, c->f == F_ALLGATHERV ? s : d, e, c->salt + c->vsalt);
}

static call_t *call_new(form_t f, MPI_Comm comm, int root, int inplace, bkind_t bk, int derived, int salt, int big)
{
    call_t *c = calloc(1, sizeof *c);
    MPI_Comm_size(comm, &c->n);
    MPI_Comm_rank(comm, &c->me);
    c->dup = MPI_DATATYPE_NULL;
    /* The real MPIs' own in-place all-to-alls are wrong here: MPICH 4.0's MPI_Ialltoallw takes the
     * blocks for bytes (MPI_ERR_TRUNCATE, or wrong values with derived types); Open MPI 4.1's
     * Ialltoallv/w write wrong bytes with derived types and large blocks (4 ranks and more). Where
     * the real MPI would run such a call it is made out of place (the same result: the own block is
     * copied), and it is left out of the digest in every run (its values are still checked). */
#ifdef MPICH_VERSION
    int broken = f == F_ALLTOALLW && inplace;
#else
    int broken = f >= F_ALLTOALLV && inplace && derived && big;
#endif
    if (broken) {
        c->nodig = 1;
        int n1;
        MPI_Comm_size(comm, &n1);
        if (!layer_on || n1 == 1) /* (bobcat's own across nodes too) */
            inplace = 0;
    }
    c->f = f, c->root = root, c->inplace = inplace, c->bk = bk, c->derived = derived, c->salt = salt, c->big = big;
    int n = c->n;
    c->ms = malloc(2 * sizeof(size_t) * (size_t)n), c->mr = c->ms + n;
    c->ks = malloc(2 * sizeof(kind_t) * (size_t)n), c->kr = c->ks + n;
    c->sat = malloc(2 * sizeof(MPI_Aint) * (size_t)n), c->rat = c->sat + n;
    shape(c);
    snprintf(c->label, sizeof c->label, "%s root %d%s %s%s salt %d%s", fname[f], root, inplace ? " in place" : "",
             bname[bk], derived ? " derived" : "", salt, big == 2 ? " small" : big ? " big" : "");
    return c;
}

/* An Iallgatherv whose pieces lie in rank order without gaps (displacements the running sums of the
 * counts): across nodes, on ranks grouped by node, the leaders' phase works in the result itself. */
static call_t *call_packed(MPI_Comm comm, int inplace, bkind_t bk, int derived, int salt, int big)
{
    int broken = 0;
#ifdef MPICH_VERSION
    /* MPICH 4.0's own ring MPI_Iallgatherv (MPIR_CVAR_IALLGATHERV_INTRA_ALGORITHM=sched_ring, also
     * its choice here at 3 ranks) leaves large packed pieces of derived receive types unwritten and
     * never completes (bare, 3 ranks; sched_brucks is right). Where the real MPI would run such a
     * call it is made plain, and it is left out of the digest in every run. */
    broken = derived && big;
    if (broken && !layer_on)
        derived = 0;
#endif
    call_t *c = call_new(F_ALLGATHERV, comm, 0, inplace, bk, derived, salt, big);
    c->packed = 1;
    c->nodig = broken;
    strncat(c->label, " packed", sizeof c->label - strlen(c->label) - 1);
    return c;
}

static void call_free(call_t *c)
{
    free(c->ms), free(c->ks), free(c->sat), free(c);
}

static int *ints(bkind_t bk, int n) { return get(bk, sizeof(int) * (size_t)n); }

/* The buffers' contents: what I send, where the call reads it (in place: in the receive buffer, as
 * a receive block), and what I must find. */
static void call_fill(call_t *c)
{
    int n = c->n, me = c->me;
    form_t f = c->f;
    int ip_me = c->inplace && (!(f == F_GATHERV || f == F_SCATTERV) || me == c->root);
    memset(c->sb, 0x33, c->sspan);
    memset(c->rb, 0x5a, c->rspan);
    memset(c->expect, 0x5a, c->rspan);
    for (int r = 0; r < n; r++) {
        int in_rb = ip_me && (f >= F_ALLTOALLV || (r == me && f != F_SCATTERV));
        char *blk = in_rb ? c->rb + c->rat[r] : c->sb + c->sat[r];
        for (size_t e = 0; e < c->ms[r]; e++)
            put(blk, in_rb ? c->kr[r] : c->ks[r], e, val(c, me, r, e));
    }
    for (int r = 0; r < n; r++)
        for (size_t e = 0; e < c->mr[r]; e++)
            put(c->expect + c->rat[r], c->kr[r], e, val(c, r, me, e));
}

/* Lay out, fill and start the call (pers: make its persistent request, not started). */
static void call_start(call_t *c, MPI_Comm comm)
{
    int n = c->n, me = c->me, root = c->root;
    form_t f = c->f;
    int rooted = f == F_GATHERV || f == F_SCATTERV;
    /* The send buffer: rooted forms at non-roots and Iallgatherv send one block at offset 0. */
    int one_send = (f == F_GATHERV) || (f == F_ALLGATHERV) || (f == F_SCATTERV && me != root);
    if (one_send) {
        int to = f == F_ALLGATHERV ? me : root;
        for (int r = 0; r < n; r++)
            c->sat[r] = 0;
        c->sspan = c->ms[to] / (size_t)k_per[c->ks[to]] * (size_t)k_ext[c->ks[to]] * sizeof(int) + 16;
        /* v forms: one send kind for all */
        for (int r = 0; r < n; r++)
            c->ks[r] = c->ks[to];
    } else {
        if (f != F_ALLTOALLW)
            for (int r = 0; r < n; r++)
                c->ks[r] = c->ks[0];
        c->sspan = place(n, c->ms, c->ks, 1 + c->salt, c->sat, 0);
    }
    int one_recv = f == F_SCATTERV || (f == F_GATHERV && me != root);
    if (one_recv) {
        int from = root;
        for (int r = 0; r < n; r++)
            c->rat[r] = 0, c->kr[r] = c->kr[from];
        c->rspan = c->mr[from] / (size_t)k_per[c->kr[from]] * (size_t)k_ext[c->kr[from]] * sizeof(int) + 16;
    } else {
        if (f != F_ALLTOALLW)
            for (int r = 0; r < n; r++)
                c->kr[r] = c->kr[0];
        c->rspan = place(n, c->mr, c->kr, 2 + c->salt, c->rat, c->packed);
    }
    /* In place, the send side is the receive side (Ialltoallv/w: its layout too). */
    if (c->inplace && f >= F_ALLTOALLV)
        for (int r = 0; r < n; r++)
            c->ks[r] = c->kr[r], c->sat[r] = c->rat[r];
    c->sb = get(c->bk, c->sspan);
    c->rb = get(c->bk, c->rspan);
    c->expect = malloc(c->rspan);
    call_fill(c);
    int ip_me = c->inplace && (!rooted || me == root);
    /* counts, displacements (extents; Ialltoallw: bytes) and types, where the buffers are */
    int *sc = ints(c->bk, n), *sd = ints(c->bk, n), *rc = ints(c->bk, n), *rd = ints(c->bk, n);
    MPI_Datatype *st = get(c->bk, sizeof(MPI_Datatype) * (size_t)n), *rt = get(c->bk, sizeof(MPI_Datatype) * (size_t)n);
    for (int r = 0; r < n; r++) {
        sc[r] = (int)(c->ms[r] / (size_t)k_per[c->ks[r]]);
        rc[r] = (int)(c->mr[r] / (size_t)k_per[c->kr[r]]);
        st[r] = k_type[c->ks[r]];
        rt[r] = k_type[c->kr[r]];
        if (f == F_ALLTOALLW) {
            sd[r] = (int)c->sat[r], rd[r] = (int)c->rat[r];
#ifdef MPICH_VERSION
            if (!sc[r])
                st[r] = MPI_DATATYPE_NULL;
            if (!rc[r])
                rt[r] = MPI_DATATYPE_NULL;
#endif
        } else {
            sd[r] = (int)(c->sat[r] / (MPI_Aint)(k_ext[c->ks[r]] * sizeof(int)));
            rd[r] = (int)(c->rat[r] / (MPI_Aint)(k_ext[c->kr[r]] * sizeof(int)));
        }
    }
    /* A duplicate of a type, freed right after the start: the request must keep what it needs. */
    MPI_Datatype dup = MPI_DATATYPE_NULL;
    int dup_recv = !(f == F_GATHERV && me != root);
    if (c->derived && f != F_ALLTOALLW) {
        MPI_Type_dup(dup_recv ? rt[0] : st[0], &dup);
        for (int r = 0; r < n; r++)
            *(dup_recv ? &rt[r] : &st[r]) = dup;
    }
    int rc_call;
    const void *sarg = c->sb;
    void *rarg = c->rb;
#ifdef MP_PCOLL
    if (c->pers) {
        MPI_Info in = MPI_INFO_NULL;
        if (ip_me && f == F_SCATTERV)
            rarg = MPI_IN_PLACE;
        else if (ip_me)
            sarg = MPI_IN_PLACE;
        switch (f) {
        case F_GATHERV: rc_call = MPI_Gatherv_init(sarg, sc[root], st[root], rarg, rc, rd, rt[0], root, comm, in, &c->req); break;
        case F_SCATTERV:
            rc_call = MPI_Scatterv_init(sarg, sc, sd, st[0], rarg, rc[root], rt[root], root, comm, in, &c->req);
            break;
        case F_ALLGATHERV: rc_call = MPI_Allgatherv_init(sarg, sc[me], st[me], rarg, rc, rd, rt[0], comm, in, &c->req); break;
        case F_ALLTOALLV: rc_call = MPI_Alltoallv_init(sarg, sc, sd, st[0], rarg, rc, rd, rt[0], comm, in, &c->req); break;
        default: rc_call = MPI_Alltoallw_init(sarg, sc, sd, st, rarg, rc, rd, rt, comm, in, &c->req); break;
        }
        CHECK(rc_call == MPI_SUCCESS, "%s: init rc %d", c->label, rc_call);
        /* (Open MPI's own requests need it, mp_pcoll.h: bobcat's serve on one node only) */
        if (MP_PCOLL_NOREF && (!layer_on || n == 1 || !mp_on_node(comm)))
            c->dup = dup;
        else if (dup != MPI_DATATYPE_NULL) /* (the request holds what it needs) */
            MPI_Type_free(&dup);
        return;
    }
#endif
    switch (f) {
    case F_GATHERV:
        if (ip_me)
            sarg = MPI_IN_PLACE;
        rc_call = MPI_Igatherv(sarg, sc[root], st[root], rarg, rc, rd, rt[0], root, comm, &c->req);
        break;
    case F_SCATTERV:
        if (ip_me)
            rarg = MPI_IN_PLACE;
        rc_call = MPI_Iscatterv(sarg, sc, sd, st[0], rarg, rc[root], rt[root], root, comm, &c->req);
        break;
    case F_ALLGATHERV:
        if (c->inplace)
            sarg = MPI_IN_PLACE;
        rc_call = MPI_Iallgatherv(sarg, sc[me], st[me], rarg, rc, rd, rt[0], comm, &c->req);
        break;
    case F_ALLTOALLV:
        if (c->inplace)
            sarg = MPI_IN_PLACE;
        rc_call = MPI_Ialltoallv(sarg, sc, sd, st[0], rarg, rc, rd, rt[0], comm, &c->req);
        break;
    default:
        if (c->inplace)
            sarg = MPI_IN_PLACE;
        rc_call = MPI_Ialltoallw(sarg, sc, sd, st, rarg, rc, rd, rt, comm, &c->req);
        break;
    }
    CHECK(rc_call == MPI_SUCCESS, "%s: rc %d", c->label, rc_call);
    /* Open MPI 4.1's own v/w forms crash (SIGSEGV) when it is freed before they complete: in the
     * reference run there it is freed after the wait. */
#ifndef MPICH_VERSION
    if (!layer_on || n == 1 || !mp_on_node(comm))
        c->dup = dup;
    else
#endif
        if (dup != MPI_DATATYPE_NULL)
        MPI_Type_free(&dup);
}

static void call_verify(call_t *c)
{
    if (memcmp(c->rb, c->expect, c->rspan))
        for (size_t i = 0; i < c->rspan; i++)
            if (c->rb[i] != c->expect[i]) {
                CHECK(0, "%s: rank %d: byte %zu of %zu is %02x, expected %02x", c->label, c->me, i, c->rspan,
                      (unsigned char)c->rb[i], (unsigned char)c->expect[i]);
                break;
            }
    if (digest && !c->nodig)
        fprintf(digest, "%s %zu %016llx\n", c->label, c->rspan, (unsigned long long)mp_fnv(c->rb, c->rspan));
}

static void call_check(call_t *c)
{
    CHECK(c->req == MPI_REQUEST_NULL, "%s: request not freed", c->label);
    call_verify(c);
    free(c->expect);
    if (c->dup != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->dup);
}

/* ---- batches: calls in flight with point-to-point requests, completed four ways ---------------- */
#define MAXB 16
static void complete(MPI_Request *r, int total, int how, const char *what)
{
    int left = total;
    if (how == 0) {
        MPI_Waitall(total, r, MPI_STATUSES_IGNORE);
    } else if (how == 1) {
        while (left) {
            int idx = -1;
            MPI_Waitany(total, r, &idx, MPI_STATUS_IGNORE);
            CHECK(idx >= 0 && idx < total && r[idx] == MPI_REQUEST_NULL, "%s: Waitany gave %d", what, idx);
            left--;
        }
    } else if (how == 2) {
        int idx[2 * MAXB + 4], outc = 0;
        time_t t0 = time(NULL);
        while (left > 0 && time(NULL) - t0 < 150) {
            MPI_Testsome(total, r, &outc, idx, MPI_STATUSES_IGNORE);
            if (outc != MPI_UNDEFINED)
                left -= outc;
            if (outc == 0)
                sched_yield(); /* oversubscribed: the node mates need the core */
        }
        CHECK(left == 0, "%s: Testsome left %d", what, left);
    } else {
        for (int k = total - 1; k >= 0; k--) {
            int rc = MPI_Wait(&r[k], MPI_STATUS_IGNORE);
            CHECK(rc == MPI_SUCCESS && r[k] == MPI_REQUEST_NULL, "%s: MPI_Wait rc %d", what, rc);
        }
    }
}

/* Start the calls (cs[order[i]] on comms[order[i]]; a ring of point-to-point messages on pcomm
 * around them), complete all in one array with the point-to-point requests between, check. */
static void batch_on(MPI_Comm pcomm, MPI_Comm *comms, call_t **cs, const int *order, int nc, int how, const char *cn)
{
    int n, me;
    MPI_Comm_size(pcomm, &n);
    MPI_Comm_rank(pcomm, &me);
    MPI_Request r[4];
    int sendv[2] = {me, me * 3}, recvv[2] = {-1, -1}, np = 0;
    MPI_Irecv(&recvv[0], 1, MPI_INT, (me + n - 1) % n, 70, pcomm, &r[np++]);
    for (int i = 0; i < nc; i++) {
        int k = order ? order[i] : i;
        call_start(cs[k], comms[k]);
        if (i == nc / 2) {
            MPI_Isend(&sendv[0], 1, MPI_INT, (me + 1) % n, 70, pcomm, &r[np++]);
            MPI_Irecv(&recvv[1], 1, MPI_INT, (me + 1) % n, 71, pcomm, &r[np++]);
        }
    }
    MPI_Isend(&sendv[1], 1, MPI_INT, (me + n - 1) % n, 71, pcomm, &r[np++]);
    MPI_Request all[MAXB + 8];
    int k = 0;
    for (int i = 0; i < nc || i < np; i++) { /* the point-to-point requests between the collectives */
        if (i < np)
            all[k++] = r[i];
        if (i < nc)
            all[k++] = cs[i]->req;
    }
    char what[64];
    snprintf(what, sizeof what, "%s batch of %d, completion %d", cn, nc, how);
    complete(all, k, how, what);
    for (int i = 0; i < nc; i++)
        cs[i]->req = MPI_REQUEST_NULL; /* (its copy in `all` is) */
    for (int i = 0; i < k; i++)
        CHECK(all[i] == MPI_REQUEST_NULL, "%s: request %d left", what, i);
    CHECK(recvv[0] == (me + n - 1) % n && recvv[1] == ((me + 1) % n) * 3, "%s: point-to-point got %d %d", what, recvv[0],
          recvv[1]);
    for (int i = 0; i < nc; i++) {
        call_check(cs[i]);
        call_free(cs[i]);
    }
    reset();
}

static void batch(MPI_Comm comm, call_t **cs, int nc, int how, const char *cn)
{
    MPI_Comm comms[MAXB];
    for (int i = 0; i < nc; i++)
        comms[i] = comm;
    batch_on(comm, comms, cs, NULL, nc, how, cn);
}

static void run_comm(MPI_Comm comm, const char *cn)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    if (digest)
        fprintf(digest, "== %s (%d ranks)\n", cn, n);
    MPI_Barrier(comm);
    call_t *cs[MAXB];
    int how = 0;
    /* every form, in place and not, plain and derived, on every kind of memory */
    for (int salt = 0; salt < 3; salt++)
        for (int bk = 0; bk < B_N; bk++)
            for (int derived = 0; derived < 2; derived++) {
                int nc = 0, root = (salt + bk) % n;
                for (int f = 0; f < F_N; f++)
                    for (int ip = 0; ip < 2; ip++)
                        cs[nc++] = call_new((form_t)f, comm, f == F_SCATTERV ? (root + 1) % n : root, ip, (bkind_t)bk,
                                            derived, salt, 0);
                batch(comm, cs, nc, how++ % 4, cn);
            }
    /* every root */
    for (int root = 0; root < n; root++) {
        int nc = 0;
        for (int ip = 0; ip < 2; ip++) {
            cs[nc++] = call_new(F_GATHERV, comm, root, ip, B_STACK, root % 2, root, 0);
            cs[nc++] = call_new(F_SCATTERV, comm, root, ip, B_HEAP, (root + 1) % 2, root, 0);
        }
        batch(comm, cs, nc, (root + 1) % 4, cn);
    }
    /* small blocks (a few ints, plain), some ranks' in the slots and some not */
    for (int ip = 0; ip < 2; ip++) {
        int nc = 0;
        for (int salt = 0; salt < 3; salt++) {
            cs[nc++] = call_new(F_ALLTOALLV, comm, 0, ip, (bkind_t)(salt % B_N), 0, salt, 2);
            cs[nc++] = call_new(F_ALLTOALLW, comm, 0, ip, B_HEAP, 0, salt, 2);
        }
        batch(comm, cs, nc, ip + 1, cn);
    }
    /* Iallgatherv with its pieces packed in rank order: in the segment or not, plain or derived */
    for (int big = 0; big < 2; big++) {
        int nc = 0;
        for (int ip = 0; ip < 2; ip++)
            for (int bk = 0; bk < 2; bk++)
                for (int derived = 0; derived < 2; derived++)
                    cs[nc++] = call_packed(comm, ip, (bkind_t)bk, derived, ip + bk + big, big);
        batch(comm, cs, nc, big + 1, cn);
    }
    /* large blocks (64 KiB per block): heap, static, derived */
    for (int f = 0; f < F_N; f++) {
        int nc = 0;
        cs[nc++] = call_new((form_t)f, comm, 0, 0, B_HEAP, 0, 1, 1);
        cs[nc++] = call_new((form_t)f, comm, n - 1, 1, B_HEAP, 1, 2, 1);
        batch(comm, cs, nc, f % 4, cn);
    }
}

/* Persistent v/w collectives (MPI 4.0; Open MPI 4.1's MPIX_): every form, in place and not, plain and derived (a
 * type freed right after the init), made once and started three times with new values, even ranks
 * starting them in one order and odd ranks in the other (they match by init). Two forms per dup of
 * comm (8 requests: bobcat gives the first 8 made on a communicator a channel each). With `count`,
 * every start on bobcat's path (the rows' inplace + staged grow by the starts, mpi not at all). */
static void run_persistent(MPI_Comm comm, const char *cn, int count)
{
#ifdef MP_PCOLL
    enum { NP = F_N * 4, IT = 3 };
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    long long ours0[F_N], mpi0[F_N];
    for (int f = 0; f < F_N; f++) {
        ours0[f] = mp_stat(fname[f], "inplace") + mp_stat(fname[f], "staged");
        mpi0[f] = mp_stat(fname[f], "mpi");
    }
    call_t *cs[NP];
    MPI_Request r[NP];
    MPI_Comm d[(F_N + 1) / 2];
    int nc = 0;
    for (int f = 0; f < F_N; f++) {
        if (f % 2 == 0)
            MPI_Comm_dup(comm, &d[f / 2]);
        for (int ip = 0; ip < 2; ip++)
            for (int derived = 0; derived < 2; derived++) {
                call_t *c = call_new((form_t)f, d[f / 2], (f + ip + derived) % n, ip, derived ? B_HEAP : B_STACK,
                                     derived, 20 + nc, 0);
                c->pers = 1;
                strncat(c->label, " persistent", sizeof c->label - strlen(c->label) - 1);
                call_start(c, d[f / 2]);
                cs[nc++] = c;
            }
    }
    for (int it = 0; it < IT; it++) {
        for (int k = 0; k < nc; k++) {
            int i = me % 2 ? nc - 1 - k : k;
            if (it) {
                cs[i]->vsalt = 1000 * it;
                call_fill(cs[i]);
            }
            MPI_Start(&cs[i]->req);
            r[i] = cs[i]->req;
        }
        MPI_Waitall(nc, r, MPI_STATUSES_IGNORE);
        for (int i = 0; i < nc; i++) {
            CHECK(r[i] != MPI_REQUEST_NULL, "%s: %s: a persistent request was freed by its wait", cn, cs[i]->label);
            call_verify(cs[i]);
        }
    }
    for (int i = 0; i < nc; i++) {
        MPI_Request_free(&cs[i]->req);
        call_check(cs[i]);
        call_free(cs[i]);
    }
    for (int k = 0; k < (F_N + 1) / 2; k++)
        MPI_Comm_free(&d[k]);
    reset();
    for (int f = 0; f < F_N && count; f++) {
        long long ours = mp_stat(fname[f], "inplace") + mp_stat(fname[f], "staged") - ours0[f];
        long long mpi = mp_stat(fname[f], "mpi") - mpi0[f];
        CHECK(ours == 4 * IT && mpi == 0, "%s: persistent %s: %lld starts on bobcat's path (want %d), %lld mpi", cn,
              fname[f] + 1, ours, 4 * IT, mpi);
    }
#else
    (void)comm, (void)cn, (void)count;
#endif
}

/* Two communicators: even ranks start A's calls first, odd ranks B's (legal: each communicator's
 * calls are in one order on every rank); completed together, four ways. */
static void run_two(MPI_Comm comm, const char *cn)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Comm a, b;
    MPI_Comm_dup(comm, &a);
    MPI_Comm_dup(comm, &b);
    if (digest)
        fprintf(digest, "== %s: two communicators\n", cn);
    for (int how = 0; how < 4; how++) {
        call_t *cs[10];
        MPI_Comm comms[10];
        int order[10], nc = 0;
        for (int rep = 0; rep < 2; rep++) { /* 10 calls, 5 on each: past the ring's 8 with the first */
            comms[nc] = a, cs[nc++] = call_new(F_ALLTOALLV, a, 0, rep, B_HEAP, 1, how + rep, 0);
            comms[nc] = b, cs[nc++] = call_new(F_ALLTOALLW, b, 0, 0, B_STACK, 1, how + rep, 0);
            comms[nc] = a, cs[nc++] = call_new(rep ? F_SCATTERV : F_GATHERV, a, rep * (n - 1), 1, B_STATIC, rep, how, 0);
            comms[nc] = b, cs[nc++] = call_new(F_ALLGATHERV, b, 0, rep, B_HEAP, 1 - rep, how + rep, 0);
            comms[nc] = a, cs[nc++] = call_new(F_ALLTOALLW, a, 0, 1, B_HEAP, 1, how + 2 * rep, 0);
        }
        /* even ranks: A's five then B's five, each in their order; odd ranks: B's then A's */
        int k = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < nc; i++)
                if ((comms[i] == a) == ((me % 2 == 0) == (pass == 0)))
                    order[k++] = i;
        batch_on(comm, comms, cs, order, nc, how, cn);
    }
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

/* Overlap without a progress thread: rank 0 starts an Ialltoallv and an Iallgatherv (stack arrays,
 * heap data) and then computes without calling MPI until every other rank has seen both complete
 * (they tell it through its segment). That ends only if the node mates do rank 0's units from its
 * published tables: with the layer on, one node and BOBCAT_COLL_NBC_HELP on it must. */
static void case_overlap(MPI_Comm comm, int *flags_local)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    int cnt[64], dsp[64], gc[64], gd[64]; /* on the stack (n <= 64) */
    size_t total = 0;
    for (int r = 0; r < n; r++) {
        cnt[r] = 4096 * ((me + r) % 3); /* symmetric: what I send r is what r sends me */
        dsp[r] = (int)total;
        total += (size_t)cnt[r];
        gc[r] = 1000 * (r + 1);
        gd[r] = r == 0 ? 0 : gd[r - 1] + gc[r - 1];
    }
    int *s = malloc(sizeof(int) * (total + 1)), *d = malloc(sizeof(int) * (total + 1));
    int *gs = malloc(sizeof(int) * (size_t)gc[me]), *g = malloc(sizeof(int) * (size_t)(gd[n - 1] + gc[n - 1]));
    for (int r = 0; r < n; r++)
        for (int k = 0; k < cnt[r]; k++)
            s[dsp[r] + k] = value(me, r, (size_t)k, 9);
    for (int k = 0; k < gc[me]; k++)
        gs[k] = value(me, me, (size_t)k, 10);
    uint64_t at = (uint64_t)(uintptr_t)flags_local;
    if (me == 0)
        for (int q = 0; q < n; q++)
            flags_local[q] = 0;
    MPI_Bcast(&at, 1, MPI_UINT64_T, 0, comm);
    int w0 = 0, zero = 0;
    MPI_Group grp, wg;
    MPI_Comm_group(comm, &grp);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(grp, 1, &zero, wg, &w0);
    MPI_Group_free(&grp);
    MPI_Group_free(&wg);
    volatile int *flags = me == 0 ? flags_local : smap_remote_address(smap_pe_is_local(w0), (void *)(uintptr_t)at);
    CHECK(flags != NULL, "overlap: rank 0's flags not reachable");
    MPI_Barrier(comm);
    MPI_Request r[2];
    MPI_Ialltoallv(s, cnt, dsp, MPI_INT, d, cnt, dsp, MPI_INT, comm, &r[0]);
    MPI_Iallgatherv(gs, gc[me], MPI_INT, g, gc, gd, MPI_INT, comm, &r[1]);
    if (me == 0) {
        time_t t0 = time(NULL);
        int seen = 0;
        while (seen < n - 1 && time(NULL) - t0 < 60) {
            seen = 0;
            for (int q = 1; q < n; q++)
                seen += flags[q];
            sched_yield(); /* computing, but oversubscribed ranks need the core */
        }
        CHECK(seen == n - 1, "overlap: only %d of %d node mates completed while rank 0 computed", seen, n - 1);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (flags)
            __atomic_store_n(&flags[me], 1, __ATOMIC_RELEASE);
    }
    int bad = 0;
    for (int q = 0; q < n; q++) {
        for (int k = 0; k < cnt[q]; k++)
            bad += d[dsp[q] + k] != value(q, me, (size_t)k, 9);
        for (int k = 0; k < gc[q]; k++)
            bad += g[gd[q] + k] != value(q, q, (size_t)k, 10);
    }
    CHECK(!bad, "overlap: %d values wrong", bad);
    MPI_Barrier(comm);
    free(s), free(d), free(gs), free(g);
}

int main(int argc, char **argv)
{
    char stack_region[POOL];
    stack_pool = stack_region;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    digest = mp_digest_open(argc, argv, wrank);
    types_init();
    int layer = !mp_env_is("BOBCAT_MPI", "off", "0") && mp_stat("Ialltoallv", "calls") >= 0;
    layer_on = layer && !mp_env_is("BOBCAT_COLL_NBC", "mpi", NULL);
    int stats = layer && getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0");
    int single = smap_local_size() == wsize;
    int forced = mp_env_is("BOBCAT_COLL_NBC", "mpi", NULL);

    long long m0[F_N];
    for (int f = 0; f < F_N; f++)
        m0[f] = mp_stat(fname[f], "mpi");
    run_comm(MPI_COMM_WORLD, "world");
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &rev);
    run_comm(rev, "reversed");
    MPI_Comm_free(&rev);
    run_two(MPI_COMM_WORLD, "world");
    /* across nodes: hierarchical, each start's leaders' call on the request's own communicator */
    run_persistent(MPI_COMM_WORLD, "world", stats && !forced && !single);
    for (int f = 0; f < F_N; f++) {
        long long d = mp_stat(fname[f], "mpi") - m0[f];
        if (stats && single && !forced)
            CHECK(d == 0, "one node: %s went to the real MPI (%lld calls)", fname[f], d);
        if (stats && !single && !forced)
            CHECK(d == 0 && mp_stat(fname[f], "alg.hier") > 0, "across nodes: %s mpi %lld hier %lld", fname[f], d,
                  mp_stat(fname[f], "alg.hier"));
    }

    /* The plan node's ranks: bobcat's path always (unless alone). */
    MPI_Comm node;
    MPI_Comm_split(MPI_COMM_WORLD, wrank - smap_local_rank(), wrank, &node);
    int nn;
    MPI_Comm_size(node, &nn);
    long long before[F_N], ring0[F_N], staged0[F_N], inpl0[F_N];
    for (int f = 0; f < F_N; f++) {
        before[f] = mp_stat(fname[f], "mpi");
        ring0[f] = mp_stat(fname[f], "alg.ring");
        staged0[f] = mp_stat(fname[f], "staged");
        inpl0[f] = mp_stat(fname[f], "inplace");
    }
    run_comm(node, "node");
    run_two(node, "node");
    run_persistent(node, "node", stats && !forced && nn > 1);
    if (layer_on && nn > 1 && nn <= 64 && !mp_env_is("BOBCAT_COLL_NBC_HELP", "0", "off")) {
        int *flags = malloc(sizeof(int) * (size_t)nn); /* on the heap: in the segment */
        case_overlap(node, flags);
        free(flags);
    }
    for (int f = 0; f < F_N; f++) {
        long long d = mp_stat(fname[f], "mpi") - before[f], ring = mp_stat(fname[f], "alg.ring") - ring0[f];
        long long st = mp_stat(fname[f], "staged") - staged0[f], ip = mp_stat(fname[f], "inplace") - inpl0[f];
        if (stats && !forced && nn > 1)
            CHECK(d == 0 && ring > 0 && ring == st + ip && st > 0 && ip > 0,
                  "node communicator: %s mpi %lld ring %lld staged %lld inplace %lld", fname[f], d, ring, st, ip);
        if (stats && !forced && nn == 1)
            CHECK(d > 0 && mp_stat(fname[f], "why.setup-failed") >= d, "a node of one rank: %s mpi %lld why.setup %lld",
                  fname[f], d, mp_stat(fname[f], "why.setup-failed"));
    }
    MPI_Comm_free(&node);

    /* One rank: the real MPI's (why.setup). */
    long long s0 = mp_stat("Ialltoallw", "why.setup-failed");
    {
        call_t *cs[F_N];
        for (int f = 0; f < F_N; f++)
            cs[f] = call_new((form_t)f, MPI_COMM_SELF, 0, f % 2, B_STACK, 1, 0, 0);
        batch(MPI_COMM_SELF, cs, F_N, 0, "self");
    }
    if (stats && !forced)
        CHECK(mp_stat("Ialltoallw", "why.setup-failed") == s0 + 1, "MPI_COMM_SELF: Ialltoallw why.setup %lld",
              mp_stat("Ialltoallw", "why.setup-failed") - s0);
    if (stats && forced)
        for (int f = 0; f < F_N; f++)
            CHECK(mp_stat(fname[f], "inplace") + mp_stat(fname[f], "staged") == 0 &&
                      mp_stat(fname[f], "why.forced") > 0,
                  "BOBCAT_COLL_NBC=mpi: %s inplace %lld staged %lld why.forced %lld", fname[f],
                  mp_stat(fname[f], "inplace"), mp_stat(fname[f], "staged"), mp_stat(fname[f], "why.forced"));

    if (digest)
        fclose(digest);
    for (int k = 1; k < K_N; k++)
        MPI_Type_free(&k_type[k]);
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mp_nbcv: %d ranks, %d on my node, layer %s, stats %s: %s\n", wsize, smap_local_size(),
               layer ? "on" : "off", stats ? "checked" : "not checked", total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
