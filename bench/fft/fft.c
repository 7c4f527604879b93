/* bench/fft/fft.c — MPI-FFT (HPCC): a 1D complex double FFT of N points block-distributed over
 * the ranks, in Gflop/s with HPCC's count 5·N·log2(N) per transform (higher is better), best of
 * --iters forward transforms. --validate runs the inverse and reports the largest error of
 * x - IFFT(FFT(x))/N, accepted when below HPCC's bound 16·eps·log2(N) relative to max|x|.
 *
 * Two implementations, named in params.impl:
 *  - "fftw-mpi": FFTW's MPI interface (Debian builds libfftw3-mpi against Open MPI only);
 *  - "fftw+alltoall": serial FFTW plus our own transposes over MPI_Alltoall — the six-step
 *    algorithm for N = N1·N2: transpose, N2/P row FFTs of length N1, twiddle by w_N^(n2·k1),
 *    transpose, N1/P row FFTs of length N2, transpose back to natural order. Both N1 and N2 must
 *    be multiples of the rank count. The MPICH flavour has only this one. */
#include "bc.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BC_FFTW_MPI
#include <fftw3-mpi.h>
#endif

typedef struct {
    long n, local, start;  /* global size, local points, first local global index */
    long n1, n2;           /* six-step factorisation */
    int fwd_sign;
    fftw_complex *tmp, *sbuf, *rbuf;
    fftw_complex *tw[2];   /* twiddles for forward (0) and backward (1) */
    fftw_plan rows1[2], rows2[2];
#ifdef BC_FFTW_MPI
    fftw_plan mpi_plan[2];
#endif
    int use_fftw_mpi;
} fft_t;

/* Local (R/P)×C row-major → local (C/P)×R row-major of the global transpose. */
static void transpose(const fftw_complex *in, fftw_complex *out, long R, long C,
                      fftw_complex *sbuf, fftw_complex *rbuf)
{
    long P = bc_nranks, rp = R / P, cp = C / P, blk = rp * cp;
    for (long d = 0; d < P; d++)
        for (long r = 0; r < rp; r++)
            memcpy(sbuf + d * blk + r * cp, in + r * C + d * cp, (size_t)cp * sizeof *sbuf);
    /* Complex numbers travel as pairs of doubles: MPI_C_DOUBLE_COMPLEX is optional in MPI-2. */
    MPI_Alltoall(sbuf, (int)(2 * blk), MPI_DOUBLE, rbuf, (int)(2 * blk), MPI_DOUBLE,
                 MPI_COMM_WORLD);
    for (long s = 0; s < P; s++)
        for (long r = 0; r < rp; r++)
            for (long c = 0; c < cp; c++)
                memcpy(out + c * R + s * rp + r, rbuf + s * blk + r * cp + c, sizeof *out);
}

static int six_step_setup(fft_t *f, unsigned flags)
{
    long P = bc_nranks;
    /* N1: the largest divisor of N not above sqrt(N) with N1 and N/N1 both multiples of P. */
    for (long d = (long)sqrt((double)f->n); d >= 1; d--)
        if (f->n % d == 0 && d % P == 0 && (f->n / d) % P == 0) {
            f->n1 = d;
            break;
        }
    if (!f->n1)
        return -1;
    f->n2 = f->n / f->n1;
    f->local = f->n / P;
    f->start = f->local * bc_rank;
    size_t bytes = (size_t)f->local * sizeof(fftw_complex);
    f->tmp = fftw_malloc(bytes);
    f->sbuf = fftw_malloc(bytes);
    f->rbuf = fftw_malloc(bytes);
    for (int dir = 0; dir < 2; dir++) {
        int sign = dir == 0 ? FFTW_FORWARD : FFTW_BACKWARD;
        int len1 = (int)f->n1, len2 = (int)f->n2;
        /* Plans on tmp/rbuf: both in-place row batches run on these buffers. */
        f->rows1[dir] = fftw_plan_many_dft(1, &len1, (int)(f->n2 / P), f->tmp, NULL, 1, len1,
                                           f->tmp, NULL, 1, len1, sign, flags);
        f->rows2[dir] = fftw_plan_many_dft(1, &len2, (int)(f->n1 / P), f->tmp, NULL, 1, len2,
                                           f->tmp, NULL, 1, len2, sign, flags);
        f->tw[dir] = fftw_malloc(bytes);
        long rows = f->n2 / P, n2_0 = rows * bc_rank;
        for (long r = 0; r < rows; r++)
            for (long k1 = 0; k1 < f->n1; k1++) {
                /* Reduce the exponent mod N first: n2·k1 can exceed 2^53/2π precision. */
                long e = ((n2_0 + r) * k1) % f->n;
                double ang = (double)sign * 2.0 * M_PI * (double)e / (double)f->n;
                f->tw[dir][r * f->n1 + k1] = cos(ang) + I * sin(ang);
            }
    }
    return 0;
}

