/* bench/rma/rma_bench.c — MPI one-sided communication (issue 26) between ranks 0 and 1 of one node:
 * what an MPI program's MPI_Put/MPI_Get/atomics and epochs cost, the same source on every MPI and
 * under yod (nothing of bobcat's is used).
 *
 * Tests (--test, run in this order; compare_and_swap last because Debian's Open MPI 4.1.4 default
 * osc component dies in it, and every line is printed as soon as its test ends, so a crash there
 * still leaves the others' numbers):
 *   put              MPI_Put of 8 B to rank 1 + MPI_Win_flush(1), per iteration, in one passive
 *                    epoch (MPI_Win_lock_all once, outside the timing): ns per put
 *   get              MPI_Get of 8 B from rank 1 + MPI_Win_flush(1), the same way
 *   fetch_and_op     MPI_Fetch_and_op MPI_SUM of 1 on a long long at rank 1 + MPI_Win_flush(1)
 *   put_bw           MPI_Put of --sizes bytes (64 KiB, 1 MiB) + MPI_Win_flush(1) per iteration,
 *                    and in the same repetition memcpy of the same size between two buffers of
 *                    rank 0 (the floor): put_bw and memcpy_bw in GB/s (1e9 B/s)
 *   fence            MPI_Win_fence(0) with no operation between, every rank, per iteration; and in
 *                    the same repetition MPI_Barrier on the window's communicator: fence, barrier
 *   compare_and_swap MPI_Compare_and_swap of a long long at rank 1 (always succeeding: compare i,
 *                    swap in i + 1) + MPI_Win_flush(1)
 * While rank 0 runs a passive test, rank 1 (and any rank beyond) waits in MPI_Barrier: an MPI
 * whose one-sided operations need the target's progress gets it there, as OSU's osu_put_latency
 * gives it. Both ranks hold the lock_all epoch (shared locks), so that rank 1 may store into its
 * own window (the bandwidth test's destination starts in rank 1's cache) with MPI_Win_sync.
 *
 * Timing: every test runs --reps repetitions of n iterations and reports the median over the
 * repetitions of the time per iteration on rank 0 (fence and barrier: the mean over ranks); n is
 * calibrated once per test (after --warmup iterations: 1, 2, 4 ... until the slowest rank spent a
 * tenth of a repetition's share of --time) and the same on every rank, at most --iters.
 *
 * Validation (always, untimed, checked by the target in its own memory, not through the MPI
 * being measured): the last put's value is in rank 1's word; every get returned rank 1's word;
 * rank 1's counter holds exactly the fetch_and_ops made and the last fetch returned count - 1;
 * every compare_and_swap found the value it compared with; a put of a pattern at each size arrives
 * whole; a put between two fences arrives. `valid` in the done line; exit 1 when not valid.
 *
 * Window flavours (--win): allocate (MPI_Win_allocate, the default: what ARMCI-MPI uses), create
 * (MPI_Win_create over malloc memory), dynamic (MPI_Win_create_dynamic + MPI_Win_attach, target
 * displacements are the attached addresses). */
#include "bc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Offsets in the window. The words rank 0 targets each sit on their own 128-byte pair of cache
 * lines, so that no test's line is shared with another's or coupled by the adjacent-line
 * prefetcher; the bandwidth area starts on a page. */
enum { OFF_PUT = 0, OFF_GET = 128, OFF_FAO = 256, OFF_CAS = 384, OFF_FENCE = 512, OFF_BW = 4096 };
#define MAX_REPS 101

typedef struct {
    MPI_Comm comm;
    MPI_Win win;
    int rank, nranks;
    char *base;       /* this rank's window memory */
    MPI_Aint tbase;   /* rank 1's displacement of its window memory: 0, or its address (dynamic) */
    size_t bytes;     /* put_bw's size of the moment */
    char *src, *dst;  /* rank 0's origin buffer and memcpy destination, max size each */
    long long seq;    /* the last value put (put) or swapped in (compare_and_swap) */
    long long fetched, faos;   /* fetch_and_op: last value fetched, operations made */
    long long got, cas_misses; /* get: last word read; compare_and_swap: results not as compared */
} ctx_t;

