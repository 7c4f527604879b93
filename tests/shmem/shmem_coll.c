/* shmem_coll: every collective over every kind of PE set, on one node and across (simulated)
 * nodes, where bobcat's collectives are hierarchical. The sets: team world, split_strided with
 * stride 2 and with the odd stride 3, both axes of a split_2d (rows of 3, so rows and columns
 * straddle nodes), a team of one PE, and the legacy active sets PE_start/logPE_stride/PE_size (the
 * world, the even and the odd PEs with logPE_stride 1, stride 4, and a set of one). Each member
 * knows the set from its own description (start + i * stride) and checks every value against a
 * formula of the contributing world PE, element index and iteration. Legacy calls alternate two
 * pSync arrays, reuse them after a barrier, reuse the barrier's own pSync back to back, and every
 * pSync must be back at SHMEM_SYNC_VALUE at the end. Sizes: zero-size collects, and alltoall
 * blocks too large for the leaders' staging area (the flat path). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mp/mp_util.h"

static int me, npes;
#define ITERS 2
#define BIG 5120 /* int64 elements per alltoall block: 40 KiB, beyond the staging area at 8 PEs */

static long psA[SHMEM_SYNC_SIZE], psB[SHMEM_SYNC_SIZE], psBar[SHMEM_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
static double dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
static int iwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
static int64_t ssrc[64], sdst[64]; /* static data: symmetric too */

static int64_t *src, *dst; /* heap: npes * BIG elements each */
static int32_t *src32, *dst32;
static long *bar; /* barrier check words, one per set member */

typedef struct {
    const char *name;
    shmem_team_t team; /* SHMEM_TEAM_INVALID: a legacy active set */
    int start, logs, stride, size, idx;
} set_t;

static int pe_of(const set_t *s, int j) { return s->start + j * s->stride; }
static int64_t V(int pe, int i, int it) { return (int64_t)(pe + 1) * 100000 + i * 7 + it; }
static int64_t W(int from, int to, int i, int it) { return (int64_t)(from + 1) * 1000000 + (to + 1) * 1000 + i * 3 + it; }
static int cnt(int j, int it) { return (j + it) % 3; } /* collect: 0, 1 or 2 elements */

static long *ps(int k) { return k % 2 ? psB : psA; }

static void fill(int64_t *p, size_t n, int64_t v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

static void t_broadcast(const set_t *s, int it)
{
    int root = (it * 2 + 1) % s->size, n = 5, rpe = pe_of(s, root);
    for (int i = 0; i < n; i++)
        src[i] = V(me, i, it);
    fill(dst, 8, -1);
    if (s->team)
        shmem_int64_broadcast(s->team, dst, src, (size_t)n, root);
    else
        shmem_broadcast64(dst, src, (size_t)n, root, s->start, s->logs, s->size, ps(it));
    for (int i = 0; i < n; i++) {
        int64_t want = (!s->team && s->idx == root) ? -1 : V(rpe, i, it);
        CHECK(dst[i] == want, "%s broadcast64 it %d root %d [%d]: %lld, want %lld", s->name, it, root, i,
              (long long)dst[i], (long long)want);
    }
    CHECK(dst[n] == -1, "%s broadcast wrote past the end", s->name);
    /* 32-bit, zero elements, then static buffers */
    for (int i = 0; i < 3; i++)
        src32[i] = (int32_t)V(me, i, it);
    memset(dst32, 0, 16);
    if (s->team)
        shmem_int32_broadcast(s->team, dst32, src32, 3, root);
    else
        shmem_broadcast32(dst32, src32, 3, root, s->start, s->logs, s->size, ps(it + 1));
    for (int i = 0; i < 3; i++)
        CHECK(dst32[i] == ((!s->team && s->idx == root) ? 0 : (int32_t)V(rpe, i, it)), "%s broadcast32 [%d]", s->name, i);
    if (s->team)
        shmem_int64_broadcast(s->team, sdst, ssrc, 0, root);
    else
        shmem_broadcast64(sdst, ssrc, 0, root, s->start, s->logs, s->size, ps(it));
    ssrc[0] = V(me, 9, it);
    sdst[0] = -2;
    if (s->team)
        shmem_int64_broadcast(s->team, sdst, ssrc, 1, root);
    else
        shmem_broadcast64(sdst, ssrc, 1, root, s->start, s->logs, s->size, ps(it + 1));
    CHECK(sdst[0] == ((!s->team && s->idx == root) ? -2 : V(rpe, 9, it)), "%s broadcast of static data", s->name);
}

static void t_fcollect(const set_t *s, int it)
{
    int n = 3;
    for (int i = 0; i < n; i++)
        src[i] = V(me, i, it), src32[i] = (int32_t)V(me, i, it);
    fill(dst, (size_t)(s->size * n + 1), -1);
    if (s->team)
        shmem_int64_fcollect(s->team, dst, src, (size_t)n);
    else
        shmem_fcollect64(dst, src, (size_t)n, s->start, s->logs, s->size, ps(it));
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < n; i++)
            CHECK(dst[j * n + i] == V(pe_of(s, j), i, it), "%s fcollect64 it %d from %d [%d]", s->name, it, j, i);
    CHECK(dst[s->size * n] == -1, "%s fcollect wrote past the end", s->name);
    memset(dst32, 0, sizeof(int32_t) * (size_t)(s->size * 2));
    if (s->team)
        shmem_fcollectmem(s->team, dst32, src32, 2 * sizeof(int32_t));
    else
        shmem_fcollect32(dst32, src32, 2, s->start, s->logs, s->size, ps(it + 1));
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < 2; i++)
            CHECK(dst32[j * 2 + i] == (int32_t)V(pe_of(s, j), i, it), "%s fcollect32 from %d", s->name, j);
    if (s->team)
        shmem_int64_fcollect(s->team, dst, src, 0);
    else
        shmem_fcollect64(dst, src, 0, s->start, s->logs, s->size, ps(it));
}

