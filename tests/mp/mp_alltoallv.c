/* mp_alltoallv: MPI_Alltoallv and MPI_Alltoallw against values this test computes itself, on every
 * rank, and (through run_compare.sh) against the real MPI's own result: every rank writes a digest
 * of every receive buffer to <prefix>.<rank> (the last argument), and the run with the layer on must
 * write the same digests as the run with BOBCAT_MPI=off.
 *
 * Cases, on the world, a reversed world, an interleaved one (ranks alternate between nodes) and the
 * plan node's ranks:
 * irregular counts with zeros, blocks placed in non-monotone order with gaps (the gaps must stay
 * untouched), MPI_IN_PLACE, derived types (vector, contiguous, resized) on either side, types that
 * differ between sender and receiver but whose signatures match, Alltoallw with a different type
 * (and base type: int or double) per peer, buffers on the heap (segment), the stack and static
 * data, all counts zero with NULL buffers, a run of calls whose sizes change every time (the slot's
 * inline and pointer forms alternate, also between the two ranks of one call), and large blocks
 * (1 MiB + 24 bytes per block at 2 ranks, 128 KiB + 24 beyond).
 *
 * Paths (BOBCAT_STATS on and the layer on): every call on the node's communicator took bobcat's
 * path (inplace or staged, never mpi), some staged (stack buffers, derived types) and some not; a
 * world that spans nodes took the hierarchical path (alg.hier), or with BOBCAT_COLL_HIER=0 the real
 * MPI (why.multinode); BOBCAT_COLL_ALLTOALLV=mpi sends everything to the real MPI (why.forced). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>
#include "mp_util.h"

static int wrank, wsize;
static FILE *digest;
static char static_pool[1 << 20];

/* ---- element layouts: how one item of a type lays its base elements out ----------------------- */
typedef enum { K_PLAIN, K_VEC, K_CONTIG, K_RESIZED, K_N } kind_t;
static const int k_per[K_N] = {1, 2, 3, 1}; /* base elements per item */
static const int k_ext[K_N] = {1, 3, 3, 2}; /* extent in base elements */
static MPI_Datatype k_type[2][K_N];         /* [int, double][kind] */
static const int base_size[2] = {sizeof(int), sizeof(double)};

static void types_init(void)
{
    MPI_Datatype base[2] = {MPI_INT, MPI_DOUBLE};
    for (int b = 0; b < 2; b++) {
        k_type[b][K_PLAIN] = base[b];
        MPI_Type_vector(2, 1, 2, base[b], &k_type[b][K_VEC]);
        MPI_Type_contiguous(3, base[b], &k_type[b][K_CONTIG]);
        MPI_Type_create_resized(base[b], 0, 2 * base_size[b], &k_type[b][K_RESIZED]);
        for (int k = 1; k < K_N; k++)
            MPI_Type_commit(&k_type[b][k]);
    }
}

/* Offset (in base elements) of element e of a block of kind k. */
static size_t elem_at(kind_t k, size_t e)
{
    size_t item = e / (size_t)k_per[k], in = e % (size_t)k_per[k];
    return item * (size_t)k_ext[k] + (k == K_VEC ? 2 * in : in);
}

static double value(int s, int d, size_t e) { return (double)((((s * 8 + d) % 64) << 22) + (long)(e % (1u << 22))); }

static void put(char *blk, kind_t k, int b, size_t e, double v)
{
    if (b) {
        memcpy(blk + elem_at(k, e) * sizeof(double), &v, sizeof v);
    } else {
        int x = (int)v;
        memcpy(blk + elem_at(k, e) * sizeof(int), &x, sizeof x);
    }
}

/* ---- one exchange: per peer r, elements m[r], base type bt[r], kinds on each side -------------- */
typedef struct {
    const char *name;
    int n, me;
    size_t *ms, *mr;         /* base elements I send to r / receive from r */
    int *bts, *btr;          /* base type (0 int, 1 double) of what I send to r / receive from r */
    kind_t *ks, *kr;         /* kinds */
    MPI_Aint *sbyte, *rbyte; /* byte offset of each block in my buffers */
    size_t sspan, rspan;     /* bytes of each buffer */
} xchg_t;