typedef struct {
    const char *name;
    void (*run)(ctx_t *x, const bc_common_t *c, int reps);
} test_t;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bc_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static MPI_Aint at(const ctx_t *x, int off)
{
    return x->tbase + off;
}

/* ---------------------------------------------------------------- passive target, 8 B --------- */

/* Each run(x, n) is one repetition: rank 0 does n operations (each followed by a flush) while
 * the other ranks wait in the closing barrier; returns the seconds of rank 0's loop (the others'
 * are ~0, so the calibration's slowest rank is rank 0). */
static double run_put(void *arg, long n)
{
    ctx_t *x = arg;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0)
        for (long i = 0; i < n; i++) {
            long long v = ++x->seq;
            MPI_Put(&v, 1, MPI_LONG_LONG, 1, at(x, OFF_PUT), 1, MPI_LONG_LONG, x->win);
            MPI_Win_flush(1, x->win);
        }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

static double run_get(void *arg, long n)
{
    ctx_t *x = arg;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0)
        for (long i = 0; i < n; i++) {
            MPI_Get(&x->got, 1, MPI_LONG_LONG, 1, at(x, OFF_GET), 1, MPI_LONG_LONG, x->win);
            MPI_Win_flush(1, x->win);
        }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

static double run_fao(void *arg, long n)
{
    ctx_t *x = arg;
    const long long one = 1;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0) {
        for (long i = 0; i < n; i++) {
            MPI_Fetch_and_op(&one, &x->fetched, MPI_LONG_LONG, 1, at(x, OFF_FAO), MPI_SUM, x->win);
            MPI_Win_flush(1, x->win);
        }
        x->faos += n;
    }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

static double run_cas(void *arg, long n)
{
    ctx_t *x = arg;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0)
        for (long i = 0; i < n; i++) {
            long long cmp = x->seq, swap = x->seq + 1, old = -1;
            MPI_Compare_and_swap(&swap, &cmp, &old, MPI_LONG_LONG, 1, at(x, OFF_CAS), x->win);
            MPI_Win_flush(1, x->win);
            /* a check of a register: no cost next to a flush */
            x->cas_misses += old != cmp;
            x->seq = swap;
        }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

/* Rank 1 reads one of its own window's words, under a lock of its own window (the memory model's
 * rule for a local load next to remote access), and tells rank 0. */
static long long target_word(ctx_t *x, int off)
{
    long long v = 0;
    if (x->rank == 1) {
        MPI_Win_sync(x->win);
        v = *(volatile long long *)(x->base + off);
    }
    MPI_Bcast(&v, 1, MPI_LONG_LONG, 1, x->comm);
    return v;
}

/* Rank 1 stores one of its own window's words (inside the lock_all epoch every rank holds). */
static void target_store(ctx_t *x, int off, long long v)
{
    if (x->rank == 1) {
        *(volatile long long *)(x->base + off) = v;
        MPI_Win_sync(x->win);
    }
    MPI_Barrier(x->comm);
}

static void passive(ctx_t *x, const bc_common_t *c, int reps, const char *metric,
                    double (*run)(void *, long))
{
    bc_common_t per_rep = *c;
    per_rep.time_s = c->time_s / reps;
    double t[MAX_REPS];
    long n = bc_calibrate(x->comm, &per_rep, run, x);
    for (int r = 0; r < reps; r++)
        t[r] = run(x, n) / (double)n * 1e9;
    bc_emit(metric, median(t, reps), "ns", "lower", "\"bytes\": 8, \"iters\": %ld, \"reps\": %d", n, reps);
}

static void test_put(ctx_t *x, const bc_common_t *c, int reps)
{
    passive(x, c, reps, "put_latency", run_put);
    long long seq = x->seq;
    MPI_Bcast(&seq, 1, MPI_LONG_LONG, 0, x->comm);
    long long there = target_word(x, OFF_PUT);
    if (x->rank == 0 && there != seq)
        bc_fail("put: rank 1's word holds %lld, the last put was %lld", there, seq);
}