static void t_collect(const set_t *s, int it)
{
    int mine = cnt(s->idx, it);
    for (int i = 0; i < mine; i++)
        src[i] = V(me, i, it), src32[i] = (int32_t)V(me, i, it);
    fill(dst, (size_t)(2 * s->size + 1), -1);
    if (s->team)
        shmem_int64_collect(s->team, dst, src, (size_t)mine);
    else
        shmem_collect64(dst, src, (size_t)mine, s->start, s->logs, s->size, ps(it));
    int k = 0;
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < cnt(j, it); i++, k++)
            CHECK(dst[k] == V(pe_of(s, j), i, it), "%s collect64 it %d from %d [%d]: %lld", s->name, it, j, i,
                  (long long)dst[k]);
    CHECK(dst[k] == -1, "%s collect64 wrote past the end", s->name);
    memset(dst32, 0, sizeof(int32_t) * (size_t)(2 * s->size));
    if (s->team)
        shmem_int32_collect(s->team, dst32, src32, (size_t)mine);
    else
        shmem_collect32(dst32, src32, (size_t)mine, s->start, s->logs, s->size, ps(it + 1));
    k = 0;
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < cnt(j, it); i++, k++)
            CHECK(dst32[k] == (int32_t)V(pe_of(s, j), i, it), "%s collect32 from %d [%d]", s->name, j, i);
    /* every member contributes nothing: dest is left alone */
    fill(dst, 4, -3);
    if (s->team)
        shmem_int64_collect(s->team, dst, src, 0);
    else
        shmem_collect64(dst, src, 0, s->start, s->logs, s->size, ps(it));
    CHECK(dst[0] == -3 && dst[3] == -3, "%s empty collect wrote", s->name);
}

