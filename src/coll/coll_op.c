/* coll_op: MPI's predefined reduction ops on raw bytes, one loop per (op, element type), chosen
 * once per call through coll_op_builtin (a table lookup), so the reduction loops themselves
 * carry no switch and the compiler vectorises them. */
#include "coll.h"

#include <complex.h>
#include <stdbool.h>

typedef long double ldouble_t;
typedef float _Complex cf_t;
typedef double _Complex cd_t;
typedef long double _Complex cld_t;

/* The loops are built for AVX2 as well as the x86-64 baseline (SSE2), picked once at load time by
 * the CPU (an ifunc), and this file is compiled at -O3 (src/CMakeLists.txt): at -O2, GCC 12
 * vectorises only loops that need no remainder, so every loop here ran one element at a time, far
 * slower than copying the data between the cores (coll-floor, docs/benchmarks.md and docs/mpi.md). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VEC __attribute__((target_clones("avx2", "default")))
#else
#define VEC
#endif

typedef struct { float v; int i; } p_float_int_t;
typedef struct { double v; int i; } p_double_int_t;
typedef struct { long v; int i; } p_long_int_t;
typedef struct { int v; int i; } p_2int_t;
typedef struct { short v; int i; } p_short_int_t;
typedef struct { long double v; int i; } p_ld_int_t;

#define BIN(NAME, T, EXPR)                                                                                     \
    VEC static void NAME(const void *in_, void *io_, size_t n, const coll_op_t *op)                                \
    {                                                                                                          \
        const T *restrict a = in_;                                                                             \
        T *restrict b = io_;                                                                                   \
        for (size_t k = 0; k < n; k++)                                                                         \
            b[k] = (T)(EXPR);                                                                                  \
    }
#define X a[k]
#define Y b[k]
/* The same expression with both operands read and the result written elsewhere (coll_op_fn3). */
#define BIN3(NAME, T, EXPR)                                                                                    \
    VEC static void NAME##_3(const void *a_, const void *b_, void *o_, size_t n, const coll_op_t *op)              \
    {                                                                                                          \
        const T *restrict a = a_;                                                                              \
        const T *restrict b = b_;                                                                              \
        T *restrict o = o_;                                                                                    \
        for (size_t k = 0; k < n; k++)                                                                         \
            o[k] = (T)(EXPR);                                                                                  \
    }
#define BIN2(NAME, T, EXPR) BIN(NAME, T, EXPR) BIN3(NAME, T, EXPR)

