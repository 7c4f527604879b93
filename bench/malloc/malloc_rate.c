/* malloc_rate: malloc/free throughput, 1..N threads, one block size (issue 27: what the per-thread
 * heap policy costs). Each thread keeps a ring of --live blocks and, per operation, frees the
 * oldest and allocates a new one (its first and last byte written), so the allocator sees steady
 * churn with a small live set. No MPI: run it bare, or under yod (libbobcat preloaded) to measure
 * the heap segment's allocator. Prints one JSON line:
 *   {"threads":T,"size":S,"ops":O,"live":L,"seconds":s,"mops":M}
 * where mops is all threads' operations (one malloc + one free each) per microsecond of the
 * slowest thread. Usage: malloc-rate [--threads T] [--size S] [--ops O] [--live L] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long nthreads = 1, ops = 1000000, live = 64;
static size_t size = 64;
static pthread_barrier_t start;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    double *elapsed = arg;
    char **ring = calloc((size_t)live, sizeof *ring);
    if (!ring) {
        fprintf(stderr, "malloc-rate: no memory for the ring\n");
        exit(3);
    }
    pthread_barrier_wait(&start);
    double t0 = now();
    for (long i = 0; i < ops; i++) {
        long k = i % live;
        free(ring[k]);
        char *p = malloc(size);
        if (!p) {
            fprintf(stderr, "malloc-rate: malloc(%zu) failed after %ld operations\n", size, i);
            exit(3);
        }
        p[0] = p[size - 1] = (char)i;
        ring[k] = p;
    }
    *elapsed = now() - t0;
    for (long k = 0; k < live; k++)
        free(ring[k]);
    free(ring);
    return NULL;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads"))
            nthreads = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = parse_size(argv[i + 1]);
        else if (!strcmp(argv[i], "--ops"))
            ops = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--live"))
            live = atol(argv[i + 1]);
        else {
            fprintf(stderr, "usage: malloc-rate [--threads T] [--size S] [--ops O] [--live L]\n");
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > 1024 || size < 1 || ops < 1 || live < 1) {
        fprintf(stderr, "malloc-rate: bad argument\n");
        return 2;
    }
    pthread_t tid[1024];
    double elapsed[1024];
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    for (long t = 1; t < nthreads; t++)
        if (pthread_create(&tid[t], NULL, worker, &elapsed[t])) {
            fprintf(stderr, "malloc-rate: cannot start thread %ld\n", t);
            return 3;
        }
    worker(&elapsed[0]);
    double slowest = elapsed[0];
    for (long t = 1; t < nthreads; t++) {
        pthread_join(tid[t], NULL);
        if (elapsed[t] > slowest)
            slowest = elapsed[t];
    }
    printf("{\"threads\":%ld,\"size\":%zu,\"ops\":%ld,\"live\":%ld,\"seconds\":%.6f,\"mops\":%.3f}\n", nthreads, size,
           ops, live, slowest, (double)nthreads * (double)ops / slowest / 1e6);
    return 0;
}
