/* bench/common/bc_mpi.c — the MPI half of the benchmark utility, compiled once per MPI flavour:
 * start and finish of a run, iteration counts that every rank agrees on, per-rank reductions. */
#include "bc.h"

#include <stdio.h>

int bc_rank = 0;

void bc_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
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
