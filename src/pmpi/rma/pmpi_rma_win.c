/* pmpi_rma_win: making and freeing windows bobcat handles, their table, their attributes.
 *
 * Every flavour is made the same way (collective over the window's communicator):
 *  1. the memory: the user's (Win_create), a block of the caller's heap (Win_allocate), one region
 *     in the first rank's heap holding every rank's part at its offset (Win_allocate_shared:
 *     "SMARTMAP can emulate POSIX-style shared memory regions"), none (Win_create_dynamic);
 *  2. a control block in each rank's heap (locks, PSCW counters);
 *  3. one PMPI_Allgather of what every rank's window is: base, size, disp_unit, whether its memory
 *     is in its segment, its control block, its process and token (the staged path), and whether
 *     it found its memory at all (Win_allocate: if any did not, every rank leaves the window to the
 *     real MPI). From it every rank computes the same peer table and the same `spans`, `cma` (one
 *     PMPI_Allreduce of the staged path's probe, only when some memory lies outside a segment) and
 *     `mixed` (pmpi_rma.h). Leaving it, every control block is cleared: no barrier follows;
 *  4. the real window, over the same memory, on a private duplicate of the communicator. Its errors
 *     return: some MPIs cannot make one on every communicator (Open MPI 4.1.4: none of its one-sided
 *     components takes MPI_COMM_SELF); then every rank (all fail alike) undoes 1-3 and the real MPI
 *     makes the window of the asked flavour itself, with its own errors.
 * BOBCAT_RMA=mpi (or the layer off, or a communicator bobcat does not handle) leaves every window to
 * the real MPI. */
#include "pmpi_rma.h"
#include "../p2p/p2p.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static int rma_enabled(void);
static int alone_reason(MPI_Win win);
rma_win_t *rma_last;
static rma_win_t *rma_head;
pmpi_stat_t rma_st[RMA_NKIND] = {
    [RMA_PUT] = {.name = "Put"},
    [RMA_GET] = {.name = "Get"},
    [RMA_ACC] = {.name = "Accumulate"},
    [RMA_GACC] = {.name = "Get_accumulate"},
    [RMA_FOP] = {.name = "Fetch_and_op"},
    [RMA_CAS] = {.name = "Compare_and_swap"},
    [RMA_SYNC] = {.name = "RMA_sync"},
};
static const char *const kind_names[RMA_NKIND] = {"put", "get", "acc", "getacc", "fop", "cas", "sync"};

int rma_count_alone(MPI_Win win, int kind, size_t bytes)
{
    pmpi_stat_t *st = &rma_st[kind];
    st->calls[PMPI_PATH_MPI]++;
    st->bytes[PMPI_PATH_MPI] += bytes;
    /* The layer off, the knob, or else the window's own making (its communicator, its info key,
     * Fortran on Open MPI): bobcat could not have its table. */
    st->why[!pmpi_layer.on ? PMPI_WHY_OFF : !rma_enabled() ? PMPI_WHY_FORCED : alone_reason(win)]++;
    return 1;
}

__attribute__((constructor)) static void register_stats(void)
{
    for (int k = 0; k < RMA_NKIND; k++)
        pmpi_stats_register(&rma_st[k]);
}

rma_win_t *rma_find(MPI_Win win)
{
    for (rma_win_t *w = rma_head; w; w = w->next)
        if (w->win == win)
            return rma_last = w;
    return NULL;
}

int rma_error(rma_win_t *w, int code)
{
    PMPI_Win_call_errhandler(w->win, code);
    return code;
}

void rma_progress(void)
{
    if (p2p_need_progress())
        p2p_progress();
    p2p_poke_mpi(); /* the real MPI's pass, every 16th call while it may owe progress */
}

void rma_relax(unsigned *spins)
{
    rma_progress();
    p2p_relax(spins);
}

void rma_acquire(_Atomic int64_t *word, int64_t value)
{
    unsigned spins = 0;
    int64_t exp = 0;
    while (!atomic_compare_exchange_weak(word, &exp, value)) {
        exp = 0;
        rma_relax(&spins);
    }
}

