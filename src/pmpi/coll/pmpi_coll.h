/* pmpi_coll: MPI glue of the collectives (internal to src/pmpi): datatypes and ops described for
 * coll/, buffers staged into the segment when a peer must reach them, and the per-collective
 * algorithm knobs. */
#ifndef BOBCAT_PMPI_COLL_H
#define BOBCAT_PMPI_COLL_H

#include "../base/pmpi_comm.h"
#include "pmpi_coll_lead.h"

#include <string.h>

/* Persistent collectives (pmpi_coll_nb.c, pmpi_coll_neighbor.c), under the names the MPI gives them:
 * MPI 4.0's MPI_X_init (MPICH 4 and 5, Intel MPI, and Open MPI 5, whose MPI_VERSION is still 3), or
 * Open MPI 4's pcollreq extension, the same calls named MPIX_X_init with PMPIX_X_init profiling
 * entries (mpi-ext.h). PCOLL(X) is the entry point the layer defines (gen/gen_pass.py reads it as
 * MPI_X_init), PCOLL_REAL(X) the MPI's own; neither is defined for an MPI that has none. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PCOLL(x) MPI_##x##_init
#define PCOLL_REAL(x) PMPI_##x##_init
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PCOLL(x) MPIX_##x##_init
#define PCOLL_REAL(x) PMPIX_##x##_init
#endif
#endif

/* A rooted collective whose root passed one buffer as both its input and its result (erroneous:
 * MPI_IN_PLACE is the way): reported at the root itself, MPI_ERR_BUFFER through the communicator's
 * error handler, as MPICH does, while the other ranks go on as bobcat's path would. Handing the call
 * to the real MPI at the root alone would hang with an MPI that does not check (Open MPI runs its
 * Gather and waits for ranks that wait in bobcat). A request argument becomes MPI_REQUEST_NULL. */
static inline int pc_alias_error(pmpi_stat_t *st, MPI_Comm comm, MPI_Request *req)
{
    pmpi_stat_mpi(st, PMPI_WHY_VARIANT, 0);
    if (req)
        *req = MPI_REQUEST_NULL;
    return PMPI_Comm_call_errhandler(comm, MPI_ERR_BUFFER), MPI_ERR_BUFFER;
}

/* The error class of a broadcast's receiver whose count differed from the root's (erroneous; what
 * coll_bcast returns and coll_nb_t.mism holds), as MPICH reports it: more than my buffer holds is
 * MPI_ERR_TRUNCATE, less (or my leader's failure across nodes) MPI_ERR_OTHER; MPI_SUCCESS when the
 * counts matched. MPI_Bcast and MPI_Ibcast's completion both say it this way. */
static inline int pc_bcast_mism_err(int mism)
{
    return mism == 0 ? MPI_SUCCESS : mism == 1 ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
}

/* Algorithm choice per collective, fixed at MPI_Init from the knobs. */
typedef enum { PC_AUTO, PC_INPLACE, PC_SERIAL, PC_PARALLEL, PC_MPI, PC_FUSED, PC_SPLIT, PC_AUTO_PARALLEL } pc_alg_t;
typedef struct {
    pc_alg_t barrier, bcast, reduce, allreduce, reduce_scatter, scan, gather, scatter, allgather, alltoall, alltoallv;
    size_t parallel_min;
    int hier; /* BOBCAT_COLL_HIER: collectives that span nodes run hierarchically (else the real MPI) */
    pc_alg_t nbc; /* BOBCAT_COLL_NBC */
    int nbc_help; /* BOBCAT_COLL_NBC_HELP */
    pc_alg_t neighbor; /* BOBCAT_COLL_NEIGHBOR */
} pc_knobs_t;
extern pc_knobs_t pc_knobs;
void pc_knobs_init(void);


/* Datatype facts: dense = its bytes in memory are exactly its packed signature (a predefined
 * type without gaps, a contiguous/dup/resized of one, or dense blocks end to end: pc_dt), so a
 * byte copy moves it. */
typedef struct {
    MPI_Count size;       /* MPI_Type_size_x (a type of more than INT_MAX bytes: BigMPI's way to
                             large counts, MPI_Bcast_c's big types) */
    MPI_Aint lb, extent;  /* MPI_Type_get_extent */
    int dense;
    int predefined;
} pc_dt_t;
int pc_dt(MPI_Datatype dt, pc_dt_t *d_p); /* 0, or -1 if dt is not usable here (null, error) */
/* pc_dt's answer from the layer's datatype cache alone, with no call into the MPI: 1 for a
 * predefined gapless type it has seen (*d_p set), else 0 (then pc_dt must look). */
int pc_dt_known(MPI_Datatype dt, pc_dt_t *d_p);

