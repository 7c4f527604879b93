/* ompi_split_threads: Open MPI 4.1 hangs when threads split the communicators they make, without bobcat.
 *
 * MPICH's threads/comm/comm_create_group_threads2 in 60 lines: 4 threads per rank, each making
 * communicators from MPI_COMM_WORLD with MPI_Comm_create_group (its thread number as the tag), a
 * barrier on each, then freeing it, argv[2] times (default 100). With argv[1] = 1 each thread also
 * splits every communicator it made twice, right after making it, as bobcat's layer does for a
 * communicator that spans nodes (its node communicator: by halves of WORLD; its leaders': the even
 * WORLD ranks, MPI_COMM_NULL elsewhere). Every split is collective over a communicator that only
 * one thread of each rank uses, so this is correct MPI at MPI_THREAD_MULTIPLE. Stop 54, 4 ranks,
 * 20 iterations: bare Open MPI 4.1.4 (Debian 12's) hung with the splits in 3 of 3 runs (60 s
 * limit; every thread of a rank in ompi_comm_nextcid under PMPI_Comm_split) and ran without them
 * in 1 s; MPICH 4.0.2 ran both (32 s and 9 s). docs/mpi.md, "Threads": why the layer makes no
 * communicators of its own after MPI_Init at MULTIPLE on Open MPI.
 *
 *   mpicc.openmpi -O1 ompi_split_threads.c -o ompi_split_threads -lpthread
 *   timeout 60 mpirun.openmpi --oversubscribe -np 4 ./ompi_split_threads 1 20   # 124: hung
 *   timeout 60 mpirun.openmpi --oversubscribe -np 4 ./ompi_split_threads 0 20   # 0 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
static int iters = 100;

static int wrank, wsize, splits;
static MPI_Group world_group;

static void split_and_free(MPI_Comm comm)
{
    if (!splits)
        return;
    MPI_Comm node, leaders;
    int me;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_split(comm, wrank / 2, me, &node);
    MPI_Comm_split(comm, wrank % 2 == 0 ? 0 : MPI_UNDEFINED, me, &leaders);
    MPI_Comm_free(&node);
    if (leaders != MPI_COMM_NULL)
        MPI_Comm_free(&leaders);
}

static void *work(void *arg)
{
    int tag = *(int *)arg, range[1][3] = {{0, wsize / 2, 1}};
    for (int i = 0; i < iters; i++) {
        MPI_Group half;
        MPI_Comm comm;
        MPI_Group_range_incl(world_group, 1, range, &half);
        if (wrank <= wsize / 2) {
            MPI_Comm_create_group(MPI_COMM_WORLD, half, tag, &comm);
            split_and_free(comm);
            MPI_Barrier(comm);
            MPI_Comm_free(&comm);
        }
        MPI_Group_free(&half);
        MPI_Comm_create_group(MPI_COMM_WORLD, world_group, tag, &comm);
        split_and_free(comm);
        MPI_Barrier(comm);
        MPI_Comm_free(&comm);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, ids[THREADS];
    pthread_t th[THREADS];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "ompi_split_threads: the MPI gives thread level %d, not MULTIPLE\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    splits = argc > 1 && atoi(argv[1]);
    if (argc > 2)
        iters = atoi(argv[2]);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int i = 0; i < THREADS; i++) {
        ids[i] = i;
        pthread_create(&th[i], NULL, work, &ids[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    MPI_Group_free(&world_group);
    if (wrank == 0)
        printf("ompi_split_threads: %d ranks, %d threads, splits %s: done\n", wsize, THREADS, splits ? "on" : "off");
    MPI_Finalize();
    return 0;
}
