/* shmem_coll: broadcast, collect, fcollect, alltoall(s) and reductions, for teams (1.5) and for
 * legacy active sets with pSync (broadcast32/64, ..., *_to_all).
 *
 * One engine per collective over an active set (shi_set_t): sync, then every member *pulls* what
 * it needs from the others, then sync. On this node a pull is a memcpy (or a reduction) straight
 * out of the other PE's buffer through its window: the data moves once, in place, with no staging
 * copy; PEs of other nodes are read with MPI_Get. Reductions combine the members' contributions
 * in member order on every PE, so every PE gets bit-identical floating-point results. */
#include "shmem_internal.h"

#include <complex.h>
#include <stdlib.h>

/* The syncs of a collective: what this PE copied (a large memcpy streams with non-temporal
 * stores, which a release store does not order) is visible before it signals. */
static inline void csync(shi_set_t *s)
{
    shi_store_fence();
    shi_set_sync(s);
}

/* A get of n bytes, nothing at all for none (zero-size collects may pass any pointer). */
static inline void get_n(void *dest, const void *src, size_t n, int pe, const char *R, int nbi)
{
    if (n)
        shi_get(dest, src, n, pe, R, nbi);
}

/* Hierarchy of a team or legacy active set spanning nodes (0 for one-node sets and sets of one
 * PE per node). *leaders_p gets the set index of each node's first member (node order). */
static int hier(shi_set_t *s, shi_hier_t *h, int **leaders_p, const char *R)
{
    *leaders_p = NULL;
    if (shi.all_local)
        return 0;
    int *leaders = malloc(sizeof(int) * (size_t)s->size);
    if (!leaders)
        shi_fatal(R, "out of memory");
    if (!shi_set_hier(s, h, leaders)) {
        free(leaders);
        return 0;
    }
    *leaders_p = leaders;
    return 1;
}

/* Broadcast across nodes: each other node's leader fetches the root's data (the one transfer per
 * node between nodes) into its dest, then its node's members copy it from there in place. */
static void bcast_hier(shi_set_t *s, void *dest, const void *src, size_t nbytes, int root, int root_too,
                       const shi_hier_t *h, const char *R)
{
    int root_pe = shi_set_pe(s, root), me_pe = shi_set_pe(s, s->me);
    int root_node = shi.node[root_pe] == shi.node[me_pe];
    csync(s);
    if (s->me == root) {
        if (root_too && dest != src)
            memmove(dest, src, nbytes);
    } else if (root_node || h->leader_idx >= 0) {
        get_n(dest, src, nbytes, root_pe, R, 0);
    }
    csync(s);
    if (!root_node && h->leader_idx < 0)
        get_n(dest, dest, nbytes, shi_set_pe(s, h->leader), R, 0);
    csync(s);
}

static void bcast(shi_set_t *s, void *dest, const void *src, size_t nbytes, int root, int root_too, const char *R)
{
    if (root < 0 || root >= s->size)
        shi_fatal(R, "PE_root %d is outside the team/active set of %d PEs", root, s->size);
    shi_hier_t h;
    int *leaders;
    if (hier(s, &h, &leaders, R)) {
        free(leaders);
        bcast_hier(s, dest, src, nbytes, root, root_too, &h, R);
        return;
    }
    csync(s);
    if (s->me != root)
        get_n(dest, src, nbytes, shi_set_pe(s, root), R, 0);
    else if (root_too && dest != src)
        memmove(dest, src, nbytes);
    csync(s);
}

/* fcollect across nodes: a node's members are contiguous in the set, so its blocks form one range
 * of dest. The leader gathers its node's blocks in place, fetches every other node's range from
 * that node's leader (one transfer per node between nodes), and its members copy the whole
 * result from it. */