static int rma_enabled(void)
{
    return pmpi_layer.on && pmpi_layer.opt && pmpi_layer.opt->RMA != UTIL_V_MPI;
}

/* ---- making ---------------------------------------------------------------------------------- */

/* The window's own tables (what win_make allocates before the real window; not the memory). */
static void win_tables_free(rma_win_t *w)
{
    free(w->peer), free(w->post_seen), free(w->locked), free(w->locked_real), free(w->owed), free(w->in_start);
    free(w->start_to), free(w->ctl), free(w);
}

enum { F_CREATE, F_ALLOCATE, F_SHARED, F_DYNAMIC };

/* A control block's token: random, never 0 (the staged path's probe tells a node mate's process
 * from another with the same number by it). */
static int64_t rma_token(const void *salt)
{
    int64_t t = 0;
    if (getrandom(&t, sizeof t, GRND_NONBLOCK) != (ssize_t)sizeof t) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t = (int64_t)ts.tv_nsec ^ ((int64_t)ts.tv_sec << 30) ^ (int64_t)(uintptr_t)salt ^ ((int64_t)getpid() << 40);
    }
    return t | 1;
}

/* A window that spans nodes sends its accumulates (but under exclusive locks) to the real window.
 * On Open MPI that is then the real MPI's own allocated window, as without bobcat: Open MPI 4.1.4's
 * one-sided components get pair-type and fetching accumulates wrong on windows made by
 * MPI_Win_create (MPICH suite's atomic_rmw_gacc, atomic_get_*_int), so bobcat's memory under a
 * real created window would be worse than the MPI it replaces. MPICH's created windows have no
 * such fault: there the memory is bobcat's heap on every node, and node mates reach it. */
static int real_allocates(const pmpi_comm_t *upc)
{
#ifdef OPEN_MPI
    return !upc->single_node;
#else
    (void)upc;
    return 0;
#endif
}

/* Steps 2-4 for a window whose own memory is `base` (size bytes) on this rank. `shared_region`:
 * the shared flavour's region as seen here (then every part is reached through it). Returns the
 * window, or NULL when the real window could not be made (nothing left behind). */
