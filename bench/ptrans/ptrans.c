/* bench/ptrans/ptrans.c — PTRANS (HPCC): A = A^T + B for a distributed N×N double matrix.
 *
 * Distribution: NB×NB blocks, block (I,J) on process (I mod P, J mod Q) of a P×Q grid (2D block-
 * cyclic, each local block stored contiguously). Every process transposes its blocks while
 * packing, one MPI_Alltoallv delivers block A(R,C)^T to the owner of (C,R), and the receiver adds
 * B. Rate as HPCC: N²·8 bytes / time (GB/s = 1e9 B/s, higher is better), best of --iters runs;
 * --validate compares every element with A(j,i) + B(i,j) (the residual, which must be 0 here since
 * each element is one exact addition). */
#include "bc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long n, nb, nblk;   /* matrix order, block size, blocks per dimension */
    int p, q, prow, pcol;
    long nloc;          /* local blocks */
    long *bi, *bj;      /* their block coordinates, in row-major (I, J) order */
    size_t *off;        /* their offsets (in doubles) in the local storage */
    size_t elems;       /* local doubles */
} dist_t;

static long bsize(const dist_t *d, long b)
{
    return b == d->nblk - 1 ? d->n - b * d->nb : d->nb;
}

static int owner(const dist_t *d, long i, long j)
{
    return (int)((i % d->p) * d->q + (j % d->q));
}

static double f_a(long i, long j)
{
    return (double)(i % 1000) * 1e-3 + (double)(j % 997);
}

static double f_b(long i, long j)
{
    return (double)((i * 31 + j * 17) % 1024) * 0.25;
}

static void fill(const dist_t *d, double *m, double (*f)(long, long))
{
    for (long k = 0; k < d->nloc; k++) {
        long r0 = d->bi[k] * d->nb, c0 = d->bj[k] * d->nb;
        long rows = bsize(d, d->bi[k]), cols = bsize(d, d->bj[k]);
        double *blk = m + d->off[k];
        for (long r = 0; r < rows; r++)
            for (long c = 0; c < cols; c++)
                blk[r * cols + c] = f(r0 + r, c0 + c);
    }
}

/* One A = A^T + B. sdisp/rdisp are prefix sums of counts, computed once by the caller. */
static void transpose_add(const dist_t *d, double *a, const double *b, double *sbuf, double *rbuf,
                          int *scnt, int *sdisp, int *rcnt, int *rdisp, int *cur)
{
    int P = bc_nranks;
    /* Pack: local blocks in (R, C) order, each transposed, into the stream of owner(C, R). */
    memcpy(cur, sdisp, (size_t)P * sizeof *cur);
    for (long k = 0; k < d->nloc; k++) {
        long rows = bsize(d, d->bi[k]), cols = bsize(d, d->bj[k]);
        const double *blk = a + d->off[k];
        double *out = sbuf + cur[owner(d, d->bj[k], d->bi[k])];
        for (long c = 0; c < cols; c++)
            for (long r = 0; r < rows; r++)
                out[c * rows + r] = blk[r * cols + c];
        cur[owner(d, d->bj[k], d->bi[k])] += (int)(rows * cols);
    }
    MPI_Alltoallv(sbuf, scnt, sdisp, MPI_DOUBLE, rbuf, rcnt, rdisp, MPI_DOUBLE, MPI_COMM_WORLD);
    /* Unpack: a source sent its blocks (R, C) in lexicographic order; our block (I, J) is its
     * (J, I), so visiting our blocks by (J, I) reads each source's stream in order. */
    memcpy(cur, rdisp, (size_t)P * sizeof *cur);
    for (long jj = 0; jj < d->nblk; jj++) {
        if (jj % d->q != d->pcol)
            continue;
        for (long ii = d->prow; ii < d->nblk; ii += d->p) {
            /* Local index of block (ii, jj): blocks are stored row-major over local rows/cols. */
            long lr = ii / d->p, lc = jj / d->q, lcols = (d->nblk - d->pcol + d->q - 1) / d->q;
            long k = lr * lcols + lc;
            long sz = bsize(d, ii) * bsize(d, jj);
            int src = owner(d, jj, ii);
            const double *in = rbuf + cur[src];
            double *blk = a + d->off[k];
            const double *bb = b + d->off[k];
            for (long e = 0; e < sz; e++)
                blk[e] = in[e] + bb[e];
            cur[src] += (int)sz;
        }
    }
}

