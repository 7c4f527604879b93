/* np_heap: a non-MPI program under yod. Checks the SMARTMAP calls work from the first call without
 * MPI, that malloc is thread-safe in the segment (cross-thread frees included), that fork() gives
 * the child a private heap and leaves the parent's intact, and (with "exhaust") that running out
 * of segment returns NULL/ENOMEM without crashing; that blocks are 16-byte aligned, as glibc's are. Usage: np_heap <expected local size, 0: any> [exhaust] */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bobcat/smartmap.h>
#include "mp_util.h"

#define NTHREADS 4 /* each churns past BOBCAT_THREAD_HEAP: a 32 MiB block of the heap each */
#define NOPS 20000
#define SLOTS 256

static void *_Atomic shared_slots[SLOTS];

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    for (int i = 0; i < NOPS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 8) % 5000 + 1;
        char *p = malloc(n);
        if (!p || !smap_is_shared(p)) {
            fprintf(stderr, "FAIL: thread allocation %p outside the segment\n", (void *)p);
            return (void *)1;
        }
        p[0] = p[n - 1] = 'x';
        /* Swap through a shared slot so blocks are freed by other threads than their allocator. */
        void *old = __atomic_exchange_n(&shared_slots[seed % SLOTS], p, __ATOMIC_ACQ_REL);
        free(old);
    }
    return NULL;
}

/* glibc's guarantee, which programs rely on (MPICH 4.0.2's MPI_Win_allocate frees a 16-aligned copy
 * of a 1-byte window's base): every malloc/calloc/realloc block is aligned to
 * alignof(max_align_t) = 16, whatever its size. Many blocks per size, so a size class whose blocks
 * are only 8-aligned shows up. */
static void alignment(void)
{
    enum { PER = 8 };
    for (size_t n = 0; n <= 1100; n++) {
        void *b[3 * PER];
        for (int k = 0; k < PER; k++) {
            b[k] = malloc(n);
            b[PER + k] = calloc(1, n);
            b[2 * PER + k] = realloc(malloc(1), n ? n : 1);
        }
        for (int k = 0; k < 3 * PER; k++) {
            CHECK(b[k] && ((uintptr_t)b[k] & 15) == 0, "%s(%zu) = %p is not 16-byte aligned",
                  k < PER ? "malloc" : k < 2 * PER ? "calloc" : "realloc", n, b[k]);
            if (b[k] && ((uintptr_t)b[k] & 15))
                return;
        }
        for (int k = 0; k < 3 * PER; k++)
            free(b[k]);
    }
}

static void exhaust(void)
{
    size_t got = 0;
    void *head = NULL;
    for (;;) {
        void **p = malloc(1 << 20);
        if (!p)
            break;
        *p = head;
        head = p;
        got += 1 << 20;
    }
    CHECK(errno == ENOMEM, "errno %d after exhaustion", errno);
    CHECK(malloc((size_t)1 << 40) == NULL, "a 1 TiB malloc succeeded");
    size_t heap = 0;
    smap_segment_info(NULL, &heap);
    CHECK(got > heap / 2 && got <= heap, "only %zu of %zu heap bytes were allocatable", got, heap);
    while (head) {
        void *next = *(void **)head;
        free(head);
        head = next;
    }
    char *again = malloc(1 << 20);
    CHECK(again && smap_is_shared(again), "cannot allocate again after freeing");
    free(again);
}

int main(int argc, char **argv)
{
    int expect = argc > 1 ? atoi(argv[1]) : 1;
    CHECK(expect == 0 || smap_local_size() == expect, "local size %d, expected %d", smap_local_size(), expect);
    int me = smap_local_rank();
    size_t page, heap;
    CHECK(smap_segment_info(&page, &heap) != SMAP_PAGES_NONE, "no segment");
    char *buf = malloc(1 << 20);
    CHECK(smap_is_shared(buf), "malloc outside the segment before any MPI");
    strcpy(buf, "parent");
    char *alias = smap_remote_address(me, buf);
    CHECK(alias && !strcmp(alias, "parent"), "own window");
    for (int r = 0; r < smap_local_size(); r++) {
        volatile char *w = smap_remote_address(r, buf);
        CHECK(w != NULL, "window of local rank %d", r);
        if (w)
            (void)*w; /* mapped: this must not fault */
    }

    alignment();

    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, churn, (void *)i);
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        CHECK(ret == NULL, "thread %d failed", i);
    }
    for (int i = 0; i < SLOTS; i++)
        free(shared_slots[i]);

    pid_t pid = fork();
    if (pid == 0) {
        /* The child is not a rank: its heap is a private copy. */
        int bad = smap_is_shared(buf) || smap_local_size() != 1 || strcmp(buf, "parent");
        char *mine = malloc(1 << 16);
        strcpy(buf, "child");
        bad |= mine == NULL;
        _exit(bad);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "forked child failed (status %d)", st);
    CHECK(!strcmp(buf, "parent"), "the child's write reached the parent's heap: '%s'", buf);

    if (argc > 2 && !strcmp(argv[2], "exhaust"))
        exhaust();
    free(buf);
    printf("np_heap: local rank %d of %d: %s\n", me, smap_local_size(), mp_failures ? "FAILED" : "ok");
    return mp_failures ? 1 : 0;
}
