/* smartmap_shmem: the two pieces of symmetric memory an OpenSHMEM program needs from the memory
 * model, set up at load time when the program is one (it links libbobcat-shmem-<mpi>.so, whose
 * shmem_init the dynamic loader already sees when our constructor runs):
 *
 *   - the symmetric heap: SHMEM_SYMMETRIC_SIZE bytes (rounded up to the allocator's 32 MiB block)
 *     at the start of the rank's segment, outside malloc's arena, so it sits at the same offset in
 *     every rank's segment, on the segment's pages, and is reachable through the windows;
 *   - the executable's static data (.data and .bss): copied into a memfd that is mapped over it in
 *     place, exchanged with the node's ranks over the bootstrap (its own socket name), and the
 *     peers' copies mapped here. smap_remote_address() translates addresses in that range too.
 *
 * Other programs get neither (no memory is reserved, nothing is remapped). */
#include "smartmap.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHMEM_DEFAULT_SYMMETRIC ((size_t)128 << 20)
#define SHMEM_HEAP_ALIGN ((size_t)32 << 20) /* mimalloc's arena block: the arena starts aligned */

static struct {
    uintptr_t heap;               /* symmetric heap: [heap, heap + heap_size) in our own segment */
    size_t heap_size;
    uintptr_t data, data_size;    /* executable's writable data, page aligned, shared */
    uintptr_t peer[SMAP_MAX_LOCAL_RANKS]; /* where local rank r's copy is mapped here (0: none) */
    int nlocal;
} sh;

/* The program is an OpenSHMEM program of ours when shmem_init resolves into libbobcat-shmem. */
static int is_bobcat_shmem_program(void)
{
    void *f = dlsym(RTLD_DEFAULT, "shmem_init");
    Dl_info info;
    if (!f || !dladdr(f, &info) || !info.dli_fname)
        return 0;
    return strstr(info.dli_fname, "libbobcat-shmem") != NULL;
}

size_t smartmap_shmem_reserve(void)
{
    if (!is_bobcat_shmem_program())
        return 0;
    size_t want = SHMEM_DEFAULT_SYMMETRIC;
    const char *env = getenv("SHMEM_SYMMETRIC_SIZE");
    if (env && *env && util_parse_size(env, &want) != BOBCAT_OK) {
        util_error("SHMEM_SYMMETRIC_SIZE=%s is not a size (give bytes, or e.g. 64M, 1G)", env);
        return (size_t)-1;
    }
    if (want == 0)
        want = 1;
    return (want + SHMEM_HEAP_ALIGN - 1) & ~(SHMEM_HEAP_ALIGN - 1);
}

void smartmap_shmem_set_heap(uintptr_t base, size_t size)
{
    sh.heap = base;
    sh.heap_size = size;
}

BOBCAT_EXPORT void *smap_symmetric_heap(size_t *size_p)
{
    if (size_p)
        *size_p = sh.heap_size;
    return sh.heap_size ? (void *)sh.heap : NULL;
}

BOBCAT_EXPORT void *smap_static_data(size_t *size_p)
{
    if (size_p)
        *size_p = sh.data_size;
    return sh.data_size ? (void *)sh.data : NULL;
}

void *smartmap_static_remote(int core, uintptr_t a)
{
    if (a - sh.data >= sh.data_size || core < 0 || core >= sh.nlocal || !sh.peer[core])
        return NULL;
    return (void *)(sh.peer[core] + (a - sh.data));
}

int smartmap_static_contains(uintptr_t a) { return sh.data_size && a - sh.data < sh.data_size; }

