/* bench/imb/imb.c — the IMB-MPI1 set the papers use (PingPong, PingPing, Sendrecv, Exchange,
 * Barrier, Bcast, Reduce, Allreduce, Allgather, Alltoall, Alltoallv, Reduce_scatter), IMB-NBC's
 * Iallreduce, Ialltoall, Ibcast and Ibarrier, and Ialltoallv (the call and its wait; --overlap adds IMB-NBC's overlap), plus
 * a windowed non-blocking message rate and the cost of polling (Testany), selected with --test.
 *
 * Timing follows IMB: every participating rank times the whole loop after a barrier and divides by
 * the iteration count; t_min/t_avg/t_max (µs) are taken across ranks. PingPong reports half the
 * round trip. Bandwidth is bytes moved per rank per iteration / t_max, in MB/s with MB = 1e6 B
 * (contracts §3): PingPong and PingPing bytes/t, Sendrecv 2·bytes/t, Exchange 4·bytes/t.
 * Reductions use MPI_FLOAT MPI_SUM over bytes/4 elements, as IMB does. Bcast and Reduce rotate the
 * root each iteration, as IMB does. With --validate every test checks what the last timed
 * iteration delivered (buffers are cleared before the loop). */
#include "bc.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    MPI_Comm comm;
    int rank, size;
    size_t bytes;
    char *sbuf, *rbuf; /* rbuf holds up to size (or window) blocks */
    int *counts;       /* Reduce_scatter's recvcounts; Alltoallv's counts (bytes) */
    int *displs;       /* Alltoallv's displacements */
    long window;       /* msgrate */
    MPI_Request *reqs;
    MPI_Status *stats;
    double el;         /* this rank's seconds in the last timed loop */
} ctx_t;

typedef struct {
    const char *name;  /* IMB's name, accepted case-insensitively by --test */
    const char *bench; /* the "bench" of its JSON lines */
    int pair_only;     /* runs on world ranks 0 and 1 only (PingPong, PingPing) */
    int sized;         /* sweeps message sizes (all but Barrier) */
    double bw_factor;  /* bytes per iteration per rank for bandwidth; 0 = not defined */
    size_t (*rbuf_blocks)(const ctx_t *x);
    void (*prepare)(ctx_t *x);          /* fill send buffers with their patterns */
    void (*iter)(ctx_t *x, long i);     /* one iteration */
    void (*check)(ctx_t *x, long n);    /* after n timed iterations */
    double per_iter_divisor;            /* PingPong: 2 (a round trip is two messages) */
} test_t;

static const float RED_MOD = 5.0f;
/* Seconds of each in-job placement probe (--slices). */
static const double PROBE_S = 0.002;

static uint64_t src_seed(int src, size_t bytes)
{
    return bc_seed((uint64_t)src, 0, bytes);
}

static void check_block(const char *test, const void *buf, size_t bytes, uint64_t seed, int from)
{
    size_t bad = bc_check(buf, bytes, seed);
    if (bad)
        bc_fail("%s %zu B: %zu bytes from rank %d differ", test, bytes, bad, from);
}

static size_t one_block(const ctx_t *x)
{
    (void)x;
    return 1;
}
static size_t two_blocks(const ctx_t *x)
{
    (void)x;
    return 2;
}
static size_t all_blocks(const ctx_t *x)
{
    return (size_t)x->size;
}
static size_t window_blocks(const ctx_t *x)
{
    return (size_t)x->window;
}

static void fill_own(ctx_t *x)
{
    bc_fill(x->sbuf, x->bytes, src_seed(x->rank, x->bytes));
}

/* ---------------------------------------------------------------- PingPong / PingPing ---------- */

/* --touch: before each send, the sender stores into every line of its send buffer (the byte each
 * line already holds, so validation still holds), as a program that produced new data would. IMB's
 * buffers are written once: a receiver that copies straight from the sender's buffer then finds
 * its lines in its own cache from the previous iteration, which new data would not allow. */
static int touch;
/* --offset: where the receive buffer starts past a 4 KiB boundary (the send buffer starts on one);
 * -1: wherever malloc puts them. */
static long offset = -1;

static void touch_lines(char *buf, size_t bytes)
{
    if (!touch)
        return;
    volatile char *p = buf;
    for (size_t k = 0; k < bytes; k += 64)
        p[k] = p[k];
}

