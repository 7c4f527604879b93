/* bench/stream/stream.c — STREAM copy, scale, add, triad (McCalpin's definitions).
 *
 * Kernels on arrays a, b, c of N doubles: copy c=a, scale b=q·c, add c=a+b, triad a=b+q·c; bytes
 * counted as STREAM does (16·N for copy/scale, 24·N for add/triad); rate = bytes / best time over
 * --iters trials (GB/s = 1e9 B/s, higher is better). Two phases, as the CNW report compares them:
 * "single" — each rank in turn runs alone while the others wait; "all" — every rank runs at once
 * after a barrier and the aggregate is the sum of the ranks' rates. --validate replays the scalar
 * recurrence STREAM checks and compares every array against it. */
#include "bc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *kernels[4] = {"copy", "scale", "add", "triad"};
static const double bytes_per_elem[4] = {16, 16, 24, 24};
static const double q = 3.0;

typedef struct {
    double *a, *b, *c;
    size_t n;
    long trials;
} arrays_t;

static void init_arrays(arrays_t *s)
{
    for (size_t j = 0; j < s->n; j++) {
        s->a[j] = 1.0;
        s->b[j] = 2.0;
        s->c[j] = 0.0;
    }
}

/* The four kernels once; best[k] keeps the fastest time of kernel k. */
static void one_trial(arrays_t *s, double best[4])
{
    double *restrict a = s->a, *restrict b = s->b, *restrict c = s->c;
    size_t n = s->n;
    double t[5];
    t[0] = bc_now();
    for (size_t j = 0; j < n; j++)
        c[j] = a[j];
    t[1] = bc_now();
    for (size_t j = 0; j < n; j++)
        b[j] = q * c[j];
    t[2] = bc_now();
    for (size_t j = 0; j < n; j++)
        c[j] = a[j] + b[j];
    t[3] = bc_now();
    for (size_t j = 0; j < n; j++)
        a[j] = b[j] + q * c[j];
    t[4] = bc_now();
    for (int k = 0; k < 4; k++)
        if (best[k] <= 0 || t[k + 1] - t[k] < best[k])
            best[k] = t[k + 1] - t[k];
}

/* Runs `trials` trials from fresh arrays; returns GB/s per kernel in rate[]. */
static void run(arrays_t *s, double rate[4])
{
    double best[4] = {0, 0, 0, 0};
    init_arrays(s);
    for (long i = 0; i < s->trials; i++)
        one_trial(s, best);
    for (int k = 0; k < 4; k++)
        rate[k] = bytes_per_elem[k] * (double)s->n / best[k] / 1e9;
}

/* STREAM's check: the same recurrence on scalars, then every element against it. */
static void validate(const arrays_t *s, const char *phase)
{
    double a = 1.0, b = 2.0, c = 0.0;
    for (long i = 0; i < s->trials; i++) {
        c = a;
        b = q * c;
        c = a + b;
        a = b + q * c;
    }
    size_t bad = 0;
    for (size_t j = 0; j < s->n; j++)
        bad += fabs(s->a[j] - a) > 1e-13 * fabs(a) || fabs(s->b[j] - b) > 1e-13 * fabs(b) ||
               fabs(s->c[j] - c) > 1e-13 * fabs(c);
    if (bad)
        bc_fail("stream %s phase: %zu of %zu elements differ from the expected values", phase, bad,
                s->n);
}

int main(int argc, char **argv)
{
    size_t array_bytes = 64 << 20;
    bc_common_t c = {.iters = 10};
    bc_opt_t opts[] = {
        {"array-size", BC_OPT_SIZE, &array_bytes, "bytes per array (3 arrays per rank)"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "stream",
             "STREAM copy/scale/add/triad in GB/s (higher is better): each rank alone, then all "
             "ranks at once (aggregate = sum).",
             BC_C_ITERS | BC_C_PAGES, &c, opts);
    if (array_bytes < 4096)
        bc_usage_error("--array-size must be at least 4K");
    bc_init(&argc, &argv);

    arrays_t s = {.n = array_bytes / sizeof(double), .trials = c.iters};
    bc_buf_t ba = bc_alloc(array_bytes, c.pages), bb = bc_alloc(array_bytes, c.pages),
             bcb = bc_alloc(array_bytes, c.pages);
    s.a = ba.p;
    s.b = bb.p;
    s.c = bcb.p;
    double rate[4];

    /* Phase "single": one rank at a time, the others parked in a barrier. */
    for (int r = 0; r < bc_nranks; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (bc_rank == r) {
            run(&s, rate);
            if (c.validate)
                validate(&s, "single");
        }
        MPI_Bcast(rate, 4, MPI_DOUBLE, r, MPI_COMM_WORLD);
        for (int k = 0; k < 4; k++)
            bc_emit(kernels[k], rate[k], "GB/s", "higher",
                    "\"phase\": \"single\", \"rank\": %d, \"array_bytes\": %zu, \"trials\": %ld, "
                    "\"pages\": \"%s\"",
                    r, array_bytes, c.iters, ba.kind);
    }

    /* Phase "all": every rank at once, as the CNW report's VN runs stress the shared memory. */
    MPI_Barrier(MPI_COMM_WORLD);
    run(&s, rate);
    if (c.validate)
        validate(&s, "all");
    double sum[4];
    MPI_Reduce(rate, sum, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int k = 0; k < 4; k++)
        bc_emit(kernels[k], sum[k], "GB/s", "higher",
                "\"phase\": \"all\", \"array_bytes\": %zu, \"trials\": %ld, \"pages\": \"%s\"",
                array_bytes, c.iters, ba.kind);

    bc_release(&ba);
    bc_release(&bb);
    bc_release(&bcb);
    return bc_finish();
}
