/* MPI 4.0's large-count collectives (MPI_Bcast_c, MPI_Allreduce_c, ... and their nonblocking forms)
 * take the layer's path as the int forms do (pmpi_coll_count.c).
 *
 * `small` (default): every one of the twenty calls and the ten persistent forms (MPI_Bcast_init_c,
 * ...; each started twice) with counts that fit an int, on MPI_COMM_WORLD
 * and on a communicator of the ranks in reverse order, roots 0 and the last, MPI_IN_PLACE where
 * the call has it; values checked here, digests compared with the real MPI's (run_compare.sh);
 * with BOBCAT_STATS on one node, each call counted in its int form's row and none sent to the
 * real MPI.
 * `big`: counts above INT_MAX (2^31 + 5 one-byte elements, 2 GiB a rank): MPI_Bcast_c (one
 * element of a datatype of that many, on bobcat's path), MPI_Allreduce_c in place (in pieces of
 * 2^30 elements, three calls of MPI_Allreduce on bobcat's path), every byte checked.
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

static long long row(const char *call, const char *key)
{
    return stats ? mp_stat(call, key) : 0;
}

/* The calls of one row grew by `calls`, none went to the real MPI (one node, stats on). */
static void counted(const char *call, long long calls0, long long mpi0, long long calls)
{
    if (!stats)
        return;
    CHECK(row(call, "calls") - calls0 == calls, "%s: %lld calls counted, want %lld", call,
          row(call, "calls") - calls0, calls);
    CHECK(row(call, "mpi") == mpi0, "%s: %lld calls went to the real MPI", call, row(call, "mpi") - mpi0);
}

static int v(int r, int i, int salt) { return (r + 1) * 1000 + i * 7 + salt; }

enum { K = 3 };