static void fcollect_hier(shi_set_t *s, void *dest, const void *src, size_t nbytes, const shi_hier_t *h,
                          const int *leaders, const char *R)
{
    char *d = dest;
    csync(s);
    if (h->leader_idx >= 0)
        for (int j = 0; j < h->nlocal; j++)
            get_n(d + (size_t)(h->leader + j) * nbytes, src, nbytes, shi_set_pe(s, h->leader + j), R, 0);
    csync(s);
    if (h->leader_idx >= 0)
        for (int l = 0; l < h->nleaders; l++) {
            int first = leaders[l], end = l + 1 < h->nleaders ? leaders[l + 1] : s->size;
            if (l != h->leader_idx) /* all issued, then completed together */
                get_n(d + (size_t)first * nbytes, d + (size_t)first * nbytes, (size_t)(end - first) * nbytes,
                      shi_set_pe(s, first), R, 1);
        }
    if (h->leader_idx >= 0)
        shi_quiet();
    csync(s);
    if (h->leader_idx < 0)
        get_n(dest, dest, (size_t)s->size * nbytes, shi_set_pe(s, h->leader), R, 0);
    csync(s);
}

static void fcollect(shi_set_t *s, void *dest, const void *src, size_t nbytes, const char *R)
{
    shi_hier_t h;
    int *leaders;
    if (hier(s, &h, &leaders, R)) {
        fcollect_hier(s, dest, src, nbytes, &h, leaders, R);
        free(leaders);
        return;
    }
    csync(s);
    for (int j = 0; j < s->size; j++)
        get_n((char *)dest + (size_t)j * nbytes, src, nbytes, shi_set_pe(s, j), R, 0);
    csync(s);
}

/* Variable sizes: the running offset goes down the members (chain word), then every member pushes
 * its block to every member at its offset. */
static void collect_flat(shi_set_t *s, void *dest, const void *src, size_t nbytes, const char *R)
{
    csync(s);
    uint64_t off = 0;
    if (s->me > 0) {
        unsigned spins = 0;
        while (!__atomic_load_n(s->chain, __ATOMIC_ACQUIRE))
            shi_relax(&spins);
        off = *s->chain - 1;
        *s->chain = 0; /* the next collect's predecessor writes only after the next start sync */
    }
    if (s->me + 1 < s->size)
        shi_amo(SHI_AMO_SET, 8, s->chain, off + nbytes + 1, 0, shi_set_pe(s, s->me + 1), R);
    for (int j = 0; j < s->size && nbytes; j++)
        shi_put((char *)dest + off, src, nbytes, shi_set_pe(s, j), R, 1);
    shi_quiet();
    csync(s);
}

/* collect across nodes, the layout of fcollect_hier with sizes that differ: each member posts its
 * size in its own word (w[0]); the leader sums its node's (w[1]: the node's total), the leaders
 * read each other's totals (one word per node), so each knows where its node's range starts
 * (w[2]) and how long the whole is (w[3]); the leader gathers its node's blocks there in place,
 * fetches every other node's range from that node's leader, and the members copy the whole from
 * their leader. The words are the PE's own and go back to 0 (SHMEM_SYNC_VALUE) before it returns:
 * each is read only between two syncs it has passed. */
