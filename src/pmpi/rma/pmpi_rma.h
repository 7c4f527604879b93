/* pmpi_rma: MPI one-sided communication over SMARTMAP (docs/mpi.md, "One-sided").
 *
 * Every window the user sees is a real MPI window (PMPI_Win_create over the same memory, or the
 * real MPI's dynamic window): its handle, name, group, info, attributes and error handler are the
 * real MPI's. bobcat keeps beside it what it needs to reach the window of every rank on the node
 * (rma_win_t, found from the handle in a small table), and the MPI_* one-sided calls defined in
 * this room act on that: a put or a get to a rank on the node whose window memory lies in its
 * segment is a copy through SMARTMAP, an accumulate a hardware atomic per element (integers) or
 * the real MPI's local reduction under the target's accumulate lock (the rest). Anything else goes
 * through the real window, whose synchronisation calls are then made beside bobcat's own.
 *
 * Which pairs go where is fixed when the window is made, from facts every rank shares:
 *  - `reach` (rank r's window memory is in its segment, or r is on another node: peer[r].base
 *    is NULL then);
 *  - `spans` (ranks on several nodes): accumulates go through the real window, so that their
 *    atomicity holds between on-node origins and off-node ones, which only the real MPI serves
 *    (except under an exclusive lock, which no one else may access the target in); passive-target
 *    epochs take the real window's lock, and once the real MPI has granted it (RMA_L_HELD) puts and
 *    gets to reachable node mates are bobcat's; those of fence and PSCW epochs are bobcat's too
 *    (those epochs end in a synchronisation both paths share);
 *  - `cma`: window memory outside a node mate's segment (stack or static arrays, a dynamic window's
 *    attached memory from outside the heap) is reached through the staged path
 *    (pmpi_rma_staged.c: process_vm_readv/writev, accumulates under the target's lock), if the
 *    kernel lets every pair of the window do that (probed when the window is made);
 *  - `mixed` (spans, or some target unreachable either way: a dynamic window without `cma`): the
 *    real window's synchronisation calls are made too. A window that is not mixed never calls the
 *    real MPI after its creation.
 *
 * Files: pmpi_rma_win.c (making, freeing, attributes), pmpi_rma_sync.c (fence, PSCW, locks,
 * flushes), pmpi_rma_ops.c (put, get, the accumulates, their request forms), pmpi_rma_dt.c (a
 * datatype as runs of its one predefined element type; the element atomics), pmpi_rma_staged.c
 * (memory outside the segment). */
#ifndef BOBCAT_PMPI_RMA_H
#define BOBCAT_PMPI_RMA_H

#include "../base/pmpi_comm.h"
#include "../base/pmpi_dt.h"

#include <stdatomic.h>
#include <stdint.h>

/* A rank's control block, in its heap (the segment), one per window; node mates reach it. */
typedef struct {
    _Atomic int64_t lock; /* passive target: RMA_LOCK_EXCL, or the number of shared holders */
    char pad0[56];
    _Atomic int64_t acc;  /* accumulate serialisation (the non-atomic element types): 0 free, 1 held */
    char pad1[56];
    _Atomic int64_t done; /* PSCW: completions received as a target (cumulative) */
    int64_t token;        /* random, set when the window is made: the staged path's probe reads it */
    _Atomic int64_t bye;  /* MPI_Win_free's barrier, in comm rank 0's block: arrivals, then leavings */
    char pad2[40];
    _Atomic int64_t post[]; /* PSCW: posts received from comm rank t as an origin (cumulative) */
} rma_ctl_t;

#define RMA_LOCK_EXCL ((int64_t)1 << 40)

typedef struct {
    char *base;     /* rank r's window memory as seen here; NULL: not reachable through SMARTMAP */
    MPI_Aint size;
    int disp;
    rma_ctl_t *ctl; /* r's control block as seen here (NULL off-node) */
    char *rbase;    /* r's window memory at r's own address (the staged path's target) */
    int pid;        /* r's process, for the staged path */
    int staged;     /* r's window memory is outside its segment and reached through the staged path */
} rma_peer_t;

