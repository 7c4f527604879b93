/* mp_simshm: windows of the real MPI's own shared memory over simulated nodes. Each simulated node
 * makes a shared-memory communicator (MPI_Comm_split_type) and a window on it with
 * MPI_Win_allocate_shared, and the world makes an MPI_Win_allocate window, in rounds; every node's
 * communicators are made alike, so two nodes' communicators get the same id in the real MPI. Each
 * rank writes its rank into its part, and after a fence every rank checks its node mates' and (with
 * MPI_Get) every world rank's. tests/python/test_simshm.py runs it under yod --simulate-nodes and
 * checks that the MPI printed no shared-memory warning (Open MPI names its window files by host,
 * job and communicator id; simulated nodes share the host). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int round = 0; round < 8; round++) {
        MPI_Comm shm;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &shm);
        int sme, sn;
        MPI_Comm_rank(shm, &sme);
        MPI_Comm_size(shm, &sn);
        int *mine, *all;
        MPI_Win ws, ww;
        MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, shm, &mine, &ws);
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &all, &ww);
        MPI_Win_fence(0, ws);
        MPI_Win_fence(0, ww);
        *mine = me * 100 + round;
        *all = me * 100 + round + 1;
        MPI_Win_fence(0, ws);
        MPI_Win_fence(0, ww);
        for (int q = 0; q < sn; q++) {
            MPI_Aint size;
            int du, *at;
            MPI_Win_shared_query(ws, q, &size, &du, &at);
            int want = (me - sme + q) * 100 + round; /* (a simulated node's ranks are consecutive) */
            bad += *at != want;
        }
        int got[64];
        for (int q = 0; q < n && q < 64; q++)
            MPI_Get(&got[q], 1, MPI_INT, q, 0, 1, MPI_INT, ww);
        MPI_Win_fence(0, ww);
        for (int q = 0; q < n && q < 64; q++)
            bad += got[q] != q * 100 + round + 1;
        MPI_Win_free(&ws);
        MPI_Win_free(&ww);
        MPI_Comm_free(&shm);
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mp_simshm: %d ranks: %s\n", n, total ? "FAILED" : "ok");
    MPI_Finalize();
    return total != 0;
}