static void t_alltoall(const set_t *s, int it, int n)
{
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < n; i++)
            src[j * n + i] = W(me, pe_of(s, j), i, it);
    fill(dst, (size_t)(s->size * n + 1), -1);
    if (s->team)
        shmem_int64_alltoall(s->team, dst, src, (size_t)n);
    else
        shmem_alltoall64(dst, src, (size_t)n, s->start, s->logs, s->size, ps(it));
    int bad = 0;
    for (int j = 0; j < s->size; j++)
        for (int i = 0; i < n; i++)
            if (dst[j * n + i] != W(pe_of(s, j), me, i, it) && bad++ < 3)
                CHECK(0, "%s alltoall64 (%d) it %d from %d [%d]: %lld, want %lld", s->name, n, it, j, i,
                      (long long)dst[j * n + i], (long long)W(pe_of(s, j), me, i, it));
    CHECK(dst[s->size * n] == -1, "%s alltoall wrote past the end", s->name);
    if (n > 4)
        return;
    for (int j = 0; j < s->size; j++)
        src32[j] = (int32_t)W(me, pe_of(s, j), 0, it);
    memset(dst32, 0, sizeof(int32_t) * (size_t)s->size);
    if (s->team)
        shmem_int32_alltoall(s->team, dst32, src32, 1);
    else
        shmem_alltoall32(dst32, src32, 1, s->start, s->logs, s->size, ps(it + 1));
    for (int j = 0; j < s->size; j++)
        CHECK(dst32[j] == (int32_t)W(pe_of(s, j), me, 0, it), "%s alltoall32 from %d", s->name, j);
}

static void t_alltoalls(const set_t *s, int it)
{
    const int n = 2, sst = 3, dstr = 2;
    fill(src, (size_t)(s->size * n * sst), -5);
    for (int j = 0; j < s->size; j++)
        for (int e = 0; e < n; e++)
            src[(j * n + e) * sst] = W(me, pe_of(s, j), e, it);
    fill(dst, (size_t)(s->size * n * dstr), -7);
    if (s->team)
        shmem_int64_alltoalls(s->team, dst, src, dstr, sst, (size_t)n);
    else
        shmem_alltoalls64(dst, src, dstr, sst, (size_t)n, s->start, s->logs, s->size, ps(it));
    for (int j = 0; j < s->size; j++)
        for (int e = 0; e < n; e++) {
            CHECK(dst[(j * n + e) * dstr] == W(pe_of(s, j), me, e, it), "%s alltoalls64 it %d from %d [%d]",
                  s->name, it, j, e);
            CHECK(dst[(j * n + e) * dstr + 1] == -7, "%s alltoalls64 wrote a gap", s->name);
        }
    for (int j = 0; j < s->size; j++)
        src32[j * 2] = (int32_t)W(me, pe_of(s, j), 1, it);
    memset(dst32, 0, sizeof(int32_t) * (size_t)s->size);
    if (s->team)
        shmem_int32_alltoalls(s->team, dst32, src32, 1, 2, 1);
    else
        shmem_alltoalls32(dst32, src32, 1, 2, 1, s->start, s->logs, s->size, ps(it + 1));
    for (int j = 0; j < s->size; j++)
        CHECK(dst32[j] == (int32_t)W(pe_of(s, j), me, 1, it), "%s alltoalls32 from %d", s->name, j);
}

