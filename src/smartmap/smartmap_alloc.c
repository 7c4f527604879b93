/* smartmap_alloc: malloc and friends, interposed so that heap memory lives in the rank's segment.
 *
 * The allocator is mimalloc (Debian's libmimalloc), steered into the segment: the segment is
 * registered as an exclusive mimalloc arena. Before the segment exists (during the dynamic loader's
 * and libc's start-up) and in processes not started by yod, mimalloc's ordinary heap serves.
 * mi_free and mi_usable_size accept blocks of either kind, so memory may cross that line freely.
 *
 * Threads (issue 27). A mimalloc heap takes the arena in 32 MiB blocks (mimalloc's segment), so a
 * heap per thread costs every thread that ever allocates a block: the MPI's progress and PMIx
 * threads each took 32 MiB of a 128 MiB heap. So every thread starts in one *shared* heap, used
 * under a lock, and gets a heap of its own (its first 32 MiB block, then more as it grows) only
 * once it has allocated BOBCAT_THREAD_HEAP bytes there (cumulative: a thread that allocates often
 * is worth a block for the speed). A program's overhead is then at most one partly used block for
 * the shared heap plus one per thread that allocates much.
 *
 * Why the shared heap belongs to a parked helper thread: a mimalloc heap allocates its segments
 * through its creator's thread data (free spans, segment queues), which the creator's own heaps
 * use without a lock. The helper creates the shared heap and then sleeps with every signal
 * blocked, so that thread data is touched only under the lock. A block of the shared heap must
 * also be freed under the lock: mimalloc frees a block without atomics when the freeing thread is
 * the one whose allocation created the block's segment, which for the shared heap may be any
 * thread. So the shared heap marks the 32 MiB blocks it hands memory out of (a bit each), and free
 * takes the lock for a pointer in a marked block. A mark that outlives its use (the block went back
 * to the arena and to a private heap) costs a lock per free there, nothing else.
 *
 * When the segment is full an allocation fails with ENOMEM (Catamount: the heap is what it is);
 * a thread whose own heap can get no new block falls back to the shared heap first; the first
 * failure says which knob to raise. */
#include "smartmap.h"

#include <errno.h>
#include <mimalloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define SEG_BLOCK_SHIFT 25 /* mimalloc 2.0's segment, and so its arena block: 32 MiB */
#define SEG_BLOCK ((uintptr_t)1 << SEG_BLOCK_SHIFT)
#define SEG_MAX_BLOCKS (SMAP_MAX_HEAP >> SEG_BLOCK_SHIFT)

static mi_arena_id_t seg_arena;
static atomic_int seg_ready;
static atomic_uintptr_t seg_high_water;
static atomic_int seg_oom_logged;
static uintptr_t seg_lo, seg_hi;
static size_t seg_knob;
static __thread mi_heap_t *thread_heap; /* this thread's own heap, once it has earned one */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static mi_heap_t *shared_heap;                   /* NULL: every thread has its own heap at once */
static size_t shared_until;                      /* knob BOBCAT_THREAD_HEAP */
static uintptr_t shared_base, shared_span;       /* the arena, widened to whole blocks */
static _Atomic uint64_t shared_blocks[SEG_MAX_BLOCKS / 64];
static __thread size_t thread_shared_bytes;      /* what this thread took from the shared heap */

static sem_t helper_ready;

static void *shared_heap_owner(void *arg)
{
    (void)arg;
    shared_heap = mi_heap_new_in_arena(seg_arena);
    sem_post(&helper_ready);
    for (;;)
        pause(); /* every signal is blocked: this thread never runs again */
    return NULL;
}

/* Starts the helper that owns the shared heap, with every signal blocked so none of the program's
 * handlers ever runs on it and its thread data stays untouched. */
static bobcat_status_t shared_heap_start(void)
{
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t tid;
    sigfillset(&all);
    if (sem_init(&helper_ready, 0, 0) || pthread_attr_init(&attr)) {
        util_error("cannot start the shared heap's thread: %m");
        return BOBCAT_ERR_SYS;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 << 10);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&tid, &attr, shared_heap_owner, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err) {
        errno = err;
        util_error("cannot start the shared heap's thread: %m");
        return BOBCAT_ERR_SYS;
    }
    while (sem_wait(&helper_ready) && errno == EINTR) {
    }
    if (!shared_heap) {
        util_error("mimalloc refused a shared heap in the segment");
        return BOBCAT_ERR_NOMEM;
    }
    return BOBCAT_OK;
}

/* fork() while another thread holds the lock must not leave the child a lock nobody will release. */
static void lock_shared(void) { pthread_mutex_lock(&shared_lock); }
static void unlock_shared(void) { pthread_mutex_unlock(&shared_lock); }

bobcat_status_t smartmap_alloc_init(void *base, size_t size, size_t heap_per_rank_knob, size_t thread_heap_after)
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
    if (thread_heap_after) {
        shared_until = thread_heap_after;
        shared_base = seg_lo & ~(SEG_BLOCK - 1);
        bobcat_status_t st = shared_heap_start();
        if (st != BOBCAT_OK)
            return st;
        pthread_atfork(lock_shared, unlock_shared, unlock_shared);
        shared_span = seg_hi - shared_base; /* last: free looks at marks only from here on */
    }
    atomic_store_explicit(&seg_ready, 1, memory_order_release);
    return BOBCAT_OK;
}

