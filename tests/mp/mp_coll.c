/* mp_coll: bobcat's collectives against values this test computes itself, on every rank.
 *
 * Every collective x (datatype, op) x MPI_IN_PLACE x buffer kind (heap = segment, stack, static,
 * the program's own mmap) on several communicators (world, a dup, halves, a reversed one, an
 * interleaved one whose ranks are not grouped by node), plus user-defined ops (commutative, and a non-commutative 2x2 matrix
 * product whose result depends on rank order), derived datatypes (contiguous, vector, a mix of
 * signature-equal types across ranks), communicator free/dup/split, MPI_Comm_split_type, shared
 * windows, and nonblocking collectives interleaved with blocking ones.
 *
 * Usage: mp_coll [full|quick|mini]: full crosses every type with every op at two counts; quick
 * (default) one type per kind of element; mini (for the runs that force each algorithm) fewer
 * sizes and communicators. Every level covers every collective, MPI_IN_PLACE and buffer kind. */
#include <complex.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <bobcat/smartmap.h>
#include "mp_util.h"

#define POOL (1u << 20)
static char static_pool[2 * POOL];
static int wrank, wsize, level = 1; /* 0 mini, 1 quick, 2 full */

/* ---- element types: set/get through a long double "value" (and an index for pairs) -------- */
typedef enum { K_SINT, K_UINT, K_REAL, K_CPLX, K_BOOL, K_BYTE, K_PAIR } kind_t;
typedef struct {
    const char *name;
    MPI_Datatype dt;
    kind_t kind;
    size_t ext;
    int id;
} ttype_t;

enum { T_SCHAR, T_UCHAR, T_SHORT, T_USHORT, T_INT, T_UNSIGNED, T_LONG, T_ULONG, T_LLONG, T_ULLONG, T_INT8, T_UINT64,
       T_INTEGER, T_FLOAT, T_DOUBLE, T_LDOUBLE, T_CFLOAT, T_CDOUBLE, T_BOOL, T_BYTE, T_FLOAT_INT, T_DOUBLE_INT,
       T_LONG_INT, T_2INT, T_SHORT_INT, T_LDOUBLE_INT, T_N };

typedef struct { float v; int i; } pfi_t;
typedef struct { double v; int i; } pdi_t;
typedef struct { long v; int i; } pli_t;
typedef struct { int v; int i; } p2i_t;
typedef struct { short v; int i; } psi_t;
typedef struct { long double v; int i; } pldi_t;

static ttype_t types[T_N];

static void types_init(void)
{
#define T(ID, DT, K, CT) types[ID] = (ttype_t){#DT, DT, K, sizeof(CT), ID}
    T(T_SCHAR, MPI_SIGNED_CHAR, K_SINT, signed char);
    T(T_UCHAR, MPI_UNSIGNED_CHAR, K_UINT, unsigned char);
    T(T_SHORT, MPI_SHORT, K_SINT, short);
    T(T_USHORT, MPI_UNSIGNED_SHORT, K_UINT, unsigned short);
    T(T_INT, MPI_INT, K_SINT, int);
    T(T_UNSIGNED, MPI_UNSIGNED, K_UINT, unsigned);
    T(T_LONG, MPI_LONG, K_SINT, long);
    T(T_ULONG, MPI_UNSIGNED_LONG, K_UINT, unsigned long);
    T(T_LLONG, MPI_LONG_LONG, K_SINT, long long);
    T(T_ULLONG, MPI_UNSIGNED_LONG_LONG, K_UINT, unsigned long long);
    T(T_INT8, MPI_INT8_T, K_SINT, int8_t);
    T(T_UINT64, MPI_UINT64_T, K_UINT, uint64_t);
    T(T_INTEGER, MPI_INTEGER, K_SINT, int);
    T(T_FLOAT, MPI_FLOAT, K_REAL, float);
    T(T_DOUBLE, MPI_DOUBLE, K_REAL, double);
    T(T_LDOUBLE, MPI_LONG_DOUBLE, K_REAL, long double);
    T(T_CFLOAT, MPI_C_FLOAT_COMPLEX, K_CPLX, float _Complex);
    T(T_CDOUBLE, MPI_C_DOUBLE_COMPLEX, K_CPLX, double _Complex);
    T(T_BOOL, MPI_C_BOOL, K_BOOL, _Bool);
    T(T_BYTE, MPI_BYTE, K_BYTE, unsigned char);
    T(T_FLOAT_INT, MPI_FLOAT_INT, K_PAIR, pfi_t);
    T(T_DOUBLE_INT, MPI_DOUBLE_INT, K_PAIR, pdi_t);
    T(T_LONG_INT, MPI_LONG_INT, K_PAIR, pli_t);
    T(T_2INT, MPI_2INT, K_PAIR, p2i_t);
    T(T_SHORT_INT, MPI_SHORT_INT, K_PAIR, psi_t);
    T(T_LDOUBLE_INT, MPI_LONG_DOUBLE_INT, K_PAIR, pldi_t);
#undef T
}

typedef struct { long double re, im; int idx; } val_t;

static void put(const ttype_t *t, void *buf, size_t i, val_t v)
{
    char *p = (char *)buf + i * t->ext;
    long long s = (long long)v.re;
    switch (t->id) {
    case T_SCHAR: *(signed char *)p = (signed char)s; break;
    case T_UCHAR: case T_BYTE: *(unsigned char *)p = (unsigned char)s; break;
    case T_SHORT: *(short *)p = (short)s; break;
    case T_USHORT: *(unsigned short *)p = (unsigned short)s; break;
    case T_INT: case T_INTEGER: *(int *)p = (int)s; break;
    case T_UNSIGNED: *(unsigned *)p = (unsigned)s; break;
    case T_LONG: *(long *)p = (long)s; break;
    case T_ULONG: *(unsigned long *)p = (unsigned long)s; break;
    case T_LLONG: *(long long *)p = s; break;
    case T_ULLONG: *(unsigned long long *)p = (unsigned long long)s; break;
    case T_INT8: *(int8_t *)p = (int8_t)s; break;
    case T_UINT64: *(uint64_t *)p = (uint64_t)s; break;
    case T_FLOAT: *(float *)p = (float)v.re; break;
    case T_DOUBLE: *(double *)p = (double)v.re; break;
    case T_LDOUBLE: *(long double *)p = v.re; break;
    case T_CFLOAT: *(float _Complex *)p = (float)v.re + (float)v.im * I; break;
    case T_CDOUBLE: *(double _Complex *)p = (double)v.re + (double)v.im * I; break;
    case T_BOOL: *(_Bool *)p = v.re != 0; break;
    case T_FLOAT_INT: ((pfi_t *)p)->v = (float)v.re; ((pfi_t *)p)->i = v.idx; break;
    case T_DOUBLE_INT: ((pdi_t *)p)->v = (double)v.re; ((pdi_t *)p)->i = v.idx; break;
    case T_LONG_INT: ((pli_t *)p)->v = (long)v.re; ((pli_t *)p)->i = v.idx; break;
    case T_2INT: ((p2i_t *)p)->v = (int)v.re; ((p2i_t *)p)->i = v.idx; break;
    case T_SHORT_INT: ((psi_t *)p)->v = (short)v.re; ((psi_t *)p)->i = v.idx; break;
    case T_LDOUBLE_INT: ((pldi_t *)p)->v = v.re; ((pldi_t *)p)->i = v.idx; break;
    }
}

