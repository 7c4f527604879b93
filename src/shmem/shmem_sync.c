/* shmem_sync: point-to-point waits and tests, barriers (teams, world, legacy active sets), locks.
 *
 * Every wait polls local memory (the updates arrive as stores through another PE's window, or by
 * MPI into our window) and relaxes between polls: pause, MPI progress when the job spans nodes
 * (an MPI may apply remote updates only when we call it), and sched_yield() after a while so PEs
 * that outnumber cores still run. */
#include "shmem_internal.h"

#include <stdlib.h>

#define CMP_BODY(a, cmp, b)                                                                        \
    switch (cmp) {                                                                                 \
    case SHMEM_CMP_EQ: return a == b;                                                              \
    case SHMEM_CMP_NE: return a != b;                                                              \
    case SHMEM_CMP_GT: return a > b;                                                               \
    case SHMEM_CMP_GE: return a >= b;                                                              \
    case SHMEM_CMP_LT: return a < b;                                                               \
    case SHMEM_CMP_LE: return a <= b;                                                              \
    default: shi_fatal("shmem wait/test", "comparison %d is not one of the SHMEM_CMP_* constants", cmp); \
    }

static void check_cmp(int cmp, const char *routine)
{
    if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)
        shi_fatal(routine, "comparison %d is not one of the SHMEM_CMP_* constants", cmp);
}

/* Fairness of the _any forms: the standard wants a series of calls on one set to return, in time,
 * every index that stays satisfied, so a scan starts after the index the last call on that set
 * returned (a server polling its clients with test_any then serves them round-robin instead of
 * starving all but the lowest). The places are remembered per thread for the last few sets. */
#define ANY_SETS 16
static _Thread_local struct {
    const void *set;
    size_t next;
} any_last[ANY_SETS];
static _Thread_local unsigned any_victim;

static size_t any_start(const void *set, size_t n)
{
    for (int k = 0; k < ANY_SETS; k++)
        if (any_last[k].set == set)
            return any_last[k].next < n ? any_last[k].next : 0;
    return 0;
}

static void any_returned(const void *set, size_t i)
{
    if (i == SIZE_MAX)
        return;
    int k = 0;
    while (k < ANY_SETS && any_last[k].set != set)
        k++;
    if (k == ANY_SETS)
        k = (int)(any_victim++ % ANY_SETS);
    any_last[k].set = set;
    any_last[k].next = i + 1;
}