/* A reduction (op, datatype) as coll/ runs it; -1 with *why_p set if not handled here. A
 * predefined op on a contiguous type of a predefined type runs on the base type: *mult_p base
 * elements per element of dt (1 otherwise); an inter-node phase through PMPI then moves
 * count * *mult_p elements of pc_op_base(op_p) instead. */
int pc_op(MPI_Op op, MPI_Datatype dt, coll_op_t *op_p, size_t *mult_p, pmpi_why_t *why_p);
/* Why a blocking collective on pc (node part built) goes to the real MPI although it spans nodes;
 * PMPI_WHY_NONE when it runs hierarchically. BOBCAT_COLL_HIER=0; or one rank on every node, where
 * the node phases have nothing to do and only add copies around the leaders' call, which would be
 * the real MPI's collective over the same ranks (yod -SN across simulated nodes, 2 ranks: 1.1-2.3x
 * the real MPI's time, Allgather and Alltoall worst; docs/benchmarks.md). The nonblocking ones keep
 * their path there: its leaders' phase is what the progress agent and thread move meanwhile. */
static inline pmpi_why_t pc_hier_why(const pmpi_comm_t *pc)
{
    if (pc->nnodes <= 1)
        return PMPI_WHY_NONE;
    if (!pc_knobs.hier)
        return PMPI_WHY_MULTINODE;
    return pc->nnodes == pc->size ? PMPI_WHY_ALONE : PMPI_WHY_NONE;
}

static inline MPI_Datatype pc_op_base(const coll_op_t *op)
{
    MPI_Datatype dt;
    memcpy(&dt, &op->user[1], sizeof dt);
    return dt;
}
/* MPI lets a program free an op (MPI_Op_free) or a datatype while a nonblocking or persistent call
 * that uses them is pending, and bobcat applies a user's op later (its units, the leaders' phase).
 * pc_op_keep references both (pmpi_dt_ref, pc_op_ref), so the program's frees wait for the last
 * call that lets go (pc_op_let_go). Nothing for coll/'s own loops (predefined op and base type).
 * pc_op_ref/pc_op_unref: the op handle alone (persistent requests). */
void pc_op_keep(const coll_op_t *op);
void pc_op_let_go(const coll_op_t *op);
/* A predefined op on a named type (pc_op's table): nothing the program can free, so the same
 * handles later describe the same op. */
int pc_op_lasting(const coll_op_t *op, MPI_Datatype dt);
void pc_op_ref(MPI_Op op);
void pc_op_unref(MPI_Op op);

/* A buffer as the algorithm sees it: the user's, or a segment copy (packed if not dense). */
typedef struct {
    void *user;        /* the user's buffer */
    void *p;           /* what the algorithm uses */
    MPI_Count count;
    MPI_Datatype dt;
    size_t bytes;      /* count * type size */
    int tmp;           /* p is ours (free it; for an output, unpack into user) */
} pc_buf_t;

/* Input: peers read it if shared is asked. Returns -1 on out of memory. */
int pc_in(pc_buf_t *b, const void *buf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, int shared);
/* Output: peers write it if shared is asked. keep: the user's contents are needed (in place). */
int pc_out(pc_buf_t *b, void *buf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, int shared, int keep);
void pc_in_done(pc_buf_t *b);
void pc_out_done(pc_buf_t *b); /* unpacks into the user's buffer */

/* Pack/unpack count elements between user memory and contiguous bytes (any count: the large-count
 * v forms' blocks may pass INT_MAX elements). */
void pc_pack(const void *ubuf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, void *bytes);
void pc_unpack(const void *bytes, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, void *ubuf);

/* A v or w form's per-rank counts or displacements as the call passed them: the int form's int[],
 * or MPI 4.0's large-count form's MPI_Count[] (counts) or MPI_Aint[] (displacements). The tables
 * bobcat builds from them are 64-bit either way, so a `_c` call takes the int form's path whatever
 * its values, and every rank of a call goes the same way (a rank's counts and displacements are
 * its own: one whose values pass INT_MAX must not leave for the real MPI while its peers wait). */
typedef enum { PC_VEC_INT, PC_VEC_COUNT, PC_VEC_AINT } pc_vec_kind_t;
typedef struct {
    const void *p;
    pc_vec_kind_t kind;
} pc_vec_t;
static inline pc_vec_t pc_vec_int(const int *p) { return (pc_vec_t){p, PC_VEC_INT}; }
static inline pc_vec_t pc_vec_count(const MPI_Count *p) { return (pc_vec_t){p, PC_VEC_COUNT}; }
static inline pc_vec_t pc_vec_aint(const MPI_Aint *p) { return (pc_vec_t){p, PC_VEC_AINT}; }
static inline long long pc_at(pc_vec_t v, int i)
{
    switch (v.kind) {
    case PC_VEC_COUNT: return (long long)((const MPI_Count *)v.p)[i];
    case PC_VEC_AINT: return (long long)((const MPI_Aint *)v.p)[i];
    default: return ((const int *)v.p)[i];
    }
}
/* The large-count form's arrays (the real MPI's `_c` call takes them as they came). */
static inline int pc_vec_wide(pc_vec_t v) { return v.kind != PC_VEC_INT; }

