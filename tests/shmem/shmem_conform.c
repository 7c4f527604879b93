/* shmem_conform: the OpenSHMEM 1.5 behaviours an external conformance suite found missing (issue
 * 24), each checked against what the standard says rather than against another run:
 *   fairness   a series of test_any / wait_until_any calls (and _vector forms) on a set whose
 *              members all stay satisfied returns every included index, round-robin;
 *   progress   polling loops made only of test_all/_any/_some (and _vector) calls see puts from
 *              the partner PE — on another node under --simulate-nodes, where only the MPI moves
 *              the data and the poller must drive its progress;
 *   fetchpoll  a PE polls its own variable with shmem_atomic_fetch / shmem_signal_fetch while its
 *              partner's blocking atomics and put-with-signal target it: they must complete;
 *   zero       zero-length transfers are no-ops for any addresses (NULL included);
 *   sync       the 1.5 shmem_sync(team) and the deprecated active-set form side by side;
 *   generic    the C11 generic bitwise atomics on int32_t/int64_t, bitwise reductions on int8_t..int64_t.
 * The partner of PE p is p + n/2 (mod n): on the other node when the job runs as two nodes. No test
 * waits for time to pass: a missing progress shows as a hang, which the runner's -tlimit ends. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mp/mp_util.h"

static int me, npes, partner;
#define NV 5

static int ivars[NV];
static long ltarget;
static uint64_t sigword;
static long psync[SHMEM_SYNC_SIZE];

/* --- fairness ---------------------------------------------------------------------------------- */
static void test_fairness(void)
{
    /* Every member satisfied and staying so; index 2 excluded by status. */
    int *iv = shmem_calloc(NV, sizeof(int));
    for (int i = 0; i < NV; i++)
        iv[i] = 7;
    int status[NV] = {0, 0, 1, 0, 0}, vals[NV] = {7, 7, 7, 7, 7};
    /* Each form in a series of its own, as the standard's guarantee is per series of calls. */
    static const char *form[4] = {"test_any", "wait_until_any", "test_any_vector", "wait_until_any_vector"};
    for (int f = 0; f < 4; f++) {
        int seen[NV] = {0};
        for (int call = 0; call < 2 * NV; call++) {
            size_t got = f == 0   ? shmem_int_test_any(iv, NV, status, SHMEM_CMP_EQ, 7)
                         : f == 1 ? shmem_int_wait_until_any(iv, NV, status, SHMEM_CMP_EQ, 7)
                         : f == 2 ? shmem_int_test_any_vector(iv, NV, status, SHMEM_CMP_EQ, vals)
                                  : shmem_int_wait_until_any_vector(iv, NV, status, SHMEM_CMP_EQ, vals);
            CHECK(got < NV && got != 2, "%s returned %zu: not an included index", form[f], got);
            if (got < NV)
                seen[got]++;
        }
        for (int i = 0; i < NV; i++)
            if (i != 2)
                CHECK(seen[i] > 0, "%s never returned index %d in %d calls (all satisfied: unfair)", form[f], i,
                      2 * NV);
    }
    /* A set of one satisfied member keeps returning it; an empty set returns SIZE_MAX. */
    CHECK(shmem_int_test_any(iv + 1, 1, NULL, SHMEM_CMP_EQ, 7) == 0, "test_any on one member");
    CHECK(shmem_int_test_any(iv + 1, 1, NULL, SHMEM_CMP_EQ, 7) == 0, "test_any on one member, again");
    CHECK(shmem_int_test_any(iv, 0, NULL, SHMEM_CMP_EQ, 7) == SIZE_MAX, "test_any on an empty set");
    CHECK(shmem_int_wait_until_any(iv, NV, (int[NV]){1, 1, 1, 1, 1}, SHMEM_CMP_EQ, 7) == SIZE_MAX,
          "wait_until_any with every member excluded");
    shmem_free(iv);
    shmem_barrier_all();
}

