/* mp_agent: BOBCAT_PROGRESS=thread moves a computing rank's nonblocking collectives across nodes
 * (p2p/p2p_agent.c).
 *
 * Run across simulated nodes. Per case, rank 0 starts the call and then computes without any MPI
 * call until every other rank has finished its MPI_Wait, which each says by creating a file in a
 * directory rank 0 made (not through MPI: rank 0 must not call it). The others start only once rank
 * 0 has started (they wait for its message first), so rank 0's node phase ends after its last MPI
 * call, through a node mate's help, and its leaders' phase, a request of the real MPI in rank 0's
 * process, can only be started and driven by rank 0's progress thread: without it the others' waits
 * never end (the deadline, 60 s, fails the case). Then rank 0 waits too and every rank checks the
 * values. Also checks that MPI_Query_thread answers the level the program asked for.
 * Usage: mp_agent [single|multiple] */
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"

#define N 1024
#define DEADLINE_S 60

static int rank, size;
static char dir[256];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void mark(const char *what, int r)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s.%d", dir, what, r);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL, "cannot create %s", p);
    if (f)
        fclose(f);
}

/* Rank 0's computation: no MPI call until every other rank has marked `what` (1), or the deadline
 * (0). Polls the files with short naps: this core is the one the agent may need. */
static int compute_until_all(const char *what)
{
    double end = now() + DEADLINE_S;
    volatile double x = 1.0;
    for (;;) {
        int all = 1;
        for (int r = 1; r < size && all; r++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s.%d", dir, what, r);
            all = access(p, F_OK) == 0;
        }
        if (all)
            return 1;
        if (now() > end)
            return 0;
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
}

/* Rank 0: remove the directory of marks (also before an abort: nothing is left behind). */
static void remove_dir(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cannot remove %s", dir);
}

typedef enum { K_IALLREDUCE, K_IBCAST, K_IBARRIER, K_N } kind_t;
static const char *const names[K_N] = {"Iallreduce", "Ibcast", "Ibarrier"};

static void start(kind_t k, double *in, double *out, MPI_Request *q)
{
    switch (k) {
    case K_IALLREDUCE: MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, q); break;
    case K_IBCAST: MPI_Ibcast(out, N, MPI_DOUBLE, 0, MPI_COMM_WORLD, q); break;
    default: MPI_Ibarrier(MPI_COMM_WORLD, q); break;
    }
}

static void check(kind_t k, int round, const double *out)
{
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++) {
        double want = k == K_IALLREDUCE ? (double)size * (size - 1) / 2 + (double)size * (i + round) : i + 0.5 * round;
        if (out[i] != want)
            bad = i;
    }
    CHECK(bad < 0, "%s round %d rank %d: element %d wrong (%g)", names[k], round, rank, bad, bad < 0 ? 0 : out[bad]);
}

int main(int argc, char **argv)
{
    int asked = argc > 1 && !strcmp(argv[1], "multiple") ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, got = -1, q = -1;
    if (argc > 1) {
        MPI_Init_thread(&argc, &argv, asked, &got);
    } else {
        MPI_Init(&argc, &argv);
        got = MPI_THREAD_SINGLE;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&q);
    CHECK(got == asked && q == asked, "asked for level %d: provided %d, MPI_Query_thread %d", asked, got, q);
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/bobcat-agent.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    int ok = 1;
    for (int round = 0; round < 3 && ok; round++) {
        for (kind_t k = 0; k < K_N && ok; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s.%d", names[k], round);
            for (int i = 0; i < N; i++) {
                in[i] = rank + i + round;
                out[i] = rank == 0 ? i + 0.5 * round : -1.0;
            }
            MPI_Request req;
            int token = 1;
            if (rank == 0) {
                start(k, in, out, &req);
                for (int r = 1; r < size; r++)
                    MPI_Send(&token, 1, MPI_INT, r, 7, MPI_COMM_WORLD);
                ok = compute_until_all(what);
                CHECK(ok, "%s round %d: the other ranks' waits did not end within %d s while rank 0 computed "
                          "(nobody drove its leaders' phase)", names[k], round, DEADLINE_S);
                if (!ok) {
                    remove_dir();
                    fflush(stderr);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            } else {
                MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                start(k, in, out, &req);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (rank != 0)
                mark(what, rank);
            if (k != K_IBARRIER)
                check(k, round, out);
            MPI_Barrier(MPI_COMM_WORLD); /* every mark of this case is made before the next begins */
        }
    }
    long long passes = mp_stat("Progress_thread", "calls");
    if (rank == 0)
        CHECK(passes > 0, "rank 0's progress thread made no pass (%lld)", passes);
    if (rank == 0)
        remove_dir();
    int fails = mp_failures, all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mp_agent: %s (%d ranks, %d failures, rank 0's progress thread passes: %lld)\n", all ? "FAIL" : "ok",
               size, all, passes);
    free(in), free(out);
    MPI_Finalize();
    return all ? 1 : 0;
}