static rma_win_t *win_make(int fl, void *base, int have_mem, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                           pmpi_comm_t *upc, char *shared_region, const MPI_Aint *shared_off)
{
    int n = upc->size, me = upc->rank;
    rma_win_t *w = calloc(1, sizeof *w);
    size_t ctl_bytes = sizeof(rma_ctl_t) + (size_t)n * sizeof(int64_t);
    if (!w)
        return NULL;
    w->n = n;
    w->me = me;
    w->flavor = fl == F_CREATE ? MPI_WIN_FLAVOR_CREATE
                : fl == F_ALLOCATE ? MPI_WIN_FLAVOR_ALLOCATE
                : fl == F_SHARED ? MPI_WIN_FLAVOR_SHARED : MPI_WIN_FLAVOR_DYNAMIC;
    w->dynamic = fl == F_DYNAMIC;
    w->mybase = base;
    w->peer = calloc((size_t)n, sizeof *w->peer);
    w->post_seen = calloc((size_t)n, sizeof *w->post_seen);
    w->locked = calloc((size_t)n, 1);
    w->locked_real = calloc((size_t)n, 1);
    w->owed = calloc((size_t)n, 1);
    w->in_start = calloc((size_t)n, 1);
    w->start_to = calloc((size_t)n, sizeof(int));
    w->ctl = aligned_alloc(64, (ctl_bytes + 63) & ~(size_t)63);
    if (!w->peer || !w->post_seen || !w->locked || !w->locked_real || !w->owed || !w->in_start || !w->start_to || !w->ctl) {
        util_error("out of memory for a window's tables");
        PMPI_Abort(comm, 3);
    }
    memset(w->ctl, 0, ctl_bytes);
    w->start_n = -1;
    PMPI_AWAY(PMPI_Comm_dup(comm, &w->comm));
    PMPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    /* real_allocates: the real MPI's own allocated window (its memory is bobcat's to reach if the
     * MPI took it from the heap, the segment: neither does). */
    int real_made = 0;
    if (fl == F_ALLOCATE && real_allocates(upc)) {
        if (PMPI_AWAY(PMPI_Win_allocate(size, disp_unit, info, w->comm, &base, &w->win)) != MPI_SUCCESS) {
            PMPI_Comm_free(&w->comm);
            win_tables_free(w);
            return NULL;
        }
        real_made = 1;
        w->mybase = base;
    }
    int reach = size == 0 || (smap_is_shared(base) && smap_is_shared((char *)base + size - 1));
    if (fl == F_SHARED)
        reach = 1;
    if (fl == F_DYNAMIC)
        reach = 0;
    int ctl_ok = smap_is_shared(w->ctl);
    w->ctl->token = rma_token(w->ctl);
    enum { G_BASE, G_SIZE, G_DISP, G_REACH, G_CTL, G_PID, G_TOKEN, G_MEM, G_N };
    long long mine[G_N] = {(long long)(uintptr_t)base,
                           (long long)size,
                           disp_unit,
                           reach,
                           ctl_ok ? (long long)(uintptr_t)w->ctl : 0,
                           (long long)getpid(),
                           (long long)w->ctl->token,
                           have_mem};
    long long *all = malloc(sizeof(long long) * G_N * (size_t)n);
    if (!all) {
        util_error("out of memory for a window's tables");
        PMPI_Abort(comm, 3);
    }
    /* Leaving the Allgather also means every rank has cleared its control block and set its token:
     * from here a peer may reach them. */
    PMPI_AWAY(PMPI_Allgather(mine, G_N, MPI_LONG_LONG, all, G_N, MPI_LONG_LONG, comm));
    int have_all = 1;
    for (int r = 0; r < n; r++)
        have_all &= all[G_N * r + G_MEM] != 0;
    if (!have_all) { /* some rank found no memory (Win_allocate): all give the window to the MPI */
        free(all);
        if (real_made)
            PMPI_Win_free(&w->win);
        PMPI_Comm_free(&w->comm);
        win_tables_free(w);
        return NULL;
    }
    w->spans = !upc->single_node;
    int unreachable = 0, outside = fl == F_DYNAMIC;
    for (int r = 0; r < n; r++) {
        const long long *a = all + G_N * r;
        rma_peer_t *p = &w->peer[r];
        p->size = (MPI_Aint)a[G_SIZE];
        p->disp = (int)a[G_DISP];
        p->rbase = (char *)(uintptr_t)a[G_BASE];
        p->pid = (int)a[G_PID];
        int on = upc->local[r] >= 0;
        if (on && a[G_CTL])
            p->ctl = pmpi_peer_ptr(upc, r, (void *)(uintptr_t)a[G_CTL]);
        if (p->ctl && a[G_REACH])
            p->base = shared_region ? shared_region + shared_off[r] : pmpi_peer_ptr(upc, r, (void *)(uintptr_t)a[G_BASE]);
        if (!a[G_CTL])
            unreachable = 1;
        else if (fl != F_DYNAMIC && !a[G_REACH])
            outside = 1;
    }
    /* Memory outside a node mate's segment: the staged path if every pair can take it (every rank
     * knows `outside` and `unreachable` alike, so all or none make the probe's MPI_MIN). */
    if (!w->spans && !unreachable && outside) {
        int ok = pmpi_layer.opt->RMA_STAGED;
        for (int r = 0; r < n && ok; r++) {
            const long long *a = all + G_N * r;
            ok = rma_staged_probe((int)a[G_PID], (char *)(uintptr_t)a[G_CTL] + offsetof(rma_ctl_t, token),
                                  (int64_t)a[G_TOKEN]);
        }
        PMPI_AWAY(PMPI_Allreduce(&ok, &w->cma, 1, MPI_INT, MPI_MIN, comm));
    }
    for (int r = 0; r < n; r++)
        w->peer[r].staged = w->cma && fl != F_DYNAMIC && w->peer[r].ctl && !w->peer[r].base;
    free(all);
    w->mixed = w->spans || unreachable || (outside && !w->cma);
    int rc = real_made ? MPI_SUCCESS
             : fl == F_DYNAMIC ? PMPI_AWAY(PMPI_Win_create_dynamic(info, w->comm, &w->win))
                               : PMPI_AWAY(PMPI_Win_create(base, size, disp_unit, info, w->comm, &w->win));
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_free(&w->comm);
        win_tables_free(w);
        return NULL;
    }
    w->pc = pmpi_comm_get(w->comm);
    PMPI_Comm_group(w->comm, &w->group);
    w->next = rma_head;
    rma_head = w;
    if (w->mixed)
        pmpi_rma_windows++; /* the real window carries traffic: waits drive the real MPI */
    return w;
}

