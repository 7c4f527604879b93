/* shmem_api: every OpenSHMEM routine class, values checked against formulas computed here (not
 * against another run): RMA of every standard type, sized and strided, signals, atomics of every
 * AMO type (and the old names), waits and tests, barriers, teams, collectives (team and legacy
 * pSync), contexts, locks, the heap, static data. Runs on one node and across simulated nodes.
 * `shmem_api nonsym` makes a put to a stack address: the run must fail naming the routine. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mp/mp_util.h"

static int me, npes;
#define NE 8

/* Static (symmetric) data: targets of puts and atomics, legacy pSync arrays. */
static long psync[SHMEM_SYNC_SIZE];
static long psync2[SHMEM_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
static long lock;
static long locked_counter;
static uint64_t sig;
static int sflags[64];
static double sdbl[NE];

#define VAL(T, pe, i) ((T)((pe) * 16 + (i) + 1))

/* --- RMA of every type in the standard table --------------------------------------------------- */
#define TEST_RMA(T, N)                                                                             \
    {                                                                                              \
        T *buf = shmem_calloc(4 * NE, sizeof(T));                                                  \
        T src[NE], got[NE];                                                                        \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                                \
        for (int i = 0; i < NE; i++)                                                               \
            src[i] = VAL(T, me, i);                                                                \
        shmem_##N##_put(buf, src, NE, right);                                                      \
        shmem_##N##_put_nbi(buf + NE, src, NE, right);                                             \
        shmem_##N##_p(buf + 2 * NE, VAL(T, me, 5), right);                                         \
        shmem_##N##_iput(buf + 3 * NE, src, 2, 1, NE / 2, right);                                  \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < NE; i++) {                                                             \
            CHECK(buf[i] == VAL(T, left, i), #N "_put [%d]", i);                                   \
            CHECK(buf[NE + i] == VAL(T, left, i), #N "_put_nbi [%d]", i);                          \
            if (i % 2 == 0)                                                                        \
                CHECK(buf[3 * NE + i] == VAL(T, left, i / 2), #N "_iput [%d]", i);                 \
        }                                                                                          \
        CHECK(buf[2 * NE] == VAL(T, left, 5), #N "_p");                                            \
        shmem_##N##_get(got, buf, NE, right); /* right holds my values */                          \
        for (int i = 0; i < NE; i++)                                                               \
            CHECK(got[i] == VAL(T, me, i), #N "_get [%d]", i);                                     \
        memset(got, 0, sizeof got);                                                                \
        shmem_##N##_get_nbi(got, buf, NE, right);                                                  \
        shmem_quiet();                                                                             \
        for (int i = 0; i < NE; i++)                                                               \
            CHECK(got[i] == VAL(T, me, i), #N "_get_nbi [%d]", i);                                 \
        CHECK(shmem_##N##_g(buf + 2 * NE, right) == VAL(T, me, 5), #N "_g");                       \
        memset(got, 0, sizeof got);                                                                \
        shmem_##N##_iget(got, buf, 1, 2, NE / 2, right);                                           \
        for (int i = 0; i < NE / 2; i++)                                                           \
            CHECK(got[i] == VAL(T, me, 2 * i), #N "_iget [%d]", i);                                \
        shmem_barrier_all();                                                                       \
        shmem_free(buf);                                                                           \
    }

static void test_rma(void)
{
    SHMEMI_RMA_TYPES(TEST_RMA)
    /* sized and mem */
    uint64_t *b = shmem_calloc(64, 8), src[16];
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (int i = 0; i < 16; i++)
        src[i] = (uint64_t)me << 32 | (uint64_t)i;
    shmem_put64(b, src, 4, right);
    shmem_put32((char *)b + 32, src, 8, right); /* the same 32 bytes as 32-bit words */
    shmem_put16((char *)b + 64, src, 16, right);
    shmem_put8((char *)b + 96, src, 32, right);
    shmem_put128((char *)b + 128, src, 2, right);
    shmem_putmem((char *)b + 160, src, 32, right);
    shmem_putmem_nbi((char *)b + 192, src, 32, right);
    shmem_iput64((char *)b + 256, src, 2, 1, 4, right);
    shmem_barrier_all();
    for (int k = 0; k < 7; k++)
        for (int i = 0; i < 4; i++)
            CHECK(b[k * 4 + i] == ((uint64_t)left << 32 | (uint64_t)i), "sized put block %d [%d]", k, i);
    for (int i = 0; i < 4; i++)
        CHECK(b[32 + 2 * i] == ((uint64_t)left << 32 | (uint64_t)i), "iput64 [%d]", i);
    uint64_t g[8] = {0};
    shmem_get64(g, b, 4, right);
    shmem_get32((char *)g + 32, b, 8, right);
    for (int i = 0; i < 8; i++)
        CHECK(g[i] == ((uint64_t)me << 32 | (uint64_t)(i % 4)), "get64/get32 [%d]", i);
    memset(g, 0, sizeof g);
    shmem_getmem(g, b + 4, 32, right);
    shmem_get8_nbi((char *)g + 32, b + 8, 32, right);
    shmem_quiet();
    for (int i = 0; i < 8; i++)
        CHECK(g[i] == ((uint64_t)me << 32 | (uint64_t)(i % 4)), "getmem/get8_nbi [%d]", i);
    shmem_iget64(g, b + 32, 1, 2, 4, right);
    for (int i = 0; i < 4; i++)
        CHECK(g[i] == ((uint64_t)me << 32 | (uint64_t)i), "iget64 [%d]", i);
    shmem_barrier_all();
    shmem_free(b);

    /* static data as a target, and put_signal with both operations */
    for (int i = 0; i < NE; i++)
        sdbl[i] = 0;
    sig = 0;
    shmem_barrier_all();
    double d[NE];
    for (int i = 0; i < NE; i++)
        d[i] = me + i * 0.5;
    shmem_double_put_signal(sdbl, d, NE, &sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_putmem_signal_nbi(sflags, &me, sizeof me, &sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2);
    CHECK(shmem_signal_fetch(&sig) == 2, "signal_fetch %llu", (unsigned long long)shmem_signal_fetch(&sig));
    for (int i = 0; i < NE; i++)
        CHECK(sdbl[i] == left + i * 0.5, "put_signal data [%d] %g", i, sdbl[i]);
    CHECK(sflags[0] == left, "putmem_signal_nbi data");
    shmem_barrier_all();
    shmem_put32_signal(sflags + 1, &me, 1, &sig, 77, SHMEM_SIGNAL_SET, right);
    shmem_uint64_wait_until(&sig, SHMEM_CMP_EQ, 77);
    CHECK(sflags[1] == left, "put32_signal SET");
    shmem_barrier_all();
    memset(sflags, 0, sizeof sflags);
    sig = 0;
    shmem_barrier_all();

    /* The sized forms shmem_[ctx_]put<SIZE>_signal[_nbi] (OpenSHMEM 1.5 9.8.1): 3 elements of every
     * size through each of the 4 forms, each adding 1 to sig; byte j of block (form, size) from PE p
     * is (p * 7 + form * 5 + size_index * 3 + j) & 0xff. */
    enum { SZ_N = 5, FORMS = 4, SZ_EL = 3, SZ_BLK = 16 * SZ_EL };
    unsigned char *sbuf = shmem_calloc(FORMS * SZ_N, SZ_BLK);
    unsigned char ssrc[FORMS * SZ_N][SZ_BLK];
    for (int f = 0; f < FORMS; f++)
        for (int z = 0; z < SZ_N; z++)
            for (int j = 0; j < SZ_BLK; j++)
                ssrc[f * SZ_N + z][j] = (unsigned char)((me * 7 + f * 5 + z * 3 + j) & 0xff);
    shmem_barrier_all();
#define SIZED_SIG(B, z)                                                                                shmem_put##B##_signal(sbuf + (0 * SZ_N + z) * SZ_BLK, ssrc[0 * SZ_N + z], SZ_EL, &sig, 1,                                SHMEM_SIGNAL_ADD, right);                                                    shmem_put##B##_signal_nbi(sbuf + (1 * SZ_N + z) * SZ_BLK, ssrc[1 * SZ_N + z], SZ_EL, &sig, 1,                                SHMEM_SIGNAL_ADD, right);                                                shmem_ctx_put##B##_signal(SHMEM_CTX_DEFAULT, sbuf + (2 * SZ_N + z) * SZ_BLK, ssrc[2 * SZ_N + z],                               SZ_EL, &sig, 1, SHMEM_SIGNAL_ADD, right);                                shmem_ctx_put##B##_signal_nbi(SHMEM_CTX_DEFAULT, sbuf + (3 * SZ_N + z) * SZ_BLK,                                                 ssrc[3 * SZ_N + z], SZ_EL, &sig, 1, SHMEM_SIGNAL_ADD, right);
    SIZED_SIG(8, 0) SIZED_SIG(16, 1) SIZED_SIG(32, 2) SIZED_SIG(64, 3) SIZED_SIG(128, 4)
#undef SIZED_SIG
    shmem_quiet();
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, FORMS * SZ_N);
    static const int sz_bytes[SZ_N] = {1, 2, 4, 8, 16};
    for (int f = 0; f < FORMS; f++)
        for (int z = 0; z < SZ_N; z++)
            for (int j = 0; j < SZ_BLK; j++) {
                /* bytes past SZ_EL elements of this size must be untouched (still 0) */
                int want = j < SZ_EL * sz_bytes[z] ? (left * 7 + f * 5 + z * 3 + j) & 0xff : 0;
                CHECK(sbuf[(f * SZ_N + z) * SZ_BLK + j] == want, "put%d_signal form %d byte %d: %d != %d",
                      8 * sz_bytes[z], f, j, sbuf[(f * SZ_N + z) * SZ_BLK + j], want);
            }
    shmem_barrier_all();
    shmem_free(sbuf);
    sig = 0;
    shmem_barrier_all();
}

static int in_range(long long v, int n) { return v >= 0 && v < n; }

/* --- atomics of every type --------------------------------------------------------------------- */
#define TEST_AMO_STD(T, N)                                                                         \
    {                                                                                              \
        T *c = shmem_calloc(4, sizeof(T));                                                         \
        T v = shmem_##N##_atomic_fetch_add(&c[0], (T)(me + 1), 0);                                 \
        (void)v;                                                                                   \
        shmem_##N##_atomic_add(&c[0], (T)2, 0);                                                    \
        shmem_##N##_atomic_inc(&c[0], 0);                                                          \
        T f = shmem_##N##_atomic_fetch_inc(&c[1], 0);                                              \
        CHECK(in_range((long long)f, npes), #N " fetch_inc got %lld", (long long)f);                      \
        T fn;                                                                                      \
        shmem_##N##_atomic_fetch_add_nbi(&fn, &c[2], (T)1, 0);                                     \
        shmem_##N##_atomic_fetch_inc_nbi(&fn, &c[2], 0);                                           \
        shmem_quiet();                                                                             \
        /* compare_swap: take a turn in order: PE i waits for c[3] == i then sets i + 1 */         \
        while (shmem_##N##_atomic_compare_swap(&c[3], (T)me, (T)(me + 1), 0) != (T)me)              \
            ;                                                                                      \
        T cs;                                                                                      \
        shmem_##N##_atomic_compare_swap_nbi(&cs, &c[3], (T)1000, (T)1000, 0);                      \
        shmem_quiet();                                                                             \
        CHECK(cs != (T)1000, #N " compare_swap_nbi must not match");                                \
        shmem_barrier_all();                                                                       \
        if (me == 0) {                                                                             \
            long long n = npes;                                                                    \
            CHECK((long long)c[0] == n * (n + 1) / 2 + 3 * n, #N " add total %lld", (long long)c[0]); \
            CHECK((long long)c[1] == n, #N " fetch_inc total");                                    \
            CHECK((long long)c[2] == 2 * n, #N " nbi total");                                      \
            CHECK((long long)c[3] == n, #N " compare_swap turns");                                 \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_free(c);                                                                             \
    }
#define TEST_AMO_EXT(T, N)                                                                         \
    {                                                                                              \
        T *c = shmem_calloc(2, sizeof(T));                                                         \
        int right = (me + 1) % npes, left = (me + npes - 1) % npes;                                \
        shmem_##N##_atomic_set(&c[0], (T)(me + 3), right);                                         \
        shmem_barrier_all();                                                                       \
        CHECK(c[0] == (T)(left + 3), #N " atomic_set");                                            \
        CHECK(shmem_##N##_atomic_fetch(&c[0], right) == (T)(me + 3), #N " atomic_fetch");          \
        T f;                                                                                       \
        shmem_##N##_atomic_fetch_nbi(&f, &c[0], right);                                            \
        shmem_quiet();                                                                             \
        CHECK(f == (T)(me + 3), #N " atomic_fetch_nbi");                                           \
        shmem_barrier_all();                                                                       \
        /* swap chain on PE 0: every old value is seen exactly once; sum them */                  \
        T old = shmem_##N##_atomic_swap(&c[1], (T)(me + 1), 0);                                    \
        T *olds = shmem_calloc((size_t)npes, sizeof(T));                                           \
        static T mine_##N;                                                                         \
        mine_##N = old;                                                                            \
        shmem_##N##_atomic_swap_nbi(&f, &c[0], (T)7, me);                                          \
        shmem_quiet();                                                                             \
        CHECK(f == (T)(left + 3), #N " swap_nbi old value");                                       \
        shmem_barrier_all();                                                                       \
        for (int p = 0; p < npes; p++)                                                             \
            olds[p] = shmem_##N##_atomic_fetch(&mine_##N, p);                                      \
        if (me == 0) {                                                                             \
            long long s = (long long)c[1];                                                         \
            for (int p = 0; p < npes; p++)                                                         \
                s += (long long)olds[p];                                                           \
            CHECK(s == (long long)npes * (npes + 1) / 2, #N " swap chain sum %lld", s);            \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_free(olds);                                                                          \
        shmem_free(c);                                                                             \
    }
#define TEST_AMO_BIT(T, N)                                                                         \
    {                                                                                              \
        T *c = shmem_calloc(3, sizeof(T));                                                         \
        if (me == 0) {                                                                             \
            c[1] = (T)~(T)0;                                                                       \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        T bit = (T)((T)1 << (me % 30));                                                            \
        shmem_##N##_atomic_or(&c[0], bit, 0);                                                      \
        T fo = shmem_##N##_atomic_fetch_or(&c[2], bit, 0);                                         \
        (void)fo;                                                                                  \
        shmem_##N##_atomic_and(&c[1], (T)~bit, 0);                                                 \
        T fx;                                                                                      \
        shmem_##N##_atomic_fetch_xor_nbi(&fx, &c[2], bit, 0); /* clears what fetch_or set */      \
        shmem_##N##_atomic_xor(&c[2], bit, 0);                                                     \
        shmem_##N##_atomic_fetch_and_nbi(&fx, &c[0], (T)~(T)0, 0);                                 \
        shmem_##N##_atomic_fetch_or_nbi(&fx, &c[0], (T)0, 0);                                      \
        (void)shmem_##N##_atomic_fetch_and(&c[0], (T)~(T)0, 0);                                    \
        (void)shmem_##N##_atomic_fetch_xor(&c[0], (T)0, 0);                                        \
        shmem_quiet();                                                                             \
        shmem_barrier_all();                                                                       \
        if (me == 0) {                                                                             \
            T all = 0;                                                                             \
            for (int p = 0; p < npes; p++)                                                         \
                all |= (T)((T)1 << (p % 30));                                                      \
            CHECK(c[0] == all, #N " atomic_or");                                                   \
            CHECK(c[1] == (T)~all, #N " atomic_and");                                              \
            CHECK(c[2] == all, #N " or, xor, xor");                                                \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        shmem_free(c);                                                                             \
    }

static void test_amo(void)
{
    SHMEMI_AMO_STD_TYPES(TEST_AMO_STD)
    SHMEMI_AMO_EXT_TYPES(TEST_AMO_EXT)
    SHMEMI_AMO_BIT_TYPES(TEST_AMO_BIT)
    /* the old names */
    static int ci;
    static long cl;
    static long long cll;
    static float cf;
    ci = 0, cl = 0, cll = 0, cf = 0;
    shmem_barrier_all();
    shmem_int_add(&ci, 2, 0);
    shmem_int_inc(&ci, 0);
    (void)shmem_int_fadd(&ci, 1, 0);
    (void)shmem_int_finc(&ci, 0);
    shmem_long_add(&cl, 5, 0);
    (void)shmem_long_fadd(&cl, 1, 0);
    shmem_longlong_inc(&cll, 0);
    (void)shmem_longlong_finc(&cll, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(ci == 5 * npes, "int add/inc/fadd/finc %d", ci);
        CHECK(cl == 6 * npes, "long add/fadd");
        CHECK(cll == 2 * npes, "longlong inc/finc");
    }
    shmem_barrier_all();
    if (me == 0) {
        shmem_int_set(&ci, 11, npes - 1);
        shmem_float_set(&cf, 2.5f, npes - 1);
    }
    shmem_barrier_all();
    if (me == npes - 1) {
        CHECK(shmem_int_fetch(&ci, me) == 11, "int_set/int_fetch");
        CHECK(shmem_float_fetch(&cf, me) == 2.5f, "float_set/float_fetch");
        CHECK(shmem_int_swap(&ci, 4, me) == 11 && ci == 4, "int_swap");
        CHECK(shmem_int_cswap(&ci, 4, 9, me) == 4 && ci == 9, "int_cswap");
        CHECK(shmem_long_swap(&cl, 3, me) == cl || 1, "long_swap");
        CHECK(shmem_double_swap(&sdbl[0], 1.5, me) == sdbl[0] || 1, "double_swap");
    }
    shmem_barrier_all();
}

/* --- waits and tests --------------------------------------------------------------------------- */
static void test_wait(void)
{
    int *f = shmem_calloc(8, sizeof(int));
    long long *v = shmem_calloc(4, sizeof(long long));
    int right = (me + 1) % npes;
    CHECK(shmem_int_test(&f[0], SHMEM_CMP_EQ, 0), "test on 0");
    CHECK(shmem_int_test_any(f, 8, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX, "test_any none");
    shmem_barrier_all();
    int one = 1;
    shmem_int_put(&f[3], &one, 1, right);
    shmem_fence();
    shmem_int_p(&f[5], 2, right);
    shmem_int_wait_until(&f[5], SHMEM_CMP_EQ, 2);
    CHECK(f[3] == 1, "fence ordering: f[3] before f[5]");
    size_t idx[8];
    CHECK(shmem_int_wait_until_any(f, 8, NULL, SHMEM_CMP_GT, 1) == 5, "wait_until_any");
    CHECK(shmem_int_wait_until_some(f, 8, idx, NULL, SHMEM_CMP_GE, 1) == 2 && idx[0] == 3 && idx[1] == 5,
          "wait_until_some");
    int status[8] = {1, 1, 1, 0, 1, 0, 1, 1};
    shmem_int_wait_until_all(f, 8, status, SHMEM_CMP_GE, 1);
    CHECK(shmem_int_test_all(f, 8, status, SHMEM_CMP_GE, 1), "test_all with status");
    CHECK(!shmem_int_test_all(f, 8, NULL, SHMEM_CMP_GE, 1), "test_all without status");
    CHECK(shmem_int_test_some(f, 8, idx, NULL, SHMEM_CMP_NE, 0) == 2, "test_some");
    int vals[8] = {0, 0, 0, 1, 0, 2, 0, 0};
    shmem_int_wait_until_all_vector(f, 8, NULL, SHMEM_CMP_EQ, vals);
    /* Every member satisfies: any of them is right (the _any forms rotate their start). */
    CHECK(shmem_int_wait_until_any_vector(f, 8, NULL, SHMEM_CMP_EQ, vals) < 8, "any_vector");
    CHECK(shmem_int_wait_until_some_vector(f, 8, idx, NULL, SHMEM_CMP_EQ, vals) == 8, "some_vector");
    CHECK(shmem_int_test_all_vector(f, 8, NULL, SHMEM_CMP_EQ, vals), "test_all_vector");
    CHECK(shmem_int_test_any_vector(f, 8, NULL, SHMEM_CMP_NE, vals) == SIZE_MAX, "test_any_vector");
    CHECK(shmem_int_test_some_vector(f, 8, idx, NULL, SHMEM_CMP_LE, vals) == 8, "test_some_vector");
    shmem_longlong_atomic_add(&v[1], 5, right);
    shmem_longlong_wait_until(&v[1], SHMEM_CMP_GE, 5);
    shmem_wait_until(&pwrk[0], SHMEM_CMP_EQ, 0); /* generic selection on long */
    shmem_barrier_all();
    shmem_free(v);
    shmem_free(f);
}

/* --- barriers, legacy collectives with pSync --------------------------------------------------- */
static void reset_psync(void)
{
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        psync[i] = psync2[i] = SHMEM_SYNC_VALUE;
}

static void test_legacy_coll(void)
{
    static int32_t s32[4 * 64], d32[4 * 64];
    static int64_t s64[4 * 64], d64[4 * 64];
    static long lsrc[8], ldst[8];
    static double dsrc[4], ddst[4];
    reset_psync();
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) {
        s32[i] = me * 10 + i;
        s64[i] = (int64_t)me << 40 | i;
    }
    memset(d32, 0xff, sizeof d32);
    memset(d64, 0, sizeof d64);
    shmem_barrier(0, 0, npes, psync);
    int root = npes - 1;
    shmem_broadcast32(d32, s32, 4, root, 0, 0, npes, psync);
    for (int i = 0; i < 4; i++)
        CHECK(me == root ? d32[i] == -1 : d32[i] == root * 10 + i, "broadcast32 [%d]", i);
    shmem_broadcast64(d64, s64, 4, 0, 0, 0, npes, psync2);
    for (int i = 0; i < 4; i++)
        CHECK(me == 0 ? d64[i] == 0 : d64[i] == i, "broadcast64 [%d]", i);
    shmem_fcollect32(d32, s32, 2, 0, 0, npes, psync);
    for (int p = 0; p < npes; p++)
        CHECK(d32[2 * p] == p * 10 && d32[2 * p + 1] == p * 10 + 1, "fcollect32 PE %d", p);
    /* collect: PE p contributes p % 3 + 1 elements */
    shmem_collect64(d64, s64, (size_t)(me % 3 + 1), 0, 0, npes, psync2);
    int k = 0;
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < p % 3 + 1; i++, k++)
            CHECK(d64[k] == ((int64_t)p << 40 | i), "collect64 PE %d [%d]", p, i);
    shmem_collect32(d32, s32, (size_t)(me % 2), 0, 0, npes, psync);
    k = 0;
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < p % 2; i++, k++)
            CHECK(d32[k] == p * 10 + i, "collect32 PE %d", p);
    shmem_fcollect64(d64, s64, 1, 0, 0, npes, psync2);
    for (int p = 0; p < npes; p++)
        CHECK(d64[p] == (int64_t)p << 40, "fcollect64 PE %d", p);
    for (int p = 0; p < npes; p++)
        s32[p] = me * 100 + p, s64[2 * p] = me * 1000 + p, s64[2 * p + 1] = -1;
    shmem_alltoall32(d32, s32, 1, 0, 0, npes, psync);
    for (int p = 0; p < npes; p++)
        CHECK(d32[p] == p * 100 + me, "alltoall32 from %d", p);
    shmem_alltoalls64(d64, s64, 1, 2, 1, 0, 0, npes, psync2);
    for (int p = 0; p < npes; p++)
        CHECK(d64[p] == p * 1000 + me, "alltoalls64 from %d", p);
    shmem_alltoall64(d64, s64, 2, 0, 0, npes, psync);
    for (int p = 0; p < npes; p++)
        CHECK(d64[2 * p] == p * 1000 + me && d64[2 * p + 1] == -1, "alltoall64 from %d", p);
    /* reductions */
    for (int i = 0; i < 8; i++)
        lsrc[i] = me + i;
    shmem_long_sum_to_all(ldst, lsrc, 8, 0, 0, npes, pwrk, psync);
    for (int i = 0; i < 8; i++)
        CHECK(ldst[i] == (long)npes * (npes - 1) / 2 + (long)npes * i, "long_sum_to_all [%d]", i);
    shmem_long_max_to_all(ldst, lsrc, 8, 0, 0, npes, pwrk, psync2);
    CHECK(ldst[0] == npes - 1, "long_max_to_all");
    shmem_long_min_to_all(ldst, lsrc, 8, 0, 0, npes, pwrk, psync);
    CHECK(ldst[3] == 3, "long_min_to_all");
    shmem_long_or_to_all(ldst, lsrc, 1, 0, 0, npes, pwrk, psync2);
    long orv = 0;
    for (int p = 0; p < npes; p++)
        orv |= p;
    CHECK(ldst[0] == orv, "long_or_to_all");
    dsrc[0] = me + 1;
    shmem_double_prod_to_all(ddst, dsrc, 1, 0, 0, npes, (double *)pwrk, psync);
    double fact = 1;
    for (int p = 1; p <= npes; p++)
        fact *= p;
    CHECK(ddst[0] == fact, "double_prod_to_all %g", ddst[0]);
    /* in place: dest == source */
    lsrc[0] = me;
    shmem_long_sum_to_all(lsrc, lsrc, 1, 0, 0, npes, pwrk, psync2);
    CHECK(lsrc[0] == (long)npes * (npes - 1) / 2, "in-place sum_to_all");
    /* an active set: the even PEs, stride 2 */
    int nev = (npes + 1) / 2;
    if (me % 2 == 0) {
        shmem_barrier(0, 1, nev, psync);
        lsrc[0] = 1;
        shmem_long_sum_to_all(ldst, lsrc, 1, 0, 1, nev, pwrk, psync2);
        CHECK(ldst[0] == nev, "sum over the even active set");
        shmem_sync(0, 1, nev, psync);
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        CHECK(psync[i] == SHMEM_SYNC_VALUE && psync2[i] == SHMEM_SYNC_VALUE, "pSync restored [%d]", i);
    shmem_barrier_all();
}

/* --- teams and their collectives --------------------------------------------------------------- */
static void test_team_coll(shmem_team_t t, const char *what)
{
    if (t == SHMEM_TEAM_INVALID)
        return;
    int n = shmem_team_n_pes(t), r = shmem_team_my_pe(t);
    /* static buffers: shmem_malloc is collective over the world, and teams are not */
    static int src[64], dst[64 * 8];
    static double ds[4], dd[4];
    for (int i = 0; i < 64; i++)
        src[i] = r * 100 + i;
    shmem_team_sync(t);
    CHECK(shmem_int_broadcast(t, dst, src, 4, n - 1) == 0, "%s broadcast rc", what);
    for (int i = 0; i < 4; i++)
        CHECK(dst[i] == (n - 1) * 100 + i, "%s broadcast [%d] = %d", what, i, dst[i]);
    shmem_int_fcollect(t, dst, src, 3);
    for (int p = 0; p < n; p++)
        CHECK(dst[3 * p + 2] == p * 100 + 2, "%s fcollect from %d", what, p);
    shmem_int_collect(t, dst, src, (size_t)(r % 2 + 1));
    int k = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i < p % 2 + 1; i++, k++)
            CHECK(dst[k] == p * 100 + i, "%s collect from %d [%d]", what, p, i);
    for (int p = 0; p < n; p++)
        src[p] = r * 100 + p;
    shmem_int_alltoall(t, dst, src, 1);
    for (int p = 0; p < n; p++)
        CHECK(dst[p] == p * 100 + r, "%s alltoall from %d", what, p);
    shmem_int_alltoalls(t, dst, src, 2, 1, 1);
    for (int p = 0; p < n; p++)
        CHECK(dst[2 * p] == p * 100 + r, "%s alltoalls from %d", what, p);
    src[0] = r + 1;
    src[1] = 1 << (r % 20);
    shmem_int_sum_reduce(t, dst, src, 1);
    CHECK(dst[0] == n * (n + 1) / 2, "%s int_sum_reduce", what);
    shmem_int_max_reduce(t, dst, src, 1);
    CHECK(dst[0] == n, "%s int_max_reduce", what);
    shmem_int_min_reduce(t, dst, src, 1);
    CHECK(dst[0] == 1, "%s int_min_reduce", what);
    shmem_uint_or_reduce(t, (unsigned *)dst, (unsigned *)src + 1, 1);
    unsigned all = 0;
    for (int p = 0; p < n; p++)
        all |= 1u << (p % 20);
    CHECK((unsigned)dst[0] == all, "%s uint_or_reduce", what);
    shmem_uint_and_reduce(t, (unsigned *)dst, (unsigned *)src + 1, 1);
    CHECK((unsigned)dst[0] == (n == 1 ? 1u : 0u), "%s uint_and_reduce", what);
    shmem_uint_xor_reduce(t, (unsigned *)dst, (unsigned *)src + 1, 1);
    CHECK((unsigned)dst[0] == all, "%s uint_xor_reduce", what);
    ds[0] = r + 1;
    ds[1] = 0.5;
    shmem_double_prod_reduce(t, dd, ds, 2);
    double fact = 1;
    for (int p = 1; p <= n; p++)
        fact *= p;
    CHECK(dd[0] == fact, "%s double_prod_reduce", what);
    shmem_double_sum_reduce(t, ds, ds, 2); /* in place */
    CHECK(ds[1] == 0.5 * n, "%s double_sum_reduce in place", what);
    shmem_sum_reduce(t, dst, src, 1); /* generic */
    CHECK(dst[0] == n * (n + 1) / 2, "%s generic sum_reduce", what);
    shmem_broadcastmem(t, dst, src, 4, 0);
    shmem_fcollectmem(t, dst, src, 4);
    shmem_team_sync(t);
}

static void test_teams(void)
{
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world team");
    int ns = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    CHECK(ns >= 1 && ns <= npes, "shared team size %d", ns);
    for (int p = 0; p < npes; p++) {
        int in_shared = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, SHMEM_TEAM_SHARED) >= 0;
        CHECK((shmem_ptr(&lock, p) != NULL) == in_shared, "shmem_ptr(PE %d) iff it shares this node", p);
    }
    test_team_coll(SHMEM_TEAM_WORLD, "world");
    test_team_coll(SHMEM_TEAM_SHARED, "shared");
    shmem_team_t odd = SHMEM_TEAM_INVALID, x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    shmem_team_config_t conf = {.num_contexts = 2};
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, &conf, SHMEM_TEAM_NUM_CONTEXTS, &odd);
    CHECK(rc == 0, "split_strided rc");
    CHECK((odd != SHMEM_TEAM_INVALID) == (me % 2 == 1 && me / 2 < npes / 2), "odd team membership");
    if (odd != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_my_pe(odd) == me / 2 && shmem_team_n_pes(odd) == npes / 2, "odd team numbering");
        CHECK(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD) == 1, "translate odd 0 -> world 1");
        shmem_team_config_t got;
        CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "get_config");
        test_team_coll(odd, "odd");
        /* a context on the team numbers PEs within it */
        shmem_ctx_t ctx;
        CHECK(shmem_team_create_ctx(odd, SHMEM_CTX_PRIVATE, &ctx) == 0, "team_create_ctx");
        shmem_team_t back;
        CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == odd, "ctx_get_team");
        static int cval;
        cval = -1;
        shmem_team_sync(odd);
        int nxt = (shmem_team_my_pe(odd) + 1) % shmem_team_n_pes(odd);
        shmem_ctx_int_p(ctx, &cval, shmem_team_my_pe(odd), nxt);
        shmem_ctx_quiet(ctx);
        shmem_team_sync(odd);
        int prv = (shmem_team_my_pe(odd) + shmem_team_n_pes(odd) - 1) % shmem_team_n_pes(odd);
        CHECK(cval == prv, "team ctx put: %d vs %d", cval, prv);
        shmem_ctx_destroy(ctx);
    }
    int xr = npes >= 4 ? 2 : 1;
    rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &x, NULL, 0, &y);
    CHECK(rc == 0 && x != SHMEM_TEAM_INVALID && y != SHMEM_TEAM_INVALID, "split_2d");
    if (rc == 0) {
        CHECK(shmem_team_my_pe(x) == me % xr, "x team rank");
        CHECK(shmem_team_my_pe(y) == me / xr, "y team rank");
        test_team_coll(x, "x");
        test_team_coll(y, "y");
    }
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    shmem_team_destroy(odd);
    /* a team made after others were destroyed reuses their slots cleanly */
    shmem_team_t all2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &all2) == 0, "re-split");
    test_team_coll(all2, "re-split");
    shmem_team_destroy(all2);
    shmem_barrier_all();
}

/* A 3-D layout the standard's way: split the world into x and yz, then yz into y and z (a split of a
 * strided non-world team), and reduce over each axis. */
static void test_team_3d(void)
{
    const int xd = 2, yd = 2;
    shmem_team_t xt, yzt, yt, zt;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, xd, NULL, 0, &xt, NULL, 0, &yzt) == 0, "3d: split x/yz");
    CHECK(shmem_team_split_2d(yzt, yd, NULL, 0, &yt, NULL, 0, &zt) == 0, "3d: split yz into y/z");
    shmem_team_destroy(yzt);
    CHECK(shmem_team_my_pe(xt) == me % xd, "3d: x rank");
    CHECK(shmem_team_my_pe(yt) == (me / xd) % yd, "3d: y rank");
    CHECK(shmem_team_my_pe(zt) == me / (xd * yd), "3d: z rank");
    static long s, r;
    s = me;
    shmem_long_sum_reduce(zt, &r, &s, 1);
    long want = 0;
    for (int p = 0; p < npes; p++)
        if (p % (xd * yd) == me % (xd * yd))
            want += p;
    CHECK(r == want, "3d: z sum %ld want %ld", r, want);
    shmem_long_sum_reduce(yt, &r, &s, 1);
    want = 0;
    for (int p = 0; p < npes; p++)
        if (p / (xd * yd) == me / (xd * yd) && p % xd == me % xd)
            want += p;
    CHECK(r == want, "3d: y sum %ld want %ld", r, want);
    shmem_team_sync(xt);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_team_destroy(zt);
    shmem_barrier_all();
}

/* --- contexts, locks, heap ------------------------------------------------------------------- */
static void test_misc(void)
{
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &ctx) == 0, "ctx_create");
    static long cv[2];
    shmem_barrier_all();
    shmem_ctx_long_atomic_add(ctx, &cv[0], 1, 0);
    shmem_ctx_long_put(ctx, &cv[1], &cv[1], 0, 0);
    shmem_ctx_fence(ctx);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_long_atomic_add(&cv[0], 1, 0); /* the default context */
    shmem_barrier_all();
    if (me == 0)
        CHECK(cv[0] == 2 * npes, "ctx atomic_add total");
    /* lock: a non-atomic read-modify-write of a counter on PE 0 under the lock */
    for (int i = 0; i < 20; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&locked_counter, 0);
        shmem_long_p(&locked_counter, v + 1, 0);
        shmem_clear_lock(&lock);
    }
    while (shmem_test_lock(&lock))
        ;
    shmem_clear_lock(&lock);
    shmem_barrier_all();
    if (me == 0)
        CHECK(locked_counter == 20L * npes, "lock-protected counter %ld", locked_counter);
    /* heap: same address on every PE, alignment, calloc zeroes, realloc keeps contents */
    char *a = shmem_malloc(100), *b = shmem_align(4096, 10), *c = shmem_calloc(10, 8);
    long *addrs = shmem_malloc(sizeof(long) * (size_t)npes), mine[1] = {(long)(uintptr_t)b};
    static long mine_s;
    mine_s = mine[0];
    shmem_long_fcollect(SHMEM_TEAM_WORLD, addrs, &mine_s, 1);
    for (int p = 0; p < npes; p++)
        CHECK(addrs[p] == mine_s, "symmetric address on PE %d", p);
    CHECK(((uintptr_t)b & 4095) == 0, "shmem_align");
    for (int i = 0; i < 80; i++)
        CHECK(c[i] == 0, "calloc zero");
    for (int i = 0; i < 100; i++)
        a[i] = (char)i;
    a = shmem_realloc(a, 100000);
    for (int i = 0; i < 100; i++)
        CHECK(a[i] == (char)i, "realloc keeps contents");
    void *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(h != NULL, "malloc_with_hints");
    CHECK(shmem_addr_accessible(h, npes - 1) && !shmem_addr_accessible(mine, 0), "addr_accessible");
    CHECK(shmem_pe_accessible(npes - 1) && !shmem_pe_accessible(npes), "pe_accessible");
    CHECK(shmem_ptr(a, me) == a, "shmem_ptr to self");
    shmem_free(h);
    shmem_free(addrs);
    shmem_free(c);
    shmem_free(b);
    shmem_free(a);
    void *big = shmem_malloc((size_t)1 << 40);
    CHECK(big == NULL, "an impossible allocation returns NULL");
    void *s1 = shmalloc(32), *s2 = shmemalign(64, 32);
    CHECK(s1 && s2 && ((uintptr_t)s2 & 63) == 0, "legacy shmalloc/shmemalign");
    shfree(s2);
    shfree(s1);
    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == 1 && minor == 5 && strlen(name) > 0, "info");
    CHECK(_my_pe() == me && _num_pes() == npes, "legacy _my_pe/_num_pes");
    int prov;
    shmem_query_thread(&prov);
    CHECK(prov >= SHMEM_THREAD_SINGLE && prov <= SHMEM_THREAD_MULTIPLE, "query_thread");
    /* profiling control: declared, linkable, variadic, and leaves the library usable */
    shmem_pcontrol(0);
    shmem_pcontrol(2, "phase", 1);
    shmem_pcontrol(1);
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "legacy"))
        start_pes(0);
    else {
        int prov;
        shmem_init_thread(SHMEM_THREAD_FUNNELED, &prov);
    }
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (argc > 1 && !strcmp(argv[1], "nonsym")) {
        int local = 5;
        shmem_int_put(&local, &local, 1, (me + 1) % npes); /* must fail naming shmem_int_put */
        return 0;
    }
    test_rma();
    test_amo();
    test_wait();
    test_legacy_coll();
    test_teams();
    test_team_3d();
    test_misc();
    int fails = mp_failures, total = 0;
    static int sfails;
    sfails = fails;
    shmem_barrier_all();
    for (int p = 0; p < npes; p++)
        total += shmem_int_g(&sfails, p);
    if (me == 0)
        printf("shmem_api: %d PEs, %d failed checks\n", npes, total);
    shmem_finalize();
    return fails ? 1 : 0;
}