/* Blocks laid out in descending rank order from `shift` (wrapping: not monotone), each at a multiple
 * of its type's extent (Alltoallv counts displacements in extents) and followed by a gap. */
static size_t place(int n, const size_t *m, const kind_t *k, const int *bt, int shift, MPI_Aint *at)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        int r = ((shift - i) % n + n) % n;
        size_t ext = (size_t)k_ext[k[r]] * (size_t)base_size[bt[r]];
        off = (off + ext - 1) / ext * ext;
        at[r] = (MPI_Aint)off;
        off += m[r] / (size_t)k_per[k[r]] * ext + 2 * sizeof(double); /* a gap that must stay untouched */
    }
    return off + 16;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

typedef enum { B_HEAP, B_STACK, B_STATIC } bkind_t;

/* Run one exchange (v: one kind per side, w: per peer) and check the receive buffer byte for byte. */
static void run(MPI_Comm comm, xchg_t *x, int w, int in_place, bkind_t bk)
{
    int n = x->n, me = x->me;
    char stack_buf[2][8192];
    char *sb, *rb, *expect = malloc(x->rspan + 1);
    if (bk == B_STACK && x->sspan <= sizeof stack_buf[0] && x->rspan <= sizeof stack_buf[1]) {
        sb = stack_buf[0], rb = stack_buf[1];
    } else if (bk == B_STATIC && x->sspan + x->rspan <= sizeof static_pool) {
        sb = static_pool, rb = static_pool + ((x->sspan + 63) & ~(size_t)63);
    } else {
        sb = malloc(x->sspan + 1), rb = malloc(x->rspan + 1);
        bk = B_HEAP;
    }
    memset(sb, 0x33, x->sspan);
    memset(rb, 0x5a, x->rspan);
    memset(expect, 0x5a, x->rspan);
    int *sc = malloc(6 * sizeof(int) * (size_t)n), *sd = sc + n, *rc = sd + n, *rd = rc + n, *swd = rd + n, *rwd = swd + n;
    MPI_Datatype *st = malloc(2 * sizeof(MPI_Datatype) * (size_t)n), *rt = st + n;
    for (int r = 0; r < n; r++) {
        sc[r] = (int)(x->ms[r] / (size_t)k_per[x->ks[r]]);
        rc[r] = (int)(x->mr[r] / (size_t)k_per[x->kr[r]]);
        st[r] = k_type[x->bts[r]][x->ks[r]];
        rt[r] = k_type[x->btr[r]][x->kr[r]];
        MPI_Aint lb, sext, rext;
        MPI_Type_get_extent(st[r], &lb, &sext);
        MPI_Type_get_extent(rt[r], &lb, &rext);
        sd[r] = (int)(x->sbyte[r] / sext), swd[r] = (int)x->sbyte[r];
        rd[r] = (int)(x->rbyte[r] / rext), rwd[r] = (int)x->rbyte[r];
        /* v: displacements count extents, so blocks were placed at multiples of them (checked) */
        if (!w)
            CHECK(x->sbyte[r] % sext == 0 && x->rbyte[r] % rext == 0, "%s: placement", x->name);
        for (size_t e = 0; e < x->ms[r]; e++)
            put((in_place ? rb + x->rbyte[r] : sb + x->sbyte[r]), in_place ? x->kr[r] : x->ks[r],
                in_place ? x->btr[r] : x->bts[r], e, value(me, r, e));
        for (size_t e = 0; e < x->mr[r]; e++)
            put(expect + x->rbyte[r], x->kr[r], x->btr[r], e, r == me && in_place ? value(me, me, e) : value(r, me, e));
    }
    if (in_place) /* my own block stays as it is; the gaps too */
        for (size_t e = 0; e < x->mr[me]; e++)
            put(expect + x->rbyte[me], x->kr[me], x->btr[me], e, value(me, me, e));
    const void *sarg = in_place ? MPI_IN_PLACE : (const void *)sb;
    int rc_call;
    if (w)
        rc_call = MPI_Alltoallw(sarg, sc, swd, st, rb, rc, rwd, rt, comm);
    else
        rc_call = MPI_Alltoallv(sarg, sc, sd, st[0], rb, rc, rd, rt[0], comm);
    CHECK(rc_call == MPI_SUCCESS, "%s: rc %d", x->name, rc_call);
    int bad = memcmp(rb, expect, x->rspan) != 0;
    if (bad)
        for (size_t i = 0; i < x->rspan; i++)
            if (rb[i] != expect[i]) {
                CHECK(0, "%s (%s, %s, %s): rank %d: byte %zu of %zu is %02x, expected %02x", x->name, w ? "w" : "v",
                      in_place ? "in place" : "out of place", bk == B_HEAP ? "heap" : bk == B_STACK ? "stack" : "static",
                      me, i, x->rspan, (unsigned char)rb[i], (unsigned char)expect[i]);
                break;
            }
    if (digest)
        fprintf(digest, "%s %s %d %d %016llx\n", x->name, w ? "w" : "v", in_place, (int)bk,
                (unsigned long long)fnv(rb, x->rspan, 1469598103934665603ull));
    if (bk == B_HEAP) {
        free(sb);
        free(rb);
    }
    free(expect);
    free(sc);
    free(st);
}

