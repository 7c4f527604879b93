/* MPI 4.0's large-count v and w collectives (MPI_Alltoallv_c, MPI_Alltoallw_c, MPI_Gatherv_c,
 * MPI_Scatterv_c, MPI_Allgatherv_c, MPI_Reduce_scatter_c), blocking, nonblocking (MPI_I..._c) and
 * persistent (MPI_..._init_c), take the layer's path as the int forms do: their MPI_Count counts and
 * MPI_Aint displacements become the same 64-bit tables (coll/pmpi_coll.h, pc_vec_t).
 *
 * The neighbourhood forms (MPI_Neighbor_allgather_c, ..._alltoallw_c, their MPI_Ineighbor_ and
 * _init_c forms) likewise, on a distributed graph with self-loops at 2 ranks.
 *
 * `small` (default): every call with irregular counts (zeros among them) and displacements laid
 * out backwards with gaps that differ from rank to rank, on MPI_COMM_WORLD and on a communicator of
 * the ranks in reverse order, roots 0 and the last, MPI_IN_PLACE where the call has it, Alltoallw
 * with a non-dense receive type (ints 8 bytes apart); values checked here, digests compared with the
 * real MPI's (run_compare.sh); with BOBCAT_STATS on one node, each call counted in its int form's
 * row (persistent starts in the nonblocking one's) and none sent to the real MPI.
 * `big`: values above INT_MAX (2 GiB a rank): MPI_Gatherv_c whose root places rank 1's piece of
 * 2^31 + 5 bytes first and its own 8 bytes after it (a count and a displacement above INT_MAX,
 * the root's alone), and MPI_Alltoallv_c, MPI_Ialltoallv_c and their neighbourhood forms whose
 * blocks land beyond 2^31 elements in every rank's receive buffer; every byte checked, every call on bobcat's path.
 *
 * Needs an MPI with the _c forms (MPI_VERSION 4: MPICH); CMake registers it for MPICH only. */
#include <mpi.h>

#include <limits.h>
#include <stdint.h>

#include "mp_util.h"

static int me, n, stats, layer;
static FILE *digest;

static void dig(const char *what, const void *p, size_t bytes)
{
    if (digest)
        fprintf(digest, "%s %016llx\n", what, (unsigned long long)mp_fnv(p, bytes));
}

static long long row(const char *call, const char *key) { return stats ? mp_stat(call, key) : 0; }

static void counted(const char *call, long long calls0, long long mpi0, long long calls)
{
    if (!stats)
        return;
    CHECK(row(call, "calls") - calls0 == calls, "%s: %lld calls counted, want %lld", call,
          row(call, "calls") - calls0, calls);
    CHECK(row(call, "mpi") == mpi0, "%s: %lld calls went to the real MPI", call, row(call, "mpi") - mpi0);
}

static int v(int r, int i, int salt) { return (r + 1) * 1000 + i * 7 + salt; }

enum { MAXN = 16, BUF = 4 * MAXN * MAXN, K = 3 };

/* Blocks of counts c[q] laid out backwards (the last rank's first) with `gap` elements between. */
static MPI_Count layout(const MPI_Count *c, MPI_Aint *d, int size, int gap)
{
    MPI_Count off = 0;
    for (int q = size - 1; q >= 0; q--) {
        d[q] = (MPI_Aint)off;
        off += c[q] + gap;
    }
    return off;
}

/* mode 0: blocking, 1: nonblocking, 2: persistent (made once, started twice). */
static void small(MPI_Comm comm, int root, int salt, int mode)
{
    int r, size;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    static int sb[BUF], rb[BUF];
    MPI_Count sc[MAXN], rc[MAXN];
    MPI_Aint sd[MAXN], rd[MAXN];
    MPI_Datatype st[MAXN], rt[MAXN], spaced;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced); /* ints 8 bytes apart: not dense */
    MPI_Type_commit(&spaced);
    MPI_Request q = MPI_REQUEST_NULL;
    char what[96];
    const char *mname = mode == 0 ? "" : mode == 1 ? "I" : "init ";
    int gap = 1 + r % 2; /* each rank's own layout */