/* Windows of the real MPI's alone, with the reason (the account's `why` for the calls on them):
 * the live ones, in no order, grown as needed. */
static struct alone {
    MPI_Win win;
    int why;
} *alone;
static int alone_n, alone_cap;

static int alone_reason(MPI_Win win)
{
    for (int i = 0; i < alone_n; i++)
        if (alone[i].win == win)
            return alone[i].why;
    return PMPI_WHY_SETUP; /* made where bobcat did not see it (Fortran on Open MPI) */
}

static void alone_forget(MPI_Win win)
{
    for (int i = 0; i < alone_n; i++)
        if (alone[i].win == win) {
            alone[i] = alone[--alone_n];
            return;
        }
}

/* A window the real MPI made alone, for `why`. Windows are counted (pmpi_rma_windows): while any
 * exist, bobcat's waits drive the real MPI. */
static int counted(int rc, const MPI_Win *win, int why)
{
    if (rc != MPI_SUCCESS)
        return rc;
    pmpi_rma_windows++;
    if (alone_n == alone_cap) {
        int cap = alone_cap ? 2 * alone_cap : 16;
        struct alone *a = realloc(alone, sizeof *a * (size_t)cap);
        if (!a) /* only the account's reason is lost: its calls then say setup-failed */
            return rc;
        alone = a;
        alone_cap = cap;
    }
    alone[alone_n++] = (struct alone){*win, why};
    return rc;
}

/* The window's communicator as bobcat knows it, or NULL (then the real MPI makes the window, and
 * *why says why). Every rank of comm answers alike (the layer's state, the knob and comm's tables
 * are the same). */
static pmpi_comm_t *win_comm(MPI_Comm comm, MPI_Aint size, int disp_unit, MPI_Info info, int *why)
{
    *why = !pmpi_layer.on ? PMPI_WHY_OFF : PMPI_WHY_FORCED;
    if (!rma_enabled() || size < 0 || disp_unit <= 0)
        return NULL;
    /* The info key bobcat_rma=mpi asks for the real MPI's window (bobcat's OpenSHMEM transport). */
    if (info != MPI_INFO_NULL) {
        char v[16] = "";
        int flag = 0;
        if (PMPI_Info_get(info, "bobcat_rma", (int)sizeof v - 1, v, &flag) == MPI_SUCCESS && flag &&
            !strcmp(v, "mpi"))
            return NULL;
    }
    *why = PMPI_WHY_SETUP; /* a communicator bobcat does not handle, or no window of its own */
    return pmpi_comm_get(comm);
}