static int same(const ttype_t *t, const void *a, const void *b, size_t i)
{
    const char *x = (const char *)a + i * t->ext, *y = (const char *)b + i * t->ext;
    switch (t->id) {
    case T_FLOAT_INT: return ((pfi_t *)x)->v == ((pfi_t *)y)->v && ((pfi_t *)x)->i == ((pfi_t *)y)->i;
    case T_DOUBLE_INT: return ((pdi_t *)x)->v == ((pdi_t *)y)->v && ((pdi_t *)x)->i == ((pdi_t *)y)->i;
    case T_LONG_INT: return ((pli_t *)x)->v == ((pli_t *)y)->v && ((pli_t *)x)->i == ((pli_t *)y)->i;
    case T_2INT: return ((p2i_t *)x)->v == ((p2i_t *)y)->v && ((p2i_t *)x)->i == ((p2i_t *)y)->i;
    case T_SHORT_INT: return ((psi_t *)x)->v == ((psi_t *)y)->v && ((psi_t *)x)->i == ((psi_t *)y)->i;
    case T_LDOUBLE_INT: return ((pldi_t *)x)->v == ((pldi_t *)y)->v && ((pldi_t *)x)->i == ((pldi_t *)y)->i;
    case T_LDOUBLE: return *(long double *)x == *(long double *)y;
    default: return !memcmp(x, y, t->ext);
    }
}

/* ---- ops: inputs chosen so that every result is exact in every type ------------------------ */
typedef enum { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MAXLOC, O_MINLOC, O_N } opid_t;
static const char *const op_names[O_N] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
                                          "MAXLOC", "MINLOC"};
static MPI_Op mpi_op(opid_t o)
{
    MPI_Op ops[O_N] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                       MPI_MAXLOC, MPI_MINLOC};
    return ops[o];
}

static val_t input(const ttype_t *t, opid_t o, int r, size_t i)
{
    val_t v = {0, 0, 0};
    switch (o) {
    case O_SUM: v.re = (long double)((r * 7 + (int)(i % 1000) * 3) % 5) - (t->kind == K_SINT || t->kind == K_REAL ? 2 : 0); break;
    case O_PROD: v.re = (r + (int)(i % 999)) % 3 == 0 ? 2 : 1; break;
    case O_MAX: case O_MIN: v.re = (long double)((r * 13 + (int)(i % 1000) * 7) % 11) - (t->kind == K_UINT ? 0 : 5); break;
    case O_LAND: case O_LOR: case O_LXOR: v.re = (r * 5 + (int)(i % 1000)) % 3 != 0; if (o == O_LOR) v.re = (r + (int)i) % 4 == 0; break;
    case O_BAND: case O_BOR: case O_BXOR: v.re = (r * 37 + (int)(i % 1000) * 11) % 127; if (o == O_BAND) v.re = 127 - ((r + (int)i) % 7); break;
    case O_MAXLOC: case O_MINLOC: v.re = (r * 5 + (int)(i % 1000)) % 4; v.idx = r * 2 + 1; break;
    default: break;
    }
    if (t->kind == K_CPLX)
        v.im = (long double)((r + (int)i) % 3) - 1;
    return v;
}

static val_t combine(opid_t o, val_t a, val_t b) /* a op b */
{
    val_t v = a;
    switch (o) {
    case O_SUM: v.re = a.re + b.re; v.im = a.im + b.im; break;
    case O_PROD: v.re = a.re * b.re - a.im * b.im; v.im = a.re * b.im + a.im * b.re; break;
    case O_MAX: v.re = a.re > b.re ? a.re : b.re; break;
    case O_MIN: v.re = a.re < b.re ? a.re : b.re; break;
    case O_LAND: v.re = a.re != 0 && b.re != 0; break;
    case O_LOR: v.re = a.re != 0 || b.re != 0; break;
    case O_LXOR: v.re = (a.re != 0) != (b.re != 0); break;
    case O_BAND: v.re = (long double)((long long)a.re & (long long)b.re); break;
    case O_BOR: v.re = (long double)((long long)a.re | (long long)b.re); break;
    case O_BXOR: v.re = (long double)((long long)a.re ^ (long long)b.re); break;
    case O_MAXLOC: if (b.re > a.re || (b.re == a.re && b.idx < a.idx)) v = b; break;
    case O_MINLOC: if (b.re < a.re || (b.re == a.re && b.idx < a.idx)) v = b; break;
    default: break;
    }
    return v;
}

static int op_fits(const ttype_t *t, opid_t o)
{
    switch (t->kind) {
    case K_SINT: case K_UINT: return o <= O_BXOR && !(t->id == T_INTEGER && o >= O_LAND && o <= O_LXOR);
    case K_REAL: return o <= O_MIN;
    case K_CPLX: return o <= O_PROD;
    case K_BOOL: return o >= O_LAND && o <= O_LXOR;
    case K_BYTE: return o >= O_BAND && o <= O_BXOR;
    case K_PAIR: return o == O_MAXLOC || o == O_MINLOC;
    }
    return 0;
}

/* ---- buffers ------------------------------------------------------------------------------- */
typedef enum { B_HEAP, B_STACK, B_STATIC, B_MMAP, B_N } bkind_t;
static const char *const bk_names[B_N] = {"heap", "stack", "static", "mmap"};
static char *pools[B_N];

/* Two non-overlapping buffers of the kind. */
static void bufs(bkind_t k, char **a, char **b)
{
    *a = pools[k];
    *b = pools[k] + POOL;
}

