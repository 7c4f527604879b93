/* mp_thread_heap: many threads that each allocate a little fit in a small heap (issue 27). Each
 * of NTHREADS threads keeps ~64 KiB of blocks of mixed sizes live at once, checks that every block
 * lies in the rank's segment (smap_is_shared), and frees some of another thread's blocks. Run
 * under yod with --heap 128M: with a 32 MiB block per allocating thread (the old allocator) the 16
 * threads alone needed 512 MiB. Built twice: as an MPI program (MPI_THREAD_MULTIPLE, so the MPI's
 * own threads allocate too; the threads exchange nothing over MPI) and without MPI.
 * Usage: mp_thread_heap [threads] */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#ifdef MP_WITH_MPI
#include <mpi.h>
#endif
#include <bobcat/smartmap.h>
#include "mp_util.h"

#define MAX_THREADS 64
#define BLOCKS 48

static void *blocks[MAX_THREADS][BLOCKS];
static pthread_barrier_t all_allocated;
static int nthreads = 16;
static int _Atomic outside;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < BLOCKS; i++) {
        size_t n = (size_t)(16 << (i % 9)); /* 16 B .. 4 KiB */
        char *p = malloc(n);
        if (!p || !smap_is_shared(p)) {
            outside++;
            fprintf(stderr, "FAIL thread %d: malloc(%zu) = %p is not in the segment\n", t, n, (void *)p);
            break; /* still meet the others at the barrier */
        }
        memset(p, t, n);
        blocks[t][i] = p;
    }
    void *big = calloc(1, 32 << 10);
    if (!big || !smap_is_shared(big))
        outside++;
    free(big);
    pthread_barrier_wait(&all_allocated);
    /* Free half of the next thread's blocks and half of one's own: cross-thread frees included. */
    int peer = (t + 1) % nthreads;
    for (int i = 0; i < BLOCKS; i += 2)
        free(blocks[peer][i]);
    for (int i = 1; i < BLOCKS; i += 2) {
        char *p = blocks[t][i];
        if (p && p[0] != (char)t)
            outside++;
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
#ifdef MP_WITH_MPI
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
#endif
    if (argc > 1)
        nthreads = atoi(argv[1]);
    CHECK(nthreads > 0 && nthreads <= MAX_THREADS, "threads %d", nthreads);
    CHECK(smap_segment_info(NULL, NULL) != SMAP_PAGES_NONE, "no heap segment: not started by yod?");
    pthread_t tid[MAX_THREADS];
    pthread_barrier_init(&all_allocated, NULL, (unsigned)nthreads);
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        int err = pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t);
        CHECK(err == 0, "pthread_create of thread %d: %s", t, strerror(err));
        if (err)
            break;
        started++;
    }
    if (started < nthreads) /* the others wait at the barrier for ever: report and leave */
        return 1;
    for (int t = 0; t < nthreads; t++)
        pthread_join(tid[t], NULL);
    CHECK(outside == 0, "%d blocks outside the segment or corrupted", outside);
    int rank = 0;
#ifdef MP_WITH_MPI
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bad = mp_failures, all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    mp_failures = all;
    MPI_Finalize();
#endif
    if (rank == 0)
        printf("%s: %d threads each allocating a little\n", mp_failures ? "FAILED" : "OK", nthreads);
    return mp_failures ? 1 : 0;
}
