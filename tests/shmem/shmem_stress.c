/* shmem_stress: atomicity and ordering under contention.
 *
 * Atomicity: every PE hammers the same counters on PE 0 with every kind of atomic (fetch_add,
 * add, inc, fetch_inc, a compare_swap increment loop, swap-based token passing, and/or/xor bit
 * flips); the totals must come out exact, and every fetch_inc ticket must be unique.
 * Ordering: each PE streams numbered blocks to its right neighbour, each followed by fence and a
 * flag put (and, alternately, by put_signal or by quiet and an atomic flag); the receiver checks
 * that the whole block is there whenever it sees the flag. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mp/mp_util.h"

#define ITERS 400
#define BLOCK 1024 /* longs per block: bigger than a cache line, smaller than memcpy's NT threshold */
#define BIG (1 << 18) /* one block big enough for non-temporal stores */

static long counter[8];
static long flag_seen[1];
static unsigned long bits;
static uint64_t sig;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *tickets = shmem_calloc((size_t)ITERS * (size_t)n, sizeof(long));
    long *block = shmem_malloc(BLOCK * sizeof(long)), *big = shmem_malloc(BIG * sizeof(long));
    long *src = malloc(BIG * sizeof(long));
    long *flag = shmem_calloc(1, sizeof(long));

    /* --- atomicity ---------------------------------------------------------------------------- */
    for (int i = 0; i < ITERS; i++) {
        shmem_long_atomic_fetch_add(&counter[0], 3, 0);
        shmem_long_atomic_add(&counter[0], 2, 0);
        shmem_long_atomic_inc(&counter[0], 0);
        long t = shmem_long_atomic_fetch_inc(&counter[1], 0);
        shmem_long_atomic_set(&tickets[t], 1 + me, 0); /* each ticket exactly once */
        long old = shmem_long_atomic_fetch(&counter[2], 0), seen;
        while ((seen = shmem_long_atomic_compare_swap(&counter[2], old, old + 1, 0)) != old)
            old = seen;
        shmem_int_atomic_add((int *)&counter[3], 1, 0);
        shmem_ulong_atomic_xor(&bits, 1UL << (me % 64), 0);
        shmem_ulong_atomic_fetch_or(&bits, 0, 0);
        shmem_ulong_atomic_and(&bits, ~0UL, 0);
        (void)shmem_long_atomic_swap(&counter[4], me, 0);
        shmem_longlong_fadd((long long *)&counter[5], 1, 0); /* the old names too */
    }
    shmem_barrier_all();
    if (me == 0) {
        long want = (long)ITERS * n;
        CHECK(counter[0] == 6 * want, "fetch_add+add+inc total %ld, want %ld", counter[0], 6 * want);
        CHECK(counter[1] == want, "fetch_inc total %ld", counter[1]);
        CHECK(counter[2] == want, "compare_swap increments %ld", counter[2]);
        CHECK((int)counter[3] == want, "int add total");
        CHECK(counter[4] >= 0 && counter[4] < n, "swap leaves one PE's value");
        CHECK(counter[5] == want, "longlong fadd total");
        unsigned long wb = 0; /* ITERS is even: every xor bit flipped back */
        CHECK(bits == wb, "xor flips %lx", bits);
        for (long t = 0; t < want; t++)
            CHECK(tickets[t] >= 1 && tickets[t] <= n, "ticket %ld unused or corrupt: %ld", t, tickets[t]);
    }
    shmem_barrier_all();

    /* --- ordering: data, then fence, then flag ---------------------------------------------- */
    for (int i = 1; i <= ITERS / 4; i++) {
        long *s = src;
        size_t len = (i % 8 == 0) ? BIG : BLOCK;
        for (size_t k = 0; k < len; k++)
            s[k] = (long)i * 1000003 + (long)k;
        long *dst = len == BIG ? big : block;
        /* wait until the right neighbour consumed the previous round (it acks into flag_seen) */
        shmem_long_wait_until(flag_seen, SHMEM_CMP_GE, i - 1);
        switch (i % 3) {
        case 0:
            shmem_long_put(dst, s, len, right);
            shmem_fence();
            shmem_long_p(flag, i, right);
            break;
        case 1:
            shmem_long_put_signal(dst, s, len, &sig, (uint64_t)i, SHMEM_SIGNAL_SET, right);
            break;
        default:
            shmem_long_put_nbi(dst, s, len, right);
            shmem_quiet();
            shmem_long_atomic_set(flag, i, right);
            break;
        }
        /* receive from the left */
        if (i % 3 == 1)
            shmem_uint64_wait_until(&sig, SHMEM_CMP_EQ, (uint64_t)i);
        else
            shmem_long_wait_until(flag, SHMEM_CMP_EQ, i);
        long *got = len == BIG ? big : block;
        size_t bad = 0;
        for (size_t k = 0; k < len; k++)
            bad += got[k] != (long)i * 1000003 + (long)k;
        CHECK(bad == 0, "round %d: %zu of %zu elements from PE %d arrived after the flag", i, bad, len, left);
        shmem_long_p(flag_seen, i, left); /* ack: the left neighbour may overwrite now */
    }
    shmem_barrier_all();
    static int sfails;
    sfails = mp_failures;
    shmem_barrier_all();
    int total = 0;
    for (int p = 0; p < n; p++)
        total += shmem_int_g(&sfails, p);
    if (me == 0)
        printf("shmem_stress: %d PEs, %d iterations, %d failed checks\n", n, ITERS, total);
    shmem_free(flag);
    shmem_free(big);
    shmem_free(block);
    shmem_free(tickets);
    free(src);
    shmem_finalize();
    return mp_failures ? 1 : 0;
}