static void pingpong_iter(ctx_t *x, long i)
{
    (void)i;
    int cnt = (int)x->bytes;
    touch_lines(x->sbuf, x->bytes);
    if (x->rank == 0) {
        MPI_Send(x->sbuf, cnt, MPI_BYTE, 1, 1, x->comm);
        MPI_Recv(x->rbuf, cnt, MPI_BYTE, 1, 1, x->comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(x->rbuf, cnt, MPI_BYTE, 0, 1, x->comm, MPI_STATUS_IGNORE);
        MPI_Send(x->sbuf, cnt, MPI_BYTE, 0, 1, x->comm);
    }
}

static void pingping_iter(ctx_t *x, long i)
{
    (void)i;
    int cnt = (int)x->bytes, peer = 1 - x->rank;
    MPI_Request r;
    touch_lines(x->sbuf, x->bytes);
    MPI_Isend(x->sbuf, cnt, MPI_BYTE, peer, 2, x->comm, &r);
    MPI_Recv(x->rbuf, cnt, MPI_BYTE, peer, 2, x->comm, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void pair_check(ctx_t *x, long n)
{
    (void)n;
    int peer = 1 - x->rank;
    check_block("PingPong/PingPing", x->rbuf, x->bytes, src_seed(peer, x->bytes), peer);
}

/* ---------------------------------------------------------------- Sendrecv / Exchange ---------- */

static void sendrecv_iter(ctx_t *x, long i)
{
    (void)i;
    int cnt = (int)x->bytes;
    int right = (x->rank + 1) % x->size, left = (x->rank + x->size - 1) % x->size;
    touch_lines(x->sbuf, x->bytes);
    MPI_Sendrecv(x->sbuf, cnt, MPI_BYTE, right, 3, x->rbuf, cnt, MPI_BYTE, left, 3, x->comm,
                 MPI_STATUS_IGNORE);
}

static void sendrecv_check(ctx_t *x, long n)
{
    (void)n;
    int left = (x->rank + x->size - 1) % x->size;
    check_block("Sendrecv", x->rbuf, x->bytes, src_seed(left, x->bytes), left);
}

static void exchange_iter(ctx_t *x, long i)
{
    (void)i;
    int cnt = (int)x->bytes;
    int right = (x->rank + 1) % x->size, left = (x->rank + x->size - 1) % x->size;
    /* Tags tell the two directions apart when left == right (two ranks). */
    MPI_Request r[4];
    MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's access attributes */
    touch_lines(x->sbuf, x->bytes);
    MPI_Irecv(x->rbuf, cnt, MPI_BYTE, left, 4, x->comm, &r[0]);
    MPI_Irecv(x->rbuf + x->bytes, cnt, MPI_BYTE, right, 5, x->comm, &r[1]);
    MPI_Isend(x->sbuf, cnt, MPI_BYTE, left, 5, x->comm, &r[2]);
    MPI_Isend(x->sbuf, cnt, MPI_BYTE, right, 4, x->comm, &r[3]);
    MPI_Waitall(4, r, st);
}

static void exchange_check(ctx_t *x, long n)
{
    (void)n;
    int right = (x->rank + 1) % x->size, left = (x->rank + x->size - 1) % x->size;
    check_block("Exchange", x->rbuf, x->bytes, src_seed(left, x->bytes), left);
    check_block("Exchange", x->rbuf + x->bytes, x->bytes, src_seed(right, x->bytes), right);
}

/* ---------------------------------------------------------------- Barrier / Bcast -------------- */

static void barrier_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Barrier(x->comm);
}

static void no_check(ctx_t *x, long n)
{
    (void)x;
    (void)n;
}

static void no_prepare(ctx_t *x)
{
    (void)x;
}

/* Every rank starts with its own pattern; the first Bcast (root 0) overwrites all buffers with
 * rank 0's, and later roots pass that on — so rank 0's pattern everywhere proves delivery. */
static void bcast_prepare(ctx_t *x)
{
    bc_fill(x->rbuf, x->bytes, src_seed(x->rank, x->bytes));
}

static void bcast_iter(ctx_t *x, long i)
{
    MPI_Bcast(x->rbuf, (int)x->bytes, MPI_BYTE, (int)(i % x->size), x->comm);
}

static void bcast_check(ctx_t *x, long n)
{
    (void)n;
    check_block("Bcast", x->rbuf, x->bytes, src_seed(0, x->bytes), 0);
}

/* ---------------------------------------------------------------- reductions ------------------- */

/* Small integers, so float sums are exact whatever the reduction order. */
static float red_value(int rank, size_t i)
{
    return (float)(rank + 1) + (float)(i % (size_t)RED_MOD);
}

static float red_sum(int size, size_t i)
{
    return (float)size * (float)(size + 1) / 2.0f + (float)size * (float)(i % (size_t)RED_MOD);
}

static void red_prepare(ctx_t *x)
{
    float *s = (float *)x->sbuf;
    for (size_t i = 0; i < x->bytes / sizeof(float); i++)
        s[i] = red_value(x->rank, i);
}

static void red_check_range(const char *test, const float *r, size_t first, size_t count, int size)
{
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += r[i] != red_sum(size, first + i);
    if (bad)
        bc_fail("%s: %zu of %zu sums wrong", test, bad, count);
}

static void reduce_iter(ctx_t *x, long i)
{
    MPI_Reduce(x->sbuf, x->rbuf, (int)(x->bytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
               (int)(i % x->size), x->comm);
}

static void reduce_check(ctx_t *x, long n)
{
    if (x->rank < n) /* this rank was a root at least once */
        red_check_range("Reduce", (float *)x->rbuf, 0, x->bytes / sizeof(float), x->size);
}

static void allreduce_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Allreduce(x->sbuf, x->rbuf, (int)(x->bytes / sizeof(float)), MPI_FLOAT, MPI_SUM, x->comm);
}

static void allreduce_check(ctx_t *x, long n)
{
    (void)n;
    red_check_range("Allreduce", (float *)x->rbuf, 0, x->bytes / sizeof(float), x->size);
}

/* IMB splits the vector as evenly as possible, the first ranks taking the remainder. */
static void rs_prepare(ctx_t *x)
{
    red_prepare(x);
    size_t count = x->bytes / sizeof(float);
    for (int r = 0; r < x->size; r++)
        x->counts[r] = (int)(count / (size_t)x->size + ((size_t)r < count % (size_t)x->size));
}

static void rs_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Reduce_scatter(x->sbuf, x->rbuf, x->counts, MPI_FLOAT, MPI_SUM, x->comm);
}

static void rs_check(ctx_t *x, long n)
{
    (void)n;
    size_t first = 0;
    for (int r = 0; r < x->rank; r++)
        first += (size_t)x->counts[r];
    red_check_range("Reduce_scatter", (float *)x->rbuf, first, (size_t)x->counts[x->rank],
                    x->size);
}

/* ---------------------------------------------------------------- Allgather / Alltoall --------- */

static void allgather_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Allgather(x->sbuf, (int)x->bytes, MPI_BYTE, x->rbuf, (int)x->bytes, MPI_BYTE, x->comm);
}

