/* shmem_bench: OpenSHMEM micro-benchmarks between PE 0 and PE 1 (plain OpenSHMEM 1.4+, so the same
 * source builds with bobcat's oshcc and with Open MPI's oshmem oshcc):
 *   pingpong8   one-way latency of an 8-byte put seen by the other PE (p + wait_until, RTT / 2)
 *   putmem8     issue time of shmem_putmem of 8 B in a loop, quiet at the end (OSU style)
 *   getmem8     time of a blocking shmem_getmem of 8 B from a line the other PE rewrote
 *   fadd        shmem_long_atomic_fetch_add on the other PE's counter (the peer idle, OSU style)
 *   barrier     shmem_barrier_all
 *   put_bw      shmem_putmem bandwidth, 64 KiB .. 4 MiB, and memcpy of the same size on PE 0
 * Output: one JSON line per metric (median of `reps` repetitions) on PE 0's stdout. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

#define REPS 15
static long ping, pong, line[8];

int main(int argc, char **argv)
{
    const char *impl = argc > 1 ? argv[1] : "bobcat";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 2) {
        if (me == 0)
            fprintf(stderr, "shmem_bench: needs 2 PEs\n");
        shmem_finalize();
        return 2;
    }
    int peer = 1 - me;
    double t[REPS];
    const int iters = 20000;

    /* ping-pong of sequence numbers: one-way latency of an 8-byte put */
    for (int r = 0; r < REPS; r++) {
        shmem_barrier_all();
        double t0 = now();
        if (me <= 1) {
            for (long i = 1; i <= iters; i++) {
                long seq = (long)r * iters + i;
                if (me == 0) {
                    shmem_long_p(&ping, seq, peer);
                    shmem_long_wait_until(&pong, SHMEM_CMP_EQ, seq);
                } else {
                    shmem_long_wait_until(&ping, SHMEM_CMP_EQ, seq);
                    shmem_long_p(&pong, seq, peer);
                }
            }
        }
        t[r] = (now() - t0) / iters / 2 * 1e9;
    }
    double one_way = median(t, REPS);
    if (me == 0)
        printf("{\"impl\":\"%s\",\"metric\":\"pingpong8_ns\",\"value\":%.1f}\n", impl, one_way);

    long *buf = shmem_malloc(4 << 20), *src = malloc(4 << 20), *dst = malloc(4 << 20);
    memset(src, 1, 4 << 20);
    memset(dst, 2, 4 << 20);
    memset(buf, 3, 4 << 20);
    for (int r = 0; r < REPS; r++) {
        shmem_barrier_all();
        double t0 = now();
        if (me == 0) {
            for (int i = 0; i < iters; i++)
                shmem_putmem(buf, src, 8, peer);
            shmem_quiet();
        }
        t[r] = (now() - t0) / iters * 1e9;
    }
    if (me == 0)
        printf("{\"impl\":\"%s\",\"metric\":\"putmem8_ns\",\"value\":%.1f}\n", impl, median(t, REPS));

    /* getmem of a line the peer has just rewritten: each iteration is a get plus a ping-pong that
     * tells the peer to rewrite; the same loop without the get, interleaved, is subtracted. */
    double tg[REPS], tp[REPS];
    long tag = 0;
    for (int r = 0; r < 2 * REPS; r++) {
        int with_get = r % 2 == 0;
        shmem_barrier_all();
        double t0 = now();
        long x = 0;
        for (int i = 0; i < iters / 4; i++) {
            tag--;
            if (me == 0) {
                if (with_get)
                    shmem_getmem(&x, &line[0], 8, peer);
                shmem_long_p(&ping, tag, peer);
                shmem_long_wait_until(&pong, SHMEM_CMP_EQ, tag);
            } else if (me == 1) {
                shmem_long_wait_until(&ping, SHMEM_CMP_EQ, tag);
                line[0] = i;
                shmem_long_p(&pong, tag, peer);
            }
        }
        (with_get ? tg : tp)[r / 2] = (now() - t0) / (iters / 4) * 1e9;
        (void)x;
    }
    shmem_barrier_all();
    if (me == 0)
        printf("{\"impl\":\"%s\",\"metric\":\"getmem8_ns\",\"value\":%.1f,\"loop_ns\":%.1f}\n", impl,
               median(tg, REPS) - median(tp, REPS), median(tg, REPS));

    /* fetch_add on the peer's counter while the peer waits in the barrier (OSU style) */
    for (int r = 0; r < REPS; r++) {
        shmem_barrier_all();
        double t0 = now();
        if (me == 0)
            for (int i = 0; i < iters; i++)
                shmem_long_atomic_fetch_add(&line[1], 1, peer);
        t[r] = (now() - t0) / iters * 1e9;
    }
    if (me == 0)
        printf("{\"impl\":\"%s\",\"metric\":\"fadd_ns\",\"value\":%.1f}\n", impl, median(t, REPS));

    for (int r = 0; r < REPS; r++) {
        shmem_barrier_all();
        double t0 = now();
        for (int i = 0; i < iters; i++)
            shmem_barrier_all();
        t[r] = (now() - t0) / iters * 1e9;
    }
    if (me == 0)
        printf("{\"impl\":\"%s\",\"metric\":\"barrier_ns\",\"value\":%.1f}\n", impl, median(t, REPS));

    for (size_t sz = 64 << 10; sz <= (4u << 20); sz *= 4) {
        int k = (int)((64u << 20) / sz);
        double tc[REPS];
        for (int r = 0; r < REPS; r++) {
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
                for (int i = 0; i < k; i++)
                {
                    memcpy(dst, src, sz);
                    __asm__ volatile("" ::: "memory");
                }
            tc[r] = sz * (double)k / (now() - t0) / 1e9;
        }
        if (me == 0)
            printf("{\"impl\":\"%s\",\"metric\":\"put_bw_GBps\",\"size\":%zu,\"value\":%.2f,\"memcpy_GBps\":%.2f}\n",
                   impl, sz, median(t, REPS), median(tc, REPS));
    }
    fflush(stdout);
    shmem_barrier_all();
    shmem_free(buf);
    free(src);
    free(dst);
    shmem_finalize();
    return 0;
}