/* reference fold of ranks [lo, hi] in rank order at element i */
static val_t ref(const ttype_t *t, opid_t o, int lo, int hi, size_t i)
{
    val_t acc = input(t, o, lo, i);
    for (int r = lo + 1; r <= hi; r++)
        acc = combine(o, acc, input(t, o, r, i));
    return acc;
}

#define FAILN(what, ...) CHECK(0, "%s %s %s count=%zu %s: " what, cname, t->name, op_names[o], count, bk_names[bk], __VA_ARGS__)

static void check_red(const char *cname, const ttype_t *t, opid_t o, size_t count, bkind_t bk, const void *got,
                      int lo, int hi, size_t off)
{
    char *exp = malloc(count * t->ext + 1);
    memset(exp, 0, count * t->ext);
    for (size_t i = 0; i < count; i++)
        put(t, exp, i, ref(t, o, lo, hi, off + i));
    for (size_t i = 0; i < count; i++)
        if (!same(t, exp, got, i)) {
            FAILN("element %zu wrong (rank %d of ranks %d..%d)", i, wrank, lo, hi);
            break;
        }
    free(exp);
}

/* All reductions for one (type, op, count, buffer kind) on comm. */
static void reductions(MPI_Comm comm, const ttype_t *t, opid_t o, size_t count, bkind_t bk)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *s, *r;
    bufs(bk, &s, &r);
    MPI_Op op = mpi_op(o);
    int n = (int)count;
    const char *cname;
    if (getenv("MP_COLL_TRACE"))
        fprintf(stderr, "mp_coll: rank %d: %s %s count %zu %s\n", wrank, t->name, op_names[o], count, bk_names[bk]);
    for (int ip = 0; ip < 2; ip++) {
        /* Reduce to the first and the last rank. */
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1) {
            cname = ip ? "Reduce(IN_PLACE)" : "Reduce";
            for (size_t i = 0; i < count; i++)
                put(t, ip && rank == root ? r : s, i, input(t, o, rank, i));
            memset(r + (ip && rank == root ? count * t->ext : 0), 0x5a, 64);
            MPI_Reduce(ip && rank == root ? MPI_IN_PLACE : s, r, n, t->dt, op, root, comm);
            if (rank == root)
                check_red(cname, t, o, count, bk, r, 0, size - 1, 0);
            if (size == 1)
                break;
        }
        cname = ip ? "Allreduce(IN_PLACE)" : "Allreduce";
        for (size_t i = 0; i < count; i++)
            put(t, ip ? r : s, i, input(t, o, rank, i));
        MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, n, t->dt, op, comm);
        check_red(cname, t, o, count, bk, r, 0, size - 1, 0);

        cname = ip ? "Scan(IN_PLACE)" : "Scan";
        for (size_t i = 0; i < count; i++)
            put(t, ip ? r : s, i, input(t, o, rank, i));
        MPI_Scan(ip ? MPI_IN_PLACE : s, r, n, t->dt, op, comm);
        check_red(cname, t, o, count, bk, r, 0, rank, 0);

        cname = ip ? "Exscan(IN_PLACE)" : "Exscan";
        for (size_t i = 0; i < count; i++)
            put(t, ip ? r : s, i, input(t, o, rank, i));
        MPI_Exscan(ip ? MPI_IN_PLACE : s, r, n, t->dt, op, comm);
        if (rank > 0)
            check_red(cname, t, o, count, bk, r, 0, rank - 1, 0);

        if (count * t->ext * (size_t)size <= POOL) {
            cname = ip ? "Reduce_scatter_block(IN_PLACE)" : "Reduce_scatter_block";
            for (size_t i = 0; i < count * (size_t)size; i++)
                put(t, ip ? r : s, i, input(t, o, rank, i));
            MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : s, r, n, t->dt, op, comm);
            check_red(cname, t, o, count, bk, r, 0, size - 1, (size_t)rank * count);

            /* Reduce_scatter with uneven counts: rank q gets q % 3 + count/2 elements. */
            cname = ip ? "Reduce_scatter(IN_PLACE)" : "Reduce_scatter";
            int *rc = malloc(sizeof(int) * (size_t)size);
            size_t tot = 0, off = 0;
            for (int q = 0; q < size; q++) {
                rc[q] = q % 3 + n / 2;
                if (q < rank)
                    off += (size_t)rc[q];
                tot += (size_t)rc[q];
            }
            for (size_t i = 0; i < tot; i++)
                put(t, ip ? r : s, i, input(t, o, rank, i));
            MPI_Reduce_scatter(ip ? MPI_IN_PLACE : s, r, rc, t->dt, op, comm);
            check_red(cname, t, o, (size_t)rc[rank], bk, r, 0, size - 1, off);
            free(rc);
        }
    }
}

/* ---- user ops ------------------------------------------------------------------------------ */
/* 2x2 integer matrices mod 97; inout = in * inout. Not commutative: the result depends on order. */
static void matmul(void *in_, void *io_, int *len, MPI_Datatype *dt)
{
    int *a = in_, *b = io_;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = (a[0] * b[0] + a[1] * b[2]) % 97, c1 = (a[0] * b[1] + a[1] * b[3]) % 97;
        int c2 = (a[2] * b[0] + a[3] * b[2]) % 97, c3 = (a[2] * b[1] + a[3] * b[3]) % 97;
        b[0] = c0, b[1] = c1, b[2] = c2, b[3] = c3;
    }
}
static void usersum(void *in_, void *io_, int *len, MPI_Datatype *dt)
{
    int *a = in_, *b = io_;
    for (int k = 0; k < *len; k++)
        b[k] += a[k];
}

/* Rank r's matrix for element i. Not polynomials in one matrix (the matrices of the ranks did not
 * commute only from rank 4 on, so a wrong order went unseen at fewer ranks). */
static void mat_of(int r, size_t i, int *m)
{
    m[0] = r + 1 + (int)(i % 5), m[1] = 1 + r % 2, m[2] = (int)(i % 3) + r, m[3] = (r * 3) % 5;
}