BOBCAT_EXPORT int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    PMPI_GUARD();
    int why;
    pmpi_comm_t *pc = win_comm(comm, size, disp_unit, info, &why);
    rma_win_t *w = pc ? win_make(F_CREATE, base, 1, size, disp_unit, info, comm, pc, NULL, NULL) : NULL;
    if (!w)
        return counted(PMPI_AWAY(PMPI_Win_create(base, size, disp_unit, info, comm, win)), win, why);
    *win = w->win;
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                   MPI_Win *win)
{
    PMPI_GUARD();
    int why;
    pmpi_comm_t *pc = win_comm(comm, size, disp_unit, info, &why);
    /* The memory is bobcat's (the heap), unless the real MPI must allocate it (real_allocates). */
    int own = pc && !real_allocates(pc);
    void *mem = own ? aligned_alloc(64, ((size_t)size + 64) & ~(size_t)63) : NULL;
    /* Every rank takes the same way: win_make gathers whether each found its memory. */
    rma_win_t *w = pc ? win_make(F_ALLOCATE, mem, !own || mem != NULL, size, disp_unit, info, comm, pc, NULL, NULL) : NULL;
    if (!w) {
        free(mem);
        return counted(PMPI_AWAY(PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win)), win, why);
    }
    w->owned = mem;
    *(void **)baseptr = w->mybase;
    *win = w->win;
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    PMPI_GUARD();
    int why;
    pmpi_comm_t *pc = win_comm(comm, 0, 1, info, &why);
    rma_win_t *w = pc ? win_make(F_DYNAMIC, NULL, 1, 0, 1, info, comm, pc, NULL, NULL) : NULL;
    if (!w)
        return counted(PMPI_AWAY(PMPI_Win_create_dynamic(info, comm, win)), win, why);
    *win = w->win;
    return MPI_SUCCESS;
}

/* The shared flavour: the first rank allocates the whole region in its heap, each rank's part at
 * its offset (contiguous, as MPI's default asks); every rank addresses it through the first rank's
 * window. */
BOBCAT_EXPORT int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                          MPI_Win *win)
{
    PMPI_GUARD();
    int why;
    pmpi_comm_t *pc = win_comm(comm, size, disp_unit, info, &why);
    if (!pc || !pc->single_node)
        return counted(PMPI_AWAY(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win)), win, why);
    int n = pc->size, me = pc->rank;
    MPI_Aint *sizes = malloc(sizeof(MPI_Aint) * 2 * (size_t)n), *off = sizes + n;
    if (!sizes) {
        util_error("out of memory for a shared window's table");
        PMPI_Abort(comm, 3);
    }
    PMPI_AWAY(PMPI_Allgather(&size, 1, MPI_AINT, sizes, 1, MPI_AINT, comm));
    MPI_Aint total = 0;
    for (int r = 0; r < n; r++) {
        off[r] = total;
        total += sizes[r];
    }
    uint64_t addr = 0;
    void *owned = NULL;
    if (me == 0) {
        owned = aligned_alloc(64, ((size_t)total + 64) & ~(size_t)63);
        if (owned && !smap_is_shared(owned)) {
            free(owned);
            owned = NULL;
        }
        addr = (uint64_t)(uintptr_t)owned;
    }
    PMPI_AWAY(PMPI_Bcast(&addr, 1, MPI_UINT64_T, 0, comm));
    rma_win_t *w = NULL;
    char *region = addr ? pmpi_peer_ptr(pc, 0, (void *)(uintptr_t)addr) : NULL;
    if (addr) /* every rank saw the same address: all go on, or all fall back */
        w = win_make(F_SHARED, region + off[me], 1, size, disp_unit, info, comm, pc, region, off);
    free(sizes);
    if (!w) {
        free(owned);
        return counted(PMPI_AWAY(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win)), win, why);
    }
    w->owned = owned;
    w->region = region;
    if (size == 0)
        w->mybase = NULL;
    *(void **)baseptr = w->mybase;
    *win = w->win;
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w || w->flavor != MPI_WIN_FLAVOR_SHARED || rank < MPI_PROC_NULL || rank >= w->n ||
        (rank < 0 && rank != MPI_PROC_NULL))
        return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
    if (rank == MPI_PROC_NULL) {
        /* The lowest rank with a non-empty part (MPI 4.0 section 12.2.3). */
        rank = 0;
        while (rank < w->n - 1 && w->peer[rank].size == 0)
            rank++;
    }
    *size = w->peer[rank].size;
    *disp_unit = w->peer[rank].disp;
    *(void **)baseptr = w->peer[rank].size ? w->peer[rank].base : NULL; /* an empty part: NULL, as MPICH */
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    PMPI_GUARD();
    return PMPI_Win_attach(win, base, size); /* targets reach it through SMARTMAP if it is in the segment */
}

