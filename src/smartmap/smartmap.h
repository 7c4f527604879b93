/* smartmap internals shared by the segment code and the allocator. */
#ifndef BOBCAT_SMARTMAP_INTERNAL_H
#define BOBCAT_SMARTMAP_INTERNAL_H

#include <stdatomic.h>
#include <bobcat/smartmap.h>
#include "../boot/boot.h"
#include "../sys/sys.h"

typedef struct {
    int active;               /* a segment exists (started by yod, and this process is the rank) */
    boot_place_t place;
    uintptr_t base;           /* SMAP_HEAP_BASE */
    int slot_shift;           /* this job's slot: 2^slot_shift bytes (smap_layout_shift) */
    int windows_eager;        /* knob BOBCAT_WINDOWS: -1 auto, 0 lazy, 1 eager */
    size_t heap_size;
    smap_pages_t pages;
    size_t page_size;
    smap_pages_t worst_pages; /* the smallest page kind among the node's heaps */
    size_t window_size[SMAP_MAX_LOCAL_RANKS]; /* heap size of each local rank's window */
    int windows_mapped;       /* 0 in a forked child: the windows are gone */
} smartmap_state_t;

extern smartmap_state_t smartmap_state;

/* Steer the allocator into [base, base + size). Threads share one heap until each has allocated
 * thread_heap_after bytes (BOBCAT_THREAD_HEAP; 0: a heap per thread at once). */
bobcat_status_t smartmap_alloc_init(void *base, size_t size, size_t heap_per_rank_knob, size_t thread_heap_after);
/* Highest byte of the segment the allocator has handed out (for fork). */
uintptr_t smartmap_alloc_high_water(void);

/* OpenSHMEM support (smartmap_shmem.c): bytes to reserve for the symmetric heap at the start of
 * the segment (0: not an OpenSHMEM program; (size_t)-1: bad SHMEM_SYMMETRIC_SIZE, logged), where it
 * landed, and the executable's static data shared with the node's ranks. */
size_t smartmap_shmem_reserve(void);
void smartmap_shmem_set_heap(uintptr_t base, size_t size);
bobcat_status_t smartmap_shmem_share_static(const char *job_id, const char *token, const boot_place_t *pl,
                                            double timeout_s);
void *smartmap_static_remote(int core, uintptr_t a);
int smartmap_static_contains(uintptr_t a);

#endif
