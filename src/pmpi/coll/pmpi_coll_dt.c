/* pmpi_coll_dt: datatypes and ops for the collectives. Predefined ops on predefined types run
 * coll/'s own loops; every other op (user-defined, or a predefined op on a type coll/ has no loop
 * for) runs through PMPI_Reduce_local, which calls the user's function with the user's datatype —
 * the one MPI call that applies an op, so bobcat never needs the function pointer. */
#include "pmpi_coll.h"
#include "../base/pmpi_dt.h"
#include "../base/pmpi_ref.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

pc_knobs_t pc_knobs;

/* A collective knob's word (options.def lists the words each takes; the parser checked it) as coll's
 * algorithm. Barrier's `counter` is its in-place algorithm. */
static pc_alg_t alg_of(util_word_t w)
{
    switch (w) {
    case UTIL_V_MPI: return PC_MPI;
    case UTIL_V_SERIAL: return PC_SERIAL;
    case UTIL_V_PARALLEL: return PC_PARALLEL;
    case UTIL_V_FUSED: return PC_FUSED;
    case UTIL_V_AUTO_PARALLEL: return PC_AUTO_PARALLEL;
    case UTIL_V_SPLIT: return PC_SPLIT;
    case UTIL_V_INPLACE:
    case UTIL_V_COUNTER: return PC_INPLACE;
    default: return PC_AUTO;
    }
}

/* Predefined datatypes coll/ has loops for, checked against the MPI's own sizes at start-up (a
 * type whose size differs from the C type bobcat assumes is left to the real MPI). */
typedef struct {
    MPI_Datatype dt;
    coll_type_t t;
    int only; /* 1: MPI_BYTE, only BAND/BOR/BXOR are defined; 2: Fortran INTEGER, no logical ops */
} dt_map_t;
static dt_map_t dt_map[48];
static int dt_map_n;

/* dt_map by handle: open addressing over 256 slots (a collective looks its type up twice per call; a
 * linear scan put MPI_DOUBLE_PRECISION, 33rd, 35 ns behind MPI_DOUBLE on a 2-rank Allreduce). */
static signed char dt_hash[256];
static unsigned dt_slot(MPI_Datatype dt)
{
    uintptr_t h = 0;
    memcpy(&h, &dt, sizeof dt < sizeof h ? sizeof dt : sizeof h);
    h *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 56);
}
static int map_find(MPI_Datatype dt)
{
    for (unsigned s = dt_slot(dt), n = 0; n < 256; s = (s + 1) & 255, n++) {
        int i = dt_hash[s] - 1;
        if (i < 0)
            return -1;
        if (dt_map[i].dt == dt)
            return i;
    }
    return -1;
}
static void map_add(MPI_Datatype dt, coll_type_t t, size_t csize, int only)
{
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS || (size_t)size != csize)
        return;
    if (dt_map_n < (int)(sizeof dt_map / sizeof dt_map[0]) && map_find(dt) < 0) {
        unsigned s = dt_slot(dt);
        while (dt_hash[s])
            s = (s + 1) & 255;
        dt_map[dt_map_n++] = (dt_map_t){dt, t, only};
        dt_hash[s] = (signed char)dt_map_n;
    }
}