BOBCAT_EXPORT int MPI_Win_detach(MPI_Win win, const void *base)
{
    PMPI_GUARD();
    return PMPI_Win_detach(win, base);
}

static const int flavor_values[4] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_SHARED,
                                     MPI_WIN_FLAVOR_DYNAMIC};
static const int model_unified = MPI_WIN_UNIFIED;

BOBCAT_EXPORT int MPI_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (w && keyval == MPI_WIN_CREATE_FLAVOR) {
        for (int i = 0; i < 4; i++)
            if (flavor_values[i] == w->flavor)
                *(const int **)value = &flavor_values[i];
        *flag = 1;
        return MPI_SUCCESS;
    }
    /* One copy of the data, loads and stores: the unified model (MPI 4.0 section 12.4). */
    if (w && keyval == MPI_WIN_MODEL && !w->mixed) {
        *(const int **)value = &model_unified;
        *flag = 1;
        return MPI_SUCCESS;
    }
    /* MPICH 4.0.2 reports the base of a window made by MPI_Win_create rounded down to 16 bytes;
     * a rank's part of a shared window starts wherever the sizes before it end (mpi4py's
     * test_win: part 1 at offset 10), so the base is answered from our table. */
    if (w && keyval == MPI_WIN_BASE && !w->dynamic) {
        *(void **)value = w->mybase;
        *flag = 1;
        return MPI_SUCCESS;
    }
    return PMPI_Win_get_attr(win, keyval, value, flag);
}

/* ---- freeing ---------------------------------------------------------------------------------- */

/* Per-window statistics: a line for each freed window that carried operations, kept until
 * MPI_Finalize and written there in one block (a line written at each MPI_Win_free could be cut by
 * the launcher's forwarding between other ranks' lines; a program may make thousands of windows). */
#define WIN_LINES_MAX 32
static char *win_lines;
static size_t win_lines_len;
static int win_lines_n, win_lines_more;