static void t_reduce(const set_t *s, int it)
{
    static long ls[4], ld[4];
    static int is[4], id[4];
    static double ds[2], dd[2];
    for (int i = 0; i < 4; i++)
        ls[i] = (long)V(me, i, it), is[i] = (int)((me * 37 + i * 11 + it) % 23);
    ds[0] = (double)(s->idx % 3 + 1);
    ds[1] = 0.5;
    if (s->team) {
        shmem_long_sum_reduce(s->team, ld, ls, 4);
    } else {
        shmem_long_sum_to_all(ld, ls, 4, s->start, s->logs, s->size, pwrk, ps(it));
    }
    for (int i = 0; i < 4; i++) {
        long want = 0;
        for (int j = 0; j < s->size; j++)
            want += (long)V(pe_of(s, j), i, it);
        CHECK(ld[i] == want, "%s sum it %d [%d]: %ld, want %ld", s->name, it, i, ld[i], want);
    }
    if (s->team)
        shmem_int_max_reduce(s->team, id, is, 4);
    else
        shmem_int_max_to_all(id, is, 4, s->start, s->logs, s->size, iwrk, ps(it + 1));
    for (int i = 0; i < 4; i++) {
        int want = -1;
        for (int j = 0; j < s->size; j++) {
            int v = (pe_of(s, j) * 37 + i * 11 + it) % 23;
            if (v > want)
                want = v;
        }
        CHECK(id[i] == want, "%s max [%d]: %d, want %d", s->name, i, id[i], want);
    }
    if (s->team)
        shmem_double_prod_reduce(s->team, dd, ds, 2);
    else
        shmem_double_prod_to_all(dd, ds, 2, s->start, s->logs, s->size, dwrk, ps(it));
    double w0 = 1, w1 = 1;
    for (int j = 0; j < s->size; j++)
        w0 *= (double)(j % 3 + 1), w1 *= 0.5;
    CHECK(dd[0] == w0 && dd[1] == w1, "%s prod: %g %g, want %g %g", s->name, dd[0], dd[1], w0, w1);
    /* xor, in place */
    ls[0] = (long)V(me, 0, it) * 2654435761L;
    if (s->team)
        shmem_ulong_xor_reduce(s->team, (unsigned long *)ls, (unsigned long *)ls, 1);
    else
        shmem_long_xor_to_all(ls, ls, 1, s->start, s->logs, s->size, pwrk, ps(it + 1));
    long wx = 0;
    for (int j = 0; j < s->size; j++)
        wx ^= (long)V(pe_of(s, j), 0, it) * 2654435761L;
    CHECK(ls[0] == wx, "%s in-place xor", s->name);
    /* zero elements */
    if (s->team)
        shmem_long_sum_reduce(s->team, ld, ls, 0);
    else
        shmem_long_sum_to_all(ld, ls, 0, s->start, s->logs, s->size, pwrk, ps(it));
}

/* Barrier: each member stores into the next member's word, then the barrier; the store must be
 * there after it. Back to back with the same pSync. */
static void t_barrier(const set_t *s, int it)
{
    for (int r = 0; r < 3; r++) {
        int next = (s->idx + 1) % s->size, prev = (s->idx + s->size - 1) % s->size;
        shmem_long_p(&bar[s->idx], (long)V(me, r, it), pe_of(s, next));
        if (s->team) {
            shmem_quiet();
            shmem_team_sync(s->team);
        } else {
            shmem_barrier(s->start, s->logs, s->size, psBar);
        }
        CHECK(bar[prev] == (long)V(pe_of(s, prev), r, it), "%s barrier it %d round %d", s->name, it, r);
        if (s->team)
            shmem_team_sync(s->team);
        else
            shmem_sync(s->start, s->logs, s->size, psBar); /* the next round's store waits for the check */
    }
}

static void run_set(set_t *s)
{
    if (s->team && s->team != SHMEM_TEAM_WORLD) {
        /* our own view of the set must agree with the team's */
        CHECK(shmem_team_my_pe(s->team) == s->idx && shmem_team_n_pes(s->team) == s->size, "%s: team %d/%d, want %d/%d",
              s->name, shmem_team_my_pe(s->team), shmem_team_n_pes(s->team), s->idx, s->size);
    }
    for (int it = 0; it < ITERS; it++) {
        t_barrier(s, it);
        t_broadcast(s, it);
        t_fcollect(s, it);
        t_collect(s, it);
        t_alltoall(s, it, 2);
        t_alltoalls(s, it);
        t_reduce(s, it);
        if (!s->team) /* a legacy pSync may be reused by another collective after a barrier */
            shmem_barrier(s->start, s->logs, s->size, psBar);
    }
    t_alltoall(s, ITERS, BIG);
}

