/* bench/common/bc_mpi.c — the MPI half of the benchmark utility, compiled once per MPI flavour:
 * start and finish of a run, iteration counts that every rank agrees on, per-rank reductions. */
#include "bc.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int bc_rank = 0;

void bc_init(int *argc, char ***argv)
{
    if (bc_thread_multiple) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "bench: --thread-level multiple but the MPI provides level %d\n", provided);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &bc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &bc_nranks);
    bc_is_root = bc_rank == 0;
}

int bc_finish(void)
{
    int mine = bc_local_valid(), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    bc_emit_done(all);
    MPI_Finalize();
    return all ? 0 : 1;
}

long bc_iters_for(MPI_Comm comm, double est_s, const bc_common_t *c)
{
    /* The slowest rank decides, and every rank must get the same count or collectives deadlock. */
    double worst = est_s;
    MPI_Allreduce(&est_s, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (c->time_s <= 0 || worst <= 0)
        return c->iters;
    double n = c->time_s / worst;
    if (n < 1)
        return 1;
    if (n > (double)c->iters)
        return c->iters;
    return (long)n;
}

long bc_calibrate(MPI_Comm comm, const bc_common_t *c, double (*run)(void *arg, long n),
                  void *arg)
{
    if (c->warmup > 0)
        run(arg, c->warmup);
    if (c->time_s <= 0)
        return c->iters;
    long k = 1;
    for (;;) {
        double el = run(arg, k), worst;
        MPI_Allreduce(&el, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
        if (worst >= c->time_s / 10 || k >= c->iters)
            return bc_iters_for(comm, worst / (double)k, c);
        k *= 2;
    }
}

void bc_minavgmax(MPI_Comm comm, double v, double *min_p, double *avg_p, double *max_p)
{
    int n;
    double lo, hi, sum;
    MPI_Comm_size(comm, &n);
    MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    *min_p = lo;
    *avg_p = sum / n;
    *max_p = hi;
}

int bc_local_rank(void)
{
    MPI_Comm node;
    int r;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

/* ---- the placement probe inside a job ----
 * The page holds the two lines of bc_line_ping/pong (bc.h), 128 bytes apart. */
#define PP_A(p) ((_Atomic uint64_t *)(p)->page)
#define PP_B(p) ((_Atomic uint64_t *)((char *)(p)->page + 128))

int bc_pair_probe_open(MPI_Comm comm, bc_pprobe_t *p)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(p, 0, sizeof *p);
    p->role = rank < 2 && size >= 2 ? rank : -1;
    char name[64] = "";
    int fd = -1;
    if (p->role == 0) {
        /* Unique per job and host: the pid, the clock; created exclusively, private to the user. */
        snprintf(name, sizeof name, "/bobcat-bench-probe-%ld-%llx", (long)getpid(),
                 (unsigned long long)(bc_now() * 1e9));
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            name[0] = '\0';
    }
    if (size >= 2) {
        if (rank == 0)
            MPI_Send(name, (int)sizeof name, MPI_CHAR, 1, 0, comm);
        else if (rank == 1)
            MPI_Recv(name, (int)sizeof name, MPI_CHAR, 0, 0, comm, MPI_STATUS_IGNORE);
    }
    if (p->role == 1 && name[0])
        fd = shm_open(name, O_RDWR, 0); /* absent on another host's /dev/shm */
    if (fd >= 0) {
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        p->page = m == MAP_FAILED ? NULL : m;
        close(fd);
    }
    int mine = p->role < 0 || p->page != NULL, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
    if (p->role == 0 && name[0])
        shm_unlink(name); /* both have it mapped (or the probe is off): nothing is left behind */
    if (!all || size < 2) {
        bc_pair_probe_close(p);
        return 0;
    }
    return 1;
}

double bc_pair_probe(MPI_Comm comm, bc_pprobe_t *p, double seconds)
{
    double best = -1;
    /* The ponger reads A before the barrier: the pinger writes its first number only after it. */
    uint64_t last = p->page && p->role == 1 ? atomic_load_explicit(PP_A(p), memory_order_acquire) : 0;
    MPI_Barrier(comm);
    if (p->page && p->role == 1) {
        bc_line_pong(PP_A(p), PP_B(p), last);
    } else if (p->page && p->role == 0) {
        /* Slices of a quarter of the time; the best counts, as in bobcat-probe (an interrupt or a
         * preemption in one slice is not the placement). */
        for (int s = 0; s < 4; s++) {
            double secs;
            uint64_t rounds = bc_line_ping(PP_A(p), PP_B(p), &p->seq, seconds / 4, 64, &secs);
            double ns = secs * 1e9 / (2.0 * (double)rounds);
            best = s == 0 || ns < best ? ns : best;
        }
        /* Once the ponger has seen the stop, A holds the last number again: the next probe's
         * ponger starts from it. */
        bc_line_stop(PP_A(p), PP_B(p));
        atomic_store_explicit(PP_A(p), p->seq, memory_order_release);
    }
    MPI_Barrier(comm);
    return best;
}

void bc_pair_probe_close(bc_pprobe_t *p)
{
    if (p->page)
        munmap(p->page, 4096);
    p->page = NULL;
}
