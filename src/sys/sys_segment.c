/* sys_segment: heap segments as memfds, populated in full at creation, on the best page kind
 * the node allows (hugetlb pool -> shmem THP -> 4 KiB), never silently downgraded when a kind was
 * asked for explicitly. */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21 << 26)
#endif

static int read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return 0;
}

static size_t hugetlb_count(const char *what)
{
    char path[96], buf[64];
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-2048kB/%s", what);
    if (read_small_file(path, buf, sizeof buf))
        return 0;
    return strtoull(buf, NULL, 10);
}

size_t sys_hugetlb_free_pages(void) { return hugetlb_count("free_hugepages"); }

/* Pages of a job that just ended return to the pool a moment after its last close (the kernel
 * frees them asynchronously): wait up to two seconds for them before falling back. */
static int hugetlb_wait_for(size_t pages)
{
    size_t total = hugetlb_count("nr_hugepages");
    for (int i = 0; i < 200; i++) {
        if (sys_hugetlb_free_pages() >= pages)
            return 1;
        if (total < pages)
            return 0;
        usleep(10000);
    }
    return 0;
}

const char *sys_shmem_thp_mode(void)
{
    static const char *const modes[] = {"always", "within_size", "advise", "never", "deny", "force"};
    char buf[256];
    if (read_small_file("/sys/kernel/mm/transparent_hugepage/shmem_enabled", buf, sizeof buf))
        return "unavailable";
    char *open_br = strchr(buf, '['), *close_br = open_br ? strchr(open_br, ']') : NULL;
    if (!close_br)
        return "unknown";
    *close_br = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(open_br + 1, modes[i]))
            return modes[i];
    return "unknown";
}

/* Bytes of the mapping at addr that the kernel maps with PMDs (2 MiB), from /proc/self/smaps. */
static size_t pmd_mapped_bytes(void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f)
        return 0;
    char line[256];
    int in_range = 0;
    size_t kb = 0;
    unsigned long lo, hi;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in_range)
                break;
            in_range = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        } else if (in_range && (sscanf(line, "ShmemPmdMapped: %zu kB", &kb) == 1 ||
                                sscanf(line, "FilePmdMapped: %zu kB", &kb) == 1) && kb) {
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

static void *map_fixed(int fd, void *addr, size_t size)
{
    void *p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (p != addr) { /* kernels before 4.17 treat the flag as a hint */
        munmap(p, size);
        errno = EEXIST;
        return NULL;
    }
    return p;
}

/* The kernel clears a hugetlb page in 4 KiB steps ending at the subpage that faulted (to leave it
 * hot in cache); populating from the start of each 2 MiB page makes it clear them in descending
 * order, which ran at less than half the ascending rate (the foundation benchmark's populate row,
 * README). Faulting each page at its last
 * subpage first gives the ascending order. madvise rather than a store, so that a pool that runs
 * dry returns an error instead of SIGBUS; the full pass that follows reports it. */
static void populate_hugetlb_ascending(char *p, size_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < size; off += SYS_HUGE_PAGE)
        if (madvise(p + off + SYS_HUGE_PAGE - (size_t)pg, (size_t)pg, MADV_POPULATE_WRITE))
            return;
}

/* Memory a rank leaves beside its heap when it takes a step of it: its libraries, stack and the
 * MPI's own buffers are charged to the same limits, after the heap. */
#define ROOM_MARGIN ((size_t)64 << 20)
#define STEP ((size_t)64 << 20)

static int populate_range(char *p, size_t len)
{
    if (!madvise(p, len, MADV_POPULATE_WRITE))
        return 0;
    if (errno != EINVAL)
        return -1;
    long pg = sysconf(_SC_PAGESIZE); /* kernels before 5.14: touch every page by hand */
    for (size_t off = 0; off < len; off += (size_t)pg)
        ((volatile char *)p)[off] = 0;
    return 0;
}

/* Take the heap's memory in steps, each under the node lock after checking that the memory is
 * there (sys_memory_room), so that several ranks and jobs starting at once cannot together ask for
 * more than the node or the job's cgroup holds and leave the OOM killer to choose: the rank that
 * finds no room stops with an error that names the heap, the limit and the knob (issue 27).
 * A 4 KiB-page heap is reserved (fallocate: pages allocated and charged, not yet cleared) and only
 * its first `eager` bytes populated here, where the allocator starts; the rest is populated by a
 * background thread (sys_segment_populate_rest) or on first touch. hugetlb pages come from the
 * pool yod checked, not from these limits: they are populated in full as before. */