#if MPI_VERSION >= 4
/* A large-count Reduce_scatter's counts (the same on every rank, so every rank decides alike) as
 * ints (pmpi_coll_nb.c): into *c_p, stack (nstack of them) or a block to free; 0, or -1 if one
 * does not fit, or the communicator's size is not known (the real MPI's call, on every rank). */
int pc_counts_as_ints(const MPI_Count *counts, MPI_Comm comm, int **c_p, int *stack, int nstack);
#endif

/* The v forms' blocking paths (pmpi_coll_move.c), for the int entry points and the large-count
 * ones (pmpi_coll_count.c, whose big scalar counts arrive as one element of a big datatype). */
int pc_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
               MPI_Datatype rtype, int root, MPI_Comm comm);
int pc_scatterv(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm);
int pc_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                  MPI_Datatype rtype, MPI_Comm comm);

/* ---- across nodes (pmpi_coll_hier.c), on packed bytes; collective over pc (nnodes > 1) --------
 * piece: my packed piece; it must be in the segment unless I am my node's leader.
 * bytes: every rank's byte count in comm order (Gatherv/Scatterv: significant at the root only;
 * uniform: every rank's count is mybytes and bytes may be NULL). The whole (out at the root, in at
 * the root, out everywhere for Allgatherv) is the pieces packed end to end in comm order. */
void hier_gatherv(pmpi_comm_t *pc, int root, const void *piece, size_t mybytes, const size_t *bytes, int uniform,
                  void *out);
void hier_scatterv(pmpi_comm_t *pc, int root, const void *in, const size_t *bytes, int uniform, size_t mybytes,
                   void *piece);
void hier_allgatherv(pmpi_comm_t *pc, const void *piece, const size_t *bytes, void *out);
/* in: my n blocks of b bytes, in the segment and not overlapping out (node mates read it);
 * out: block r from rank r (any memory). */
void hier_alltoall(pmpi_comm_t *pc, const void *in, size_t b, void *out);
/* Alltoallv/w on packed blocks: my block for comm rank r is sbytes[r] at sblk[r] (in the segment:
 * node mates read it, the leader packs it), the block from r lands at rblk[r] (any memory, rbytes[r]
 * expected). sblk[me] == rblk[me]: in place, my own block stays. */
void hier_alltoallv(pmpi_comm_t *pc, const void *const *sblk, const size_t *sbytes, void *const *rblk,
                    const size_t *rbytes);
/* A leaders' block of `bytes` bytes at byte `off` of its buffer, for calls that take an element
 * count, an int displacement and a datatype per block (point-to-point, Ialltoallw): MPI_BYTE with
 * *count_p = bytes and *disp_p = off where both fit an int; else count 1 and displacement 0 of a
 * committed datatype of 1 GiB runs that starts at off (BOBCAT_COLL_LEAD_RUN: runs of that many
 * bytes, always), which the caller frees once the call is complete. */
MPI_Datatype hier_bytes_type(size_t off, size_t bytes, int *count_p, int *disp_p);

/* ---- the nonblocking v/w forms (pmpi_coll_nbv.c) on pmpi_coll_nb.c's ring -------------------- */
struct nb_comm;
/* comm's ring if its nonblocking collectives run on one (from facts every rank shares: see
 * pmpi_coll_nb.c); else NULL, and *hier_p set if they run across nodes (*node_p: the node
 * communicator's ring, NULL when I am alone on my node), or why not. */
struct nb_comm *pc_nbv_ring(MPI_Comm comm, pmpi_comm_t **pc_p, pmpi_why_t *why_p, struct nb_comm **node_p,
                            int *hier_p);
/* A call's staging: done(st) once when its request completes (write results back), release(st)
 * when the request is retired. */
typedef struct {
    void (*done)(void *st);
    void (*release)(void *st);
} pc_nbv_ops_t;
/* Start the call args describes (kind, root, bytes, sbuf, rbuf, tab) on ring, as a request of
 * bobcat's. */
int pc_nbv_start(struct nb_comm *ring, const coll_nb_t *args, const pc_nbv_ops_t *ops, void *st, MPI_Comm comm,
                 MPI_Request *req);
