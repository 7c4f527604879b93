/* mp_threads: MPI_THREAD_MULTIPLE with bobcat's layer on (issue 28). Every rank runs T threads
 * (argv[1], 2..4) that call MPI at once, for R rounds (argv[2]):
 *  1. own communicators: each thread dups its own parent and splits the dup, at the same time as
 *     the others (concurrent registration), then per round a ring exchange (Isend/Irecv, eager and
 *     rendezvous sizes, heap and stack buffers, ANY_SOURCE), Sendrecv, Probe + Recv, Mprobe +
 *     Mrecv, Issend + Test loop, and collectives (Barrier, Bcast, Reduce, Allreduce, Allgather,
 *     Alltoall, the same small Iallreduce every round and an Ibarrier) on that communicator and its
 *     split;
 *  2. one shared communicator: thread t sends to the right neighbour with tag t and receives from
 *     MPI_ANY_SOURCE with tag t;
 *  3. fan-in on a shared communicator: every other thread of every rank sends K messages to rank 0
 *     (standard and synchronous sends), where thread 0 receives them all with ANY_SOURCE/ANY_TAG and
 *     checks that each sender thread's messages arrive whole and in order (non-overtaking);
 *  4. hand-off: thread 0 starts receives and sends, thread 1 completes them (Wait, Test, Waitall,
 *     Waitany).
 * Every value is checked. With BOBCAT_STATS on and the layer on, point-to-point and collectives
 * must have taken bobcat's path (the layer used to turn itself off at MULTIPLE). */
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

#define MAXT 4
#define FAN_K 40
#define BIG 70000 /* ints: past every eager limit (rendezvous) */

static int wrank, wsize, nthreads, rounds;
static MPI_Comm parent[MAXT], shared_comm, fan_comm, hand_comm;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER, self_lock = PTHREAD_MUTEX_INITIALIZER;

/* CHECK from several threads: mp_failures is a plain int. */
#define TCHECK(cond, ...)                                                                                   \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            pthread_mutex_lock(&fail_lock);                                                                \
            CHECK(cond, __VA_ARGS__);                                                                      \
            pthread_mutex_unlock(&fail_lock);                                                              \
        }                                                                                                  \
    } while (0)

static int val(int rank, int t, int it, int k) { return (rank * 131 + t * 17 + it * 7 + k * 3) & 0x7fffffff; }

static void fill(int *b, int n, int rank, int t, int it)
{
    for (int k = 0; k < n; k++)
        b[k] = val(rank, t, it, k);
}

static int bad(const int *b, int n, int rank, int t, int it)
{
    for (int k = 0; k < n; k++)
        if (b[k] != val(rank, t, it, k))
            return k + 1;
    return 0;
}

/* ---- 1. a thread's own communicators --------------------------------------------------------- */

