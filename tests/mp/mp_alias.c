/* Erroneous aliased buffers in collectives: one buffer passed as both input and result where
 * MPI_IN_PLACE is the way. MPI says it is erroneous; MPICH reports it (MPI_ERR_BUFFER) without
 * communicating, Open MPI runs most such calls. With the layer on, neither may hang:
 *
 * - a rooted call (Reduce, Gather, Scatter, Gatherv, Scatterv, blocking and nonblocking) whose root
 *   alone aliases: the root gets MPI_ERR_BUFFER at once (a nonblocking call's request is
 *   MPI_REQUEST_NULL) and makes the call again correctly, which the other ranks' one call joins
 *   (MPICH's test/mpi errors/coll noalias does this); the values are checked;
 * - Allgather and Iallgather with each rank's input at its own block of the result: every rank gets
 *   the same answer (an error everywhere, or the gathered values), as from the real MPI alone.
 *
 * - Iallreduce aliased (and, MPICH, into MPI_IN_PLACE) right after correct ones of its shape;
 * - mismatched piece sizes in Gather/Scatter and their I forms on one node (mismatch below), and
 *   mismatched counts in Bcast and Ibcast, on one node and across nodes (bcast_mismatch below).
 *
 * At two roots (0, the last), on MPI_COMM_WORLD with MPI_ERRORS_RETURN. The run under yod must end;
 * the test's CTest time-out is what a hang would hit. */
#include <mpi.h>

#include "mp_util.h"

enum { K = 2 };

static int me, n;

static int err_class(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

typedef enum { C_REDUCE, C_GATHER, C_SCATTER, C_GATHERV, C_SCATTERV, C_N } call_t;
static const char *names[C_N] = {"Reduce", "Gather", "Scatter", "Gatherv", "Scatterv"};

/* One call: aliased (the root's sbuf == rbuf) or correct; nb: the nonblocking form, waited for. */
static int call(call_t c, int nb, int root, const int *sb, int *rb, const int *cnt, const int *dsp)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    int rc;
    switch (c) {
    case C_REDUCE:
        rc = nb ? MPI_Ireduce(sb, rb, K, MPI_INT, MPI_SUM, root, w, &r)
                : MPI_Reduce(sb, rb, K, MPI_INT, MPI_SUM, root, w);
        break;
    case C_GATHER:
        rc = nb ? MPI_Igather(sb, K, MPI_INT, rb, K, MPI_INT, root, w, &r)
                : MPI_Gather(sb, K, MPI_INT, rb, K, MPI_INT, root, w);
        break;
    case C_SCATTER:
        rc = nb ? MPI_Iscatter(sb, K, MPI_INT, rb, K, MPI_INT, root, w, &r)
                : MPI_Scatter(sb, K, MPI_INT, rb, K, MPI_INT, root, w);
        break;
    case C_GATHERV:
        rc = nb ? MPI_Igatherv(sb, K, MPI_INT, rb, cnt, dsp, MPI_INT, root, w, &r)
                : MPI_Gatherv(sb, K, MPI_INT, rb, cnt, dsp, MPI_INT, root, w);
        break;
    default:
        rc = nb ? MPI_Iscatterv(sb, cnt, dsp, MPI_INT, rb, K, MPI_INT, root, w, &r)
                : MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, K, MPI_INT, root, w);
        break;
    }
    if (nb && rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    else if (nb)
        CHECK(r == MPI_REQUEST_NULL, "%s (nonblocking) failed but left a request", names[c]);
    return rc;
}

static void rooted(call_t c, int nb, int root)
{
    int *sb = malloc(sizeof(int) * K * (size_t)n), *rb = malloc(sizeof(int) * K * (size_t)n);
    int *cnt = malloc(sizeof(int) * 2 * (size_t)n), *dsp = cnt + n;
    for (int q = 0; q < n; q++)
        cnt[q] = K, dsp[q] = K * q;
    for (int i = 0; i < K * n; i++)
        sb[i] = me == root && (c == C_SCATTER || c == C_SCATTERV) ? 1000 + i : (me + 1) * 10 + i % K, rb[i] = -1;
    if (me == root) {
        int rc = call(c, nb, root, sb, sb, cnt, dsp); /* the same buffer twice */
        CHECK(err_class(rc) == MPI_ERR_BUFFER, "%s%s at root %d with one buffer twice: error class %d, want "
              "MPI_ERR_BUFFER", nb ? " (nonblocking)" : "", names[c], root, err_class(rc));
    }
    int rc = call(c, nb, root, sb, rb, cnt, dsp);
    CHECK(rc == MPI_SUCCESS, "%s%s at root %d: rc %d", nb ? " (nonblocking)" : "", names[c], root, rc);
    int bad = 0;
    if (c == C_REDUCE && me == root)
        for (int i = 0; i < K; i++)
            bad += rb[i] != 10 * n * (n + 1) / 2 + n * i;
    if ((c == C_GATHER || c == C_GATHERV) && me == root)
        for (int q = 0; q < n; q++)
            for (int i = 0; i < K; i++)
                bad += rb[K * q + i] != (q + 1) * 10 + i;
    if (c == C_SCATTER || c == C_SCATTERV)
        for (int i = 0; i < K; i++)
            bad += rb[i] != 1000 + K * me + i;
    CHECK(!bad, "%s%s at root %d: %d wrong values", nb ? " (nonblocking)" : "", names[c], root, bad);
    free(sb), free(rb), free(cnt);
}