static bobcat_status_t take_in_steps(int fd, char *p, size_t size, smap_pages_t kind, size_t eager,
                                     size_t *populated_p)
{
    if (kind == SMAP_PAGES_HUGE) {
        if (populate_range(p, size)) {
            util_error("populating the %zu MiB heap on hugetlb pages failed (%m): the pool ran dry? lower yod --heap / "
                       "BOBCAT_HEAP or reserve more pages (/proc/sys/vm/nr_hugepages)", size >> 20);
            return BOBCAT_ERR_NOMEM;
        }
        *populated_p = size;
        return BOBCAT_OK;
    }
    int reserve = kind == SMAP_PAGES_SMALL && eager < size;
    for (size_t off = 0; off < size; off += STEP) {
        size_t len = size - off < STEP ? size - off : STEP;
        char what[256];
        int lock = sys_job_holds_lock() ? -1 : sys_node_lock(2.0);
        size_t room = sys_memory_room(what, sizeof what);
        if (room < len + ROOM_MARGIN) {
            sys_node_unlock(lock);
            util_error("not enough memory for the %zu MiB heap: %zu MiB of it taken when %s left %zu MiB (another "
                       "job starting at the same time?); the rank stops rather than be killed by the OOM killer. "
                       "Lower the heap (yod --heap / --heap-node, BOBCAT_HEAP) or start fewer jobs at once",
                       size >> 20, off >> 20, what, room >> 20);
            return BOBCAT_ERR_NOMEM;
        }
        int err = reserve ? fallocate(fd, 0, (off_t)off, (off_t)len) : populate_range(p + off, len);
        sys_node_unlock(lock);
        if (err) {
            util_error("%s the %zu MiB heap failed at %zu MiB (%m): not enough memory for it? lower yod --heap / "
                       "BOBCAT_HEAP", reserve ? "reserving" : "populating", size >> 20, off >> 20);
            return BOBCAT_ERR_NOMEM;
        }
    }
    size_t now = reserve ? eager : size;
    if (reserve && populate_range(p, now)) {
        util_error("populating the first %zu MiB of the heap failed: %m", now >> 20);
        return BOBCAT_ERR_NOMEM;
    }
    *populated_p = now;
    return BOBCAT_OK;
}

/* One attempt at a page kind. Returns BOBCAT_OK, or BOBCAT_ERR_PAGES with *why set when the kind
 * is not available here, or another error for real failures (already logged). */
static bobcat_status_t try_kind(void *addr, size_t size, smap_pages_t kind, size_t eager, sys_segment_t *seg,
                                const char **why)
{
    unsigned flags = MFD_CLOEXEC | (kind == SMAP_PAGES_HUGE ? MFD_HUGETLB | MFD_HUGE_2MB : 0);
    if (kind == SMAP_PAGES_HUGE && !hugetlb_wait_for(size / SYS_HUGE_PAGE)) {
        *why = "not enough free hugetlb pages (reserve them: echo N > /proc/sys/vm/nr_hugepages)";
        return BOBCAT_ERR_PAGES;
    }
    if (kind == SMAP_PAGES_THP) {
        const char *mode = sys_shmem_thp_mode();
        if (strcmp(mode, "advise") && strcmp(mode, "always") && strcmp(mode, "within_size") && strcmp(mode, "force")) {
            *why = "shmem THP is disabled (enable: echo advise > /sys/kernel/mm/transparent_hugepage/shmem_enabled)";
            return BOBCAT_ERR_PAGES;
        }
    }
    int fd = memfd_create("bobcat-heap", flags);
    if (fd < 0) {
        if (kind == SMAP_PAGES_HUGE) {
            *why = "memfd_create(MFD_HUGETLB) refused";
            return BOBCAT_ERR_PAGES;
        }
        util_error("memfd_create: %m");
        return BOBCAT_ERR_SYS;
    }
    bobcat_status_t st = BOBCAT_ERR_SYS;
    if (ftruncate(fd, (off_t)size)) {
        util_error("ftruncate of the heap segment to %zu bytes: %m", size);
        goto close_fd;
    }
    void *p = map_fixed(fd, addr, size);
    if (!p) {
        if (kind == SMAP_PAGES_HUGE && errno == ENOMEM) {
            *why = "the hugetlb pool could not reserve the heap";
            st = BOBCAT_ERR_PAGES;
        } else {
            util_error("cannot map the heap at %p (%zu bytes): %m", addr, size);
            st = errno == EEXIST ? BOBCAT_ERR_LAYOUT : BOBCAT_ERR_SYS;
        }
        goto close_fd;
    }
    madvise(p, size, kind == SMAP_PAGES_THP ? MADV_HUGEPAGE : kind == SMAP_PAGES_SMALL ? MADV_NOHUGEPAGE : 0);
    double t0 = util_now();
    if (kind == SMAP_PAGES_HUGE)
        populate_hugetlb_ascending(p, size);
    if ((st = take_in_steps(fd, p, size, kind, eager, &seg->populated)) != BOBCAT_OK)
        goto unmap;
    seg->populate_s = util_now() - t0;
    if (kind == SMAP_PAGES_THP && pmd_mapped_bytes(p) == 0) {
        *why = "the kernel gave 4 KiB pages despite shmem THP (fragmented memory?)";
        st = BOBCAT_ERR_PAGES;
        goto unmap;
    }
    seg->fd = fd;
    seg->size = size;
    seg->pages = kind;
    seg->page_size = kind == SMAP_PAGES_SMALL ? (size_t)sysconf(_SC_PAGESIZE) : SYS_HUGE_PAGE;
    return BOBCAT_OK;
unmap:
    munmap(p, size);
close_fd:
    close(fd);
    return st;
}

