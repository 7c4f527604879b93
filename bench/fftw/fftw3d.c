/* fftw3d: a real library's MPI_Alltoallv traffic, timed (issue 30). A 3D complex transform of
 * N0×N1×N2 points with Debian's FFTW MPI interface (built against Open MPI), planned as a spectral
 * solver or a convolution plans it: out of place, FFTW_DESTROY_INPUT, the forward transform leaving
 * its output transposed (FFTW_MPI_TRANSPOSED_OUT) and the backward one taking it so
 * (FFTW_MPI_TRANSPOSED_IN), which saves a transpose each way. FFTW_ESTIMATE then transposes with
 * MPI_Alltoallv when the decomposition is uneven (the default size is, on 2 and 3 ranks). Times ITERS forward+backward pairs after one untimed pair and prints
 * the median pair time (the slowest rank's), FFTW's plan (which transposes it chose) and a checksum
 * of the last result that every run must reproduce exactly.
 *   fftw3d [N0 N1 N2 [ITERS]]      (default 151 130 97, 9 iterations) */
#include <fftw3-mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    fftw_mpi_init();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ptrdiff_t n0 = argc > 3 ? atol(argv[1]) : 151, n1 = argc > 3 ? atol(argv[2]) : 130, n2 = argc > 3 ? atol(argv[3]) : 97;
    int iters = argc > 4 ? atoi(argv[4]) : 9;
    if (n0 < 1 || n1 < 1 || n2 < 1 || iters < 1 || iters > 1000) {
        if (rank == 0)
            fprintf(stderr, "fftw3d: sizes must be positive and ITERS 1..1000 (usage: fftw3d [N0 N1 N2 [ITERS]])\n");
        MPI_Finalize();
        return 2;
    }
    ptrdiff_t ln0, s0, ln1, s1, plane = n1 * n2;
    ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(n0, n1, n2, MPI_COMM_WORLD, &ln0, &s0, &ln1, &s1);
    fftw_complex *a = fftw_alloc_complex(alloc), *b = fftw_alloc_complex(alloc);
    unsigned flags = FFTW_ESTIMATE | FFTW_DESTROY_INPUT;
    fftw_plan fwd = fftw_mpi_plan_dft_3d(n0, n1, n2, a, b, MPI_COMM_WORLD, FFTW_FORWARD,
                                          flags | FFTW_MPI_TRANSPOSED_OUT);
    fftw_plan bwd = fftw_mpi_plan_dft_3d(n0, n1, n2, b, a, MPI_COMM_WORLD, FFTW_BACKWARD,
                                          flags | FFTW_MPI_TRANSPOSED_IN);
    if (!fwd || !bwd) {
        if (rank == 0)
            fprintf(stderr, "fftw3d: FFTW made no plan for %td x %td x %td\n", n0, n1, n2);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (rank == 0) {
        printf("fftw3d: plan ");
        fftw_print_plan(fwd);
        printf(" ");
        fftw_print_plan(bwd);
        printf("\n");
    }
    for (ptrdiff_t x = 0; x < ln0 * plane; x++) {
        double g = (double)(s0 * plane + x);
        a[x][0] = sin(0.0013 * g);
        a[x][1] = cos(0.00071 * g);
    }
    double *t = malloc(sizeof(double) * (size_t)iters), scale = 1.0 / (double)(n0 * n1 * n2);
    for (int it = -1; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        fftw_execute(fwd);
        fftw_execute(bwd);
        double dt = MPI_Wtime() - t0, worst;
        MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it >= 0)
            t[it] = worst;
        for (ptrdiff_t x = 0; x < ln0 * plane; x++) { /* back to the input's scale for the next pair */
            a[x][0] *= scale;
            a[x][1] *= scale;
        }
    }
    double sum = 0, all;
    for (ptrdiff_t x = 0; x < ln0 * plane; x++)
        sum += fabs(a[x][0]) + fabs(a[x][1]);
    MPI_Reduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    if (rank == 0)
        printf("fftw3d: ranks %d size %tdx%tdx%td pair_s %.6e checksum %.17g\n", size, n0, n1, n2,
               iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2, all);
    free(t);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(a);
    fftw_free(b);
    fftw_mpi_cleanup();
    MPI_Finalize();
    return 0;
}
