/* mp_util: tiny checking helpers shared by the multi-rank tests. */
#ifndef BOBCAT_MP_UTIL_H
#define BOBCAT_MP_UTIL_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mp_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            mp_failures++;                                                      \
        }                                                                       \
    } while (0)

/* This rank's digest file for run_compare.sh: <prefix>.<rank>, the prefix being the program's last
 * argument; NULL when the program has no arguments. */
static inline FILE *mp_digest_open(int argc, char **argv, int rank)
{
    if (argc < 2)
        return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", argv[argc - 1], rank);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    return f;
}

/* The environment variable `name` is a or b (b may be NULL). */
static inline int mp_env_is(const char *name, const char *a, const char *b)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, a) || (b && !strcmp(v, b)));
}

/* One BOBCAT_STATS counter of the MPI layer (`call`'s row, `key`: "calls", "mpi", "alg.ring",
 * "why.multinode", ...), or -1 when the layer is not loaded. */
static inline long long mp_stat(const char *call, const char *key)
{
    static long long (*fn)(const char *, const char *);
    static int looked;
    if (!looked) {
        fn = (long long (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "bobcat_mpi_stat");
        looked = 1;
    }
    return fn ? fn(call, key) : -1;
}

/* FNV-1a of n bytes (the digests run_compare.sh compares). */
static inline uint64_t mp_fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

#if defined(MPI_VERSION) && defined(BOBCAT_SMARTMAP_H)
/* Every rank of comm on my node (then the layer runs its nonblocking collectives there). For the
 * programs that include <mpi.h> and <bobcat/smartmap.h> first. */
static inline int mp_on_node(MPI_Comm comm)
{
    MPI_Group g, wg;
    int n, all = 1;
    MPI_Comm_size(comm, &n);
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int q = 0; q < n; q++) {
        int w;
        MPI_Group_translate_ranks(g, 1, &q, wg, &w);
        all &= smap_pe_is_local(w) >= 0;
    }
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    return all;
}
#endif

#endif
