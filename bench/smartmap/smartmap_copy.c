/* smartmap-copy: copying out of a peer's heap through its SMARTMAP window against a local memcpy
 * of the same size, in one run, interleaved (remote, local, remote, ...). Rank 1 owns the source
 * it rewrites before every sample, so the remote copy pulls lines from the other core as single-
 * copy MPI will; the local copy reads a buffer rank 0 itself just wrote. Run under yod -np 2.
 * Usage: smartmap-copy [--reps 200] ; output JSON lines (contracts.md section 3), medians. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, reps = 200;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && !strcmp(argv[1], "--reps"))
        reps = atoi(argv[2]);
    if (size != 2 || smap_local_size() != 2 || reps <= 0) {
        if (rank == 0)
            fprintf(stderr, "smartmap-copy: run with yod -VN2 -np 2 (two ranks on one node)\n");
        MPI_Finalize();
        return 2;
    }
    static const size_t sizes[] = {64 << 10, 1 << 20, 4 << 20};
    const size_t max = 4 << 20;
    char *src = malloc(max), *dst = malloc(max);
    memset(src, rank, max);
    memset(dst, 0, max);
    char *peer_src;
    MPI_Sendrecv(&src, sizeof src, MPI_BYTE, 1 - rank, 0, &peer_src, sizeof peer_src, MPI_BYTE, 1 - rank, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const char *remote = smap_remote_address(1 - smap_local_rank(), peer_src);
    double *t_remote = malloc(sizeof(double) * (size_t)reps), *t_local = malloc(sizeof(double) * (size_t)reps);
    int valid = remote != NULL;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        for (int r = 0; r < reps; r++) {
            /* Rank 1 dirties its source, rank 0 its own; then rank 0 times one copy of each. */
            memset(src, (rank + r) & 0x7f, n);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                memcpy(dst, remote, n);
                double t1 = MPI_Wtime();
                valid &= dst[n - 1] == ((1 + r) & 0x7f);
                memset(src, r & 0x7f, n);
                double t2 = MPI_Wtime();
                memcpy(dst, src, n);
                double t3 = MPI_Wtime();
                t_remote[r] = t1 - t0;
                t_local[r] = t3 - t2;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            qsort(t_remote, (size_t)reps, sizeof(double), cmp);
            qsort(t_local, (size_t)reps, sizeof(double), cmp);
            double br = (double)n / t_remote[reps / 2] / 1e9, bl = (double)n / t_local[reps / 2] / 1e9;
            printf("{\"bench\": \"smartmap-copy\", \"metric\": \"remote_copy\", \"value\": %.3f, \"unit\": \"GB/s\", "
                   "\"better\": \"higher\", \"params\": {\"bytes\": %zu, \"reps\": %d}}\n", br, n, reps);
            printf("{\"bench\": \"smartmap-copy\", \"metric\": \"local_memcpy\", \"value\": %.3f, \"unit\": \"GB/s\", "
                   "\"better\": \"higher\", \"params\": {\"bytes\": %zu, \"reps\": %d}}\n", bl, n, reps);
            printf("{\"bench\": \"smartmap-copy\", \"metric\": \"remote_over_local\", \"value\": %.3f, \"unit\": \"ratio\", "
                   "\"better\": \"higher\", \"params\": {\"bytes\": %zu, \"reps\": %d}}\n", br / bl, n, reps);
        }
    }
    if (rank == 0)
        printf("{\"bench\": \"smartmap-copy\", \"done\": true, \"valid\": %s, \"wall_s\": 0}\n", valid ? "true" : "false");
    free(t_remote);
    free(t_local);
    MPI_Finalize();
    return valid || rank ? 0 : 1;
}
