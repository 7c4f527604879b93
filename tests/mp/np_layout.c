/* np_layout: SMARTMAP's layout at scale, without MPI (many ranks on few cores must stay cheap).
 * Every rank writes its world rank into the last word of its own heap (a small program like this
 * never allocates that far), then reads the last word of every local rank's heap through its
 * window until it holds that rank's world rank: so every window maps the right heap, at the
 * address smap_remote_address gives, on every rank. Also checks the slot rule and the bound.
 * Usage: np_layout <expected local size> <expected slot shift> */
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include <bobcat/smartmap.h>
#include "mp_util.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3, "usage: np_layout <local size> <slot shift>");
    if (argc != 3)
        return 2;
    int n = smap_local_size(), me = smap_local_rank(), shift = smap_slot_shift();
    size_t heap = 0;
    smap_segment_info(NULL, &heap);
    CHECK(n == atoi(argv[1]), "local size %d, expected %s", n, argv[1]);
    CHECK(shift == atoi(argv[2]) && shift == smap_layout_shift(heap), "slot shift %d (heap %zu), expected %s", shift,
          heap, argv[2]);
    CHECK(n <= smap_layout_max_ranks(heap), "%d ranks exceed the layout's bound %d", n, smap_layout_max_ranks(heap));
    int first = smap_world_rank() - me;
    volatile int64_t *mine = (volatile int64_t *)(SMAP_HEAP_BASE + heap - sizeof(int64_t));
    CHECK(smap_is_shared((const void *)mine), "the heap's last word is not in the segment");
    __atomic_store_n(mine, (int64_t)smap_world_rank() + 1, __ATOMIC_RELEASE);
    for (int r = 0; r < n && !mp_failures; r++) {
        volatile int64_t *theirs = smap_remote_address(r, (const void *)mine);
        uintptr_t want = SMAP_HEAP_BASE + ((uintptr_t)(r + 1) << shift) + heap - sizeof(int64_t);
        CHECK((uintptr_t)theirs == want, "rank %d's window at %p, expected %p", r, (void *)theirs, (void *)want);
        if (!theirs)
            break;
        CHECK(smap_pe_is_local(first + r) == r, "world rank %d is not local rank %d", first + r, r);
        double deadline = now() + 120;
        int64_t v;
        while ((v = __atomic_load_n(theirs, __ATOMIC_ACQUIRE)) != first + r + 1 && now() < deadline)
            sched_yield(); /* the peer may not have started yet: give it the core */
        CHECK(v == first + r + 1, "rank %d's heap holds %lld, expected %d", r, (long long)v, first + r + 1);
    }
    CHECK(smap_remote_address(n, (const void *)mine) == NULL, "a window past the node's last rank");
    if (me == 0)
        printf("np_layout: %d ranks per node, slot 2^%d: %s\n", n, shift, mp_failures ? "FAILED" : "ok");
    return mp_failures != 0;
}
