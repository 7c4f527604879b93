/* shmem_query: what a PE may ask of the library without changing anything — its number and the
 * job's size (with the pre-1.2 names), which PEs and addresses it can reach and the load/store
 * address of one (shmem_ptr), the thread level, the version, and the calls that exist only for old
 * codes (cache management on a coherent machine, profiling control). Only the state is read. */
#include "shmem_internal.h"

#include <time.h>

BOBCAT_EXPORT void shmem_query_thread(int *provided)
{
    if (provided)
        *provided = shi.thread_level;
}

BOBCAT_EXPORT int shmem_my_pe(void) { return shi.initialized ? shi.me : -1; }
BOBCAT_EXPORT int shmem_n_pes(void) { return shi.initialized ? shi.npes : -1; }
BOBCAT_EXPORT int _my_pe(void) { return shmem_my_pe(); }
BOBCAT_EXPORT int _num_pes(void) { return shmem_n_pes(); }
BOBCAT_EXPORT int my_pe(void) { return shmem_my_pe(); }
BOBCAT_EXPORT int num_pes(void) { return shmem_n_pes(); }

BOBCAT_EXPORT int shmem_pe_accessible(int pe) { return shi.initialized && pe >= 0 && pe < shi.npes; }

BOBCAT_EXPORT int shmem_addr_accessible(const void *addr, int pe)
{
    if (!shmem_pe_accessible(pe))
        return 0;
    uintptr_t a = (uintptr_t)addr;
    return a - shi.heap < shi.heap_size || a - shi.data < shi.data_size;
}

BOBCAT_EXPORT void *shmem_ptr(const void *dest, int pe)
{
    if (!shmem_addr_accessible(dest, pe))
        return NULL;
    int region = 0;
    size_t disp = 0;
    return shi_xlate(dest, 1, pe, "shmem_ptr", &region, &disp);
}

BOBCAT_EXPORT void shmem_info_get_version(int *major, int *minor)
{
    if (major)
        *major = SHMEM_MAJOR_VERSION;
    if (minor)
        *minor = SHMEM_MINOR_VERSION;
}

BOBCAT_EXPORT void shmem_info_get_name(char *name)
{
    if (name) {
        strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
        name[SHMEM_MAX_NAME_LEN - 1] = 0;
    }
}

/* Profiling control (OpenSHMEM 1.5 profiling interface): the standard lets an implementation without its own
 * profiling layer ignore the level; tools that interpose on shmem_* (PSHMEM-style) see the call and its
 * arguments, which is what the interface is for. */
BOBCAT_EXPORT void shmem_pcontrol(const int level, ...) { (void)level; }

/* Cache management: the machine is coherent; these exist for old codes. */
BOBCAT_EXPORT void shmem_clear_cache_inv(void) {}
BOBCAT_EXPORT void shmem_set_cache_inv(void) {}
BOBCAT_EXPORT void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
BOBCAT_EXPORT void shmem_set_cache_line_inv(void *dest) { (void)dest; }
BOBCAT_EXPORT void shmem_udcflush(void) {}
BOBCAT_EXPORT void shmem_udcflush_line(void *dest) { (void)dest; }
BOBCAT_EXPORT double shmemx_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