static void allgather_check(ctx_t *x, long n)
{
    (void)n;
    for (int r = 0; r < x->size; r++)
        check_block("Allgather", x->rbuf + (size_t)r * x->bytes, x->bytes,
                    src_seed(r, x->bytes), r);
}

static void alltoall_prepare(ctx_t *x)
{
    for (int r = 0; r < x->size; r++)
        bc_fill(x->sbuf + (size_t)r * x->bytes, x->bytes,
                bc_seed((uint64_t)x->rank, (uint64_t)r + 1, x->bytes));
}

static void alltoall_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Alltoall(x->sbuf, (int)x->bytes, MPI_BYTE, x->rbuf, (int)x->bytes, MPI_BYTE, x->comm);
}

static void alltoall_check(ctx_t *x, long n)
{
    (void)n;
    for (int r = 0; r < x->size; r++)
        check_block("Alltoall", x->rbuf + (size_t)r * x->bytes, x->bytes,
                    bc_seed((uint64_t)r, (uint64_t)x->rank + 1, x->bytes), r);
}

/* IMB's Alltoallv: every block the same size, counts and displacements as Alltoall's. */
static void alltoallv_prepare(ctx_t *x)
{
    alltoall_prepare(x);
    for (int r = 0; r < x->size; r++) {
        x->counts[r] = (int)x->bytes;
        x->displs[r] = (int)((size_t)r * x->bytes);
    }
}

static void alltoallv_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Alltoallv(x->sbuf, x->counts, x->displs, MPI_BYTE, x->rbuf, x->counts, x->displs, MPI_BYTE, x->comm);
}

/* ---------------------------------------------------------------- message rate ----------------- */

/* Ranks pair up (0→1, 2→3, ...): the sender posts a window of non-blocking sends, the receiver a
 * window of receives into distinct buffers, then a zero-byte acknowledgement closes the window
 * (the OSU mbw_mr pattern). An odd last rank sits out. */