/* Build an exchange: elements from s to d = count(s, d) (both sides compute it), kinds per side. */
typedef size_t (*count_fn)(int s, int d, int salt);
typedef kind_t (*kind_fn)(int me, int peer, int send, int salt);
typedef int (*base_fn)(int s, int d);

static void build(xchg_t *x, const char *name, int n, int me, count_fn cnt, kind_fn kind, base_fn base, int salt)
{
    x->name = name, x->n = n, x->me = me;
    x->ms = malloc(2 * sizeof(size_t) * (size_t)n), x->mr = x->ms + n;
    x->bts = malloc(2 * sizeof(int) * (size_t)n), x->btr = x->bts + n;
    x->ks = malloc(2 * sizeof(kind_t) * (size_t)n), x->kr = x->ks + n;
    x->sbyte = malloc(2 * sizeof(MPI_Aint) * (size_t)n), x->rbyte = x->sbyte + n;
    for (int r = 0; r < n; r++) {
        x->ms[r] = cnt(me, r, salt), x->mr[r] = cnt(r, me, salt);
        x->bts[r] = base(me, r), x->btr[r] = base(r, me);
        x->ks[r] = kind(me, r, 1, salt), x->kr[r] = kind(me, r, 0, salt);
    }
    x->sspan = place(n, x->ms, x->ks, x->bts, 1 + salt, x->sbyte);
    x->rspan = place(n, x->mr, x->kr, x->btr, 2 + salt, x->rbyte);
}

static void unbuild(xchg_t *x)
{
    free(x->ms);
    free(x->bts);
    free(x->ks);
    free(x->sbyte);
}

/* Element counts are multiples of 6, so every kind (1, 2 or 3 elements per item) divides them. */
static size_t c_irregular(int s, int d, int salt) { return (size_t)6 * (size_t)((s * 5 + d * 3 + salt) % 4); }
static size_t c_sym(int s, int d, int salt) { return (size_t)6 * (size_t)((s + d + salt) % 3); }
static size_t c_zero(int s, int d, int salt) { (void)s, (void)d, (void)salt; return 0; }
static size_t c_small(int s, int d, int salt) { return (size_t)((s + 2 * d + salt) % 9); } /* 0..8 ints: both slot forms */
static size_t big_block;
static size_t c_big(int s, int d, int salt) { (void)s, (void)d, (void)salt; return big_block; }