static void small(MPI_Comm comm, int root, int salt)
{
    int r, size;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    int sb[K * 16], rb[K * 16];
    MPI_Request q;
    char what[64];
    for (int nb = 0; nb < 2; nb++) {
        const char *name;
        long long c0, m0;
#define DONE(rc)                                                                                               \
    do {                                                                                                       \
        int rc_ = (rc);                                                                                        \
        if (nb && rc_ == MPI_SUCCESS)                                                                          \
            rc_ = MPI_Wait(&q, MPI_STATUS_IGNORE);                                                             \
        CHECK(rc_ == MPI_SUCCESS, "%s: error %d", name, rc_);                                                  \
        counted(name, c0, m0, 1);                                                                              \
        snprintf(what, sizeof what, "%s root=%d salt=%d", name, root, salt);                                   \
    } while (0)

        /* Bcast */
        for (int i = 0; i < K; i++)
            rb[i] = r == root ? v(root, i, salt) : -1;
        name = nb ? "Ibcast" : "Bcast", c0 = row(name, "calls"), m0 = row(name, "mpi");
        DONE(nb ? MPI_Ibcast_c(rb, K, MPI_INT, root, comm, &q) : MPI_Bcast_c(rb, K, MPI_INT, root, comm));
        for (int i = 0; i < K; i++)
            CHECK(rb[i] == v(root, i, salt), "%s: [%d] = %d, want %d", what, i, rb[i], v(root, i, salt));
        dig(what, rb, K * sizeof(int));

        /* Allreduce (and in place), Reduce, Scan, Exscan */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < K; i++)
                sb[i] = rb[i] = v(r, i, salt);
            name = nb ? "Iallreduce" : "Allreduce", c0 = row(name, "calls"), m0 = row(name, "mpi");
            const void *s = inplace ? MPI_IN_PLACE : sb;
            DONE(nb ? MPI_Iallreduce_c(s, rb, K, MPI_INT, MPI_SUM, comm, &q)
                    : MPI_Allreduce_c(s, rb, K, MPI_INT, MPI_SUM, comm));
            for (int i = 0; i < K; i++) {
                int w = 0;
                for (int p = 0; p < size; p++)
                    w += v(p, i, salt);
                CHECK(rb[i] == w, "%s in place %d: [%d] = %d, want %d", what, inplace, i, rb[i], w);
            }
            dig(what, rb, K * sizeof(int));
        }
        for (int i = 0; i < K; i++)
            sb[i] = v(r, i, salt), rb[i] = -1;
        name = nb ? "Ireduce" : "Reduce", c0 = row(name, "calls"), m0 = row(name, "mpi");
        DONE(nb ? MPI_Ireduce_c(sb, rb, K, MPI_INT, MPI_MAX, root, comm, &q)
                : MPI_Reduce_c(sb, rb, K, MPI_INT, MPI_MAX, root, comm));
        if (r == root) {
            for (int i = 0; i < K; i++)
                CHECK(rb[i] == v(size - 1, i, salt), "%s: [%d] = %d", what, i, rb[i]);
            dig(what, rb, K * sizeof(int));
        }
        for (int ex = 0; ex < 2; ex++) {
            for (int i = 0; i < K; i++)
                sb[i] = v(r, i, salt), rb[i] = -1;
            name = ex ? (nb ? "Iexscan" : "Exscan") : (nb ? "Iscan" : "Scan");
            c0 = row(name, "calls"), m0 = row(name, "mpi");
            DONE(ex ? (nb ? MPI_Iexscan_c(sb, rb, K, MPI_INT, MPI_SUM, comm, &q)
                          : MPI_Exscan_c(sb, rb, K, MPI_INT, MPI_SUM, comm))
                    : (nb ? MPI_Iscan_c(sb, rb, K, MPI_INT, MPI_SUM, comm, &q)
                          : MPI_Scan_c(sb, rb, K, MPI_INT, MPI_SUM, comm)));
            if (!ex || r > 0) {
                for (int i = 0; i < K; i++) {
                    int w = 0;
                    for (int p = 0; p < r + !ex; p++)
                        w += v(p, i, salt);
                    CHECK(rb[i] == w, "%s: [%d] = %d, want %d", what, i, rb[i], w);
                }
                dig(what, rb, K * sizeof(int));
            }
        }
        /* Reduce_scatter_block: block p of the sum to rank p */
        for (int p = 0; p < size; p++)
            for (int i = 0; i < K; i++)
                sb[p * K + i] = v(r, p * K + i, salt);
        name = nb ? "Ireduce_scatter_block" : "Reduce_scatter_block", c0 = row(name, "calls"), m0 = row(name, "mpi");
        DONE(nb ? MPI_Ireduce_scatter_block_c(sb, rb, K, MPI_INT, MPI_SUM, comm, &q)
                : MPI_Reduce_scatter_block_c(sb, rb, K, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < K; i++) {
            int w = 0;
            for (int p = 0; p < size; p++)
                w += v(p, r * K + i, salt);
            CHECK(rb[i] == w, "%s: [%d] = %d, want %d", what, i, rb[i], w);
        }
        dig(what, rb, K * sizeof(int));

        /* Gather (the root in place, then not), Scatter, Allgather (in place, then not), Alltoall */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < K * size; i++)
                rb[i] = -1;
            for (int i = 0; i < K; i++)
                sb[i] = v(r, i, salt);
            if (inplace && r == root)
                for (int i = 0; i < K; i++)
                    rb[r * K + i] = sb[i];
            const void *s = inplace && r == root ? MPI_IN_PLACE : sb;
            name = nb ? "Igather" : "Gather", c0 = row(name, "calls"), m0 = row(name, "mpi");
            DONE(nb ? MPI_Igather_c(s, K, MPI_INT, rb, K, MPI_INT, root, comm, &q)
                    : MPI_Gather_c(s, K, MPI_INT, rb, K, MPI_INT, root, comm));
            if (r == root) {
                for (int p = 0; p < size; p++)
                    for (int i = 0; i < K; i++)
                        CHECK(rb[p * K + i] == v(p, i, salt), "%s: rank %d's [%d] = %d", what, p, i, rb[p * K + i]);
                dig(what, rb, K * size * sizeof(int));
            }
            for (int p = 0; p < size; p++)
                for (int i = 0; i < K; i++)
                    sb[p * K + i] = v(p, i, salt + 1);
            for (int i = 0; i < K; i++)
                rb[i] = -1;
            void *rr = inplace && r == root ? MPI_IN_PLACE : rb;
            name = nb ? "Iscatter" : "Scatter", c0 = row(name, "calls"), m0 = row(name, "mpi");
            DONE(nb ? MPI_Iscatter_c(sb, K, MPI_INT, rr, K, MPI_INT, root, comm, &q)
                    : MPI_Scatter_c(sb, K, MPI_INT, rr, K, MPI_INT, root, comm));
            if (rr != MPI_IN_PLACE) {
                for (int i = 0; i < K; i++)
                    CHECK(rb[i] == v(r, i, salt + 1), "%s: [%d] = %d", what, i, rb[i]);
                dig(what, rb, K * sizeof(int));
            }
            for (int i = 0; i < K * size; i++)
                rb[i] = -1;
            for (int i = 0; i < K; i++)
                sb[i] = rb[r * K + i] = v(r, i, salt + 2);
            s = inplace ? MPI_IN_PLACE : sb;
            name = nb ? "Iallgather" : "Allgather", c0 = row(name, "calls"), m0 = row(name, "mpi");
            DONE(nb ? MPI_Iallgather_c(s, K, MPI_INT, rb, K, MPI_INT, comm, &q)
                    : MPI_Allgather_c(s, K, MPI_INT, rb, K, MPI_INT, comm));
            for (int p = 0; p < size; p++)
                for (int i = 0; i < K; i++)
                    CHECK(rb[p * K + i] == v(p, i, salt + 2), "%s: rank %d's [%d] = %d", what, p, i, rb[p * K + i]);
            dig(what, rb, K * size * sizeof(int));
        }
        for (int p = 0; p < size; p++)
            for (int i = 0; i < K; i++)
                sb[p * K + i] = v(r, p * 100 + i, salt), rb[p * K + i] = -1;
        name = nb ? "Ialltoall" : "Alltoall", c0 = row(name, "calls"), m0 = row(name, "mpi");
        DONE(nb ? MPI_Ialltoall_c(sb, K, MPI_INT, rb, K, MPI_INT, comm, &q)
                : MPI_Alltoall_c(sb, K, MPI_INT, rb, K, MPI_INT, comm));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < K; i++)
                CHECK(rb[p * K + i] == v(p, r * 100 + i, salt), "%s: from %d [%d] = %d", what, p, i, rb[p * K + i]);
        dig(what, rb, K * size * sizeof(int));