static void test_get(ctx_t *x, const bc_common_t *c, int reps)
{
    const long long word = 0x5eed0fbeefLL;
    target_store(x, OFF_GET, word);
    x->got = 0;
    passive(x, c, reps, "get_latency", run_get);
    if (x->rank == 0 && x->got != word)
        bc_fail("get: read %#llx, rank 1's word is %#llx", x->got, word);
}

static void test_fao(ctx_t *x, const bc_common_t *c, int reps)
{
    target_store(x, OFF_FAO, 0);
    x->faos = 0;
    x->fetched = -1;
    passive(x, c, reps, "fetch_and_op", run_fao);
    long long faos = x->faos;
    MPI_Bcast(&faos, 1, MPI_LONG_LONG, 0, x->comm);
    long long there = target_word(x, OFF_FAO);
    if (x->rank == 0 && (there != faos || x->fetched != faos - 1))
        bc_fail("fetch_and_op: rank 1's counter holds %lld after %lld adds of 1 (last fetched %lld)",
                there, faos, x->fetched);
}

static void test_cas(ctx_t *x, const bc_common_t *c, int reps)
{
    x->seq = 0;
    x->cas_misses = 0;
    target_store(x, OFF_CAS, 0);
    passive(x, c, reps, "compare_and_swap", run_cas);
    long long seq = x->seq;
    MPI_Bcast(&seq, 1, MPI_LONG_LONG, 0, x->comm);
    long long there = target_word(x, OFF_CAS);
    if (x->rank == 0 && (x->cas_misses || there != seq))
        bc_fail("compare_and_swap: %lld swaps found another value than compared; rank 1's word holds "
                "%lld, the last swap put %lld", x->cas_misses, there, seq);
}

/* ---------------------------------------------------------------- bandwidth ------------------- */

static double run_putbw(void *arg, long n)
{
    ctx_t *x = arg;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0)
        for (long i = 0; i < n; i++) {
            MPI_Put(x->src, (int)x->bytes, MPI_BYTE, 1, at(x, OFF_BW), (int)x->bytes, MPI_BYTE, x->win);
            MPI_Win_flush(1, x->win);
        }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

static double run_memcpy(ctx_t *x, long n)
{
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    if (x->rank == 0)
        for (long i = 0; i < n; i++) {
            memcpy(x->dst, x->src, x->bytes);
            __asm__ volatile("" ::: "memory"); /* every copy happens */
        }
    double el = bc_now() - t0;
    MPI_Barrier(x->comm);
    return el;
}

static void test_putbw(ctx_t *x, const bc_common_t *c, int reps)
{
    for (int s = 0; s < c->nsizes; s++) {
        x->bytes = c->sizes[s];
        bc_common_t per_rep = *c;
        per_rep.time_s = c->time_s / reps;
        long n = bc_calibrate(x->comm, &per_rep, run_putbw, x);
        double bw[MAX_REPS], mc[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            /* Before each repetition the destinations are written by their owners (rank 1's
             * window, rank 0's memcpy destination), as after a use of the data; from the second
             * iteration on both copies find their destination in rank 0's cache. */
            if (x->rank == 1) {
                memset(x->base + OFF_BW, r, x->bytes);
                MPI_Win_sync(x->win);
            } else if (x->rank == 0) {
                memset(x->dst, r, x->bytes);
            }
            bw[r] = (double)x->bytes * (double)n / run_putbw(x, n) / 1e9;
            mc[r] = (double)x->bytes * (double)n / run_memcpy(x, n) / 1e9;
        }
        bc_emit("put_bw", median(bw, reps), "GB/s", "higher", "\"bytes\": %zu, \"iters\": %ld, \"reps\": %d",
                x->bytes, n, reps);
        bc_emit("memcpy_bw", median(mc, reps), "GB/s", "higher", "\"bytes\": %zu, \"iters\": %ld, \"reps\": %d",
                x->bytes, n, reps);
        /* one put of a pattern, checked by rank 1 in its own memory */
        uint64_t seed = bc_seed(0, 1, x->bytes);
        if (x->rank == 0)
            bc_fill(x->src, x->bytes, seed);
        run_putbw(x, 1);
        if (x->rank == 1) {
            MPI_Win_sync(x->win);
            size_t bad = bc_check(x->base + OFF_BW, x->bytes, seed);
            if (bad)
                bc_fail("put_bw %zu B: %zu bytes at rank 1 differ from what rank 0 put", x->bytes, bad);
        }
    }
}