static void user_ops(MPI_Comm comm, bkind_t bk, size_t count)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op nc, cs;
    MPI_Op_create(matmul, 0, &nc);
    MPI_Op_create(usersum, 1, &cs);
    char *s, *r;
    bufs(bk, &s, &r);
    int *si = (int *)s, *ri = (int *)r;
    for (int ip = 0; ip < 2; ip++) {
        for (int kind = 0; kind < 3; kind++) { /* 0 Allreduce, 1 Reduce to last, 2 Scan */
            int root = size - 1, hi = kind == 2 ? rank : size - 1, inpl = ip && (kind != 1 || rank == root);
            for (size_t i = 0; i < count; i++)
                mat_of(rank, i, (inpl ? ri : si) + 4 * i);
            const void *sb = inpl ? MPI_IN_PLACE : s;
            if (kind == 0)
                MPI_Allreduce(sb, r, (int)count, mat, nc, comm);
            else if (kind == 1)
                MPI_Reduce(sb, r, (int)count, mat, nc, root, comm);
            else
                MPI_Scan(sb, r, (int)count, mat, nc, comm);
            if (kind == 1 && rank != root)
                continue;
            for (size_t i = 0; i < count; i++) {
                int acc[4], m[4];
                mat_of(hi, i, acc);
                for (int q = hi - 1; q >= 0; q--) {
                    int n1 = 1;
                    mat_of(q, i, m);
                    matmul(m, acc, &n1, NULL);
                }
                if (memcmp(acc, ri + 4 * i, sizeof acc)) {
                    CHECK(0, "user non-commutative op kind %d ip %d %s count %zu: element %zu wrong", kind, ip,
                          bk_names[bk], count, i);
                    break;
                }
            }
        }
        for (size_t i = 0; i < count; i++)
            (ip ? ri : si)[i] = rank + (int)i;
        MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, (int)count, MPI_INT, cs, comm);
        for (size_t i = 0; i < count; i++)
            if (ri[i] != size * (size - 1) / 2 + size * (int)i) {
                CHECK(0, "user sum ip %d element %zu = %d", ip, i, ri[i]);
                break;
            }
    }
    /* A predefined op on a contiguous derived type: MPI allows it and bobcat runs it on the base
     * type, but neither real MPI here accepts it (Open MPI 4.1, MPICH 4.0), so only when bobcat does. */
    const char *fa = getenv("BOBCAT_COLL_ALLREDUCE"), *on = getenv("BOBCAT_MPI");
    int bobcat_does = (!fa || strcmp(fa, "mpi")) && (!on || (strcmp(on, "0") && strcmp(on, "off")));
    if (bobcat_does) { /* across nodes it is the real MPI's with BOBCAT_COLL_HIER=0 or one rank per node */
        MPI_Comm shm;
        int ssize, smax = 0;
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
        MPI_Comm_size(shm, &ssize);
        MPI_Comm_free(&shm);
        MPI_Allreduce(&ssize, &smax, 1, MPI_INT, MPI_MAX, comm);
        if (ssize != size)
            bobcat_does &= !mp_env_is("BOBCAT_COLL_HIER", "0", "off") && smax > 1;
    }
    for (size_t i = 0; i < 4 * count; i++)
        si[i] = rank * 3 + (int)i;
    if (bobcat_does) {
        MPI_Allreduce(s, r, (int)count, mat, MPI_SUM, comm);
        for (size_t i = 0; i < 4 * count; i++)
            if (ri[i] != 3 * size * (size - 1) / 2 + size * (int)i) {
                CHECK(0, "SUM on contiguous(4, MPI_INT) element %zu = %d", i, ri[i]);
                break;
            }
    }
    MPI_Op_free(&nc);
    MPI_Op_free(&cs);
    MPI_Type_free(&mat);
}

/* ---- data movement ------------------------------------------------------------------------- */
static int word(int from, int to, int i) { return from * 1000003 + to * 1009 + i; }

/* `vec` sends or receives through a vector type (every other int) instead of contiguous ints, so
 * signature-equal but differently laid out types meet in one call. */