/* Operation kinds, for the statistics. */
enum { RMA_PUT, RMA_GET, RMA_ACC, RMA_GACC, RMA_FOP, RMA_CAS, RMA_SYNC, RMA_NKIND };

/* What a passive-target epoch holds on a target: bobcat's lock word (shared, exclusive, or nothing
 * under MPI_MODE_NOCHECK); the real window's lock alone (every operation goes there); or, on a
 * window that spans nodes, the real window's lock known granted, shared or exclusive (HELD, HELDX:
 * bobcat's loads and stores reach the target under it). */
enum { RMA_L_NONE, RMA_L_SHARED, RMA_L_EXCL, RMA_L_NOCHECK, RMA_L_REAL, RMA_L_HELD, RMA_L_HELDX };
static inline int rma_held(int lk) { return lk == RMA_L_HELD || lk == RMA_L_HELDX; }

typedef struct rma_win {
    MPI_Win win;           /* the real window: the user's handle */
    MPI_Comm comm;         /* private duplicate of the window's communicator */
    MPI_Group group;       /* comm's group (PSCW groups are translated against it) */
    pmpi_comm_t *pc;       /* of comm */
    int n, me;
    int flavor;            /* MPI_WIN_FLAVOR_* */
    int spans, mixed, dynamic;
    int cma;               /* every pair reaches memory outside the segment through the staged path */
    rma_peer_t *peer;      /* n entries */
    rma_ctl_t *ctl;        /* mine */
    void *mybase;          /* my window memory, as I gave it (MPI_WIN_BASE) */
    void *owned;           /* Win_allocate's memory (mine), or the shared region (comm rank 0) */
    char *region;          /* shared flavour: the whole region, as seen here */
    /* epochs */
    int fence_open;        /* a fence opened an epoch (not MPI_MODE_NOSUCCEED) */
    int real_fence;        /* mixed: the real window's fence was called */
    int *start_to;         /* PSCW access epoch: its targets (comm ranks), start_n of them; -1: none */
    int start_n;
    unsigned char *in_start; /* n: 1 if the rank is a target of the current access epoch */
    int start_real;        /* the real window's access epoch was started too */
    int64_t *post_seen;    /* n: posts from each target consumed by my starts */
    int64_t done_want;     /* completions my exposure epochs expect */
    int post_open, post_real;
    unsigned char *locked; /* n: RMA_L_* per target */
    unsigned char *locked_real; /* n: the real window is locked on it too (dynamic windows) */
    int nlocked;           /* targets locked one by one */
    int lock_all;          /* 0, or RMA_L_SHARED / RMA_L_NOCHECK (ours) / RMA_L_REAL */
    int lock_all_real;     /* the real window's lock_all taken too */
    unsigned char *owed;   /* n: an operation went through the real window since its last flush */
    int nowed;             /* targets owed */
    /* statistics of this window: operations and bytes by kind and path */
    uint64_t ops[RMA_NKIND][PMPI_PATH_N], bytes[RMA_NKIND][PMPI_PATH_N];
    struct rma_win *next;
} rma_win_t;

/* The window bobcat handles behind a handle, or NULL (a window of the real MPI's alone). */
rma_win_t *rma_find(MPI_Win win);
extern rma_win_t *rma_last;
static inline rma_win_t *rma_get(MPI_Win win)
{
    rma_win_t *w = rma_last;
    return w && w->win == win ? w : rma_find(win);
}

/* The error the standard names, through the window's error handler. */
int rma_error(rma_win_t *w, int code);

/* Statistics rows (pmpi_rma_win.c registers them). */
extern pmpi_stat_t rma_st[RMA_NKIND];
static inline void rma_count(rma_win_t *w, int kind, pmpi_path_t path, size_t bytes)
{
    if (pmpi_stats_on) {
        w->ops[kind][path]++;
        w->bytes[kind][path] += bytes;
        rma_st[kind].calls[path]++;
        rma_st[kind].bytes[path] += bytes;
    }
}