/* ---------------------------------------------------------------- fence ----------------------- */

static double run_fence(void *arg, long n)
{
    ctx_t *x = arg;
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    for (long i = 0; i < n; i++)
        MPI_Win_fence(0, x->win);
    return bc_now() - t0;
}

static double run_barrier(ctx_t *x, long n)
{
    MPI_Barrier(x->comm);
    double t0 = bc_now();
    for (long i = 0; i < n; i++)
        MPI_Barrier(x->comm);
    return bc_now() - t0;
}

/* Outside the lock_all epoch the passive tests hold (fence epochs may not overlap it). */
static void test_fence(ctx_t *x, const bc_common_t *c, int reps)
{
    bc_common_t per_rep = *c;
    per_rep.time_s = c->time_s / reps;
    MPI_Win_fence(0, x->win);
    long n = bc_calibrate(x->comm, &per_rep, run_fence, x);
    double tf[MAX_REPS], tb[MAX_REPS], lo, hi;
    for (int r = 0; r < reps; r++) {
        bc_minavgmax(x->comm, run_fence(x, n) / (double)n * 1e9, &lo, &tf[r], &hi);
        bc_minavgmax(x->comm, run_barrier(x, n) / (double)n * 1e9, &lo, &tb[r], &hi);
    }
    bc_emit("fence", median(tf, reps), "ns", "lower", "\"iters\": %ld, \"reps\": %d", n, reps);
    bc_emit("barrier", median(tb, reps), "ns", "lower", "\"iters\": %ld, \"reps\": %d", n, reps);
    /* one put between two fences arrives */
    const long long word = 0xfe4ceLL;
    if (x->rank == 0)
        MPI_Put(&word, 1, MPI_LONG_LONG, 1, at(x, OFF_FENCE), 1, MPI_LONG_LONG, x->win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, x->win);
    if (x->rank == 1 && *(volatile long long *)(x->base + OFF_FENCE) != word)
        bc_fail("fence: the put between two fences did not arrive (%#llx)",
                *(volatile long long *)(x->base + OFF_FENCE));
}

/* ---------------------------------------------------------------- main ------------------------ */

static const test_t tests[] = {
    {"put", test_put},
    {"get", test_get},
    {"fetch_and_op", test_fao},
    {"put_bw", test_putbw},
    {"fence", test_fence},
    {"compare_and_swap", test_cas},
};
#define NTESTS (int)(sizeof tests / sizeof tests[0])

static int is_passive(const test_t *t)
{
    return t->run != test_fence;
}

/* The window, of --win's flavour, over `bytes` bytes on every rank. */
static void open_window(ctx_t *x, const char *flavour, size_t bytes)
{
    if (!strcmp(flavour, "allocate")) {
        MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, x->comm, &x->base, &x->win);
    } else {
        x->base = bc_alloc(bytes, NULL).p;
        if (!strcmp(flavour, "create")) {
            MPI_Win_create(x->base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, x->comm, &x->win);
        } else {
            MPI_Win_create_dynamic(MPI_INFO_NULL, x->comm, &x->win);
            MPI_Win_attach(x->win, x->base, (MPI_Aint)bytes);
            MPI_Aint mine;
            MPI_Get_address(x->base, &mine);
            x->tbase = mine;
            MPI_Bcast(&x->tbase, 1, MPI_AINT, 1, x->comm);
        }
    }
    memset(x->base, 0, bytes);
    MPI_Barrier(x->comm);
}

