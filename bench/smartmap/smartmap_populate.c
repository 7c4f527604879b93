/* smartmap-populate: how fast a heap segment is populated on each page kind, and how many page
 * faults touching it costs afterwards (Catamount's promise: none). The kinds are interleaved
 * (huge, thp, small, huge, ...) so that the machine's placement drift hits them alike.
 * Usage: smartmap-populate [--size 512M] [--reps 5] [--kinds huge,thp,small]
 * Output: JSON lines (docs/design/contracts.md section 3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../src/sys/sys.h"

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv)
{
    size_t size = (size_t)512 << 20;
    int reps = 5;
    char kinds_arg[64] = "huge,thp,small";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc && util_parse_size(argv[i + 1], &size) == BOBCAT_OK)
            i++;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc && (reps = atoi(argv[i + 1])) > 0)
            i++;
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc)
            snprintf(kinds_arg, sizeof kinds_arg, "%s", argv[++i]);
        else {
            fprintf(stderr, "usage: smartmap-populate [--size 512M] [--reps N] [--kinds huge,thp,small]\n");
            return 2;
        }
    }
    const char *kinds[3];
    int nk = 0;
    for (char *tok = strtok(kinds_arg, ","); tok && nk < 3; tok = strtok(NULL, ","))
        kinds[nk++] = tok;
    void *at = (void *)(SMAP_LAYOUT_TOP / 2); /* 32 TiB: clear of the heap a preloaded libbobcat may have */
    long page = sysconf(_SC_PAGESIZE);
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < nk; k++) {
            sys_segment_t seg;
            const char *why = NULL;
            util_word_t policy;
            if (util_option_word("PAGES", kinds[k], &policy) != BOBCAT_OK) {
                fprintf(stderr, "smartmap-populate: --kinds takes huge, thp, small (BOBCAT_PAGES), not '%s'\n", kinds[k]);
                return 2;
            }
            if (sys_segment_create(at, size, policy, SIZE_MAX, &seg, &why) != BOBCAT_OK) {
                printf("{\"bench\": \"smartmap-populate\", \"metric\": \"unavailable\", \"value\": 0, \"unit\": \"\", "
                       "\"better\": \"higher\", \"params\": {\"pages\": \"%s\", \"rep\": %d}}\n", kinds[k], rep);
                continue;
            }
            long f0 = minor_faults();
            for (size_t off = 0; off < seg.size; off += (size_t)page)
                ((volatile char *)at)[off] = 1;
            long faults = minor_faults() - f0;
            printf("{\"bench\": \"smartmap-populate\", \"metric\": \"populate_rate\", \"value\": %.3f, \"unit\": \"GB/s\", "
                   "\"better\": \"higher\", \"params\": {\"pages\": \"%s\", \"bytes\": %zu, \"rep\": %d}}\n",
                   (double)seg.size / seg.populate_s / 1e9, smap_pages_name(seg.pages), seg.size, rep);
            printf("{\"bench\": \"smartmap-populate\", \"metric\": \"faults_after_start\", \"value\": %ld, \"unit\": "
                   "\"faults\", \"better\": \"lower\", \"params\": {\"pages\": \"%s\", \"bytes\": %zu, \"rep\": %d}}\n",
                   faults, smap_pages_name(seg.pages), seg.size, rep);
            fflush(stdout);
            munmap(at, seg.size);
            close(seg.fd);
        }
    }
    printf("{\"bench\": \"smartmap-populate\", \"done\": true, \"valid\": true, \"wall_s\": 0}\n");
    return 0;
}