#undef DONE
    }
}

/* The persistent forms (MPI_X_init_c): each made once, started twice with new inputs, checked;
 * every start counted in the nonblocking form's row. */
static void persistent(MPI_Comm comm, int root, int salt)
{
    int r, size;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    int sb[K * 16], rb[K * 16];
    enum { BCAST, ALLRED, RED, SCAN, EXSCAN, RSB, GATHER, SCATTER, ALLGATHER, ALLTOALL, NP };
    static const char *rows[NP] = {"Ibcast", "Iallreduce", "Ireduce", "Iscan", "Iexscan", "Ireduce_scatter_block",
                                   "Igather", "Iscatter", "Iallgather", "Ialltoall"};
    for (int c = 0; c < NP; c++) {
        /* MPICH 4.0's own persistent Gather, Scatter and Allgather are wrong: they take the send
         * buffer's contents at init and leave the root's own piece out (pmodels/mpich#7078, fixed
         * in 4.2.3), and Allgather fails at 3 ranks ("Invalid communicator", #6423). With the layer
         * off (run_compare's reference) they are not called; with it on they are bobcat's, checked,
         * without a digest. */
        int theirs = c == GATHER || c == SCATTER || c == ALLGATHER;
        if (theirs && !layer)
            continue;
        MPI_Request q = MPI_REQUEST_NULL;
        int rc;
        MPI_Info in = MPI_INFO_NULL;
        switch (c) {
        case BCAST: rc = MPI_Bcast_init_c(rb, K, MPI_INT, root, comm, in, &q); break;
        case ALLRED: rc = MPI_Allreduce_init_c(sb, rb, K, MPI_INT, MPI_SUM, comm, in, &q); break;
        case RED: rc = MPI_Reduce_init_c(sb, rb, K, MPI_INT, MPI_SUM, root, comm, in, &q); break;
        case SCAN: rc = MPI_Scan_init_c(sb, rb, K, MPI_INT, MPI_SUM, comm, in, &q); break;
        case EXSCAN: rc = MPI_Exscan_init_c(sb, rb, K, MPI_INT, MPI_SUM, comm, in, &q); break;
        case RSB: rc = MPI_Reduce_scatter_block_init_c(sb, rb, K, MPI_INT, MPI_SUM, comm, in, &q); break;
        case GATHER: rc = MPI_Gather_init_c(sb, K, MPI_INT, rb, K, MPI_INT, root, comm, in, &q); break;
        case SCATTER: rc = MPI_Scatter_init_c(sb, K, MPI_INT, rb, K, MPI_INT, root, comm, in, &q); break;
        case ALLGATHER: rc = MPI_Allgather_init_c(sb, K, MPI_INT, rb, K, MPI_INT, comm, in, &q); break;
        default: rc = MPI_Alltoall_init_c(sb, K, MPI_INT, rb, K, MPI_INT, comm, in, &q); break;
        }
        CHECK(rc == MPI_SUCCESS, "%s_init_c: error %d", rows[c] + 1, rc);
        long long c0 = row(rows[c], "calls"), m0 = row(rows[c], "mpi");
        for (int start = 0; start < 2; start++) {
            int t = salt + 100 * start;
            for (int i = 0; i < K * size; i++) {
                sb[i] = v(r, i, t);
                rb[i] = c == BCAST && r == root && i < K ? v(root, i, t) : -1;
            }
            CHECK(MPI_Start(&q) == MPI_SUCCESS && MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s_init_c start",
                  rows[c] + 1);
            char what[64];
            snprintf(what, sizeof what, "%s_init_c root=%d salt=%d", rows[c] + 1, root, t);
            int nres = c == GATHER || c == ALLGATHER || c == ALLTOALL ? K * size : K;
            int mine = !((c == RED || c == GATHER) && r != root) && !(c == EXSCAN && r == 0);
            for (int i = 0; mine && i < nres; i++) {
                int w = 0, p = i / K, j = i % K;
                switch (c) {
                case BCAST: w = v(root, i, t); break;
                case SCATTER: w = v(root, r * K + i, t); break;
                case GATHER:
                case ALLGATHER: w = v(p, j, t); break;
                case ALLTOALL: w = v(p, r * K + j, t); break;
                default:
                    for (int q2 = 0; q2 < (c == SCAN ? r + 1 : c == EXSCAN ? r : size); q2++)
                        w += v(q2, c == RSB ? r * K + i : i, t);
                }
                CHECK(rb[i] == w, "%s: [%d] = %d, want %d", what, i, rb[i], w);
            }
            if (mine && !theirs)
                dig(what, rb, (size_t)nres * sizeof(int));
        }
        counted(rows[c], c0, m0, 2);
        MPI_Request_free(&q);
    }
}