/* Arithmetic on every numeric type; ordering only on real ones; bits and logic on integers. */
#define NUM_OPS(S, T)                                                                                          \
    BIN2(sum_##S, T, X + Y)                                                                                     \
    BIN2(prod_##S, T, X * Y)
#define ORD_OPS(S, T)                                                                                          \
    BIN2(max_##S, T, X > Y ? X : Y)                                                                             \
    BIN2(min_##S, T, X < Y ? X : Y)
#define LOG_OPS(S, T)                                                                                          \
    BIN2(land_##S, T, (X != 0) && (Y != 0))                                                                     \
    BIN2(lor_##S, T, (X != 0) || (Y != 0))                                                                      \
    BIN2(lxor_##S, T, (X != 0) != (Y != 0))
#define BIT_OPS(S, T)                                                                                          \
    BIN2(band_##S, T, X & Y)                                                                                    \
    BIN2(bor_##S, T, X | Y)                                                                                     \
    BIN2(bxor_##S, T, X ^ Y)
#define INT_ALL(S, T) NUM_OPS(S, T) ORD_OPS(S, T) LOG_OPS(S, T) BIT_OPS(S, T)

INT_ALL(i8, int8_t)
INT_ALL(u8, uint8_t)
INT_ALL(i16, int16_t)
INT_ALL(u16, uint16_t)
INT_ALL(i32, int32_t)
INT_ALL(u32, uint32_t)
INT_ALL(i64, int64_t)
INT_ALL(u64, uint64_t)
NUM_OPS(f32, float)
ORD_OPS(f32, float)
NUM_OPS(f64, double)
ORD_OPS(f64, double)
NUM_OPS(ld, ldouble_t)
ORD_OPS(ld, ldouble_t)
NUM_OPS(cf, cf_t)
NUM_OPS(cd, cd_t)
NUM_OPS(cld, cld_t)
LOG_OPS(bool, bool)

/* MAXLOC/MINLOC: the better value wins; on a tie the lower index (MPI 4.0 section 6.9.4). */
#define LOC_OPS(S, T)                                                                                          \
    static void maxloc_##S(const void *in_, void *io_, size_t n, const coll_op_t *op)                          \
    {                                                                                                          \
        const T *a = in_;                                                                                      \
        T *b = io_;                                                                                            \
        for (size_t k = 0; k < n; k++) {                                                                       \
            if (a[k].v > b[k].v)                                                                               \
                b[k] = a[k];                                                                                   \
            else if (a[k].v == b[k].v && a[k].i < b[k].i)                                                      \
                b[k].i = a[k].i;                                                                               \
        }                                                                                                      \
    }                                                                                                          \
    static void minloc_##S(const void *in_, void *io_, size_t n, const coll_op_t *op)                          \
    {                                                                                                          \
        const T *a = in_;                                                                                      \
        T *b = io_;                                                                                            \
        for (size_t k = 0; k < n; k++) {                                                                       \
            if (a[k].v < b[k].v)                                                                               \
                b[k] = a[k];                                                                                   \
            else if (a[k].v == b[k].v && a[k].i < b[k].i)                                                      \
                b[k].i = a[k].i;                                                                               \
        }                                                                                                      \
    }
LOC_OPS(float_int, p_float_int_t)
LOC_OPS(double_int, p_double_int_t)
LOC_OPS(long_int, p_long_int_t)
LOC_OPS(2int, p_2int_t)
LOC_OPS(short_int, p_short_int_t)
LOC_OPS(ld_int, p_ld_int_t)

#define INT_ROW(S) {sum_##S, prod_##S, max_##S, min_##S, land_##S, lor_##S, lxor_##S, band_##S, bor_##S, bxor_##S, 0, 0}
#define REAL_ROW(S) {sum_##S, prod_##S, max_##S, min_##S, 0, 0, 0, 0, 0, 0, 0, 0}
#define CPLX_ROW(S) {sum_##S, prod_##S, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
#define LOC_ROW(S) {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, maxloc_##S, minloc_##S}

static const coll_op_fn table[COLL_T_N][COLL_OP_N] = {
    [COLL_T_I8] = INT_ROW(i8),       [COLL_T_U8] = INT_ROW(u8),
    [COLL_T_I16] = INT_ROW(i16),     [COLL_T_U16] = INT_ROW(u16),
    [COLL_T_I32] = INT_ROW(i32),     [COLL_T_U32] = INT_ROW(u32),
    [COLL_T_I64] = INT_ROW(i64),     [COLL_T_U64] = INT_ROW(u64),
    [COLL_T_F32] = REAL_ROW(f32),    [COLL_T_F64] = REAL_ROW(f64),
    [COLL_T_LD] = REAL_ROW(ld),
    [COLL_T_CF] = CPLX_ROW(cf),      [COLL_T_CD] = CPLX_ROW(cd),
    [COLL_T_CLD] = CPLX_ROW(cld),
    [COLL_T_BOOL] = {0, 0, 0, 0, land_bool, lor_bool, lxor_bool, 0, 0, 0, 0, 0},
    [COLL_T_FLOAT_INT] = LOC_ROW(float_int), [COLL_T_DOUBLE_INT] = LOC_ROW(double_int),
    [COLL_T_LONG_INT] = LOC_ROW(long_int),   [COLL_T_2INT] = LOC_ROW(2int),
    [COLL_T_SHORT_INT] = LOC_ROW(short_int), [COLL_T_LD_INT] = LOC_ROW(ld_int),
};

#define INT_ROW3(S) {sum_##S##_3, prod_##S##_3, max_##S##_3, min_##S##_3, land_##S##_3, lor_##S##_3, lxor_##S##_3, band_##S##_3, bor_##S##_3, bxor_##S##_3, 0, 0}
#define REAL_ROW3(S) {sum_##S##_3, prod_##S##_3, max_##S##_3, min_##S##_3, 0, 0, 0, 0, 0, 0, 0, 0}
#define CPLX_ROW3(S) {sum_##S##_3, prod_##S##_3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/* The three-operand forms (MINLOC/MAXLOC have none: their folds copy first). */
static const coll_op_fn3 table3[COLL_T_N][COLL_OP_N] = {
    [COLL_T_I8] = INT_ROW3(i8),       [COLL_T_U8] = INT_ROW3(u8),
    [COLL_T_I16] = INT_ROW3(i16),     [COLL_T_U16] = INT_ROW3(u16),
    [COLL_T_I32] = INT_ROW3(i32),     [COLL_T_U32] = INT_ROW3(u32),
    [COLL_T_I64] = INT_ROW3(i64),     [COLL_T_U64] = INT_ROW3(u64),
    [COLL_T_F32] = REAL_ROW3(f32),    [COLL_T_F64] = REAL_ROW3(f64),
    [COLL_T_LD] = REAL_ROW3(ld),
    [COLL_T_CF] = CPLX_ROW3(cf),      [COLL_T_CD] = CPLX_ROW3(cd),
    [COLL_T_CLD] = CPLX_ROW3(cld),
    [COLL_T_BOOL] = {0, 0, 0, 0, land_bool_3, lor_bool_3, lxor_bool_3, 0, 0, 0, 0, 0},
};

/* Element extent, and the bytes of an element up to its last data byte (a pair's int ends before
 * the struct's padding; long double carries 6 bytes of padding on x86-64 but they are part of
 * its storage, and copying them is harmless). */
#define PAIR_TAIL(T) (offsetof(T, i) + sizeof(int))
static const size_t extents[COLL_T_N] = {
    1, 1, 2, 2, 4, 4, 8, 8, sizeof(float), sizeof(double), sizeof(ldouble_t), sizeof(cf_t), sizeof(cd_t),
    sizeof(cld_t), sizeof(bool), sizeof(p_float_int_t), sizeof(p_double_int_t), sizeof(p_long_int_t),
    sizeof(p_2int_t), sizeof(p_short_int_t), sizeof(p_ld_int_t)};

bobcat_status_t coll_op_builtin(coll_opk_t opk, coll_type_t type, coll_op_t *op_p)
{
    if ((unsigned)opk >= COLL_OP_N || (unsigned)type >= COLL_T_N || !table[type][opk])
        return BOBCAT_ERR_INVAL;
    size_t tail = extents[type];
    switch (type) {
    case COLL_T_FLOAT_INT: tail = PAIR_TAIL(p_float_int_t); break;
    case COLL_T_DOUBLE_INT: tail = PAIR_TAIL(p_double_int_t); break;
    case COLL_T_LONG_INT: tail = PAIR_TAIL(p_long_int_t); break;
    case COLL_T_2INT: tail = PAIR_TAIL(p_2int_t); break;
    case COLL_T_SHORT_INT: tail = PAIR_TAIL(p_short_int_t); break;
    case COLL_T_LD_INT: tail = PAIR_TAIL(p_ld_int_t); break;
    default: break;
    }
    *op_p = (coll_op_t){.fn = table[type][opk], .fn3 = table3[type][opk], .extent = extents[type], .tail = tail, .commutative = 1};
    return BOBCAT_OK;
}