/* out may alias in; in is left unchanged when it does not. */
static void six_step(fft_t *f, int dir, const fftw_complex *in, fftw_complex *out)
{
    long rows1 = f->n2 / bc_nranks, l = f->local;
    transpose(in, f->tmp, f->n1, f->n2, f->sbuf, f->rbuf);
    fftw_execute_dft(f->rows1[dir], f->tmp, f->tmp);
    for (long i = 0; i < rows1 * f->n1; i++)
        f->tmp[i] *= f->tw[dir][i];
    transpose(f->tmp, out, f->n2, f->n1, f->sbuf, f->rbuf);
    memcpy(f->tmp, out, (size_t)l * sizeof *out);
    fftw_execute_dft(f->rows2[dir], f->tmp, f->tmp);
    transpose(f->tmp, out, f->n1, f->n2, f->sbuf, f->rbuf);
}

static void fft_exec(fft_t *f, int dir, fftw_complex *in, fftw_complex *out)
{
#ifdef BC_FFTW_MPI
    if (f->use_fftw_mpi) {
        fftw_mpi_execute_dft(f->mpi_plan[dir], in, out);
        return;
    }
#endif
    six_step(f, dir, in, out);
}

static double val(long i, int im)
{
    uint64_t s = bc_seed((uint64_t)i, (uint64_t)im, 77);
    return (double)(s >> 11) / 9007199254740992.0 - 0.5;
}

