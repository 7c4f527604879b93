/* shmem_bench: OpenSHMEM micro-benchmarks between PE 0 and PE 1 (plain OpenSHMEM 1.4+, so the same
 * source builds with bobcat's oshcc and with Open MPI's oshmem oshcc; it uses nothing of bobcat's):
 *   put_latency   one-way latency of an 8-byte put seen by the other PE (p + wait_until, RTT / 2)
 *   putmem_issue  issue time of shmem_putmem of 8 B in a loop, quiet at the end (OSU style)
 *   put_quiet     (--rma-twins) shmem_putmem of 8 B + shmem_quiet per iteration, the peer waiting
 *                 in the barrier: MPI_Put + MPI_Win_flush of bench/rma (put_latency) in OpenSHMEM's words
 *   get_blocking  (--rma-twins) blocking shmem_getmem of 8 B per iteration, the peer waiting in the
 *                 barrier: MPI_Get + MPI_Win_flush of bench/rma (get_latency)
 *   get_latency   one-way latency of an 8-byte word seen through blocking shmem_getmem: each PE
 *                 stores a sequence number in its own word and polls the other's with gets
 *                 (RTT / 2; every get that sees the new value fetches a line the peer rewrote)
 *   fetch_add     shmem_long_atomic_fetch_add on the other PE's counter (the peer idle, OSU style:
 *                 after the first add the line stays in PE 0's cache)
 *   fetch_add_contended  PE 0 and PE 1 both fetch_add PE 1's counter at once, so that the line
 *                 moves between the cores; the time per add on PE 0
 *   barrier_all   shmem_barrier_all
 *   put_bw        shmem_putmem bandwidth 64 KiB .. 4 MiB; memcpy_bw: memcpy of the same size on PE 0
 * Output (docs/design/contracts.md §3): one JSON line per metric, the median of --reps
 * repetitions, on PE 0's stdout, then the done line. Validation (always on, outside the timing):
 * the fetch_add counter holds exactly the adds made, and a 4 MiB put arrives intact. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 101
#define BUF_BYTES ((size_t)4 << 20)

static const char *usage =
    "usage: shmem_bench [--impl NAME] [--reps N] [--iters N] [--time S] [--rma-twins] [NAME]\n"
    "  --impl NAME  the OpenSHMEM implementation, for the done line (default bobcat)\n"
    "  --reps N     repetitions of every test; the median is reported (default 15, 1..101)\n"
    "  --iters N    most iterations per repetition of a latency test (default 20000)\n"
    "  --time S     time budget of one latency test, all repetitions (default 0.3 s); the\n"
    "               iteration count is calibrated so that one repetition takes S / N\n"
    "  --rma-twins  also put_quiet and get_blocking: putmem 8 B + quiet and a blocking getmem\n"
    "               8 B per iteration, what bench/rma's put/get + MPI_Win_flush measure\n"
    "Runs with 2 or more PEs (PEs beyond 1 only join the barriers).\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

/* Symmetric static data, each word on its own 128-byte pair of cache lines (as bobcat-probe does),
 * so that no two of them share a line or are coupled by the adjacent-line prefetcher: flags that
 * two PEs poll and write must not false-share. */
#define OWN_LINES __attribute__((aligned(128)))
static long ping OWN_LINES, pong OWN_LINES, gword OWN_LINES, counter OWN_LINES,
    agreed OWN_LINES, check OWN_LINES;
static int me, npes, peer, reps = 15, rma_twins;
static long max_iters = 20000;
static double budget = 0.3;

/* PE 0's value, on every PE. */
static long agree(long v)
{
    if (me == 0)
        for (int pe = 1; pe < npes; pe++)
            shmem_long_p(&agreed, v, pe);
    shmem_barrier_all(); /* completes the puts; the second keeps the next agree() from
                          * overwriting `agreed` before every PE has read it */
    long r = me == 0 ? v : agreed;
    shmem_barrier_all();
    return r;
}

enum test { PINGPONG, PUTMEM, PUTQUIET, GETPONG, GETMEM, FADD, FADD_SHARED, BARRIER };