/* One call, counted in row ROW (blocking) or IROW: FILL the buffers, make it (B blocking, NB nonblocking, INIT persistent), wait, CHECKS.
 * Persistent: made at the first round, started in two. */
#define RUN(ROW, IROW, FILL, B, NB, INIT, CHECKS)                                                                       \
    do {                                                                                                         \
        const char *row_ = mode == 0 ? ROW : IROW;                                                            \
        long long c0 = row(row_, "calls"), m0 = row(row_, "mpi");                                                \
        int rounds_ = mode == 2 ? 2 : 1;                                                                         \
        for (int round = 0; round < rounds_; round++) {                                                          \
            int t = salt + 100 * round;                                                                          \
            (void)t;                                                                                             \
            FILL;                                                                                                \
            int rc_ = MPI_SUCCESS;                                                                               \
            if (mode == 0)                                                                                       \
                rc_ = (B);                                                                                       \
            else if (mode == 1)                                                                                  \
                rc_ = (NB);                                                                                      \
            else if (round == 0)                                                                                 \
                rc_ = (INIT);                                                                                    \
            if (rc_ == MPI_SUCCESS && mode == 2)                                                                 \
                rc_ = MPI_Start(&q);                                                                             \
            if (rc_ == MPI_SUCCESS && mode)                                                                      \
                rc_ = MPI_Wait(&q, MPI_STATUS_IGNORE);                                                           \
            snprintf(what, sizeof what, "%s%s_c root=%d salt=%d", mname, ROW, root, t);                         \
            CHECK(rc_ == MPI_SUCCESS, "%s: error %d", what, rc_);                                                \
            CHECKS;                                                                                              \
        }                                                                                                        \
        if (mode == 2)                                                                                           \
            MPI_Request_free(&q);                                                                                \
        counted(row_, c0, m0, rounds_);                                                                          \
    } while (0)

    /* Alltoallv: rank p's block for q holds (p+2q+salt)%4 ints. */
    for (int p = 0; p < size; p++) {
        sc[p] = (r + 2 * p + salt) % 4;
        rc[p] = (p + 2 * r + salt) % 4;
    }
    MPI_Count stot = layout(sc, sd, size, gap), rtot = layout(rc, rd, size, gap + 1);
    RUN("Alltoallv", "Ialltoallv",
        for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
        for (int p = 0; p < size; p++) for (int i = 0; i < sc[p]; i++) sb[sd[p] + i] = v(r, p * 100 + i, t),
        MPI_Alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm),
        MPI_Ialltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm, &q),
        MPI_Alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm, MPI_INFO_NULL, &q),
        for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++)
            CHECK(rb[rd[p] + i] == v(p, r * 100 + i, t), "%s: from %d [%d] = %d", what, p, i, rb[rd[p] + i]);
        dig(what, rb, (size_t)rtot * sizeof(int)));
    (void)stot;

    /* Alltoallv in place: counts (p+q+salt)%3 both ways. */
    for (int p = 0; p < size; p++)
        rc[p] = (r + p + salt) % 3;
    rtot = layout(rc, rd, size, gap);
    RUN("Alltoallv", "Ialltoallv",
        for (int i = 0; i < BUF; i++) rb[i] = -1;
        for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++) rb[rd[p] + i] = v(r, p * 100 + i, t),
        MPI_Alltoallv_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, comm),
        MPI_Ialltoallv_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, comm, &q),
        MPI_Alltoallv_init_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, comm, MPI_INFO_NULL,
                             &q),
        for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++)
            CHECK(rb[rd[p] + i] == v(p, r * 100 + i, t), "%s in place: from %d [%d] = %d", what, p, i, rb[rd[p] + i]);
        dig(what, rb, (size_t)rtot * sizeof(int)));

    /* Alltoallw: byte displacements; the blocks from odd ranks land as ints 8 bytes apart. */
    for (int p = 0; p < size; p++) {
        sc[p] = (r + 2 * p + salt + 1) % 4;
        rc[p] = (p + 2 * r + salt + 1) % 4;
        st[p] = MPI_INT;
        rt[p] = p % 2 ? spaced : MPI_INT;
    }
    layout(sc, sd, size, gap);
    for (int p = 0; p < size; p++)
        sd[p] *= sizeof(int);
    MPI_Aint roff = 0;
    for (int p = size - 1; p >= 0; p--) {
        rd[p] = roff;
        roff += (MPI_Aint)rc[p] * (p % 2 ? 2 : 1) * sizeof(int) + sizeof(int);
    }
    RUN("Alltoallw", "Ialltoallw",
        for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
        for (int p = 0; p < size; p++) for (int i = 0; i < sc[p]; i++)
            sb[sd[p] / (MPI_Aint)sizeof(int) + i] = v(r, p * 100 + i, t),
        MPI_Alltoallw_c(sb, sc, sd, st, rb, rc, rd, rt, comm),
        MPI_Ialltoallw_c(sb, sc, sd, st, rb, rc, rd, rt, comm, &q),
        MPI_Alltoallw_init_c(sb, sc, sd, st, rb, rc, rd, rt, comm, MPI_INFO_NULL, &q),
        for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++) {
            int at = (int)(rd[p] / (MPI_Aint)sizeof(int)) + i * (p % 2 ? 2 : 1);
            CHECK(rb[at] == v(p, r * 100 + i, t), "%s: from %d [%d] = %d", what, p, i, rb[at]);
        } dig(what, rb, (size_t)roff));

    /* Gatherv (the root in place, then not), Scatterv (likewise), Allgatherv (likewise): rank p's
     * piece is (p+salt)%3 ints; the root's (every rank's, Allgatherv) layout backwards. */
    for (int p = 0; p < size; p++)
        rc[p] = (p + salt) % 3;
    rtot = layout(rc, rd, size, gap);
    MPI_Count mine = rc[r];
    for (int inplace = 0; inplace < 2; inplace++) {
        const void *gs = inplace && r == root ? MPI_IN_PLACE : sb;
        RUN("Gatherv", "Igatherv",
            for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
            for (int i = 0; i < mine; i++) sb[i] = v(r, i, t);
            if (gs == MPI_IN_PLACE) for (int i = 0; i < mine; i++) rb[rd[r] + i] = v(r, i, t),
            MPI_Gatherv_c(gs, mine, MPI_INT, rb, rc, rd, MPI_INT, root, comm),
            MPI_Igatherv_c(gs, mine, MPI_INT, rb, rc, rd, MPI_INT, root, comm, &q),
            MPI_Gatherv_init_c(gs, mine, MPI_INT, rb, rc, rd, MPI_INT, root, comm, MPI_INFO_NULL, &q),
            if (r == root) {
                for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++)
                    CHECK(rb[rd[p] + i] == v(p, i, t), "%s: rank %d's [%d] = %d", what, p, i, rb[rd[p] + i]);
                dig(what, rb, (size_t)rtot * sizeof(int));
            });
        void *sr = inplace && r == root ? MPI_IN_PLACE : rb;
        RUN("Scatterv", "Iscatterv",
            for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
            for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++) sb[rd[p] + i] = v(root, p * 100 + i, t),
            MPI_Scatterv_c(sb, rc, rd, MPI_INT, sr, mine, MPI_INT, root, comm),
            MPI_Iscatterv_c(sb, rc, rd, MPI_INT, sr, mine, MPI_INT, root, comm, &q),
            MPI_Scatterv_init_c(sb, rc, rd, MPI_INT, sr, mine, MPI_INT, root, comm, MPI_INFO_NULL, &q),
            if (sr != MPI_IN_PLACE) {
                for (int i = 0; i < mine; i++)
                    CHECK(rb[i] == v(root, r * 100 + i, t), "%s: [%d] = %d", what, i, rb[i]);
                dig(what, rb, (size_t)mine * sizeof(int));
            });
        const void *as = inplace ? MPI_IN_PLACE : sb;
        RUN("Allgatherv", "Iallgatherv",
            for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
            for (int i = 0; i < mine; i++) sb[i] = rb[rd[r] + i] = v(r, i, t),
            MPI_Allgatherv_c(as, mine, MPI_INT, rb, rc, rd, MPI_INT, comm),
            MPI_Iallgatherv_c(as, mine, MPI_INT, rb, rc, rd, MPI_INT, comm, &q),
            MPI_Allgatherv_init_c(as, mine, MPI_INT, rb, rc, rd, MPI_INT, comm, MPI_INFO_NULL, &q),
            for (int p = 0; p < size; p++) for (int i = 0; i < rc[p]; i++)
                CHECK(rb[rd[p] + i] == v(p, i, t), "%s: rank %d's [%d] = %d", what, p, i, rb[rd[p] + i]);
            dig(what, rb, (size_t)rtot * sizeof(int)));
    }

    /* Reduce_scatter: rank p's block of the sum is (p+salt)%3 + 1 ints (the same counts everywhere). */
    MPI_Count off[MAXN + 1];
    off[0] = 0;
    for (int p = 0; p < size; p++) {
        rc[p] = (p + salt) % 3 + 1;
        off[p + 1] = off[p] + rc[p];
    }
    RUN("Reduce_scatter", "Ireduce_scatter",
        for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
        for (int i = 0; i < off[size]; i++) sb[i] = v(r, i, t),
        MPI_Reduce_scatter_c(sb, rb, rc, MPI_INT, MPI_SUM, comm),
        MPI_Ireduce_scatter_c(sb, rb, rc, MPI_INT, MPI_SUM, comm, &q),
        MPI_Reduce_scatter_init_c(sb, rb, rc, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &q),
        for (int i = 0; i < rc[r]; i++) {
            int w = 0;
            for (int p = 0; p < size; p++)
                w += v(p, (int)off[r] + i, t);
            CHECK(rb[i] == w, "%s: [%d] = %d, want %d", what, i, rb[i], w);
        } dig(what, rb, (size_t)rc[r] * sizeof(int)));