int main(int argc, char **argv)
{
    long log2n = 20;
    const char *impl = NULL;
    int measure = 0;
    bc_common_t c = {.iters = 5};
    bc_opt_t opts[] = {
        {"log2n", BC_OPT_LONG, &log2n, "transform size N = 2^LOG2N complex doubles"},
        {"impl", BC_OPT_STR, &impl,
         "fftw-mpi (Open MPI flavour only) or fftw+alltoall (default: fftw-mpi when built)"},
        {"measure", BC_OPT_FLAG, &measure, "plan with FFTW_MEASURE instead of FFTW_ESTIMATE"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "fft",
             "HPCC MPI-FFT: 1D complex FFT distributed over the ranks, Gflop/s = 5 N log2 N / t "
             "(higher is better).",
             BC_C_ITERS, &c, opts);
    if (log2n < 2 || log2n > 34)
        bc_usage_error("--log2n must be in 2..34");
    fft_t f = {.n = 1L << log2n};
#ifdef BC_FFTW_MPI
    f.use_fftw_mpi = 1;
#endif
    if (impl && strcmp(impl, "fftw+alltoall") == 0)
        f.use_fftw_mpi = 0;
    else if (impl && strcmp(impl, "fftw-mpi") == 0) {
        if (!f.use_fftw_mpi)
            bc_usage_error("--impl fftw-mpi: this flavour is not linked with libfftw3-mpi (Debian "
                           "builds it for Open MPI only); use fftw+alltoall");
    } else if (impl)
        bc_usage_error("--impl: '%s' is neither fftw-mpi nor fftw+alltoall", impl);
    unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;

    bc_init(&argc, &argv);
    fftw_complex *x, *y;
#ifdef BC_FFTW_MPI
    ptrdiff_t alloc = 0;
    if (f.use_fftw_mpi) {
        fftw_mpi_init();
        ptrdiff_t ni, is, no, os, bni, bis, bno, bos;
        alloc = fftw_mpi_local_size_1d(f.n, MPI_COMM_WORLD, FFTW_FORWARD, flags, &ni, &is, &no,
                                       &os);
        ptrdiff_t balloc = fftw_mpi_local_size_1d(f.n, MPI_COMM_WORLD, FFTW_BACKWARD, flags, &bni,
                                                  &bis, &bno, &bos);
        /* The inverse must read the forward output where it lies, and give x back in place. */
        if (ni != no || is != os || bni != ni || bis != is || bno != no || bos != os) {
            if (bc_is_root)
                fprintf(stderr, "fft: FFTW's in/out distributions differ for N=%ld on %d ranks; "
                                "use --impl fftw+alltoall\n", f.n, bc_nranks);
            MPI_Finalize();
            return 2;
        }
        alloc = alloc > balloc ? alloc : balloc;
        f.local = ni;
        f.start = is;
        x = fftw_alloc_complex((size_t)alloc);
        y = fftw_alloc_complex((size_t)alloc);
        fftw_complex *z = fftw_alloc_complex((size_t)alloc);
        f.mpi_plan[0] = fftw_mpi_plan_dft_1d(f.n, x, y, MPI_COMM_WORLD, FFTW_FORWARD, flags);
        f.mpi_plan[1] = fftw_mpi_plan_dft_1d(f.n, y, z, MPI_COMM_WORLD, FFTW_BACKWARD, flags);
        fftw_free(z);
        if (!f.mpi_plan[0] || !f.mpi_plan[1]) {
            if (bc_is_root)
                fprintf(stderr, "fft: FFTW cannot plan N=%ld on %d ranks; use --impl "
                                "fftw+alltoall\n", f.n, bc_nranks);
            MPI_Finalize();
            return 2;
        }
    } else
#endif
    {
        if (six_step_setup(&f, flags) != 0) {
            if (bc_is_root)
                fprintf(stderr, "fft: N=2^%ld has no factorisation N1*N2 with both multiples of "
                                "%d ranks; fftw+alltoall needs a power-of-two rank count P and "
                                "N >= P^2 (or use the Open MPI flavour's fftw-mpi)\n",
                        log2n, bc_nranks);
            MPI_Finalize();
            return 2;
        }
        x = fftw_alloc_complex((size_t)f.local);
        y = fftw_alloc_complex((size_t)f.local);
    }
    const char *impl_name = f.use_fftw_mpi ? "fftw-mpi" : "fftw+alltoall";

    for (long i = 0; i < f.local; i++)
        x[i] = val(f.start + i, 0) + I * val(f.start + i, 1);
    double best = 0, sum = 0;
    fft_exec(&f, 0, x, y); /* warm-up: first-touch of the work buffers */
    for (long it = 0; it < c.iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = bc_now();
        fft_exec(&f, 0, x, y);
        double t = bc_now() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = it == 0 || tmax < best ? tmax : best;
        sum += tmax;
    }
    double flop = 5.0 * (double)f.n * (double)log2n;
#define PFMT "\"n\": %ld, \"log2n\": %ld, \"iters\": %ld, \"impl\": \"%s\""
    bc_emit("gflops", flop / best / 1e9, "Gflop/s", "higher", PFMT, f.n, log2n, c.iters,
            impl_name);
    bc_emit("gflops_avg", flop / (sum / (double)c.iters) / 1e9, "Gflop/s", "higher", PFMT, f.n,
            log2n, c.iters, impl_name);
    if (c.validate) {
        /* Timing runs may have left scratch data in x: rebuild it, transform both ways. */
        for (long i = 0; i < f.local; i++)
            x[i] = val(f.start + i, 0) + I * val(f.start + i, 1);
        fft_exec(&f, 0, x, y);
        fftw_complex *z = fftw_alloc_complex((size_t)(f.local ? f.local : 1));
#ifdef BC_FFTW_MPI
        if (f.use_fftw_mpi) {
            fftw_free(z);
            z = fftw_alloc_complex((size_t)alloc);
        }
#endif
        fft_exec(&f, 1, y, z);
        double err = 0;
        for (long i = 0; i < f.local; i++) {
            /* Compare with freshly computed input: FFTW-MPI may use x as scratch space. */
            double e = cabs(z[i] / (double)f.n - (val(f.start + i, 0) + I * val(f.start + i, 1)));
            err = e > err ? e : err;
        }
        double all;
        MPI_Allreduce(&err, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        /* max|x| <= 0.5·sqrt(2); HPCC's threshold is 16 in units of eps·log2(N). */
        double bound = 16.0 * 2.220446049250313e-16 * (double)log2n;
        if (all > bound)
            bc_fail("fft: inverse error %g above %g", all, bound);
        bc_emit("error", all, "abs", "lower", PFMT, f.n, log2n, c.iters, impl_name);
        fftw_free(z);
    }
    fftw_free(x);
    fftw_free(y);
    return bc_finish();
}