/* The v/w forms across nodes whose counts only each rank knows (Igatherv, Iscatterv, Ialltoallv/w):
 * every rank writes its call's table as on one node (tab, in the segment) and the node phase
 * gathers the tables' addresses at the node's leader.
 * The leader then does its whole node's part through the windows: start() moves what stays on the
 * node and writes the leaders' call, an exchange of blocks with a datatype each (w: kind
 * COLL_NB_ALLTOALLV, the arguments of MPI_Ialltoallw; tabs: node rank -> its table's address, in my
 * view; base: node rank -> what to add to that rank's pointers for my view), which the caller makes
 * (the real MPI's on the leaders' communicator, or over point-to-point); finish() once that call is
 * complete (writes what it brought); then the leader releases its node. */
typedef struct {
    void (*start)(void *st, const uint64_t *tabs, const uintptr_t *base, pc_lead_nb_args_t *w);
    void (*finish)(void *st, const uint64_t *tabs, const uintptr_t *base);
} pc_nbv_lead_t;
int pc_nbv_hier_start(pmpi_comm_t *pc, struct nb_comm *node, const uint64_t *tab, const pc_nbv_lead_t *lead,
                      const pc_nbv_ops_t *ops, void *st, MPI_Comm comm, MPI_Request *req);
/* Iallgatherv across nodes: W holds the whole result as packed bytes in node order (total bytes; in
 * the segment when I have node mates). The leader's node phase gathers its mates' pieces into W as
 * its table tab says (2 * node_size words, in the segment; its own piece already in W), the leaders
 * exchange their nodes' blocks of W in place through the real MPI (lcd: nnodes counts, then nnodes
 * displacements, in bytes; the request frees it; NULL on the others), then the node copies W from
 * its leader. A node mate sends `mine` (bytes, in the segment). */
int pc_nbv_iallgatherv_hier(pmpi_comm_t *pc, struct nb_comm *node, const void *mine, size_t bytes,
                            const uint64_t *tab, char *W, size_t total, int *lcd, const pc_nbv_ops_t *ops, void *st,
                            MPI_Comm comm, MPI_Request *req);
/* A persistent v/w collective's start (pmpi_coll_nb.c keeps the arguments, its channel set): the
 * nonblocking call, kind GATHERV, SCATTERV, ALLGATHERV or ALLTOALLV (w: Alltoallw, with the types
 * per peer). pmpi_coll_nbv.c sets the hook. */
typedef struct {
    coll_nb_kind_t kind;
    int w, root;
    const void *sbuf;
    int scount;
    const MPI_Count *scnt; /* the init's 64-bit copies of the arrays (int or large-count form alike) */
    const MPI_Aint *sdsp;
    MPI_Datatype sdt;
    const MPI_Datatype *stypes;
    void *rbuf;
    int rcount;
    const MPI_Count *rcnt;
    const MPI_Aint *rdsp;
    MPI_Datatype rdt;
    const MPI_Datatype *rtypes;
} pc_nbv_args_t;
extern int (*pc_nbv_persist_start)(const pc_nbv_args_t *a, MPI_Comm comm, MPI_Request *req);

/* The nonblocking v/w forms (pmpi_coll_nbv.c) for the int entry points, the large-count ones
 * (pmpi_coll_count.c) and the persistent starts; w: Alltoallw (a type per peer, byte displacements). */
int pc_igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req);
int pc_iscatterv(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req);
int pc_iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req);
int pc_ialltoallvw(int w, const void *sbuf, pc_vec_t scounts, pc_vec_t sdispls, const MPI_Datatype *stypes, void *rbuf,
                   pc_vec_t rcounts, pc_vec_t rdispls, const MPI_Datatype *rtypes, MPI_Comm comm, MPI_Request *req);
/* The persistent v/w forms and Reduce_scatter (pmpi_coll_nb.c), likewise; `wide`: the large-count
 * form's call, for the real MPI when the request is not bobcat's. */
int pc_gatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts, pc_vec_t displs,
                    MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req);
int pc_scatterv_init(const void *sbuf, pc_vec_t scounts, pc_vec_t displs, MPI_Datatype stype, void *rbuf, int rcount,
                     MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req);
int pc_allgatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, pc_vec_t rcounts,
                       pc_vec_t displs, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req);
int pc_alltoallvw_init(int w, const void *sbuf, pc_vec_t scounts, pc_vec_t sdispls, const MPI_Datatype *stypes,
                       void *rbuf, pc_vec_t rcounts, pc_vec_t rdispls, const MPI_Datatype *rtypes, MPI_Comm comm,
                       MPI_Info info, MPI_Request *req);

#endif
