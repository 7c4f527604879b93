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
 *   sync       the 1.5 shmem_sync(team) and the deprecated active-set form side by side.
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