/* One repetition of a test: n iterations on every PE; returns the time per iteration (s). */
static double run(enum test t, long n, long *src, long *buf, long base)
{
    shmem_barrier_all();
    double t0 = now();
    long x = 0;
    switch (t) {
    case PINGPONG:
        for (long i = 1; i <= n && me <= 1; i++) {
            long seq = base + i;
            if (me == 0) {
                shmem_long_p(&ping, seq, peer);
                shmem_long_wait_until(&pong, SHMEM_CMP_EQ, seq);
            } else {
                shmem_long_wait_until(&ping, SHMEM_CMP_EQ, seq);
                shmem_long_p(&pong, seq, peer);
            }
        }
        break;
    case PUTMEM:
        if (me == 0) {
            for (long i = 0; i < n; i++)
                shmem_putmem(buf, src, 8, peer);
            shmem_quiet();
        }
        break;
    case PUTQUIET:
        if (me == 0)
            for (long i = 0; i < n; i++) {
                shmem_putmem(buf, src, 8, peer);
                shmem_quiet();
            }
        break;
    case GETMEM:
        if (me == 0)
            for (long i = 0; i < n; i++) {
                shmem_getmem(&x, buf, 8, peer);
                /* a data dependence, so the compiler cannot drop or merge the gets */
                __asm__ volatile("" : "+r"(x) : : "memory");
            }
        break;
    case GETPONG:
        /* ping-pong through gets: PE 0 stores seq in its own word, PE 1 gets PE 0's word until it
         * reads seq, stores seq in its own word, and PE 0 gets that until it reads seq. Each
         * direction is one store and the gets that pull the rewritten line (the polls before
         * it arrives read an unchanged one). */
        for (long i = 1; i <= n && me <= 1; i++) {
            long seq = base + i;
            if (me == 0)
                gword = seq;
            do
                shmem_getmem(&x, &gword, 8, peer);
            while (x != seq);
            if (me == 1)
                gword = seq;
        }
        break;
    case FADD:
        if (me == 0)
            for (long i = 0; i < n; i++)
                x += shmem_long_atomic_fetch_add(&counter, 1, peer);
        break;
    case FADD_SHARED:
        if (me <= 1)
            for (long i = 0; i < n; i++)
                x += shmem_long_atomic_fetch_add(&counter, 1, 1);
        break;
    case BARRIER:
        for (long i = 0; i < n; i++)
            shmem_barrier_all();
        break;
    }
    double dt = (now() - t0) / (double)n;
    __asm__ volatile("" ::"r"(x) : "memory");
    return dt;
}

/* Iterations per repetition: doubled from 16 until one pass takes a tenth of a repetition's share
 * of the budget (PE 0's clock decides), then scaled to the share; at most --iters. Every PE runs
 * the same counts, so the calibration passes are also the warm-up. */
static long calibrate(enum test t, long *src, long *buf, long *base, long *fadds)
{
    double share = budget / reps;
    long n = 16;
    for (;;) {
        double per = run(t, n, src, buf, *base);
        *base += n;
        if (t == FADD)
            *fadds += n;
        else if (t == FADD_SHARED)
            *fadds += 2 * n;
        long next = agree(per * n < share / 10 && n < max_iters ? n * 2 : 0);
        if (!next) {
            double want = per > 0 ? share / per : (double)max_iters;
            return agree(want > max_iters ? max_iters : want < 1 ? 1 : (long)want);
        }
        n = next;
    }
}

static void emit(const char *metric, double value, const char *unit, const char *better,
                 long bytes, long iters)
{
    if (me != 0)
        return;
    printf("{\"bench\":\"shmem\",\"metric\":\"%s\",\"value\":%.4g,\"unit\":\"%s\","
           "\"better\":\"%s\",\"params\":{\"ranks\":%d", metric, value, unit, better, npes);
    if (bytes >= 0)
        printf(",\"bytes\":%ld", bytes);
    if (iters > 0)
        printf(",\"iters\":%ld", iters);
    printf(",\"reps\":%d}}\n", reps);
}

