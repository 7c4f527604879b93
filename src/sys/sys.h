/* sys: the one seam to the OS — memfd segments, page kinds, mapping, affinity. */
#ifndef BOBCAT_SYS_H
#define BOBCAT_SYS_H

#include <stddef.h>
#include <bobcat/smartmap.h>
#include "../util/util.h"

#define SYS_HUGE_PAGE ((size_t)2 << 20)

typedef struct {
    int fd;              /* the memfd */
    size_t size;         /* bytes, a multiple of page_size */
    smap_pages_t pages;  /* what it got */
    size_t page_size;
    double populate_s;   /* seconds spent taking the memory (reserving and populating) */
    size_t populated;    /* bytes populated at creation (the rest is reserved: SMALL pages only) */
} sys_segment_t;

/* Create a memfd of `size` bytes under `policy` (BOBCAT_PAGES: UTIL_V_AUTO, _HUGE, _THP, _SMALL), map it at
 * `addr` (MAP_FIXED_NOREPLACE) and take its memory in steps, each checked against the room the
 * node and the cgroup leave (BOBCAT_ERR_NOMEM, logged, when it is not there). Every page is
 * populated, except on 4 KiB pages beyond the first `eager` bytes: those are reserved (fallocate)
 * and left to sys_segment_populate_rest. On failure nothing stays mapped or open; an impossible
 * explicit policy is BOBCAT_ERR_PAGES with the reason logged. `why_p` (may be NULL) receives a
 * static text explaining a fallback under "auto" ("" when none). */
bobcat_status_t sys_segment_create(void *addr, size_t size, util_word_t policy, size_t eager, sys_segment_t *seg_p,
                                   const char **why_p);
/* Populate what sys_segment_create left reserved, from a background thread of idle priority. */
void sys_segment_populate_rest(void *addr, const sys_segment_t *seg);

/* Memory this process may still take: the least of MemAvailable and its memory cgroup's room
 * (v2 memory.max / memory.high over every ancestor, v1's limit); `what` names that bound. */
size_t sys_memory_room(char *what, size_t len);
/* A lock shared by every bobcat rank in the network namespace (an abstract socket name), held
 * while a rank checks the room and takes a step of it; -1 when not had within wait_s seconds. */
int sys_node_lock(double wait_s);
void sys_node_unlock(int fd);
/* The node lock taken for a whole job's node: local rank 0 takes it (fds_p: the lock and the
 * sign that the job holds it), the other local ranks wait up to wait_s for that sign. While the
 * job holds it, sys_segment_create takes its steps without locking each. sys_job_unlock (rank 0,
 * once the node has formed) lets it go; a rank's exit does too. */
void sys_job_lock(const char *job, int node, int local_rank, double wait_s, int fds_p[2]);
void sys_job_unlock(int fds[2]);
int sys_job_holds_lock(void);

/* Map an existing segment fd at `addr`, shared. With `populate` the page tables are filled now
 * (no fault on first access); without, on first access (and kept until unmapped). */
bobcat_status_t sys_segment_map(int fd, void *addr, size_t size, int populate);

/* Free 2 MiB hugetlb pages right now, and the shmem THP setting ("never", "advise", ...). */
size_t sys_hugetlb_free_pages(void);
const char *sys_shmem_thp_mode(void);

/* Bind the calling process to one CPU of core `index % ncores` of its allowed cpuset (hwloc), or keep
 * the binding when the launcher already bound it to a single CPU. *core_p: that CPU's OS index. */
bobcat_status_t sys_bind_core(int index, int *core_p);

#endif
