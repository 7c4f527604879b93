/* pmpi_rma_dt: a datatype as runs of its predefined element type (the accumulates walk the target's
 * and the result's layout element by element), and the element atomics.
 *
 * MPI's accumulate atomicity is per element of the one predefined type both sides are built of
 * (MPI 4.0 section 12.7.1), so the target's typemap is read from the envelope down to that type:
 * runs (displacement, elements) in typemap order. Every combiner a type of one element type can be
 * built with is read except darray (the caller then reports MPI_ERR_TYPE... see pmpi_rma_ops.c). */
#include "pmpi_rma.h"

#include <stdlib.h>
#include <string.h>

#define RUNS_DEPTH 16

static int add_run(rma_runs_t *r, MPI_Aint disp, MPI_Count n)
{
    if (n <= 0)
        return 0;
    if (r->nruns > 0 && r->size == r->ext) {
        int k = r->nruns - 1;
        if (r->disp[k] + r->n[k] * r->ext == disp) { /* continues the last run */
            r->n[k] += n;
            r->total += n;
            return 0;
        }
    }
    if (r->nruns == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        MPI_Aint *d = realloc(r->disp, sizeof(MPI_Aint) * (size_t)cap);
        if (!d)
            return -1;
        r->disp = d;
        MPI_Count *c = realloc(r->n, sizeof(MPI_Count) * (size_t)cap);
        if (!c)
            return -1;
        r->n = c;
        r->cap = cap;
    }
    r->disp[r->nruns] = disp;
    r->n[r->nruns] = n;
    r->nruns++;
    r->total += n;
    return 0;
}

static int walk(rma_runs_t *r, MPI_Datatype t, MPI_Aint disp, MPI_Count count, int depth);

/* The subarray's elements: every index tuple but the fastest dimension's, a run each. */
static int walk_subarray(rma_runs_t *r, const int *ints, MPI_Datatype old, MPI_Aint disp, int depth)
{
    int nd = ints[0];
    const int *sizes = ints + 1, *sub = ints + 1 + nd, *start = ints + 1 + 2 * nd;
    int c_order = ints[1 + 3 * nd] == MPI_ORDER_C;
    MPI_Aint lb, oext;
    PMPI_Type_get_extent(old, &lb, &oext);
    if (nd <= 0 || nd > 32)
        return -1;
    for (int d = 0; d < nd; d++)
        if (sub[d] == 0)
            return 0;
    int idx[32] = {0};
    int fast = c_order ? nd - 1 : 0;
    for (;;) {
        /* byte offset of idx (the fastest dimension at its start) */
        MPI_Aint off = 0, stride = oext;
        for (int k = 0; k < nd; k++) {
            int d = c_order ? nd - 1 - k : k;
            off += (MPI_Aint)(start[d] + (d == fast ? 0 : idx[d])) * stride;
            stride *= sizes[d];
        }
        if (walk(r, old, disp + off, sub[fast], depth + 1))
            return -1;
        /* next tuple over the other dimensions, the slowest last */
        int k;
        for (k = 0; k < nd; k++) {
            int d = c_order ? nd - 1 - k : k;
            if (d == fast)
                continue;
            if (++idx[d] < sub[d])
                break;
            idx[d] = 0;
        }
        if (k == nd)
            return 0;
    }
}