static int parse_args(int argc, char **argv, const char **impl)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--impl") && v) {
            *impl = v;
            i++;
        } else if (!strcmp(a, "--reps") && v) {
            reps = (int)strtol(v, &end, 10);
            if (*end || reps < 1 || reps > MAX_REPS)
                return -1;
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            max_iters = strtol(v, &end, 10);
            if (*end || max_iters < 1)
                return -1;
            i++;
        } else if (!strcmp(a, "--time") && v) {
            budget = strtod(v, &end);
            if (*end || !(budget > 0))
                return -1;
            i++;
        } else if (!strcmp(a, "--rma-twins")) {
            rma_twins = 1;
        } else if (a[0] != '-') {
            *impl = a; /* the old positional form: shmem_bench bobcat|oshmem */
        } else {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *impl = "bobcat";
    if (parse_args(argc, argv, &impl) != 0) {
        fprintf(stderr, "shmem_bench: bad arguments\n%s", usage);
        return 2;
    }
    double wall0 = now();
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes < 2) {
        if (me == 0)
            fprintf(stderr, "shmem_bench: needs 2 PEs\n");
        shmem_finalize();
        return 2;
    }
    peer = me == 0 ? 1 : me == 1 ? 0 : me; /* PEs beyond 1 only join the barriers */
    long *buf = shmem_malloc(BUF_BYTES), *src = malloc(BUF_BYTES), *dst = malloc(BUF_BYTES);
    if (!buf || !src || !dst) {
        fprintf(stderr, "shmem_bench: PE %d: no memory for 2 x %zu bytes\n", me, BUF_BYTES);
        shmem_global_exit(3);
    }
    memset(src, 1, BUF_BYTES);
    memset(dst, 2, BUF_BYTES);
    memset(buf, 3, BUF_BYTES);
    double t[MAX_REPS], tw[MAX_REPS];
    long base = 0, fadds = 0;

    long n = calibrate(PINGPONG, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++, base += n)
        t[r] = run(PINGPONG, n, src, buf, base) / 2 * 1e9;
    emit("put_latency", median(t, reps), "ns", "lower", 8, n);

    n = calibrate(PUTMEM, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++)
        t[r] = run(PUTMEM, n, src, buf, 0) * 1e9;
    emit("putmem_issue", median(t, reps), "ns", "lower", 8, n);

    if (rma_twins) {
        n = calibrate(PUTQUIET, src, buf, &base, &fadds);
        for (int r = 0; r < reps; r++)
            t[r] = run(PUTQUIET, n, src, buf, 0) * 1e9;
        emit("put_quiet", median(t, reps), "ns", "lower", 8, n);
    }

    n = calibrate(GETPONG, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++, base += n)
        t[r] = run(GETPONG, n, src, buf, base) / 2 * 1e9;
    emit("get_latency", median(t, reps), "ns", "lower", 8, n);

    if (rma_twins) {
        n = calibrate(GETMEM, src, buf, &base, &fadds);
        for (int r = 0; r < reps; r++)
            t[r] = run(GETMEM, n, src, buf, 0) * 1e9;
        emit("get_blocking", median(t, reps), "ns", "lower", 8, n);
    }

    n = calibrate(FADD, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++, fadds += n)
        t[r] = run(FADD, n, src, buf, 0) * 1e9;
    emit("fetch_add", median(t, reps), "ns", "lower", 8, n);

    n = calibrate(FADD_SHARED, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++, fadds += 2 * n)
        t[r] = run(FADD_SHARED, n, src, buf, 0) * 1e9;
    emit("fetch_add_contended", median(t, reps), "ns", "lower", 8, n);

    n = calibrate(BARRIER, src, buf, &base, &fadds);
    for (int r = 0; r < reps; r++)
        t[r] = run(BARRIER, n, src, buf, 0) * 1e9;
    emit("barrier_all", median(t, reps), "ns", "lower", -1, n);

    for (size_t sz = 64 << 10; sz <= BUF_BYTES; sz *= 4) {
        int k = (int)((64u << 20) / sz);
        for (int r = 0; r < reps; r++) {
            shmem_barrier_all();
            if (me == 1)
                memset(buf, r, sz); /* the destination starts in the peer's cache, as after its use */
            shmem_barrier_all();
            double t0 = now();
            if (me == 0) {
                for (int i = 0; i < k; i++)
                    shmem_putmem(buf, src, sz, peer);
                shmem_quiet();
            }
            t[r] = sz * (double)k / (now() - t0) / 1e9;
            shmem_barrier_all();
            if (me == 1)
                memset(buf, r, sz);
            shmem_barrier_all();
            t0 = now();
            if (me == 0)
                for (int i = 0; i < k; i++) {
                    memcpy(dst, src, sz);
                    __asm__ volatile("" ::: "memory");
                }
            tw[r] = sz * (double)k / (now() - t0) / 1e9;
        }
        emit("put_bw", median(t, reps), "GB/s", "higher", (long)sz, k);
        emit("memcpy_bw", median(tw, reps), "GB/s", "higher", (long)sz, k);
    }

    /* Validation, untimed: PE 1's counter holds every fetch_add PE 0 and PE 1 made, and a 4 MiB put of a
     * pattern arrives whole (each PE fills its own src with the same pattern). */
    for (size_t i = 0; i < BUF_BYTES / sizeof(long); i++)
        src[i] = (long)(i * 2654435761u) ^ 0x5a5a;
    shmem_barrier_all();
    if (me == 0) {
        shmem_putmem(buf, src, BUF_BYTES, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    if (me == 1)
        check = memcmp(buf, src, BUF_BYTES) == 0;
    shmem_barrier_all();
    long adds = me == 0 ? shmem_long_g(&counter, 1) : 0;
    long put_ok = me == 0 ? shmem_long_g(&check, 1) : 0;
    int valid = adds == fadds && put_ok == 1;
    if (me == 0) {
        if (adds != fadds)
            fprintf(stderr, "shmem_bench: fetch_add counter on PE 1 is %ld, %ld adds were made\n",
                    adds, fadds);
        if (put_ok != 1)
            fprintf(stderr, "shmem_bench: a 4 MiB put did not arrive intact on PE 1\n");
        printf("{\"bench\":\"shmem\",\"done\":true,\"valid\":%s,\"wall_s\":%.3f,\"impl\":\"%s\","
               "\"pes\":%d}\n", valid ? "true" : "false", now() - wall0, impl, npes);
    }
    fflush(stdout);
    shmem_barrier_all();
    shmem_free(buf);
    free(src);
    free(dst);
    shmem_finalize();
    return me == 0 && !valid ? 1 : 0;
}