static void collect_hier(shi_set_t *s, void *dest, const void *src, size_t nbytes, const shi_hier_t *h,
                         const int *leaders, const char *R)
{
    uint64_t *w = s->coll;
    char *d = dest;
    int lpe = shi_set_pe(s, h->leader);
    uint64_t *tot = NULL, *sz = NULL;
    w[0] = nbytes;
    csync(s); /* S1: every member is in, its size posted */
    if (h->leader_idx >= 0) {
        tot = malloc(sizeof(uint64_t) * (size_t)h->nleaders);
        sz = malloc(sizeof(uint64_t) * (size_t)h->nlocal);
        if (!tot || !sz)
            shi_fatal(R, "out of memory");
        uint64_t t = 0;
        for (int j = 0; j < h->nlocal; j++) {
            int region = 0;
            size_t disp = 0;
            uint64_t *p = shi_xlate(w, 8, shi_set_pe(s, h->leader + j), R, &region, &disp);
            if (!p)
                shi_fatal(R, "internal: a member of this node is not reachable by load/store");
            t += sz[j] = __atomic_load_n(p, __ATOMIC_ACQUIRE);
        }
        w[1] = t;
    }
    csync(s); /* S2: every node's total is posted at its leader */
    if (h->leader_idx >= 0) {
        for (int l = 0; l < h->nleaders; l++)
            if (l == h->leader_idx)
                tot[l] = w[1];
            else
                shi_get(&tot[l], &w[1], 8, shi_set_pe(s, leaders[l]), R, 1);
        shi_quiet();
        uint64_t off = 0, all = 0;
        for (int l = 0; l < h->nleaders; l++) {
            if (l < h->leader_idx)
                off += tot[l];
            all += tot[l];
        }
        w[2] = off;
        w[3] = all;
        for (int j = 0; j < h->nlocal; j++) {
            get_n(d + off, src, sz[j], shi_set_pe(s, h->leader + j), R, 0);
            off += sz[j];
        }
    }
    csync(s); /* S3: each node's range is in its leader's dest */
    if (h->leader_idx >= 0) {
        uint64_t off = 0;
        for (int l = 0; l < h->nleaders; l++) {
            if (l != h->leader_idx)
                get_n(d + off, d + off, tot[l], shi_set_pe(s, leaders[l]), R, 1);
            off += tot[l];
        }
        shi_quiet();
    }
    csync(s); /* S4: the leaders hold the whole */
    if (h->leader_idx < 0) {
        int region = 0;
        size_t disp = 0;
        uint64_t *p = shi_xlate(&w[3], 8, lpe, R, &region, &disp);
        if (!p)
            shi_fatal(R, "internal: the node's leader is not reachable by load/store");
        get_n(dest, dest, __atomic_load_n(p, __ATOMIC_ACQUIRE), lpe, R, 0);
    }
    csync(s); /* S5: the members have copied it and read w[3] */
    w[0] = w[1] = w[2] = w[3] = 0;
    free(tot);
    free(sz);
}

static void collect(shi_set_t *s, void *dest, const void *src, size_t nbytes, const char *R)
{
    shi_hier_t h;
    int *leaders;
    if (hier(s, &h, &leaders, R)) {
        collect_hier(s, dest, src, nbytes, &h, leaders, R);
        free(leaders);
        return;
    }
    collect_flat(s, dest, src, nbytes, R);
}

/* alltoall(s) across nodes. Blocks between members of one node move in place (each member pulls
 * its blocks from its node's members through the windows); blocks between nodes go through the
 * leaders' staging areas: each member packs the blocks it sends to another node into its
 * leader's outgoing half (region per destination node, [destination member][source member]),
 * each leader fetches, from every other node's leader, the region meant for its node with one
 * get, into its incoming half, and each member unpacks its row from there. One transfer per pair
 * of nodes instead of one per pair of PEs. Used when every node's outgoing blocks fit in half the
 * area (nl * (size - nl) * block bytes); larger exchanges are bandwidth-bound and stay flat. The
 * element copy describes a block: nelems elements of es bytes, `st` elements apart. */
typedef struct {
    size_t nelems, es;
    ptrdiff_t dst, sst; /* strides in elements; 1 for alltoall */
} blk_t;

static int a2a_fits(const shi_set_t *s, const shi_hier_t *h, const int *leaders, size_t bytes)
{
    for (int l = 0; l < h->nleaders; l++) {
        size_t nl = (size_t)((l + 1 < h->nleaders ? leaders[l + 1] : s->size) - leaders[l]);
        if (bytes && nl * (size_t)(s->size - (int)nl) > SHI_STAGE / 2 / bytes)
            return 0;
    }
    return 1;
}

static void copy_elems(char *d, ptrdiff_t dst, const char *sp, ptrdiff_t sst, size_t nelems, size_t es)
{
    if (dst == 1 && sst == 1) {
        util_copy(d, sp, nelems * es);
        return;
    }
    for (size_t e = 0; e < nelems; e++)
        memcpy(d + (ptrdiff_t)e * dst * (ptrdiff_t)es, sp + (ptrdiff_t)e * sst * (ptrdiff_t)es, es);
}