/* 2^31 + 5 bytes: above INT_MAX elements of MPI_BYTE / MPI_UINT8_T. */
static void big(void)
{
    const MPI_Count count = (MPI_Count)INT_MAX + 6;
    uint8_t *b = malloc((size_t)count);
    CHECK(b != NULL, "no memory for %lld bytes", (long long)count);
    if (!b)
        return;
    for (MPI_Count i = 0; i < count; i++)
        b[i] = me == 0 ? (uint8_t)(i * 7 + 3) : 0;
    long long c0 = row("Bcast", "calls"), m0 = row("Bcast", "mpi");
    int rc = MPI_Bcast_c(b, count, MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Bcast_c of %lld bytes: error %d", (long long)count, rc);
    counted("Bcast", c0, m0, 1);
    MPI_Count bad = 0;
    for (MPI_Count i = 0; i < count; i++)
        bad += b[i] != (uint8_t)(i * 7 + 3);
    CHECK(bad == 0, "Bcast_c of %lld bytes: %lld wrong", (long long)count, (long long)bad);

    for (MPI_Count i = 0; i < count; i++)
        b[i] = (uint8_t)(i + me);
    c0 = row("Allreduce", "calls"), m0 = row("Allreduce", "mpi");
    rc = MPI_Allreduce_c(MPI_IN_PLACE, b, count, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "Allreduce_c of %lld bytes: error %d", (long long)count, rc);
    counted("Allreduce", c0, m0, 3); /* 2^30, 2^30, 6 */
    bad = 0;
    for (MPI_Count i = 0; i < count; i++) {
        unsigned w = 0;
        for (int p = 0; p < n; p++)
            w += (uint8_t)(i + p);
        bad += b[i] != (uint8_t)w;
    }
    CHECK(bad == 0, "Allreduce_c of %lld bytes: %lld wrong", (long long)count, (long long)bad);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int is_big = argc > 1 && !strcmp(argv[1], "big");
    digest = is_big ? NULL : mp_digest_open(argc, argv, me);
    layer = !mp_env_is("BOBCAT_MPI", "off", "0") && mp_stat("Bcast", "calls") >= 0;
    stats = layer && getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0");
    if (n > 16) {
        if (me == 0)
            fprintf(stderr, "mp_count: at most 16 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (is_big) {
        big();
    } else {
        MPI_Comm rev;
        MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev);
        for (int root = 0; root < n; root += n > 1 ? n - 1 : 1) {
            small(MPI_COMM_WORLD, root, 10 * root);
            small(rev, root, 10 * root + 5);
            persistent(MPI_COMM_WORLD, root, 10 * root + 7);
            persistent(rev, root, 10 * root + 8);
        }
        MPI_Comm_free(&rev);
    }
    if (digest)
        fclose(digest);
    int fails = 0;
    MPI_Allreduce(&mp_failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mp_count %s: %s\n", is_big ? "big" : "small", fails ? "FAIL" : "ok");
    MPI_Finalize();
    return fails ? 1 : 0;
}
