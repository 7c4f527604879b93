/* pmpi_stats: what the MPI layer did, printed at MPI_Finalize when BOBCAT_STATS asks, so a user
 * sees that the fast path was taken — and why not when it was not. One line per rank (or node)
 * and counter, key=value fields:
 *   bobcat: stats rank 3 node 1: layer=on thread=single
 *   bobcat: stats rank 3 node 1: Allreduce calls=630 inplace=600 staged=0 mpi=30 bytes.inplace=4800 ...
 *           alg.serial=580 alg.parallel=20 why.multinode=30
 * BOBCAT_STATS=node sums the counters of a node's ranks onto its first rank ("stats node 1 ranks=4"). */
#include "pmpi_comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pmpi_stats_on;
const char *const pmpi_why_names[PMPI_WHY_N] = {
    [PMPI_WHY_NONE] = "none",       [PMPI_WHY_OFF] = "layer-off",   [PMPI_WHY_INTER] = "intercomm",
    [PMPI_WHY_FORCED] = "forced",   [PMPI_WHY_DATATYPE] = "datatype", [PMPI_WHY_OP] = "op",
    [PMPI_WHY_MULTINODE] = "multinode", [PMPI_WHY_ORDER] = "noncommutative-order",
    [PMPI_WHY_SETUP] = "setup-failed", [PMPI_WHY_VARIANT] = "variant", [PMPI_WHY_OFFNODE] = "off-node",
};
static const char *const path_names[PMPI_PATH_N] = {"inplace", "staged", "mpi"};

static pmpi_stat_t *stats_head, **stats_tail = &stats_head;
static int stats_count;

void pmpi_stats_register(pmpi_stat_t *s)
{
    s->next = NULL;
    *stats_tail = s;
    stats_tail = &s->next;
    stats_count++;
}

/* The counters of one pmpi_stat_t as a flat run of uint64 (for the node sum). */
#define STAT_EXTRA_AT (2 * PMPI_PATH_N + PMPI_STAT_ALGS + PMPI_WHY_N)
#define STAT_WORDS (STAT_EXTRA_AT + PMPI_STAT_EXTRA)

static void flatten(pmpi_stat_t *s, uint64_t *w)
{
    if (s->refresh)
        s->refresh(s);
    memcpy(w, s->calls, sizeof s->calls);
    memcpy(w + PMPI_PATH_N, s->bytes, sizeof s->bytes);
    memcpy(w + 2 * PMPI_PATH_N, s->alg, sizeof s->alg);
    memcpy(w + 2 * PMPI_PATH_N + PMPI_STAT_ALGS, s->why, sizeof s->why);
    memcpy(w + STAT_EXTRA_AT, s->extra, sizeof s->extra);
}