static void movement(MPI_Comm comm, bkind_t bk, int count, int vec_rank)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *sc, *rc;
    bufs(bk, &sc, &rc);
    int *s = (int *)sc, *r = (int *)rc;
    int vec = rank == vec_rank;
    MPI_Datatype vt, one;
    MPI_Type_vector(count, 1, 2, MPI_INT, &vt); /* count ints, stride 2 */
    MPI_Type_create_resized(vt, 0, (MPI_Aint)(2 * count * (int)sizeof(int)), &one);
    MPI_Type_commit(&one);
    MPI_Type_free(&vt);
    /* In "vec" mode a piece of `count` ints is one `one` element, laid out at stride 2. */
    MPI_Datatype dt = vec ? one : MPI_INT;
    int c = vec ? 1 : count, st = vec ? 2 : 1;
    size_t piece = (size_t)count * (size_t)st; /* ints a piece occupies in memory */
    if ((size_t)size * piece * sizeof(int) > POOL)
        goto out;
    for (int ip = 0; ip < 2; ip++) {
        for (int root = 0; root < size; root += size > 1 ? size - 1 : 1) {
            /* Bcast */
            for (size_t i = 0; i < piece; i++)
                r[i] = rank == root ? word(root, 0, (int)i / st) : -1;
            MPI_Bcast(r, c, dt, root, comm);
            for (int i = 0; i < count; i++)
                if (r[i * st] != word(root, 0, i)) {
                    CHECK(0, "Bcast root %d %s count %d vec %d: element %d = %d", root, bk_names[bk], count, vec, i, r[i * st]);
                    break;
                }
            /* Gather */
            int inpl = ip && rank == root;
            for (int i = 0; i < count; i++)
                (inpl ? r + (size_t)rank * piece : s)[i * st] = word(rank, root, i);
            MPI_Gather(inpl ? MPI_IN_PLACE : s, c, dt, r, c, dt, root, comm);
            if (rank == root)
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < count; i++)
                        if (r[(size_t)q * piece + (size_t)i * st] != word(q, root, i)) {
                            CHECK(0, "Gather%s root %d %s from %d element %d", inpl ? "(IN_PLACE)" : "", root, bk_names[bk], q, i);
                            q = size;
                            break;
                        }
            /* Scatter */
            if (rank == root)
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < count; i++)
                        s[(size_t)q * piece + (size_t)i * st] = word(root, q, i);
            for (size_t i = 0; i < piece; i++)
                r[i] = -1;
            MPI_Scatter(s, c, dt, inpl ? MPI_IN_PLACE : r, c, dt, root, comm);
            const int *got = inpl ? s + (size_t)rank * piece : r;
            for (int i = 0; i < count; i++)
                if (got[i * st] != word(root, rank, i)) {
                    CHECK(0, "Scatter%s root %d %s element %d", inpl ? "(IN_PLACE)" : "", root, bk_names[bk], i);
                    break;
                }
            /* Gatherv / Scatterv with pieces in reverse order and uneven sizes */
            int *cnts = malloc(sizeof(int) * 2 * (size_t)size), *dsp = cnts + size;
            int off = 0;
            for (int q = size - 1; q >= 0; q--) {
                cnts[q] = vec ? 1 : count - (q % 2) * (count / 2);
                dsp[q] = off;
                off += cnts[q] * (vec ? 1 : 1) + 1;
            }
            int mycnt = vec ? 1 : count - (rank % 2) * (count / 2);
            if (vec) /* a vector rank uses the same piece size everywhere */
                for (int q = 0; q < size; q++)
                    cnts[q] = 1;
            int same_sig = 1;
            for (int q = 0; q < size; q++)
                same_sig &= (q % 2 == 0) || count / 2 == 0;
            if (vec_rank < 0 || same_sig) {
                for (int i = 0; i < mycnt * st; i++)
                    s[i] = word(rank, root, i / st);
                memset(r, 0xff, (size_t)(off + 1) * sizeof(int) * piece < POOL ? (size_t)(off + 1) * sizeof(int) : 0);
                MPI_Gatherv(s, mycnt, dt, r, cnts, dsp, dt, root, comm);
                if (rank == root)
                    for (int q = 0; q < size; q++)
                        for (int i = 0; i < (vec ? count : cnts[q]); i++)
                            if (r[(size_t)dsp[q] * (vec ? piece : 1) + (size_t)i * st] != word(q, root, i)) {
                                CHECK(0, "Gatherv root %d %s from %d element %d", root, bk_names[bk], q, i);
                                q = size;
                                break;
                            }
                if (rank == root)
                    for (int q = 0; q < size; q++)
                        for (int i = 0; i < (vec ? count : cnts[q]); i++)
                            s[(size_t)dsp[q] * (vec ? piece : 1) + (size_t)i * st] = word(root, q, i);
                MPI_Scatterv(s, cnts, dsp, dt, r, mycnt, dt, root, comm);
                for (int i = 0; i < (vec ? count : mycnt); i++)
                    if (r[i * st] != word(root, rank, i)) {
                        CHECK(0, "Scatterv root %d %s element %d", root, bk_names[bk], i);
                        break;
                    }
            }
            free(cnts);
            if (size == 1)
                break;
        }
        /* Allgather */
        for (int i = 0; i < count; i++)
            (ip ? r + (size_t)rank * piece : s)[i * st] = word(rank, 7, i);
        MPI_Allgather(ip ? MPI_IN_PLACE : s, c, dt, r, c, dt, comm);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < count; i++)
                if (r[(size_t)q * piece + (size_t)i * st] != word(q, 7, i)) {
                    CHECK(0, "Allgather%s %s count %d vec %d: from %d element %d", ip ? "(IN_PLACE)" : "", bk_names[bk], count, vec, q, i);
                    q = size;
                    break;
                }
        /* Allgatherv: rank q contributes (q % 3 + 1) ints at displacement 3 * q + 1 (ints only) */
        if (vec_rank < 0) {
            int *cnts = malloc(sizeof(int) * 2 * (size_t)size), *dsp = cnts + size;
            for (int q = 0; q < size; q++)
                cnts[q] = q % 3 + 1, dsp[q] = 3 * (size - 1 - q) + 1;
            for (int i = 0; i < cnts[rank]; i++)
                (ip ? r + dsp[rank] : s)[i] = word(rank, 8, i);
            MPI_Allgatherv(ip ? MPI_IN_PLACE : s, cnts[rank], MPI_INT, r, cnts, dsp, MPI_INT, comm);
            for (int q = 0; q < size; q++)
                for (int i = 0; i < cnts[q]; i++)
                    if (r[dsp[q] + i] != word(q, 8, i)) {
                        CHECK(0, "Allgatherv%s %s from %d element %d", ip ? "(IN_PLACE)" : "", bk_names[bk], q, i);
                        q = size;
                        break;
                    }
            free(cnts);
        }
        /* Alltoall */
        for (int q = 0; q < size; q++)
            for (int i = 0; i < count; i++)
                (ip ? r : s)[(size_t)q * piece + (size_t)i * st] = word(rank, q, i);
        MPI_Alltoall(ip ? MPI_IN_PLACE : s, c, dt, r, c, dt, comm);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < count; i++)
                if (r[(size_t)q * piece + (size_t)i * st] != word(q, rank, i)) {
                    CHECK(0, "Alltoall%s %s count %d vec %d: from %d element %d", ip ? "(IN_PLACE)" : "", bk_names[bk], count, vec, q, i);
                    q = size;
                    break;
                }
    }
out:
    MPI_Type_free(&one);
}

