/* pass_cost: what a pass-through entry point of the layer costs per call (the account, issue 28).
 * Times MPI_Comm_rank, which the layer passes on (through its generated entry point when preloaded),
 * against PMPI_Comm_rank, which goes straight to the MPI, in alternating blocks; prints the
 * medians in ns per call and their difference. Run it under yod with and without the account on
 * (run_pass_cost.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CALLS 2000000
#define BLOCKS 15

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int r = 0, sink = 0;
    double via[BLOCKS], direct[BLOCKS];
    MPI_Init(&argc, &argv);
    for (int b = 0; b < BLOCKS; b++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < CALLS; i++) {
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
            sink += r;
        }
        double t1 = MPI_Wtime();
        for (int i = 0; i < CALLS; i++) {
            PMPI_Comm_rank(MPI_COMM_WORLD, &r);
            sink += r;
        }
        double t2 = MPI_Wtime();
        via[b] = (t1 - t0) / CALLS * 1e9;
        direct[b] = (t2 - t1) / CALLS * 1e9;
    }
    qsort(via, BLOCKS, sizeof(double), cmp);
    qsort(direct, BLOCKS, sizeof(double), cmp);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (r == 0)
        printf("pass_cost: MPI_Comm_rank %.2f ns  PMPI_Comm_rank %.2f ns  pass-through %.2f ns/call (sink %d)\n",
               via[BLOCKS / 2], direct[BLOCKS / 2], via[BLOCKS / 2] - direct[BLOCKS / 2], sink & 1);
    MPI_Finalize();
    return 0;
}