bobcat_status_t sys_segment_create(void *addr, size_t size, util_word_t policy, size_t eager, sys_segment_t *seg_p,
                                   const char **why_p)
{
    size = (size + SYS_HUGE_PAGE - 1) & ~(SYS_HUGE_PAGE - 1);
    smap_pages_t order[3];
    int n = 0;
    if (policy == UTIL_V_AUTO) {
        order[n++] = SMAP_PAGES_HUGE;
        order[n++] = SMAP_PAGES_THP;
        order[n++] = SMAP_PAGES_SMALL;
    } else {
        order[n++] = policy == UTIL_V_HUGE ? SMAP_PAGES_HUGE : policy == UTIL_V_THP ? SMAP_PAGES_THP : SMAP_PAGES_SMALL;
    }
    const char *why = "";
    for (int i = 0; i < n; i++) {
        const char *this_why = NULL;
        bobcat_status_t st = try_kind(addr, size, order[i], eager, seg_p, &this_why);
        if (st == BOBCAT_OK) {
            if (why_p)
                *why_p = why;
            return BOBCAT_OK;
        }
        if (st != BOBCAT_ERR_PAGES)
            return st;
        if (n == 1) {
            util_error("--pages=%s cannot be honoured: %s", util_word_name(policy), this_why);
            return st;
        }
        if (!*why)
            why = this_why; /* the reason the best kind was not used */
    }
    return BOBCAT_ERR_PAGES;
}

bobcat_status_t sys_segment_map(int fd, void *addr, size_t size, int populate)
{
    if (!map_fixed(fd, addr, size)) {
        util_error("cannot map a peer's heap at %p (%zu bytes): %m", addr, size);
        return errno == EEXIST ? BOBCAT_ERR_LAYOUT : BOBCAT_ERR_SYS;
    }
    /* Fill the page tables now so that the first access to a peer's memory does not fault. The
     * pages exist already (the owner populated them), so this costs page tables only. */
    if (populate && madvise(addr, size, MADV_POPULATE_WRITE) && errno != EINVAL) {
        util_error("populating a peer's heap window: %m");
        munmap(addr, size);
        return BOBCAT_ERR_SYS;
    }
    return BOBCAT_OK;
}

/* The rest of a reserved 4 KiB-page heap, populated while the program runs by a thread of idle
 * priority (SCHED_IDLE: it runs only when the rank's core has nothing else to do, so it does not
 * take time from the program) in 2 MiB steps from the low end, where the allocator goes next.
 * Pages the program touches first are faulted in by the program (the memory is reserved: a
 * fault clears a page, it cannot fail for want of memory). */
typedef struct {
    char *p;
    size_t len;
} rest_t;

/* madvise without entering libc. UCX (Open MPI's and MPICH's transport) patches libc's madvise in
 * place at MPI_Init (its ucm "bistro" hooks): while it rewrites the code, the page is writable and
 * not executable, and a thread executing madvise then dies of SIGSEGV (SEGV_ACCERR at
 * __GI_madvise+6; 7 of 12 starts of shmem-bench.openmpi under oshrun). The populating thread runs
 * madvise all through MPI_Init, so it makes the system call from bobcat's own code. */
static long raw_madvise(void *addr, size_t len, int advice)
{
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_madvise), "D"(addr), "S"(len), "d"((long)advice)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_madvise;
    register long x0 __asm__("x0") = (long)addr;
    register long x1 __asm__("x1") = (long)len;
    register long x2 __asm__("x2") = advice;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
    return syscall(SYS_madvise, addr, len, advice);
#endif
}

static void *populate_rest(void *arg)
{
    rest_t r = *(rest_t *)arg;
    free(arg);
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    for (size_t off = 0; off < r.len; off += SYS_HUGE_PAGE) {
        size_t len = r.len - off < SYS_HUGE_PAGE ? r.len - off : SYS_HUGE_PAGE;
        if (raw_madvise(r.p + off, len, MADV_POPULATE_WRITE) != 0)   /* -errno on failure */
            break;
    }
    return NULL;
}

void sys_segment_populate_rest(void *addr, const sys_segment_t *seg)
{
    if (seg->populated >= seg->size)
        return;
    rest_t *r = malloc(sizeof *r);
    if (!r)
        return;
    r->p = (char *)addr + seg->populated;
    r->len = seg->size - seg->populated;
    pthread_attr_t attr;
    pthread_t tid;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 << 10);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* no program signal handler runs on it */
    if (pthread_create(&tid, &attr, populate_rest, r))
        free(r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}
