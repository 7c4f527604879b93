/* mp_fftw: a library nobody on the team wrote drives MPI_Alltoallv (issue 30). Debian's FFTW MPI
 * interface (libfftw3-mpi, built against Open MPI only) transposes distributed arrays with
 * MPI_Alltoallv when the blocks are uneven: its out-of-place transpose ("mpi-transpose-alltoall")
 * is the one FFTW_ESTIMATE picks once the input may be destroyed (FFTW_DESTROY_INPUT), as a real
 * code asks for it, for the plans whose vectors split contiguously (the others transpose pairwise
 * with MPI_Sendrecv, also checked here). The sizes below divide evenly over no rank count the tests use.
 *
 * Cases, each planned once and executed REPS times on fresh input:
 *  - c2c3d: 45×38×21 complex, forward, checked against FFTW's serial transform of the whole array;
 *    then backward, checked to give back N times the input;
 *  - c2c2d.tout: 50×33 complex with FFTW_MPI_TRANSPOSED_OUT (the output stays transposed, 33×50,
 *    distributed along its first dimension), checked against the serial transform;
 *  - r2c3d: 30×27×20 real to complex, checked against the serial r2c.
 * Every rank writes each case's output bytes as a digest line (run_compare.sh compares them with the
 * real MPI's: the same plan moves the same bytes). With BOBCAT_STATS the program checks that the
 * transposes took bobcat's path: on one node no Alltoallv went to the real MPI; across nodes they
 * were hierarchical (alg.hier), or with BOBCAT_COLL_HIER=0 the real MPI's.
 * Usage: mp_fftw [digest-prefix] */
#include <fftw3-mpi.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

#include "mp_util.h"

enum { REPS = 3 };

static int wrank, wsize;
static FILE *digest;

/* A deterministic, irregular input value for global element x of a case. */
static double input(long x, int part)
{
    return part ? cos(0.00071 * (double)x * (double)(x % 97)) : sin(0.0013 * (double)x) + (double)(x % 7) / 7.0;
}

/* The largest |a - b| over n complex values, and the largest |b|. */
static void cmp_complex(const fftw_complex *a, const fftw_complex *b, long n, double *err, double *mag)
{
    for (long i = 0; i < n; i++) {
        double d = hypot(a[i][0] - b[i][0], a[i][1] - b[i][1]);
        double m = hypot(b[i][0], b[i][1]);
        if (d > *err)
            *err = d;
        if (m > *mag)
            *mag = m;
    }
}

/* All ranks agree on the case's worst error relative to its largest value; FFTW's error grows like
 * eps·log N, so 1e-10 leaves three orders of magnitude for the different plans. */
