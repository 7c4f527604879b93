/* bench/probe/copyrate.c — bobcat-copyrate: how fast one core copies a message out of another
 * core's buffer, the way a single-copy receive does, by every method a copy loop can use.
 *
 * Two threads pinned to two cpus take turns: A copies B's source buffer into its own destination,
 * then B copies A's source into its own destination, and so on; only one core copies at a time, as
 * in a ping-pong of single-copy receives. The time per copy gives the rate a receiver-only copy can
 * reach on this machine, a ceiling for any single-copy MPI's large-message bandwidth on one core
 * (docs/benchmarks.md, "Copy ceiling").
 *
 * Methods: libc (memcpy), avx2 (32-byte loads and stores), prefetch (avx2 with software prefetch
 * of the source and prefetchw of the destination ahead), stream (avx2 with non-temporal stores),
 * movsb (rep movsb); and the two halves of a copy on their own: read (loads of the other core's
 * source only) and write (stores to the own destination only). A copy reads its source and also
 * fetches the destination's lines for ownership (the stores are not to whole lines at once), so it
 * cannot beat half the rate at which one core fills its caches unless stores skip that fetch
 * (stream, which writes to memory instead).
 *
 * Every (method, size) is timed in 10 ms slices interleaved with all the others, so a change of the
 * VM's placement meanwhile hits every one alike; the median slice is reported. Not an MPI program. */
#include "bc.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

enum { M_LIBC, M_AVX2, M_PREFETCH, M_STREAM, M_MOVSB, M_READ, M_WRITE, NMETHODS };
static const char *method_name[NMETHODS] = {"libc", "avx2", "prefetch", "stream", "movsb", "read", "write"};
/* The methods that copy (read and write are halves of one, not copies). */
#define IS_COPY(m) ((m) <= M_MOVSB)
#define MAXSIZES 16
#define PF_AHEAD 2048 /* prefetch distance of the prefetch method (bytes) */

static char *src[2], *dst[2];
static alignas(128) _Atomic uint64_t turn;   /* copies done so far; A copies on even, B on odd */
static alignas(128) struct {
    int method;
    size_t bytes;
} job;
static int cpu_b, b_bound;
static volatile uint64_t sink;

#if HAVE_X86
/* The avx2 copy loops, one body: `prefetch` adds the software prefetches, `stream` stores
 * non-temporally (32-byte aligned destinations: the buffers are page aligned). */
__attribute__((target("avx2"), always_inline)) static inline void copy_loop(char *d, const char *s, size_t n,
                                                                             int prefetch, int stream)
{
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        if (prefetch) { /* past the end is harmless: a prefetch never faults */
            _mm_prefetch(s + i + PF_AHEAD, _MM_HINT_T0);
            _mm_prefetch(s + i + PF_AHEAD + 64, _MM_HINT_T0);
            __builtin_prefetch(d + i + PF_AHEAD, 1, 3);
            __builtin_prefetch(d + i + PF_AHEAD + 64, 1, 3);
        }
        /* named registers, not an array: GCC 12 at -O2 would keep an array on the stack */
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        if (stream) {
            _mm256_stream_si256((__m256i *)(d + i), a);
            _mm256_stream_si256((__m256i *)(d + i + 32), b);
            _mm256_stream_si256((__m256i *)(d + i + 64), c);
            _mm256_stream_si256((__m256i *)(d + i + 96), e);
        } else {
            _mm256_storeu_si256((__m256i *)(d + i), a);
            _mm256_storeu_si256((__m256i *)(d + i + 32), b);
            _mm256_storeu_si256((__m256i *)(d + i + 64), c);
            _mm256_storeu_si256((__m256i *)(d + i + 96), e);
        }
    }
    if (stream)
        _mm_sfence();
    memcpy(d + i, s + i, n - i);
}

__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n) { copy_loop(d, s, n, 0, 0); }
__attribute__((target("avx2"))) static void copy_prefetch(char *d, const char *s, size_t n) { copy_loop(d, s, n, 1, 0); }
__attribute__((target("avx2"))) static void copy_stream(char *d, const char *s, size_t n) { copy_loop(d, s, n, 0, 1); }

__attribute__((target("avx2"))) static void read_only(const char *s, size_t n)
{
    __m256i acc = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc = _mm256_xor_si256(acc, _mm256_loadu_si256((const __m256i *)(s + i)));
        acc = _mm256_xor_si256(acc, _mm256_loadu_si256((const __m256i *)(s + i + 32)));
    }
    sink = (uint64_t)_mm256_extract_epi64(acc, 0) + (i < n ? (unsigned char)s[i] : 0);
}

__attribute__((target("avx2"))) static void write_only(char *d, size_t n, int v)
{
    __m256i a = _mm256_set1_epi8((char)v);
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        _mm256_storeu_si256((__m256i *)(d + i), a);
    memset(d + i, v, n - i);
}