void pc_knobs_init(void)
{
    const util_options_t *o = pmpi_layer.opt;
    pc_knobs = (pc_knobs_t){alg_of(o->COLL_BARRIER), alg_of(o->COLL_BCAST), alg_of(o->COLL_REDUCE),
                            alg_of(o->COLL_ALLREDUCE), alg_of(o->COLL_REDUCE_SCATTER), alg_of(o->COLL_SCAN),
                            alg_of(o->COLL_GATHER), alg_of(o->COLL_SCATTER), alg_of(o->COLL_ALLGATHER),
                            alg_of(o->COLL_ALLTOALL), alg_of(o->COLL_ALLTOALLV), o->COLL_PARALLEL_MIN, o->COLL_HIER,
                            alg_of(o->COLL_NBC), o->COLL_NBC_HELP, alg_of(o->COLL_NEIGHBOR)};
    /* Bcast: split forced (any size past the inline one), from COLL_SPLIT_MIN (auto), or never. */
    pmpi_node_part_early = pc_knobs.hier && pc_knobs.nbc != PC_MPI; /* (base/pmpi_comm.c) */
    coll_tune.split_min = pc_knobs.bcast == PC_SPLIT  ? 1
                          : pc_knobs.bcast == PC_AUTO ? o->COLL_SPLIT_MIN
                                                      : 0;
    coll_tune.fold3 = o->COLL_FUSED_FOLD;
    dt_map_n = 0;
    memset(dt_hash, 0, sizeof dt_hash);
    map_add(MPI_INT, COLL_T_I32, sizeof(int), 0);
    map_add(MPI_DOUBLE, COLL_T_F64, sizeof(double), 0);
    map_add(MPI_LONG, COLL_T_I64, sizeof(long), 0);
    map_add(MPI_FLOAT, COLL_T_F32, sizeof(float), 0);
    map_add(MPI_UNSIGNED, COLL_T_U32, 4, 0);
    map_add(MPI_UNSIGNED_LONG, COLL_T_U64, 8, 0);
    map_add(MPI_LONG_LONG_INT, COLL_T_I64, 8, 0);
    map_add(MPI_LONG_LONG, COLL_T_I64, 8, 0);
    map_add(MPI_UNSIGNED_LONG_LONG, COLL_T_U64, 8, 0);
    map_add(MPI_SHORT, COLL_T_I16, 2, 0);
    map_add(MPI_UNSIGNED_SHORT, COLL_T_U16, 2, 0);
    map_add(MPI_SIGNED_CHAR, COLL_T_I8, 1, 0);
    map_add(MPI_UNSIGNED_CHAR, COLL_T_U8, 1, 0);
    map_add(MPI_BYTE, COLL_T_U8, 1, 1);
    map_add(MPI_INT8_T, COLL_T_I8, 1, 0);
    map_add(MPI_UINT8_T, COLL_T_U8, 1, 0);
    map_add(MPI_INT16_T, COLL_T_I16, 2, 0);
    map_add(MPI_UINT16_T, COLL_T_U16, 2, 0);
    map_add(MPI_INT32_T, COLL_T_I32, 4, 0);
    map_add(MPI_UINT32_T, COLL_T_U32, 4, 0);
    map_add(MPI_INT64_T, COLL_T_I64, 8, 0);
    map_add(MPI_UINT64_T, COLL_T_U64, 8, 0);
    map_add(MPI_AINT, COLL_T_I64, 8, 0);
    map_add(MPI_OFFSET, COLL_T_I64, 8, 0);
    map_add(MPI_COUNT, COLL_T_I64, 8, 0);
    map_add(MPI_LONG_DOUBLE, COLL_T_LD, sizeof(long double), 0);
    map_add(MPI_C_FLOAT_COMPLEX, COLL_T_CF, 2 * sizeof(float), 0);
    map_add(MPI_C_DOUBLE_COMPLEX, COLL_T_CD, 2 * sizeof(double), 0);
    map_add(MPI_C_LONG_DOUBLE_COMPLEX, COLL_T_CLD, 2 * sizeof(long double), 0);
    map_add(MPI_C_BOOL, COLL_T_BOOL, sizeof(_Bool), 0);
    map_add(MPI_INTEGER, COLL_T_I32, 4, 2);
    map_add(MPI_REAL, COLL_T_F32, 4, 0);
    map_add(MPI_DOUBLE_PRECISION, COLL_T_F64, 8, 0);
    map_add(MPI_COMPLEX, COLL_T_CF, 8, 0);
    map_add(MPI_DOUBLE_COMPLEX, COLL_T_CD, 16, 0);
    /* The pair types' sizes are their data bytes (no padding): value + int. */
    map_add(MPI_FLOAT_INT, COLL_T_FLOAT_INT, sizeof(float) + sizeof(int), 0);
    map_add(MPI_DOUBLE_INT, COLL_T_DOUBLE_INT, sizeof(double) + sizeof(int), 0);
    map_add(MPI_LONG_INT, COLL_T_LONG_INT, sizeof(long) + sizeof(int), 0);
    map_add(MPI_2INT, COLL_T_2INT, 2 * sizeof(int), 0);
    map_add(MPI_SHORT_INT, COLL_T_SHORT_INT, sizeof(short) + sizeof(int), 0);
    map_add(MPI_LONG_DOUBLE_INT, COLL_T_LD_INT, sizeof(long double) + sizeof(int), 0);
}

static int dense_of(MPI_Datatype dt, int *predefined_p);

/* A dense part of a larger type: dense itself, without gaps at either end (lb 0, extent = size). */
static int dense_part(MPI_Datatype t, MPI_Count *size_p)
{
    int pre, d = dense_of(t, &pre);
    MPI_Count lb, ext;
    if (d == 1 && (PMPI_Type_size_x(t, size_p) != MPI_SUCCESS || PMPI_Type_get_extent_x(t, &lb, &ext) != MPI_SUCCESS ||
                   lb != 0 || ext != *size_p))
        d = 0;
    return d;
}