/* An operation to t went through the real window: a flush of a held epoch must call the real one. */
static inline void rma_owe(rma_win_t *w, int t)
{
    if (t >= 0 && t < w->n && !w->owed[t]) {
        w->owed[t] = 1;
        w->nowed++;
    }
}

/* A call on a window that is the real MPI's alone (BOBCAT_RMA=mpi, the info key bobcat_rma=mpi, a
 * communicator bobcat does not handle, made from Fortran on Open MPI): counted on the real MPI's path
 * with its reason when the statistics are on. Always 1, so it reads as a condition's last term
 * (`win`: the handle of the call). */
int rma_count_alone(MPI_Win win, int kind, size_t bytes);
#define RMA_ALONE(kind, bytes) (pmpi_stats_on ? rma_count_alone(win, (kind), (bytes)) : 1)

/* A wait loop's pause: progress of bobcat's requests and the real MPI's, then yield. */
void rma_relax(unsigned *spins);
/* One progress pass (a test's). */
void rma_progress(void);
/* Spin until *word goes from 0 to value (a passive-target exclusive lock, the accumulate lock). */
void rma_acquire(_Atomic int64_t *word, int64_t value);
/* The operations' way to target t (pmpi_rma_sync.c): -1 no epoch reaches t, 0 bobcat's, 1 the
 * real window's. acc: an accumulate. */
int rma_route(const rma_win_t *w, int t, int acc);

/* A dynamic window whose addresses outside the segment go through the real window (no `cma`). */
static inline int rma_dyn_real(const rma_win_t *w) { return w->dynamic && !w->cma; }

/* ---- pmpi_rma_staged.c ---- */

/* Bytes [off, off + len) from a base. */
typedef struct {
    MPI_Aint off, len;
} rma_range_t;

/* 1 if process pid holds `token` at its address remote_token (the staged path works to it). */
int rma_staged_probe(int pid, const void *remote_token, int64_t token);
/* The byte ranges, from lb, that count elements of t touch in [lb, lb + span) (bytes: their size):
 * *out (malloc'd) and *n. 0, or -1 (no memory, or the MPI refused the type). */
int rma_staged_ranges(MPI_Datatype t, MPI_Count count, MPI_Aint lb, MPI_Aint span, MPI_Count bytes,
                      rma_range_t **out, int *n);
/* Reads (write 0) or writes the ranges between local + off and process pid's remote + off:
 * MPI_SUCCESS, MPI_ERR_RMA_RANGE (not the target's memory) or MPI_ERR_OTHER (said why). */
int rma_staged_io(int pid, int write, char *local, char *remote, const rma_range_t *r, int n);

/* ---- pmpi_rma_dt.c ---- */

/* count elements of a datatype as runs of one predefined element type: element `named`,
 * of extent `ext`; run i is `n[i]` elements from byte `disp[i]` (from the buffer). */
typedef struct {
    MPI_Datatype named;
    MPI_Aint ext, size;   /* of the element */
    int nruns, cap;
    MPI_Aint *disp;
    MPI_Count *n;
    MPI_Count total;      /* elements */
} rma_runs_t;

/* 0, or -1: a combiner not handled here (darray), or more than one element type. */
int rma_runs(rma_runs_t *r, MPI_Datatype t, MPI_Count count);
void rma_runs_free(rma_runs_t *r);

/* The element atomics: 1 if op on `named` is done with hardware atomics here (an integer type of
 * 1, 2, 4 or 8 bytes, a predefined arithmetic, bit or logical op, REPLACE or NO_OP). */
int rma_atomic_ok(MPI_Datatype named, MPI_Op op);
/* *t = *t op *o for n elements of size sz (fetching the old values into res unless NULL). */
void rma_atomic_apply(void *t, const void *o, void *res, MPI_Count n, int sz, int is_signed, MPI_Op op);
int rma_is_signed(MPI_Datatype named);
/* Compare-and-swap of one element of sz bytes: *res = old; if old == *cmp then *t = *o. */
void rma_atomic_cas(void *t, const void *o, const void *cmp, void *res, int sz);

#endif
