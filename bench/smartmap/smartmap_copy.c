/* smartmap-copy: copying out of a peer's heap through its SMARTMAP window against a local memcpy
 * of the same size, in one run. Before every sample rank 1 writes both sources — its own buffer
 * and, through rank 0's window, rank 0's buffer — so both copies start from the same cache state
 * (lines dirty in the other core) and differ only in the address they read through; their order
 * alternates. A third variant copies a buffer rank 0 itself just wrote (hot in its own cache), the
 * best case any local copy gets. Run under yod -np 2.
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
    char *mine_remote = NULL; /* rank 0's source as rank 1 sees it */
    MPI_Bcast(&src, sizeof src, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 1)
        mine_remote = smap_remote_address(0, src);
    char *own = malloc(max);
    double *t[3];
    for (int v = 0; v < 3; v++)
        t[v] = malloc(sizeof(double) * (size_t)reps);
    int valid = remote != NULL && (rank == 0 || mine_remote != NULL);
    static const char *const names[3] = {"remote_copy", "local_copy", "local_hot_copy"};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        for (int r = 0; r < reps; r++) {
            int tag = (1 + r) & 0x7f;
            if (rank == 1) {
                memset(src, tag, n);         /* its own heap */
                memset(mine_remote, tag, n); /* rank 0's heap, through the window */
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                for (int k = 0; k < 2; k++) {
                    int v = (r + k) & 1; /* alternate which copy goes first */
                    const char *from = v == 0 ? remote : src;
                    double t0 = MPI_Wtime();
                    memcpy(dst, from, n);
                    t[v][r] = MPI_Wtime() - t0;
                    valid &= dst[n - 1] == tag;
                }
                memset(own, tag, n);
                double t0 = MPI_Wtime();
                memcpy(dst, own, n);
                t[2][r] = MPI_Wtime() - t0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            double bw[3];
            for (int v = 0; v < 3; v++) {
                qsort(t[v], (size_t)reps, sizeof(double), cmp);
                bw[v] = (double)n / t[v][reps / 2] / 1e9;
                printf("{\"bench\": \"smartmap-copy\", \"metric\": \"%s\", \"value\": %.3f, \"unit\": \"GB/s\", "
                       "\"better\": \"higher\", \"params\": {\"bytes\": %zu, \"reps\": %d}}\n", names[v], bw[v], n, reps);
            }
            printf("{\"bench\": \"smartmap-copy\", \"metric\": \"remote_over_local\", \"value\": %.3f, \"unit\": \"ratio\", "
                   "\"better\": \"higher\", \"params\": {\"bytes\": %zu, \"reps\": %d}}\n", bw[0] / bw[1], n, reps);
        }
    }
    if (rank == 0)
        printf("{\"bench\": \"smartmap-copy\", \"done\": true, \"valid\": %s, \"wall_s\": 0}\n", valid ? "true" : "false");
    for (int v = 0; v < 3; v++)
        free(t[v]);
    free(own);
    MPI_Finalize();
    return valid || rank ? 0 : 1;
}
