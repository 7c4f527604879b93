/* smartmap: the SMARTMAP memory model. At load time (library constructor) a rank started by yod
 * creates its heap segment, meets the other ranks of its node, maps every local rank r's heap at
 * SMAP_HEAP_BASE + (r + 1) << 39, and steers malloc into its own segment. After fork() the child
 * gets a private copy of the heap and no windows: it is not a rank. */
#include "smartmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

smartmap_state_t smartmap_state = {.place = {.local_size = 1}};

static inline uintptr_t slot_of(uintptr_t a) { return a >> SMAP_SLOT_SHIFT; }
static inline uintptr_t strip_slot(uintptr_t a) { return a & (((uintptr_t)1 << SMAP_SLOT_SHIFT) - 1); }

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

BOBCAT_EXPORT void *smap_remote_address(int core, const void *vaddr)
{
    const smartmap_state_t *s = &smartmap_state;
    if (!s->windows_mapped || core < 0 || core >= s->place.local_size)
        return NULL;
    uintptr_t a = (uintptr_t)vaddr, slot = slot_of(a), off = strip_slot(a);
    if (smartmap_static_contains(a))
        return smartmap_static_remote(core, a);
    /* vaddr is either in our own heap (slot 0) or already in some rank's window (slot r + 1). */
    if (slot > (uintptr_t)s->place.local_size || off < s->base)
        return NULL;
    size_t limit = slot == 0 ? s->heap_size : s->window_size[slot - 1];
    if (off - s->base >= limit || off - s->base >= s->window_size[core])
        return NULL;
    return (void *)(off | ((uintptr_t)(core + 1) << SMAP_SLOT_SHIFT));
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
            munmap((void *)(s->base | ((uintptr_t)(r + 1) << SMAP_SLOT_SHIFT)), s->window_size[r]);
    s->windows_mapped = 0;
    s->active = 0; /* the copy is private: nothing of it is shared any more */
    s->place.local_rank = 0;
    s->place.local_size = 1;
    s->place.node_first_rank = s->place.world_rank;
}

static void fail_start(bobcat_status_t st)
{
    /* A rank that cannot get its memory model must not run without it: yod reports exit 3. */
    util_error("start-up failed (%s); the program was not run", bobcat_status_string(st));
    _exit(3);
}

static void report_node(const smartmap_state_t *s, const boot_seg_desc_t *descs, double populate_s, const char *why)
{
    smap_pages_t worst = s->pages;
    for (int r = 0; r < s->place.local_size; r++)
        if (descs[r].pages < worst)
            worst = descs[r].pages;
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
    if (pl->local_size > SMAP_MAX_LOCAL_RANKS) {
        util_error("%d ranks on node %d, but SMARTMAP's address layout allows at most %d per node "
                   "(one 512 GiB slot each below 64 TiB): use fewer ranks per node (-VN)",
                   pl->local_size, pl->node, SMAP_MAX_LOCAL_RANKS);
        fail_start(BOBCAT_ERR_LIMIT);
    }
    if (o.HEAP > SMAP_MAX_HEAP || o.HEAP < SMAP_MIN_HEAP) {
        util_error("heap of %zu bytes per rank is outside [%zu MiB, %zu GiB]: change yod --heap / BOBCAT_HEAP", o.HEAP,
                   (size_t)(SMAP_MIN_HEAP >> 20),
                   (size_t)(SMAP_MAX_HEAP >> 30));
        fail_start(BOBCAT_ERR_LIMIT);
    }
    /* Bind before touching the heap, so its pages come from this core's memory. */
    if (!strcmp(o.BIND, "core")) {
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
    st = sys_segment_create((void *)SMAP_HEAP_BASE, o.HEAP + symm, o.PAGES, &seg, &why);
    if (st != BOBCAT_OK)
        fail_start(st);
    s->base = SMAP_HEAP_BASE;
    s->heap_size = seg.size;
    s->pages = seg.pages;
    s->page_size = seg.page_size;
    util_info("heap %zu MiB at %p on %s pages, populated in %.3f s%s%s", seg.size >> 20, (void *)s->base,
              smap_pages_name(seg.pages), seg.populate_s, *why ? "; best pages not used: " : "", why);

    int fds[SMAP_MAX_LOCAL_RANKS];
    boot_seg_desc_t descs[SMAP_MAX_LOCAL_RANKS];
    boot_seg_desc_t own = {seg.size, seg.pages, seg.page_size};
    if (pl->local_size > 1) {
        st = boot_node_exchange(o.JOB_ID, o.JOB_TOKEN, pl, seg.fd, &own, o.BOOT_TIMEOUT, fds, descs);
        if (st != BOBCAT_OK)
            fail_start(st);
    } else {
        fds[0] = dup(seg.fd);
        descs[0] = own;
    }
    close(seg.fd); /* the mappings keep the memory; no descriptor of the heap stays open */
    for (int r = 0; r < pl->local_size; r++) {
        void *at = (void *)(s->base | ((uintptr_t)(r + 1) << SMAP_SLOT_SHIFT));
        if (st == BOBCAT_OK)
            st = sys_segment_map(fds[r], at, descs[r].heap_size);
        s->window_size[r] = descs[r].heap_size;
        close(fds[r]);
    }
    if (st != BOBCAT_OK)
        fail_start(st);
    s->windows_mapped = 1;
    s->active = 1;
    if (symm) {
        smartmap_shmem_set_heap(s->base, symm);
        if ((st = smartmap_shmem_share_static(o.JOB_ID, o.JOB_TOKEN, pl, o.BOOT_TIMEOUT)) != BOBCAT_OK)
            fail_start(st);
    }
    if ((st = smartmap_alloc_init((void *)(s->base + symm), s->heap_size - symm, o.HEAP)) != BOBCAT_OK)
        fail_start(st);
    pthread_atfork(NULL, NULL, atfork_child);
    if (pl->local_rank == 0) {
        report_node(s, descs, seg.populate_s, why);
    }
}
