/* smartmap: the SMARTMAP memory model. At load time (library constructor) a rank started by yod
 * creates its heap segment, meets the other ranks of its node, maps every local rank r's heap at
 * SMAP_HEAP_BASE + (r + 1) << slot_shift, and steers malloc into its own segment. After fork() the
 * child gets a private copy of the heap and no windows: it is not a rank.
 *
 * Layout rule (include/bobcat/smartmap.h): the slot is the smallest power of two >= the heap, at
 * least 2 MiB. Why not a fixed 1 GiB or 512 GiB slot: the windows' page tables are what limits a
 * node of many ranks, and packing the windows densely lets one page-table page (covering 1 GiB
 * with 2 MiB pages, 2 MiB with 4 KiB pages) serve several small windows; heaps of 1 GiB and more
 * get 1 GiB-aligned slots anyway, which is what Linux needs to share the page tables of hugetlb
 * windows among all the ranks that map them. */
#include "smartmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

smartmap_state_t smartmap_state = {.place = {.local_size = 1}};

BOBCAT_EXPORT int smap_layout_shift(size_t heap_size)
{
    int shift = SMAP_MIN_SLOT_SHIFT;
    while (shift < 63 && ((uintptr_t)1 << shift) < heap_size)
        shift++;
    return shift;
}

BOBCAT_EXPORT int smap_layout_max_ranks(size_t heap_size)
{
    if (heap_size > SMAP_MAX_HEAP)
        return 0;
    /* SMAP_HEAP_BASE + (n + 1) * slot <= SMAP_LAYOUT_TOP */
    uintptr_t slots = (SMAP_LAYOUT_TOP - SMAP_HEAP_BASE) >> smap_layout_shift(heap_size);
    uintptr_t n = slots ? slots - 1 : 0;
    return n > SMAP_MAX_LOCAL_RANKS ? SMAP_MAX_LOCAL_RANKS : (int)n;
}

static inline uintptr_t window_address(const smartmap_state_t *s, int r)
{
    return s->base + ((uintptr_t)(r + 1) << s->slot_shift);
}

BOBCAT_EXPORT int smap_local_rank(void) { return smartmap_state.place.local_rank; }
BOBCAT_EXPORT int smap_local_size(void) { return smartmap_state.place.local_size; }
BOBCAT_EXPORT int smap_world_rank(void) { return smartmap_state.place.world_rank; }
BOBCAT_EXPORT int smap_world_size(void) { return smartmap_state.active ? smartmap_state.place.world_size : 0; }

BOBCAT_EXPORT int smap_pe_is_local(int pe)
{
    const boot_place_t *p = &smartmap_state.place;
    if (!smartmap_state.windows_mapped)
        return pe == p->world_rank ? p->local_rank : -1;
    if (pe < p->node_first_rank || pe >= p->node_first_rank + p->local_size)
        return -1;
    return pe - p->node_first_rank;
}

BOBCAT_EXPORT int smap_is_shared(const void *vaddr)
{
    uintptr_t a = (uintptr_t)vaddr;
    return (smartmap_state.active && a >= smartmap_state.base && a < smartmap_state.base + smartmap_state.heap_size) ||
           smartmap_static_contains(a);
}

BOBCAT_EXPORT int smap_slot_shift(void) { return smartmap_state.active ? smartmap_state.slot_shift : 0; }

BOBCAT_EXPORT void *smap_remote_address(int core, const void *vaddr)
{
    const smartmap_state_t *s = &smartmap_state;
    if (!s->windows_mapped || core < 0 || core >= s->place.local_size)
        return NULL;
    if (smartmap_static_contains((uintptr_t)vaddr)) /* the executable's shared static data */
        return smartmap_static_remote(core, (uintptr_t)vaddr);
    /* Relative to the base (an address below it wraps to a huge slot number and is refused):
     * slot 0 is our own heap, slot r + 1 local rank r's window; the offset is the same in all. */
    uintptr_t rel = (uintptr_t)vaddr - s->base, slot = rel >> s->slot_shift;
    uintptr_t off = rel & (((uintptr_t)1 << s->slot_shift) - 1);
    if (slot > (uintptr_t)s->place.local_size)
        return NULL;
    size_t limit = slot == 0 ? s->heap_size : s->window_size[slot - 1];
    if (off >= limit || off >= s->window_size[core])
        return NULL;
    return (void *)(s->base + ((uintptr_t)(core + 1) << s->slot_shift) + off);
}

