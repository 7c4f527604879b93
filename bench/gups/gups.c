/* bench/gups/gups.c — RandomAccess (HPCC's definition) in GUP/s, higher is better.
 *
 * A table of 2^n 64-bit words, T[i] = i, receives 4·2^n updates T[v & (2^n-1)] ^= v where v runs
 * through HPCC's stream: the LFSR v' = (v << 1) ^ (v < 0 ? 7 : 0) over GF(2), started at the
 * element HPCC_starts(k) gives. Verification replays the same updates (XOR twice restores T) and
 * counts words with T[i] != i; HPCC accepts up to 1 % of the table.
 *
 * --single: every rank runs its own table simultaneously (HPCC's StarRandomAccess); per-rank rate
 * and the sum are reported. Default (MPI mode): one table of 2^n words per rank, 2^n·ranks in all,
 * block-distributed; each rank generates its share of the global stream in chunks, buckets the
 * updates by owner, exchanges them with MPI_Alltoall/Alltoallv and applies them. This is a simple,
 * exact algorithm, not HPCC's look-ahead one. */
#include "bc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLY 0x0000000000000007ULL
#define PERIOD 1317624576693539401LL

static inline uint64_t lfsr_next(uint64_t v)
{
    return (v << 1) ^ ((int64_t)v < 0 ? POLY : 0);
}

/* The k-th element of the stream (element 0 is 1). Multiplying by x^(2^i) is linear over GF(2),
 * so precompute x^(2^i)·1 stepped twice per i and compose by square-and-multiply on k's bits. */
static uint64_t stream_start(int64_t k)
{
    while (k < 0)
        k += PERIOD;
    while (k > PERIOD)
        k -= PERIOD;
    if (k == 0)
        return 1;
    uint64_t m2[64];
    uint64_t t = 1;
    for (int i = 0; i < 64; i++) {
        m2[i] = t; /* the stream element 2i after 1, as a polynomial */
        t = lfsr_next(lfsr_next(t));
    }
    int top = 62;
    while (top >= 0 && !((k >> top) & 1))
        top--;
    uint64_t v = 2; /* x^1 */
    while (top > 0) {
        /* v := v^2 (mod the LFSR polynomial), computed as a linear map of v's bits. */
        uint64_t sq = 0;
        for (int j = 0; j < 64; j++)
            if ((v >> j) & 1)
                sq ^= m2[j];
        v = sq;
        top--;
        if ((k >> top) & 1)
            v = lfsr_next(v);
    }
    return v;
}

/* ---------------------------------------------------------------- single-process --------------- */

static void single_updates(uint64_t *table, uint64_t size, uint64_t nupdates)
{
    /* HPCC's serial code interleaves 128 streams to give the memory system independent misses. */
    enum { LANES = 128 };
    uint64_t v[LANES];
    uint64_t per = nupdates / LANES;
    for (int l = 0; l < LANES; l++)
        v[l] = stream_start((int64_t)(per * (uint64_t)l));
    for (uint64_t i = 0; i < per; i++)
        for (int l = 0; l < LANES; l++) {
            v[l] = lfsr_next(v[l]);
            table[v[l] & (size - 1)] ^= v[l];
        }
}

static uint64_t count_errors(const uint64_t *table, uint64_t size, uint64_t base)
{
    uint64_t err = 0;
    for (uint64_t i = 0; i < size; i++)
        err += table[i] != base + i;
    return err;
}