static kind_t k_plain(int me, int peer, int send, int salt) { (void)me, (void)peer, (void)send, (void)salt; return K_PLAIN; }
/* v: one kind per side and rank, differing between ranks (signatures still match). */
static kind_t k_rank(int me, int peer, int send, int salt) { (void)peer; return (kind_t)((me + send + salt) % K_N); }
/* w: a kind per peer. */
static kind_t k_peer(int me, int peer, int send, int salt) { return (kind_t)((me * 2 + peer + send * 3 + salt) % K_N); }
static int b_int(int s, int d) { (void)s, (void)d; return 0; }
static int b_mixed(int s, int d) { return (s + d) % 3 == 0; }

static void run_comm(MPI_Comm comm, const char *cname)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    if (digest)
        fprintf(digest, "== %s (%d ranks)\n", cname, n);
    xchg_t x;
    for (int salt = 0; salt < 3; salt++) {
        for (int bk = 0; bk < 3; bk++) {
            build(&x, "irregular", n, me, c_irregular, k_plain, b_int, salt);
            run(comm, &x, 0, 0, (bkind_t)bk);
            run(comm, &x, 1, 0, (bkind_t)bk);
            unbuild(&x);
            build(&x, "in-place", n, me, c_sym, k_plain, b_int, salt);
            run(comm, &x, 0, 1, (bkind_t)bk);
            run(comm, &x, 1, 1, (bkind_t)bk);
            unbuild(&x);
            build(&x, "derived", n, me, c_irregular, k_rank, b_int, salt);
            run(comm, &x, 0, 0, (bkind_t)bk);
            unbuild(&x);
            build(&x, "derived-in-place", n, me, c_sym, k_rank, b_int, salt);
            run(comm, &x, 0, 1, (bkind_t)bk);
            unbuild(&x);
            build(&x, "w-mixed", n, me, c_irregular, k_peer, b_mixed, salt);
            run(comm, &x, 1, 0, (bkind_t)bk);
            unbuild(&x);
            build(&x, "w-mixed-in-place", n, me, c_sym, k_peer, b_mixed, salt);
            run(comm, &x, 1, 1, (bkind_t)bk);
            unbuild(&x);
        }
    }
    /* Sizes that change every call: at two ranks the slot's inline and pointer forms alternate. */
    for (int salt = 0; salt < 24; salt++) {
        build(&x, "small", n, me, c_small, k_plain, b_int, salt);
        run(comm, &x, salt % 2, 0, (bkind_t)(salt % 3));
        unbuild(&x);
    }
    /* Nothing at all, with NULL buffers (mpi4py passes NULL for empty arrays). */
    {
        int *z = calloc(4 * (size_t)n, sizeof(int));
        MPI_Datatype *ty = malloc(2 * sizeof(MPI_Datatype) * (size_t)n);
        for (int r = 0; r < 2 * n; r++)
            ty[r] = MPI_INT;
        CHECK(MPI_Alltoallv(NULL, z, z + n, MPI_INT, NULL, z + 2 * n, z + 3 * n, MPI_INT, comm) == MPI_SUCCESS, "zero v");
        CHECK(MPI_Alltoallw(NULL, z, z + n, ty, NULL, z + 2 * n, z + 3 * n, ty + n, comm) == MPI_SUCCESS, "zero w");
        build(&x, "zero", n, me, c_zero, k_plain, b_int, 0);
        run(comm, &x, 0, 0, B_STACK);
        run(comm, &x, 1, 1, B_HEAP);
        unbuild(&x);
        free(z);
        free(ty);
    }
    /* Large blocks: heap, in place, a derived type on the send side (packed), a stack-free static. */
    big_block = ((n <= 2 ? (1u << 20) : (128u << 10)) / sizeof(int) / 6 + 1) * 6; /* a multiple of 6 past the size */
    build(&x, "large", n, me, c_big, k_plain, b_int, 0);
    run(comm, &x, 0, 0, B_HEAP);
    run(comm, &x, 0, 1, B_HEAP);
    run(comm, &x, 1, 0, B_HEAP);
    unbuild(&x);
    build(&x, "large-derived", n, me, c_big, k_rank, b_int, 0);
    run(comm, &x, 0, 0, B_HEAP);
    unbuild(&x);
}