#define SYNC_DEF(T, N)                                                                             \
    static inline int cmp_##N(T a, int cmp, T b) { CMP_BODY(a, cmp, b) }                          \
    static inline T ld_##N(T *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }                  \
    BOBCAT_EXPORT void shmem_##N##_wait_until(T *ivar, int cmp, T v)                                  \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_wait_until");                                                 \
        unsigned spins = 0;                                                                        \
        while (!cmp_##N(ld_##N(ivar), cmp, v))                                                     \
            shi_relax(&spins);                                                                     \
    }                                                                                              \
    BOBCAT_EXPORT void shmem_##N##_wait(T *ivar, T v) { shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, v); } \
    BOBCAT_EXPORT int shmem_##N##_test(T *ivar, int cmp, T v)                                         \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test");                                                       \
        int r = cmp_##N(ld_##N(ivar), cmp, v);                                                     \
        if (!r)                                                                                    \
            shi_poll_miss();                                                                       \
        return r;                                                                                  \
    }                                                                                              \
    /* One pass over the set, starting at index `from` and wrapping around: how many of the     \
     * included satisfy (idx gets them, in index order only when from is 0), the first satisfying \
     * one met (*first_p), and how many are included. `vals` NULL: compare every one with v. */   \
    static size_t scan_##N(T *iv, size_t n, const int *st, int cmp, T v, const T *vals, size_t *idx, \
                           size_t from, size_t *first_p, size_t *incl_p)                           \
    {                                                                                              \
        size_t hits = 0, incl = 0;                                                                 \
        *first_p = SIZE_MAX;                                                                       \
        for (size_t k = 0, i = from; k < n; k++, i = i + 1 == n ? 0 : i + 1) {                     \
            if (st && st[i])                                                                       \
                continue;                                                                          \
            incl++;                                                                                \
            if (cmp_##N(ld_##N(&iv[i]), cmp, vals ? vals[i] : v)) {                                \
                if (idx)                                                                           \
                    idx[hits] = i;                                                                 \
                if (*first_p == SIZE_MAX)                                                          \
                    *first_p = i;                                                                  \
                hits++;                                                                            \
            }                                                                                      \
        }                                                                                          \
        *incl_p = incl;                                                                            \
        return hits;                                                                               \
    }                                                                                              \
    static void wall_##N(T *iv, size_t n, const int *st, int cmp, T v, const T *vals, const char *R) \
    {                                                                                              \
        check_cmp(cmp, R);                                                                         \
        unsigned spins = 0;                                                                        \
        size_t first, incl;                                                                        \
        while (scan_##N(iv, n, st, cmp, v, vals, NULL, 0, &first, &incl) != incl)                    \
            shi_relax(&spins);                                                                     \
    }                                                                                              \
    static size_t wany_##N(T *iv, size_t n, const int *st, int cmp, T v, const T *vals, const char *R) \
    {                                                                                              \
        check_cmp(cmp, R);                                                                         \
        unsigned spins = 0;                                                                        \
        size_t first, incl, from = any_start(iv, n);                                               \
        while (!scan_##N(iv, n, st, cmp, v, vals, NULL, from, &first, &incl) && incl)              \
            shi_relax(&spins);                                                                     \
        any_returned(iv, first);                                                                   \
        return first;                                                                              \
    }                                                                                              \
    static size_t wsome_##N(T *iv, size_t n, size_t *idx, const int *st, int cmp, T v, const T *vals, \
                            const char *R)                                                         \
    {                                                                                              \
        check_cmp(cmp, R);                                                                         \
        unsigned spins = 0;                                                                        \
        size_t first, incl, hits;                                                                  \
        while (!(hits = scan_##N(iv, n, st, cmp, v, vals, idx, 0, &first, &incl)) && incl)           \
            shi_relax(&spins);                                                                     \
        return hits;                                                                               \
    }                                                                                              \
    BOBCAT_EXPORT void shmem_##N##_wait_until_all(T *iv, size_t n, const int *st, int cmp, T v)       \
    { wall_##N(iv, n, st, cmp, v, NULL, "shmem_" #N "_wait_until_all"); }                         \
    BOBCAT_EXPORT size_t shmem_##N##_wait_until_any(T *iv, size_t n, const int *st, int cmp, T v)     \
    { return wany_##N(iv, n, st, cmp, v, NULL, "shmem_" #N "_wait_until_any"); }                  \
    BOBCAT_EXPORT size_t shmem_##N##_wait_until_some(T *iv, size_t n, size_t *idx, const int *st, int cmp, T v) \
    { return wsome_##N(iv, n, idx, st, cmp, v, NULL, "shmem_" #N "_wait_until_some"); }           \
    BOBCAT_EXPORT void shmem_##N##_wait_until_all_vector(T *iv, size_t n, const int *st, int cmp, T *vals) \
    { wall_##N(iv, n, st, cmp, 0, vals, "shmem_" #N "_wait_until_all_vector"); }                  \
    BOBCAT_EXPORT size_t shmem_##N##_wait_until_any_vector(T *iv, size_t n, const int *st, int cmp, T *vals) \
    { return wany_##N(iv, n, st, cmp, 0, vals, "shmem_" #N "_wait_until_any_vector"); }           \
    BOBCAT_EXPORT size_t shmem_##N##_wait_until_some_vector(T *iv, size_t n, size_t *idx, const int *st, int cmp, \
                                                         T *vals)                                  \
    { return wsome_##N(iv, n, idx, st, cmp, 0, vals, "shmem_" #N "_wait_until_some_vector"); }    \
    BOBCAT_EXPORT int shmem_##N##_test_all(T *iv, size_t n, const int *st, int cmp, T v)             \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_all");                                                   \
        size_t first, incl;                                                                        \
        int r = scan_##N(iv, n, st, cmp, v, NULL, NULL, 0, &first, &incl) == incl;                    \
        if (!r)                                                                                    \
            shi_poll_miss();                                                                       \
        return r;                                                                                  \
    }                                                                                              \
    BOBCAT_EXPORT size_t shmem_##N##_test_any(T *iv, size_t n, const int *st, int cmp, T v)          \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_any");                                                   \
        size_t first, incl;                                                                        \
        scan_##N(iv, n, st, cmp, v, NULL, NULL, any_start(iv, n), &first, &incl);                  \
        if (first == SIZE_MAX)                                                                     \
            shi_poll_miss();                                                                       \
        any_returned(iv, first);                                                                   \
        return first;                                                                              \
    }                                                                                              \
    BOBCAT_EXPORT size_t shmem_##N##_test_some(T *iv, size_t n, size_t *idx, const int *st, int cmp, T v) \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_some");                                                  \
        size_t first, incl;                                                                        \
        size_t hits = scan_##N(iv, n, st, cmp, v, NULL, idx, 0, &first, &incl);                     \
        if (!hits)                                                                                 \
            shi_poll_miss();                                                                       \
        return hits;                                                                               \
    }                                                                                              \
    BOBCAT_EXPORT int shmem_##N##_test_all_vector(T *iv, size_t n, const int *st, int cmp, T *vals)   \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_all_vector");                                            \
        size_t first, incl;                                                                        \
        int r = scan_##N(iv, n, st, cmp, 0, vals, NULL, 0, &first, &incl) == incl;                    \
        if (!r)                                                                                    \
            shi_poll_miss();                                                                       \
        return r;                                                                                  \
    }                                                                                              \
    BOBCAT_EXPORT size_t shmem_##N##_test_any_vector(T *iv, size_t n, const int *st, int cmp, T *vals) \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_any_vector");                                            \
        size_t first, incl;                                                                        \
        scan_##N(iv, n, st, cmp, 0, vals, NULL, any_start(iv, n), &first, &incl);                  \
        if (first == SIZE_MAX)                                                                     \
            shi_poll_miss();                                                                       \
        any_returned(iv, first);                                                                   \
        return first;                                                                              \
    }                                                                                              \
    BOBCAT_EXPORT size_t shmem_##N##_test_some_vector(T *iv, size_t n, size_t *idx, const int *st, int cmp, \
                                                   T *vals)                                        \
    {                                                                                              \
        check_cmp(cmp, "shmem_" #N "_test_some_vector");                                           \
        size_t first, incl;                                                                        \
        size_t hits = scan_##N(iv, n, st, cmp, 0, vals, idx, 0, &first, &incl);                     \
        if (!hits)                                                                                 \
            shi_poll_miss();                                                                       \
        return hits;                                                                               \
    }
SHMEMI_SYNC_TYPES(SYNC_DEF)

BOBCAT_EXPORT void shmem_wait_until(long *ivar, int cmp, long v) { shmem_long_wait_until(ivar, cmp, v); }
BOBCAT_EXPORT void shmem_wait(long *ivar, long v) { shmem_long_wait_until(ivar, SHMEM_CMP_NE, v); }

BOBCAT_EXPORT uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t v)
{
    shmem_uint64_wait_until(sig_addr, cmp, v);
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

/* --- barriers ---------------------------------------------------------------------------------- */

/* Dissemination barrier over the set: ceil(log2 n) rounds; in round k a member signals the member
 * 2^k after it and waits for the one 2^k before. Teams signal with their epoch (a store of a
 * growing number: one writer per flag, nothing to reset); legacy pSync sets count with atomics and
 * consume their count, which leaves pSync as they found it (all SHMEM_SYNC_VALUE). */
int shi_set_hier(const shi_set_t *s, shi_hier_t *h, int *leaders)
{
    /* shi.node[pe] is the first PE of the run of consecutive PEs pe reaches by load/store, so it
     * never decreases with pe; a set's PEs increase (stride >= 1), so a node's members are
     * contiguous in set order, for any stride and for both axes of a 2-D split. A member leads
     * its node when the member before it is on another node. Should the node numbers ever go
     * down (a placement that is not by contiguous blocks), the set is not treated as
     * hierarchical: the flat algorithms are correct at any placement. */
    int mynode = shi.node[shi_set_pe(s, s->me)], monotonic = 1;
    *h = (shi_hier_t){.leader_idx = -1, .leader = -1};
    for (int i = 0; i < s->size; i++) {
        int nd = shi.node[shi_set_pe(s, i)];
        if (i == 0 || shi.node[shi_set_pe(s, i - 1)] != nd) {
            if (i > 0 && shi.node[shi_set_pe(s, i - 1)] > nd)
                monotonic = 0;
            if (leaders)
                leaders[h->nleaders] = i;
            if (i == s->me)
                h->leader_idx = h->nleaders;
            h->nleaders++;
        }
        if (nd == mynode) {
            if (h->leader < 0)
                h->leader = i;
            if (i == s->me)
                h->my_local = h->nlocal;
            h->nlocal++;
        }
    }
    /* Teams sync through their slot, legacy sets through their pSync: both have the words. */
    return monotonic && h->nleaders > 1 && h->nleaders < s->size;
}

static void signal_epoch(uint64_t *flag, uint64_t e, int pe)
{
    int region = 0;
    size_t disp = 0;
    uint64_t *p = shi_xlate(flag, 8, pe, "shmem_team_sync", &region, &disp);
    if (p)
        __atomic_store_n(p, e, __ATOMIC_RELEASE);
    else /* an atomic set: it completes remotely, and we wait for it with yields */
        SHI_TR(shmem_tr_amo(SHI_AMO_SWAP, 8, region, disp, e, 0, pe, &(uint64_t){0}), "shmem_team_sync");
}

/* Across nodes, a team syncs in three steps: the members of a node report to its leader (a store
 * each, into the leader's slot), the leaders run the dissemination among themselves (MPI), and
 * each leader releases its node (one store the members poll through the window). Only leaders
 * talk between nodes. */
static void hier_sync(shi_set_t *s, uint64_t e, const shi_hier_t *h, const int *leaders)
{
    unsigned spins = 0;
    int lpe = shi_set_pe(s, h->leader);
    if (h->leader_idx < 0) {
        signal_epoch(&s->slot->arrive[h->my_local], e, lpe);
        int region = 0;
        size_t disp = 0;
        uint64_t *rel = shi_xlate(&s->slot->release, 8, lpe, "shmem_team_sync", &region, &disp);
        while (__atomic_load_n(rel, __ATOMIC_ACQUIRE) < e)
            shi_relax(&spins);
        return;
    }
    for (int j = 1; j < h->nlocal; j++)
        while (__atomic_load_n(&s->slot->arrive[j], __ATOMIC_ACQUIRE) < e)
            shi_relax(&spins);
    int n = h->nleaders, me = h->leader_idx;
    for (int k = 0, d = 1; d < n; k++, d <<= 1) {
        signal_epoch(&s->flags[k], e, shi_set_pe(s, leaders[(me + d) % n]));
        while (__atomic_load_n(&s->flags[k], __ATOMIC_ACQUIRE) < e)
            shi_relax(&spins);
    }
    __atomic_store_n(&s->slot->release, e, __ATOMIC_RELEASE);
}

/* The address of `word` (symmetric) in `pe`'s memory, which must be reachable by load/store. */
static uint64_t *node_word(uint64_t *word, int pe, const char *R)
{
    int region = 0;
    size_t disp = 0;
    uint64_t *p = shi_xlate(word, 8, pe, R, &region, &disp);
    if (!p)
        shi_fatal(R, "internal: PE %d of this node is not reachable by load/store", pe);
    return p;
}

/* A legacy active set across nodes, counting in its pSync: each member adds one to its leader's
 * arrival count (a CPU atomic through the window: only this node's PEs ever touch that word),
 * the leader takes its node's arrivals out of the count, runs the counting dissemination with the
 * other leaders (MPI atomics on the round words, as the flat barrier), and adds one to each
 * member's own release count, which the member takes back out. Every count is consumed by the
 * PE that owns the word, so pSync is back at SHMEM_SYNC_VALUE once the PEs have left, and a
 * member already in the next call cannot take a token meant for another member (each has its
 * own). */
static void legacy_hier_sync(shi_set_t *s, const shi_hier_t *h, const int *leaders)
{
    static const char R[] = "shmem_barrier/shmem_sync (pSync)";
    unsigned spins = 0;
    uint64_t *arrive = s->flags + SHI_PS_ARRIVE, *release = s->flags + SHI_PS_RELEASE;
    if (h->leader_idx < 0) {
        __atomic_fetch_add(node_word(arrive, shi_set_pe(s, h->leader), R), 1, __ATOMIC_RELEASE);
        while ((int64_t)__atomic_load_n(release, __ATOMIC_ACQUIRE) < 1)
            shi_relax(&spins);
        __atomic_fetch_sub(release, 1, __ATOMIC_ACQ_REL);
        return;
    }
    uint64_t others = (uint64_t)(h->nlocal - 1);
    if (others) {
        while (__atomic_load_n(arrive, __ATOMIC_ACQUIRE) < others)
            shi_relax(&spins);
        __atomic_fetch_sub(arrive, others, __ATOMIC_ACQ_REL);
    }
    int n = h->nleaders, me = h->leader_idx;
    for (int k = 0, d = 1; d < n; k++, d <<= 1) {
        shi_amo(SHI_AMO_ADD | SHI_AMO_F, 8, &s->flags[k], 1, 0, shi_set_pe(s, leaders[(me + d) % n]), R);
        while ((int64_t)__atomic_load_n(&s->flags[k], __ATOMIC_ACQUIRE) < 1)
            shi_relax(&spins);
        shi_amo(SHI_AMO_ADD | SHI_AMO_F, 8, &s->flags[k], (uint64_t)-1, 0, shi.me, R);
    }
    for (int j = 1; j < h->nlocal; j++)
        __atomic_fetch_add(node_word(release, shi_set_pe(s, h->leader + j), R), 1, __ATOMIC_RELEASE);
}

void shi_set_sync(shi_set_t *s)
{
    int n = s->size, me = s->me;
    if (n <= 1)
        return;
    unsigned spins = 0;
    if (!shi.all_local) {
        shi_hier_t h;
        int leaders_small[64], *leaders = n <= 64 ? leaders_small : malloc(sizeof(int) * (size_t)n);
        if (!leaders)
            shi_fatal("shmem_team_sync", "out of memory");
        int hier = shi_set_hier(s, &h, leaders);
        if (hier && s->epoch_p)
            hier_sync(s, ++*s->epoch_p, &h, leaders);
        else if (hier)
            legacy_hier_sync(s, &h, leaders);
        if (leaders != leaders_small)
            free(leaders);
        if (hier)
            return;
    }
    if (s->epoch_p) {
        uint64_t e = ++*s->epoch_p;
        for (int k = 0, d = 1; d < n; k++, d <<= 1) {
            signal_epoch(&s->flags[k], e, shi_set_pe(s, (me + d) % n));
            while (__atomic_load_n(&s->flags[k], __ATOMIC_ACQUIRE) < e)
                shi_relax(&spins);
        }
    } else {
        for (int k = 0, d = 1; d < n; k++, d <<= 1) {
            int to = shi_set_pe(s, (me + d) % n);
            shi_amo(SHI_AMO_ADD | SHI_AMO_F, 8, &s->flags[k], 1, 0, to, "shmem_barrier/shmem_sync (pSync)");
            while ((int64_t)__atomic_load_n(&s->flags[k], __ATOMIC_ACQUIRE) < 1)
                shi_relax(&spins);
            shi_amo(SHI_AMO_ADD | SHI_AMO_F, 8, &s->flags[k], (uint64_t)-1, 0, shi.me,
                    "shmem_barrier/shmem_sync (pSync)");
        }
    }
}

void shi_set_legacy(shi_set_t *s, int start, int log_stride, int size, long *psync, const char *routine)
{
    if (!shi.initialized)
        shi_not_initialized(routine);
    int stride = 1 << log_stride;
    if (start < 0 || size < 1 || log_stride < 0 || log_stride > 30 ||
        (long)start + (long)(size - 1) * stride >= shi.npes)
        shi_fatal(routine, "the active set PE_start=%d logPE_stride=%d PE_size=%d does not fit in the %d PEs", start,
                  log_stride, size, shi.npes);
    int rel = shi.me - start;
    if (rel < 0 || rel % stride || rel / stride >= size)
        shi_fatal(routine, "PE %d is not in the active set PE_start=%d logPE_stride=%d PE_size=%d it called with",
                  shi.me, start, log_stride, size);
    uintptr_t a = (uintptr_t)psync;
    if (!(a - shi.heap < shi.heap_size || a - shi.data < shi.data_size))
        shi_not_symmetric(routine, psync, shi.me);
    *s = (shi_set_t){.start = start, .stride = stride, .size = size, .me = rel / stride,
                     .flags = (uint64_t *)psync, .chain = (uint64_t *)psync + SHI_PS_CHAIN,
                     .coll = (uint64_t *)psync + SHI_PS_COLL};
}

void shi_barrier_all(void)
{
    shi_set_t s;
    shi_quiet();
    shi_team_set(&shi_team_world, &s);
    shi_set_sync(&s);
}

BOBCAT_EXPORT void shmem_barrier_all(void)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_barrier_all");
    shi_barrier_all();
}

BOBCAT_EXPORT void shmem_sync_all(void)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_sync_all");
    shi_set_t s;
    shi_team_set(&shi_team_world, &s);
    shi_set_sync(&s);
}

BOBCAT_EXPORT void shmem_barrier(int start, int log_stride, int size, long *psync)
{
    shi_set_t s;
    shi_set_legacy(&s, start, log_stride, size, psync, "shmem_barrier");
    shi_quiet();
    shi_set_sync(&s);
}

BOBCAT_EXPORT void shmem_sync_deprecated(int start, int log_stride, int size, long *psync)
{
    shi_set_t s;
    shi_set_legacy(&s, start, log_stride, size, psync, "shmem_sync");
    shi_set_sync(&s);
}
/* The pre-1.5 symbol: what programs built against older headers call (see shmem.h). */
BOBCAT_EXPORT void shmem_sync(int start, int log_stride, int size, long *psync)
{
    shmem_sync_deprecated(start, log_stride, size, psync);
}

/* --- locks: a test-and-set word in PE 0's copy of the lock, polled with plain reads --------- */
BOBCAT_EXPORT void shmem_set_lock(long *lock)
{
    unsigned spins = 0;
    for (;;) {
        if (shi_amo(SHI_AMO_CSWAP, sizeof(long), lock, (uint64_t)shi.me + 1, 0, 0, "shmem_set_lock") == 0)
            break;
        while (shi_amo(SHI_AMO_FETCH, sizeof(long), lock, 0, 0, 0, "shmem_set_lock") != 0)
            shi_relax(&spins);
    }
}

BOBCAT_EXPORT int shmem_test_lock(long *lock)
{
    if (shi_amo(SHI_AMO_CSWAP, sizeof(long), lock, (uint64_t)shi.me + 1, 0, 0, "shmem_test_lock") == 0)
        return 0;
    /* Busy: callers spin on test_lock, so this is a busy-wait step too (the holder's off-node gets
     * from us are served only when we call MPI: shmem4py's testTestLock hung at 4 PEs on 2
     * simulated nodes); and let an oversubscribed holder run. */
    shi_poll_miss();
    sched_yield();
    return 1;
}

BOBCAT_EXPORT void shmem_clear_lock(long *lock)
{
    shi_quiet(); /* what the holder wrote is complete before the next holder gets in */
    shi_amo(SHI_AMO_SET, sizeof(long), lock, 0, 0, 0, "shmem_clear_lock");
}