static void msgrate_iter(ctx_t *x, long i)
{
    (void)i;
    int cnt = (int)x->bytes;
    if (x->rank % 2 == 0) {
        int peer = x->rank + 1;
        touch_lines(x->sbuf, x->bytes);
        for (long k = 0; k < x->window; k++)
            MPI_Isend(x->sbuf, cnt, MPI_BYTE, peer, 6, x->comm, &x->reqs[k]);
        MPI_Waitall((int)x->window, x->reqs, x->stats);
        MPI_Recv(NULL, 0, MPI_BYTE, peer, 7, x->comm, MPI_STATUS_IGNORE);
    } else {
        int peer = x->rank - 1;
        for (long k = 0; k < x->window; k++)
            MPI_Irecv(x->rbuf + (size_t)k * x->bytes, cnt, MPI_BYTE, peer, 6, x->comm,
                      &x->reqs[k]);
        MPI_Waitall((int)x->window, x->reqs, x->stats);
        MPI_Send(NULL, 0, MPI_BYTE, peer, 7, x->comm);
    }
}

static void msgrate_check(ctx_t *x, long n)
{
    (void)n;
    if (x->rank % 2 == 0)
        return;
    for (long k = 0; k < x->window; k++)
        check_block("msgrate", x->rbuf + (size_t)k * x->bytes, x->bytes,
                    src_seed(x->rank - 1, x->bytes), x->rank - 1);
}

/* The window of one size: at most 16 MiB in flight, so large sizes do not need huge buffers. */
static size_t msgrate_window(long window, size_t bytes)
{
    size_t w = (size_t)window, cap = bytes ? ((size_t)16 << 20) / bytes : w;
    if (cap < 1)
        cap = 1;
    return w < cap ? w : cap;
}

/* ---------------------------------------------------------------- polling ---------------------- */

/* What a polling loop pays per look: every rank keeps one MPI_ANY_SOURCE/ANY_TAG receive posted
 * that nothing matches during the loop and calls MPI_Testany on it once per iteration (HPCC
 * MPIRandomAccess does this once per table update). Each prepare first completes the receive left
 * from before with a zero-byte message to itself, so the loop always looks at a fresh one. */