/* Is dt's memory exactly its signature? Predefined types other than the pairs are; so is a
 * contiguous, dup or resized of a dense type, and a struct of dense blocks laid end to end in order
 * (at most 8: the one a large count's _c call makes, pmpi_coll_count.c, and BigMPI's). The caller
 * checks the whole type's ends. Everything else is packed (copies) or left to the real MPI
 * (reductions). */
static int dense_of(MPI_Datatype dt, int *predefined_p)
{
    enum { MAXB = 8 };
    int ni, na, nd, comb;
    *predefined_p = 0;
    if (pmpi_type_envelope(dt, &ni, &na, &nd, &comb) != 0)
        return -1;
    if (comb == MPI_COMBINER_NAMED) {
        *predefined_p = 1;
        return 1; /* size == extent checked by the caller (false for the pair types) */
    }
    int plain = (comb == MPI_COMBINER_CONTIGUOUS || comb == MPI_COMBINER_DUP) && ni <= 1 && na == 0 && nd == 1;
    int resized = comb == MPI_COMBINER_RESIZED && ni == 0 && na == 2 && nd == 1;
    int strct = comb == MPI_COMBINER_STRUCT && ni >= 2 && ni <= MAXB + 1 && na == ni - 1 && nd == ni - 1;
    if (!plain && !resized && !strct)
        return 0;
    int ints[MAXB + 1];
    MPI_Aint addrs[MAXB];
    MPI_Datatype inner[MAXB];
    if (pmpi_type_contents(dt, ni, na, nd, ints, addrs, inner) != 0)
        return -1;
    int d = 1;
    MPI_Count at = 0;
    for (int b = 0; b < nd; b++) {
        MPI_Count size = 0;
        if (d == 1)
            d = dense_part(inner[b], &size);
        if (d == 1 && strct) { /* block b: ints[1 + b] of inner[b] at addrs[b], right after block b - 1 */
            if (addrs[b] != at)
                d = 0;
            at += (MPI_Count)ints[1 + b] * size;
        }
    }
    pmpi_dt_free_contents(inner, nd);
    return d;
}

/* A predefined type without gaps that the layer has looked at before: no call (the v forms
 * describe one or two types per call, five queries each). */
int pc_dt_known(MPI_Datatype dt, pc_dt_t *d_p)
{
    const pmpi_dt_info_t *i = dt == MPI_DATATYPE_NULL ? NULL : pmpi_dt_cached(dt);
    if (!i || !i->predefined || !i->contig || i->lb != 0 || i->size <= 0 || i->extent != i->size || i->size > INT_MAX)
        return 0;
    *d_p = (pc_dt_t){.size = (MPI_Count)i->size, .lb = 0, .extent = (MPI_Aint)i->extent, .dense = 1, .predefined = 1};
    return 1;
}

int pc_dt(MPI_Datatype dt, pc_dt_t *d_p)
{
    pc_dt_t d = {0};
    if (dt == MPI_DATATYPE_NULL)
        return -1;
    if (pc_dt_known(dt, d_p))
        return 0;
    if (PMPI_Type_size_x(dt, &d.size) != MPI_SUCCESS || d.size < 0 ||
        PMPI_Type_get_extent(dt, &d.lb, &d.extent) != MPI_SUCCESS)
        return -1;
    int dense = dense_of(dt, &d.predefined);
    if (dense < 0)
        return -1;
    MPI_Aint tlb, text;
    d.dense = dense && d.lb == 0 && d.extent == d.size && PMPI_Type_get_true_extent(dt, &tlb, &text) == MPI_SUCCESS &&
              tlb == 0 && text == d.size;
    if (d.predefined && d.dense)
        (void)pmpi_dt_query(dt); /* the next time from the cache */
    *d_p = d;
    return 0;
}

static void reduce_local(const void *in, void *inout, size_t count, const coll_op_t *op)
{
    MPI_Op mop;
    MPI_Datatype dt;
    memcpy(&mop, &op->user[0], sizeof mop); /* a pointer in Open MPI, an int in MPICH */
    memcpy(&dt, &op->user[1], sizeof dt);
    while (count) {
        int n = count > (size_t)1 << 30 ? 1 << 30 : (int)count;
        PMPI_Reduce_local((void *)in, inout, n, dt, mop);
        in = (const char *)in + (size_t)n * op->extent;
        inout = (char *)inout + (size_t)n * op->extent;
        count -= (size_t)n;
    }
}

