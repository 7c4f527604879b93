/* pmpi_coll_alltoallv: MPI_Alltoallv and MPI_Alltoallw in place: on one node each rank reads its
 * block straight from every peer's send buffer (coll_alltoallv: the owner publishes where its block
 * for each peer lies and how long it is, and the reader copies it into its receive buffer). Across
 * nodes as MPI_Alltoall (hier_alltoallv): node-local blocks read straight from node mates, the
 * off-node ones packed per node pair by the leader from its mates' buffers (leaders'
 * PMPI_Alltoallv), each rank reading its own from the leader's receive buffer.
 *
 * Blocks move as packed signature bytes, decided block by block on the rank that owns them: a block
 * of a dense type (memory == signature) in the segment is read where it lies; a block outside the
 * segment (stack, static data, the program's own mmap) or of any other type is packed into one
 * segment buffer first ("staged"). A receive block of a dense type is written where it lies (only
 * its owner writes it, so any memory does); others land in a buffer and are unpacked after. So
 * Alltoallw's per-peer types mix freely, and ranks whose types differ but whose signatures match
 * still meet. MPI_IN_PLACE (MPI 4.0 §6.8: the receive buffer, counts, displacements and types are
 * the send ones too) packs the blocks peers read into a copy (they would read them while this rank
 * overwrites them), except between two ranks when the block travels in the slot.
 *
 * A reader copies as many bytes as it expects (its receive count); a longer block is cut and the
 * call raises MPI_ERR_TRUNCATE on the communicator, as the MPIs do.
 *
 * Decisions from facts every rank shares: the communicator (across nodes hierarchical, or the real
 * MPI with BOBCAT_COLL_HIER=0: why.multinode), the knob. Erroneous arguments (negative counts, a null
 * datatype, sbuf == rbuf with data) go to the real MPI, which reports them. Across nodes the leaders
 * exchange node-pair blocks of any size point-to-point (pmpi_coll_hier.c, lead_exchange).
 *
 * MPI_Alltoallv_c and MPI_Alltoallw_c (MPI 4.0's large counts, MPICH) are the same calls: the arrays
 * are read through pc_vec_t, so their MPI_Count counts and MPI_Aint displacements need no int. */
#include "pmpi_coll.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static pmpi_stat_t st_alltoallv = {.name = "Alltoallv", .alg_names = {"inplace", "hier"}};
static pmpi_stat_t st_alltoallw = {.name = "Alltoallw", .alg_names = {"inplace", "hier"}};

__attribute__((constructor)) static void register_stats(void)
{
    pmpi_stats_register(&st_alltoallv);
    pmpi_stats_register(&st_alltoallw);
}

/* Per-rank tables of one call, on the stack for small groups (no malloc per call). */
#define A2AV_STACK 16
typedef struct {
    const void **sblk; /* where my block for r lies (packed bytes), my view */
    void **rblk;       /* where the block from r lands (packed bytes) */
    size_t *sbytes, *rbytes;
    pc_dt_t *sd, *rd;  /* Alltoallw: per rank; Alltoallv: one each */
    void *heap;
    void *sblk_s[A2AV_STACK], *rblk_s[A2AV_STACK];
    size_t sbytes_s[A2AV_STACK], rbytes_s[A2AV_STACK];
    pc_dt_t sd_s[A2AV_STACK], rd_s[A2AV_STACK];
} a2av_t;

static int a2av_alloc(a2av_t *t, int n, int ntypes)
{
    t->heap = NULL;
    if (n <= A2AV_STACK) {
        t->sblk = (const void **)t->sblk_s, t->rblk = t->rblk_s, t->sbytes = t->sbytes_s, t->rbytes = t->rbytes_s;
        t->sd = t->sd_s, t->rd = t->rd_s;
        return 0;
    }
    char *h = malloc((size_t)n * (2 * sizeof(void *) + 2 * sizeof(size_t)) + 2 * (size_t)ntypes * sizeof(pc_dt_t));
    if (!h)
        return -1;
    t->heap = h;
    t->sd = (pc_dt_t *)h, t->rd = t->sd + ntypes;
    t->sblk = (const void **)(t->rd + ntypes);
    t->rblk = (void **)(t->sblk + n);
    t->sbytes = (size_t *)(t->rblk + n);
    t->rbytes = t->sbytes + n;
    return 0;
}

static void oom(size_t bytes) { util_out_of_memory("an all-to-all buffer", bytes); }

/* One call's arguments: Alltoallv passes one type per side and element displacements; Alltoallw a
 * type per rank and byte displacements. In place, the send side is the receive side. */
typedef struct {
    const char *sbuf;
    pc_vec_t scounts, sdispls;
    const MPI_Datatype *stypes;
    char *rbuf;
    pc_vec_t rcounts, rdispls;
    const MPI_Datatype *rtypes;
    int w, in_place;
} a2av_args_t;