static void run_single(int log2, const bc_common_t *c)
{
    uint64_t size = 1ULL << log2, nup = 4 * size;
    bc_buf_t tb = bc_alloc(size * sizeof(uint64_t), c->pages);
    uint64_t *table = tb.p;
    for (uint64_t i = 0; i < size; i++)
        table[i] = i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bc_now();
    single_updates(table, size, nup);
    double t = bc_now() - t0;
    double gups = (double)nup / t / 1e9;
    uint64_t err = 0;
    if (c->validate) {
        single_updates(table, size, nup);
        err = count_errors(table, size, 0);
        if ((double)err > 0.01 * (double)size)
            bc_fail("gups single: %llu of %llu table words wrong (> 1%%)", (unsigned long long)err,
                    (unsigned long long)size);
    }
    double *all = bc_is_root ? malloc((size_t)bc_nranks * sizeof *all) : NULL;
    MPI_Gather(&gups, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    unsigned long long errs = err, errsum = 0;
    MPI_Reduce(&errs, &errsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (bc_is_root) {
        double sum = 0;
        for (int r = 0; r < bc_nranks; r++) {
            sum += all[r];
            bc_emit("gups", all[r], "GUP/s", "higher",
                    "\"mode\": \"single\", \"rank\": %d, \"log2_table\": %d, \"updates\": %llu, "
                    "\"pages\": \"%s\"",
                    r, log2, (unsigned long long)nup, tb.kind);
        }
        bc_emit("gups_sum", sum, "GUP/s", "higher",
                "\"mode\": \"single\", \"log2_table\": %d, \"updates\": %llu, \"pages\": \"%s\"",
                log2, (unsigned long long)nup * (unsigned long long)bc_nranks, tb.kind);
        if (c->validate)
            bc_emit("errors", (double)errsum, "words", "lower",
                    "\"mode\": \"single\", \"log2_table\": %d", log2);
        free(all);
    }
    bc_release(&tb);
}

/* ---------------------------------------------------------------- MPI mode --------------------- */

/* All ranks run the same number of rounds: each generates `chunk` updates of its stream share,
 * sends each to the rank owning its word, and applies what it receives. */
static void mpi_updates(uint64_t *table, int log2_local, uint64_t global_size, uint64_t nup_rank,
                        long chunk)
{
    int P = bc_nranks;
    uint64_t v = stream_start((int64_t)(nup_rank * (uint64_t)bc_rank));
    uint64_t *gen = malloc((size_t)chunk * sizeof *gen);
    uint64_t *sendb = malloc((size_t)chunk * sizeof *sendb);
    uint64_t *recvb = NULL;
    size_t recv_cap = 0;
    int *scnt = calloc((size_t)P, sizeof *scnt), *rcnt = calloc((size_t)P, sizeof *rcnt);
    int *sdis = calloc((size_t)P, sizeof *sdis), *rdis = calloc((size_t)P, sizeof *rdis);
    int *fill = calloc((size_t)P, sizeof *fill);
    if (!gen || !sendb || !scnt || !rcnt || !sdis || !rdis || !fill) {
        fprintf(stderr, "gups: out of memory for buckets\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    uint64_t local_mask = (1ULL << log2_local) - 1;
    for (uint64_t done = 0; done < nup_rank; done += (uint64_t)chunk) {
        uint64_t m = nup_rank - done < (uint64_t)chunk ? nup_rank - done : (uint64_t)chunk;
        memset(scnt, 0, (size_t)P * sizeof *scnt);
        for (uint64_t i = 0; i < m; i++) {
            v = lfsr_next(v);
            gen[i] = v;
            scnt[(v & (global_size - 1)) >> log2_local]++;
        }
        for (int p = 0, off = 0; p < P; p++) {
            sdis[p] = off;
            fill[p] = off;
            off += scnt[p];
        }
        for (uint64_t i = 0; i < m; i++)
            sendb[fill[(gen[i] & (global_size - 1)) >> log2_local]++] = gen[i];
        MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
        size_t total = 0;
        for (int p = 0; p < P; p++) {
            rdis[p] = (int)total;
            total += (size_t)rcnt[p];
        }
        if (total > recv_cap) {
            free(recvb);
            recv_cap = total;
            recvb = malloc(recv_cap * sizeof *recvb);
            if (!recvb) {
                fprintf(stderr, "gups: out of memory for %zu received updates\n", total);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
        MPI_Alltoallv(sendb, scnt, sdis, MPI_UINT64_T, recvb, rcnt, rdis, MPI_UINT64_T,
                      MPI_COMM_WORLD);
        for (size_t i = 0; i < total; i++)
            table[recvb[i] & local_mask] ^= recvb[i];
    }
    free(gen);
    free(sendb);
    free(recvb);
    free(scnt);
    free(rcnt);
    free(sdis);
    free(rdis);
    free(fill);
}

static void run_mpi(int log2, long chunk, const bc_common_t *c)
{
    int P = bc_nranks;
    if (P & (P - 1)) {
        if (bc_is_root)
            fprintf(stderr, "gups: MPI mode needs a power-of-two number of ranks (got %d); use "
                            "--single\n", P);
        MPI_Finalize();
        exit(2);
    }
    uint64_t local = 1ULL << log2, global = local * (uint64_t)P;
    uint64_t nup_rank = 4 * local; /* 4 × global table in all */
    bc_buf_t tb = bc_alloc(local * sizeof(uint64_t), c->pages);
    uint64_t *table = tb.p;
    uint64_t base = local * (uint64_t)bc_rank;
    for (uint64_t i = 0; i < local; i++)
        table[i] = base + i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bc_now();
    mpi_updates(table, log2, global, nup_rank, chunk);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = bc_now() - t0;
    double gups = 4.0 * (double)global / t / 1e9;
    unsigned long long err = 0, errsum = 0;
    if (c->validate) {
        mpi_updates(table, log2, global, nup_rank, chunk);
        err = count_errors(table, local, base);
    }
    MPI_Reduce(&err, &errsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (c->validate && bc_is_root && (double)errsum > 0.01 * (double)global)
        bc_fail("gups mpi: %llu of %llu table words wrong (> 1%%)", errsum,
                (unsigned long long)global);
    bc_emit("gups", gups, "GUP/s", "higher",
            "\"mode\": \"mpi\", \"log2_table\": %d, \"global_words\": %llu, \"updates\": %llu, "
            "\"chunk\": %ld, \"pages\": \"%s\"",
            log2, (unsigned long long)global, 4ULL * (unsigned long long)global, chunk, tb.kind);
    if (c->validate)
        bc_emit("errors", (double)errsum, "words", "lower", "\"mode\": \"mpi\", \"log2_table\": %d",
                log2);
    bc_release(&tb);
}

int main(int argc, char **argv)
{
    long log2 = 0, chunk = 1024;
    int single = 0;
    bc_common_t c = {0};
    bc_opt_t opts[] = {
        {"log2-table", BC_OPT_LONG, &log2,
         "table of 2^N 64-bit words per rank (0: 22 with --single, 20 in MPI mode)"},
        {"single", BC_OPT_FLAG, &single, "each rank updates its own table (StarRandomAccess)"},
        {"chunk", BC_OPT_LONG, &chunk, "MPI mode: updates generated per rank per exchange"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "gups",
             "HPCC RandomAccess in GUP/s (higher is better): --single per rank, else one table "
             "distributed over the ranks.",
             BC_C_PAGES, &c, opts);
    if (log2 == 0) /* MPI mode moves every update through MPI: a smaller default stays short */
        log2 = single ? 22 : 20;
    if (log2 < 5 || log2 > 36)
        bc_usage_error("--log2-table must be in 5..36");
    if (chunk < 1 || chunk > (1L << 24))
        bc_usage_error("--chunk must be in 1..16M");
    bc_init(&argc, &argv);
    if (single)
        run_single((int)log2, &c);
    else
        run_mpi((int)log2, chunk, &c);
    return bc_finish();
}
