/* smartmap-pmdshare: does this kernel share the page tables of hugetlb windows? (issue 8)
 * One process maps the same memfd K times, as K ranks' windows onto one heap would be mapped, at
 * addresses `size`-aligned from 64 GiB up (SMARTMAP's slots), fills each mapping's page tables
 * (MADV_POPULATE_WRITE) and reports the growth of the node's PageTables (/proc/meminfo: page-table
 * pages actually allocated) against its own VmPTE (which counts a shared page once per mapping).
 * Linux shares the PMD page of a hugetlb mapping that covers a whole 1 GiB-aligned GiB with every
 * other such mapping of the same file range: with sharing the node grows by ~0, without by
 * K * 4 KiB per GiB. Prints one JSON line per kind. Usage: smartmap-pmdshare [K] [size MiB] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4U
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static long kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = atol(line + n + 1);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

static int one(const char *kind, int k, size_t size)
{
    const uintptr_t G = (uintptr_t)1 << 30, base = 64 * G;
    uintptr_t slot = size > G ? size : G;
    int huge = !strcmp(kind, "huge");
    int fd = memfd_create("pmdshare", MFD_CLOEXEC | (huge ? MFD_HUGETLB : 0));
    if (fd < 0 || ftruncate(fd, (off_t)size)) {
        printf("{\"kind\": \"%s\", \"error\": \"no memfd of %zu bytes\"}\n", kind, size);
        return 1;
    }
    long pt0 = 0, v0 = 0;
    int ok = 1, i;
    for (i = 0; i <= k && ok; i++) {
        void *at = (void *)(base + i * slot);
        void *p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
        ok = p == at;
        if (ok && !huge)
            madvise(p, size, MADV_HUGEPAGE);
        ok = ok && !madvise(p, size, MADV_POPULATE_WRITE);
        if (i == 0) { /* the owner's mapping: pages exist from here on */
            pt0 = kb("/proc/meminfo", "PageTables");
            v0 = kb("/proc/self/status", "VmPTE");
        }
    }
    long dpt = kb("/proc/meminfo", "PageTables") - pt0, dv = kb("/proc/self/status", "VmPTE") - v0;
    for (int j = 0; j < i; j++)
        munmap((void *)(base + j * slot), size);
    close(fd);
    if (!ok) {
        printf("{\"kind\": \"%s\", \"error\": \"mapping %d failed (hugetlb pool or shmem THP unavailable?)\"}\n", kind,
               i - 1);
        return 1;
    }
    printf("{\"kind\": \"%s\", \"windows\": %d, \"size\": %zu, \"node_pagetables_kb\": %ld, \"vmpte_kb\": %ld, "
           "\"unshared_kb\": %ld}\n", kind, k, size, dpt, dv, (long)k * (long)((size + G - 1) / G) * 4);
    return 0;
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 512;
    size_t size = (argc > 2 ? strtoul(argv[2], NULL, 10) : 1024) << 20;
    int bad = one("huge", k, size);
    bad |= one("thp", k, size);
    return bad;
}