/* A receive count below the sender's: an error through the communicator's handler on every rank
 * that gets a cut block (both MPIs report one for their own calls: MPI_ERR_TRUNCATE, Open MPI's
 * Alltoallw MPI_ERR_OTHER), on bobcat's path (ours) MPI_ERR_TRUNCATE with the block cut to what the
 * receiver expects; the rank's own block whole either way. Blocks of 2 ints: at 2 ranks the
 * small-call path (a2av_pair), beyond it the general one. Only on the node's communicator: across
 * nodes the layer does not detect it (the standard calls the call erroneous, and does not require
 * an MPI to). */
static void run_truncate(MPI_Comm comm, int ours)
{
    MPI_Comm c;
    int n, me;
    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    int *sb = malloc(sizeof(int) * 10 * (size_t)n), *rb = sb + 2 * n, *sc = rb + 2 * n, *sd = sc + n, *rc = sd + n,
        *rd = rc + n, *sdb = rd + n, *rdb = sdb + n;
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)n);
    for (int r = 0; r < n; r++) {
        sb[2 * r] = me * 1000 + 2 * r, sb[2 * r + 1] = me * 1000 + 2 * r + 1;
        sc[r] = 2, sd[r] = 2 * r, sdb[r] = 2 * r * (int)sizeof(int);
        rc[r] = r == me ? 2 : 1, rd[r] = 2 * r, rdb[r] = 2 * r * (int)sizeof(int);
        ty[r] = MPI_INT;
    }
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < 2 * n; i++)
            rb[i] = -1;
        int e = w ? MPI_Alltoallw(sb, sc, sdb, ty, rb, rc, rdb, ty, c) : MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c),
            cls = MPI_SUCCESS;
        if (e != MPI_SUCCESS)
            MPI_Error_class(e, &cls);
        CHECK(n == 1 ? e == MPI_SUCCESS : ours ? cls == MPI_ERR_TRUNCATE : e != MPI_SUCCESS,
              "truncation (%s, %d ranks, %s): error class %d", w ? "Alltoallw" : "Alltoallv", n, ours ? "bobcat" : "the MPI",
              cls);
        CHECK(rb[2 * me] == me * 1000 + 2 * me && rb[2 * me + 1] == me * 1000 + 2 * me + 1,
              "truncation (%s): my own block %d %d", w ? "Alltoallw" : "Alltoallv", rb[2 * me], rb[2 * me + 1]);
        for (int r = 0; r < n && ours; r++)
            CHECK(r == me || (rb[2 * r] == r * 1000 + 2 * me && rb[2 * r + 1] == -1),
                  "truncation (%s): the block from %d cut to %d %d", w ? "Alltoallw" : "Alltoallv", r, rb[2 * r], rb[2 * r + 1]);
    }
    free(ty);
    free(sb);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    digest = mp_digest_open(argc, argv, wrank);
    types_init();
    int layer = !mp_env_is("BOBCAT_MPI", "off", "0") && mp_stat("Alltoallv", "calls") >= 0;
    int stats = layer && getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0");
    int single = smap_local_size() == wsize;
    int forced = mp_env_is("BOBCAT_COLL_ALLTOALLV", "mpi", NULL);

    long long v0 = mp_stat("Alltoallv", "mpi"), w0 = mp_stat("Alltoallw", "mpi");
    run_comm(MPI_COMM_WORLD, "world");
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &rev);
    run_comm(rev, "reversed");
    MPI_Comm_free(&rev);
    /* Interleaved: ranks alternate between the plan's nodes (not grouped by node). */
    MPI_Comm inter;
    MPI_Comm_split(MPI_COMM_WORLD, 0, (wrank % 2) * wsize + wrank / 2, &inter);
    run_comm(inter, "interleaved");
    MPI_Comm_free(&inter);
    long long v1 = mp_stat("Alltoallv", "mpi"), w1 = mp_stat("Alltoallw", "mpi");
    if (stats && single && !forced)
        CHECK(v1 == v0 && w1 == w0, "one node: Alltoallv/w went to the real MPI (%lld, %lld calls)", v1 - v0, w1 - w0);
    if (stats && !single && !forced) {
        /* Across nodes: hierarchical (alg.hier, nothing to the real MPI), or with
         * BOBCAT_COLL_HIER=0 every call to the real MPI for spanning nodes. */
        long long hv = mp_stat("Alltoallv", "alg.hier"), hw = mp_stat("Alltoallw", "alg.hier");
        if (mp_env_is("BOBCAT_COLL_HIER", "0", "off"))
            CHECK(hv == 0 && hw == 0 && v1 > v0 && mp_stat("Alltoallv", "why.multinode") == v1 &&
                      mp_stat("Alltoallw", "why.multinode") == w1,
                  "BOBCAT_COLL_HIER=0: Alltoallv/w alg.hier %lld/%lld why.multinode %lld/%lld", hv, hw,
                  mp_stat("Alltoallv", "why.multinode"), mp_stat("Alltoallw", "why.multinode"));
        else
            CHECK(hv > 0 && hw > 0 && v1 == v0 && w1 == w0, "across nodes: Alltoallv/w alg.hier %lld/%lld mpi %lld/%lld", hv,
                  hw, v1 - v0, w1 - w0);
    }

    /* The plan node's ranks (yod's plan, simulated nodes included: the same communicator with the
     * layer off, where MPI_COMM_TYPE_SHARED would give the machine): bobcat's path always. */
    MPI_Comm node;
    MPI_Comm_split(MPI_COMM_WORLD, wrank - smap_local_rank(), wrank, &node);
    long long vi = mp_stat("Alltoallv", "inplace"), vs = mp_stat("Alltoallv", "staged");
    long long wi = mp_stat("Alltoallw", "inplace"), ws = mp_stat("Alltoallw", "staged");
    run_comm(node, "node");
    run_truncate(node, layer && !forced);
    MPI_Comm_free(&node);
    if (stats && !forced) {
        long long v2 = mp_stat("Alltoallv", "mpi"), w2 = mp_stat("Alltoallw", "mpi");
        CHECK(v2 == v1 && w2 == w1, "node communicator: Alltoallv/w went to the real MPI (%lld, %lld calls)", v2 - v1, w2 - w1);
        CHECK(mp_stat("Alltoallv", "inplace") > vi && mp_stat("Alltoallv", "staged") > vs, "node: Alltoallv inplace %lld staged %lld",
              mp_stat("Alltoallv", "inplace") - vi, mp_stat("Alltoallv", "staged") - vs);
        CHECK(mp_stat("Alltoallw", "inplace") > wi && mp_stat("Alltoallw", "staged") > ws, "node: Alltoallw inplace %lld staged %lld",
              mp_stat("Alltoallw", "inplace") - wi, mp_stat("Alltoallw", "staged") - ws);
    }
    if (stats && forced) /* forced to the real MPI: every call went there, for that reason */
        CHECK(mp_stat("Alltoallv", "inplace") + mp_stat("Alltoallv", "staged") == 0 &&
                  mp_stat("Alltoallv", "why.forced") == mp_stat("Alltoallv", "mpi") && mp_stat("Alltoallv", "mpi") > 0 &&
                  mp_stat("Alltoallw", "why.forced") == mp_stat("Alltoallw", "mpi") && mp_stat("Alltoallw", "mpi") > 0,
              "BOBCAT_COLL_ALLTOALLV=mpi: Alltoallv mpi %lld why.forced %lld", mp_stat("Alltoallv", "mpi"),
              mp_stat("Alltoallv", "why.forced"));

    if (digest)
        fclose(digest);
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mp_alltoallv: %d ranks, %d on my node, layer %s, stats %s: %s\n", wsize, smap_local_size(),
               layer ? "on" : "off", stats ? "checked" : "not checked", total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