static void own_round(MPI_Comm comm, int t, int it, int *sbuf, int *rbuf)
{
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static const int sizes[] = {1, 3, 1024, 16, BIG};
    int n = sizes[it % 5];
    int stackbuf[64];
    int *sb = n <= 64 && it % 2 ? stackbuf : sbuf; /* stack buffers take the staged path */
    MPI_Request r[2];
    MPI_Status st[2];

    /* ring to the right, receive from the left (or from anyone) */
    fill(sb, n, rank, t, it);
    memset(rbuf, 0xff, sizeof(int) * (size_t)n);
    MPI_Irecv(rbuf, n, MPI_INT, it % 3 == 0 ? MPI_ANY_SOURCE : left, 7, comm, &r[0]);
    MPI_Isend(sb, n, MPI_INT, right, 7, comm, &r[1]);
    MPI_Waitall(2, r, st);
    int k = bad(rbuf, n, left, t, it);
    TCHECK(!k && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 7, "thread %d round %d ring: element %d, source %d", t,
           it, k - 1, st[0].MPI_SOURCE);

    /* the other way, blocking */
    MPI_Sendrecv(sb, n, MPI_INT, left, 8, rbuf, n, MPI_INT, right, 8, comm, &st[0]);
    k = bad(rbuf, n, right, t, it);
    TCHECK(!k, "thread %d round %d sendrecv: element %d", t, it, k - 1);

    /* probe, then receive what it found */
    MPI_Isend(sb, n, MPI_INT, right, 9, comm, &r[1]);
    int count = -1;
    MPI_Probe(MPI_ANY_SOURCE, 9, comm, &st[0]);
    MPI_Get_count(&st[0], MPI_INT, &count);
    TCHECK(st[0].MPI_SOURCE == left && count == n, "thread %d round %d probe: source %d count %d", t, it,
           st[0].MPI_SOURCE, count);
    MPI_Recv(rbuf, n, MPI_INT, st[0].MPI_SOURCE, 9, comm, MPI_STATUS_IGNORE);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    TCHECK(!bad(rbuf, n, left, t, it), "thread %d round %d probe+recv data", t, it);

    /* matched probe (the thread-safe probe), synchronous send completed by a Test loop */
    MPI_Issend(sb, n, MPI_INT, right, 10, comm, &r[1]);
    MPI_Message msg;
    MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &st[0]);
    TCHECK(st[0].MPI_TAG == 10 && st[0].MPI_SOURCE == left, "thread %d round %d mprobe tag %d", t, it, st[0].MPI_TAG);
    MPI_Mrecv(rbuf, n, MPI_INT, &msg, MPI_STATUS_IGNORE);
    for (int done = 0; !done;)
        MPI_Test(&r[1], &done, MPI_STATUS_IGNORE);
    TCHECK(!bad(rbuf, n, left, t, it), "thread %d round %d mprobe+mrecv data", t, it);

    /* collectives */
    int root = it % size, x = rank + it + t, sum = -1;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm);
    TCHECK(sum == size * (size - 1) / 2 + size * (it + t), "thread %d round %d allreduce %d", t, it, sum);
    /* nonblocking: the same small Iallreduce every round (after the first, bobcat's lean calls,
     * whose remembered shape other threads' communicators displace) and an Ibarrier, one waited
     * for, the other tested until complete */
    int isum = -1;
    MPI_Request q[2];
    MPI_Iallreduce(&x, &isum, 1, MPI_INT, MPI_SUM, comm, &q[0]);
    MPI_Ibarrier(comm, &q[1]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    for (int done = 0; !done;)
        MPI_Test(&q[1], &done, MPI_STATUS_IGNORE);
    TCHECK(isum == sum, "thread %d round %d iallreduce %d, allreduce %d", t, it, isum, sum);
    int red = -1;
    MPI_Reduce(&x, &red, 1, MPI_INT, MPI_MAX, root, comm);
    TCHECK(rank != root || red == size - 1 + it + t, "thread %d round %d reduce %d", t, it, red);
    int nb = it % 5 == 4 ? 4096 : 5;
    if (rank == root)
        fill(rbuf, nb, root, t, it);
    MPI_Bcast(rbuf, nb, MPI_INT, root, comm);
    TCHECK(!bad(rbuf, nb, root, t, it), "thread %d round %d bcast", t, it);
    int *all = malloc(sizeof(int) * (size_t)size * 2);
    int mine2[2] = {rank, x};
    MPI_Allgather(mine2, 2, MPI_INT, all, 2, MPI_INT, comm);
    for (int q = 0; q < size; q++)
        TCHECK(all[2 * q] == q && all[2 * q + 1] == q + it + t, "thread %d round %d allgather from %d", t, it, q);
    int *a2a = malloc(sizeof(int) * (size_t)size), *got = malloc(sizeof(int) * (size_t)size);
    for (int q = 0; q < size; q++)
        a2a[q] = rank * 1000 + q + t;
    MPI_Alltoall(a2a, 1, MPI_INT, got, 1, MPI_INT, comm);
    for (int q = 0; q < size; q++)
        TCHECK(got[q] == q * 1000 + rank + t, "thread %d round %d alltoall from %d: %d", t, it, q, got[q]);
    free(all);
    free(a2a);
    free(got);
    if (it % 4 == 0)
        MPI_Barrier(comm);
}