static void legacy(const char *name, int start, int logs, int size)
{
    int stride = 1 << logs, rel = me - start;
    if (size < 1 || start + (size - 1) * stride >= npes || rel < 0 || rel % stride || rel / stride >= size)
        return;
    set_t s = {name, SHMEM_TEAM_INVALID, start, logs, stride, size, rel / stride};
    run_set(&s);
}

static void team(const char *name, shmem_team_t t, int start, int stride, int size)
{
    int rel = me - start;
    if (t == SHMEM_TEAM_INVALID) {
        CHECK(rel < 0 || rel % stride || rel / stride >= size, "%s: PE %d is a member but got no team", name, me);
        return;
    }
    set_t s = {name, t, start, 0, stride, size, rel / stride};
    CHECK(rel >= 0 && rel % stride == 0 && rel / stride < size, "%s: PE %d got a team it is not in", name, me);
    run_set(&s);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    src = shmem_malloc(sizeof(int64_t) * (size_t)npes * BIG + 64);
    dst = shmem_malloc(sizeof(int64_t) * (size_t)npes * BIG + 64);
    src32 = shmem_malloc(sizeof(int32_t) * (size_t)npes * 8);
    dst32 = shmem_malloc(sizeof(int32_t) * (size_t)npes * 8);
    bar = shmem_calloc((size_t)npes, sizeof(long));
    shmem_barrier_all();

    team("world", SHMEM_TEAM_WORLD, 0, 1, npes);
    shmem_barrier_all();

    shmem_team_t t2, t3, one, x, y;
    int n2 = (npes + 1) / 2, n3 = (npes - 1 + 2) / 3;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n2, NULL, 0, &t2);
    team("strided2", t2, 0, 2, n2);
    shmem_barrier_all();
    if (npes > 1) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 3, n3, NULL, 0, &t3);
        team("strided3", t3, 1, 3, n3);
        shmem_barrier_all();
        shmem_team_destroy(t3);
    }
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, 1, 1, NULL, 0, &one);
    team("one", one, npes - 1, 1, 1);
    shmem_barrier_all();
    shmem_team_destroy(one);
    shmem_team_destroy(t2);
    int xr = npes < 3 ? npes : 3;
    shmem_team_split_2d(SHMEM_TEAM_WORLD, 3, NULL, 0, &x, NULL, 0, &y);
    int row = me / xr, col = me % xr;
    team("2d-x", x, row * xr, 1, npes - row * xr < xr ? npes - row * xr : xr);
    shmem_barrier_all();
    team("2d-y", y, col, xr, (npes - col + xr - 1) / xr);
    shmem_barrier_all();
    shmem_team_destroy(x);
    shmem_team_destroy(y);

    legacy("legacy-world", 0, 0, npes);
    shmem_barrier_all();
    legacy("legacy-even", 0, 1, n2);
    legacy("legacy-odd", 1, 1, npes / 2);
    shmem_barrier_all();
    legacy("legacy-stride4", 1, 2, (npes - 1 + 3) / 4);
    shmem_barrier_all();
    legacy("legacy-self", me, 0, 1);
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        CHECK(psA[i] == SHMEM_SYNC_VALUE && psB[i] == SHMEM_SYNC_VALUE && psBar[i] == SHMEM_SYNC_VALUE,
              "pSync not restored: word %d is %ld %ld %ld", i, psA[i], psB[i], psBar[i]);

    static int sfails;
    sfails = mp_failures;
    shmem_barrier_all();
    int total = 0;
    for (int p = 0; p < npes; p++)
        total += shmem_int_g(&sfails, p);
    if (me == 0)
        printf("shmem_coll: %d PEs, %d failed checks\n", npes, total);
    shmem_finalize();
    return mp_failures ? 1 : 0;
}
