/* util_copy: the runtime's bulk copies (the single copy of a rendezvous, collectives' moves).
 *
 * Why not memcpy: from a few KiB up, glibc 2.36 copies with `rep movsb`, which on AMD EPYC runs
 * an order of magnitude slower when the destination lies a few bytes past the source modulo 4 KiB,
 * and is slower in cache than a plain AVX2 loop even when both are page-aligned. An MPI library does not choose
 * its users' buffers, so the copy must not depend on their alignment: an AVX2 loop (unaligned
 * loads, stores aligned on the destination) from UTIL_COPY_MIN bytes (below it util_copy, inline in
 * util.h, is memcpy), memcpy on CPUs without AVX2 and for large copies whose buffers are aligned
 * alike (there rep movsb is at its best). Measurements: docs/benchmarks.md, imb `--offset`. */
#include "util.h"

#include <stdint.h>
#include <string.h>

#define COPY_BIG (64u << 10)

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n)
{
    /* the first 32 bytes unaligned, then 128 a step with the stores aligned, then the last 128
     * bytes unaligned (overlapping what is done: the buffers do not overlap, as for memcpy) */
    _mm256_storeu_si256((__m256i *)(void *)d, _mm256_loadu_si256((const __m256i *)(const void *)s));
    size_t at = 32 - ((uintptr_t)d & 31);
    for (; at + 128 <= n; at += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + at));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + at + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(s + at + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(const void *)(s + at + 96));
        _mm256_store_si256((__m256i *)(void *)(d + at), a);
        _mm256_store_si256((__m256i *)(void *)(d + at + 32), b);
        _mm256_store_si256((__m256i *)(void *)(d + at + 64), c);
        _mm256_store_si256((__m256i *)(void *)(d + at + 96), e);
    }
    if (at < n)
        for (size_t k = n - 128; k < n; k += 32)
            _mm256_storeu_si256((__m256i *)(void *)(d + k), _mm256_loadu_si256((const __m256i *)(const void *)(s + k)));
}

static int have_avx2 = -1;
#endif

BOBCAT_LAYER_API void util_copy_large(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    /* From COPY_BIG on, glibc's copy with the source and destination 32-byte aligned alike keeps
     * up with the loop or beats it (pingpong 1 and 4 MiB); every other relative alignment takes the loop. */
    if (n < COPY_BIG || (((uintptr_t)dst - (uintptr_t)src) & 31) != 0) {
        if (have_avx2 < 0)
            have_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
        if (have_avx2) {
            copy_avx2(dst, src, n);
            return;
        }
    }
#endif
    memcpy(dst, src, n);
}