#undef RUN
    MPI_Type_free(&spaced);
}

/* The neighbourhood forms on a distributed graph: out-edges to r+1 and r+2, in-edges from r-1 and
 * r-2 (mod the size: at 2 ranks one edge of each is a self-loop, at 3 and 4 ranks repeated
 * neighbours do not arise), so in-slot j receives out-block j of rank r-1-j. */
static void neighbours(MPI_Comm comm, int salt, int mode)
{
    int r, size;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    int dst[2] = {(r + 1) % size, (r + 2) % size}, src[2] = {(r - 1 + size) % size, (r - 2 + 2 * size) % size};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(comm, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    static int sb[BUF], rb[BUF];
    MPI_Count sc[2], rc[2];
    MPI_Aint sd[2], rd[2];
    MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
    MPI_Request q = MPI_REQUEST_NULL;
    char what[96];
    const char *mname = mode == 0 ? "" : mode == 1 ? "I" : "init ";
    const char *row_ = NULL;
    long long c0 = 0, m0 = 0;
#define NRUN(ROW, IROW, FILL, B, NB, INIT, CHECKS)                                                                \
    do {                                                                                                         \
        row_ = mode == 0 ? ROW : IROW, c0 = row(row_, "calls"), m0 = row(row_, "mpi");                            \
        for (int round = 0; round < (mode == 2 ? 2 : 1); round++) {                                              \
            int t = salt + 100 * round;                                                                          \
            FILL;                                                                                                \
            int rc_ = mode == 0 ? (B) : mode == 1 ? (NB) : round == 0 ? (INIT) : MPI_SUCCESS;                    \
            if (rc_ == MPI_SUCCESS && mode == 2)                                                                 \
                rc_ = MPI_Start(&q);                                                                             \
            if (rc_ == MPI_SUCCESS && mode)                                                                      \
                rc_ = MPI_Wait(&q, MPI_STATUS_IGNORE);                                                           \
            snprintf(what, sizeof what, "%s%s_c salt=%d", mname, ROW, t);                                        \
            CHECK(rc_ == MPI_SUCCESS, "%s: error %d", what, rc_);                                                \
            CHECKS;                                                                                              \
        }                                                                                                        \
        if (mode == 2)                                                                                           \
            MPI_Request_free(&q);                                                                                \
        counted(row_, c0, m0, mode == 2 ? 2 : 1);                                                                \
    } while (0)

    /* Neighbor_allgather: K ints to both out-neighbours. */
    NRUN("Neighbor_allgather", "Ineighbor_allgather",
         for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
         for (int k = 0; k < K; k++) sb[k] = v(r, k, t),
         MPI_Neighbor_allgather_c(sb, K, MPI_INT, rb, K, MPI_INT, g),
         MPI_Ineighbor_allgather_c(sb, K, MPI_INT, rb, K, MPI_INT, g, &q),
         MPI_Neighbor_allgather_init_c(sb, K, MPI_INT, rb, K, MPI_INT, g, MPI_INFO_NULL, &q),
         for (int j = 0; j < 2; j++) for (int k = 0; k < K; k++)
             CHECK(rb[j * K + k] == v(src[j], k, t), "%s: slot %d [%d] = %d", what, j, k, rb[j * K + k]);
         dig(what, rb, 2 * K * sizeof(int)));

    /* Neighbor_allgatherv: (s+salt)%3 ints from rank s, slots laid out backwards with a gap. */
    MPI_Count mine = (r + salt) % 3;
    for (int j = 0; j < 2; j++)
        rc[j] = (src[j] + salt) % 3;
    rd[1] = 0, rd[0] = (MPI_Aint)rc[1] + 1;
    NRUN("Neighbor_allgatherv", "Ineighbor_allgatherv",
         for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
         for (int k = 0; k < mine; k++) sb[k] = v(r, k, t),
         MPI_Neighbor_allgatherv_c(sb, mine, MPI_INT, rb, rc, rd, MPI_INT, g),
         MPI_Ineighbor_allgatherv_c(sb, mine, MPI_INT, rb, rc, rd, MPI_INT, g, &q),
         MPI_Neighbor_allgatherv_init_c(sb, mine, MPI_INT, rb, rc, rd, MPI_INT, g, MPI_INFO_NULL, &q),
         for (int j = 0; j < 2; j++) for (int k = 0; k < rc[j]; k++)
             CHECK(rb[rd[j] + k] == v(src[j], k, t), "%s: slot %d [%d] = %d", what, j, k, rb[rd[j] + k]);
         dig(what, rb, (size_t)(rd[0] + rc[0]) * sizeof(int)));

    /* Neighbor_alltoall: out-block i of K ints to dst[i]. */
    NRUN("Neighbor_alltoall", "Ineighbor_alltoall",
         for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
         for (int i = 0; i < 2 * K; i++) sb[i] = v(r, (i / K) * 100 + i % K, t),
         MPI_Neighbor_alltoall_c(sb, K, MPI_INT, rb, K, MPI_INT, g),
         MPI_Ineighbor_alltoall_c(sb, K, MPI_INT, rb, K, MPI_INT, g, &q),
         MPI_Neighbor_alltoall_init_c(sb, K, MPI_INT, rb, K, MPI_INT, g, MPI_INFO_NULL, &q),
         for (int j = 0; j < 2; j++) for (int k = 0; k < K; k++)
             CHECK(rb[j * K + k] == v(src[j], j * 100 + k, t), "%s: slot %d [%d] = %d", what, j, k, rb[j * K + k]);
         dig(what, rb, 2 * K * sizeof(int)));

    /* Neighbor_alltoallv and _alltoallw: out-block i holds (r+i+salt)%3 ints; backwards layouts
     * (alltoallw's displacements in bytes). */
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < 2; i++) {
            sc[i] = (r + i + salt + w) % 3;
            rc[i] = (src[i] + i + salt + w) % 3;
        }
        sd[1] = 0, sd[0] = (MPI_Aint)sc[1] + 2;
        rd[1] = 0, rd[0] = (MPI_Aint)rc[1] + 1;
        MPI_Aint sdb[2] = {sd[0] * 4, sd[1] * 4}, rdb[2] = {rd[0] * 4, rd[1] * 4};
        NRUN(w ? "Neighbor_alltoallw" : "Neighbor_alltoallv", w ? "Ineighbor_alltoallw" : "Ineighbor_alltoallv",
             for (int i = 0; i < BUF; i++) sb[i] = rb[i] = -1;
             for (int i = 0; i < 2; i++) for (int k = 0; k < sc[i]; k++) sb[sd[i] + k] = v(r, i * 100 + k, t),
             w ? MPI_Neighbor_alltoallw_c(sb, sc, sdb, ty, rb, rc, rdb, ty, g)
               : MPI_Neighbor_alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g),
             w ? MPI_Ineighbor_alltoallw_c(sb, sc, sdb, ty, rb, rc, rdb, ty, g, &q)
               : MPI_Ineighbor_alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g, &q),
             w ? MPI_Neighbor_alltoallw_init_c(sb, sc, sdb, ty, rb, rc, rdb, ty, g, MPI_INFO_NULL, &q)
               : MPI_Neighbor_alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g, MPI_INFO_NULL, &q),
             for (int j = 0; j < 2; j++) for (int k = 0; k < rc[j]; k++)
                 CHECK(rb[rd[j] + k] == v(src[j], j * 100 + k, t), "%s: slot %d [%d] = %d", what, j, k, rb[rd[j] + k]);
             dig(what, rb, (size_t)(rd[0] + rc[0]) * sizeof(int)));
    }