static void poll_finish(ctx_t *x)
{
    if (x->reqs[0] == MPI_REQUEST_NULL)
        return;
    MPI_Send(NULL, 0, MPI_BYTE, x->rank, 9, x->comm);
    MPI_Status st;
    MPI_Wait(&x->reqs[0], &st);
    if (st.MPI_SOURCE != x->rank || st.MPI_TAG != 9) {
        fprintf(stderr, "imb: Testany: rank %d: the posted receive matched source %d tag %d\n", x->rank,
                st.MPI_SOURCE, st.MPI_TAG);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void poll_prepare(ctx_t *x)
{
    poll_finish(x);
    MPI_Irecv(x->rbuf, 1, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, x->comm, &x->reqs[0]);
}

static void poll_iter(ctx_t *x, long i)
{
    (void)i;
    int idx, flag;
    MPI_Testany(1, x->reqs, &idx, &flag, x->stats);
    if (flag) {
        fprintf(stderr, "imb: Testany: rank %d: a receive nobody sent to completed\n", x->rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* ---------------------------------------------------------------- nonblocking (IMB-NBC) -------- */
/* The pure time is the nonblocking call and its MPI_Wait; --overlap adds IMB-NBC's overlap run. */
static MPI_Request nbc_req = MPI_REQUEST_NULL;

static void iallreduce_start(ctx_t *x)
{
    MPI_Iallreduce(x->sbuf, x->rbuf, (int)(x->bytes / sizeof(float)), MPI_FLOAT, MPI_SUM, x->comm, &nbc_req);
}

static void iallreduce_iter(ctx_t *x, long i)
{
    (void)i;
    iallreduce_start(x);
    MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
}

static void ialltoall_start(ctx_t *x)
{
    MPI_Ialltoall(x->sbuf, (int)x->bytes, MPI_BYTE, x->rbuf, (int)x->bytes, MPI_BYTE, x->comm, &nbc_req);
}

static void ialltoall_iter(ctx_t *x, long i)
{
    (void)i;
    ialltoall_start(x);
    MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
}

/* Ialltoallv: Alltoallv's equal blocks through the nonblocking call (its counts from alltoallv_prepare). */
static void ialltoallv_start(ctx_t *x)
{
    MPI_Ialltoallv(x->sbuf, x->counts, x->displs, MPI_BYTE, x->rbuf, x->counts, x->displs, MPI_BYTE, x->comm, &nbc_req);
}

static void ialltoallv_iter(ctx_t *x, long i)
{
    (void)i;
    ialltoallv_start(x);
    MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
}

/* Ibcast: Bcast's rotating root through the nonblocking call and its wait (IMB-NBC's Ibcast). */
static void ibcast_iter(ctx_t *x, long i)
{
    MPI_Ibcast(x->rbuf, (int)x->bytes, MPI_BYTE, (int)(i % x->size), x->comm, &nbc_req);
    MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
}

static void ibarrier_iter(ctx_t *x, long i)
{
    (void)i;
    MPI_Ibarrier(x->comm, &nbc_req);
    MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
}

/* ---------------------------------------------------------------- the table -------------------- */

static const test_t tests[] = {
    {"PingPong", "pingpong", 1, 1, 1, one_block, fill_own, pingpong_iter, pair_check, 2},
    {"PingPing", "pingping", 1, 1, 1, one_block, fill_own, pingping_iter, pair_check, 1},
    {"Sendrecv", "sendrecv", 0, 1, 2, one_block, fill_own, sendrecv_iter, sendrecv_check, 1},
    {"Exchange", "exchange", 0, 1, 4, two_blocks, fill_own, exchange_iter, exchange_check, 1},
    {"Barrier", "barrier", 0, 0, 0, one_block, no_prepare, barrier_iter, no_check, 1},
    {"Bcast", "bcast", 0, 1, 0, one_block, bcast_prepare, bcast_iter, bcast_check, 1},
    {"Reduce", "reduce", 0, 1, 0, one_block, red_prepare, reduce_iter, reduce_check, 1},
    {"Allreduce", "allreduce", 0, 1, 0, one_block, red_prepare, allreduce_iter, allreduce_check, 1},
    {"Allgather", "allgather", 0, 1, 0, all_blocks, fill_own, allgather_iter, allgather_check, 1},
    {"Alltoall", "alltoall", 0, 1, 0, all_blocks, alltoall_prepare, alltoall_iter, alltoall_check,
     1},
    {"Alltoallv", "alltoallv", 0, 1, 0, all_blocks, alltoallv_prepare, alltoallv_iter, alltoall_check,
     1},
    {"Reduce_scatter", "reduce_scatter", 0, 1, 0, one_block, rs_prepare, rs_iter, rs_check, 1},
    {"Iallreduce", "iallreduce", 0, 1, 0, one_block, red_prepare, iallreduce_iter, allreduce_check, 1},
    {"Ialltoall", "ialltoall", 0, 1, 0, all_blocks, alltoall_prepare, ialltoall_iter, alltoall_check, 1},
    {"Ialltoallv", "ialltoallv", 0, 1, 0, all_blocks, alltoallv_prepare, ialltoallv_iter, alltoall_check, 1},
    {"Ibcast", "ibcast", 0, 1, 0, one_block, bcast_prepare, ibcast_iter, bcast_check, 1},
    {"Ibarrier", "ibarrier", 0, 0, 0, one_block, no_prepare, ibarrier_iter, no_check, 1},
    {"msgrate", "msgrate", 0, 1, 0, window_blocks, fill_own, msgrate_iter, msgrate_check, 1},
    {"Testany", "testany", 0, 0, 0, one_block, poll_prepare, poll_iter, no_check, 1},
};
#define NTESTS ((int)(sizeof tests / sizeof tests[0]))

typedef struct {
    const test_t *t;
    ctx_t *x;
} loop_t;

static double run_loop(void *arg, long n)
{
    loop_t *l = arg;
    MPI_Barrier(l->x->comm);
    double t0 = bc_now();
    for (long i = 0; i < n; i++)
        l->t->iter(l->x, i);
    return bc_now() - t0;
}

/* One timed loop of n iterations (validated with --validate); leaves the elapsed time in x->el. */
static void measure(const test_t *t, ctx_t *x, loop_t *l, long n, int validate, size_t rblocks)
{
    if (validate) {
        memset(x->rbuf, 0, x->bytes * rblocks);
        t->prepare(x); /* Bcast keeps its data in rbuf */
    }
    x->el = run_loop(l, n);
    if (validate)
        t->check(x, n);
}

/* The JSON lines of one timed loop. slice >= 0: one of --slices, whose placement the in-job probes
 * before and after it give ("mixed" when they disagree). */
static void report(const test_t *t, ctx_t *x, long n, long slice, double before, double after)
{
    char extra[96] = "";
    if (slice >= 0) {
        /* classify the figures as printed (0.1 ns), so that a reader of the line gets the same state */
        before = round(before * 10) / 10;
        after = round(after * 10) / 10;
        const char *a = bc_placement_of(before), *b = bc_placement_of(after);
        snprintf(extra, sizeof extra, "\"placement\": \"%s\", \"probe_ns\": [%.1f, %.1f]",
                 strcmp(a, b) == 0 ? a : "mixed", before, after);
    }
    char sl[32] = "";
    if (slice >= 0)
        snprintf(sl, sizeof sl, ", \"slice\": %ld", slice);
    double el = x->el;
    double per = el / (double)n / t->per_iter_divisor * 1e6, tmin, tavg, tmax;
    bc_minavgmax(x->comm, per, &tmin, &tavg, &tmax);
    if (t->iter == msgrate_iter) {
        /* Messages of all pairs over the slowest rank's elapsed time. */
        double elmax;
        MPI_Allreduce(&el, &elmax, 1, MPI_DOUBLE, MPI_MAX, x->comm);
        double rate = (double)(x->size / 2) * (double)n * (double)x->window / elmax;
        bc_emit_extra("msgrate", rate, "msg/s", "higher", slice >= 0 ? extra : NULL,
                      "\"bytes\": %zu, \"iters\": %ld, \"window\": %ld, \"pairs\": %d%s", x->bytes, n,
                      x->window, x->size / 2, sl);
        return;
    }
    char sz[48] = "";
    if (t->sized)
        snprintf(sz, sizeof sz, "\"bytes\": %zu, ", x->bytes);
    const char *ex = slice >= 0 ? extra : NULL;
    bc_emit_extra("t_min", tmin, "us", "lower", ex, "%s\"iters\": %ld%s", sz, n, sl);
    bc_emit_extra("t_avg", tavg, "us", "lower", ex, "%s\"iters\": %ld%s", sz, n, sl);
    bc_emit_extra("t_max", tmax, "us", "lower", ex, "%s\"iters\": %ld%s", sz, n, sl);
    if (t->bw_factor > 0 && tmax > 0)
        bc_emit_extra("bandwidth", t->bw_factor * (double)x->bytes / tmax, "MB/s", "higher", ex,
                      "%s\"iters\": %ld%s", sz, n, sl);
}

/* --overlap: IMB-NBC's overlap. t_pure is this rank's time per call + wait (the loop just timed);
 * then the same number of calls, each started, followed by t_cpu = the slowest rank's t_pure of
 * computing without MPI (a spin on the clock) on the computing ranks, then waited for: t_ovrl.
 * overlap = 100 * max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu))) on rank 0, which
 * computes in both modes: `one` (only rank 0 computes, its node mates wait: what SMARTMAP's helping
 * gives without a progress thread) and `all` (every rank computes, as IMB-NBC). */
static int overlap_mode; /* 0 off, 1 one, 2 all */
static double cpu_factor = 1.0; /* t_cpu = cpu_factor * t_pure (IMB-NBC: 1) */

static void overlap_run(const test_t *t, ctx_t *x, long n)
{
    double tpure = x->el / (double)n, tcpu;
    MPI_Allreduce(&tpure, &tcpu, 1, MPI_DOUBLE, MPI_MAX, x->comm);
    tcpu *= cpu_factor;
    int computes = overlap_mode == 2 || x->rank == 0;
    void (*start)(ctx_t *) = t->iter == iallreduce_iter ? iallreduce_start
                             : t->iter == ialltoallv_iter ? ialltoallv_start
                                                          : ialltoall_start;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    for (long i = 0; i < n; i++) {
        start(x);
        if (computes) {
            double end = bc_now() + tcpu;
            while (bc_now() < end)
                ;
        }
        MPI_Wait(&nbc_req, MPI_STATUS_IGNORE);
    }
    double tovrl = (bc_now() - t0) / (double)n;
    double lo = tpure < tcpu ? tpure : tcpu, ov = lo > 0 ? (tpure + tcpu - tovrl) / lo : 0;
    ov = 100.0 * (ov < 0 ? 0 : ov > 1 ? 1 : ov);
    /* rank 0's figures (it computes in both modes) */
    double v[3] = {tpure * 1e6, tovrl * 1e6, ov};
    MPI_Bcast(v, 3, MPI_DOUBLE, 0, x->comm);
    const char *mode = overlap_mode == 2 ? "all" : "one";
    const char *fmt = "\"bytes\": %zu, \"iters\": %ld, \"computing\": \"%s\", \"cpu_factor\": %g";
    bc_emit_extra("t_pure", v[0], "us", "lower", NULL, fmt, x->bytes, n, mode, cpu_factor);
    bc_emit_extra("t_ovrl", v[1], "us", "lower", NULL, fmt, x->bytes, n, mode, cpu_factor);
    bc_emit_extra("overlap", v[2], "%", "higher", NULL, fmt, x->bytes, n, mode, cpu_factor);
}

static void run_test(const test_t *t, const bc_common_t *c, long window, long slices)
{
    int wrank = bc_rank, wsize = bc_nranks;
    ctx_t x = {.window = 1};
    int member = 1;
    if (t->pair_only)
        member = wrank < 2;
    else if (t->iter == msgrate_iter)
        member = wrank < wsize - wsize % 2; /* an odd last rank has no partner */
    MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, wrank, &x.comm);
    bc_bench = t->bench;
    if (member) {
        MPI_Comm_rank(x.comm, &x.rank);
        MPI_Comm_size(x.comm, &x.size);
        size_t maxb = 0;
        for (int s = 0; s < c->nsizes; s++)
            maxb = c->sizes[s] > maxb ? c->sizes[s] : maxb;
        if (!t->sized)
            maxb = 0;
        int with_reqs = t->iter == msgrate_iter || t->iter == poll_iter;
        if (with_reqs) {
            x.window = t->iter == msgrate_iter ? window : 1;
            x.reqs = malloc((size_t)x.window * sizeof *x.reqs);
            x.stats = malloc((size_t)x.window * sizeof *x.stats);
            if (x.reqs)
                x.reqs[0] = MPI_REQUEST_NULL;
        }
        size_t rblocks = t->rbuf_blocks(&x);
        size_t sblocks = t->iter == alltoall_iter || t->iter == alltoallv_iter || t->iter == ialltoall_iter ||
                                 t->iter == ialltoallv_iter
                             ? (size_t)x.size
                             : 1;
        size_t rbytes = maxb * rblocks;
        if (t->iter == msgrate_iter) /* windows of large messages are capped, see msgrate_window */
            for (int s = 0; s < c->nsizes; s++)
                if (msgrate_window(window, c->sizes[s]) * c->sizes[s] > rbytes)
                    rbytes = msgrate_window(window, c->sizes[s]) * c->sizes[s];
        /* malloc, not mmap: under yod the buffers must live in libbobcat's segment. */
        /* --offset: both on 4 KiB boundaries, then the receive buffer moved by that many bytes */
        size_t pad = offset >= 0 ? 4096 + (size_t)offset : 0;
        char *sbase = malloc(maxb * sblocks + 64 + pad), *rbase = malloc(rbytes + 64 + pad);
        x.sbuf = sbase && offset >= 0 ? (char *)(((uintptr_t)sbase + 4095) & ~(uintptr_t)4095) : sbase;
        x.rbuf = rbase && offset >= 0 ? (char *)(((uintptr_t)rbase + 4095) & ~(uintptr_t)4095) + offset : rbase;
        x.counts = malloc((size_t)x.size * sizeof *x.counts);
        x.displs = malloc((size_t)x.size * sizeof *x.displs);
        if (!x.sbuf || !x.rbuf || !x.counts || !x.displs || (with_reqs && (!x.reqs || !x.stats))) {
            fprintf(stderr, "imb: out of memory for %s at %zu B\n", t->name, maxb);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        memset(x.sbuf, 0, maxb * sblocks + 64);
        memset(x.rbuf, 0, rbytes + 64);
        bc_pprobe_t pp;
        int probing = slices > 1 && bc_pair_probe_open(x.comm, &pp);

        int nsz = t->sized ? c->nsizes : 1;
        for (int s = 0; s < nsz; s++) {
            x.bytes = t->sized ? c->sizes[s] : 0;
            if (t->iter == msgrate_iter) {
                x.window = (long)msgrate_window(window, x.bytes);
                rblocks = (size_t)x.window;
            }
            t->prepare(&x);
            loop_t l = {t, &x};
            long n = bc_calibrate(x.comm, c, run_loop, &l);
            /* --slices: the budget in slices, each between two placement probes and reported on
             * its own, with the placement state it ran in. */
            long per = slices > 1 ? (n / slices > 0 ? n / slices : 1) : n;
            for (long k = 0; k < slices; k++) {
                double before = probing ? bc_pair_probe(x.comm, &pp, PROBE_S) : -1;
                measure(t, &x, &l, per, c->validate, rblocks);
                double after = probing ? bc_pair_probe(x.comm, &pp, PROBE_S) : -1;
                report(t, &x, per, slices > 1 ? k : -1, before, after);
            }
            if (overlap_mode && (t->iter == iallreduce_iter || t->iter == ialltoall_iter || t->iter == ialltoallv_iter))
                overlap_run(t, &x, per);
        }
        if (t->iter == poll_iter)
            poll_finish(&x);
        free(sbase);
        free(rbase);
        free(x.counts);
        free(x.displs);
        free(x.reqs);
        free(x.stats);
        if (probing)
            bc_pair_probe_close(&pp);
        MPI_Comm_free(&x.comm);
    }
    /* Ranks outside a pair test wait here (IMB leaves them idle). */
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    const char *which = "PingPong", *overlap_s = "off";
    long window = 64, slices = 1;
    bc_common_t c = {.iters = 1000, .warmup = 5, .time_s = 0.05, .max_size = 4 << 20};
    bc_opt_t opts[] = {
        {"test", BC_OPT_STR, &which,
         "comma-separated tests: PingPong PingPing Sendrecv Exchange Barrier Bcast Reduce "
         "Allreduce Allgather Alltoall Alltoallv Reduce_scatter Iallreduce Ialltoall Ialltoallv Ibcast Ibarrier msgrate, "
         "or all"},
        {"window", BC_OPT_LONG, &window, "msgrate: messages in flight per window"},
        {"cpu-factor", BC_OPT_DOUBLE, &cpu_factor,
         "--overlap: compute for this many times t_pure between the start and the wait (IMB-NBC: 1)"},
        {"overlap", BC_OPT_STR, &overlap_s,
         "Iallreduce, Ialltoall, Ialltoallv: also IMB-NBC's overlap (t_pure, t_ovrl, overlap %), with `one` rank "
         "(rank 0) or `all` ranks computing between the start and the wait (default: off)"},
        {"touch", BC_OPT_FLAG, &touch,
         "PingPong, PingPing, Sendrecv, Exchange, msgrate: store into every line of the send "
         "buffer before each send (new data, as a program sends; IMB sends the same bytes)"},
        {"offset", BC_OPT_LONG, &offset,
         "put the send buffer on a 4 KiB boundary and the receive buffer this many bytes (0-4095) "
         "past one, so copies see that relative alignment (default: as malloc places them)"},
        {"slices", BC_OPT_LONG, &slices,
         "time each size in this many slices, reported one by one with the placement state (smt, "
         "core, chip, or mixed) that a cache-line probe between ranks 0 and 1 measured before and "
         "after each (default 1: one loop, no probe)"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "imb",
             "IMB-MPI1 tests (t_min/t_avg/t_max in us per iteration, bandwidth in MB/s) and a "
             "windowed message rate (msg/s).",
             BC_C_ITERS | BC_C_WARMUP | BC_C_TIME | BC_C_SIZES, &c, opts);
    overlap_mode = !strcmp(overlap_s, "one") ? 1 : !strcmp(overlap_s, "all") ? 2 : 0;
    if (!overlap_mode && strcmp(overlap_s, "off"))
        bc_usage_error("--overlap must be one, all or off");
    if (window < 1 || window > 4096)
        bc_usage_error("--window must be in 1..4096");
    if (slices < 1 || slices > 1000)
        bc_usage_error("--slices must be in 1..1000");
    if (offset < -1 || offset > 4095)
        bc_usage_error("--offset must be in 0..4095");
    for (int s = 0; s < c.nsizes; s++)
        if (c.sizes[s] > (size_t)1 << 30)
            bc_usage_error("message size %zu is above 1 GiB (MPI int counts)", c.sizes[s]);

    int selected[NTESTS] = {0};
    char *list = strdup(which);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < NTESTS; k++)
            if (strcasecmp(tok, tests[k].name) == 0 || strcasecmp(tok, "all") == 0) {
                selected[k] = 1;
                found = 1;
            }
        if (!found)
            bc_usage_error("--test: unknown test '%s'", tok);
    }
    free(list);

    bc_init(&argc, &argv);
    for (int k = 0; k < NTESTS; k++) {
        if (!selected[k])
            continue;
        if ((tests[k].pair_only || tests[k].iter == msgrate_iter) && bc_nranks < 2) {
            if (bc_rank == 0)
                fprintf(stderr, "imb: %s needs at least 2 ranks; skipped\n", tests[k].name);
            continue;
        }
        run_test(&tests[k], &c, window, slices);
    }
    bc_bench = "imb";
    return bc_finish();
}