uintptr_t smartmap_alloc_high_water(void)
{
    /* mimalloc carves the arena in 32 MiB blocks whose metadata and free lists may lie past the
     * last block handed out: round up to the block so a copy keeps them. */
    uintptr_t hw = atomic_load(&seg_high_water);
    hw = seg_lo + ((hw - seg_lo + SEG_BLOCK - 1) & ~(SEG_BLOCK - 1));
    return hw > seg_hi ? seg_hi : hw;
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

/* Whether p lies in a block the shared heap has handed memory out of (free must lock). The marks
 * are relaxed: the program's own synchronisation that passed p to this thread orders them. */
static inline int in_shared_block(const void *p)
{
    uintptr_t off = (uintptr_t)p - shared_base;
    if (__builtin_expect(off >= shared_span, 1))
        return 0;
    uintptr_t b = off >> SEG_BLOCK_SHIFT;
    return (int)((atomic_load_explicit(&shared_blocks[b >> 6], memory_order_relaxed) >> (b & 63)) & 1);
}

static inline void mark_shared(const void *p)
{
    uintptr_t b = ((uintptr_t)p - shared_base) >> SEG_BLOCK_SHIFT;
    if (!((atomic_load_explicit(&shared_blocks[b >> 6], memory_order_relaxed) >> (b & 63)) & 1))
        atomic_fetch_or_explicit(&shared_blocks[b >> 6], (uint64_t)1 << (b & 63), memory_order_relaxed);
}

/* The thread's heap, if it has one; NULL before the segment exists or while it uses the shared one. */
static inline mi_heap_t *own_heap(void)
{
    mi_heap_t *h = thread_heap;
    if (__builtin_expect(h != NULL, 1))
        return h;
    if (!atomic_load_explicit(&seg_ready, memory_order_acquire) || shared_heap)
        return NULL;
    /* mimalloc deletes a thread's heaps when the thread exits; the blocks stay valid. */
    return thread_heap = mi_heap_new_in_arena(seg_arena);
}

enum { KIND_MALLOC, KIND_ZALLOC, KIND_ALIGNED, KIND_REALLOC };

/* An allocation from the shared heap, under its lock; counts towards the thread's own heap.
 * old: realloc's block (which may be of any heap), align: KIND_ALIGNED's alignment. */
static __attribute__((noinline)) void *shared_alloc(int kind, void *old, size_t n, size_t align)
{
    if (!shared_heap) /* every thread has its own heap, and this one could not get it */
        return NULL;
    pthread_mutex_lock(&shared_lock);
    void *p = kind == KIND_MALLOC    ? mi_heap_malloc(shared_heap, n)
              : kind == KIND_ZALLOC  ? mi_heap_zalloc(shared_heap, n)
              : kind == KIND_ALIGNED ? mi_heap_malloc_aligned(shared_heap, n, align)
                                     : mi_heap_realloc(shared_heap, old, n);
    if (p)
        mark_shared(p);
    pthread_mutex_unlock(&shared_lock);
    if (!thread_heap && (thread_shared_bytes += n) >= shared_until)
        thread_heap = mi_heap_new_in_arena(seg_arena);
    return p;
}

/* One allocation: the thread's own heap, else (no heap yet, or its heap can get no block) the
 * shared one; before the segment exists, mimalloc's ordinary heap. */
static inline void *seg_alloc(int kind, size_t n, size_t align)
{
    mi_heap_t *h = own_heap();
    void *p;
    if (__builtin_expect(h != NULL, 1)) {
        p = kind == KIND_MALLOC ? mi_heap_malloc(h, n) : kind == KIND_ZALLOC ? mi_heap_zalloc(h, n)
                                                                             : mi_heap_malloc_aligned(h, n, align);
        if (__builtin_expect(p != NULL, 1) || !shared_heap)
            return p ? track(p, n) : out_of_heap(n);
    } else if (!atomic_load_explicit(&seg_ready, memory_order_acquire)) {
        p = kind == KIND_MALLOC ? mi_malloc(n) : kind == KIND_ZALLOC ? mi_zalloc(n) : mi_malloc_aligned(n, align);
        if (!p)
            errno = ENOMEM;
        return p;
    }
    p = shared_alloc(kind, NULL, n, align);
    return p ? track(p, n) : out_of_heap(n);
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

BOBCAT_EXPORT void *malloc(size_t n) { return seg_alloc(KIND_MALLOC, glibc_size(n), 0); }

BOBCAT_EXPORT void free(void *p)
{
    if (__builtin_expect(!in_shared_block(p), 1)) {
        mi_free(p);
        return;
    }
    pthread_mutex_lock(&shared_lock);
    mi_free(p);
    pthread_mutex_unlock(&shared_lock);
}

BOBCAT_EXPORT void *calloc(size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return seg_alloc(KIND_ZALLOC, glibc_size(n), 0);
}

BOBCAT_EXPORT void *realloc(void *old, size_t n)
{
    size_t m = n ? glibc_size(n) : 0; /* realloc(p, 0) behaves as before */
    mi_heap_t *h = own_heap();
    void *p;
    if (h && !in_shared_block(old)) {
        p = mi_heap_realloc(h, old, m);
        if (p || !shared_heap || n == 0)
            return p ? track(p, n) : n ? out_of_heap(n) : NULL;
    } else if (!atomic_load_explicit(&seg_ready, memory_order_acquire)) {
        p = mi_realloc(old, m);
        if (!p && n)
            errno = ENOMEM;
        return p;
    } else if (h) {
        /* A block of the shared heap moves to the thread's own: freeing it needs the lock. */
        pthread_mutex_lock(&shared_lock);
        p = mi_heap_realloc(h, old, m);
        pthread_mutex_unlock(&shared_lock);
        if (p || n == 0)
            return p ? track(p, n) : NULL;
    }
    p = shared_alloc(KIND_REALLOC, old, m, 0);
    if (!p && n == 0)
        return NULL;
    return p ? track(p, n) : out_of_heap(n);
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

static void *aligned(size_t align, size_t n) { return seg_alloc(KIND_ALIGNED, n, align); }

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