BOBCAT_EXPORT smap_pages_t smap_segment_info(size_t *page_size_p, size_t *heap_size_p)
{
    if (page_size_p)
        *page_size_p = smartmap_state.active ? smartmap_state.page_size : (size_t)sysconf(_SC_PAGESIZE);
    if (heap_size_p)
        *heap_size_p = smartmap_state.active ? smartmap_state.heap_size : 0;
    return smartmap_state.active ? smartmap_state.pages : SMAP_PAGES_NONE;
}

BOBCAT_EXPORT const char *smap_pages_name(smap_pages_t pages)
{
    switch (pages) {
    case SMAP_PAGES_HUGE: return "huge";
    case SMAP_PAGES_THP: return "thp";
    case SMAP_PAGES_SMALL: return "small";
    default: return "none";
    }
}

/* fork(): the child must not share the parent's heap (its malloc would corrupt the parent's), so
 * the used part of the segment becomes a private copy at the same address and the windows go. */
static void atfork_child(void)
{
    smartmap_state_t *s = &smartmap_state;
    if (!s->active)
        return;
    size_t used = smartmap_alloc_high_water() - s->base;
    if (used > s->heap_size)
        used = s->heap_size;
    void *base = (void *)s->base;
    if (used) {
        void *copy = mmap(NULL, used, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED) {
            util_error("fork: no memory for the child's copy of the heap (%zu bytes): %m", used);
            _exit(127);
        }
        memcpy(copy, base, used);
        if (mremap(copy, used, used, MREMAP_MAYMOVE | MREMAP_FIXED, base) == MAP_FAILED) {
            util_error("fork: cannot move the child's heap copy in place: %m");
            _exit(127);
        }
    }
    if (used < s->heap_size &&
        mmap((char *)base + used, s->heap_size - used, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        util_error("fork: cannot replace the rest of the child's heap: %m");
        _exit(127);
    }
    if (s->windows_mapped)
        for (int r = 0; r < s->place.local_size; r++)
            munmap((void *)window_address(s, r), s->window_size[r]);
    s->windows_mapped = 0;
    s->active = 0; /* the copy is private: nothing of it is shared any more */
    s->place.local_rank = 0;
    s->place.local_size = 1;
    s->place.node_first_rank = s->place.world_rank;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fail_start(bobcat_status_t st)
{
    /* A rank that cannot get its memory model must not run without it: yod reports exit 3. */
    util_error("start-up failed (%s); the program was not run", bobcat_status_string(st));
    _exit(3);
}

static void report_node(const smartmap_state_t *s, double populate_s, const char *why)
{
    smap_pages_t worst = s->worst_pages;
    /* Status values carry no spaces: they are escaped as %20 (docs/design/contracts.md section 2). */
    char esc[160];
    size_t k = 0;
    for (const char *c = why; *c && k + 4 < sizeof esc; c++) {
        if (*c == ' ') {
            memcpy(esc + k, "%20", 3);
            k += 3;
        } else {
            esc[k++] = *c;
        }
    }
    esc[k] = 0;
    char line[384];
    snprintf(line, sizeof line, "@@bobcat@@ node node=%d ranks=%d heap=%zu pages=%s page_size=%zu populate_s=%.6f%s%s\n",
             s->place.node, s->place.local_size, s->heap_size, smap_pages_name(worst),
             worst == SMAP_PAGES_SMALL ? (size_t)sysconf(_SC_PAGESIZE) : SYS_HUGE_PAGE, populate_s,
             k ? " why=" : "", esc);
    ssize_t ignored = write(STDERR_FILENO, line, strlen(line));
    (void)ignored;
}

/* The bootstrap hands over local rank r's segment: map its window. Windows on 2 MiB pages get
 * their page tables filled now (8 bytes per 2 MiB: cheap, and no fault on first touch); windows
 * on 4 KiB pages are left to fill on first touch under auto (eager, every rank would spend 8 bytes
 * per 4 KiB of every peer's heap: n^2 * heap / 512 for the node, 1.6 % of its memory at 8 ranks). */
static bobcat_status_t map_window(void *ctx, int r, int fd, const boot_seg_desc_t *d)
{
    smartmap_state_t *s = ctx;
    if (d->heap_size > ((size_t)1 << s->slot_shift)) {
        util_error("local rank %d's heap (%zu bytes) does not fit the node's slot of 2^%d bytes: every rank of a "
                   "node needs the same heap size (BOBCAT_HEAP)", r, (size_t)d->heap_size, s->slot_shift);
        return BOBCAT_ERR_LAYOUT;
    }
    int eager = s->windows_eager >= 0 ? s->windows_eager : d->pages != SMAP_PAGES_SMALL;
    bobcat_status_t st = sys_segment_map(fd, (void *)window_address(s, r), d->heap_size, eager);
    if (st == BOBCAT_OK) {
        s->window_size[r] = d->heap_size;
        if (d->pages < s->worst_pages)
            s->worst_pages = d->pages;
    }
    return st;
}

__attribute__((constructor(101))) static void smartmap_start(void)
{
    util_options_t o;
    if (util_options_load(&o) != BOBCAT_OK)
        fail_start(BOBCAT_ERR_INVAL);
    util_log_set_verbose(o.VERBOSE);
    if (!*o.JOB_ID)
        return; /* not started by yod: an ordinary process, node of one */
    /* A program the rank runs (system(), a shell script's commands) inherits our environment but
     * is not the rank. */
    char me[32];
    snprintf(me, sizeof me, "%d", (int)getpid());
    if (*o.RANK_PID && strcmp(o.RANK_PID, me))
        return;
    setenv("BOBCAT_RANK_PID", me, 1);

    smartmap_state_t *s = &smartmap_state;
    static char boot_dir[BOOT_DIR_MAX + 1];
    if (strlen(o.BOOT_DIR) > BOOT_DIR_MAX) {
        util_error("BOBCAT_BOOT_DIR %s is longer than %d characters: a socket's name would not fit; use a shorter "
                   "path (yod --boot-dir)", o.BOOT_DIR, BOOT_DIR_MAX);
        fail_start(BOBCAT_ERR_INVAL);
    }
    snprintf(boot_dir, sizeof boot_dir, "%s", o.BOOT_DIR);
    boot_set_socket_dir(boot_dir);
    int rank = boot_env_world_rank(o.RANK);
    if (rank < 0) {
        util_error("cannot tell this process's world rank: no OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or "
                   "SLURM_PROCID (set BOBCAT_RANK when using another launcher)");
        fail_start(BOBCAT_ERR_INVAL);
    }
    util_log_set_rank(rank);
    bobcat_status_t st = boot_plan_place(o.PLAN, rank, &s->place);
    if (st != BOBCAT_OK)
        fail_start(st);
    const boot_place_t *pl = &s->place;
    if (o.HEAP > SMAP_MAX_HEAP || o.HEAP < SMAP_MIN_HEAP) {
        util_error("heap of %zu bytes per rank is outside [%zu MiB, %zu TiB]: change yod --heap / BOBCAT_HEAP", o.HEAP,
                   (size_t)(SMAP_MIN_HEAP >> 20), (size_t)(SMAP_MAX_HEAP >> 40));
        fail_start(BOBCAT_ERR_LIMIT);
    }
    /* yod checks the same bound before launch; this catches other launchers. */
    int max_ranks = smap_layout_max_ranks(o.HEAP);
    if (pl->local_size > max_ranks) {
        util_error("%d ranks on node %d, but SMARTMAP's address layout allows at most %d per node with a heap of "
                   "%zu MiB (slot 2^%d bytes each below 64 TiB, and at most SMAP_MAX_LOCAL_RANKS = %d): use fewer "
                   "ranks per node (-VN) or a smaller heap (--heap)",
                   pl->local_size, pl->node, max_ranks, o.HEAP >> 20, smap_layout_shift(o.HEAP), SMAP_MAX_LOCAL_RANKS);
        fail_start(BOBCAT_ERR_LIMIT);
    }
    /* Bind before touching the heap, so its pages come from this core's memory. */
    if (o.BIND == UTIL_V_CORE) {
        int idx = boot_env_host_local_index(), core = -1;
        if (idx < 0)
            idx = pl->local_rank;
        if (sys_bind_core(idx, &core) != BOBCAT_OK)
            fail_start(BOBCAT_ERR_SYS);
        util_info("bound to CPU %d", core);
    }
    /* An OpenSHMEM program's symmetric heap comes first in the segment, outside malloc's arena. */
    size_t symm = smartmap_shmem_reserve();
    if (symm == (size_t)-1)
        fail_start(BOBCAT_ERR_INVAL);
    sys_segment_t seg;
    const char *why = "";
    /* Jobs starting together take the node's memory one job at a time (sys_job_lock). */
    int job_lock[2];
    sys_job_lock(o.JOB_ID, pl->node, pl->local_rank, 5.0, job_lock);
    double cpu_seg = cpu_seconds();
    st = sys_segment_create((void *)SMAP_HEAP_BASE, o.HEAP + symm, o.PAGES, o.POPULATE + symm, &seg, &why);
    cpu_seg = cpu_seconds() - cpu_seg;
    if (st != BOBCAT_OK)
        fail_start(st);
    s->base = SMAP_HEAP_BASE;
    s->heap_size = seg.size;
    s->pages = seg.pages;
    s->page_size = seg.page_size;
    s->worst_pages = seg.pages;
    util_info("heap %zu MiB at %p on %s pages, %zu MiB populated (the rest reserved) in %.6f s, made in %.6f s CPU%s%s",
              seg.size >> 20, (void *)s->base, smap_pages_name(seg.pages), seg.populated >> 20, seg.populate_s, cpu_seg,
              *why ? "; best pages not used: " : "", why);

    s->slot_shift = smap_layout_shift(seg.size);
    s->windows_eager = o.WINDOWS == UTIL_V_EAGER ? 1 : o.WINDOWS == UTIL_V_LAZY ? 0 : -1;
    boot_seg_desc_t own = {seg.size, seg.pages, seg.page_size};
    /* Wall time includes waiting for the node's other ranks to start; CPU time is this rank's
     * own cost of the bootstrap and the window mapping (what must stay linear in the ranks). */
    double t_boot = util_now(), cpu_boot = cpu_seconds();
    if (pl->local_size > 1)
        st = boot_node_exchange_each(o.JOB_ID, o.JOB_TOKEN, pl, s->slot_shift, seg.fd, &own, o.BOOT_TIMEOUT, map_window,
                                     s);
    else
        st = map_window(s, 0, seg.fd, &own);
    close(seg.fd); /* the mappings keep the memory; no descriptor of the heap stays open */
    sys_job_unlock(job_lock); /* every heap of the node is taken (or this rank fails and exits) */
    if (st != BOBCAT_OK)
        fail_start(st);
    util_info("node of %d ranks formed and windows mapped (slot 2^%d, %s windows) in %.6f s, %.6f s CPU",
              pl->local_size, s->slot_shift, s->windows_eager > 0 ? "eager" : s->windows_eager == 0 ? "lazy" : "auto",
              util_now() - t_boot, cpu_seconds() - cpu_boot);
    s->windows_mapped = 1;
    s->active = 1;
    if (symm) {
        smartmap_shmem_set_heap(s->base, symm);
        if ((st = smartmap_shmem_share_static(o.JOB_ID, o.JOB_TOKEN, pl, o.BOOT_TIMEOUT)) != BOBCAT_OK)
            fail_start(st);
    }
    if ((st = smartmap_alloc_init((void *)(s->base + symm), s->heap_size - symm, o.HEAP, o.THREAD_HEAP)) != BOBCAT_OK)
        fail_start(st);
    pthread_atfork(NULL, NULL, atfork_child);
    sys_segment_populate_rest((void *)s->base, &seg);
    if (pl->local_rank == 0) {
        report_node(s, seg.populate_s, why);
    }
}