static void own_comms(int t)
{
    MPI_Comm mine, half;
    MPI_Comm_dup(parent[t], &mine); /* every thread at once: contexts agreed concurrently */
    /* Communicators made and used at once by every thread (MPICH's threads/comm/
     * comm_create_group_threads): a new one's first collective must not make hidden communicators,
     * which hung Open MPI's context-id agreement while other threads made theirs. */
    MPI_Group g;
    MPI_Comm_group(mine, &g);
    int size;
    MPI_Comm_size(mine, &size);
    MPI_Barrier(parent[t]); /* (every thread starts at once) */
    /* A ring, made by every thread at once: Open MPI 4.1 crashed when threads made their process's
     * first topology at once (pmpi_init.c), and the layer gives each one a shadow communicator for
     * its neighbourhood collectives. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1}, me, left, right, got[2] = {-1, -1};
    MPI_Cart_create(mine, 1, dims, periods, 0, &ring);
    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, ring);
    TCHECK(got[0] == left && got[1] == right, "thread %d: ring neighbours %d,%d, want %d,%d", t, got[0], got[1], left,
           right);
    MPI_Comm_free(&ring);
    /* (At 8 ranks on 2 cores MPICH took 20-50 s for a few rounds: up to 4 ranks only. The hang
     * showed at 4 ranks of 3 threads.) */
    for (int it = 0; it < (wsize <= 4 ? 24 : 0); it++) {
        MPI_Comm made;
        MPI_Comm_create_group(mine, g, t, &made);
        MPI_Barrier(made);
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, made);
        TCHECK(sum == size, "thread %d: Allreduce on a communicator just made: %d, want %d", t, sum, size);
        MPI_Comm_free(&made);
        /* ... and from WORLD, every thread with its own tag (MPICH's comm_create_group_threads2):
         * the first half and one, then all. Across simulated nodes on Open MPI the layer's node
         * communicators for them hung every run (base/pmpi_comm.c, "Hidden communicators"). */
        for (int whole = 0; whole < 2; whole++) {
            int range[1][3] = {{0, whole ? wsize - 1 : wsize / 2, 1}}, n = range[0][1] + 1;
            if (wrank >= n)
                continue;
            MPI_Group wg, sub;
            MPI_Comm_group(MPI_COMM_WORLD, &wg);
            MPI_Group_range_incl(wg, 1, range, &sub);
            MPI_Comm_create_group(MPI_COMM_WORLD, sub, t, &made);
            MPI_Barrier(made);
            sum = 0;
            MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, made);
            TCHECK(sum == n, "thread %d: Allreduce on a group of WORLD's %d ranks: %d", t, n, sum);
            MPI_Comm_free(&made);
            MPI_Group_free(&sub);
            MPI_Group_free(&wg);
        }
        MPI_Comm self; /* a collective over MPI_COMM_SELF, one thread at a time as MPI requires */
        pthread_mutex_lock(&self_lock);
        MPI_Comm_dup(MPI_COMM_SELF, &self);
        pthread_mutex_unlock(&self_lock);
        MPI_Barrier(self);
        MPI_Comm_free(&self);
    }
    MPI_Group_free(&g);
    int rank;
    MPI_Comm_rank(mine, &rank);
    MPI_Comm_split(mine, rank % 2, -rank, &half);
    int *sbuf = malloc(sizeof(int) * BIG), *rbuf = malloc(sizeof(int) * BIG);
    for (int it = 0; it < rounds; it++) {
        own_round(mine, t, it, sbuf, rbuf);
        if (it % 3 == 0)
            own_round(half, t, it, sbuf, rbuf);
    }
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&half);
    MPI_Comm_free(&mine);
}

/* ---- 2. a shared communicator, a tag per thread ------------------------------------------------ */

