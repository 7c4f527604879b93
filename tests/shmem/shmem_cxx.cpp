// shmem_cxx: shmem.h from C++ — the complex reductions with std::complex (C++ has no _Complex),
// the legacy complex *_to_all, and the 1.5 shmem_sync(team) overload beside the active-set form.
// Values are fixed by the arithmetic: PE p contributes (p+1) + (p+2)i.
#include <shmem.h>

#include <complex>
#include <cstdio>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                   \
            std::fprintf(stderr, __VA_ARGS__);                                                     \
            std::fputc('\n', stderr);                                                              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static long psync[SHMEM_SYNC_SIZE];
static long psync2[SHMEM_REDUCE_SYNC_SIZE];
static std::complex<double> wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 8];

int main()
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    auto *sd = static_cast<std::complex<double> *>(shmem_malloc(2 * sizeof(std::complex<double>)));
    auto *dd = static_cast<std::complex<double> *>(shmem_malloc(2 * sizeof(std::complex<double>)));
    auto *sf = static_cast<std::complex<float> *>(shmem_malloc(2 * sizeof(std::complex<float>)));
    auto *df = static_cast<std::complex<float> *>(shmem_malloc(2 * sizeof(std::complex<float>)));
    sd[0] = sd[1] = {double(me + 1), double(me + 2)};
    sf[0] = sf[1] = {float(me + 1), float(me + 2)};
    std::complex<double> sum = 0, prod = 1;
    for (int p = 0; p < npes; p++) {
        sum += std::complex<double>(p + 1, p + 2);
        prod *= std::complex<double>(p + 1, p + 2);
    }
    shmem_barrier_all();
    CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, dd, sd, 2) == 0, "complexd_sum_reduce returns 0");
    CHECK(dd[0] == sum && dd[1] == sum, "complexd sum (%g, %g)", dd[0].real(), dd[0].imag());
    shmem_complexf_prod_reduce(SHMEM_TEAM_WORLD, df, sf, 2);
    CHECK(std::abs(std::complex<double>(df[1]) - prod) <= 1e-5 * std::abs(prod), "complexf prod (%g, %g)",
          df[1].real(), df[1].imag());
    shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, dd, sd, 1);
    shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, df, sf, 1);
    CHECK(std::abs(dd[0] - prod) <= 1e-12 * std::abs(prod) && df[0] == std::complex<float>(sum),
          "complexd prod / complexf sum");
    for (long &w : psync)
        w = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_complexd_sum_to_all(dd, sd, 2, 0, 0, npes, wrk, psync);
    CHECK(dd[1] == sum, "complexd_sum_to_all (%g, %g)", dd[1].real(), dd[1].imag());
    // The 1.5 team form and the deprecated active-set form of shmem_sync.
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team) returns 0");
    for (long &w : psync2)
        w = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_sync(0, 0, npes, psync2);
    static int sfails;
    sfails = failures;
    shmem_barrier_all();
    int total = 0;
    for (int p = 0; p < npes; p++)
        total += shmem_int_g(&sfails, p);
    if (me == 0)
        std::printf("shmem_cxx: %d PEs, %d failed checks\n", npes, total);
    shmem_finalize();
    return failures ? 1 : 0;
}
