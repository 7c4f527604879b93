/* mp_rma_progress: the real MPI's one-sided progress while a rank waits in bobcat (issue 10).
 *
 * mpi4py's test_rma pattern: the origin (rank 0) starts an access epoch to every other rank, both
 * meet in MPI_Barrier, the origin completes, both meet again; then each target's MPI_Win_test must
 * say its exposure epoch is over. With MPICH the origin's completion is a message the target's
 * MPICH must receive, and a target whose barrier is bobcat's (shared memory) never entered MPICH
 * between the two barriers: Win_test saw nothing. The same with passive target: a lock granted
 * only by the target's progress while the target sits in a bobcat barrier or a bobcat receive.
 * Also: a shared window's MPI_WIN_BASE. Run under yod -tlimit, so a hang fails instead of hanging. */
#include <mpi.h>
#include <string.h>

#include "mp_util.h"

static int rank, size;

/* The other side of a post/start/complete/wait epoch between rank 0 (the origin) and the others
 * (the targets): for rank 0 every other rank, for a target rank 0. */
static MPI_Group epoch_group(MPI_Group wg)
{
    MPI_Group g;
    if (rank != 0) {
        int zero = 0;
        MPI_Group_incl(wg, 1, &zero, &g);
        return g;
    }
    int *others = malloc(sizeof(int) * (size_t)size);
    for (int r = 1; r < size; r++)
        others[r - 1] = r;
    MPI_Group_incl(wg, size - 1, others, &g);
    free(others);
    return g;
}

static void pscw(MPI_Win win, MPI_Group wg, int *mem, int round)
{
    MPI_Group g = epoch_group(wg);
    if (rank == 0) {
        MPI_Win_start(g, 0, win);
        for (int r = 1; r < size; r++) {
            int v = 1000 * round + r;
            MPI_Put(&v, 1, MPI_INT, r, 0, 1, MPI_INT, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_complete(win);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        int flag = 1;
        MPI_Win_post(g, 0, win);
        MPI_Win_test(win, &flag);
        CHECK(!flag, "round %d: rank %d: exposure epoch over before the origin completed", round, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        flag = 0;
        MPI_Win_test(win, &flag);
        CHECK(flag, "round %d: rank %d: MPI_Win_test false after the origin completed and a barrier", round, rank);
        if (!flag)
            MPI_Win_wait(win); /* end the epoch anyway, so the next round is well formed */
        CHECK(mem[0] == 1000 * round + rank, "round %d: rank %d: put gave %d", round, rank, mem[0]);
    }
    MPI_Group_free(&g);
}

/* Post/start/complete/wait where the target's wait is the real MPI's and the origin waits in a
 * bobcat barrier before completing. */
static void pscw_wait(MPI_Win win, MPI_Group wg, int *mem, int round)
{
    MPI_Group g = epoch_group(wg);
    if (rank == 0) {
        MPI_Win_start(g, 0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = 1; r < size; r++) {
            int v = -(1000 * round + r);
            MPI_Put(&v, 1, MPI_INT, r, 0, 1, MPI_INT, win);
        }
        MPI_Win_complete(win);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Win_post(g, 0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_wait(win);
        CHECK(mem[0] == -(1000 * round + rank), "round %d: rank %d: put gave %d", round, rank, mem[0]);
    }
    MPI_Group_free(&g);
}

/* Passive target: every rank locks rank 0 in turn and puts its rank there, while rank 0 waits for
 * a bobcat point-to-point message (the last rank's) and then in a barrier. */
static void passive(MPI_Win win, int *mem)
{
    if (rank > 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&rank, 1, MPI_INT, 0, 1 + rank, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
        if (rank == size - 1)
            for (int r = 1; r < size; r++)
                if (r != rank)
                    MPI_Recv(NULL, 0, MPI_BYTE, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == size - 1)
            MPI_Send(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        else
            MPI_Send(NULL, 0, MPI_BYTE, size - 1, 7, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        for (int r = 1; r < size; r++)
            CHECK(mem[1 + r] == r, "passive: rank 0 slot %d holds %d", 1 + r, mem[1 + r]);
        MPI_Win_unlock(0, win);
    }
}

/* A shared window whose parts are 10 bytes: part r starts at offset 10 r, not 16-aligned. Its
 * MPI_WIN_BASE must be the part's own address (mpi4py's test_win reads it back: MPICH 4.0.2's
 * MPI_Win_create rounded it down to 16 bytes). */
static void shared_base(void)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    /* Open MPI names a shared window's file after the job and the communicator's context id, which
     * two simulated nodes share (docs/mpi.md): checked on real nodes only with Open MPI. */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    const char *sim = getenv("BOBCAT_SIMULATE_NODES");
    if (strstr(lib, "Open MPI") && sim && !strcmp(sim, "1") && ns < size) {
        MPI_Comm_free(&node);
        return;
    }
    char *mine = NULL, *q = NULL;
    void *attr = NULL;
    int flag = 0, du = 0;
    MPI_Aint sz = 0;
    MPI_Win win;
    MPI_Win_allocate_shared(10, 1, MPI_INFO_NULL, node, &mine, &win);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &attr, &flag);
    MPI_Win_shared_query(win, nr, &sz, &du, &q);
    CHECK(flag && attr == (void *)mine, "node rank %d: MPI_WIN_BASE %p, allocate_shared gave %p", nr, attr, (void *)mine);
    CHECK(q == mine && sz == 10 && du == 1, "node rank %d: shared_query(self) %p size %ld du %d", nr, (void *)q,
          (long)sz, du);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

/* A shared window on MPI_COMM_SELF (mpi4py's test_win probes one at import): Open MPI 4.1.4 cannot
 * MPI_Win_create there, which bobcat's shared windows used underneath; it must still work. */
static void self_shared(void)
{
    char *b = NULL, *q = NULL;
    MPI_Aint sz = 0;
    int du = 0;
    MPI_Win win;
    int rc = MPI_Win_allocate_shared(1, 1, MPI_INFO_NULL, MPI_COMM_SELF, &b, &win);
    CHECK(rc == MPI_SUCCESS && b, "MPI_Win_allocate_shared on MPI_COMM_SELF: rc %d", rc);
    if (rc != MPI_SUCCESS)
        return;
    b[0] = (char)(rank + 1);
    MPI_Win_shared_query(win, 0, &sz, &du, &q);
    CHECK(q == b && sz == 1 && q[0] == (char)(rank + 1), "COMM_SELF shared_query: %p size %ld", (void *)q, (long)sz);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 2 + size;
    int *mem = NULL;
    MPI_Alloc_mem((MPI_Aint)(n * sizeof(int)), MPI_INFO_NULL, &mem);
    memset(mem, 0, n * sizeof(int));
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint)(n * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group wg;
    MPI_Win_get_group(win, &wg);
    for (int round = 1; round <= 20; round++) {
        pscw(win, wg, mem, round);
        pscw_wait(win, wg, mem, round);
    }
    passive(win, mem);
    shared_base();
    self_shared();
    MPI_Group_free(&wg);
    MPI_Win_free(&win);
    MPI_Free_mem(mem);
    int bad = 0;
    MPI_Allreduce(&mp_failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mp_rma_progress: %d ranks: %s\n", size, bad ? "FAILED" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
