/* lang_cost (C side): the same calls as lang_cost.F90's loops, timed the same way. */
#include <mpi.h>

double c_sendrecv(int n)
{
    char sb[8] = "xxxxxxxx", rb[8];
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        MPI_Send(sb, 8, MPI_CHAR, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
        MPI_Recv(rb, 8, MPI_CHAR, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return (MPI_Wtime() - t0) / n / 2 * 1e9;
}

double c_allreduce(int n)
{
    double s = 1, r;
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++)
        MPI_Allreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    return (MPI_Wtime() - t0) / n * 1e9;
}