/* The predefined type under a chain of contiguous/dup types, and how many of it one dt holds. */
static int base_of(MPI_Datatype dt, MPI_Datatype *base_p, size_t *mult_p)
{
    size_t mult = 1;
    MPI_Datatype cur = dt;
    for (int depth = 0; depth < 16; depth++) {
        int ni, na, nd, comb;
        if (pmpi_type_envelope(cur, &ni, &na, &nd, &comb) != 0)
            break;
        if (comb == MPI_COMBINER_NAMED) {
            *base_p = cur;
            *mult_p = mult;
            return 0;
        }
        if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || ni > 1 || nd != 1 || na != 0)
            break;
        int ints[1] = {1};
        MPI_Aint addrs[1];
        MPI_Datatype inner;
        if (pmpi_type_contents(cur, ni, na, nd, ints, addrs, &inner) != 0)
            break;
        if (comb == MPI_COMBINER_CONTIGUOUS)
            mult *= (size_t)(ints[0] > 0 ? ints[0] : 0);
        if (cur != dt)
            PMPI_Type_free(&cur); /* contents handed out a derived type we own */
        cur = inner;
    }
    if (cur != dt) {
        int ni, na, nd, comb;
        pmpi_type_envelope(cur, &ni, &na, &nd, &comb);
        if (comb != MPI_COMBINER_NAMED && comb != -1)
            PMPI_Type_free(&cur);
    }
    return -1;
}

/* A predefined reduction op as coll/'s kind; COLL_OP_N for any other (user-defined, null, or
 * MPI_REPLACE / MPI_NO_OP, which reduce nothing). */
static coll_opk_t opk_of(MPI_Op op)
{
    if (op == MPI_SUM) return COLL_OP_SUM;
    if (op == MPI_PROD) return COLL_OP_PROD;
    if (op == MPI_MAX) return COLL_OP_MAX;
    if (op == MPI_MIN) return COLL_OP_MIN;
    if (op == MPI_LAND) return COLL_OP_LAND;
    if (op == MPI_LOR) return COLL_OP_LOR;
    if (op == MPI_LXOR) return COLL_OP_LXOR;
    if (op == MPI_BAND) return COLL_OP_BAND;
    if (op == MPI_BOR) return COLL_OP_BOR;
    if (op == MPI_BXOR) return COLL_OP_BXOR;
    if (op == MPI_MAXLOC) return COLL_OP_MAXLOC;
    if (op == MPI_MINLOC) return COLL_OP_MINLOC;
    return COLL_OP_N;
}

/* Not a user-defined op (nothing a program may free). */
static int op_predefined(MPI_Op op)
{
    return opk_of(op) != COLL_OP_N || op == MPI_OP_NULL || op == MPI_REPLACE || op == MPI_NO_OP;
}

int pc_op(MPI_Op op, MPI_Datatype dt, coll_op_t *op_p, size_t *mult_p, pmpi_why_t *why_p)
{
    *why_p = PMPI_WHY_OP;
    *mult_p = 1;
    if (op == MPI_OP_NULL || op == MPI_REPLACE || op == MPI_NO_OP || dt == MPI_DATATYPE_NULL)
        return -1;
    coll_opk_t k = opk_of(op);
    if (k != COLL_OP_N) {
        /* A named type of the table, or a dense derived type of one (counted as `mult` of them). */
        MPI_Datatype base = dt;
        size_t mult = 1;
        int i = map_find(dt);
        pc_dt_t d;
        if (i < 0 && pc_dt(dt, &d) == 0 && d.dense && !d.predefined && base_of(dt, &base, &mult) == 0 && mult) {
            *mult_p = mult;
            i = map_find(base);
        }
        if (i >= 0) {
            if (dt_map[i].only == 1 && k != COLL_OP_BAND && k != COLL_OP_BOR && k != COLL_OP_BXOR)
                return -1;
            if (dt_map[i].only == 2 && (k == COLL_OP_LAND || k == COLL_OP_LOR || k == COLL_OP_LXOR))
                return -1;
            if (coll_op_builtin(k, dt_map[i].t, op_p) != BOBCAT_OK)
                return -1;
            /* The MPIs refuse predefined ops on derived types, so phases through PMPI use the base. */
            memcpy(&op_p->user[1], &base, sizeof base);
            return 0;
        }
    }
    /* Any other op or type: the real MPI applies it (PMPI_Reduce_local), on a layout bobcat can
     * copy: dense, or predefined (its gaps are padding inside one element). */
    pc_dt_t d;
    if (pc_dt(dt, &d) != 0 || d.size == 0) {
        *why_p = PMPI_WHY_DATATYPE;
        return -1;
    }
    if (!d.dense && !d.predefined) {
        *why_p = PMPI_WHY_DATATYPE;
        return -1;
    }
    MPI_Aint tlb, text;
    if (PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS || tlb != 0 || d.lb != 0 || text > d.extent) {
        *why_p = PMPI_WHY_DATATYPE;
        return -1;
    }
    int commute = 1;
    if (PMPI_Op_commutative(op, &commute) != MPI_SUCCESS)
        return -1;
    *op_p = (coll_op_t){.fn = reduce_local, .extent = (size_t)d.extent, .tail = (size_t)text, .commutative = commute};
    _Static_assert(sizeof(MPI_Op) <= sizeof(void *) && sizeof(MPI_Datatype) <= sizeof(void *), "handles fit");
    memcpy(&op_p->user[0], &op, sizeof op);
    memcpy(&op_p->user[1], &dt, sizeof dt);
    return 0;
}

