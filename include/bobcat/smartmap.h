/* SMARTMAP on Linux: every rank of a node can address every other rank's heap.
 *
 * Memory model (Catamount's, rebuilt in user space):
 *   - each rank's heap is one segment: a memfd of fixed size, populated in full at start
 *     (no demand paging afterwards), on 2 MiB pages when possible;
 *   - the heap is divided evenly among the ranks of a node;
 *   - address layout, chosen per job from the heap size and identical on every rank of a node:
 *     the slot size is 2^shift, the smallest power of two >= the heap (at least 2 MiB), see
 *     smap_layout_shift(); the rank's own heap is slot 0, at SMAP_HEAP_BASE; local rank r's heap
 *     is mapped in every rank of the node at SMAP_HEAP_BASE + (r + 1) * 2^shift, so
 *     smap_remote_address() is a constant-time subtract/mask/shift/or with the job's shift.
 *   - malloc and friends allocate from the segment (mimalloc, steered into it).
 *
 * Bound: windows lie below SMAP_LAYOUT_TOP (64 TiB), the line above which Linux puts
 * position-independent executables and shared libraries (and the 47-bit limit that 4-level page
 * tables impose, which 5-level page tables keep for every process that does not ask for more).
 * So SMAP_HEAP_BASE + (ranks + 1) * slot <= 64 TiB: smap_layout_max_ranks(heap) ranks fit, and
 * never more than SMAP_MAX_LOCAL_RANKS (the size of libbobcat's per-peer tables). 1024 ranks fit
 * with heaps up to 32 GiB per rank; 128 MiB heaps would allow 500 000.
 *
 * The calls work in any program started by yod, from the first call (the library sets up in
 * its constructor), and so in MPI programs once MPI_Init has returned. Outside yod the process
 * is a node of one rank without a segment: smap_local_size() == 1, smap_is_shared() == 0.
 */
#ifndef BOBCAT_SMARTMAP_H
#define BOBCAT_SMARTMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SMAP_SLOT_SHIFT (39, one 512 GiB PML4 slot per rank) is gone: the slot size is now chosen per
 * job from the heap size. Use smap_slot_shift() for the running job's shift. */
#define SMAP_HEAP_BASE ((uintptr_t)0x1000000000ULL)        /* 64 GiB: the own heap, slot 0 */
#define SMAP_LAYOUT_TOP ((uintptr_t)1 << 46)               /* 64 TiB: windows end below it */
#define SMAP_MIN_SLOT_SHIFT 21                             /* 2 MiB: huge-page aligned slots */
#define SMAP_MAX_HEAP ((uintptr_t)1 << 44)                 /* 16 TiB: one rank, two slots */
#define SMAP_MAX_LOCAL_RANKS 1024                          /* per-peer tables' size */
/* The allocator hands the heap out in 32 MiB blocks, and every thread that allocates owns at
 * least one: an MPI library's helper threads need a few. Below this a rank cannot start. */
#define SMAP_MIN_HEAP ((uintptr_t)128 << 20)

/* Page kinds, best first. */
typedef enum {
    SMAP_PAGES_NONE = 0,  /* no segment (not started by yod) */
    SMAP_PAGES_SMALL = 1, /* 4 KiB pages */
    SMAP_PAGES_THP = 2,   /* shmem transparent huge pages (2 MiB) */
    SMAP_PAGES_HUGE = 3   /* hugetlb pool pages (2 MiB) */
} smap_pages_t;

int smap_local_rank(void);                              /* index of this rank on its node */
int smap_local_size(void);                              /* ranks on this node */
int smap_pe_is_local(int pe);                           /* world rank -> local index, or -1 */
void *smap_remote_address(int core, const void *vaddr); /* vaddr as seen in local rank `core`;
                                                           NULL if vaddr is not in a segment */
int smap_is_shared(const void *vaddr);                  /* 1 if vaddr lies in this rank's segment */
int smap_slot_shift(void);                              /* log2 of this job's slot size; 0 outside yod */

/* The layout rule, the same in libbobcat and yod (python/bobcat/launcher/plan.py): the slot shift for
 * a heap of heap_size bytes (log2 of the smallest power of two >= it, at least
 * SMAP_MIN_SLOT_SHIFT), and how many local ranks fit below SMAP_LAYOUT_TOP at that heap
 * (0 if not even one: the heap is too large). */
int smap_layout_shift(size_t heap_size);
int smap_layout_max_ranks(size_t heap_size);

/* What the segment got: the page kind (returned) and, if non-NULL, page size and heap size. */
smap_pages_t smap_segment_info(size_t *page_size_p, size_t *heap_size_p);
const char *smap_pages_name(smap_pages_t pages);        /* "huge", "thp", "small", "none" */
int smap_world_rank(void);                              /* world rank from the launcher, or 0 */
int smap_world_size(void);                              /* ranks in yod's plan; 0 if not started by yod */

/* OpenSHMEM programs (those linking libbobcat-shmem-<mpi>.so) only; NULL and size 0 otherwise.
 * The symmetric heap: SHMEM_SYMMETRIC_SIZE bytes (default 128M, rounded up to 32 MiB) at the start
 * of the segment, outside malloc's arena, at the same offset in every rank's segment. */
void *smap_symmetric_heap(size_t *size_p);
/* The executable's static data (.data and .bss, page aligned), moved into shared memory at start
 * and mapped by every rank of the node; smap_remote_address() translates addresses in it. */
void *smap_static_data(size_t *size_p);

#ifdef __cplusplus
}
#endif
#endif
