/* ompi_idup_delay: the Open MPI 4.1 hang behind MPICH's threads/comm/idup_comm_gen, without bobcat.
 *
 * Each of 4 threads per rank leaves 5 MPI_Comm_idups of its own communicator pending, splits that
 * communicator in two halves, optionally waits (argv[1] microseconds, no MPI call), and joins the
 * halves with MPI_Intercomm_create and MPI_Intercomm_merge before it completes the idups. This is
 * correct MPI: MPICH 4.0 runs it in about a second. Bare Open MPI 4.1 (Debian 12's) hangs in it at
 * 4 ranks in every run and at 2 ranks in some, whatever the delay. MPICH's idup_comm_gen does the
 * same with more steps in between and passes bare by their timing: given a 2 ms sleep before its
 * MPI_Intercomm_create, it hangs bare too. Under yod, registering the new communicators is such a
 * delay. docs/mpi.md, "Threads"; Open MPI issue 2025 (MPI_Comm_idup interfering with other
 * collectives).
 *
 *   mpicc.openmpi -O1 ompi_idup_delay.c -o ompi_idup_delay -lpthread
 *   timeout 20 mpirun.openmpi --oversubscribe -np 4 ./ompi_idup_delay     # 124: hung */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define IDUPS 5

static MPI_Comm base[THREADS];
static int delay_us;

static void *work(void *arg)
{
    MPI_Comm comm = base[*(int *)arg], dups[IDUPS], half, inter, merged;
    MPI_Request reqs[IDUPS];
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < IDUPS; i++)
        MPI_Comm_idup(comm, &dups[i], &reqs[i]);
    int low = rank < size / 2;
    MPI_Comm_split(comm, low, rank, &half);
    if (delay_us)
        usleep((useconds_t)delay_us);
    /* leaders: rank 0 of each half, i.e. comm ranks 0 and size/2 */
    MPI_Intercomm_create(half, 0, comm, low ? size / 2 : 0, 99, &inter);
    MPI_Intercomm_merge(inter, !low, &merged);
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    if (sum != size) {
        fprintf(stderr, "merged communicator has %d ranks, not %d\n", sum, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Status st[IDUPS];
    MPI_Waitall(IDUPS, reqs, st);
    for (int i = 0; i < IDUPS; i++)
        MPI_Comm_free(&dups[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size, ids[THREADS];
    pthread_t th[THREADS];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size < 2) {
        if (rank == 0)
            fprintf(stderr, "needs MPI_THREAD_MULTIPLE and at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    delay_us = argc > 1 ? atoi(argv[1]) : 0;
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &base[t]);
    for (int t = 0; t < THREADS; t++) {
        ids[t] = t;
        pthread_create(&th[t], NULL, work, &ids[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&base[t]);
    if (rank == 0)
        printf("done (delay %d us)\n", delay_us);
    MPI_Finalize();
    return 0;
}