static int walk(rma_runs_t *r, MPI_Datatype t, MPI_Aint disp, MPI_Count count, int depth)
{
    int ni, na, nd, comb;
    if (count <= 0)
        return 0;
    if (depth > RUNS_DEPTH || pmpi_type_envelope(t, &ni, &na, &nd, &comb) != 0)
        return -1;
    if (comb == MPI_COMBINER_NAMED
#ifdef MPI_COMBINER_F90_INTEGER
        || comb == MPI_COMBINER_F90_INTEGER || comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX
#endif
    ) {
        if (r->named == MPI_DATATYPE_NULL) {
            MPI_Aint lb;
            int sz;
            r->named = t;
            PMPI_Type_get_extent(t, &lb, &r->ext);
            PMPI_Type_size(t, &sz);
            r->size = sz;
        } else if (r->named != t) {
            return -1;
        }
        return add_run(r, disp, count);
    }
    int *ints = malloc(sizeof(int) * (size_t)(ni ? ni : 1));
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na ? na : 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd ? nd : 1));
    int rc = -1;
    if (!ints || !addrs || !types || pmpi_type_contents(t, ni, na, nd, ints, addrs, types) != 0) {
        free(ints);
        free(addrs);
        free(types);
        return -1;
    }
    MPI_Aint lb, ext, olb, oext = 0;
    PMPI_Type_get_extent(t, &lb, &ext);
    if (nd >= 1)
        PMPI_Type_get_extent(types[0], &olb, &oext);
    rc = 0;
    for (MPI_Count c = 0; c < count && rc == 0; c++) {
        MPI_Aint at = disp + (MPI_Aint)c * ext;
        switch (comb) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED:
            rc = walk(r, types[0], at, 1, depth + 1);
            break;
        case MPI_COMBINER_CONTIGUOUS:
            rc = walk(r, types[0], at, ints[0], depth + 1);
            break;
        case MPI_COMBINER_VECTOR:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + (MPI_Aint)i * ints[2] * oext, ints[1], depth + 1);
            break;
        case MPI_COMBINER_HVECTOR:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + (MPI_Aint)i * addrs[0], ints[1], depth + 1);
            break;
        case MPI_COMBINER_INDEXED:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + (MPI_Aint)ints[1 + ints[0] + i] * oext, ints[1 + i], depth + 1);
            break;
        case MPI_COMBINER_HINDEXED:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + addrs[i], ints[1 + i], depth + 1);
            break;
        case MPI_COMBINER_INDEXED_BLOCK:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + (MPI_Aint)ints[2 + i] * oext, ints[1], depth + 1);
            break;
        case MPI_COMBINER_HINDEXED_BLOCK:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[0], at + addrs[i], ints[1], depth + 1);
            break;
        case MPI_COMBINER_STRUCT:
            for (int i = 0; i < ints[0] && rc == 0; i++)
                rc = walk(r, types[i], at + addrs[i], ints[1 + i], depth + 1);
            break;
        case MPI_COMBINER_SUBARRAY:
            rc = walk_subarray(r, ints, types[0], at, depth);
            break;
        default:
            rc = -1; /* darray, ...: not read here */
        }
    }
    pmpi_dt_free_contents(types, nd);
    free(ints);
    free(addrs);
    free(types);
    return rc;
}

int rma_runs(rma_runs_t *r, MPI_Datatype t, MPI_Count count)
{
    memset(r, 0, sizeof *r);
    r->named = MPI_DATATYPE_NULL;
    if (walk(r, t, 0, count, 0)) {
        rma_runs_free(r);
        return -1;
    }
    return 0;
}

void rma_runs_free(rma_runs_t *r)
{
    free(r->disp);
    free(r->n);
    r->disp = NULL;
    r->n = NULL;
    r->nruns = r->cap = 0;
}

/* ---- element atomics ---- */

static const MPI_Datatype *signed_types(int *n)
{
    static MPI_Datatype t[16];
    static int k;
    if (!k) {
        MPI_Datatype s[] = {MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_SHORT, MPI_SIGNED_CHAR, MPI_INT8_T, MPI_INT16_T,
                            MPI_INT32_T, MPI_INT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_INTEGER, MPI_LONG_LONG_INT};
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
            t[k++] = s[i];
    }
    *n = k;
    return t;
}

static const MPI_Datatype *unsigned_types(int *n)
{
    static MPI_Datatype t[12];
    static int k;
    if (!k) {
        MPI_Datatype u[] = {MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_UNSIGNED_SHORT,
                            MPI_UNSIGNED_CHAR, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T};
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
            t[k++] = u[i];
    }
    *n = k;
    return t;
}

static int in_list(MPI_Datatype d, const MPI_Datatype *l, int n)
{
    for (int i = 0; i < n; i++)
        if (l[i] == d)
            return 1;
    return 0;
}

int rma_is_signed(MPI_Datatype named)
{
    int n;
    const MPI_Datatype *l = signed_types(&n);
    return in_list(named, l, n);
}