static void expect_close(const char *name, const char *what, double err, double mag)
{
    double e[2] = {err, mag}, g[2];
    MPI_Allreduce(e, g, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(g[0] <= 1e-10 * (g[1] > 1 ? g[1] : 1), "%s: %s differs from the serial transform: %g of %g", name, what, g[0],
          g[1]);
}

static void put_digest(const char *name, int rep, const void *p, size_t n)
{
    if (digest)
        fprintf(digest, "%s rep %d bytes %zu fnv %016llx\n", name, rep, n, (unsigned long long)mp_fnv(p, n));
}

static void case_c2c3d(void)
{
    const ptrdiff_t N0 = 45, N1 = 38, N2 = 21, plane = N1 * N2, all = N0 * N1 * N2;
    ptrdiff_t ln0, s0;
    ptrdiff_t alloc = fftw_mpi_local_size_3d(N0, N1, N2, MPI_COMM_WORLD, &ln0, &s0);
    fftw_complex *in = fftw_alloc_complex(alloc), *out = fftw_alloc_complex(alloc), *back = fftw_alloc_complex(alloc);
    fftw_complex *whole = fftw_alloc_complex(all), *ref = fftw_alloc_complex(all);
    fftw_plan fwd = fftw_mpi_plan_dft_3d(N0, N1, N2, in, out, MPI_COMM_WORLD, FFTW_FORWARD, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    fftw_plan bwd =
        fftw_mpi_plan_dft_3d(N0, N1, N2, out, back, MPI_COMM_WORLD, FFTW_BACKWARD, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    fftw_plan ser = fftw_plan_dft_3d((int)N0, (int)N1, (int)N2, whole, ref, FFTW_FORWARD, FFTW_ESTIMATE);
    CHECK(fwd && bwd && ser, "c2c3d: no plan");
    for (long x = 0; x < all; x++) {
        whole[x][0] = input(x, 0);
        whole[x][1] = input(x, 1);
    }
    fftw_execute(ser);
    double err = 0, mag = 0, rerr = 0, rmag = 0;
    for (int rep = 0; rep < REPS; rep++) {
        for (long x = 0; x < ln0 * plane; x++) {
            in[x][0] = input(s0 * plane + x, 0);
            in[x][1] = input(s0 * plane + x, 1);
        }
        fftw_execute(fwd);
        cmp_complex(out, ref + s0 * plane, ln0 * plane, &err, &mag);
        put_digest("c2c3d.forward", rep, out, (size_t)(ln0 * plane) * sizeof *out);
        fftw_execute(bwd); /* destroys out */
        for (long x = 0; x < ln0 * plane; x++) {
            back[x][0] /= (double)all;
            back[x][1] /= (double)all;
        }
        cmp_complex(back, whole + s0 * plane, ln0 * plane, &rerr, &rmag);
        put_digest("c2c3d.backward", rep, back, (size_t)(ln0 * plane) * sizeof *back);
    }
    expect_close("c2c3d", "the forward transform", err, mag);
    expect_close("c2c3d", "the round trip", rerr, rmag);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_destroy_plan(ser);
    fftw_free(in);
    fftw_free(out);
    fftw_free(back);
    fftw_free(whole);
    fftw_free(ref);
}

static void case_c2c2d_transposed(void)
{
    const ptrdiff_t N0 = 50, N1 = 33;
    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc = fftw_mpi_local_size_2d_transposed(N0, N1, MPI_COMM_WORLD, &ln0, &s0, &ln1, &s1);
    fftw_complex *in = fftw_alloc_complex(alloc), *out = fftw_alloc_complex(alloc);
    fftw_complex *whole = fftw_alloc_complex(N0 * N1), *ref = fftw_alloc_complex(N0 * N1);
    fftw_complex *want = fftw_alloc_complex(ln1 * N0 + 1);
    fftw_plan fwd = fftw_mpi_plan_dft_2d(N0, N1, in, out, MPI_COMM_WORLD, FFTW_FORWARD,
                                         FFTW_ESTIMATE | FFTW_DESTROY_INPUT | FFTW_MPI_TRANSPOSED_OUT);
    fftw_plan ser = fftw_plan_dft_2d((int)N0, (int)N1, whole, ref, FFTW_FORWARD, FFTW_ESTIMATE);
    CHECK(fwd && ser, "c2c2d.tout: no plan");
    for (long x = 0; x < N0 * N1; x++) {
        whole[x][0] = input(x, 0);
        whole[x][1] = input(x, 1);
    }
    fftw_execute(ser);
    for (ptrdiff_t j = 0; j < ln1; j++) /* my rows of the transposed result: ref's columns s1.. */
        for (ptrdiff_t i = 0; i < N0; i++)
            memcpy(want[j * N0 + i], ref[i * N1 + s1 + j], sizeof(fftw_complex));
    double err = 0, mag = 0;
    for (int rep = 0; rep < REPS; rep++) {
        for (long x = 0; x < ln0 * N1; x++) {
            in[x][0] = input(s0 * N1 + x, 0);
            in[x][1] = input(s0 * N1 + x, 1);
        }
        fftw_execute(fwd);
        cmp_complex(out, want, ln1 * N0, &err, &mag);
        put_digest("c2c2d.tout", rep, out, (size_t)(ln1 * N0) * sizeof *out);
    }
    expect_close("c2c2d.tout", "the transposed forward transform", err, mag);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(ser);
    fftw_free(in);
    fftw_free(out);
    fftw_free(whole);
    fftw_free(ref);
    fftw_free(want);
}

static void case_r2c3d(void)
{
    const ptrdiff_t N0 = 30, N1 = 27, N2 = 20, H = N2 / 2 + 1;
    ptrdiff_t ln0, s0;
    ptrdiff_t alloc = fftw_mpi_local_size_3d(N0, N1, H, MPI_COMM_WORLD, &ln0, &s0);
    double *in = fftw_alloc_real(2 * alloc), *whole = fftw_alloc_real(N0 * N1 * N2);
    fftw_complex *out = fftw_alloc_complex(alloc), *ref = fftw_alloc_complex(N0 * N1 * H);
    fftw_plan fwd = fftw_mpi_plan_dft_r2c_3d(N0, N1, N2, in, out, MPI_COMM_WORLD, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    fftw_plan ser = fftw_plan_dft_r2c_3d((int)N0, (int)N1, (int)N2, whole, ref, FFTW_ESTIMATE);
    CHECK(fwd && ser, "r2c3d: no plan");
    for (long x = 0; x < N0 * N1 * N2; x++)
        whole[x] = input(x, 0);
    fftw_execute(ser);
    double err = 0, mag = 0;
    for (int rep = 0; rep < REPS; rep++) {
        /* The MPI r2c input rows are padded to 2·H reals. */
        for (ptrdiff_t i = 0; i < ln0; i++)
            for (ptrdiff_t j = 0; j < N1; j++)
                for (ptrdiff_t k = 0; k < 2 * H; k++)
                    in[(i * N1 + j) * 2 * H + k] = k < N2 ? input(((s0 + i) * N1 + j) * N2 + k, 0) : 0.0;
        fftw_execute(fwd);
        cmp_complex(out, ref + s0 * N1 * H, ln0 * N1 * H, &err, &mag);
        put_digest("r2c3d", rep, out, (size_t)(ln0 * N1 * H) * sizeof *out);
    }
    expect_close("r2c3d", "the forward transform", err, mag);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(ser);
    fftw_free(in);
    fftw_free(whole);
    fftw_free(out);
    fftw_free(ref);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    fftw_mpi_init();
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    digest = mp_digest_open(argc, argv, wrank);
    int layer = !mp_env_is("BOBCAT_MPI", "off", "0") && mp_stat("Alltoallv", "calls") >= 0;
    int stats = layer && getenv("BOBCAT_STATS") && !mp_env_is("BOBCAT_STATS", "off", "0");
    int single = smap_local_size() == wsize;
    int nohier = mp_env_is("BOBCAT_COLL_HIER", "0", "off");

    case_c2c3d();
    case_c2c2d_transposed();
    case_r2c3d();

    if (stats) {
        /* FFTW picks its transpose per plan and rank count: the 2D case with transposed output
         * always takes the all-to-all one; the 3D cases take it or the pairwise one (sendrecv,
         * "discontig" vector splits: 2 and 3 ranks here). A transpose whose blocks happen to be
         * equal is an MPI_Alltoall; these sizes give uneven blocks on every rank count. */
        long long v = mp_stat("Alltoallv", "calls"), vm = mp_stat("Alltoallv", "mpi");
        long long a = mp_stat("Alltoall", "calls"), am = mp_stat("Alltoall", "mpi");
        long long vh = mp_stat("Alltoallv", "alg.hier");
        CHECK(v > 0 && v + a >= (long long)REPS, "FFTW made %lld Alltoallv and %lld Alltoall calls, expected %d or more", v,
              a, REPS);
        if (single)
            CHECK(vm == 0 && am == 0, "one node: Alltoallv %lld of %lld, Alltoall %lld of %lld went to the real MPI", vm, v,
                  am, a);
        else if (nohier)
            CHECK(vm == v && vh == 0, "BOBCAT_COLL_HIER=0: Alltoallv mpi %lld of %lld, alg.hier %lld", vm, v, vh);
        else
            CHECK(vm == 0 && am == 0 && vh == v, "across nodes: Alltoallv mpi %lld alg.hier %lld of %lld, Alltoall mpi %lld",
                  vm, vh, v, am);
    }

    if (digest)
        fclose(digest);
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mp_fftw: %d ranks, %d on my node, layer %s, stats %s, Alltoallv calls %lld (mpi %lld): %s\n", wsize,
               smap_local_size(), layer ? "on" : "off", stats ? "checked" : "not checked", mp_stat("Alltoallv", "calls"),
               mp_stat("Alltoallv", "mpi"), total ? "FAILED" : "ok");
    fftw_mpi_cleanup();
    MPI_Finalize();
    return total ? 1 : 0;
}
