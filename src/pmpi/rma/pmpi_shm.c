/* pmpi_shm: the plan's node as MPI's shared-memory node. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 * returns the ranks of yod's plan node (simulated or not), and MPI_Win_allocate_shared gives
 * memory every rank of that node can load and store: "SMARTMAP can emulate POSIX-style shared
 * memory regions". The first rank allocates the whole region in its heap, each rank's part at its
 * offset (contiguous, as MPI's default asks); every rank addresses it through the first rank's
 * window; and a real window (PMPI_Win_create over each rank's part) makes RMA calls work on it.
 * MPI_Win_shared_query answers from our table; MPI_Win_free releases the region. */
#include "../base/pmpi_comm.h"
#include "../p2p/p2p.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int n, me;
    char *region;        /* the whole region, in my view */
    void *owned;         /* the allocation, on the first rank only */
    MPI_Comm comm;       /* private dup, to synchronise the free */
    MPI_Aint *size;      /* per rank */
    MPI_Aint *off;
    int *disp;
} shwin_t;

static int win_keyval = MPI_KEYVAL_INVALID;
static const int flavor_shared = MPI_WIN_FLAVOR_SHARED;

static int shwin_delete(MPI_Win win, int keyval, void *attr, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    free(attr); /* the arrays share the allocation; the region is freed by MPI_Win_free */
    return MPI_SUCCESS;
}

static shwin_t *shwin_of(MPI_Win win)
{
    void *v = NULL;
    int flag = 0;
    if (win_keyval == MPI_KEYVAL_INVALID || win == MPI_WIN_NULL || PMPI_Win_get_attr(win, win_keyval, &v, &flag) != MPI_SUCCESS ||
        !flag)
        return NULL;
    return v;
}

/* Every rank must make the same real-MPI calls, but split_type may differ per rank: some pass
 * MPI_UNDEFINED (and get MPI_COMM_NULL) while others ask for MPI_COMM_TYPE_SHARED. Deciding locally
 * would send the UNDEFINED ranks into PMPI_Comm_split_type and the others into PMPI_Comm_split, a
 * mismatched collective that hangs (Open MPI). So the ranks first agree whether anyone asked for
 * SHARED; if so, all split by plan node, the UNDEFINED ranks with color MPI_UNDEFINED. */
BOBCAT_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    pmpi_comm_t *pc;
    int rc;
    if ((split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED) || !(pc = pmpi_comm_get(comm))) {
        rc = PMPI_AWAY(PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
    } else {
        /* Ranks may pass MPI_UNDEFINED while others ask for SHARED: all must take the same call. */
        int want = split_type == MPI_COMM_TYPE_SHARED, any = 0;
        rc = PMPI_AWAY(PMPI_Allreduce(&want, &any, 1, MPI_INT, MPI_MAX, comm));
        if (rc != MPI_SUCCESS)
            return rc;
        if (!any)
            rc = PMPI_AWAY(PMPI_Comm_split_type(comm, split_type, key, info, newcomm)); /* all UNDEFINED */
        else
            rc = PMPI_AWAY(PMPI_Comm_split(comm, want ? pc->node[pc->rank] : MPI_UNDEFINED, key, newcomm));
    }
    if (rc == MPI_SUCCESS)
        p2p_comm_register(*newcomm, -1); /* issue 10: point-to-point registration (collective) */
    return rc;
}

/* Windows are counted (pmpi_rma_windows): while any exist, bobcat's waits drive the real MPI. */
static int counted(int rc)
{
    if (rc == MPI_SUCCESS)
        pmpi_rma_windows++;
    return rc;
}

BOBCAT_EXPORT int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    PMPI_GUARD();
    return counted(PMPI_AWAY(PMPI_Win_create(base, size, disp_unit, info, comm, win)));
}

BOBCAT_EXPORT int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                   MPI_Win *win)
{
    PMPI_GUARD();
    return counted(PMPI_AWAY(PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win)));
}

BOBCAT_EXPORT int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    PMPI_GUARD();
    return counted(PMPI_AWAY(PMPI_Win_create_dynamic(info, comm, win)));
}

