/* shmem_init: the top of src/shmem — start-up and shutdown of the OpenSHMEM library (shmem_init,
 * shmem_finalize, shmem_global_exit). It sets up the state and calls down into the heap, the teams
 * and the barrier; nothing below calls it.
 *
 * Start-up: the MPI glue starts MPI (or joins the program's) and gives my_pe/n_pes (the MPI world
 * ranks, which yod's plan also numbers). Under yod with libbobcat preloaded, the symmetric heap
 * and the static data are already in shared memory (src/smartmap/smartmap_shmem.c) and every PE
 * of this node is reachable by load/store: the peer table caches each one's base addresses, so a
 * put is an offset and a memcpy. PEs of other nodes (and every PE outside yod) go through MPI RMA
 * windows over the same two regions. */
#include "shmem_internal.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The executable's writable data when libbobcat did not share it (not under yod). */
static int find_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t *range = arg, pg = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_W) && !range[0]) {
            range[0] = info->dlpi_addr + p->p_vaddr;
            range[1] = range[0] + p->p_memsz;
        } else if (p->p_type == PT_GNU_RELRO) {
            relro_end = info->dlpi_addr + p->p_vaddr + p->p_memsz;
        }
    }
    if (range[0]) {
        if (relro_end > range[0])
            range[0] = relro_end;
        range[0] &= ~(pg - 1);
        range[1] = (range[1] + pg - 1) & ~(pg - 1);
    }
    return 1;
}

static size_t env_size(const char *name, size_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end || end == v)
        shi_fatal("shmem_init", "%s=%s is not a size (give bytes, or e.g. 64M, 1G)", name, v);
    return (size_t)(n << shift);
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "off") && strcasecmp(v, "false");
}

static void print_info(void)
{
    printf("bobcat OpenSHMEM %d.%d (%s)\n"
           "  SHMEM_SYMMETRIC_SIZE  bytes of symmetric heap per PE (default 128M; K/M/G suffixes)\n"
           "  SHMEM_DEBUG           print start-up details and warnings on stderr\n"
           "  SHMEM_VERSION         print the library version at start-up\n"
           "  SHMEM_INFO            print this text at start-up\n"
           "  SHMEM_YIELD_SPINS     busy polls before a waiting PE yields its core (default 64 when\n"
           "                        PEs may outnumber cores, else 4096)\n",
           SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, SHMEM_VENDOR_STRING);
    fflush(stdout);
}

static void at_exit(void)
{
    /* A program that returns from main without shmem_finalize still finalizes (and MPI with it). */
    if (shi.initialized && !shi.finalized)
        shmem_finalize();
}