static char *node_ptr(void *addr, size_t n, int pe, const char *R)
{
    int region = 0;
    size_t disp = 0;
    char *p = shi_xlate(addr, n, pe, R, &region, &disp);
    if (!p)
        shi_fatal(R, "internal: PE %d of this node is not reachable by load/store", pe);
    return p;
}

static void alltoall_hier(shi_set_t *s, void *dest, const void *src, const blk_t *b, const shi_hier_t *h,
                          const int *leaders, const char *R)
{
    size_t bytes = b->nelems * b->es;
    ptrdiff_t dblk = (ptrdiff_t)b->nelems * b->dst * (ptrdiff_t)b->es; /* one block's span in dest */
    ptrdiff_t sblk = (ptrdiff_t)b->nelems * b->sst * (ptrdiff_t)b->es;
    int me = s->me, nl_me = h->nlocal, ia = h->my_local, lpe = shi_set_pe(s, h->leader);
    int mynode = -1;
    for (int l = 0; l < h->nleaders; l++)
        if (leaders[l] == h->leader)
            mynode = l;
#define NL(l) ((l + 1 < h->nleaders ? leaders[l + 1] : s->size) - leaders[l])
    csync(s); /* S0: every member is in; the leaders' staging areas are free */
    if (bytes) {
        /* this node's blocks, in place */
        for (int k = 0; k < nl_me; k++) {
            int j = h->leader + (ia + k) % nl_me;
            const char *sp = node_ptr((char *)src + (ptrdiff_t)me * sblk, b->es, shi_set_pe(s, j), R);
            node_ptr((char *)src + (ptrdiff_t)me * sblk + ((ptrdiff_t)b->nelems - 1) * b->sst * (ptrdiff_t)b->es,
                     b->es, shi_set_pe(s, j), R);
            copy_elems((char *)dest + (ptrdiff_t)j * dblk, b->dst, sp, b->sst, b->nelems, b->es);
        }
        /* pack what goes to the other nodes into the leader's outgoing half */
        char *out = node_ptr(SHI_STAGE_ADDR, SHI_STAGE, lpe, R);
        size_t off = 0;
        for (int l = 0; l < h->nleaders; l++) {
            if (l == mynode)
                continue;
            for (int jb = 0; jb < NL(l); jb++)
                copy_elems(out + off + ((size_t)jb * (size_t)nl_me + (size_t)ia) * bytes, 1,
                           (const char *)src + (ptrdiff_t)(leaders[l] + jb) * sblk, b->sst, b->nelems, b->es);
            off += (size_t)NL(l) * (size_t)nl_me * bytes;
        }
    }
    csync(s); /* S1: every leader's outgoing half is packed */
    if (bytes && h->leader_idx >= 0) {
        char *in = SHI_STAGE_ADDR + SHI_STAGE / 2;
        size_t inoff = 0;
        for (int l = 0; l < h->nleaders; l++) {
            if (l == mynode)
                continue;
            /* node l's region for us: after its regions for the nodes before ours (not itself) */
            size_t before = (size_t)(leaders[mynode] - (l < mynode ? NL(l) : 0));
            size_t len = (size_t)NL(l) * (size_t)nl_me * bytes;
            shi_get(in + inoff, SHI_STAGE_ADDR + before * (size_t)NL(l) * bytes, len, shi_set_pe(s, leaders[l]), R, 1);
            inoff += len;
        }
        shi_quiet();
    }
    csync(s); /* S2: every leader holds its node's incoming blocks */
    if (bytes) {
        const char *in = node_ptr(SHI_STAGE_ADDR + SHI_STAGE / 2, SHI_STAGE / 2, lpe, R);
        size_t inoff = 0;
        for (int l = 0; l < h->nleaders; l++) {
            if (l == mynode)
                continue;
            const char *row = in + inoff + (size_t)ia * (size_t)NL(l) * bytes;
            for (int i = 0; i < NL(l); i++)
                copy_elems((char *)dest + (ptrdiff_t)(leaders[l] + i) * dblk, b->dst, row + (size_t)i * bytes, 1,
                           b->nelems, b->es);
            inoff += (size_t)NL(l) * (size_t)nl_me * bytes;
        }
    }
#undef NL
    csync(s); /* S3: the staging areas are read */
}