static void print_block(const char *who, const uint64_t *all, int ranks)
{
    const pmpi_layer_t *L = &pmpi_layer;
    static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
    size_t cap = 512 + (size_t)stats_count * 512, len = 0;
    char *out = malloc(cap);
    if (!out)
        return;
    const char *lvl = L->thread_level == MPI_THREAD_SINGLE ? levels[0]
                      : L->thread_level == MPI_THREAD_FUNNELED ? levels[1]
                      : L->thread_level == MPI_THREAD_SERIALIZED ? levels[2] : levels[3];
    (void)ranks;
    len += (size_t)snprintf(out + len, cap - len, "bobcat: stats %s: layer=%s%s%s thread=%s\n", who,
                            L->on || !L->off_reason ? "on" : "off", L->off_reason ? " reason=" : "",
                            L->off_reason ? L->off_reason : "", lvl);
    int i = 0;
    for (const pmpi_stat_t *s = stats_head; s; s = s->next, i++) {
        const uint64_t *w = all + (size_t)i * STAT_WORDS, *calls = w, *bytes = w + PMPI_PATH_N,
                       *alg = w + 2 * PMPI_PATH_N, *why = w + 2 * PMPI_PATH_N + PMPI_STAT_ALGS;
        const uint64_t *extra = w + STAT_EXTRA_AT;
        uint64_t total = calls[0] + calls[1] + calls[2], extras = 0;
        for (int x = 0; x < PMPI_STAT_EXTRA && s->extra_names[x]; x++)
            extras |= extra[x];
        if (!total && !extras)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "bobcat: stats %s: %s", who, s->name);
        if (total) {
            len += (size_t)snprintf(out + len, cap - len, " calls=%llu", (unsigned long long)total);
            for (int p = 0; p < PMPI_PATH_N; p++)
                len += (size_t)snprintf(out + len, cap - len, " %s=%llu", path_names[p], (unsigned long long)calls[p]);
            for (int p = 0; p < PMPI_PATH_N; p++)
                len += (size_t)snprintf(out + len, cap - len, " bytes.%s=%llu", path_names[p],
                                        (unsigned long long)bytes[p]);
        }
        for (int a = 0; a < PMPI_STAT_ALGS && s->alg_names[a]; a++)
            if (alg[a])
                len += (size_t)snprintf(out + len, cap - len, " alg.%s=%llu", s->alg_names[a], (unsigned long long)alg[a]);
        for (int y = 1; y < PMPI_WHY_N; y++)
            if (why[y])
                len += (size_t)snprintf(out + len, cap - len, " why.%s=%llu", pmpi_why_names[y], (unsigned long long)why[y]);
        for (int x = 0; x < PMPI_STAT_EXTRA && s->extra_names[x]; x++)
            if (extra[x])
                len += (size_t)snprintf(out + len, cap - len, " %s=%llu", s->extra_names[x], (unsigned long long)extra[x]);
        len += (size_t)snprintf(out + len, cap - len, "\n");
        if (len + 512 > cap)
            break;
    }
    /* One write: blocks of different ranks do not interleave line by line. */
    for (size_t off = 0; off < len;) {
        ssize_t k = write(STDERR_FILENO, out + off, len - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    free(out);
}

void pmpi_stats_report(void)
{
    const pmpi_layer_t *L = &pmpi_layer;
    if (!pmpi_stats_on)
        return;
    size_t words = (size_t)stats_count * STAT_WORDS;
    uint64_t *mine = calloc(words + 1, sizeof(uint64_t)), *sum = calloc(words + 1, sizeof(uint64_t));
    if (!mine || !sum)
        goto out;
    int i = 0;
    for (pmpi_stat_t *s = stats_head; s; s = s->next, i++)
        flatten(s, mine + (size_t)i * STAT_WORDS);
    char who[64];
    if (L->opt->STATS == UTIL_V_NODE) {
        /* The plan's node (simulated or not); without a plan, MPI's idea of a shared-memory node. */
        MPI_Comm nc;
        int node = L->world_node ? L->node : -1, nrank = 0, nsize = 1;
        if (node >= 0)
            PMPI_Comm_split(MPI_COMM_WORLD, node, L->world_rank, &nc);
        else
            PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, L->world_rank, MPI_INFO_NULL, &nc);
        PMPI_Comm_rank(nc, &nrank);
        PMPI_Comm_size(nc, &nsize);
        PMPI_Reduce(mine, sum, (int)words, MPI_UINT64_T, MPI_SUM, 0, nc);
        PMPI_Comm_free(&nc);
        if (nrank == 0) {
            if (node >= 0)
                snprintf(who, sizeof who, "node %d ranks=%d", node, nsize);
            else
                snprintf(who, sizeof who, "node of rank %d ranks=%d", L->world_rank, nsize);
            print_block(who, sum, nsize);
        }
    } else {
        snprintf(who, sizeof who, "rank %d node %d", L->world_rank, L->world_node ? L->node : 0);
        print_block(who, mine, 1);
    }
out:
    free(mine);
    free(sum);
}

/* One of this rank's counters by name, for programs that check which path ran (bobcat's tests):
 * key "calls", "inplace", "staged", "mpi", "alg.<name>", "why.<reason>" or a part's own counter
 * ("fbox.direct"); -1 if no such counter or key. Counted only while BOBCAT_STATS is on (0 otherwise). */
BOBCAT_EXPORT long long bobcat_mpi_stat(const char *call, const char *key)
{
    for (pmpi_stat_t *s = stats_head; s; s = s->next) {
        if (strcmp(s->name, call))
            continue;
        if (s->refresh)
            s->refresh(s);
        for (int x = 0; x < PMPI_STAT_EXTRA && s->extra_names[x]; x++)
            if (!strcmp(key, s->extra_names[x]))
                return (long long)s->extra[x];
        if (!strcmp(key, "calls"))
            return (long long)(s->calls[0] + s->calls[1] + s->calls[2]);
        for (int p = 0; p < PMPI_PATH_N; p++)
            if (!strcmp(key, path_names[p]))
                return (long long)s->calls[p];
        if (!strncmp(key, "alg.", 4))
            for (int a = 0; a < PMPI_STAT_ALGS && s->alg_names[a]; a++)
                if (!strcmp(key + 4, s->alg_names[a]))
                    return (long long)s->alg[a];
        if (!strncmp(key, "why.", 4))
            for (int y = 0; y < PMPI_WHY_N; y++)
                if (!strcmp(key + 4, pmpi_why_names[y]))
                    return (long long)s->why[y];
        return -1;
    }
    return -1;
}
