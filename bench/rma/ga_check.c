/* bench/rma/ga_check.c — a Global Arrays workload (Debian's GA 5.8.2 over ARMCI-MPI, so every
 * remote access is MPI one-sided communication) whose result does not depend on timing: run_client.sh
 * runs it bare and under yod and compares the printed checksums byte for byte.
 *
 * Per iteration, on N x N arrays of doubles spread over the ranks:
 *   A: every rank NGA_Puts the row blocks of A whose number modulo nranks is its rank + 1 (so most
 *      puts go to another rank's part), values small integers;
 *   B: every rank NGA_Accs (rank + 1) x the pattern onto the whole of B (concurrent accumulates);
 *   C: row blocks handed out by a shared counter (NGA_Read_inc: MPI_Fetch_and_op), each block of A
 *      fetched with NGA_Get, squared element-wise and NGA_Acc'd into C;
 *   D = A B with GA_Dgemm (gets of patches).
 * Every value is an integer below 2^53, so the sums are exact whatever the order and the checksums
 * are the same for every run and every MPI. Rank 0 prints one line:
 *   ga_check: n N iters I ranks R tasks T sum_a .. sum_b .. sum_c .. sum_d .. hash 0x.. time_s S
 * (hash: FNV-1a over the bytes of A, B, C and D read back with NGA_Get on rank 0).
 *   ga_check [N] [ITERS]      (default 256 20) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "macdecls.h"

#define BLOCK 16

static double pattern(int i, int j)
{
    return (double)((i * 31 + j * 17) % 97);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t k = 0; k < n; k++)
        h = (h ^ b[k]) * 0x100000001b3ULL;
    return h;
}

/* Rank 0 reads the whole array back; its sum and the FNV-1a of its bytes. */
static double readback(int g, int n, double *buf, uint64_t *hash)
{
    int lo[2] = {0, 0}, hi[2] = {n - 1, n - 1}, ld[1] = {n};
    NGA_Get(g, lo, hi, buf, ld);
    double s = 0;
    for (long k = 0; k < (long)n * n; k++)
        s += buf[k];
    *hash = fnv(*hash, buf, (size_t)n * n * sizeof *buf);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    GA_Initialize();
    int n = argc > 1 ? atoi(argv[1]) : 256, iters = argc > 2 ? atoi(argv[2]) : 20;
    int me = GA_Nodeid(), np = GA_Nnodes();
    if (n < BLOCK || n % BLOCK || iters < 1) {
        if (me == 0)
            fprintf(stderr, "ga_check: N must be a multiple of %d, ITERS at least 1\n", BLOCK);
        GA_Terminate();
        MPI_Finalize();
        return 2;
    }
    if (!MA_init(C_DBL, 1 << 20, 1 << 22)) {
        fprintf(stderr, "ga_check: MA_init failed\n");
        GA_Error("MA_init", 0);
    }
    int dims[2] = {n, n}, one[1] = {1};
    int ga = NGA_Create(C_DBL, 2, dims, "A", NULL), gb = NGA_Create(C_DBL, 2, dims, "B", NULL);
    int gc = NGA_Create(C_DBL, 2, dims, "C", NULL), gd = NGA_Create(C_DBL, 2, dims, "D", NULL);
    int gcount = NGA_Create(C_LONG, 1, one, "counter", NULL);
    double *rows = malloc(sizeof(double) * BLOCK * n), *full = malloc(sizeof(double) * n * n);
    if (!rows || !full)
        GA_Error("ga_check: no memory", n);
    int blocks = n / BLOCK, tasks = 0;
    GA_Zero(gb);
    GA_Zero(gc);
    GA_Sync();
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (int b = 0; b < blocks; b++) {
            if (b % np != (me + 1) % np)
                continue;
            for (int i = 0; i < BLOCK; i++)
                for (int j = 0; j < n; j++)
                    rows[i * n + j] = pattern(b * BLOCK + i, j) + it;
            int lo[2] = {b * BLOCK, 0}, hi[2] = {b * BLOCK + BLOCK - 1, n - 1}, ld[1] = {n};
            NGA_Put(ga, lo, hi, rows, ld);
        }
        double alpha = me + 1;
        for (int b = 0; b < blocks; b++) {
            for (int i = 0; i < BLOCK; i++)
                for (int j = 0; j < n; j++)
                    rows[i * n + j] = pattern(j, b * BLOCK + i) - 48;
            int lo[2] = {b * BLOCK, 0}, hi[2] = {b * BLOCK + BLOCK - 1, n - 1}, ld[1] = {n};
            NGA_Acc(gb, lo, hi, rows, ld, &alpha);
        }
        GA_Zero(gcount);
        GA_Sync();
        int zero[1] = {0};
        for (long b; (b = NGA_Read_inc(gcount, zero, 1)) < blocks; tasks++) {
            int lo[2] = {(int)b * BLOCK, 0}, hi[2] = {(int)b * BLOCK + BLOCK - 1, n - 1}, ld[1] = {n};
            NGA_Get(ga, lo, hi, rows, ld);
            for (int k = 0; k < BLOCK * n; k++)
                rows[k] = rows[k] * rows[k];
            double unit = 1;
            NGA_Acc(gc, lo, hi, rows, ld, &unit);
        }
        GA_Sync();
    }
    GA_Dgemm('N', 'N', n, n, n, 1.0, ga, gb, 0.0, gd);
    GA_Sync();
    double el = MPI_Wtime() - t0;
    int all_tasks = tasks;
    MPI_Allreduce(&tasks, &all_tasks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        uint64_t h = 0xcbf29ce484222325ULL;
        double sa = readback(ga, n, full, &h), sb = readback(gb, n, full, &h);
        double sc = readback(gc, n, full, &h), sd = readback(gd, n, full, &h);
        printf("ga_check: n %d iters %d ranks %d tasks %d sum_a %.17g sum_b %.17g sum_c %.17g sum_d %.17g "
               "hash 0x%016llx time_s %.6f\n", n, iters, np, all_tasks, sa, sb, sc, sd, (unsigned long long)h, el);
        fflush(stdout);
    }
    GA_Sync();
    free(rows);
    free(full);
    GA_Destroy(gcount);
    GA_Destroy(gd);
    GA_Destroy(gc);
    GA_Destroy(gb);
    GA_Destroy(ga);
    GA_Terminate();
    MPI_Finalize();
    return 0;
}