/* The blocks of alltoall(s) whose dest or source the caller got wrong end the job naming the routine
 * rather than being read from outside the symmetric regions. */
static void a2a_check(const shi_set_t *s, void *dest, const void *src, const blk_t *b, const char *R)
{
    if (!b->nelems || !b->es)
        return;
    ptrdiff_t last = ((ptrdiff_t)s->size * (ptrdiff_t)b->nelems - 1);
    int region = 0;
    size_t disp = 0;
    shi_xlate(src, b->es, shi.me, R, &region, &disp);
    shi_xlate((const char *)src + last * b->sst * (ptrdiff_t)b->es, b->es, shi.me, R, &region, &disp);
    shi_xlate(dest, b->es, shi.me, R, &region, &disp);
    shi_xlate((const char *)dest + last * b->dst * (ptrdiff_t)b->es, b->es, shi.me, R, &region, &disp);
}

static int a2a_hier(shi_set_t *s, void *dest, const void *src, const blk_t *b, const char *R)
{
    shi_hier_t h;
    int *leaders;
    if (!hier(s, &h, &leaders, R))
        return 0;
    int ok = a2a_fits(s, &h, leaders, b->nelems * b->es);
    if (ok) {
        a2a_check(s, dest, src, b, R);
        alltoall_hier(s, dest, src, b, &h, leaders, R);
    }
    free(leaders);
    return ok;
}

static void alltoall(shi_set_t *s, void *dest, const void *src, size_t nbytes, const char *R)
{
    blk_t b = {.nelems = nbytes, .es = 1, .dst = 1, .sst = 1};
    if (a2a_hier(s, dest, src, &b, R))
        return;
    csync(s);
    for (int k = 0; k < s->size && nbytes; k++) {
        int j = (s->me + k) % s->size; /* start at a different peer on each PE */
        shi_get((char *)dest + (size_t)j * nbytes, (const char *)src + (size_t)s->me * nbytes, nbytes,
                shi_set_pe(s, j), R, 0);
    }
    csync(s);
}

static void alltoalls(shi_set_t *s, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                      size_t es, const char *R)
{
    blk_t b = {.nelems = nelems, .es = es, .dst = dst, .sst = sst};
    if (a2a_hier(s, dest, src, &b, R))
        return;
    csync(s);
    for (int k = 0; k < s->size; k++) {
        int j = (s->me + k) % s->size;
        shi_iget((char *)dest + (ptrdiff_t)((size_t)j * nelems) * dst * (ptrdiff_t)es,
                 (const char *)src + (ptrdiff_t)((size_t)s->me * nelems) * sst * (ptrdiff_t)es, dst, sst, nelems, es,
                 shi_set_pe(s, j), R);
    }
    csync(s);
}

typedef void (*kernel_t)(void *acc, const void *in, size_t n);

/* Combine the members [first, first + n) of the set into acc, reading each in place (or fetching
 * it when on another node), in member order. */
static void combine(shi_set_t *s, const int *idx, int n, const void *src, char *acc, char **buf_p, size_t count,
                    size_t es, kernel_t k, const char *R)
{
    size_t nbytes = count * es;
    for (int j = 0; j < n; j++) {
        int pe = shi_set_pe(s, idx[j]), region = 0;
        size_t disp = 0;
        const void *p = count ? shi_xlate(src, nbytes, pe, R, &region, &disp) : NULL;
        if (!p && count) {
            if (!*buf_p && !(*buf_p = malloc(nbytes)))
                shi_fatal(R, "out of memory for a %zu-byte reduction", nbytes);
            shi_get(*buf_p, src, nbytes, pe, R, 0);
            p = *buf_p;
        }
        if (j == 0)
            util_copy(acc, p, nbytes);
        else if (count)
            k(acc, p, count);
    }
}

