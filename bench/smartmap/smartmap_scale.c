/* smartmap-scale: one rank of the scaling benchmark (python/bobcat/bench/scaling.py, issue 8).
 * Not an MPI program, so that 64 ranks on 2 cores start in seconds. At main (libbobcat's
 * constructor has made the heap, met the node and mapped the windows) it records the time, its
 * page tables (VmPTE) and its own memory (RssAnon, Pss_Anon/Pss_File from smaps_rollup: everything
 * outside the heap segment and the windows, which are shmem or hugetlb). Local rank 0 also times a
 * first and a second copy of 1 MiB out of local rank 1's heap (the first pays for filling a lazy
 * window's page tables, the second is the steady state). Then it arrives at the harness's counter
 * and waits for the release, so that the node's page tables are sampled with every rank alive.
 * Usage: smartmap-scale <sync file> (8 bytes: arrived count, release flag, as two int32). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bobcat/smartmap.h>

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long field_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static double copy_us(void *dst, const void *src, size_t n)
{
    double t = wall();
    memcpy(dst, src, n);
    __asm__ volatile("" ::: "memory");
    return (wall() - t) * 1e6;
}

int main(int argc, char **argv)
{
    double t_main = wall();
    if (argc != 2) {
        fprintf(stderr, "usage: smartmap-scale <sync file>\n");
        return 2;
    }
    size_t page = 0, heap = 0;
    smap_pages_t pages = smap_segment_info(&page, &heap);
    double first_us = -1, again_us = -1;
    if (smap_local_rank() == 0 && smap_local_size() > 1) {
        const size_t n = 1 << 20;
        char *buf = malloc(n);
        /* Half-way into the peer's heap: populated by its owner, never touched through our window. */
        char *peer = smap_remote_address(1, (void *)(SMAP_HEAP_BASE + heap / 2));
        if (buf && peer) {
            memset(buf, 1, n);
            first_us = copy_us(buf, peer, n);
            again_us = copy_us(buf, peer, n);
        }
        free(buf);
    }
    printf("{\"rank\": %d, \"local\": %d, \"n\": %d, \"t_main\": %.6f, \"pages\": \"%s\", \"heap\": %zu, "
           "\"slot_shift\": %d, \"vmpte_kb\": %ld, \"rss_anon_kb\": %ld, \"rss_file_kb\": %ld, \"pss_anon_kb\": %ld, "
           "\"pss_file_kb\": %ld, \"first_copy_us\": %.1f, \"again_copy_us\": %.1f}\n",
           smap_world_rank(), smap_local_rank(), smap_local_size(), t_main, smap_pages_name(pages), heap,
           smap_slot_shift(), field_kb("/proc/self/status", "VmPTE"), field_kb("/proc/self/status", "RssAnon"),
           field_kb("/proc/self/status", "RssFile"), field_kb("/proc/self/smaps_rollup", "Pss_Anon"),
           field_kb("/proc/self/smaps_rollup", "Pss_File"), first_us, again_us);
    fflush(stdout);
    int fd = open(argv[1], O_RDWR | O_CLOEXEC);
    int32_t *sync = fd >= 0 ? mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (sync == MAP_FAILED) {
        perror("smartmap-scale: sync file");
        return 1;
    }
    close(fd);
    __atomic_fetch_add(&sync[0], 1, __ATOMIC_ACQ_REL);
    double deadline = t_main + 600;
    while (!__atomic_load_n(&sync[1], __ATOMIC_ACQUIRE) && wall() < deadline)
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    return 0;
}