static void own_block(int nb)
{
    int *buf = malloc(sizeof(int) * K * (size_t)n);
    for (int i = 0; i < K * n; i++)
        buf[i] = i / K == me ? me * 7 + i % K : -1;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = nb ? MPI_Iallgather(buf + K * me, K, MPI_INT, buf, K, MPI_INT, MPI_COMM_WORLD, &r)
                : MPI_Allgather(buf + K * me, K, MPI_INT, buf, K, MPI_INT, MPI_COMM_WORLD);
    if (nb && rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    int failed = rc != MPI_SUCCESS, all = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == 0 || all == n, "%sAllgather with each input at its own block: %d of %d ranks failed", nb ? "I" : "",
          all, n);
    if (!failed) {
        int bad = 0;
        for (int i = 0; i < K * n; i++)
            bad += buf[i] != (i / K) * 7 + i % K;
        CHECK(!bad, "%sAllgather with each input at its own block: %d wrong values", nb ? "I" : "", bad);
    }
    free(buf);
}

/* Mismatched piece sizes (erroneous too), on one node: Gather/Igather whose root takes 1 int per
 * rank while every rank sends 3: the root reports MPI_ERR_TRUNCATE (its own piece did not fit),
 * each piece's first int lands in its place and nothing past the root's buffer is written;
 * Scatter/Iscatter whose root sends 3 ints per rank and takes only 1 itself: MPI_ERR_TRUNCATE at
 * the root, the others get their 3. (Across nodes the hierarchical paths still size the pieces
 * each rank by its own count.) */