static inline MPI_Datatype type_of(const MPI_Datatype *types, int w, int r) { return types[w ? r : 0]; }
static inline const pc_dt_t *dt_of(const pc_dt_t *d, int w, int r) { return &d[w ? r : 0]; }
static inline MPI_Aint displ_of(pc_vec_t displs, const pc_dt_t *d, int w, int r)
{
    return w ? (MPI_Aint)pc_at(displs, r) : (MPI_Aint)pc_at(displs, r) * d->extent;
}

/* Types and byte counts; -1 if the real MPI must take the call (it reports the error). Alltoallw's
 * type of an empty block is not looked at: programs pass MPI_DATATYPE_NULL there, and a rank that
 * left for the real MPI alone would leave its peers waiting here. */
static int a2av_layout(a2av_t *t, const a2av_args_t *a, int n)
{
    int nt = a->w ? n : 1;
    for (int r = 0; r < nt; r++) {
        static const pc_dt_t none = {.size = 0, .lb = 0, .extent = 0, .dense = 1, .predefined = 1};
        int rempty = a->w && pc_at(a->rcounts, r) == 0,
            sempty = a->w && pc_at(a->in_place ? a->rcounts : a->scounts, r) == 0;
        if (rempty)
            t->rd[r] = none;
        else if (pc_dt(a->rtypes[r], &t->rd[r]))
            return -1;
        if (a->in_place)
            t->sd[r] = t->rd[r];
        else if (sempty)
            t->sd[r] = none;
        else if (pc_dt(a->stypes[r], &t->sd[r]))
            return -1;
    }
    for (int r = 0; r < n; r++) {
        long long sc = pc_at(a->in_place ? a->rcounts : a->scounts, r), rc = pc_at(a->rcounts, r);
        if (sc < 0 || rc < 0)
            return -1;
        t->sbytes[r] = (size_t)sc * (size_t)dt_of(t->sd, a->w, r)->size;
        t->rbytes[r] = (size_t)rc * (size_t)dt_of(t->rd, a->w, r)->size;
    }
    return 0;
}

static int a2av_run(pmpi_stat_t *st, pmpi_comm_t *pc, const a2av_args_t *a, a2av_t *t)
{
    int n = pc->size, me = pc->rank, w = a->w;
    const char *sbase = a->in_place ? a->rbuf : a->sbuf;
    pc_vec_t scounts = a->in_place ? a->rcounts : a->scounts, sdispls = a->in_place ? a->rdispls : a->sdispls;
    const MPI_Datatype *stypes = a->in_place ? a->rtypes : a->stypes;
    int hier = pc->nnodes > 1, inl = !hier && coll_alltoallv_inlines(&pc->cn, t->sbytes);
    size_t total = 0, stage = 0, rstage = 0;
    /* Send side: which blocks are read where they lie, and how much the others need staged. In
     * place, my own block stays where it is; the blocks peers read are copied (unless inline). */
    if (a->in_place)
        t->sbytes[me] = t->rbytes[me] = 0;
    for (int r = 0; r < n; r++) {
        const pc_dt_t *d = dt_of(t->sd, w, r);
        size_t b = t->sbytes[r];
        total += b;
        t->sblk[r] = NULL;
        if (!b)
            continue;
        const char *at = sbase + displ_of(sdispls, d, w, r);
        int direct = d->dense && (r == me || inl || (!a->in_place && smap_is_shared(at) && smap_is_shared(at + b - 1)));
        if (direct)
            t->sblk[r] = at;
        else
            stage += b;
    }
    char *sstage = NULL;
    if (stage) {
        if (!(sstage = malloc(stage)))
            oom(stage);
        size_t off = 0;
        for (int r = 0; r < n; r++) {
            if (!t->sbytes[r] || t->sblk[r])
                continue;
            const pc_dt_t *d = dt_of(t->sd, w, r);
            pc_pack(sbase + displ_of(sdispls, d, w, r), pc_at(scounts, r), type_of(stypes, w, r), d, sstage + off);
            t->sblk[r] = sstage + off;
            off += t->sbytes[r];
        }
    }
    /* Receive side: dense blocks where they lie, the others into one buffer unpacked after. */
    for (int r = 0; r < n; r++) {
        const pc_dt_t *d = dt_of(t->rd, w, r);
        t->rblk[r] = NULL;
        if (!t->rbytes[r])
            continue;
        if (d->dense)
            t->rblk[r] = a->rbuf + displ_of(a->rdispls, d, w, r);
        else
            rstage += t->rbytes[r];
    }
    char *rst = NULL;
    if (rstage) {
        if (!(rst = malloc(rstage)))
            oom(rstage);
        size_t off = 0;
        for (int r = 0; r < n; r++)
            if (t->rbytes[r] && !t->rblk[r]) {
                t->rblk[r] = rst + off;
                off += t->rbytes[r];
            }
    }
    int cut = 0;
    if (hier)
        hier_alltoallv(pc, t->sblk, t->sbytes, t->rblk, t->rbytes);
    else
        cut = coll_alltoallv(&pc->cn, t->sblk, t->sbytes, t->rblk, t->rbytes);
    if (rst) {
        for (int r = 0; r < n; r++) {
            const pc_dt_t *d = dt_of(t->rd, w, r);
            if (t->rbytes[r] && !d->dense)
                pc_unpack(t->rblk[r], pc_at(a->rcounts, r), type_of(a->rtypes, w, r), d,
                          a->rbuf + displ_of(a->rdispls, d, w, r));
        }
        free(rst);
    }
    free(sstage);
    pmpi_stat_path(st, stage || rstage ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, total, hier);
    return cut;
}