/* --- progress of the test_* polling loops -------------------------------------------------------- */
enum { T_ALL, T_ANY, T_SOME, T_ALL_V, T_ANY_V, T_SOME_V, T_FORMS };
static const char *tname[T_FORMS] = {"test_all", "test_any", "test_some", "test_all_vector", "test_any_vector",
                                     "test_some_vector"};

static int poll_once(int form, int v)
{
    int vals[NV];
    size_t idx[NV];
    for (int i = 0; i < NV; i++)
        vals[i] = v;
    switch (form) {
    case T_ALL: return shmem_int_test_all(ivars, NV, NULL, SHMEM_CMP_EQ, v);
    case T_ANY: return shmem_int_test_any(ivars, NV, NULL, SHMEM_CMP_EQ, v) != SIZE_MAX;
    case T_SOME: return shmem_int_test_some(ivars, NV, idx, NULL, SHMEM_CMP_EQ, v) > 0;
    case T_ALL_V: return shmem_int_test_all_vector(ivars, NV, NULL, SHMEM_CMP_EQ, vals);
    case T_ANY_V: return shmem_int_test_any_vector(ivars, NV, NULL, SHMEM_CMP_EQ, vals) != SIZE_MAX;
    default: return shmem_int_test_some_vector(ivars, NV, idx, NULL, SHMEM_CMP_EQ, vals) > 0;
    }
}

static void test_progress(void)
{
    for (int form = 0; form < T_FORMS; form++) {
        int v = 100 + form, src[NV];
        for (int i = 0; i < NV; i++)
            src[i] = v;
        shmem_barrier_all();
        /* The partner's data travels as one put; its arrival is watched only with the test form. */
        shmem_int_put(ivars, src, NV, partner);
        while (!poll_once(form, v))
            ;
        /* All members satisfied once test_all says so; the others saw at least one. */
        if (form == T_ALL || form == T_ALL_V)
            for (int i = 0; i < NV; i++)
                CHECK(ivars[i] == v, "%s returned 1 with ivars[%d] = %d, not %d", tname[form], i, ivars[i], v);
        shmem_int_wait_until_all(ivars, NV, NULL, SHMEM_CMP_EQ, v);
    }
    shmem_barrier_all();
}

/* --- polling the own variable with atomic fetches ------------------------------------------------ */
static void test_fetch_poll(void)
{
    /* Half the PEs target their partners with blocking atomics while the partners poll their own
     * word with fetches only; then the roles swap. Each round's value is new, so a stale read
     * cannot pass. */
    for (int round = 0; round < 2; round++) {
        int active = (me < npes / 2) == (round == 0) || npes == 1;
        long want = 1000 * (round + 1);
        shmem_barrier_all();
        if (active) {
            shmem_long_atomic_set(&ltarget, want, partner);
            long old = shmem_long_atomic_fetch_add(&ltarget, 5, partner);
            CHECK(old == want, "fetch_add on PE %d fetched %ld, not %ld", partner, old, want);
            shmem_long_atomic_inc(&ltarget, partner);
            shmem_putmem_signal(&ivars[0], &want, sizeof(int), &sigword, (uint64_t)want, SHMEM_SIGNAL_SET, partner);
        }
        if (!active || npes == 1) {
            while (shmem_long_atomic_fetch(&ltarget, me) != want + 6)
                ;
            while (shmem_signal_fetch(&sigword) != (uint64_t)want)
                ;
            CHECK(ivars[0] == (int)want, "put_signal data %d before its signal %ld", ivars[0], want);
        }
    }
    shmem_barrier_all();
}