static void mismatch(int nb, int scatter)
{
    enum { G = 3, CANARY = 8 };
    int root = n - 1, bad = 0;
    int *sb = malloc(sizeof(int) * G * (size_t)n), *rb = malloc(sizeof(int) * (G * (size_t)n + CANARY));
    for (int i = 0; i < G * n; i++)
        sb[i] = scatter ? 500 + i : me * 10 + i;
    for (int i = 0; i < G * n + CANARY; i++)
        rb[i] = -7;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc, take = me == root ? 1 : G;
    if (scatter)
        rc = nb ? MPI_Iscatter(sb, G, MPI_INT, rb, take, MPI_INT, root, MPI_COMM_WORLD, &r)
                : MPI_Scatter(sb, G, MPI_INT, rb, take, MPI_INT, root, MPI_COMM_WORLD);
    else
        rc = nb ? MPI_Igather(sb, G, MPI_INT, rb, take, MPI_INT, root, MPI_COMM_WORLD, &r)
                : MPI_Gather(sb, G, MPI_INT, rb, take, MPI_INT, root, MPI_COMM_WORLD);
    if (nb && rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    const char *what = scatter ? (nb ? "Iscatter" : "Scatter") : (nb ? "Igather" : "Gather");
    if (me == root)
        CHECK(err_class(rc) == MPI_ERR_TRUNCATE, "%s, the root's own piece mismatched: error class %d, want "
              "MPI_ERR_TRUNCATE", what, err_class(rc));
    if (!scatter && me == root) {
        for (int q = 0; q < n; q++)
            bad += rb[q] != q * 10;
        for (int i = n; i < n + CANARY; i++)
            bad += rb[i] != -7;
    }
    if (scatter) {
        for (int i = 0; i < take; i++)
            bad += rb[i] != 500 + G * me + i;
        for (int i = take; i < take + CANARY; i++)
            bad += rb[i] != -7;
    }
    CHECK(!bad, "%s with mismatched pieces: %d wrong values or bytes written past the buffer", what, bad);
    free(sb), free(rb);
}

/* Bcast with mismatched counts: the root sends `sent` ints, the others expect `want`: each receiver
 * gets the fewer, nothing past its buffer, and an error (MPI_ERR_TRUNCATE when the root sent more,
 * any error when less), as MPICH's errors/coll bcastlength and ibcastlength ask. Across nodes at a
 * root that leads its node (as there): a receiver off the root's node whose count is its leader's
 * learns of a mismatch from its leader, who learns it from the real MPI (its error class, its
 * values: MPICH says MPI_ERR_OTHER and leaves a truncated buffer alone). Across nodes on MPICH
 * alone: Open MPI does not see a broadcast that sends fewer bytes than expected (bare, it hangs in
 * bcastlength), and one that sends more crashes it (SIGSEGV in ob1 after libnbc's error 15). */
static void bcast_mismatch(int sent, int want, int nb, int root, int same_node)
{
    enum { CANARY = 8 };
    int bad = 0, take = me == root ? sent : want;
    int *b = malloc(sizeof(int) * (size_t)(take + CANARY));
    for (int i = 0; i < take + CANARY; i++)
        b[i] = me == root && i < take ? 300 + i : -7;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = nb ? MPI_Ibcast(b, take, MPI_INT, root, MPI_COMM_WORLD, &r) : MPI_Bcast(b, take, MPI_INT, root, MPI_COMM_WORLD);
    if (nb && rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    const char *f = nb ? "Ibcast" : "Bcast";
    if (me != root) {
        int got = sent < want ? sent : want;
        CHECK(rc != MPI_SUCCESS && (sent < want || !same_node || err_class(rc) == MPI_ERR_TRUNCATE),
              "%s of %d ints into %d from root %d: error class %d", f, sent, want, root, err_class(rc));
        for (int i = 0; i < got && same_node; i++) /* (off the root's node: as the real MPI left them) */
            bad += b[i] != 300 + i;
        for (int i = want; i < want + CANARY; i++)
            bad += b[i] != -7;
    }
    CHECK(!bad, "%s of %d ints into %d: %d wrong values or bytes written past the buffer", f, sent, want, bad);
    free(b);
}

/* Iallreduce with one buffer for both sides, and (MPICH) with MPI_IN_PLACE as the result, right
 * after correct calls of the same shape (bobcat's lean calls remember that shape: the erroneous
 * call must still get the MPI's own answer, the same on every rank, and never a write through the
 * MPI_IN_PLACE sentinel). Then a correct call again, checked. */
static void lean_alias(void)
{
    int x = me + 1, y = 0;
    MPI_Request r;
    for (int i = 0; i < 3; i++) {
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    int b = me + 1;
    int rc = MPI_Iallreduce(&b, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    int cls = err_class(rc), lo = 0, hi = 0;
    MPI_Allreduce(&cls, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&cls, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "aliased Iallreduce after lean ones: error classes %d..%d across ranks", lo, hi);
#ifdef MPICH
    rc = MPI_Iallreduce(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "Iallreduce into MPI_IN_PLACE after lean ones: MPICH accepted it");
#endif
    y = 0;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(y == n * (n + 1) / 2, "Iallreduce after the erroneous ones: %d, want %d", y, n * (n + 1) / 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int layer = mp_stat("Gather", "calls") >= 0 && !mp_env_is("BOBCAT_MPI", "off", "0");
    CHECK(layer, "the MPI layer is not on: this test checks bobcat's answer (run it under yod)");
    int roots[2] = {0, n - 1};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < C_N; c++)
            for (int nb = 0; nb < 2; nb++)
                rooted((call_t)c, nb, roots[k]);
    for (int nb = 0; nb < 2; nb++)
        own_block(nb);
    lean_alias();
    int one_node = 0;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &one_node);
    one_node = one_node == n;
    MPI_Comm_free(&node);
    for (int nb = 0; nb < 2 && one_node; nb++)
        for (int sc = 0; sc < 2; sc++)
            mismatch(nb, sc);
    /* inline both, inline one side only, big; one node: at either root, else at 0 (a leader) */
    static const int bc[][2] = {{1, 10}, {10, 1}, {4, 40}, {40, 4}, {3000, 30000}, {30000, 3000}};
#ifdef MPICH
    int roots_bc = one_node ? 2 : 1;
#else /* (across nodes the leaders' broadcast is Open MPI's, which hangs or crashes on it bare) */
    int roots_bc = one_node ? 2 : 0;
#endif
    for (int k = 0; k < roots_bc; k++)
        for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++)
            for (int nb = 0; nb < 2; nb++)
                bcast_mismatch(bc[i][0], bc[i][1], nb, roots[k], one_node || me < n / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    int all = 0;
    MPI_Allreduce(&mp_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mp_alias: %d ranks: %s\n", n, all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