/* ---- communicators, shared memory, nonblocking ---------------------------------------------- */
static void node_things(void)
{
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    int srank, ssize;
    MPI_Comm_rank(shm, &srank);
    MPI_Comm_size(shm, &ssize);
    CHECK(ssize == smap_local_size(), "split_type(SHARED) has %d ranks, the plan's node %d", ssize, smap_local_size());
    CHECK(srank == smap_local_rank(), "split_type(SHARED) rank %d, local rank %d", srank, smap_local_rank());
    /* Every member is on my node by SMARTMAP's account. */
    int *members = malloc(sizeof(int) * (size_t)ssize);
    MPI_Allgather(&wrank, 1, MPI_INT, members, 1, MPI_INT, shm);
    for (int q = 0; q < ssize; q++)
        CHECK(smap_pe_is_local(members[q]) >= 0, "split_type member %d not on my node", members[q]);
    free(members);

    /* Open MPI names a window's shared-memory file after the job and the communicator's context
     * id, which disjoint communicators may share: two simulated nodes on one host then collide
     * (with or without bobcat). So shared windows are checked on real nodes only with Open MPI. */
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    const char *sim = getenv("BOBCAT_SIMULATE_NODES");
    int windows = !(strstr(lib, "Open MPI") && sim && !strcmp(sim, "1") && ssize < wsize);
    /* A shared window: each rank's part, contiguous, written by its owner, read by everyone. */
    if (windows) {
    MPI_Win win;
    int *mine = NULL;
    MPI_Aint bytes = (MPI_Aint)sizeof(int) * (srank + 1) * 16;
    MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, shm, &mine, &win);
    /* The MPI-3 shared-memory idiom: passive epoch, store, sync, barrier, sync, load. */
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < (srank + 1) * 16; i++)
        mine[i] = wrank * 100 + i;
    MPI_Win_sync(win);
    MPI_Barrier(shm);
    MPI_Win_sync(win);
    int *prev_end = NULL;
    for (int q = 0; q < ssize; q++) {
        MPI_Aint sz;
        int du;
        int *base;
        MPI_Win_shared_query(win, q, &sz, &du, &base);
        CHECK(sz == (MPI_Aint)sizeof(int) * (q + 1) * 16 && du == (int)sizeof(int), "shared_query(%d) size %ld du %d", q,
              (long)sz, du);
        CHECK(!prev_end || base == prev_end, "shared window not contiguous at rank %d", q);
        prev_end = base + (q + 1) * 16;
        int qw = wrank - srank + q; /* world rank of shm rank q: consecutive on a plan node */
        for (int i = 0; i < (q + 1) * 16; i++)
            if (base[i] != qw * 100 + i) {
                CHECK(0, "shared window of rank %d element %d = %d", q, i, base[i]);
                break;
            }
    }
    MPI_Win_unlock_all(win);
    int flavor_ok = 0, *flavor = NULL;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_ok);
    CHECK(flavor_ok && flavor && *flavor == MPI_WIN_FLAVOR_SHARED, "shared window flavor");
    /* RMA on it works too. */
    int got = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, (srank + 1) % ssize, 0, win);
    MPI_Get(&got, 1, MPI_INT, (srank + 1) % ssize, 3, 1, MPI_INT, win);
    MPI_Win_unlock((srank + 1) % ssize, win);
    CHECK(got == (wrank - srank + (srank + 1) % ssize) * 100 + 3, "MPI_Get on the shared window gave %d", got);
    MPI_Barrier(shm);
    MPI_Win_free(&win);
    }
    MPI_Comm_free(&shm);
    /* Only one rank asks for SHARED; the others pass MPI_UNDEFINED and get MPI_COMM_NULL (the
     * layer's split must still be one collective sequence on every rank). */
    for (int root = 0; root < wsize; root += wsize > 2 ? wsize - 1 : 1) {
        MPI_Comm one;
        MPI_Comm_split_type(MPI_COMM_WORLD, wrank == root ? MPI_COMM_TYPE_SHARED : MPI_UNDEFINED, 0, MPI_INFO_NULL, &one);
        if (wrank == root) {
            int s1 = -1;
            CHECK(one != MPI_COMM_NULL, "split_type(SHARED) alone gave MPI_COMM_NULL");
            if (one != MPI_COMM_NULL) {
                MPI_Comm_size(one, &s1);
                MPI_Comm_free(&one);
            }
            CHECK(s1 == 1, "split_type(SHARED) alone has %d ranks", s1);
        } else {
            CHECK(one == MPI_COMM_NULL, "split_type(MPI_UNDEFINED) did not give MPI_COMM_NULL");
        }
    }

    /* Nonblocking collectives (real MPI) interleaved with blocking ones (bobcat) on one comm. */
    int a = wrank, b = 0, x = wrank + 1, y = 0;
    MPI_Request req[2];
    MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
    MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    CHECK(b == wsize * (wsize - 1) / 2 && y == wsize, "nonblocking + blocking mix: %d %d", b, y);
    int bc = wrank == 0 ? 42 : 0;
    MPI_Ibcast(&bc, 1, MPI_INT, 0, MPI_COMM_WORLD, &req[0]);
    int g = wrank;
    MPI_Bcast(&g, 1, MPI_INT, wsize - 1, MPI_COMM_WORLD);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    CHECK(bc == 42 && g == wsize - 1, "Ibcast + Bcast: %d %d", bc, g);
}

/* ---- zero counts and NULL buffers (found by mpi4py's suite) ----------------------------------
 * MPI allows any buffer with count 0 (mpi4py passes NULL for an empty array) and root-only
 * arguments are insignificant elsewhere (NULL on non-roots). Every rank must still take the same
 * path: a root that fell back to the real MPI alone hung Gatherv and crashed the next Scatterv. */
static int zword(int from, int to, int i) { return from * 1000 + to * 10 + i; }