static void copy_movsb(char *d, const char *s, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
#endif

static int method_available(int m)
{
    if (m == M_LIBC)
        return 1;
#if HAVE_X86
    return m == M_MOVSB || __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* Thread `me` (0: A, 1: B) does its copy of the current job. */
static void work(int me)
{
    char *d = dst[me];
    const char *s = src[1 - me];
    size_t n = job.bytes;
    switch (job.method) {
    case M_LIBC: memcpy(d, s, n); break;
#if HAVE_X86
    case M_AVX2: copy_avx2(d, s, n); break;
    case M_PREFETCH: copy_prefetch(d, s, n); break;
    case M_STREAM: copy_stream(d, s, n); break;
    case M_MOVSB: copy_movsb(d, s, n); break;
    case M_READ: read_only(s, n); break;
    case M_WRITE: write_only(d, n, me + 1); break;
#endif
    default: break;
    }
}

/* Waits until turn == want (or BC_LINE_STOP, returned as 0); pauses, and yields after a few thousand
 * polls (the partner may be sharing this cpu). */
static int wait_turn(uint64_t want)
{
    unsigned polls = 0;
    for (;;) {
        uint64_t t = atomic_load_explicit(&turn, memory_order_acquire);
        if (t == want)
            return 1;
        if (t == BC_LINE_STOP)
            return 0;
#if HAVE_X86
        _mm_pause();
#endif
        if (++polls > 4096) {
            sched_yield();
            polls = 0;
        }
    }
}

static void *thread_b(void *arg)
{
    (void)arg;
    b_bound = bc_bind_cpu(cpu_b) == 0;
    for (uint64_t t = 1;; t += 2) {
        if (!wait_turn(t))
            break;
        work(1);
        atomic_store_explicit(&turn, t + 1, memory_order_release);
    }
    return NULL;
}

/* `rounds` rounds of the job (A's copy, then B's) after one untimed round; seconds per copy. */
static double slice(int method, size_t bytes, long rounds)
{
    uint64_t t = atomic_load_explicit(&turn, memory_order_relaxed); /* even: B waits for t + 1 */
    job.method = method;
    job.bytes = bytes;
    double t0 = 0;
    for (long r = 0; r <= rounds; r++, t += 2) {
        if (r == 1)
            t0 = bc_now();
        work(0);
        atomic_store_explicit(&turn, t + 1, memory_order_release);
        wait_turn(t + 2);
    }
    return rounds ? (bc_now() - t0) / (2.0 * (double)rounds) : 0;
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    const char *cpus = NULL, *methods = "libc,avx2,prefetch,stream,movsb,read,write", *sizes = "64K,1M,4M";
    bc_opt_t opts[] = {
        {"seconds", BC_OPT_DOUBLE, &seconds, "measuring time in seconds, all (method, size) together"},
        {"methods", BC_OPT_STR, &methods,
         "comma-separated: libc, avx2, prefetch, stream, movsb, read, write (default all)"},
        {"sizes", BC_OPT_STR, &sizes, "comma-separated copy sizes, suffixes K M G (default 64K,1M,4M)"},
        {"cpus", BC_OPT_STR, &cpus, "the two cpus A,B (default: the first two allowed)"},
        {NULL, 0, NULL, NULL},
    };
    bc_common_t c = {.pages = "large"};
    bc_parse(argc, argv, "copyrate",
             "One core copies another core's buffer, the two taking turns: GB/s per method and size "
             "(median of 10 ms slices); read and write are the two halves of a copy on their own.",
             BC_C_PAGES, &c, opts);
    bc_nranks = 0;
    if (seconds <= 0 || seconds > 600)
        bc_usage_error("--seconds must be in (0, 600]");
    size_t size[MAXSIZES];
    int ns = 0;
    char *list = strdup(sizes);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (ns == MAXSIZES)
            bc_usage_error("--sizes: at most %d sizes", MAXSIZES);
        if (bc_parse_size(tok, &size[ns]) != 0 || size[ns] == 0 || size[ns] > ((size_t)1 << 32))
            bc_usage_error("--sizes: '%s' is not a size in 1..4G (examples: 4K, 64K, 1M)", tok);
        ns++;
    }
    free(list);
    if (!ns)
        bc_usage_error("--sizes: empty list");
    int want[NMETHODS] = {0}, nm = 0;
    list = strdup(methods);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int m = 0;
        while (m < NMETHODS && strcmp(tok, method_name[m]) != 0)
            m++;
        if (m == NMETHODS)
            bc_usage_error("--methods: unknown method '%s' (libc, avx2, prefetch, stream, movsb, read, write)", tok);
        if (!want[m] && method_available(m))
            nm++;
        if (!method_available(m) && !want[m])
            fprintf(stderr, "copyrate: method %s needs AVX2 on x86-64; left out\n", tok);
        want[m] = method_available(m);
    }
    free(list);
    if (!nm)
        bc_usage_error("--methods: none of them can run here");
    size_t most = 0;
    for (int i = 0; i < ns; i++)
        most = size[i] > most ? size[i] : most;
    int cpu_a = -1, rc = bc_cpu_pair(cpus, "copyrate", &cpu_a, &cpu_b);
    if (rc)
        return rc;
    bc_buf_t bufs[4];
    for (int i = 0; i < 4; i++)
        bufs[i] = bc_alloc(most, c.pages);
    for (int me = 0; me < 2; me++) {
        src[me] = bufs[2 * me].p;
        dst[me] = bufs[2 * me + 1].p;
        bc_fill(src[me], most, bc_seed((uint64_t)me, 1, most));
    }
    pthread_t th;
    if (pthread_create(&th, NULL, thread_b, NULL) != 0) {
        fprintf(stderr, "copyrate: pthread_create failed\n");
        return 3;
    }
    /* Rounds per 10 ms slice for each (method, size), from a warm-up. */
    int cells = NMETHODS * ns;
    long per[NMETHODS * MAXSIZES] = {0};
    for (int m = 0; m < NMETHODS; m++)
        for (int i = 0; m < NMETHODS && want[m] && i < ns; i++) {
            double w = slice(m, size[i], 4);
            per[m * ns + i] = w > 0 ? (long)(0.005 / w) + 1 : 1000; /* 2 copies per round */
        }
    int active = nm * ns;
    int rounds = (int)(seconds / 0.01 / active);
    rounds = rounds < 1 ? 1 : rounds;
    double *sec = calloc((size_t)rounds * (size_t)cells, sizeof(double));
    if (!sec) {
        fprintf(stderr, "copyrate: out of memory\n");
        return 3;
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < cells; k++) {
            int cell = (k + r) % cells; /* rotate the start so no cell always follows the same one */
            int m = cell / ns, i = cell % ns;
            if (want[m])
                sec[(size_t)cell * (size_t)rounds + (size_t)r] = slice(m, size[i], per[cell]);
        }
    /* The copies are copies: a fresh one of every method into a cleared destination on each side. */
    if (c.validate)
        for (int m = 0; m < NMETHODS; m++)
            for (int i = 0; IS_COPY(m) && want[m] && i < ns; i++) {
                memset(dst[0], 0, size[i]);
                memset(dst[1], 0, size[i]);
                slice(m, size[i], 0);
                for (int me = 0; me < 2; me++) {
                    size_t bad = bc_check(dst[me], size[i], bc_seed((uint64_t)(1 - me), 1, most));
                    if (bad)
                        bc_fail("%s copy of %zu bytes: %zu bytes differ from the source", method_name[m],
                                size[i], bad);
                }
            }
    atomic_store_explicit(&turn, BC_LINE_STOP, memory_order_release);
    pthread_join(th, NULL);
    if (!b_bound) {
        fprintf(stderr, "copyrate: cannot bind to cpu %d (give --cpus with allowed cpus)\n", cpu_b);
        return 2;
    }
    for (int i = 0; i < ns; i++) {
        double best = 0;
        int best_m = -1;
        for (int m = 0; m < NMETHODS; m++) {
            if (!want[m])
                continue;
            double *v = &sec[(size_t)(m * ns + i) * (size_t)rounds];
            qsort(v, (size_t)rounds, sizeof *v, bc_cmp_double);
            double med = v[rounds / 2], gbs = (double)size[i] / med / 1e9;
            bc_emit("gbps", gbs, "GB/s", "higher",
                    "\"bytes\": %zu, \"method\": \"%s\", \"us\": %.6f, \"p25_gbps\": %.9g, \"p75_gbps\": %.9g, "
                    "\"slices\": %d, \"pages\": \"%s\", \"cpus\": [%d, %d]",
                    size[i], method_name[m], med * 1e6, (double)size[i] / v[(3 * rounds) / 4] / 1e9,
                    (double)size[i] / v[rounds / 4] / 1e9, rounds, bufs[0].kind, cpu_a, cpu_b);
            if (IS_COPY(m) && gbs > best) {
                best = gbs;
                best_m = m;
            }
        }
        if (best_m >= 0)
            bc_emit("ceiling_gbps", best, "GB/s", "higher", "\"bytes\": %zu, \"method\": \"%s\", \"pages\": \"%s\"",
                    size[i], method_name[best_m], bufs[0].kind);
    }
    free(sec);
    for (int i = 0; i < 4; i++)
        bc_release(&bufs[i]);
    bc_emit_done(bc_local_valid());
    return bc_local_valid() ? 0 : 1;
}
