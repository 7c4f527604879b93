/* boot_plan: the node plan yod computed (BOBCAT_PLAN) -> this rank's node and local rank. */
#include "boot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bobcat_status_t boot_plan_place(const char *plan, int rank, boot_place_t *place_p)
{
    boot_place_t pl = {.world_rank = rank, .node = -1};
    const char *p = plan;
    long first = 0, node_base = 0;
    int group = 0;
    if (!plan || !*plan) {
        util_error("no node plan (BOBCAT_PLAN): start the program with yod");
        return BOBCAT_ERR_INVAL;
    }
    while (*p) {
        char *end;
        errno = 0;
        long n = strtol(p, &end, 10);
        if (errno || end == p || *end != ':' || n <= 0)
            goto bad;
        p = end + 1;
        long rpn = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ';') || rpn <= 0)
            goto bad;
        if (*end == ';' && !end[1])
            goto bad; /* a trailing ';' promises a group that is not there */
        p = *end ? end + 1 : end;
        if (rank >= first && rank < first + n) {
            long i = rank - first, last_node_ranks = n % rpn ? n % rpn : rpn;
            long nodes = (n + rpn - 1) / rpn;
            pl.node = (int)(node_base + i / rpn);
            pl.local_rank = (int)(i % rpn);
            pl.local_size = (int)(i / rpn == nodes - 1 ? last_node_ranks : rpn);
            pl.node_first_rank = (int)(first + (i / rpn) * rpn);
        }
        first += n;
        node_base += (n + rpn - 1) / rpn;
        group++;
    }
    pl.world_size = (int)first;
    if (pl.node < 0) {
        util_error("world rank %d is outside the plan '%s' (%ld ranks): the launcher started more ranks than yod planned",
                   rank, plan, first);
        return BOBCAT_ERR_INVAL;
    }
    *place_p = pl;
    return BOBCAT_OK;
bad:
    util_error("malformed node plan BOBCAT_PLAN='%s' at group %d (expected 'nranks:ranks_per_node;...')", plan, group + 1);
    return BOBCAT_ERR_INVAL;
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end || x < 0 || x > 1 << 30) ? -1 : (int)x;
}

int boot_env_world_rank(const char *override)
{
    if (override && *override) {
        char *end;
        long x = strtol(override, &end, 10);
        return (*end || x < 0) ? -1 : (int)x;
    }
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int r = env_int(names[i]);
        if (r >= 0)
            return r;
    }
    return -1;
}

int boot_env_host_local_index(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int r = env_int(names[i]);
        if (r >= 0)
            return r;
    }
    return -1;
}
