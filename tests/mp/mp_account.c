/* mp_account: calls whose numbers are known, for the account (yod --stats, issue 28): the test
 * (tests/python/test_account.py) checks the merged totals against these counts exactly.
 * Per rank: 5 MPI_Comm_rank (a pass-through), 3 MPI_Alltoallv of 4 ints to every rank (16 * size
 * bytes sent each), 2 MPI_Iallgatherv of one int on MPI_COMM_WORLD + MPI_Wait and 1 on MPI_COMM_SELF
 * (bobcat's since issue 30 on a communicator on one node; the real MPI's on one of a single rank:
 * why.setup-failed), 7 MPI_Allreduce of one double, and a ring of 4 MPI_Send/MPI_Recv of 8 ints
 * (Send/Recv are bobcat's own: rows "p2p send"/"p2p recv"; Alltoallv too since issue 30, and
 * MPI_Ibarrier, which this counted before), and 3 MPI_Put between 2 fences on a window the real MPI
 * keeps for itself (the info key bobcat_rma=mpi: why.forced). That window is made after 70 others
 * of the same kind, still open: the reason is kept for any number of windows. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank = 0, size = 0, bad = 0;
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 5; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *sb = malloc(sizeof(int) * 4 * size), *rb = malloc(sizeof(int) * 4 * size);
    int *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) {
        cnt[r] = 4;
        dsp[r] = 4 * r;
        for (int k = 0; k < 4; k++)
            sb[4 * r + k] = rank * 1000 + r * 10 + k;
    }
    for (int i = 0; i < 3; i++) {
        MPI_Alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 4; k++)
                bad += rb[4 * r + k] != r * 1000 + rank * 10 + k;
    }
    for (int i = 0; i < 2; i++) {
        MPI_Request q;
        int one = rank, *all = malloc(sizeof(int) * size), *ones = malloc(sizeof(int) * size);
        for (int r = 0; r < size; r++)
            ones[r] = 1, dsp[r] = r;
        MPI_Iallgatherv(&one, 1, MPI_INT, all, ones, dsp, MPI_INT, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int r = 0; r < size; r++)
            bad += all[r] != r;
        free(all);
        free(ones);
    }
    {
        MPI_Request q;
        int one = rank, got = -1, c1 = 1, d0 = 0;
        MPI_Iallgatherv(&one, 1, MPI_INT, &got, &c1, &d0, MPI_INT, MPI_COMM_SELF, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        bad += got != rank;
    }
    double x = 1.0, y = 0;
    for (int i = 0; i < 7; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        bad += y != size;
    }
    int v[8] = {0}, w[8];
    for (int i = 0; i < 4; i++) {
        v[0] = rank + i;
        if (rank % 2 == 0) {
            MPI_Send(v, 8, MPI_INT, (rank + 1) % size, i, MPI_COMM_WORLD);
            MPI_Recv(w, 8, MPI_INT, (rank - 1 + size) % size, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(w, 8, MPI_INT, (rank - 1 + size) % size, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(v, 8, MPI_INT, (rank + 1) % size, i, MPI_COMM_WORLD);
        }
        bad += w[0] != (rank - 1 + size) % size + i;
    }
    /* A window the real MPI keeps for itself (the info key bobcat_rma=mpi): 3 MPI_Put of 2 ints
     * between 2 fences, counted on the real MPI's path (row "Put", issue 26). */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "bobcat_rma", "mpi");
    int *wm = calloc(6, sizeof(int)), pv[6], more_mem[70];
    MPI_Win win, more_win[70];
    for (int i = 0; i < 70; i++)
        MPI_Win_create(&more_mem[i], sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &more_win[i]);
    MPI_Win_create(wm, sizeof(int) * 6, sizeof(int), info, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 3; i++) {
        pv[2 * i] = rank;
        pv[2 * i + 1] = i;
        MPI_Put(&pv[2 * i], 2, MPI_INT, (rank + 1) % size, 2 * i, 2, MPI_INT, win);
    }
    MPI_Win_fence(0, win);
    for (int i = 0; i < 3; i++)
        bad += wm[2 * i] != (rank - 1 + size) % size || wm[2 * i + 1] != i;
    MPI_Win_free(&win);
    for (int i = 0; i < 70; i++)
        MPI_Win_free(&more_win[i]);
    free(wm);
    MPI_Info_free(&info);
    if (bad)
        printf("mp_account: rank %d: %d FAILED checks\n", rank, bad);
    else if (rank == 0)
        printf("mp_account: ok\n");
    MPI_Finalize();
    return bad != 0;
}