int main(int argc, char **argv)
{
    const char *which = "all", *flavour = "allocate", *sizes = "64K,1M";
    long reps = 11;
    bc_common_t c = {.iters = 1000000, .warmup = 10, .time_s = 0.2};
    bc_opt_t opts[] = {
        {"test", BC_OPT_STR, &which,
         "comma-separated tests, run in this order: put get fetch_and_op put_bw fence compare_and_swap, or all"},
        {"win", BC_OPT_STR, &flavour, "window flavour: allocate, create (over malloc memory) or dynamic"},
        {"reps", BC_OPT_LONG, &reps, "repetitions of every test; the median is reported (1..101)"},
        {"sizes", BC_OPT_STR, &sizes, "put_bw: comma-separated sizes, suffixes K M G"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "rma",
             "MPI one-sided communication between ranks 0 and 1: put/get/fetch_and_op/compare_and_swap "
             "8 B + flush (ns), put bandwidth against memcpy (GB/s), fence against barrier (ns). "
             "--time is the budget of one test, all repetitions.",
             BC_C_ITERS | BC_C_WARMUP | BC_C_TIME, &c, opts);
    /* put_bw's sizes: the common --sizes would default to every power of two */
    size_t size_list[16];
    char *slist = strdup(sizes), *ssave = NULL;
    for (char *tok = strtok_r(slist, ",", &ssave); tok; tok = strtok_r(NULL, ",", &ssave)) {
        if (c.nsizes == 16)
            bc_usage_error("--sizes: at most 16 sizes");
        if (bc_parse_size(tok, &size_list[c.nsizes]) != 0 || size_list[c.nsizes] == 0)
            bc_usage_error("--sizes: '%s' is not a size above 0 (examples: 64K, 1M)", tok);
        c.nsizes++;
    }
    free(slist);
    if (!c.nsizes)
        bc_usage_error("--sizes: empty list");
    c.sizes = size_list;
    if (reps < 1 || reps > MAX_REPS)
        bc_usage_error("--reps must be in 1..%d", MAX_REPS);
    if (strcmp(flavour, "allocate") && strcmp(flavour, "create") && strcmp(flavour, "dynamic"))
        bc_usage_error("--win must be allocate, create or dynamic");
    size_t maxb = 0;
    for (int s = 0; s < c.nsizes; s++) {
        if (c.sizes[s] > (size_t)1 << 30)
            bc_usage_error("size %zu is above 1 GiB (MPI int counts)", c.sizes[s]);
        maxb = c.sizes[s] > maxb ? c.sizes[s] : maxb;
    }
    int selected[NTESTS] = {0};
    char *list = strdup(which), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < NTESTS; k++)
            if (!strcasecmp(tok, tests[k].name) || !strcasecmp(tok, "all"))
                selected[k] = found = 1;
        if (!found)
            bc_usage_error("--test: unknown test '%s'", tok);
    }
    free(list);

    bc_init(&argc, &argv);
    if (bc_nranks < 2) {
        if (bc_is_root)
            fprintf(stderr, "rma: needs at least 2 ranks (rank 0 targets rank 1)\n");
        MPI_Finalize();
        return 2;
    }
    ctx_t x = {.comm = MPI_COMM_WORLD, .rank = bc_rank, .nranks = bc_nranks};
    open_window(&x, flavour, OFF_BW + maxb);
    x.src = bc_alloc(maxb, NULL).p;
    x.dst = bc_alloc(maxb, NULL).p;
    memset(x.src, 1, maxb);

    for (int k = 0; k < NTESTS; k++) {
        if (!selected[k])
            continue;
        /* A line on stderr names the test about to run: a run that dies says where. */
        if (bc_is_root)
            fprintf(stderr, "rma: test %s (win %s)\n", tests[k].name, flavour);
        if (is_passive(&tests[k]))
            MPI_Win_lock_all(0, x.win);
        tests[k].run(&x, &c, (int)reps);
        if (is_passive(&tests[k]))
            MPI_Win_unlock_all(x.win);
        MPI_Barrier(x.comm);
    }
    if (!strcmp(flavour, "dynamic"))
        MPI_Win_detach(x.win, x.base);
    MPI_Win_free(&x.win);
    return bc_finish();
}
