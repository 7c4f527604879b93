/* ompi_split_threads: Open MPI 4.1 hangs when threads split the communicators they make, without bobcat.
 *
 * MPICH's threads/comm/comm_create_group_threads2 in 60 lines: 4 threads per rank, each making
 * communicators from MPI_COMM_WORLD with MPI_Comm_create_group (its thread number as the tag), a
 * barrier on each, then freeing it, argv[2] times (default 100). With argv[1] = 1 each thread also
 * splits every communicator it made twice, right after making it, as bobcat's layer does for a
 * communicator that spans nodes (its node communicator: by halves of WORLD; its leaders': the even
 * WORLD ranks, MPI_COMM_NULL elsewhere). Every split is collective over a communicator that only
 * one thread of each rank uses, so this is correct MPI at MPI_THREAD_MULTIPLE. With argv[1] = 2
 * the same two communicators are made instead with MPI_Comm_create_group from a copy of WORLD
 * made before the threads start (the program's own kind of call, from another parent), each with
 * a tag of its own (thread, iteration, which). Stop 54, 4 ranks, 20 iterations: bare Open MPI
 * 4.1.4 (Debian 12's) hung with the splits in 3 of 3 runs (60 s limit; every thread of a rank in
 * ompi_comm_nextcid under PMPI_Comm_split) and ran without them in 1 s; MPICH 4.0.2 ran both
 * (32 s and 9 s). Stop 55: mode 2 hung bare Open MPI in 5 of 5 runs (and ran in 0.4 s with one
 * thread). docs/mpi.md, "Threads": why the layer makes no communicators of its own after MPI_Init
 * at MULTIPLE on Open MPI, and runs those communicators' leaders' phases over point-to-point.
 *
 *   mpicc.openmpi -O1 ompi_split_threads.c -o ompi_split_threads -lpthread
 *   timeout 60 mpirun.openmpi --oversubscribe -np 4 ./ompi_split_threads 1 20   # 124: hung
 *   timeout 60 mpirun.openmpi --oversubscribe -np 4 ./ompi_split_threads 2 20   # 124: hung
 *   timeout 60 mpirun.openmpi --oversubscribe -np 4 ./ompi_split_threads 0 20   # 0 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
static int iters = 100;

static int wrank, wsize, splits;
static MPI_Group world_group;
static MPI_Comm world_copy;
static __thread int thread_no, step; /* mode 2's tags: the same on every rank for one communicator */

/* Mode 2: comm's ranks of my node (by halves of WORLD) and its even WORLD ranks, as groups of
 * world_copy, made from it with MPI_Comm_create_group. */
static void create_two(MPI_Comm comm, MPI_Comm *node, MPI_Comm *leaders)
{
    MPI_Group g, wg, ng, lg;
    int n, nn = 0, nl = 0;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(world_copy, &wg);
    MPI_Comm_size(comm, &n);
    int *idx = malloc(4 * (size_t)n * sizeof(int)), *wr = idx + n, *nr = wr + n, *lr = nr + n;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_Group_translate_ranks(g, n, idx, wg, wr);
    for (int i = 0; i < n; i++) {
        if (wr[i] / 2 == wrank / 2)
            nr[nn++] = wr[i];
        if (wr[i] % 2 == 0)
            lr[nl++] = wr[i];
    }
    MPI_Group_incl(wg, nn, nr, &ng);
    MPI_Group_incl(wg, nl, lr, &lg);
    int tag = (thread_no * 100000 + step) * 2;
    MPI_Comm_create_group(world_copy, ng, tag, node);
    *leaders = MPI_COMM_NULL;
    if (wrank % 2 == 0)
        MPI_Comm_create_group(world_copy, lg, tag + 1, leaders);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    MPI_Group_free(&lg);
    free(idx);
}

static void split_and_free(MPI_Comm comm)
{
    if (!splits)
        return;
    MPI_Comm node, leaders;
    int me;
    MPI_Comm_rank(comm, &me);
    if (splits == 2) {
        create_two(comm, &node, &leaders);
    } else {
        MPI_Comm_split(comm, wrank / 2, me, &node);
        MPI_Comm_split(comm, wrank % 2 == 0 ? 0 : MPI_UNDEFINED, me, &leaders);
    }
    MPI_Comm_free(&node);
    if (leaders != MPI_COMM_NULL)
        MPI_Comm_free(&leaders);
}

static void *work(void *arg)
{
    int tag = *(int *)arg, range[1][3] = {{0, wsize / 2, 1}};
    thread_no = tag;
    for (int i = 0; i < iters; i++) {
        MPI_Group half;
        MPI_Comm comm;
        MPI_Group_range_incl(world_group, 1, range, &half);
        if (wrank <= wsize / 2) {
            MPI_Comm_create_group(MPI_COMM_WORLD, half, tag, &comm);
            step = 2 * i;
            split_and_free(comm);
            MPI_Barrier(comm);
            MPI_Comm_free(&comm);
        }
        MPI_Group_free(&half);
        MPI_Comm_create_group(MPI_COMM_WORLD, world_group, tag, &comm);
        step = 2 * i + 1;
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
    splits = argc > 1 ? atoi(argv[1]) : 0;
    if (argc > 2)
        iters = atoi(argv[2]);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_dup(MPI_COMM_WORLD, &world_copy);
    for (int i = 0; i < THREADS; i++) {
        ids[i] = i;
        pthread_create(&th[i], NULL, work, &ids[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&world_copy);
    if (wrank == 0)
        printf("ompi_split_threads: %d ranks, %d threads, hidden communicators %s: done\n", wsize, THREADS,
               splits == 2 ? "by create_group" : splits ? "by split" : "off");
    MPI_Finalize();
    return 0;
}
