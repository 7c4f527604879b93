/* smartmap_alloc: malloc and friends, interposed so that heap memory lives in the rank's segment.
 *
 * The allocator is mimalloc (Debian's libmimalloc), steered into the segment: the segment is
 * registered as an exclusive mimalloc arena, and every thread allocates from its own mimalloc
 * heap bound to that arena. Before the segment exists (during the dynamic loader's and libc's
 * start-up) and in processes not started by yod, mimalloc's ordinary heap serves. mi_free and
 * mi_usable_size accept blocks of either kind, so memory may cross that line freely.
 *
 * When the segment is full an allocation fails with ENOMEM (Catamount: the heap is what it is);
 * the first failure says which knob to raise. */
#include "smartmap.h"

#include <errno.h>
#include <mimalloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static mi_arena_id_t seg_arena;
static atomic_int seg_ready;
static atomic_uintptr_t seg_high_water;
static atomic_int seg_oom_logged;
static uintptr_t seg_lo, seg_hi;
static size_t seg_knob;
static __thread mi_heap_t *thread_heap;

bobcat_status_t smartmap_alloc_init(void *base, size_t size, size_t heap_per_rank_knob)
{
    /* is_large: the memory is pinned and populated, so mimalloc never decommits or resets it
     * (that would drop populated pages and bring page faults back). is_zero: a fresh memfd. */
    if (!mi_manage_os_memory_ex(base, size, true, true, true, -1, true, &seg_arena)) {
        util_error("mimalloc refused the %zu-byte heap segment as an arena", size);
        return BOBCAT_ERR_NOMEM;
    }
    seg_lo = (uintptr_t)base;
    seg_hi = seg_lo + size;
    seg_knob = heap_per_rank_knob;
    atomic_store(&seg_high_water, seg_lo);
    atomic_store_explicit(&seg_ready, 1, memory_order_release);
    return BOBCAT_OK;
}

uintptr_t smartmap_alloc_high_water(void)
{
    /* mimalloc carves the arena in 32 MiB blocks whose metadata and free lists may lie past the
     * last block handed out: round up to the block so a copy keeps them. */
    const uintptr_t block = (uintptr_t)32 << 20;
    uintptr_t hw = atomic_load(&seg_high_water);
    hw = seg_lo + ((hw - seg_lo + block - 1) & ~(block - 1));
    return hw > seg_hi ? seg_hi : hw;
}

static inline mi_heap_t *seg_heap(void)
{
    mi_heap_t *h = thread_heap;
    if (__builtin_expect(h != NULL, 1))
        return h;
    if (!atomic_load_explicit(&seg_ready, memory_order_acquire))
        return NULL;
    /* mimalloc deletes a thread's heaps when the thread exits; the blocks stay valid. */
    return thread_heap = mi_heap_new_in_arena(seg_arena);
}

static inline void *track(void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    if (a >= seg_lo && a < seg_hi) {
        uintptr_t end = a + n, hw = atomic_load_explicit(&seg_high_water, memory_order_relaxed);
        while (end > hw && !atomic_compare_exchange_weak_explicit(&seg_high_water, &hw, end, memory_order_relaxed,
                                                                  memory_order_relaxed)) {
        }
    }
    return p;
}

static void *out_of_heap(size_t n)
{
    if (!atomic_exchange(&seg_oom_logged, 1))
        util_error("heap segment exhausted: a %zu-byte allocation failed in the %zu MiB heap; raise the heap per rank "
                   "(yod --heap / --heap-node, or BOBCAT_HEAP; it is %zu MiB now)",
                   n, (size_t)((seg_hi - seg_lo) >> 20), seg_knob >> 20);
    errno = ENOMEM;
    return NULL;
}

/* glibc's malloc returns blocks aligned to alignof(max_align_t) = 16 on x86-64, whatever the size,
 * and programs rely on it: MPICH 4.0.2's MPI_Win_allocate keeps a 16-aligned copy of a 1-byte
 * window's base and frees that at MPI_Win_free. mimalloc puts requests of 1-8, 17-24, 33-40 and
 * 49-56 bytes in bins whose blocks are only 8-aligned, so such a free released the neighbouring
 * block (issue 10: heap corruption after mpi4py's module-level MPI.Win.Allocate(1, ...)). Requests
 * up to 64 bytes are rounded up to a multiple of 16: those bins hold 16-aligned blocks, as do all
 * larger ones (mimalloc's bins above 64 bytes are multiples of 16). */
#define GLIBC_ALIGN 16
static inline size_t glibc_size(size_t n)
{
    return n <= 64 ? (n + GLIBC_ALIGN - 1 + (n == 0)) & ~(size_t)(GLIBC_ALIGN - 1) : n;
}

#define ALLOC_RESULT(p, n) ((p) ? track((p), (n)) : h ? out_of_heap(n) : (errno = ENOMEM, NULL))

BOBCAT_EXPORT void *malloc(size_t n)
{
    mi_heap_t *h = seg_heap();
    size_t m = glibc_size(n);
    void *p = h ? mi_heap_malloc(h, m) : mi_malloc(m);
    return ALLOC_RESULT(p, n);
}

BOBCAT_EXPORT void free(void *p) { mi_free(p); }

BOBCAT_EXPORT void *calloc(size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    mi_heap_t *h = seg_heap();
    size_t m = glibc_size(n);
    void *p = h ? mi_heap_zalloc(h, m) : mi_zalloc(m);
    return ALLOC_RESULT(p, n);
}

BOBCAT_EXPORT void *realloc(void *old, size_t n)
{
    mi_heap_t *h = seg_heap();
    size_t m = n ? glibc_size(n) : 0; /* realloc(p, 0) behaves as before */
    void *p = h ? mi_heap_realloc(h, old, m) : mi_realloc(old, m);
    if (!p && n == 0)
        return NULL;
    return ALLOC_RESULT(p, n);
}

/* glibc's reallocarray calls its internal realloc, which would not know our blocks. */
BOBCAT_EXPORT void *reallocarray(void *old, size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n);
}

static void *aligned(size_t align, size_t n)
{
    mi_heap_t *h = seg_heap();
    void *p = h ? mi_heap_malloc_aligned(h, n, align) : mi_malloc_aligned(n, align);
    return ALLOC_RESULT(p, n);
}

static int valid_alignment(size_t a) { return a && !(a & (a - 1)); }

BOBCAT_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!valid_alignment(align) || align % sizeof(void *))
        return EINVAL;
    int saved = errno;
    void *p = aligned(align, n);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

BOBCAT_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (!valid_alignment(align)) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(align, n);
}

BOBCAT_EXPORT void *memalign(size_t align, size_t n)
{
    if (!valid_alignment(align)) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(align, n);
}

BOBCAT_EXPORT void *valloc(size_t n) { return aligned((size_t)sysconf(_SC_PAGESIZE), n); }

BOBCAT_EXPORT void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (n + pg - 1) & ~(pg - 1);
    return aligned(pg, rounded ? rounded : pg);
}

BOBCAT_EXPORT size_t malloc_usable_size(void *p) { return p ? mi_usable_size(p) : 0; }