static void write_window_stats(void)
{
    if (win_lines_more && win_lines) {
        char tail[160];
        int k = snprintf(tail, sizeof tail, "bobcat: stats rank %d node %d: windows not listed=%d\n",
                         pmpi_layer.world_rank, pmpi_layer.node, win_lines_more);
        char *grown = realloc(win_lines, win_lines_len + (size_t)k + 1);
        if (grown) {
            memcpy(grown + win_lines_len, tail, (size_t)k + 1);
            win_lines = grown;
            win_lines_len += (size_t)k;
        }
    }
    for (size_t off = 0; win_lines && off < win_lines_len;) {
        ssize_t k = write(STDERR_FILENO, win_lines + off, win_lines_len - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    free(win_lines);
    win_lines = NULL;
    win_lines_len = 0;
    win_lines_n = win_lines_more = 0;
}

static void keep_window_stats(rma_win_t *w)
{
    uint64_t ops = 0;
    for (int kind = 0; kind < RMA_SYNC; kind++)
        ops += w->ops[kind][0] + w->ops[kind][1] + w->ops[kind][2];
    if (!pmpi_stats_print || !ops)
        return;
    if (win_lines_n == WIN_LINES_MAX) {
        win_lines_more++;
        return;
    }
    static int hooked;
    if (!hooked) {
        pmpi_at_finalize(write_window_stats);
        hooked = 1;
    }
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    PMPI_Win_get_name(w->win, name, &len);
    char line[1024];
    int k = snprintf(line, sizeof line, "bobcat: stats rank %d node %d: window \"%s\" ranks=%d flavor=%s%s",
                     pmpi_layer.world_rank, pmpi_layer.node, name, w->n,
                     w->flavor == MPI_WIN_FLAVOR_CREATE ? "create" : w->flavor == MPI_WIN_FLAVOR_ALLOCATE ? "allocate"
                     : w->flavor == MPI_WIN_FLAVOR_SHARED ? "shared" : "dynamic",
                     w->mixed ? " mixed" : "");
    for (int kind = 0; kind < RMA_NKIND && k < (int)sizeof line; kind++) {
        uint64_t t = w->ops[kind][0] + w->ops[kind][1] + w->ops[kind][2];
        if (!t)
            continue;
        k += snprintf(line + k, sizeof line - (size_t)k,
                      " %s=%llu inplace=%llu staged=%llu mpi=%llu bytes.smartmap=%llu bytes.mpi=%llu",
                      kind_names[kind], (unsigned long long)t, (unsigned long long)w->ops[kind][PMPI_PATH_INPLACE],
                      (unsigned long long)w->ops[kind][PMPI_PATH_STAGED],
                      (unsigned long long)w->ops[kind][PMPI_PATH_MPI],
                      (unsigned long long)(w->bytes[kind][PMPI_PATH_INPLACE] + w->bytes[kind][PMPI_PATH_STAGED]),
                      (unsigned long long)w->bytes[kind][PMPI_PATH_MPI]);
    }
    if (k > (int)sizeof line - 2)
        k = (int)sizeof line - 2;
    line[k++] = '\n';
    char *grown = realloc(win_lines, win_lines_len + (size_t)k + 1);
    if (!grown)
        return;
    memcpy(grown + win_lines_len, line, (size_t)k);
    win_lines = grown;
    win_lines_len += (size_t)k;
    win_lines_n++;
}

/* MPI_Win_free's barrier: after everyone arrived nobody touches the window's memory or control
 * blocks. On one node with comm rank 0's control block reachable (every rank knows that alike)
 * it is a counter there: n arrivals; then each other rank, having seen them, adds its leaving and
 * never reads the block again, and rank 0 leaves (and frees the block) once all n - 1 have. Else
 * the real MPI's barrier. A real collective here cost a program making and freeing 1000 windows on
 * 4 oversubscribed MPICH ranks its time limit (MPICH's suite, window_allocation), and bobcat's own
 * MPI_Barrier would first set its collectives up on the window's communicator (three). */
static void free_barrier(rma_win_t *w)
{
    rma_ctl_t *c0 = w->spans ? NULL : w->peer[0].ctl;
    if (!c0) {
        PMPI_AWAY(PMPI_Barrier(w->comm));
        return;
    }
    unsigned spins = 0;
    int64_t n = w->n;
    atomic_fetch_add(&c0->bye, 1);
    while (atomic_load(&c0->bye) < (w->me == 0 ? 2 * n - 1 : n))
        rma_relax(&spins);
    if (w->me != 0)
        atomic_fetch_add(&c0->bye, 1);
}

BOBCAT_EXPORT int MPI_Win_free(MPI_Win *win)
{
    PMPI_GUARD();
    rma_win_t *w = win ? rma_get(*win) : NULL;
    if (!w) {
        MPI_Win was = win ? *win : MPI_WIN_NULL;
        int rc = PMPI_AWAY(PMPI_Win_free(win));
        if (rc == MPI_SUCCESS)
            alone_forget(was);
        if (rc == MPI_SUCCESS && pmpi_rma_windows > 0)
            pmpi_rma_windows--;
        return rc;
    }
    free_barrier(w);
    keep_window_stats(w);
    int rc = PMPI_AWAY(PMPI_Win_free(win));
    if (rc != MPI_SUCCESS)
        return rc;
    for (rma_win_t **pp = &rma_head; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    if (rma_last == w)
        rma_last = NULL;
    if (w->mixed && pmpi_rma_windows > 0)
        pmpi_rma_windows--;
    PMPI_Group_free(&w->group);
    PMPI_Comm_free(&w->comm);
    free(w->owned);
    win_tables_free(w);
    *win = MPI_WIN_NULL;
    return MPI_SUCCESS;
}