static void shared_ring(int t)
{
    int right = (wrank + 1) % wsize, left = (wrank + wsize - 1) % wsize;
    int *sbuf = malloc(sizeof(int) * 2048), *rbuf = malloc(sizeof(int) * 2048);
    for (int it = 0; it < rounds; it++) {
        int n = it % 4 == 3 ? 2048 : 2;
        MPI_Request r[2];
        MPI_Status st;
        fill(sbuf, n, wrank, t, it);
        MPI_Irecv(rbuf, n, MPI_INT, MPI_ANY_SOURCE, 100 + t, shared_comm, &r[0]);
        MPI_Isend(sbuf, n, MPI_INT, right, 100 + t, shared_comm, &r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Wait(&r[0], &st);
        TCHECK(st.MPI_SOURCE == left && !bad(rbuf, n, left, t, it), "thread %d round %d shared ring: source %d", t, it,
               st.MPI_SOURCE);
    }
    free(sbuf);
    free(rbuf);
}

/* ---- 3. fan-in to rank 0, wildcards --------------------------------------------------------------- */

static void fan_send(int t)
{
    int msg[3];
    for (int s = 0; s < FAN_K; s++) {
        msg[0] = wrank, msg[1] = t, msg[2] = s;
        if (s % 4 == 1)
            MPI_Ssend(msg, 3, MPI_INT, 0, t, fan_comm);
        else
            MPI_Send(msg, 3, MPI_INT, 0, t, fan_comm);
    }
}

static void fan_receive(void)
{
    int expect = (wsize * nthreads - 1) * FAN_K;
    int *next = calloc((size_t)wsize * MAXT, sizeof(int));
    for (int i = 0; i < expect; i++) {
        int msg[3] = {-1, -1, -1};
        MPI_Status st;
        MPI_Recv(msg, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, fan_comm, &st);
        int ok = msg[0] == st.MPI_SOURCE && msg[1] == st.MPI_TAG && msg[0] >= 0 && msg[0] < wsize && msg[1] >= 0 &&
                 msg[1] < nthreads;
        TCHECK(ok, "fan-in: message (%d,%d,%d) with status source %d tag %d", msg[0], msg[1], msg[2], st.MPI_SOURCE,
               st.MPI_TAG);
        if (!ok)
            continue;
        int *n = &next[msg[0] * MAXT + msg[1]];
        TCHECK(msg[2] == *n, "fan-in: from rank %d thread %d message %d arrived where %d was due", msg[0], msg[1],
               msg[2], *n);
        *n = msg[2] + 1;
    }
    free(next);
}

/* ---- 4. requests started by one thread, completed by another ------------------------------------- */

#define SLOTS 4
static struct {
    MPI_Request r[2];
    int sbuf[512], rbuf[512];
    int n, it;
    _Atomic int state; /* 0 free, 1 started (thread 1 completes it) */
} slot[SLOTS];

static void hand_start(void)
{
    int right = (wrank + 1) % wsize, left = (wrank + wsize - 1) % wsize;
    (void)left;
    for (int it = 0; it < rounds; it++) {
        int i = it % SLOTS;
        while (atomic_load(&slot[i].state) != 0) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 999, hand_comm, &flag, MPI_STATUS_IGNORE); /* nothing: a progress call */
            sched_yield();
        }
        slot[i].n = it % 3 == 2 ? 512 : 4;
        slot[i].it = it;
        fill(slot[i].sbuf, slot[i].n, wrank, 0, it);
        MPI_Irecv(slot[i].rbuf, slot[i].n, MPI_INT, MPI_ANY_SOURCE, 200, hand_comm, &slot[i].r[0]);
        MPI_Isend(slot[i].sbuf, slot[i].n, MPI_INT, right, 200, hand_comm, &slot[i].r[1]);
        atomic_store(&slot[i].state, 1);
    }
}

static void hand_complete(void)
{
    int left = (wrank + wsize - 1) % wsize;
    for (int it = 0; it < rounds; it++) {
        int i = it % SLOTS;
        while (atomic_load(&slot[i].state) != 1) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 999, hand_comm, &flag, MPI_STATUS_IGNORE);
            sched_yield();
        }
        MPI_Status st;
        switch (it % 4) {
        case 0:
            MPI_Wait(&slot[i].r[0], &st);
            MPI_Wait(&slot[i].r[1], MPI_STATUS_IGNORE);
            break;
        case 1: {
            int done = 0;
            while (!done)
                MPI_Test(&slot[i].r[0], &done, &st);
            MPI_Wait(&slot[i].r[1], MPI_STATUS_IGNORE);
            break;
        }
        case 2: {
            MPI_Status sts[2];
            MPI_Waitall(2, slot[i].r, sts);
            st = sts[0];
            break;
        }
        default: {
            int idx, got = 0;
            while (got < 2) {
                MPI_Status s1;
                MPI_Waitany(2, slot[i].r, &idx, &s1);
                if (idx == 0)
                    st = s1;
                got++;
            }
        }
        }
        TCHECK(st.MPI_SOURCE == left && !bad(slot[i].rbuf, slot[i].n, left, 0, slot[i].it),
               "hand-off round %d: source %d", it, st.MPI_SOURCE);
        atomic_store(&slot[i].state, 0);
    }
}

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    own_comms(t);
    shared_ring(t);
    if (wrank == 0 && t == 0)
        fan_receive();
    else
        fan_send(t);
    if (t == 0)
        hand_start();
    else if (t == 1)
        hand_complete();
    return NULL;
}