/* ---- ops and types kept past the call (pmpi_coll.h, pc_op_keep) ---- */

void pc_op_ref(MPI_Op op)
{
    if (!op_predefined(op))
        pmpi_ref(PMPI_REF_OP, PMPI_BITS(op));
}

void pc_op_unref(MPI_Op op)
{
    if (!op_predefined(op) && pmpi_unref(PMPI_REF_OP, PMPI_BITS(op)))
        PMPI_Op_free(&op);
}

BOBCAT_EXPORT int MPI_Op_free(MPI_Op *op)
{
    PMPI_GUARD();
    if (!op || !pmpi_ref_free(PMPI_REF_OP, PMPI_BITS(*op)))
        return PMPI_Op_free(op);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

/* A user op's handles (coll/ runs it through reduce_local): referenced (keep) or let go. */
static void op_refs(const coll_op_t *op_p, int keep)
{
    if (op_p->fn != reduce_local)
        return;
    MPI_Op op;
    MPI_Datatype dt;
    memcpy(&op, &op_p->user[0], sizeof op);
    memcpy(&dt, &op_p->user[1], sizeof dt);
    if (keep)
        pmpi_dt_ref(dt), pc_op_ref(op);
    else
        pmpi_dt_unref(dt), pc_op_unref(op);
}

void pc_op_keep(const coll_op_t *op_p) { op_refs(op_p, 1); }
void pc_op_let_go(const coll_op_t *op_p) { op_refs(op_p, 0); }

int pc_op_lasting(const coll_op_t *op_p, MPI_Datatype dt) { return op_p->fn != reduce_local && map_find(dt) >= 0; }

void pc_pack(const void *ubuf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, void *bytes)
{
    if (d->dense) {
        memcpy(bytes, ubuf, (size_t)count * (size_t)d->size);
        return;
    }
    pmpi_dt_pack(ubuf, count, dt, bytes); /* MPI_BOTTOM and large counts (pmpi_dt.c) */
}

void pc_unpack(const void *bytes, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, void *ubuf)
{
    if (d->dense) {
        memcpy(ubuf, bytes, (size_t)count * (size_t)d->size);
        return;
    }
    pmpi_dt_unpack(bytes, count * d->size, ubuf, count, dt);
}

int pc_in(pc_buf_t *b, const void *buf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, int shared)
{
    *b = (pc_buf_t){(void *)buf, (void *)buf, count, dt, (size_t)count * (size_t)d->size, 0};
    if (d->dense && (!shared || smap_is_shared(buf) || !b->bytes))
        return 0;
    if (!(b->p = malloc(b->bytes ? b->bytes : 1)))
        return -1;
    b->tmp = 1;
    pc_pack(buf, count, dt, d, b->p);
    return 0;
}

int pc_out(pc_buf_t *b, void *buf, MPI_Count count, MPI_Datatype dt, const pc_dt_t *d, int shared, int keep)
{
    *b = (pc_buf_t){buf, buf, count, dt, (size_t)count * (size_t)d->size, 0};
    if (d->dense && (!shared || smap_is_shared(buf) || !b->bytes))
        return 0;
    if (!(b->p = malloc(b->bytes ? b->bytes : 1)))
        return -1;
    b->tmp = 1;
    if (keep)
        pc_pack(buf, count, dt, d, b->p);
    return 0;
}

void pc_in_done(pc_buf_t *b)
{
    if (b->tmp)
        free(b->p);
    b->tmp = 0;
}

void pc_out_done(pc_buf_t *b)
{
    if (b->tmp) {
        pc_dt_t d;
        if (pc_dt(b->dt, &d) == 0)
            pc_unpack(b->p, b->count, b->dt, &d, b->user);
        free(b->p);
    }
    b->tmp = 0;
}