int rma_atomic_ok(MPI_Datatype named, MPI_Op op)
{
    int ns, nu, sz = 0;
    const MPI_Datatype *s = signed_types(&ns), *u = unsigned_types(&nu);
    if (!in_list(named, s, ns) && !in_list(named, u, nu))
        return 0;
    if (PMPI_Type_size(named, &sz) != MPI_SUCCESS || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
        return 0;
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN || op == MPI_BAND || op == MPI_BOR ||
           op == MPI_BXOR || op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_REPLACE || op == MPI_NO_OP;
}

/* One element: old = *t; *t = old op v (a CAS loop for what has no instruction). */
#define ATOMIC_ELEM(T, UT)                                                                               \
    static T elem_##T(T *t, T v, MPI_Op op)                                                              \
    {                                                                                                    \
        if (op == MPI_SUM)                                                                               \
            return (T)__atomic_fetch_add((UT *)t, (UT)v, __ATOMIC_SEQ_CST);                              \
        if (op == MPI_BAND)                                                                              \
            return __atomic_fetch_and(t, v, __ATOMIC_SEQ_CST);                                           \
        if (op == MPI_BOR)                                                                               \
            return __atomic_fetch_or(t, v, __ATOMIC_SEQ_CST);                                            \
        if (op == MPI_BXOR)                                                                              \
            return __atomic_fetch_xor(t, v, __ATOMIC_SEQ_CST);                                           \
        if (op == MPI_REPLACE)                                                                           \
            return __atomic_exchange_n(t, v, __ATOMIC_SEQ_CST);                                          \
        if (op == MPI_NO_OP)                                                                             \
            return __atomic_load_n(t, __ATOMIC_SEQ_CST);                                                 \
        T old = __atomic_load_n(t, __ATOMIC_RELAXED), nv;                                                \
        do {                                                                                             \
            if (op == MPI_PROD)                                                                          \
                nv = (T)((UT)old * (UT)v);                                                               \
            else if (op == MPI_MAX)                                                                      \
                nv = old > v ? old : v;                                                                  \
            else if (op == MPI_MIN)                                                                      \
                nv = old < v ? old : v;                                                                  \
            else if (op == MPI_LAND)                                                                     \
                nv = (T)(old && v);                                                                      \
            else if (op == MPI_LOR)                                                                      \
                nv = (T)(old || v);                                                                      \
            else                                                                                         \
                nv = (T)(!old != !v);                                                                    \
        } while (!__atomic_compare_exchange_n(t, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));       \
        return old;                                                                                      \
    }

typedef signed char s8;
typedef unsigned char u8;
typedef int16_t s16;
typedef uint16_t u16;
typedef int32_t s32;
typedef uint32_t u32;
typedef int64_t s64;
typedef uint64_t u64;
ATOMIC_ELEM(s8, u8)
ATOMIC_ELEM(u8, u8)
ATOMIC_ELEM(s16, u16)
ATOMIC_ELEM(u16, u16)
ATOMIC_ELEM(s32, u32)
ATOMIC_ELEM(u32, u32)
ATOMIC_ELEM(s64, u64)
ATOMIC_ELEM(u64, u64)

#define APPLY_LOOP(T)                                                                                    \
    for (MPI_Count i = 0; i < n; i++) {                                                                  \
        T v = 0, old;                                                                                    \
        if (o)                                                                                           \
            memcpy(&v, (const char *)o + i * (MPI_Count)sizeof(T), sizeof(T));                           \
        old = elem_##T((T *)t + i, v, op);                                                               \
        if (res)                                                                                         \
            memcpy((char *)res + i * (MPI_Count)sizeof(T), &old, sizeof(T));                             \
    }

void rma_atomic_apply(void *t, const void *o, void *res, MPI_Count n, int sz, int is_signed, MPI_Op op)
{
    switch (sz * 2 + !is_signed) {
    case 2: APPLY_LOOP(s8) break;
    case 3: APPLY_LOOP(u8) break;
    case 4: APPLY_LOOP(s16) break;
    case 5: APPLY_LOOP(u16) break;
    case 8: APPLY_LOOP(s32) break;
    case 9: APPLY_LOOP(u32) break;
    case 16: APPLY_LOOP(s64) break;
    case 17: APPLY_LOOP(u64) break;
    default: break;
    }
}

void rma_atomic_cas(void *t, const void *o, const void *cmp, void *res, int sz)
{
    switch (sz) {
#define CAS(T)                                                                                           \
    {                                                                                                    \
        T exp, nv;                                                                                       \
        memcpy(&exp, cmp, sizeof(T));                                                                    \
        memcpy(&nv, o, sizeof(T));                                                                       \
        __atomic_compare_exchange_n((T *)t, &exp, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
        memcpy(res, &exp, sizeof(T));                                                                    \
        break;                                                                                           \
    }
    case 1: CAS(u8)
    case 2: CAS(u16)
    case 4: CAS(u32)
    case 8: CAS(u64)
#undef CAS
    default: break;
    }
}