int main(int argc, char **argv)
{
    long n = 2048, nb = 64, p = 0, q = 0;
    bc_common_t c = {.iters = 5};
    bc_opt_t opts[] = {
        {"n", BC_OPT_LONG, &n, "matrix order N"},
        {"nb", BC_OPT_LONG, &nb, "block size NB"},
        {"p", BC_OPT_LONG, &p, "process grid rows P (0: the most square grid)"},
        {"q", BC_OPT_LONG, &q, "process grid columns Q (0: ranks / P)"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "ptrans",
             "HPCC PTRANS: A = A^T + B on a P x Q block-cyclic grid, GB/s (higher is better).",
             BC_C_ITERS, &c, opts);
    if (n < 1 || nb < 1 || nb > n || p < 0 || q < 0)
        bc_usage_error("need N >= 1, 1 <= NB <= N, P and Q >= 0");
    bc_init(&argc, &argv);
    if (p == 0 && q == 0) { /* the most square grid: P the largest divisor <= sqrt(ranks) */
        for (p = (long)sqrt((double)bc_nranks); p > 1 && bc_nranks % p; p--)
            ;
        q = bc_nranks / p;
    } else if (p == 0) {
        p = bc_nranks / q;
    } else if (q == 0) {
        q = bc_nranks / p;
    }
    if (p * q != bc_nranks) {
        if (bc_is_root)
            fprintf(stderr, "ptrans: P x Q = %ld x %ld does not match %d ranks (give --p and --q "
                            "with P*Q = ranks)\n", p, q, bc_nranks);
        MPI_Finalize();
        return 2;
    }

    dist_t d = {.n = n, .nb = nb, .nblk = (n + nb - 1) / nb, .p = (int)p, .q = (int)q};
    d.prow = bc_rank / d.q;
    d.pcol = bc_rank % d.q;
    long lrows = (d.nblk - d.prow + d.p - 1) / d.p, lcols = (d.nblk - d.pcol + d.q - 1) / d.q;
    d.nloc = lrows * lcols;
    d.bi = malloc((size_t)(d.nloc + 1) * sizeof *d.bi);
    d.bj = malloc((size_t)(d.nloc + 1) * sizeof *d.bj);
    d.off = malloc((size_t)(d.nloc + 1) * sizeof *d.off);
    int P = bc_nranks;
    int *scnt = calloc((size_t)P, sizeof(int)), *rcnt = calloc((size_t)P, sizeof(int));
    int *sdisp = calloc((size_t)P, sizeof(int)), *rdisp = calloc((size_t)P, sizeof(int));
    int *cur = calloc((size_t)P, sizeof(int));
    if (!d.bi || !d.bj || !d.off || !scnt || !rcnt || !sdisp || !rdisp || !cur) {
        fprintf(stderr, "ptrans: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    long k = 0;
    for (long i = d.prow; i < d.nblk; i += d.p)
        for (long j = d.pcol; j < d.nblk; j += d.q) {
            d.bi[k] = i;
            d.bj[k] = j;
            d.off[k] = d.elems;
            d.elems += (size_t)(bsize(&d, i) * bsize(&d, j));
            scnt[owner(&d, j, i)] += (int)(bsize(&d, i) * bsize(&d, j));
            k++;
        }
    /* What each process sends us is exactly what we need: the transposes of our blocks. */
    for (long i = d.prow; i < d.nblk; i += d.p)
        for (long j = d.pcol; j < d.nblk; j += d.q)
            rcnt[owner(&d, j, i)] += (int)(bsize(&d, i) * bsize(&d, j));
    for (int r = 1; r < P; r++) {
        sdisp[r] = sdisp[r - 1] + scnt[r - 1];
        rdisp[r] = rdisp[r - 1] + rcnt[r - 1];
    }

    size_t bytes = (d.elems ? d.elems : 1) * sizeof(double);
    double *a = malloc(bytes), *b = malloc(bytes), *sbuf = malloc(bytes), *rbuf = malloc(bytes);
    if (!a || !b || !sbuf || !rbuf) {
        fprintf(stderr, "ptrans: out of memory for %zu-byte local matrices\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(sbuf, 0, bytes);
    memset(rbuf, 0, bytes);
    fill(&d, b, f_b);

    double best = 0, sum = 0, resid = 0;
    for (long it = 0; it < c.iters; it++) {
        fill(&d, a, f_a);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = bc_now();
        transpose_add(&d, a, b, sbuf, rbuf, scnt, sdisp, rcnt, rdisp, cur);
        double t = bc_now() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = it == 0 || tmax < best ? tmax : best;
        sum += tmax;
        if (c.validate) {
            double worst = 0;
            for (long kk = 0; kk < d.nloc; kk++) {
                long r0 = d.bi[kk] * nb, c0 = d.bj[kk] * nb;
                long rows = bsize(&d, d.bi[kk]), cols = bsize(&d, d.bj[kk]);
                const double *blk = a + d.off[kk];
                for (long r = 0; r < rows; r++)
                    for (long cc = 0; cc < cols; cc++) {
                        double e = fabs(blk[r * cols + cc] -
                                        (f_a(c0 + cc, r0 + r) + f_b(r0 + r, c0 + cc)));
                        worst = e > worst ? e : worst;
                    }
            }
            double all;
            MPI_Allreduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            resid = all > resid ? all : resid;
        }
    }
    if (c.validate && resid > 0)
        bc_fail("ptrans: residual %g (expected 0)", resid);
    double gb = (double)n * (double)n * 8.0 / 1e9;
#define PFMT "\"n\": %ld, \"nb\": %ld, \"p\": %d, \"q\": %d, \"iters\": %ld"
    bc_emit("bandwidth", gb / best, "GB/s", "higher", PFMT, n, nb, d.p, d.q, c.iters);
    bc_emit("bandwidth_avg", gb / (sum / (double)c.iters), "GB/s", "higher", PFMT, n, nb, d.p, d.q,
            c.iters);
    if (c.validate)
        bc_emit("residual", resid, "abs", "lower", PFMT, n, nb, d.p, d.q, c.iters);

    free(a);
    free(b);
    free(sbuf);
    free(rbuf);
    free(d.bi);
    free(d.bj);
    free(d.off);
    free(scnt);
    free(rcnt);
    free(sdisp);
    free(rdisp);
    free(cur);
    return bc_finish();
}
