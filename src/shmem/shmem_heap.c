/* shmem_heap: the symmetric heap allocator.
 *
 * Every PE runs the same deterministic first-fit allocator over its own heap, and the standard has
 * every PE make the same calls with the same arguments, so a block lands at the same offset
 * everywhere: that is what makes it symmetric. The bookkeeping (a list of chunks sorted by offset)
 * lives in private memory, so a stray remote put cannot corrupt it. The routines are collective
 * and end (malloc) or begin (free) with a barrier, as the standard requires. */
#include "shmem_internal.h"

#include <pthread.h>
#include <stdlib.h>

#define HEAP_ALIGN 64 /* a cache line: also enough for long double and 128-bit elements */

typedef struct chunk {
    size_t off, size;
    int used;
    struct chunk *prev, *next;
} chunk_t;

static chunk_t *chunks;
/* The user part of the symmetric heap: what follows the internal area (SHI_RESERVED bytes). */
static uintptr_t user_base;
static size_t user_size, user_used;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

void shi_heap_init(void *base, size_t size)
{
    user_base = (uintptr_t)base;
    user_size = size;
    chunks = calloc(1, sizeof *chunks);
    if (!chunks)
        shi_fatal("shmem_init", "out of memory for the symmetric heap's bookkeeping");
    chunks->size = size;
}

static chunk_t *split(chunk_t *c, size_t at)
{
    /* c keeps [off, off + at); a new free chunk takes the rest. */
    chunk_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->off = c->off + at;
    n->size = c->size - at;
    n->prev = c;
    n->next = c->next;
    if (c->next)
        c->next->prev = n;
    c->next = n;
    c->size = at;
    return n;
}

static void merge_next(chunk_t *c)
{
    chunk_t *n = c->next;
    c->size += n->size;
    c->next = n->next;
    if (n->next)
        n->next->prev = c;
    free(n);
}

static void *heap_alloc(size_t size, size_t align)
{
    if (align < HEAP_ALIGN)
        align = HEAP_ALIGN;
    size = (size + HEAP_ALIGN - 1) & ~(size_t)(HEAP_ALIGN - 1);
    pthread_mutex_lock(&heap_lock);
    void *p = NULL;
    for (chunk_t *c = chunks; c; c = c->next) {
        if (c->used)
            continue;
        uintptr_t start = (user_base + c->off + align - 1) & ~(uintptr_t)(align - 1);
        size_t pad = start - (user_base + c->off);
        if (pad + size > c->size)
            continue;
        if (pad) {
            chunk_t *rest = split(c, pad); /* the padding stays a free chunk */
            if (!rest)
                break;
            c = rest;
        }
        if (c->size > size && !split(c, size))
            break;
        c->used = 1;
        user_used += c->size;
        p = (void *)(user_base + c->off);
        break;
    }
    pthread_mutex_unlock(&heap_lock);
    return p;
}

static chunk_t *find(void *p)
{
    size_t off = (uintptr_t)p - user_base;
    for (chunk_t *c = chunks; c; c = c->next)
        if (c->off == off && c->used)
            return c;
    return NULL;
}

static void heap_free(void *p, const char *routine)
{
    pthread_mutex_lock(&heap_lock);
    chunk_t *c = find(p);
    if (!c) {
        pthread_mutex_unlock(&heap_lock);
        shi_fatal(routine, "%p was not returned by shmem_malloc/shmem_calloc/shmem_align/shmem_realloc "
                           "(or was freed already)", p);
    }
    c->used = 0;
    user_used -= c->size;
    if (c->next && !c->next->used)
        merge_next(c);
    if (c->prev && !c->prev->used)
        merge_next(c->prev);
    pthread_mutex_unlock(&heap_lock);
}

static void *checked(void *p, size_t size, const char *routine)
{
    if (!p && size)
        shi_debug("%s: %zu bytes do not fit in the symmetric heap (%zu of %zu bytes in use): raise "
                  "SHMEM_SYMMETRIC_SIZE", routine, size, user_used, user_size);
    return p;
}

BOBCAT_EXPORT void *shmem_malloc(size_t size)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_malloc");
    void *p = size ? heap_alloc(size, HEAP_ALIGN) : NULL;
    shi_barrier_all();
    return checked(p, size, "shmem_malloc");
}

BOBCAT_EXPORT void *shmem_malloc_with_hints(size_t size, long hints)
{
    (void)hints; /* one kind of symmetric memory: every hint is satisfied by it */
    return shmem_malloc(size);
}

BOBCAT_EXPORT void *shmem_calloc(size_t count, size_t size)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_calloc");
    size_t n;
    void *p = NULL;
    if (!__builtin_mul_overflow(count, size, &n) && n) {
        p = heap_alloc(n, HEAP_ALIGN);
        if (p)
            memset(p, 0, n);
    }
    shi_barrier_all();
    return checked(p, count * size, "shmem_calloc");
}

BOBCAT_EXPORT void *shmem_align(size_t alignment, size_t size)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_align");
    void *p = NULL;
    if (size && alignment && !(alignment & (alignment - 1)))
        p = heap_alloc(size, alignment);
    shi_barrier_all();
    return checked(p, size, "shmem_align");
}

BOBCAT_EXPORT void shmem_free(void *ptr)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_free");
    shi_barrier_all(); /* nobody may still be accessing the block on another PE */
    if (ptr)
        heap_free(ptr, "shmem_free");
}

BOBCAT_EXPORT void *shmem_realloc(void *ptr, size_t size)
{
    if (!shi.initialized)
        shi_not_initialized("shmem_realloc");
    if (!ptr)
        return shmem_malloc(size);
    if (!size) {
        shmem_free(ptr);
        return NULL;
    }
    shi_barrier_all();
    pthread_mutex_lock(&heap_lock);
    chunk_t *c = find(ptr);
    size_t old = c ? c->size : 0;
    pthread_mutex_unlock(&heap_lock);
    if (!c)
        shi_fatal("shmem_realloc", "%p was not returned by the symmetric heap allocator", ptr);
    /* Deterministic: a new block, the old contents, the old block freed. Same on every PE. */
    void *p = heap_alloc(size, HEAP_ALIGN);
    if (p) {
        memcpy(p, ptr, old < size ? old : size);
        heap_free(ptr, "shmem_realloc");
    }
    shi_barrier_all();
    return checked(p, size, "shmem_realloc");
}

BOBCAT_EXPORT void *shmalloc(size_t size) { return shmem_malloc(size); }
BOBCAT_EXPORT void shfree(void *ptr) { shmem_free(ptr); }
BOBCAT_EXPORT void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
BOBCAT_EXPORT void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