/* Two ranks of one node, not in place, my block for the peer small enough to travel in my slot
 * (coll_alltoallv_inlines), every type one pc_dt_known knows: what a2av_layout and a2av_run would
 * decide (every block read and written where it lies, none staged) without their tables, loops and
 * frees, which made an 8-byte MPI_Alltoallv cost ~40 ns more than an MPI_Alltoall (stop 54). 1 if
 * the call ran here (*cut: blocks longer than expected), 0 if the general path must decide. A rank
 * that takes this path and a peer that takes the general one still meet: the mode each publishes
 * is its own (coll_alltoallv). */
static int a2av_pair(pmpi_stat_t *st, pmpi_comm_t *pc, const a2av_args_t *a, int *cut)
{
    if (pc->size != 2 || pc->nnodes > 1 || a->in_place || !a->scounts.p || !a->sdispls.p || !a->rcounts.p ||
        !a->rdispls.p || a->rbuf == MPI_IN_PLACE)
        return 0;
    pc_dt_t sdt, rdt;
    const pc_dt_t *sd = NULL, *rd = NULL;
    if (!a->w) {
        if (!pc_dt_known(a->stypes[0], &sdt) || !pc_dt_known(a->rtypes[0], &rdt))
            return 0;
        sd = &sdt, rd = &rdt;
    }
    const void *sblk[2];
    void *rblk[2];
    size_t sbytes[2], rbytes[2], any = 0;
    for (int r = 0; r < 2; r++) {
        long long sc = pc_at(a->scounts, r), rc = pc_at(a->rcounts, r);
        if (sc < 0 || rc < 0)
            return 0;
        if (a->w) { /* (an empty block's type is not looked at: a2av_layout) */
            sd = sc ? (pc_dt_known(a->stypes[r], &sdt) ? &sdt : NULL) : NULL;
            rd = rc ? (pc_dt_known(a->rtypes[r], &rdt) ? &rdt : NULL) : NULL;
            if ((sc && !sd) || (rc && !rd))
                return 0;
        }
        size_t ss = sd ? (size_t)sd->size : 0, rs = rd ? (size_t)rd->size : 0;
        if (__builtin_mul_overflow((size_t)sc, ss, &sbytes[r]) || __builtin_mul_overflow((size_t)rc, rs, &rbytes[r]))
            return 0;
        long long sdis = pc_at(a->sdispls, r), rdis = pc_at(a->rdispls, r);
        sblk[r] = a->sbuf + (a->w ? sdis : sdis * (sd ? (long long)sd->extent : 0));
        rblk[r] = a->rbuf + (a->w ? rdis : rdis * (rd ? (long long)rd->extent : 0));
        any |= sbytes[r] | rbytes[r];
    }
    if (!coll_alltoallv_inlines(&pc->cn, sbytes) || (a->sbuf == a->rbuf && any))
        return 0; /* (the same buffer twice with data: erroneous, the real MPI reports it) */
    *cut = coll_alltoallv(&pc->cn, sblk, sbytes, rblk, rbytes);
    pmpi_stat_path(st, PMPI_PATH_INPLACE, sbytes[0] + sbytes[1], 0);
    return 1;
}

/* The call as it came, to the real MPI. */
static int to_mpi(const a2av_args_t *a, MPI_Comm comm)
{
    const void *sb = a->in_place ? MPI_IN_PLACE : a->sbuf;
#if MPI_VERSION >= 4
    if (pc_vec_wide(a->rcounts)) {
        const MPI_Count *sc = a->scounts.p, *rc = a->rcounts.p;
        const MPI_Aint *sd = a->sdispls.p, *rd = a->rdispls.p;
        return a->w ? PMPI_AWAY(PMPI_Alltoallw_c(sb, sc, sd, a->stypes, a->rbuf, rc, rd, a->rtypes, comm))
                    : PMPI_AWAY(PMPI_Alltoallv_c(sb, sc, sd, a->stypes[0], a->rbuf, rc, rd, a->rtypes[0], comm));
    }
#endif
    const int *sc = a->scounts.p, *sd = a->sdispls.p, *rc = a->rcounts.p, *rd = a->rdispls.p;
    return a->w ? PMPI_AWAY(PMPI_Alltoallw(sb, sc, sd, a->stypes, a->rbuf, rc, rd, a->rtypes, comm))
                : PMPI_AWAY(PMPI_Alltoallv(sb, sc, sd, a->stypes[0], a->rbuf, rc, rd, a->rtypes[0], comm));
}