/* Reduction across nodes: each leader combines its node's members in place into its dest, the
 * leaders combine the node results (in node order, the same everywhere), and the members copy the
 * leader's final result. Only leaders move data between nodes. */
static void reduce_hier(shi_set_t *s, void *dest, const void *src, size_t count, size_t es, kernel_t k,
                        const shi_hier_t *h, const int *leaders, const char *R)
{
    size_t nbytes = count * es;
    char *acc = malloc(nbytes ? nbytes : 1), *buf = NULL;
    int *idx = malloc(sizeof(int) * (size_t)(h->nlocal > h->nleaders ? h->nlocal : h->nleaders));
    if (!acc || !idx)
        shi_fatal(R, "out of memory for a %zu-byte reduction", nbytes);
    csync(s);
    if (h->leader_idx >= 0) {
        for (int j = 0; j < h->nlocal; j++)
            idx[j] = h->leader + j;
        combine(s, idx, h->nlocal, src, acc, &buf, count, es, k, R);
    }
    csync(s); /* the node's sources are read: a leader's dest may alias its source */
    if (h->leader_idx >= 0)
        util_copy(dest, acc, nbytes);
    csync(s); /* every node's partial result is in its leader's dest */
    if (h->leader_idx >= 0)
        combine(s, leaders, h->nleaders, dest, acc, &buf, count, es, k, R);
    csync(s); /* the partials are read */
    if (h->leader_idx >= 0)
        util_copy(dest, acc, nbytes);
    csync(s); /* the leaders hold the result */
    if (h->leader_idx < 0)
        get_n(dest, dest, nbytes, shi_set_pe(s, h->leader), R, 0);
    csync(s); /* the leader's dest is the caller's again only when its members copied it */
    free(idx);
    free(buf);
    free(acc);
}

static void reduce(shi_set_t *s, void *dest, const void *src, size_t count, size_t es, kernel_t k, const char *R)
{
    shi_hier_t h;
    int *leaders;
    if (hier(s, &h, &leaders, R)) {
        reduce_hier(s, dest, src, count, es, k, &h, leaders, R);
        free(leaders);
        return;
    }
    size_t nbytes = count * es;
    char *acc = malloc(nbytes ? nbytes : 1), *buf = NULL;
    if (!acc)
        shi_fatal(R, "out of memory for a %zu-byte reduction", nbytes);
    csync(s);
    for (int j = 0; j < s->size; j++) {
        int pe = shi_set_pe(s, j), region = 0;
        size_t disp = 0;
        const void *p = count ? shi_xlate(src, nbytes, pe, R, &region, &disp) : NULL;
        if (!p && count) { /* another node: fetch its contribution first */
            if (!buf && !(buf = malloc(nbytes)))
                shi_fatal(R, "out of memory for a %zu-byte reduction", nbytes);
            shi_get(buf, src, nbytes, pe, R, 0);
            p = buf;
        }
        if (j == 0)
            util_copy(acc, p, nbytes);
        else if (count)
            k(acc, p, count);
    }
    csync(s); /* every member has read every source: dest may alias source */
    util_copy(dest, acc, nbytes);
    free(buf);
    free(acc);
}

/* Kernels: one per type and operator. */
#define K_BIT(T, N)                                                                                \
    static void k_##N##_and(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) x[i] &= y[i]; } \
    static void k_##N##_or(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) x[i] |= y[i]; } \
    static void k_##N##_xor(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) x[i] ^= y[i]; }
#define K_MINMAX(T, N)                                                                             \
    static void k_##N##_max(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) if (y[i] > x[i]) x[i] = y[i]; } \
    static void k_##N##_min(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) if (y[i] < x[i]) x[i] = y[i]; }