static void zero_counts(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    int *cnt = malloc(sizeof(int) * (size_t)n), *dsp = malloc(sizeof(int) * (size_t)n);
    int *big = malloc(sizeof(int) * (size_t)(4 * n + 8)), *mine = malloc(sizeof(int) * 8);
    static int sbig[64], rsmall[8];
    for (int root = 0; root < n; root++) {
        for (int q = 0; q < n; q++)
            cnt[q] = 0, dsp[q] = 0;
        /* All empty, NULL everywhere, root-only arguments NULL off the root. */
        MPI_Gatherv(NULL, 0, MPI_SIGNED_CHAR, NULL, me == root ? cnt : NULL, me == root ? dsp : NULL, MPI_SIGNED_CHAR,
                    root, comm);
        MPI_Scatterv(NULL, me == root ? cnt : NULL, me == root ? dsp : NULL, MPI_SIGNED_CHAR, NULL, 0, MPI_SIGNED_CHAR,
                     root, comm);
        MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, comm);
        MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, comm);
        MPI_Bcast(NULL, 0, MPI_INT, root, comm);
        MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, root, comm);
        /* Then 1 element each from a static buffer (the count-0 call must leave nothing behind). */
        for (int q = 0; q < n; q++)
            cnt[q] = 1, dsp[q] = q, sbig[q] = zword(root, q, 0);
        rsmall[0] = -1;
        MPI_Scatterv(me == root ? sbig : NULL, me == root ? cnt : NULL, me == root ? dsp : NULL, MPI_INT, rsmall, 1,
                     MPI_INT, root, comm);
        CHECK(rsmall[0] == zword(root, me, 0), "Scatterv after a 0-count call, root %d: got %d", root, rsmall[0]);

        /* Differing counts: rank q sends q % 3 elements, so some send 0 from NULL (the root too,
         * whose empty piece aliases its receive buffer); displacements run backwards from the
         * middle of the root's buffer (negative ones are legal). */
        int total = 0;
        for (int q = 0; q < n; q++)
            cnt[q] = q % 3, total += cnt[q];
        int *mid = big + total; /* pieces at mid - (end of piece q) */
        for (int q = 0, off = 0; q < n; q++)
            off += cnt[q], dsp[q] = -off;
        for (int i = 0; i < 2 * total + 8; i++)
            big[i] = -7;
        for (int i = 0; i < cnt[me]; i++)
            mine[i] = zword(root, me, i);
        const void *sb = cnt[me] ? mine : (me == root ? (void *)mid : NULL);
        MPI_Gatherv(sb, cnt[me], MPI_INT, me == root ? mid : NULL, me == root ? cnt : NULL, me == root ? dsp : NULL,
                    MPI_INT, root, comm);
        if (me == root)
            for (int q = 0; q < n; q++)
                for (int i = 0; i < cnt[q]; i++)
                    if (mid[dsp[q] + i] != zword(root, q, i))
                        CHECK(0, "Gatherv uneven root %d from %d element %d = %d", root, q, i, mid[dsp[q] + i]);
        if (me == root)
            for (int q = 0; q < n; q++)
                for (int i = 0; i < cnt[q]; i++)
                    mid[dsp[q] + i] = zword(root + 1, q, i);
        for (int i = 0; i < 8; i++)
            mine[i] = -7;
        MPI_Scatterv(me == root ? mid : NULL, me == root ? cnt : NULL, me == root ? dsp : NULL, MPI_INT,
                     cnt[me] ? mine : (me == root ? (void *)mid : NULL), cnt[me], MPI_INT, root, comm);
        for (int i = 0; i < cnt[me]; i++)
            CHECK(mine[i] == zword(root + 1, me, i), "Scatterv uneven root %d element %d = %d", root, i, mine[i]);
        CHECK(cnt[me] || mine[0] == -7, "Scatterv uneven root %d wrote a 0-count receive", root);
    }
    /* Allgatherv with some pieces empty (sent from NULL), Allgather/Alltoall/Allreduce of nothing. */
    int total = 0;
    for (int q = 0; q < n; q++)
        cnt[q] = (q + 1) % 3, dsp[q] = total, total += cnt[q];
    for (int i = 0; i < cnt[me]; i++)
        mine[i] = zword(9, me, i);
    for (int i = 0; i < total + 1; i++)
        big[i] = -7;
    MPI_Allgatherv(cnt[me] ? mine : NULL, cnt[me], MPI_INT, big, cnt, dsp, MPI_INT, comm);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt[q]; i++)
            if (big[dsp[q] + i] != zword(9, q, i))
                CHECK(0, "Allgatherv uneven from %d element %d = %d", q, i, big[dsp[q] + i]);
    MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm);
    MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm);
    MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, comm);
    for (int q = 0; q < n; q++)
        cnt[q] = 0, dsp[q] = 0;
    MPI_Allgatherv(NULL, 0, MPI_INT, NULL, cnt, dsp, MPI_INT, comm);
    /* Reduce_scatter where some ranks receive nothing (into NULL). */
    for (int q = 0; q < n; q++)
        cnt[q] = q % 2;
    int rsin[64], rsout = -1;
    for (int i = 0; i < n; i++)
        rsin[i] = me * 100 + i;
    MPI_Reduce_scatter(rsin, cnt[me] ? &rsout : NULL, cnt, MPI_INT, MPI_SUM, comm);
    if (cnt[me]) {
        int at = 0; /* my element's index: the count of odd ranks below me */
        for (int q = 0; q < me; q++)
            at += cnt[q];
        CHECK(rsout == 100 * n * (n - 1) / 2 + n * at, "Reduce_scatter with empty pieces: %d", rsout);
    }
    /* Reduce: the receive buffer is insignificant off the root. */
    int v = me + 1, sum = -1;
    MPI_Reduce(&v, me == 0 ? &sum : NULL, 1, MPI_INT, MPI_SUM, 0, comm);
    CHECK(me != 0 || sum == n * (n + 1) / 2, "Reduce with NULL rbuf off the root: %d", sum);
    free(cnt);
    free(dsp);
    free(big);
    free(mine);
}

/* ---- which path ran (BOBCAT_STATS counters of this rank) ------------------------------------
 * On a world that spans nodes, every collective that has a hierarchical path must have taken it
 * (alg.hier > 0, never why.multinode), unless its knob forces the real MPI; with
 * BOBCAT_COLL_HIER=0 the opposite: why.multinode > 0 and no alg.hier. Only when the counters run
 * (BOBCAT_STATS on) and the layer is on. */
typedef long long (*stat_fn_t)(const char *call, const char *key); /* libbobcat-<mpi>.so's, preloaded by yod */