static int alltoallvw(pmpi_stat_t *st, const a2av_args_t *a, MPI_Comm comm)
{
    pmpi_why_t why = PMPI_WHY_VARIANT;
    pmpi_comm_t *pc = NULL;
    a2av_t t;
    int cut = 0;
    t.heap = NULL;
    if (pc_knobs.alltoallv == PC_MPI || !(pc = pmpi_comm_get_coll(comm)))
        why = pc_knobs.alltoallv == PC_MPI && pmpi_layer.on ? PMPI_WHY_FORCED : pmpi_comm_coll_why(comm);
    else if (a2av_pair(st, pc, a, &cut))
        goto ran;
    else if (pc_hier_why(pc) != PMPI_WHY_NONE)
        why = pc_hier_why(pc), pc = NULL;
    else if (a->rbuf == MPI_IN_PLACE || !a->rcounts.p || !a->rdispls.p || a2av_alloc(&t, pc->size,
                                                                                     a->w ? pc->size : 1) ||
             a2av_layout(&t, a, pc->size))
        pc = NULL, why = PMPI_WHY_VARIANT; /* erroneous: the real MPI reports it */
    if (pc && !a->in_place && a->sbuf == a->rbuf) {
        /* The same buffer twice is erroneous unless nothing moves (mpi4py passes NULL for both when
         * every count is 0): a rank that fell back alone would leave its peers waiting here. */
        size_t any = 0;
        for (int r = 0; r < pc->size; r++)
            any |= t.sbytes[r] | t.rbytes[r];
        if (any)
            pc = NULL, why = PMPI_WHY_VARIANT;
    }
    if (!pc) {
        free(t.heap);
        pmpi_stat_mpi(st, why, 0);
        return to_mpi(a, comm);
    }
    cut = a2av_run(st, pc, a, &t);
    free(t.heap);
ran:
    if (cut) {
        PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE); /* returns only under MPI_ERRORS_RETURN */
        return MPI_ERR_TRUNCATE;
    }
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                                const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    int in_place = sbuf == MPI_IN_PLACE;
    a2av_args_t a = {in_place ? NULL : sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), &stype, rbuf,
                     pc_vec_int(rcounts), pc_vec_int(rdispls), &rtype, 0, in_place};
    return alltoallvw(&st_alltoallv, &a, comm);
}

BOBCAT_EXPORT int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[], const MPI_Datatype stypes[],
                                void *rbuf, const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[],
                                MPI_Comm comm)
{
    PMPI_GUARD();
    int in_place = sbuf == MPI_IN_PLACE;
    a2av_args_t a = {in_place ? NULL : sbuf, pc_vec_int(scounts), pc_vec_int(sdispls), stypes, rbuf,
                     pc_vec_int(rcounts), pc_vec_int(rdispls), rtypes, 1, in_place};
    return alltoallvw(&st_alltoallw, &a, comm);
}

#if MPI_VERSION >= 4
/* MPI 4.0's large-count forms: the same path and row (docs/mpi.md, "Large counts"). */
BOBCAT_EXPORT int MPI_Alltoallv_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                  MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                                  MPI_Datatype rtype, MPI_Comm comm)
{
    PMPI_GUARD();
    int in_place = sbuf == MPI_IN_PLACE;
    a2av_args_t a = {in_place ? NULL : sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), &stype, rbuf,
                     pc_vec_count(rcounts), pc_vec_aint(rdispls), &rtype, 0, in_place};
    return alltoallvw(&st_alltoallv, &a, comm);
}

BOBCAT_EXPORT int MPI_Alltoallw_c(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                  const MPI_Datatype stypes[], void *rbuf, const MPI_Count rcounts[],
                                  const MPI_Aint rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
    PMPI_GUARD();
    int in_place = sbuf == MPI_IN_PLACE;
    a2av_args_t a = {in_place ? NULL : sbuf, pc_vec_count(scounts), pc_vec_aint(sdispls), stypes, rbuf,
                     pc_vec_count(rcounts), pc_vec_aint(rdispls), rtypes, 1, in_place};
    return alltoallvw(&st_alltoallw, &a, comm);
}
#endif