#undef NRUN
    MPI_Comm_free(&g);
}

/* Values above INT_MAX, the root's or every rank's own (2 ranks). */
static void big(void)
{
    const MPI_Count large = (MPI_Count)INT_MAX + 6; /* bytes */
    MPI_Count rc[2] = {0, 0}, sc[2] = {0, 0};
    MPI_Aint rd[2] = {0, 0}, sd[2] = {0, 0};
    long long c0, m0;
    int rc_;

    /* Gatherv_c: rank 1's piece is `large` bytes at the root's displacement 0, the root's own 8
     * bytes after it at displacement large + 3. (Each buffer only as large as it must be: across
     * simulated nodes the leaders' phase holds copies too, and all of it is on one host.) */
    MPI_Count scount = me == 1 ? large : 8;
    uint8_t *b = malloc((size_t)scount + 32);
    CHECK(b != NULL, "no memory for %lld bytes", (long long)scount);
    if (!b)
        return;
    for (MPI_Count i = 0; i < scount; i++)
        b[i] = (uint8_t)(i * 7 + 3 + me);
    uint8_t *r0 = NULL;
    if (me == 0) {
        r0 = malloc((size_t)large + 16);
        CHECK(r0 != NULL, "no memory at the root");
        rc[0] = 8, rc[1] = large;
        rd[0] = (MPI_Aint)large + 3, rd[1] = 0;
    }
    c0 = row("Gatherv", "calls"), m0 = row("Gatherv", "mpi");
    rc_ = MPI_Gatherv_c(b, scount, MPI_BYTE, r0, rc, rd, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc_ == MPI_SUCCESS, "Gatherv_c of %lld bytes: error %d", (long long)large, rc_);
    counted("Gatherv", c0, m0, 1);
    if (me == 0 && r0) {
        MPI_Count bad = 0;
        for (MPI_Count i = 0; i < large; i++)
            bad += r0[i] != (uint8_t)(i * 7 + 4);
        for (MPI_Count i = 0; i < 8; i++)
            bad += r0[large + 3 + i] != (uint8_t)(i * 7 + 3);
        CHECK(bad == 0, "Gatherv_c of %lld bytes: %lld wrong", (long long)large, (long long)bad);
        free(r0);
    }
    free(b);
    b = malloc((size_t)large + 32);
    CHECK(b != NULL, "no memory for %lld bytes", (long long)large);
    if (!b)
        return;

    /* Alltoallv_c, then Ialltoallv_c: 5 bytes to each rank, landing `large` + 8 * p bytes into the
     * receive buffer (a displacement above INT_MAX on every rank). */
    for (int nb = 0; nb < 2; nb++) {
        uint8_t sbuf[16];
        for (int p = 0; p < 2; p++) {
            sc[p] = rc[p] = 5;
            sd[p] = 8 * p;
            rd[p] = (MPI_Aint)large + 8 * p;
            for (int i = 0; i < 5; i++)
                sbuf[8 * p + i] = (uint8_t)(me * 50 + p * 10 + i + nb);
        }
        memset(b + large, 0, 32);
        const char *name = nb ? "Ialltoallv" : "Alltoallv";
        c0 = row(name, "calls"), m0 = row(name, "mpi");
        MPI_Request q;
        rc_ = nb ? MPI_Ialltoallv_c(sbuf, sc, sd, MPI_BYTE, b, rc, rd, MPI_BYTE, MPI_COMM_WORLD, &q)
                 : MPI_Alltoallv_c(sbuf, sc, sd, MPI_BYTE, b, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        if (nb && rc_ == MPI_SUCCESS)
            rc_ = MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(rc_ == MPI_SUCCESS, "%s_c beyond INT_MAX: error %d", name, rc_);
        counted(name, c0, m0, 1);
        for (int p = 0; p < 2; p++)
            for (int i = 0; i < 5; i++)
                CHECK(b[large + 8 * p + i] == (uint8_t)(p * 50 + me * 10 + i + nb),
                      "%s_c beyond INT_MAX: from %d [%d] = %d", name, p, i, b[large + 8 * p + i]);
    }

    /* Neighbor_alltoallv_c, then Ineighbor_alltoallv_c, on a graph of the two ranks: 5 bytes land
     * `large` + 16 bytes into the receive buffer. */
    int other = 1 - me;
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &other, MPI_UNWEIGHTED, 1, &other, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &g);
    for (int nb = 0; nb < 2; nb++) {
        uint8_t sbuf[8];
        MPI_Count c = 5;
        MPI_Aint s0 = 0, r0 = (MPI_Aint)large + 16;
        for (int i = 0; i < 5; i++)
            sbuf[i] = (uint8_t)(me * 70 + i + nb);
        memset(b + large, 0, 32);
        const char *name = nb ? "Ineighbor_alltoallv" : "Neighbor_alltoallv";
        c0 = row(name, "calls"), m0 = row(name, "mpi");
        MPI_Request q;
        rc_ = nb ? MPI_Ineighbor_alltoallv_c(sbuf, &c, &s0, MPI_BYTE, b, &c, &r0, MPI_BYTE, g, &q)
                 : MPI_Neighbor_alltoallv_c(sbuf, &c, &s0, MPI_BYTE, b, &c, &r0, MPI_BYTE, g);
        if (nb && rc_ == MPI_SUCCESS)
            rc_ = MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(rc_ == MPI_SUCCESS, "%s_c beyond INT_MAX: error %d", name, rc_);
        counted(name, c0, m0, 1);
        for (int i = 0; i < 5; i++)
            CHECK(b[large + 16 + i] == (uint8_t)(other * 70 + i + nb), "%s_c beyond INT_MAX: [%d] = %d", name, i,
                  b[large + 16 + i]);
    }
    MPI_Comm_free(&g);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int is_big = argc > 1 && !strcmp(argv[1], "big");
    digest = is_big ? NULL : mp_digest_open(argc, argv, me);
    layer = !mp_env_is("BOBCAT_MPI", "off", "0") && mp_stat("Alltoallv", "calls") >= 0;
    stats = layer && getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0");
    if (n > MAXN || (is_big && n != 2)) {
        if (me == 0)
            fprintf(stderr, "mp_countv: at most %d ranks (big: 2)\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (is_big) {
        big();
    } else {
        MPI_Comm rev;
        MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev);
        for (int mode = 0; mode < 3; mode++)
            for (int root = 0; root < n; root += n > 1 ? n - 1 : 1) {
                small(MPI_COMM_WORLD, root, 10 * root + mode, mode);
                small(rev, root, 10 * root + 5 + mode, mode);
            }
        for (int mode = 0; mode < 3; mode++) {
            neighbours(MPI_COMM_WORLD, 20 + mode, mode);
            neighbours(rev, 30 + mode, mode);
        }
        MPI_Comm_free(&rev);
    }
    if (digest)
        fclose(digest);
    int fails = 0;
    MPI_Allreduce(&mp_failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mp_countv %s: %s\n", is_big ? "big" : "small", fails ? "FAIL" : "ok");
    MPI_Finalize();
    return fails ? 1 : 0;
}