/* The main program's writable PT_LOAD minus its RELRO part (read-only after relocation). */
static int find_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t *range = arg, pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = 0, hi = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_W) && !lo) {
            lo = info->dlpi_addr + p->p_vaddr;
            hi = lo + p->p_memsz;
        } else if (p->p_type == PT_GNU_RELRO) {
            relro_end = info->dlpi_addr + p->p_vaddr + p->p_memsz;
        }
    }
    if (lo) {
        /* ld.so write-protects RELRO rounded down to pages: the page holding its end stays writable. */
        if (relro_end > lo)
            lo = relro_end;
        range[0] = lo & ~(pg - 1);
        range[1] = (hi + pg - 1) & ~(pg - 1);
    }
    return 1; /* the first object is the executable */
}

/* fork(): the child gets private copies, as with the heap (smartmap.c). */
static void atfork_child(void)
{
    if (sh.data_size) {
        void *copy = mmap(NULL, sh.data_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED) {
            util_error("fork: no memory for the child's copy of static data: %m");
            _exit(127);
        }
        memcpy(copy, (void *)sh.data, sh.data_size);
        if (mremap(copy, sh.data_size, sh.data_size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)sh.data) == MAP_FAILED) {
            util_error("fork: cannot move the child's static data in place: %m");
            _exit(127);
        }
        for (int r = 0; r < sh.nlocal; r++)
            if (sh.peer[r] && sh.peer[r] != sh.data)
                munmap((void *)sh.peer[r], sh.data_size);
    }
    memset(&sh, 0, sizeof sh);
}

bobcat_status_t smartmap_shmem_share_static(const char *job_id, const char *token, const boot_place_t *pl,
                                            double timeout_s)
{
    uintptr_t range[2] = {0, 0};
    dl_iterate_phdr(find_data, range);
    if (range[1] <= range[0])
        return BOBCAT_OK; /* nothing writable: nothing to share */
    size_t size = range[1] - range[0];
    int fd = memfd_create("bobcat-static", MFD_CLOEXEC);
    if (fd < 0) {
        util_error("memfd_create for the static data: %m");
        return BOBCAT_ERR_SYS;
    }
    /* Copy the data as it is now (relocated, initialised), then map the copy over it: nothing else
     * runs in this process yet (we are its first constructor). */
    if (ftruncate(fd, (off_t)size) || pwrite(fd, (void *)range[0], size, 0) != (ssize_t)size) {
        util_error("copying %zu bytes of static data into a memfd: %m", size);
        close(fd);
        return BOBCAT_ERR_SYS;
    }
    if (mmap((void *)range[0], size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) ==
        MAP_FAILED) {
        util_error("mapping the shared static data in place: %m");
        close(fd);
        return BOBCAT_ERR_SYS;
    }
    int fds[SMAP_MAX_LOCAL_RANKS];
    boot_seg_desc_t descs[SMAP_MAX_LOCAL_RANKS];
    boot_seg_desc_t own = {size, SMAP_PAGES_SMALL, (size_t)sysconf(_SC_PAGESIZE)};
    bobcat_status_t st = BOBCAT_OK;
    if (pl->local_size > 1) {
        char id[96];
        snprintf(id, sizeof id, "%s-static", job_id); /* a socket of its own: the heap's is closed */
        st = boot_node_exchange(id, token, pl, fd, &own, timeout_s, fds, descs);
    } else {
        fds[0] = dup(fd);
        descs[0] = own;
    }
    close(fd);
    if (st != BOBCAT_OK)
        return st;
    sh.data = range[0];
    sh.data_size = size;
    sh.nlocal = pl->local_size;
    for (int r = 0; r < pl->local_size; r++) {
        if (r == pl->local_rank) {
            sh.peer[r] = range[0];
        } else if (descs[r].heap_size == size) { /* another program (MPMD) has other data: not mapped */
            void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fds[r], 0);
            if (p == MAP_FAILED) {
                util_error("mapping local rank %d's static data: %m", r);
                st = BOBCAT_ERR_SYS;
            } else {
                sh.peer[r] = (uintptr_t)p;
            }
        }
        close(fds[r]);
    }
    pthread_atfork(NULL, NULL, atfork_child);
    return st;
}
