/* pmpi_stats: what the MPI layer did, printed at MPI_Finalize when BOBCAT_STATS asks, so a user
 * sees that the fast path was taken — and why not when it was not. One line per rank (or node)
 * and counter, key=value fields:
 *   bobcat: stats rank 3 node 1: layer=on thread=single
 *   bobcat: stats rank 3 node 1: Allreduce calls=630 inplace=600 staged=0 mpi=30 bytes.inplace=4800 ...
 *           alg.serial=580 alg.parallel=20 why.multinode=30
 * BOBCAT_STATS=node sums the counters of a node's ranks onto its first rank ("stats node 1 ranks=4").
 * Beside the rows of what bobcat handles, the account of every routine it only passes on (generated
 * pass-throughs, gen/gen_pass.py): "MPI_Alltoallv calls=4 mpi=4 bytes.mpi=4096 node=4 off-node=0
 * unknown=0" (where its communicator lies). With BOBCAT_STATS_DIR each rank also writes all of it as
 * JSON (rank-<r>.json), which yod --stats merges into one file with a summary. */
#include "pmpi_comm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pmpi_stats_on, pmpi_stats_print;
const char *const pmpi_why_names[PMPI_WHY_N] = {
    [PMPI_WHY_NONE] = "none",       [PMPI_WHY_OFF] = "layer-off",   [PMPI_WHY_INTER] = "intercomm",
    [PMPI_WHY_FORCED] = "forced",   [PMPI_WHY_DATATYPE] = "datatype", [PMPI_WHY_OP] = "op",
    [PMPI_WHY_MULTINODE] = "multinode", [PMPI_WHY_ORDER] = "noncommutative-order",
    [PMPI_WHY_SETUP] = "setup-failed", [PMPI_WHY_VARIANT] = "variant", [PMPI_WHY_OFFNODE] = "off-node",
    [PMPI_WHY_ROOT] = "root-not-leader", [PMPI_WHY_THREADS] = "multinode-threads",
    [PMPI_WHY_ALONE] = "one-per-node",
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

/* ---- the account of the pass-through routines ------------------------------------------------ */

static const char *const where_names[PMPI_PASS_WHERE] = {"node", "off-node", "unknown"};

__attribute__((noinline, cold)) void pmpi_pass_count(int idx, MPI_Comm comm, uint64_t bytes)
{
    PMPI_GUARD(); /* MULTIPLE: the peek reads the layer's tables, which another thread may change */
    const pmpi_layer_t *L = &pmpi_layer;
    int where = PMPI_PASS_UNKNOWN;
    /* Where the call's communicator lies, from what bobcat already knows of it (building its
     * tables here could attach an attribute to a communicator inside its own free). */
    const pmpi_comm_t *pc = comm != MPI_COMM_NULL && L->initialized ? pmpi_comm_peek(comm) : NULL;
    if (pc)
        where = pc->single_node ? PMPI_PASS_NODE : PMPI_PASS_OFFNODE;
    else if (L->initialized && L->world_size > 0 && L->local_size == L->world_size)
        where = PMPI_PASS_NODE; /* one node: everything is on it */
    uint64_t *w = pmpi_pass_acct[idx];
    if (L->thread_level == MPI_THREAD_MULTIPLE) {
        /* Several threads may pass calls at once: atomic adds (a locked add costs ~5 ns each, so
         * only here). */
        __atomic_fetch_add(&w[where], 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&w[PMPI_PASS_WHERE + where], bytes, __ATOMIC_RELAXED);
    } else {
        w[where]++;
        w[PMPI_PASS_WHERE + where] += bytes;
    }
}

uint64_t pmpi_pass_bytes(MPI_Count count, MPI_Datatype dt)
{
    MPI_Count size = 0;
    if (count <= 0 || dt == MPI_DATATYPE_NULL || PMPI_Type_size_x(dt, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

uint64_t pmpi_pass_vbytes(const void *counts, int wide, MPI_Datatype dt, MPI_Comm comm)
{
    int n = 0, inter = 0;
    if (!counts || comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS)
        return 0;
    MPI_Count total = 0;
    for (int i = 0; i < n; i++)
        total += wide ? ((const MPI_Count *)counts)[i] : ((const int *)counts)[i];
    return pmpi_pass_bytes(total, dt);
}

int pmpi_pass_index(const char *name)
{
    for (int i = 0; i < pmpi_pass_n; i++)
        if (!strcmp(pmpi_pass_names[i], name))
            return i;
    return -1;
}

/* The counters of one pmpi_stat_t as a flat run of uint64 (for the node sum). */
#define STAT_EXTRA_AT (2 * PMPI_PATH_N + PMPI_STAT_ALGS + PMPI_WHY_N)
#define STAT_WORDS (STAT_EXTRA_AT + PMPI_STAT_EXTRA)

/* Row i of a flattened run (see flatten), by part; 0 if it counted nothing (then it is not shown). */
typedef struct {
    const uint64_t *calls, *bytes, *alg, *why, *extra;
} row_view_t;

static int row_at(const pmpi_stat_t *s, const uint64_t *all, int i, row_view_t *v)
{
    const uint64_t *w = all + (size_t)i * STAT_WORDS;
    v->calls = w;
    v->bytes = w + PMPI_PATH_N;
    v->alg = w + 2 * PMPI_PATH_N;
    v->why = w + 2 * PMPI_PATH_N + PMPI_STAT_ALGS;
    v->extra = w + STAT_EXTRA_AT;
    uint64_t any = v->calls[0] | v->calls[1] | v->calls[2];
    for (int x = 0; x < PMPI_STAT_EXTRA && s->extra_names[x]; x++)
        any |= v->extra[x];
    return any != 0;
}

static const char *thread_name(int level)
{
    static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
    return level >= MPI_THREAD_SINGLE && level <= MPI_THREAD_MULTIPLE ? levels[level - MPI_THREAD_SINGLE] : levels[0];
}

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
    size_t cap = 512 + (size_t)(stats_count + pmpi_pass_n) * 512, len = 0;
    char *out = malloc(cap);
    if (!out)
        return;
    (void)ranks;
    len += (size_t)snprintf(out + len, cap - len, "bobcat: stats %s: layer=%s%s%s thread=%s\n", who,
                            L->on || !L->off_reason ? "on" : "off", L->off_reason ? " reason=" : "",
                            L->off_reason ? L->off_reason : "", thread_name(L->thread_level));
    int i = 0;
    for (const pmpi_stat_t *s = stats_head; s; s = s->next, i++) {
        row_view_t v;
        if (!row_at(s, all, i, &v))
            continue;
        const uint64_t *calls = v.calls, *bytes = v.bytes, *alg = v.alg, *why = v.why, *extra = v.extra;
        uint64_t total = calls[0] + calls[1] + calls[2];
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
    const uint64_t *pass = all + (size_t)stats_count * STAT_WORDS;
    for (int r = 0; r < pmpi_pass_n && len + 512 <= cap; r++) {
        const uint64_t *w = pass + (size_t)r * PMPI_PASS_WORDS;
        uint64_t calls = w[0] + w[1] + w[2], bytes = w[3] + w[4] + w[5];
        if (!calls)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "bobcat: stats %s: MPI_%s calls=%llu mpi=%llu bytes.mpi=%llu", who,
                                pmpi_pass_names[r], (unsigned long long)calls, (unsigned long long)calls,
                                (unsigned long long)bytes);
        for (int x = 0; x < PMPI_PASS_WHERE; x++)
            len += (size_t)snprintf(out + len, cap - len, " %s=%llu", where_names[x], (unsigned long long)w[x]);
        len += (size_t)snprintf(out + len, cap - len, "\n");
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

/* ---- the account as JSON (BOBCAT_STATS_DIR) ----------------------------------------------------- */

static void json_counts(FILE *f, const char *key, const uint64_t *v, const char *const *names, int n)
{
    fprintf(f, "\"%s\": {", key);
    for (int i = 0, first = 1; i < n; i++)
        if (names[i] && v[i]) {
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", names[i], (unsigned long long)v[i]);
            first = 0;
        }
    fprintf(f, "}");
}

/* This rank's rows and account in <dir>/rank-<r>.json, written whole or not at all (a temporary
 * file renamed into place), so yod never reads half a file. */
static void write_json(const char *dir, const uint64_t *all)
{
    const pmpi_layer_t *L = &pmpi_layer;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank-%d.json", dir, L->world_rank);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        util_warn("BOBCAT_STATS_DIR: cannot write %s: %s (is the directory there and writable?)", tmp, strerror(errno));
        return;
    }
    fprintf(f, "{\"version\": 1, \"rank\": %d, \"node\": %d, \"ranks\": %d, \"node_ranks\": %d, ",
            L->world_rank, L->world_node ? L->node : 0, L->world_size, L->local_size);
    fprintf(f, "\"layer\": \"%s\", \"reason\": \"%s\", \"thread\": \"%s\",\n \"rows\": [",
            L->on || !L->off_reason ? "on" : "off", L->off_reason ? L->off_reason : "", thread_name(L->thread_level));
    int i = 0, first = 1;
    for (const pmpi_stat_t *s = stats_head; s; s = s->next, i++) {
        row_view_t v;
        if (!row_at(s, all, i, &v))
            continue;
        fprintf(f, "%s\n  {\"name\": \"%s\", ", first ? "" : ",", s->name);
        first = 0;
        json_counts(f, "calls", v.calls, path_names, PMPI_PATH_N);
        fprintf(f, ", ");
        json_counts(f, "bytes", v.bytes, path_names, PMPI_PATH_N);
        fprintf(f, ", ");
        json_counts(f, "alg", v.alg, s->alg_names, PMPI_STAT_ALGS);
        fprintf(f, ", ");
        json_counts(f, "why", v.why, (const char *const *)pmpi_why_names, PMPI_WHY_N);
        fprintf(f, ", ");
        json_counts(f, "extra", v.extra, s->extra_names, PMPI_STAT_EXTRA);
        fprintf(f, "}");
    }
    fprintf(f, "],\n \"pass\": [");
    const uint64_t *pass = all + (size_t)stats_count * STAT_WORDS;
    first = 1;
    for (int r = 0; r < pmpi_pass_n; r++) {
        const uint64_t *w = pass + (size_t)r * PMPI_PASS_WORDS;
        if (!(w[0] | w[1] | w[2]))
            continue;
        fprintf(f, "%s\n  {\"name\": \"%s\", \"moves\": %s, ", first ? "" : ",", pmpi_pass_names[r],
                pmpi_pass_moves[r] ? "true" : "false");
        first = 0;
        json_counts(f, "calls", w, where_names, PMPI_PASS_WHERE);
        fprintf(f, ", ");
        json_counts(f, "bytes", w + PMPI_PASS_WHERE, where_names, PMPI_PASS_WHERE);
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        util_warn("BOBCAT_STATS_DIR: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}

void pmpi_stats_report(void)
{
    const pmpi_layer_t *L = &pmpi_layer;
    if (!pmpi_stats_on)
        return;
    size_t words = (size_t)stats_count * STAT_WORDS + (size_t)pmpi_pass_n * PMPI_PASS_WORDS;
    uint64_t *mine = calloc(words + 1, sizeof(uint64_t)), *sum = calloc(words + 1, sizeof(uint64_t));
    if (!mine || !sum)
        goto out;
    int i = 0;
    for (pmpi_stat_t *s = stats_head; s; s = s->next, i++)
        flatten(s, mine + (size_t)i * STAT_WORDS);
    memcpy(mine + (size_t)stats_count * STAT_WORDS, pmpi_pass_acct, (size_t)pmpi_pass_n * PMPI_PASS_WORDS * sizeof(uint64_t));
    if (L->opt->STATS_DIR[0])
        write_json(L->opt->STATS_DIR, mine);
    if (!pmpi_stats_print)
        goto out;
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
    PMPI_GUARD();
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