/* --- zero-length transfers --------------------------------------------------------------------- */
static void test_zero(void)
{
    /* The standard needs no valid address when nothing moves: every form must return, touching
     * nothing, with NULL and with a non-symmetric (stack) address alike. */
    int local[2] = {11, 12};
    for (int k = 0; k < 2; k++) {
        void *a = k ? (void *)local : NULL;
        shmem_putmem(a, a, 0, partner);
        shmem_getmem(a, a, 0, partner);
        shmem_putmem_nbi(a, a, 0, partner);
        shmem_getmem_nbi(a, a, 0, partner);
        shmem_int_put(a, a, 0, partner);
        shmem_int_get(a, a, 0, partner);
        shmem_int_put_nbi(a, a, 0, partner);
        shmem_int_get_nbi(a, a, 0, partner);
        shmem_int_iput(a, a, 1, 1, 0, partner);
        shmem_int_iget(a, a, 1, 1, 0, partner);
        shmem_put64(a, a, 0, partner);
        shmem_get32_nbi(a, a, 0, partner);
        shmem_iput128(a, a, 2, 2, 0, partner);
        shmem_ctx_putmem(SHMEM_CTX_DEFAULT, a, a, 0, partner);
        shmem_ctx_int_get(SHMEM_CTX_DEFAULT, a, a, 0, partner);
    }
    shmem_quiet();
    CHECK(local[0] == 11 && local[1] == 12, "a zero-length transfer changed the buffer");
    /* A zero-length put with signal still delivers the signal. */
    sigword = 0;
    shmem_barrier_all();
    shmem_putmem_signal(NULL, NULL, 0, &sigword, 77, SHMEM_SIGNAL_SET, partner);
    shmem_signal_wait_until(&sigword, SHMEM_CMP_EQ, 77);
    shmem_barrier_all();
}

/* --- shmem_sync: the 1.5 team form and the deprecated active-set form ------------------------- */
static void test_sync(void)
{
    static int slot;
    slot = 0;
    shmem_barrier_all();
    /* Store, sync, read: the team form orders nothing by itself but the store is complete and
     * visible after a quiet and the sync (the standard's store-then-sync idiom). */
    shmem_int_p(&slot, me + 1, partner);
    shmem_quiet();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team) returns 0");
    CHECK(slot == partner + 1, "after shmem_sync(SHMEM_TEAM_WORLD) slot = %d, not %d", slot, partner + 1);
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_sync(0, 0, npes, psync);           /* deprecated form, through the generic selection */
    shmem_sync_deprecated(0, 0, npes, psync); /* and by its own name */
    shmem_barrier_all();
}

/* --- C11 generic selection of the signed bitwise types -------------------------------------------- */
static int32_t g32;
static int64_t g64;