BOBCAT_EXPORT int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                          MPI_Win *win)
{
    PMPI_GUARD();
    pmpi_comm_t *pc = pmpi_comm_get(comm);
    if (!pc || !pc->single_node || size < 0 || disp_unit <= 0 ||
        (win_keyval == MPI_KEYVAL_INVALID &&
         PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, shwin_delete, &win_keyval, NULL) != MPI_SUCCESS))
        return counted(PMPI_AWAY(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win)));
    int n = pc->size, me = pc->rank;
    shwin_t *w = calloc(1, sizeof *w + (size_t)n * (2 * sizeof(MPI_Aint) + sizeof(int)));
    MPI_Aint mine[2] = {size, disp_unit}, *all = malloc((size_t)n * 2 * sizeof(MPI_Aint));
    if (!w || !all) {
        util_error("out of memory for a shared window's table");
        PMPI_Abort(comm, 3);
    }
    w->n = n;
    w->me = me;
    w->size = (MPI_Aint *)(w + 1);
    w->off = w->size + n;
    w->disp = (int *)(w->off + n);
    PMPI_AWAY(PMPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, comm));
    MPI_Aint total = 0;
    for (int r = 0; r < n; r++) {
        w->size[r] = all[2 * r];
        w->disp[r] = (int)all[2 * r + 1];
        w->off[r] = total;
        total += w->size[r];
    }
    free(all);
    uint64_t addr = 0;
    if (me == 0) {
        w->owned = aligned_alloc(64, ((size_t)total + 64) & ~(size_t)63);
        if (w->owned && !smap_is_shared(w->owned)) {
            free(w->owned);
            w->owned = NULL;
        }
        addr = (uint64_t)(uintptr_t)w->owned;
    }
    PMPI_AWAY(PMPI_Bcast(&addr, 1, MPI_UINT64_T, 0, comm));
    if (!addr) {
        /* Every rank saw the same address: all fall back together. */
        free(w);
        return counted(PMPI_AWAY(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win)));
    }
    w->region = pmpi_peer_ptr(pc, 0, (void *)(uintptr_t)addr);
    char *base = w->region + w->off[me];
    /* The real window lives on our private dup, whose errors return: some MPIs cannot make one on
     * every communicator (Open MPI 4.1.4: none of its one-sided components takes MPI_COMM_SELF,
     * which mpi4py's test_win probes with MPI.Win.Allocate_shared(1, 1, ..., COMM_SELF)). Then
     * the real MPI's own shared window instead; every rank fails alike (the same components). */
    PMPI_AWAY(PMPI_Comm_dup(comm, &w->comm));
    PMPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    int rc = PMPI_AWAY(PMPI_Win_create(base, size, disp_unit, info, w->comm, win));
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_free(&w->comm);
        free(w->owned);
        free(w);
        return counted(PMPI_AWAY(PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win)));
    }
    PMPI_Win_set_attr(*win, win_keyval, w);
    *(void **)baseptr = base;
    pmpi_rma_windows++;
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    PMPI_GUARD();
    shwin_t *w = shwin_of(win);
    if (!w || rank < MPI_PROC_NULL || rank >= w->n || (rank < 0 && rank != MPI_PROC_NULL))
        return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
    if (rank == MPI_PROC_NULL) {
        /* The lowest rank with a non-empty part (MPI 4.0 section 12.2.3). */
        rank = 0;
        while (rank < w->n - 1 && w->size[rank] == 0)
            rank++;
    }
    *size = w->size[rank];
    *disp_unit = w->disp[rank];
    *(void **)baseptr = w->region + w->off[rank];
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag)
{
    PMPI_GUARD();
    shwin_t *w;
    if (keyval == MPI_WIN_CREATE_FLAVOR && shwin_of(win)) {
        *(const int **)value = &flavor_shared;
        *flag = 1;
        return MPI_SUCCESS;
    }
    /* MPICH 4.0.2 reports the base of a window made by MPI_Win_create rounded down to 16 bytes;
     * a rank's part of a shared window starts wherever the sizes before it end (mpi4py's
     * test_win: part 1 at offset 10), so the base is answered from our table. */
    if (keyval == MPI_WIN_BASE && (w = shwin_of(win)) != NULL) {
        *(void **)value = w->region + w->off[w->me];
        *flag = 1;
        return MPI_SUCCESS;
    }
    return PMPI_Win_get_attr(win, keyval, value, flag);
}

BOBCAT_EXPORT int MPI_Win_free(MPI_Win *win)
{
    PMPI_GUARD();
    shwin_t *w = win ? shwin_of(*win) : NULL;
    if (!w) {
        int rc = PMPI_AWAY(PMPI_Win_free(win));
        if (rc == MPI_SUCCESS && pmpi_rma_windows > 0)
            pmpi_rma_windows--;
        return rc;
    }
    void *owned = w->owned;
    MPI_Comm comm = w->comm;
    int rc = PMPI_AWAY(PMPI_Win_free(win)); /* the delete callback frees w */
    if (rc == MPI_SUCCESS && pmpi_rma_windows > 0)
        pmpi_rma_windows--;
    /* Nobody may still touch the region when its owner frees it. */
    PMPI_AWAY(PMPI_Barrier(comm));
    PMPI_Comm_free(&comm);
    free(owned);
    return rc;
}