#define K_ARITH(T, N)                                                                              \
    static void k_##N##_sum(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) x[i] += y[i]; } \
    static void k_##N##_prod(void *a, const void *b, size_t n) { T *x = a; const T *y = b; for (size_t i = 0; i < n; i++) x[i] *= y[i]; }
/* Kernels per distinct (type name): tables overlap, so each class is generated once from the
 * widest table and the legacy tables reuse them. */
SHMEMI_REDUCE_BIT_TYPES(K_BIT)
K_BIT(short, short)
K_BIT(int, int)
K_BIT(long, long)
K_BIT(long long, longlong)
SHMEMI_REDUCE_MINMAX_TYPES(K_MINMAX)
SHMEMI_REDUCE_ARITH_TYPES(K_ARITH)

/* --- team collectives (1.5) --------------------------------------------------------------------- */
static int team_set(shmem_team_t team, shi_set_t *s, const char *R)
{
    if (team == SHMEM_TEAM_INVALID)
        return -1;
    if (!shi.initialized)
        shi_not_initialized(R);
    shi_team_set(team, s);
    return 0;
}

#define COLL_DEF(T, N)                                                                             \
    BOBCAT_EXPORT int shmem_##N##_broadcast(shmem_team_t team, T *d, const T *s, size_t n, int root) \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_broadcast")) return -1;                \
      bcast(&set, d, s, n * sizeof(T), root, 1, "shmem_" #N "_broadcast"); return 0; }             \
    BOBCAT_EXPORT int shmem_##N##_collect(shmem_team_t team, T *d, const T *s, size_t n)              \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_collect")) return -1;                  \
      collect(&set, d, s, n * sizeof(T), "shmem_" #N "_collect"); return 0; }                      \
    BOBCAT_EXPORT int shmem_##N##_fcollect(shmem_team_t team, T *d, const T *s, size_t n)             \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_fcollect")) return -1;                 \
      fcollect(&set, d, s, n * sizeof(T), "shmem_" #N "_fcollect"); return 0; }                    \
    BOBCAT_EXPORT int shmem_##N##_alltoall(shmem_team_t team, T *d, const T *s, size_t n)             \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_alltoall")) return -1;                 \
      alltoall(&set, d, s, n * sizeof(T), "shmem_" #N "_alltoall"); return 0; }                    \
    BOBCAT_EXPORT int shmem_##N##_alltoalls(shmem_team_t team, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, \
                                         size_t n)                                                 \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_alltoalls")) return -1;                \
      alltoalls(&set, d, s, dst, sst, n, sizeof(T), "shmem_" #N "_alltoalls"); return 0; }
SHMEMI_RMA_TYPES(COLL_DEF)

BOBCAT_EXPORT int shmem_broadcastmem(shmem_team_t team, void *d, const void *s, size_t n, int root)
{ shi_set_t set; if (team_set(team, &set, "shmem_broadcastmem")) return -1;
  bcast(&set, d, s, n, root, 1, "shmem_broadcastmem"); return 0; }
BOBCAT_EXPORT int shmem_collectmem(shmem_team_t team, void *d, const void *s, size_t n)
{ shi_set_t set; if (team_set(team, &set, "shmem_collectmem")) return -1;
  collect(&set, d, s, n, "shmem_collectmem"); return 0; }
BOBCAT_EXPORT int shmem_fcollectmem(shmem_team_t team, void *d, const void *s, size_t n)
{ shi_set_t set; if (team_set(team, &set, "shmem_fcollectmem")) return -1;
  fcollect(&set, d, s, n, "shmem_fcollectmem"); return 0; }
BOBCAT_EXPORT int shmem_alltoallmem(shmem_team_t team, void *d, const void *s, size_t n)
{ shi_set_t set; if (team_set(team, &set, "shmem_alltoallmem")) return -1;
  alltoall(&set, d, s, n, "shmem_alltoallmem"); return 0; }
BOBCAT_EXPORT int shmem_alltoallsmem(shmem_team_t team, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n)
{ shi_set_t set; if (team_set(team, &set, "shmem_alltoallsmem")) return -1;
  alltoalls(&set, d, s, dst, sst, n, 1, "shmem_alltoallsmem"); return 0; }

#define RED1(T, N, OP)                                                                             \
    BOBCAT_EXPORT int shmem_##N##_##OP##_reduce(shmem_team_t team, T *d, const T *s, size_t n)        \
    { shi_set_t set; if (team_set(team, &set, "shmem_" #N "_" #OP "_reduce")) return -1;           \
      reduce(&set, d, s, n, sizeof(T), k_##N##_##OP, "shmem_" #N "_" #OP "_reduce"); return 0; }
#define RED_BIT(T, N) RED1(T, N, and) RED1(T, N, or) RED1(T, N, xor)
#define RED_MINMAX(T, N) RED1(T, N, max) RED1(T, N, min)
#define RED_ARITH(T, N) RED1(T, N, sum) RED1(T, N, prod)
SHMEMI_REDUCE_BIT_TYPES(RED_BIT)
SHMEMI_REDUCE_MINMAX_TYPES(RED_MINMAX)
SHMEMI_REDUCE_ARITH_TYPES(RED_ARITH)

/* --- legacy active-set collectives ------------------------------------------------------------- */
#define LEGACY_BITS(B)                                                                             \
    BOBCAT_EXPORT void shmem_broadcast##B(void *d, const void *s, size_t n, int root, int start, int ls, int size, \
                                       long *psync)                                                \
    { shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_broadcast" #B);           \
      bcast(&set, d, s, n * (B / 8), root, 0, "shmem_broadcast" #B); }                             \
    BOBCAT_EXPORT void shmem_collect##B(void *d, const void *s, size_t n, int start, int ls, int size, long *psync) \
    { shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_collect" #B);             \
      collect(&set, d, s, n * (B / 8), "shmem_collect" #B); }                                      \
    BOBCAT_EXPORT void shmem_fcollect##B(void *d, const void *s, size_t n, int start, int ls, int size, long *psync) \
    { shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_fcollect" #B);            \
      fcollect(&set, d, s, n * (B / 8), "shmem_fcollect" #B); }                                    \
    BOBCAT_EXPORT void shmem_alltoall##B(void *d, const void *s, size_t n, int start, int ls, int size, long *psync) \
    { shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_alltoall" #B);            \
      alltoall(&set, d, s, n * (B / 8), "shmem_alltoall" #B); }                                    \
    BOBCAT_EXPORT void shmem_alltoalls##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int start, \
                                       int ls, int size, long *psync)                              \
    { shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_alltoalls" #B);           \
      alltoalls(&set, d, s, dst, sst, n, B / 8, "shmem_alltoalls" #B); }
LEGACY_BITS(32)
LEGACY_BITS(64)

#define TOALL1(T, N, OP)                                                                           \
    BOBCAT_EXPORT void shmem_##N##_##OP##_to_all(T *d, const T *s, int n, int start, int ls, int size, T *pwrk, \
                                              long *psync)                                         \
    { (void)pwrk; shi_set_t set; shi_set_legacy(&set, start, ls, size, psync, "shmem_" #N "_" #OP "_to_all"); \
      reduce(&set, d, s, n > 0 ? (size_t)n : 0, sizeof(T), k_##N##_##OP, "shmem_" #N "_" #OP "_to_all"); }
#define TOALL_BIT(T, N) TOALL1(T, N, and) TOALL1(T, N, or) TOALL1(T, N, xor)
#define TOALL_MINMAX(T, N) TOALL1(T, N, max) TOALL1(T, N, min)
#define TOALL_ARITH(T, N) TOALL1(T, N, sum) TOALL1(T, N, prod)
SHMEMI_TOALL_BIT_TYPES(TOALL_BIT)
SHMEMI_TOALL_MINMAX_TYPES(TOALL_MINMAX)
SHMEMI_TOALL_ARITH_TYPES(TOALL_ARITH)