static int start_up(int requested)
{
    if (shi.initialized)
        return shi.thread_level;
    if (shi.finalized)
        shi_fatal("shmem_init", "the library cannot be initialized again after shmem_finalize");
    shi.debug = env_flag("SHMEM_DEBUG");
    int provided = SHMEM_THREAD_SINGLE;
    SHI_TR(shmem_tr_init(requested, &provided, &shi.me, &shi.npes), "shmem_init");
    shi.thread_level = provided;
    if (shi.me == 0 && env_flag("SHMEM_VERSION")) {
        printf("bobcat OpenSHMEM %d.%d (%s)\n", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, SHMEM_VENDOR_STRING);
        fflush(stdout);
    }
    if (shi.me == 0 && env_flag("SHMEM_INFO"))
        print_info();

    /* The two symmetric regions. */
    size_t hs = 0, ds = 0;
    void *heap = smap_symmetric_heap(&hs), *data = smap_static_data(&ds);
    int shared = heap && smap_world_size() == shi.npes && smap_world_rank() == shi.me;
    if (!shared) {
        hs = env_size("SHMEM_SYMMETRIC_SIZE", (size_t)128 << 20);
        hs = (hs + SHI_RESERVED + 4095) & ~(size_t)4095;
        heap = mmap(NULL, hs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (heap == MAP_FAILED)
            shi_fatal("shmem_init", "cannot map a %zu-byte symmetric heap: %m (lower SHMEM_SYMMETRIC_SIZE)", hs);
        data = NULL;
    }
    if (!data) {
        uintptr_t range[2] = {0, 0};
        dl_iterate_phdr(find_data, range);
        data = (void *)range[0];
        ds = range[1] - range[0];
    }
    if (hs <= SHI_RESERVED)
        shi_fatal("shmem_init", "the symmetric heap (%zu bytes) is too small: raise SHMEM_SYMMETRIC_SIZE", hs);
    shi.heap = (uintptr_t)heap;
    shi.heap_size = hs;
    shi.data = (uintptr_t)data;
    shi.data_size = ds;

    /* Who is reachable by load/store, and where their regions are mapped here. */
    shi.peer = calloc((size_t)shi.npes, sizeof *shi.peer);
    if (!shi.peer)
        shi_fatal("shmem_init", "out of memory for the table of %d PEs", shi.npes);
    shi.nlocal = 0;
    for (int pe = 0; pe < shi.npes; pe++) {
        if (pe == shi.me) {
            shi.peer[pe] = (shi_peer_t){shi.heap, shi.data};
        } else if (shared) {
            int core = smap_pe_is_local(pe);
            if (core >= 0) {
                shi.peer[pe].heap = (uintptr_t)smap_remote_address(core, heap);
                shi.peer[pe].data = (uintptr_t)smap_remote_address(core, data);
            }
        }
        if (shi.peer[pe].heap)
            shi.nlocal++;
    }
    shi.all_local = shi.nlocal == shi.npes;
    /* Node of every PE (its node's first PE): yod numbers a node's PEs contiguously. */
    shi.node = malloc(sizeof(int) * (size_t)shi.npes);
    if (!shi.node)
        shi_fatal("shmem_init", "out of memory for the table of %d PEs", shi.npes);
    int first = shi.me;
    while (first > 0 && shi.peer[first - 1].heap)
        first--;
    SHI_TR(shmem_tr_allgather_int(first, shi.node), "shmem_init");
    /* yod leaves ranks unbound exactly when they outnumber the cores. */
    const char *bind = getenv("BOBCAT_BIND");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int crowded = !shared || (bind && !strcmp(bind, "none")) || shi.nlocal > ncpu;
    shi.spin_before_yield = (unsigned)env_size("SHMEM_YIELD_SPINS", crowded ? 64 : 4096);
    if (!shi.spin_before_yield)
        shi.spin_before_yield = 1;
    shmem_tr_tune(shi.spin_before_yield);

    SHI_TR(shmem_tr_windows(heap, hs, data, ds), "shmem_init");
    shi.slots = heap;
    memset(shi.slots, 0, SHI_RESERVED);
    shi_heap_init((char *)heap + SHI_RESERVED, hs - SHI_RESERVED);
    shi.initialized = 1;
    shi_teams_init();
    shi_debug("%d PEs, %d reachable by load/store, heap %p + %zu, static data %p + %zu, %s atomics, yield after %u "
              "spins", shi.npes, shi.nlocal, heap, hs, data, ds, shi.all_local ? "hardware" : "MPI",
              shi.spin_before_yield);
    SHI_TR(shmem_tr_barrier(), "shmem_init"); /* every PE's slots are zeroed before anyone signals into them */
    static int registered;
    if (!registered++)
        atexit(at_exit);
    return provided;
}

BOBCAT_EXPORT void shmem_init(void) { start_up(SHMEM_THREAD_SINGLE); }

BOBCAT_EXPORT int shmem_init_thread(int requested, int *provided)
{
    int p = start_up(requested);
    if (provided)
        *provided = p;
    return 0;
}

BOBCAT_EXPORT void shmem_finalize(void)
{
    if (!shi.initialized || shi.finalized)
        return;
    shi_barrier_all();
    if (shi.debug) {
        unsigned long puts, gets, amos;
        shmem_tr_counts(&puts, &gets, &amos);
        shi_debug("MPI RMA operations issued: %lu puts, %lu gets, %lu atomics", puts, gets, amos);
    }
    SHI_TR(shmem_tr_finalize(), "shmem_finalize");
    shi.finalized = 1;
    shi.initialized = 0;
}

/* Under yod the job's exit status must be `status`, but yod reports any MPI_Abort as a failure
 * (1), and the MPIs carry the abort's code differently (Open MPI's aborting rank exits with it,
 * Hydra kills every rank and its shim first). So the library tells yod itself, with a status line
 * in the form the rank shims use on the same stderr (docs/yod.md), and waits (at most 2 s) until
 * the launcher has read it from the pipe: the abort may end the launcher's relay before it reads
 * the rank's last output. */
static void tell_yod_global_exit(int status)
{
    if (!getenv("BOBCAT_JOB_ID"))
        return;
    char line[96];
    int n = snprintf(line, sizeof line, "@@bobcat@@ global_exit rank=%d status=%d\n", shi.me, status);
    if (n <= 0 || write(STDERR_FILENO, line, (size_t)n) != n)
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int unread = 0;
    while (ioctl(STDERR_FILENO, FIONREAD, &unread) == 0 && unread > 0) { /* fails unless a pipe */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec >= 2)
            break;
        sched_yield();
    }
}

BOBCAT_EXPORT void shmem_global_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    if (shi.initialized) {
        tell_yod_global_exit(status);
        shmem_tr_abort(status);
    }
    _exit(status);
}

BOBCAT_EXPORT void start_pes(int npes) { (void)npes; shmem_init(); }
