/* mp_smartmap: the SMARTMAP memory model seen from an MPI program started by yod.
 * Every rank fills a heap buffer, then reads every local peer's buffer and writes into its right
 * neighbour's through smap_remote_address; ranks of other (simulated) nodes must not be local.
 * Also: no page faults on heap memory after start, and the allocator family stays in the segment. */
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bobcat/smartmap.h>
#include "mp_util.h"

#define BUF (4u << 20)

/* This thread's minor faults: the process's would also count other threads' (the heap's populating
 * thread of idle priority, the real MPI's progress threads), which touch pages of their own while
 * this one reads (one such fault failed a fresh clone's run once). */
static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt;
}

static void check_allocators(void)
{
    void *p = NULL;
    char *c = calloc(1000, 1000);
    CHECK(c && smap_is_shared(c), "calloc outside the segment");
    int zero = 1;
    for (int i = 0; c && i < 1000000; i++)
        zero &= c[i] == 0;
    CHECK(zero, "calloc memory not zeroed");
    char *r = realloc(NULL, 10);
    CHECK(r && smap_is_shared(r), "realloc(NULL) outside the segment");
    memcpy(r, "012345678", 10);
    r = realloc(r, 1 << 20);
    CHECK(r && !memcmp(r, "012345678", 10) && smap_is_shared(r), "realloc lost data or left the segment");
    CHECK(posix_memalign(&p, 4096, 100) == 0 && ((uintptr_t)p & 4095) == 0 && smap_is_shared(p), "posix_memalign");
    CHECK(posix_memalign(&p, 3, 100) == 22, "posix_memalign accepted alignment 3");
    void *a = aligned_alloc(256, 512), *m = memalign(1 << 16, 10), *v = valloc(10), *pv = pvalloc(10);
    CHECK(a && ((uintptr_t)a & 255) == 0 && smap_is_shared(a), "aligned_alloc");
    CHECK(m && ((uintptr_t)m & 0xffff) == 0 && smap_is_shared(m), "memalign");
    CHECK(v && ((uintptr_t)v & 4095) == 0 && smap_is_shared(v), "valloc");
    CHECK(pv && ((uintptr_t)pv & 4095) == 0 && malloc_usable_size(pv) >= 4096, "pvalloc");
    CHECK(malloc_usable_size(r) >= (1 << 20), "malloc_usable_size %zu", malloc_usable_size(r));
    int *ra = reallocarray(NULL, 100, sizeof(int));
    CHECK(ra && smap_is_shared(ra), "reallocarray");
    int on_stack = 0;
    CHECK(!smap_is_shared(&on_stack), "the stack claims to be in the segment");
    CHECK(smap_remote_address(0, &on_stack) == NULL, "remote address of a stack variable");
    free(c); free(r); free(p); free(a); free(m); free(v); free(pv); free(ra);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int me = smap_local_rank(), n = smap_local_size();
    CHECK(smap_world_rank() == rank, "world rank %d vs MPI %d", smap_world_rank(), rank);
    CHECK(smap_world_size() == size, "planned world %d vs MPI %d", smap_world_size(), size);
    CHECK(n >= 1 && me >= 0 && me < n, "local rank %d of %d", me, n);
    CHECK(smap_pe_is_local(rank) == me, "pe_is_local(self)");
    size_t page = 0, heap = 0;
    smap_pages_t kind = smap_segment_info(&page, &heap);
    CHECK(kind >= SMAP_PAGES_SMALL && heap >= BUF * 2, "segment kind %d heap %zu", kind, heap);

    /* Locality must agree across ranks: i and j are local iff they report the same node leader. */
    int leader = rank - me, *leaders = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    for (int pe = 0; pe < size; pe++) {
        int li = smap_pe_is_local(pe);
        CHECK((leaders[pe] == leader) == (li >= 0), "pe %d locality", pe);
        if (li >= 0)
            CHECK(li == pe - leader, "pe %d local index %d", pe, li);
    }

    /* Faults are counted around the first touch of fresh heap memory only: the allocator's own
     * bookkeeping may touch other (private) pages, and the first run of memset's large-size code
     * path faults in a page of libc's text, so a warm-up buffer exercises that code first. */
    unsigned char *warm = malloc(BUF), *buf = malloc(BUF);
    CHECK(buf && warm && smap_is_shared(buf), "heap buffer outside the segment");
    memset(warm, 0, BUF);
    long f0 = minor_faults();
    f0 = minor_faults();
    memset(buf, rank + 1, BUF);
    long faults = minor_faults() - f0;
    CHECK(faults == 0, "%ld page faults touching %u fresh heap bytes", faults, BUF);

    /* The own window aliases the own heap. */
    unsigned char *self = smap_remote_address(me, buf);
    CHECK(self && self != buf && self[BUF - 1] == rank + 1, "own window");
    buf[7] = 0xee;
    CHECK(self && self[7] == 0xee, "own window is not the same memory");
    buf[7] = (unsigned char)(rank + 1);

    void **ptrs = malloc(sizeof(void *) * (size_t)size);
    MPI_Allgather(&buf, sizeof buf, MPI_BYTE, ptrs, sizeof buf, MPI_BYTE, MPI_COMM_WORLD);
    /* Windows on 4 KiB pages are lazy by default (docs/yod.md, page tables of the windows): the
     * first pass may fault each page in once, and from then on nothing may fault (the fast paths
     * must not pay a fault per message). Eager windows (2 MiB pages, or BOBCAT_WINDOWS=eager) must
     * not fault even on the first pass. */
    /* A window's kind follows its peer's heap, and ranks of one node can differ: a hugetlb pool
     * that runs dry (or that another job resizes) mid-start gives some ranks 2 MiB pages and the
     * rest 4 KiB pages. Any 4 KiB heap on the node means some windows are lazy. */
    const char *wk = getenv("BOBCAT_WINDOWS");
    size_t pgsz = 0;
    int small = smap_segment_info(&pgsz, NULL) == SMAP_PAGES_SMALL, any_small = 0;
    MPI_Allreduce(&small, &any_small, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int lazy = any_small && !(wk && !strcmp(wk, "eager"));
    for (int pass = lazy ? 0 : 1; pass < 2; pass++) {
    f0 = minor_faults();
    for (int pe = 0; pe < size; pe++) {
        int li = smap_pe_is_local(pe);
        if (li < 0)
            continue;
        unsigned char *peer = smap_remote_address(li, ptrs[pe]);
        CHECK(peer != NULL, "no window on pe %d", pe);
        if (!peer)
            continue;
        int good = 1;
        for (size_t i = 0; i < BUF; i += 4093)
            good &= peer[i] == pe + 1;
        CHECK(good && peer[BUF - 1] == pe + 1, "pe %d's heap reads wrong through the window", pe);
    }
    faults = minor_faults() - f0;
    if (pass == 1)
        CHECK(faults == 0, "%ld page faults reading peers' heaps%s", faults, lazy ? " after the first touch" : "");
    }

    /* Write into the right neighbour on the node; it checks after the barrier. */
    int right = (me + 1) % n, right_pe = leader + right;
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned char *dst = smap_remote_address(right, ptrs[right_pe]);
    memset(dst, 0x40 + me, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (me + n - 1) % n;
    CHECK(buf[0] == 0x40 + left && buf[4095] == 0x40 + left, "neighbour's write not seen (%d)", buf[0]);
    CHECK(smap_remote_address(n, buf) == NULL, "window of a non-existent local rank");

    check_allocators();
    free(ptrs);
    free(warm);
    free(leaders);
    free(buf);
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mp_smartmap: %d ranks, %d local, %s pages: %s\n", size, n, smap_pages_name(kind), total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