typedef long long (*stat_fn_t)(const char *call, const char *key);

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 2;
    rounds = argc > 2 ? atoi(argv[2]) : 20;
    if (nthreads < 2 || nthreads > MAXT) {
        fprintf(stderr, "usage: mp_threads THREADS(2..%d) [ROUNDS]\n", MAXT);
        return 2;
    }
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (provided != MPI_THREAD_MULTIPLE) {
        if (wrank == 0)
            fprintf(stderr, "mp_threads: the MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
        MPI_Finalize();
        return 77;
    }
    for (int t = 0; t < nthreads; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &parent[t]);
    MPI_Comm_dup(MPI_COMM_WORLD, &shared_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &fan_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &hand_comm);

    pthread_t th[MAXT];
    for (int t = 1; t < nthreads; t++)
        pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
    thread_main((void *)0);
    for (int t = 1; t < nthreads; t++)
        pthread_join(th[t], NULL);

    /* WORLD's collectives keep the layer's path at MULTIPLE everywhere (across nodes on Open MPI
     * too: its node part is made at MPI_Init). */
    int one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == wsize, "Allreduce on WORLD after the threads: %d, want %d", all, wsize);

    /* The layer took these calls (it used to turn itself off at MULTIPLE). */
    if (getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0") && !mp_env_is("BOBCAT_MPI", "off", "0")) {
        stat_fn_t stat = (stat_fn_t)dlsym(RTLD_DEFAULT, "bobcat_mpi_stat");
        CHECK(stat != NULL, "bobcat_mpi_stat not found: is the MPI layer preloaded?");
        if (stat) {
            long long sends = stat("p2p send", "inplace") + stat("p2p send", "staged");
            long long ar = stat("Allreduce", "inplace") + stat("Allreduce", "staged");
            long long mt = stat("Allreduce", "why.multinode-threads");
            long long imt = stat("Iallreduce", "why.multinode-threads"), lp = stat("leaders", "p2p");
            long long ih = stat("Iallreduce", "alg.hier");
            CHECK(sends > 0, "no send took bobcat's path at MPI_THREAD_MULTIPLE (%lld)", sends);
            /* Across simulated nodes on Open MPI the layer makes no communicators after MPI_Init, so
             * the threads' communicators, which span nodes, run their leaders' phases over
             * point-to-point on the layer's copy of WORLD (coll/pmpi_coll_lead.c): their blocking and
             * nonblocking collectives take bobcat's path. Elsewhere every leaders' phase is on a
             * leaders' communicator. */
            const char *sim_env = getenv("BOBCAT_SIMULATE_NODES");
            int sim = sim_env && !strcmp(sim_env, "1");
#if defined(OPEN_MPI)
            int none_hidden = sim;
#else
            int none_hidden = 0;
#endif
            CHECK(ar >= 2, "%lld Allreduces took bobcat's path at MPI_THREAD_MULTIPLE", ar);
            CHECK(mt == 0, "%lld Allreduces went to the real MPI as multinode-threads", mt);
            CHECK(imt == 0, "%lld Iallreduces went to the real MPI as multinode-threads", imt);
            long long lpmax = 0, ihmax = 0; /* (only leaders count, and some threads' communicators have one rank per node) */
            MPI_Allreduce(&lp, &lpmax, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(&ih, &ihmax, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
            CHECK(!sim || ihmax > 0, "across nodes no Iallreduce took the hierarchical path (%lld)", ihmax);
            CHECK(none_hidden ? lpmax > 0 : lpmax <= 0, "%lld leaders' phases over point-to-point on some rank", lpmax);
        }
    }

    for (int t = 0; t < nthreads; t++)
        MPI_Comm_free(&parent[t]);
    MPI_Comm_free(&shared_comm);
    MPI_Comm_free(&fan_comm);
    MPI_Comm_free(&hand_comm);
    int fails = 0;
    MPI_Allreduce(&mp_failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mp_threads: %d ranks x %d threads, %d rounds: %s (%d failures)\n", wsize, nthreads, rounds,
               fails ? "FAIL" : "OK", fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}