static void check_paths(void)
{
    static const struct { const char *call, *knob; } hier[] = {
        {"Barrier", "BOBCAT_COLL_BARRIER"}, {"Bcast", "BOBCAT_COLL_BCAST"}, {"Reduce", "BOBCAT_COLL_REDUCE"},
        {"Allreduce", "BOBCAT_COLL_ALLREDUCE"}, {"Gather", "BOBCAT_COLL_GATHER"}, {"Gatherv", "BOBCAT_COLL_GATHER"},
        {"Scatter", "BOBCAT_COLL_SCATTER"}, {"Scatterv", "BOBCAT_COLL_SCATTER"}, {"Allgather", "BOBCAT_COLL_ALLGATHER"},
        {"Allgatherv", "BOBCAT_COLL_ALLGATHER"}, {"Alltoall", "BOBCAT_COLL_ALLTOALL"}, {"Scan", "BOBCAT_COLL_SCAN"},
        {"Exscan", "BOBCAT_COLL_SCAN"}, {"Reduce_scatter", "BOBCAT_COLL_REDUCE_SCATTER"},
        {"Reduce_scatter_block", "BOBCAT_COLL_REDUCE_SCATTER"},
    };
    if (smap_local_size() == wsize || !getenv("BOBCAT_STATS") || mp_env_is("BOBCAT_STATS", "off", "0") ||
        mp_env_is("BOBCAT_MPI", "off", "0"))
        return;
    stat_fn_t stat = (stat_fn_t)dlsym(RTLD_DEFAULT, "bobcat_mpi_stat");
    CHECK(stat != NULL, "bobcat_mpi_stat not found: is the MPI layer preloaded?");
    if (!stat)
        return;
    int off = mp_env_is("BOBCAT_COLL_HIER", "0", "off");
    /* One rank on every node (yod -SN): no node phase to gain, every blocking collective across
     * nodes is the real MPI's (why.one-per-node). */
    int most = 0, mine = smap_local_size();
    MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int alone = most == 1;
    for (size_t i = 0; i < sizeof hier / sizeof hier[0]; i++) {
        if (mp_env_is(hier[i].knob, "mpi", NULL))
            continue;
        long long h = stat(hier[i].call, "alg.hier"), m = stat(hier[i].call, "why.multinode"),
                  a = stat(hier[i].call, "why.one-per-node");
        if (off)
            CHECK(h == 0 && m > 0, "BOBCAT_COLL_HIER=0: %s alg.hier=%lld why.multinode=%lld", hier[i].call, h, m);
        else if (alone)
            CHECK(h == 0 && m == 0 && a > 0, "one rank per node: %s alg.hier=%lld why.multinode=%lld why.one-per-node=%lld",
                  hier[i].call, h, m, a);
        else
            CHECK(h > 0 && m == 0, "%s across nodes: alg.hier=%lld why.multinode=%lld", hier[i].call, h, m);
    }
    if (alone)
        return;
    /* The leaders' phases over point-to-point (coll/pmpi_coll_lead.c): forced, or at
     * MPI_THREAD_MULTIPLE on Open MPI for every communicator but WORLD; else none. Only leaders
     * count them. */
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
#if defined(OPEN_MPI)
    int auto_p2p = provided == MPI_THREAD_MULTIPLE;
#else
    int auto_p2p = 0;
#endif
    int p2p = !off && (mp_env_is("BOBCAT_COLL_LEADERS", "p2p", NULL) ||
                       (auto_p2p && !mp_env_is("BOBCAT_COLL_LEADERS", "comm", NULL)));
    long long lp = stat("leaders", "p2p"), all = 0;
    MPI_Allreduce(&lp, &all, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(p2p ? all > 0 : all <= 0, "leaders' phases over point-to-point: %lld on some rank", all);
}

static void run_comm(MPI_Comm comm, const char *name)
{
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int before = mp_failures;
    if (getenv("MP_COLL_TRACE"))
        fprintf(stderr, "mp_coll: rank %d: communicator %s\n", wrank, name);
    /* (type, op) pairs on heap buffers: all of them (full), or one type per kind of element. */
    static const int per_kind[] = {T_INT, T_DOUBLE, T_DOUBLE_INT, T_BOOL, T_UCHAR, T_CDOUBLE, T_BYTE, T_2INT};
    size_t counts[] = {1, 7}, kinds = level ? 8 : 4;
    for (int ti = 0; ti < T_N; ti++) {
        int pick = level == 2;
        for (size_t k = 0; k < kinds; k++)
            pick |= per_kind[k] == ti;
        if (!pick)
            continue;
        for (int o = 0; o < O_N; o++)
            if (op_fits(&types[ti], (opid_t)o))
                for (size_t c = 0; c < (level == 2 ? 2 : 1); c++)
                    reductions(comm, &types[ti], (opid_t)o, counts[c] + (level < 2 ? 4 : 0), B_HEAP);
    }
    /* Every buffer kind, with counts on both sides of the serial/parallel threshold. */
    size_t big[] = {3, 1500, 20000};
    int reps[] = {T_INT, T_DOUBLE, T_DOUBLE_INT, T_LDOUBLE, T_CDOUBLE};
    opid_t rops[] = {O_SUM, O_MAX, O_MAXLOC, O_MIN, O_PROD};
    for (int bk = 0; bk < B_N; bk++)
        for (size_t c = 0; c < 3; c++) {
            if (level < 2 && c == 2)
                continue;
            for (size_t k = 0; k < (level ? sizeof reps / sizeof reps[0] : 2); k++)
                reductions(comm, &types[reps[k]], rops[k], big[c] * types[reps[k]].ext * (size_t)size > POOL / 2 ? 1500 : big[c],
                           (bkind_t)bk);
            user_ops(comm, (bkind_t)bk, big[c] > 1500 ? 3000 : big[c]);
            movement(comm, (bkind_t)bk, (int)(big[c] > 1500 ? 4000 : big[c]), -1);
            movement(comm, (bkind_t)bk, (int)big[c] % 100 + 2, size - 1); /* last rank uses the vector type */
        }
    zero_counts(comm);
    MPI_Barrier(comm);
    if (rank == 0 && mp_failures > before)
        fprintf(stderr, "mp_coll: failures on %s\n", name);
}

int main(int argc, char **argv)
{
    /* MP_COLL_MULTIPLE: the same at MPI_THREAD_MULTIPLE (one thread calls MPI), where Open MPI's
     * communicators other than WORLD have their leaders' phases over point-to-point. */
    int provided;
    if (getenv("MP_COLL_MULTIPLE"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (argc > 1)
        level = !strcmp(argv[1], "full") ? 2 : !strcmp(argv[1], "mini") ? 0 : 1;
    types_init();
    char stack_pool[2 * POOL];
    pools[B_HEAP] = malloc(2 * POOL);
    pools[B_STACK] = stack_pool;
    pools[B_STATIC] = static_pool;
    pools[B_MMAP] = mmap(NULL, 2 * POOL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(pools[B_MMAP] != MAP_FAILED, "mmap pool");
    CHECK(smap_is_shared(pools[B_HEAP]), "heap pool outside the segment");
    CHECK(!smap_is_shared(pools[B_STACK]) && !smap_is_shared(pools[B_STATIC]) && !smap_is_shared(pools[B_MMAP]),
          "stack/static/mmap pool inside the segment");

    MPI_Comm dup, half, rev, inter;
    if (getenv("MP_COLL_NODE_ONLY"))
        goto node;
    run_comm(MPI_COMM_WORLD, "world");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (level)
        run_comm(dup, "dup");
    MPI_Comm_free(&dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2, wrank, &half);
    if (level)
        run_comm(half, "half");
    MPI_Comm_free(&half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &rev);
    if (level)
        run_comm(rev, "reversed");
    MPI_Comm_free(&rev);
    /* Interleaved: ranks alternate between the plan's nodes (not grouped by node). */
    MPI_Comm_split(MPI_COMM_WORLD, 0, (wrank % 2) * wsize + wrank / 2, &inter);
    run_comm(inter, "interleaved");
    MPI_Comm_free(&inter);
    check_paths();
node:
    node_things();
    /* Comms created and freed in a loop: the info and control areas come and go. */
    for (int k = 0; k < 20; k++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int v = 1, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
        CHECK(s == wsize, "dup loop allreduce %d", s);
        MPI_Comm_free(&c);
    }

    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mp_coll: %d ranks, %d on my node: %s\n", wsize, smap_local_size(), total ? "FAILED" : "ok");
    free(pools[B_HEAP]);
    MPI_Finalize();
    return total ? 1 : 0;
}
