/* lang_pp (C): the twin of lang_pp.F90, the same loops and timing, so that a Fortran program's
 * figures under yod can be set beside a C program's (bench/fortran/README.md). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBLK 11

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t)
{
    qsort(t, NBLK, sizeof *t, cmp);
    return t[NBLK / 2];
}

int main(int argc, char **argv)
{
    int rank, sizes[2] = {8, 1048576};
    double t[NBLK];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int other = 1 - rank;
    for (int k = 0; k < 2; k++) {
        int n = sizes[k], reps = n <= 8 ? 2000 : 50;
        char *sb = malloc(n), *rb = malloc(n);
        double *ds = malloc(n), *dr = malloc(n);
        memset(sb, 'x', n);
        for (int i = 0; i < n / 8; i++)
            ds[i] = 1.0;
        for (int b = 0; b <= NBLK; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (rank == 0) {
                    MPI_Send(sb, n, MPI_CHAR, other, 1, MPI_COMM_WORLD);
                    MPI_Recv(rb, n, MPI_CHAR, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rb, n, MPI_CHAR, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(sb, n, MPI_CHAR, other, 1, MPI_COMM_WORLD);
                }
            }
            if (b > 0)
                t[b - 1] = (MPI_Wtime() - t0) / reps / 2 * 1e6;
        }
        if (rank == 0)
            printf("pingpong %d %12.3f\n", n, median(t));
        for (int b = 0; b <= NBLK; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++)
                MPI_Allreduce(ds, dr, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (b > 0)
                t[b - 1] = (MPI_Wtime() - t0) / reps * 1e6;
        }
        if (rank == 0)
            printf("allreduce %d %12.3f\n", n, median(t));
        free(sb), free(rb), free(ds), free(dr);
    }
    MPI_Finalize();
    return 0;
}
