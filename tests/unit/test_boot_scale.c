/* test_boot_scale: the node bootstrap past the limits of one message. 300 processes (local ranks
 * of one node, tiny 4 KiB segments, no heap) exchange their segments: more than SCM_MAX_FD (253)
 * descriptors per rank, so the batches are needed; each rank starts with an open-file limit of 256,
 * below the 2 * 300 descriptors local rank 0 must hold, so the server raises it for the bootstrap;
 * as an unprivileged user when run as root, so the kernel's limit on descriptors in flight applies.
 * Every rank checks it got every segment, in rank order, each once, with the right contents. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/boot/boot.h"
#include "../mp/mp_util.h"

#define N 300
#define NOBODY 65534

typedef struct {
    int seen;
    int bad;
} tally_t;

static bobcat_status_t check_seg(void *ctx, int r, int fd, const boot_seg_desc_t *d)
{
    tally_t *t = ctx;
    char text[16] = "", want[16];
    snprintf(want, sizeof want, "seg %d", r);
    if (r != t->seen || pread(fd, text, sizeof text, 0) <= 0 || strcmp(text, want) || d->heap_size != 4096)
        t->bad++;
    t->seen++;
    return BOBCAT_OK;
}

static int rank(int r, const char *job)
{
    if (geteuid() == 0 && setresuid(NOBODY, NOBODY, NOBODY))
        return 10;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 256;
    setrlimit(RLIMIT_NOFILE, &rl);
    int fd = memfd_create("test-heap", MFD_CLOEXEC);
    char text[16];
    snprintf(text, sizeof text, "seg %d", r);
    if (fd < 0 || ftruncate(fd, 4096) || pwrite(fd, text, strlen(text) + 1, 0) < 0)
        return 11;
    boot_place_t pl = {.world_rank = r, .world_size = N, .node = 0, .local_rank = r, .local_size = N};
    boot_seg_desc_t own = {4096, SMAP_PAGES_SMALL, 4096};
    tally_t t = {0, 0};
    bobcat_status_t st = boot_node_exchange_each(job, "00112233445566778899aabbccddeeff", &pl, 21, fd, &own, 60.0,
                                                 check_seg, &t);
    if (st != BOBCAT_OK)
        return 12;
    struct rlimit after;
    getrlimit(RLIMIT_NOFILE, &after);
    if (after.rlim_cur != 256)
        return 13; /* the raised limit must not outlive the bootstrap */
    /* Every received descriptor was closed: the next one is the lowest free. */
    int probe = dup(0);
    close(probe);
    if (probe > fd + 1)
        return 14;
    return t.seen == N && t.bad == 0 ? 0 : 15;
}

int main(void)
{
    char job[17];
    snprintf(job, sizeof job, "5ca1e%011x", (unsigned)getpid());
    pid_t pids[N];
    for (int r = 0; r < N; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            _exit(rank(r, job));
        if (pids[r] < 0) {
            fprintf(stderr, "fork: %s\n", strerror(errno));
            for (int k = 0; k < r; k++)
                kill(pids[k], SIGKILL);
            for (int k = 0; k < r; k++)
                waitpid(pids[k], NULL, 0);
            return 1;
        }
    }
    int codes[16] = {0};
    for (int r = 0; r < N; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        CHECK(code == 0, "local rank %d ended with %d (status 0x%x)", r, code, st);
        codes[code < 16 ? code : 1]++;
    }
    printf("test_boot_scale: %d ranks: %s\n", N, mp_failures ? "FAILED" : "ok");
    return mp_failures != 0;
}