static void test_generic(void)
{
    /* Every PE sets, clears and flips its own bit of PE 0's words through the generic names (the
     * bitwise AMO table has int32_t and int64_t); the results are fixed by the bit arithmetic. */
    g32 = 0;
    g64 = 0;
    shmem_barrier_all();
    int32_t b32 = (int32_t)1 << (me % 31);
    int64_t b64 = (int64_t)1 << (me % 63 + 1);
    int32_t f32 = 0;
    int64_t f64 = 0;
    shmem_atomic_or(&g32, b32, 0);
    shmem_atomic_or(SHMEM_CTX_DEFAULT, &g64, b64, 0);
    shmem_barrier_all();
    int32_t all32 = 0;
    int64_t all64 = 0;
    for (int p = 0; p < npes; p++) {
        all32 |= (int32_t)1 << (p % 31);
        all64 |= (int64_t)1 << (p % 63 + 1);
    }
    CHECK(shmem_atomic_fetch(&g32, 0) == all32, "generic atomic_or on int32_t");
    CHECK(shmem_atomic_fetch(&g64, 0) == all64, "generic ctx atomic_or on int64_t");
    shmem_barrier_all();
    f32 = shmem_atomic_fetch_xor(&g32, b32, 0);     /* clear my bit */
    CHECK(f32 & b32, "fetch_xor on int32_t fetched %x without my bit %x", (unsigned)f32, (unsigned)b32);
    shmem_atomic_fetch_and_nbi(&f64, &g64, ~b64, 0); /* clear my bit */
    shmem_quiet();
    CHECK(f64 & b64, "fetch_and_nbi on int64_t fetched %llx without my bit", (unsigned long long)f64);
    shmem_atomic_xor(SHMEM_CTX_DEFAULT, &g32, 0, 0);
    shmem_atomic_and(&g64, -1, 0);
    f32 = shmem_atomic_fetch_or(SHMEM_CTX_DEFAULT, &g32, 0, 0);
    shmem_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f64, &g64, 0, 0);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(&g32, 0) == 0 && shmem_atomic_fetch(&g64, 0) == 0,
          "every bit cleared: %x %llx", (unsigned)g32, (unsigned long long)g64);

    /* Bitwise reductions on the signed types: and / or / xor of one bit per PE. */
    int8_t *s8 = shmem_malloc(2), *d8 = shmem_malloc(2);
    int16_t *s16 = shmem_malloc(4), *d16 = shmem_malloc(4);
    int32_t *s32 = shmem_malloc(8), *d32 = shmem_malloc(8);
    int64_t *s64 = shmem_malloc(16), *d64 = shmem_malloc(16);
    s8[0] = (int8_t)(1 << (me % 7));
    s8[1] = -1;
    s16[0] = (int16_t)(1 << (me % 15));
    s16[1] = -1;
    s32[0] = (int32_t)1 << (me % 31);
    s32[1] = -1;
    s64[0] = (int64_t)1 << (me % 63);
    s64[1] = -1;
    shmem_barrier_all();
    shmem_or_reduce(SHMEM_TEAM_WORLD, d8, s8, 2);
    shmem_xor_reduce(SHMEM_TEAM_WORLD, d16, s16, 2);
    shmem_and_reduce(SHMEM_TEAM_WORLD, d32, s32, 2);
    shmem_or_reduce(SHMEM_TEAM_WORLD, d64, s64, 2);
    int64_t or8 = 0, x16 = 0, x16all = 0, or64 = 0;
    for (int p = 0; p < npes; p++) {
        or8 |= 1 << (p % 7);
        x16 ^= 1 << (p % 15);
        x16all ^= -1;
        or64 |= (int64_t)1 << (p % 63);
    }
    CHECK(d8[0] == (int8_t)or8 && d8[1] == -1, "or_reduce int8_t: %d %d", d8[0], d8[1]);
    CHECK(d16[0] == (int16_t)x16 && d16[1] == (int16_t)x16all, "xor_reduce int16_t: %d %d", d16[0], d16[1]);
    CHECK(d32[0] == (npes == 1 ? s32[0] : 0) && d32[1] == -1, "and_reduce int32_t: %d %d", d32[0], d32[1]);
    CHECK(d64[0] == or64 && d64[1] == -1, "or_reduce int64_t: %lld %lld", (long long)d64[0], (long long)d64[1]);
    shmem_barrier_all();
    shmem_free(s8), shmem_free(d8), shmem_free(s16), shmem_free(d16);
    shmem_free(s32), shmem_free(d32), shmem_free(s64), shmem_free(d64);
}

int main(int argc, char **argv)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    partner = (me + npes / 2) % npes;
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && !strcmp(only, "exit")) {
        /* `exit S`: PE npes-1 ends the job with status S while the others wait in a barrier that
         * cannot complete; the job's exit status must be S. */
        int status = argc > 2 ? atoi(argv[2]) : 0;
        if (me == npes - 1)
            shmem_global_exit(status);
        shmem_barrier_all();
        shmem_barrier_all();
        fprintf(stderr, "FAIL PE %d: still running after shmem_global_exit(%d)\n", me, status);
        return 1;
    }
#define RUN(name, fn)                                                                              \
    if (!only || !strcmp(only, name))                                                              \
    fn()
    RUN("fairness", test_fairness);
    RUN("progress", test_progress);
    RUN("fetchpoll", test_fetch_poll);
    RUN("zero", test_zero);
    RUN("sync", test_sync);
    RUN("generic", test_generic);
    static int sfails;
    sfails = mp_failures;
    shmem_barrier_all();
    int total = 0;
    for (int p = 0; p < npes; p++)
        total += shmem_int_g(&sfails, p);
    if (me == 0)
        printf("shmem_conform%s%s: %d PEs, %d failed checks\n", only ? " " : "", only ? only : "", npes, total);
    shmem_finalize();
    return mp_failures ? 1 : 0;
}
