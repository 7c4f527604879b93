/* mp_dtype: derived datatypes through point-to-point, checked byte for byte (issue 23).
 *
 * Every rank sends to the next and receives from the previous one (a ring: node mates through
 * bobcat, ranks of other nodes through the real MPI). Each case names a send type and a receive
 * type of the same signature (every constructor, negative strides and displacements, descending
 * struct members, zero-length blocks, resized bounds, absolute addresses with MPI_BOTTOM, sender
 * and receiver types that differ, receives larger than the message and messages that end inside
 * an element of the receive type) and runs at three sizes (eager, 64 KiB and 1 MiB rendezvous),
 * with buffers in the heap, in static arrays and on the stack (both outside the segment: staged),
 * blocking, nonblocking and persistent, and with the datatype freed while a request still uses it.
 *
 * The expected bytes come from the real MPI's own flattening of each type: MPI_Pack over a buffer
 * whose every byte holds a digit of its own offset gives the offset of every message byte in type
 * order. Every byte of the receive region is checked (bytes the type does not cover must keep their
 * fill), with get_count and get_elements. Usage: mp_dtype [quick] [DIGEST_PREFIX]: each rank writes
 * one line per exchange to DIGEST_PREFIX.<rank> (an FNV-1a hash of the whole receive region and the
 * status), which tests/mp/run_compare.sh compares between a run with BOBCAT_MPI=off (the real MPI
 * alone) and one with the layer on. "quick" runs fewer buffer and mode combinations
 * (for oversubscribed jobs). MP_DTYPE_ONLY=<substring> runs the matching cases only;
 * MP_DTYPE_VERBOSE=1 names every exchange before it runs. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

static int rank, size, to, from;

/* CHECK with the whole line written at once, so the ranks' lines do not interleave. */
#define DCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char msg_[1024];                                                                       \
            int n_ = snprintf(msg_, sizeof msg_, "FAIL %s:%d: ", __FILE__, __LINE__);              \
            snprintf(msg_ + n_, sizeof msg_ - (size_t)n_, __VA_ARGS__);                            \
            fprintf(stderr, "%s\n", msg_);                                                         \
            mp_failures++;                                                                         \
        }                                                                                          \
    } while (0)
static FILE *digest;
static int verbose;
static int quick; /* "quick": fewer buffer and mode combinations (oversubscribed jobs) */
static int tagseq;

enum { GUARD = 64 };             /* bytes before and after every region, which no type covers */
enum { STATIC_BYTES = 8 << 20 }; /* each static region (send, receive) */
enum { STACK_BYTES = 24 << 10 }; /* each stack region, for the eager size only */
static unsigned char static_send[STATIC_BYTES], static_recv[STATIC_BYTES];

/* ---- the types ---- */

/* A builder returns a committed type and its number of basic elements. `base` is added to the
 * top-level displacements of absolute types (0 gives the same layout relative to the buffer);
 * `target` is the message size the type will be used for (only the interleaving type needs it). */
typedef MPI_Datatype (*build_fn)(MPI_Aint base, size_t target, int *nel_p);

static MPI_Datatype commit(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

static int int_nel(MPI_Datatype t)
{
    int sz;
    MPI_Type_size(t, &sz);
    return sz / (int)sizeof(int);
}

#define INT_BUILDER(name, expr)                                                                    \
    static MPI_Datatype name(MPI_Aint base, size_t target, int *nel_p)                             \
    {                                                                                              \
        (void)base;                                                                                \
        (void)target;                                                                              \
        MPI_Datatype t = (expr);                                                                   \
        *nel_p = int_nel(t);                                                                       \
        return t;                                                                                  \
    }

static MPI_Datatype mk_contig(int n, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_contiguous(n, o, &t);
    return commit(t);
}
static MPI_Datatype mk_vector(int n, int bl, int stride, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_vector(n, bl, stride, o, &t);
    return commit(t);
}
static MPI_Datatype mk_hvector(int n, int bl, MPI_Aint stride, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_create_hvector(n, bl, stride, o, &t);
    return commit(t);
}
static MPI_Datatype mk_indexed(int n, const int *bl, const int *d)
{
    MPI_Datatype t;
    MPI_Type_indexed(n, bl, d, MPI_INT, &t);
    return commit(t);
}
static MPI_Datatype mk_hindexed(int n, const int *bl, const MPI_Aint *d, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_create_hindexed(n, bl, d, o, &t);
    return commit(t);
}
static MPI_Datatype mk_struct(int n, const int *bl, const MPI_Aint *d, const MPI_Datatype *ts)
{
    MPI_Datatype t;
    MPI_Type_create_struct(n, bl, d, ts, &t);
    return commit(t);
}
static MPI_Datatype mk_resized(MPI_Datatype o, MPI_Aint lb, MPI_Aint ext)
{
    MPI_Datatype t;
    MPI_Type_create_resized(o, lb, ext, &t);
    return commit(t);
}
/* A derived type made of a derived type: the inner one is freed at once (MPI keeps what it needs). */
static MPI_Datatype consume(MPI_Datatype outer, MPI_Datatype inner)
{
    MPI_Type_free(&inner);
    return outer;
}

INT_BUILDER(b_int, MPI_INT)
INT_BUILDER(b_contig, mk_contig(3, MPI_INT))
INT_BUILDER(b_contig2, mk_contig(2, MPI_INT))
INT_BUILDER(b_vector, mk_vector(3, 2, 4, MPI_INT))
INT_BUILDER(b_vec2, mk_vector(2, 1, 2, MPI_INT))
/* stride -1: {0, -4}: size == extent == true extent, yet not in memory order */
INT_BUILDER(b_vector_neg1, mk_vector(2, 1, -1, MPI_INT))
INT_BUILDER(b_vector_neg3, mk_vector(4, 2, -3, MPI_INT))
INT_BUILDER(b_hvector, mk_hvector(3, 2, 20, MPI_INT))
INT_BUILDER(b_hvector_neg, mk_hvector(3, 1, -12, MPI_INT))
/* a stride of 0: every element at the same place (legal for a send type only) */
INT_BUILDER(b_overlap, mk_vector(3, 1, 0, MPI_INT))

static MPI_Datatype b_indexed(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {2, 0, 3, 1}, d[] = {5, 1, 0, 9}; /* a zero-length block, descending */
    MPI_Datatype t = mk_indexed(4, bl, d);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_indexed_neg(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 2, 1}, d[] = {4, -3, 0};
    MPI_Datatype t = mk_indexed(3, bl, d);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_hindexed(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 2, 1};
    static const MPI_Aint d[] = {24, -8, 8};
    MPI_Datatype t = mk_hindexed(3, bl, d, MPI_INT);
    *nel_p = int_nel(t);
    return t;
}
/* zero-length blocks far before and after the data */
static MPI_Datatype b_hindexed_zero(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {0, 2, 0};
    static const MPI_Aint d[] = {-100, 4, 1000};
    MPI_Datatype t = mk_hindexed(3, bl, d, MPI_INT);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_indexed_block(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int d[] = {6, 0, 3};
    MPI_Datatype t;
    MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &t);
    t = commit(t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_hindexed_block(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Aint d[] = {8, -4, 0};
    MPI_Datatype t;
    MPI_Type_create_hindexed_block(3, 1, d, MPI_INT, &t);
    t = commit(t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_struct_ii(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1};
    static const MPI_Aint d[] = {0, 4};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_INT};
    MPI_Datatype t = mk_struct(2, bl, d, ts);
    *nel_p = 2;
    return t;
}
/* descending members: size == extent == true extent, the typemap permuted ({10, 20} -> {20, 10}) */
static MPI_Datatype b_struct_desc(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1};
    static const MPI_Aint d[] = {4, 0};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_INT};
    MPI_Datatype t = mk_struct(2, bl, d, ts);
    *nel_p = 2;
    return t;
}
static MPI_Datatype b_struct_desc3(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 2, 1};
    static const MPI_Aint d[] = {12, 4, 0};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_INT, MPI_INT};
    MPI_Datatype t = mk_struct(3, bl, d, ts);
    *nel_p = 4;
    return t;
}
/* a zero-length member of another basic type, past the others */
static MPI_Datatype b_struct_zero(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 0, 1};
    static const MPI_Aint d[] = {0, 40, 4};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Datatype t = mk_struct(3, bl, d, ts);
    *nel_p = 2;
    return t;
}
/* mixed basic types: the signature int, double, short, short; ascending and descending */
static MPI_Datatype b_struct_mixed(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1, 2};
    static const MPI_Aint d[] = {0, 8, 16};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    *nel_p = 4;
    return mk_struct(3, bl, d, ts);
}
static MPI_Datatype b_struct_mixed_desc(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1, 2};
    static const MPI_Aint d[] = {20, 8, 0};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    *nel_p = 4;
    return mk_struct(3, bl, d, ts);
}
/* {int, double, int} and {int, double}: one of the first is one and a half of the second */
static MPI_Datatype b_struct_idi(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1, 1};
    static const MPI_Aint d[] = {0, 8, 16};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    *nel_p = 3;
    return mk_struct(3, bl, d, ts);
}
static MPI_Datatype b_struct_id(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {1, 1};
    static const MPI_Aint d[] = {0, 8};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE};
    *nel_p = 2;
    return mk_struct(2, bl, d, ts);
}
/* nothing at all: a message of 0 bytes */
static MPI_Datatype b_empty(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const int bl[] = {0, 0};
    static const MPI_Aint d[] = {8, 0};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE};
    *nel_p = 0;
    return mk_struct(2, bl, d, ts);
}
static MPI_Datatype subarray(int order)
{
    static const int sizes[] = {6, 5, 4}, sub[] = {3, 2, 2}, starts[] = {1, 2, 1};
    MPI_Datatype t;
    MPI_Type_create_subarray(3, sizes, sub, starts, order, MPI_INT, &t);
    return commit(t);
}
INT_BUILDER(b_subarray_c, subarray(MPI_ORDER_C))
INT_BUILDER(b_subarray_f, subarray(MPI_ORDER_FORTRAN))
/* process 1 of a 2 x 2 grid (the same type on every rank: the datatype is under test, not the grid) */
static MPI_Datatype darray(int cyclic)
{
    MPI_Datatype t;
    if (!cyclic) {
        int g[] = {8, 6}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, dargs[] = {MPI_DISTRIBUTE_DFLT_DARG, 2},
            ps[] = {2, 2};
        MPI_Type_create_darray(4, 1, 2, g, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &t);
    } else {
        int g[] = {7, 5}, dist[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC}, dargs[] = {1, 2}, ps[] = {2, 2};
        MPI_Type_create_darray(4, 2, 2, g, dist, dargs, ps, MPI_ORDER_FORTRAN, MPI_INT, &t);
    }
    return commit(t);
}
INT_BUILDER(b_darray_block, darray(0))
INT_BUILDER(b_darray_cyclic, darray(1))
/* resized of a derived type made for it (freed: the new type keeps what it needs) */
static MPI_Datatype resized_of(MPI_Datatype inner, MPI_Aint lb, MPI_Aint ext)
{
    return consume(mk_resized(inner, lb, ext), inner);
}
/* MPI_UB-style: ints every 12 bytes */
INT_BUILDER(b_resized_ext, mk_resized(MPI_INT, 0, 12))
/* MPI_LB-style: lb 8 bytes before the data, extent 16 */
INT_BUILDER(b_resized_lb, resized_of(mk_contig(2, MPI_INT), -8, 16))
/* lb past the start of the data, extent shorter than the true extent (instances interleave) */
INT_BUILDER(b_resized_shift, resized_of(mk_vector(2, 1, 3, MPI_INT), 4, 8))
INT_BUILDER(b_dup_int, ({
                MPI_Datatype d;
                MPI_Type_dup(MPI_INT, &d);
                commit(d);
            }))
static MPI_Datatype b_dup_vector(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    MPI_Datatype v = mk_vector(3, 1, 2, MPI_INT), d;
    MPI_Type_dup(v, &d);
    MPI_Type_free(&v);
    *nel_p = 3;
    return commit(d);
}
/* an hvector of descending structs, walking backwards */
static MPI_Datatype b_nested(MPI_Aint base, size_t target, int *nel_p)
{
    int n;
    MPI_Datatype s = b_struct_desc(base, target, &n);
    MPI_Datatype t = consume(mk_hvector(2, 1, -64, s), s);
    *nel_p = 4;
    return t;
}
/* The MPI_UB interleave: count M of {int i, int i + M} resized to one int: the message holds
 * a0, aM, a1, aM+1, ...; M is the count the type is used with (target / 8). */
static MPI_Datatype b_interleave(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base;
    int m = target / 8 ? (int)(target / 8) : 1;
    MPI_Datatype v = mk_vector(2, 1, m, MPI_INT);
    *nel_p = 2;
    return consume(mk_resized(v, 0, 4), v);
}
/* Absolute addresses (buffer MPI_BOTTOM): base is the buffer's address from MPI_Get_address. */
static MPI_Datatype b_abs_contig(MPI_Aint base, size_t target, int *nel_p)
{
    (void)target;
    int bl[] = {16};
    MPI_Aint d[] = {base};
    *nel_p = 16;
    return mk_hindexed(1, bl, d, MPI_INT);
}
static MPI_Datatype b_abs_hindexed(MPI_Aint base, size_t target, int *nel_p)
{
    (void)target;
    int bl[] = {2, 1, 3};
    MPI_Aint d[] = {base + 40, base, base + 16};
    *nel_p = 6;
    return mk_hindexed(3, bl, d, MPI_INT);
}
static MPI_Datatype b_abs_struct(MPI_Aint base, size_t target, int *nel_p)
{
    (void)target;
    int bl[] = {1, 2, 1};
    MPI_Aint d[] = {base + 12, base, base + 32};
    MPI_Datatype ts[] = {MPI_INT, MPI_INT, MPI_INT};
    *nel_p = 4;
    return mk_struct(3, bl, d, ts);
}
/* a struct of one member at an absolute address: a non-contiguous subarray */
static MPI_Datatype b_abs_struct_sub(MPI_Aint base, size_t target, int *nel_p)
{
    (void)target;
    MPI_Datatype s = subarray(MPI_ORDER_C);
    int bl[] = {1};
    MPI_Aint d[] = {base};
    *nel_p = int_nel(s);
    return consume(mk_struct(1, bl, d, &s), s);
}

static void type_free(MPI_Datatype *t)
{
    int comb;
#if MPI_VERSION >= 4 /* the plain query fails on a large-count type (MPICH) */
    MPI_Count ni, na, nl, nd;
    MPI_Type_get_envelope_c(*t, &ni, &na, &nl, &nd, &comb);
#else
    int ni, na, nd;
    MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
#endif
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(t);
}

/* ---- cases ---- */

enum {
    F_ABS_S = 1,    /* the send type has absolute addresses: buffer MPI_BOTTOM */
    F_ABS_R = 2,    /* the receive type has */
    F_PARTIAL = 4,  /* receive count larger than the message needs */
    F_MID = 8,      /* the message ends inside an element of the receive type */
    F_ONE = 16,     /* the sender sends one instance, at every size (the eager size only) */
    F_FREE = 32,    /* also the free-while-pending modes */
    F_SMALLONLY = 64,
};

typedef struct {
    const char *name;
    build_fn s, r;
    int flags;
} case_t;

typedef struct {
    int n;      /* bytes of the message */
    long lo;    /* region [lo, hi) relative to the buffer */
    long hi;
    uint32_t *off; /* offset - lo of every message byte, in type order */
} flat_t;

/* The typemap of count x t, byte by byte in type order, from the real MPI's own MPI_Pack: pass k
 * fills every byte of the region with byte k of its offset, and byte j of the packed result is
 * then byte k of the offset of message byte j. */
static void flatten(MPI_Datatype t, int count, flat_t *f)
{
    int sz;
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_size(t, &sz);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    f->n = sz * count;
    f->lo = 0;
    f->hi = 0;
    f->off = NULL;
    if (!f->n)
        return;
    long lo = tlb, hi = tlb + text, last = (long)(count - 1) * ext + tlb; /* first and last instance */
    lo = last < lo ? last : lo;
    hi = last + text > hi ? last + text : hi;
    f->lo = lo;
    f->hi = hi;
    size_t span = (size_t)(hi - lo);
    unsigned char *reg = malloc(span), *pk = malloc((size_t)f->n);
    f->off = calloc((size_t)f->n, sizeof(uint32_t));
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < span; i++)
            reg[i] = (unsigned char)(i >> (8 * k));
        int pos = 0;
        MPI_Pack(reg - lo, count, t, pk, f->n, &pos, MPI_COMM_SELF);
        if (pos != f->n)
            DCHECK(0, "MPI_Pack wrote %d bytes, not %d", pos, f->n);
        for (int j = 0; j < f->n; j++)
            f->off[j] |= (uint32_t)pk[j] << (8 * k);
    }
    free(reg);
    free(pk);
}

/* The sender's bytes (a function of sender, salt and offset) and the receiver's fill. */
static unsigned char spat(int src, uint32_t salt, size_t k)
{
    uint32_t x = (uint32_t)k * 2654435761u + salt * 40503u + (uint32_t)src * 97u;
    return (unsigned char)((x >> 24) ^ (x >> 11));
}
static unsigned char rfill(int dst, size_t k) { return (unsigned char)(0xa5 ^ (k * 7) ^ (dst << 4)); }

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint32_t name_salt(const char *s)
{
    return (uint32_t)fnv(0xcbf29ce484222325ull, s, strlen(s));
}

typedef struct {
    const case_t *c;
    const char *szname, *place, *mode;
    size_t target;
    int scount, rcount, snel, rnel, ssize, rsize;
    flat_t fs, fr;
    unsigned char *sreg, *rreg; /* regions with GUARD bytes either side */
    size_t sspan, rspan;
    uint32_t salt;
} ex_t;

static void fill_send(ex_t *e, uint32_t salt)
{
    for (size_t i = 0; i < e->sspan; i++)
        e->sreg[i] = spat(rank, salt, i);
}
static void fill_recv(ex_t *e)
{
    for (size_t i = 0; i < e->rspan; i++)
        e->rreg[i] = rfill(rank, i);
}

/* Check the receive region and status of one round; hash them into *h. */
static void check_round(ex_t *e, MPI_Status *st, uint32_t salt, uint64_t *h, MPI_Datatype rt_for_count)
{
    const char *what = e->c->name;
    unsigned char *exp = malloc(e->rspan);
    for (size_t i = 0; i < e->rspan; i++)
        exp[i] = rfill(rank, i);
    int n = e->fs.n;
    for (int j = 0; j < n; j++) {
        size_t so = GUARD + e->fs.off[j], ro = GUARD + e->fr.off[j];
        exp[ro] = spat(from, salt, so);
    }
    size_t bad = (size_t)-1;
    for (size_t i = 0; i < e->rspan; i++)
        if (e->rreg[i] != exp[i]) {
            bad = i;
            break;
        }
    if (bad != (size_t)-1) {
        long off = (long)bad - GUARD + e->fr.lo;
        int j = -1;
        for (int k = 0; k < n; k++)
            if (GUARD + e->fr.off[k] == bad) {
                j = k;
                break;
            }
        char got[64] = "", want[64] = "";
        for (int k = 0; k < 8 && bad + (size_t)k < e->rspan; k++) {
            snprintf(got + strlen(got), sizeof got - strlen(got), "%02x", e->rreg[bad + k]);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%02x", exp[bad + k]);
        }
        DCHECK(0, "%s %s %s %s (rank %d from %d): receive byte at offset %ld (%s%d) wrong: got %s.., expected %s..",
              what, e->szname, e->place, e->mode, rank, from, off, j >= 0 ? "message byte " : "outside the type ",
              j >= 0 ? j : 0, got, want);
    }
    free(exp);
    int cnt = -2, el = -2;
    MPI_Get_count(st, rt_for_count, &cnt);
    MPI_Get_elements(st, rt_for_count, &el);
    int ecnt = e->rsize == 0 ? cnt : (n % e->rsize ? MPI_UNDEFINED : n / e->rsize);
    int eel = e->scount * e->snel;
    DCHECK(cnt == ecnt && el == eel && st->MPI_SOURCE == from, "%s %s %s %s (rank %d from %d): count %d (want %d) elements %d (want %d) source %d",
          what, e->szname, e->place, e->mode, rank, from, cnt, ecnt, el, eel, st->MPI_SOURCE);
    /* the send buffer is the sender's alone: untouched */
    for (size_t i = 0; i < e->sspan; i++)
        if (e->sreg[i] != spat(rank, salt, i)) {
            DCHECK(0, "%s %s %s %s (rank %d): send buffer changed at offset %ld", what, e->szname, e->place, e->mode, rank,
                  (long)i - GUARD + e->fs.lo);
            break;
        }
    *h = fnv(*h, e->rreg, e->rspan);
    int meta[4] = {cnt, el, st->MPI_SOURCE == from, st->MPI_TAG >= 0};
    *h = fnv(*h, meta, sizeof meta);
}

static void decoys(MPI_Datatype d[2])
{
    d[0] = mk_contig(5, MPI_SHORT);
    d[1] = mk_vector(2, 3, 5, MPI_DOUBLE);
}

/* One exchange around the ring, in one mode. */
static void exchange(ex_t *e)
{
    const case_t *c = e->c;
    if (verbose)
        fprintf(stderr, "rank %d: %s %s %s %s\n", rank, c->name, e->szname, e->place, e->mode);
    int tag = 1 + (tagseq++ % 30000), gotag = 32001;
    void *sbuf = e->sreg + GUARD - e->fs.lo, *rbuf = e->rreg + GUARD - e->fr.lo;
    int dummy;
    MPI_Aint sa = 0, ra = 0;
    if (c->flags & F_ABS_S) {
        MPI_Get_address(sbuf, &sa);
        sbuf = MPI_BOTTOM;
    }
    if (c->flags & F_ABS_R) {
        MPI_Get_address(rbuf, &ra);
        rbuf = MPI_BOTTOM;
    }
    MPI_Datatype st = c->s(sa, e->target, &dummy), rt = c->r(ra, e->target, &dummy);
    MPI_Datatype rcheck = c->r(0, e->target, &dummy); /* for get_count after rt is freed */
    uint32_t salt = e->salt;
    fill_send(e, salt);
    fill_recv(e);
    uint64_t h = 0xcbf29ce484222325ull;
    MPI_Status sts[2];
    MPI_Request q[2];
    MPI_Datatype dec[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    const char *m = e->mode;
    int go = 0, gin = 0;
    MPI_Request gq;
    if (!strcmp(m, "send")) {
        MPI_Irecv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        MPI_Send(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD);
        MPI_Wait(&q[0], &sts[0]);
    } else if (!strcmp(m, "ssend")) {
        MPI_Irecv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        MPI_Ssend(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD);
        MPI_Wait(&q[0], &sts[0]);
    } else if (!strcmp(m, "recv")) {
        MPI_Isend(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD, &q[1]);
        MPI_Recv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &sts[0]);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    } else if (!strcmp(m, "nb")) {
        MPI_Irecv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, sts);
    } else if (!strcmp(m, "pers")) {
        MPI_Recv_init(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        MPI_Send_init(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD, &q[1]);
        MPI_Startall(2, q);
        MPI_Waitall(2, q, sts);
        check_round(e, &sts[0], salt, &h, rcheck);
        fill_send(e, salt + 1);
        fill_recv(e);
        MPI_Startall(2, q);
        MPI_Waitall(2, q, sts);
        salt++;
        MPI_Request_free(&q[0]);
        MPI_Request_free(&q[1]);
    } else if (!strcmp(m, "free-recv")) {
        /* the receive is posted and its type freed before the sender may send */
        MPI_Irecv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        type_free(&rt);
        decoys(dec);
        MPI_Isend(&go, 1, MPI_INT, from, gotag, MPI_COMM_WORLD, &gq);
        MPI_Recv(&gin, 1, MPI_INT, to, gotag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD);
        MPI_Wait(&q[0], &sts[0]);
        MPI_Wait(&gq, MPI_STATUS_IGNORE);
    } else if (!strcmp(m, "free-send")) {
        /* the send is started and its type freed before the receiver posts */
        MPI_Isend(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD, &q[1]);
        type_free(&st);
        decoys(dec);
        MPI_Isend(&go, 1, MPI_INT, to, gotag, MPI_COMM_WORLD, &gq);
        MPI_Recv(&gin, 1, MPI_INT, from, gotag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &sts[0]);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        MPI_Wait(&gq, MPI_STATUS_IGNORE);
    } else if (!strcmp(m, "free-pers")) {
        /* both types freed while the requests are active, then the requests started again */
        MPI_Recv_init(rbuf, e->rcount, rt, from, tag, MPI_COMM_WORLD, &q[0]);
        MPI_Send_init(sbuf, e->scount, st, to, tag, MPI_COMM_WORLD, &q[1]);
        MPI_Start(&q[0]);
        type_free(&rt);
        MPI_Isend(&go, 1, MPI_INT, from, gotag, MPI_COMM_WORLD, &gq);
        MPI_Recv(&gin, 1, MPI_INT, to, gotag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Start(&q[1]);
        type_free(&st);
        decoys(dec);
        MPI_Waitall(2, q, sts);
        MPI_Wait(&gq, MPI_STATUS_IGNORE);
        check_round(e, &sts[0], salt, &h, rcheck);
        fill_send(e, salt + 1);
        fill_recv(e);
        MPI_Startall(2, q);
        MPI_Waitall(2, q, sts);
        salt++;
        MPI_Request_free(&q[0]);
        MPI_Request_free(&q[1]);
    }
    check_round(e, &sts[0], salt, &h, rcheck);
    if (digest)
        fprintf(digest, "%s %s %s %s %016llx\n", c->name, e->szname, e->place, e->mode, (unsigned long long)h);
    if (st != MPI_DATATYPE_NULL)
        type_free(&st);
    if (rt != MPI_DATATYPE_NULL)
        type_free(&rt);
    type_free(&rcheck);
    for (int i = 0; i < 2; i++)
        if (dec[i] != MPI_DATATYPE_NULL)
            MPI_Type_free(&dec[i]);
}

static const char *const modes[] = {"send", "recv", "nb", "pers", "ssend"};
static const char *const free_modes[] = {"free-recv", "free-send", "free-pers"};

/* Pass 0 runs the ordinary modes, pass 1 the free-while-pending ones (a crash there, where the
 * library uses a freed handle, then leaves the other checks' results in place). */
static void run_case(const case_t *c, int pass)
{
    if (pass == 1 && !(c->flags & F_FREE))
        return;
    static const size_t targets[] = {1000, 64 << 10, 1 << 20};
    static const char *const tnames[] = {"eager", "64k", "1m"};
    for (int k = 0; k < 3; k++) {
        if ((c->flags & (F_ONE | F_SMALLONLY)) && k > 0)
            break;
        ex_t e = {.c = c, .szname = tnames[k], .target = targets[k]};
        MPI_Datatype s = c->s(0, targets[k], &e.snel), r = c->r(0, targets[k], &e.rnel);
        MPI_Type_size(s, &e.ssize);
        MPI_Type_size(r, &e.rsize);
        e.scount = c->flags & F_ONE ? 1 : (e.ssize ? (int)(targets[k] / (size_t)e.ssize) : 1);
        if (e.scount < 1)
            e.scount = 1;
        long elems = (long)e.scount * e.snel;
        if ((c->flags & F_MID) && e.rnel > 1)
            while (elems % e.rnel == 0)
                elems = (long)++e.scount * e.snel;
        e.rcount = e.rnel ? (int)((elems + e.rnel - 1) / e.rnel) : 1;
        if (c->flags & F_PARTIAL)
            e.rcount += 2;
        flatten(s, e.scount, &e.fs);
        flatten(r, e.rcount, &e.fr);
        DCHECK(e.fs.n <= e.fr.n, "%s: the case is wrong: %d bytes into %d", c->name, e.fs.n, e.fr.n);
        type_free(&s);
        type_free(&r);
        e.sspan = (size_t)(e.fs.hi - e.fs.lo) + 2 * GUARD;
        e.rspan = (size_t)(e.fr.hi - e.fr.lo) + 2 * GUARD;
        e.salt = name_salt(c->name) + (uint32_t)k * 1000003u;
        for (int p = 0; p < 3; p++) {
            unsigned char stk_s[p == 2 ? STACK_BYTES : 1], stk_r[p == 2 ? STACK_BYTES : 1];
            if (p == 0) {
                e.place = "heap";
                e.sreg = malloc(e.sspan);
                e.rreg = malloc(e.rspan);
            } else if (p == 1) {
                if (e.sspan > STATIC_BYTES || e.rspan > STATIC_BYTES)
                    continue;
                e.place = "static";
                e.sreg = static_send;
                e.rreg = static_recv;
            } else {
                if (k > 0 || e.sspan > STACK_BYTES || e.rspan > STACK_BYTES)
                    continue;
                e.place = "stack";
                e.sreg = stk_s;
                e.rreg = stk_r;
            }
            for (unsigned i = 0; pass == 0 && i < sizeof modes / sizeof modes[0]; i++) {
                /* 1 MiB: every mode once over the heap and static buffers (time) */
                if (k == 2 && (p == 0) != (i == 0 || i == 2 || i == 3))
                    continue;
                /* quick: every mode over the heap below 1 MiB, one per size elsewhere */
                if (quick && (k == 2 || p > 0) && i != (unsigned)(k + p) % 5)
                    continue;
                e.mode = modes[i];
                exchange(&e);
                e.salt += 7;
            }
            if (pass == 1 && !(quick && p > 0))
                for (unsigned i = 0; i < sizeof free_modes / sizeof free_modes[0]; i++) {
                    e.mode = free_modes[i];
                    exchange(&e);
                    e.salt += 7;
                }
            if (p == 0) {
                free(e.sreg);
                free(e.rreg);
            }
        }
        free(e.fs.off);
        free(e.fr.off);
    }
}

#if MPI_VERSION >= 4
/* MPI 4.0's large-count constructors (MPICH 4: Open MPI 4.1 has none). MPICH keeps such a type's
 * values as large counts and raises a fatal error when the plain MPI_Type_get_envelope meets one,
 * so the layer reads them with the _c queries (pmpi_type_envelope). The same layouts as above. */
static MPI_Datatype lc_commit(int rc, MPI_Datatype *t)
{
    CHECK(rc == MPI_SUCCESS, "a large-count constructor failed");
    return commit(*t);
}
static MPI_Datatype mk_contig_c(MPI_Count n, MPI_Datatype o)
{
    MPI_Datatype t;
    return lc_commit(MPI_Type_contiguous_c(n, o, &t), &t);
}
static MPI_Datatype mk_vector_c(MPI_Count n, MPI_Count bl, MPI_Count stride)
{
    MPI_Datatype t;
    return lc_commit(MPI_Type_vector_c(n, bl, stride, MPI_INT, &t), &t);
}
static MPI_Datatype mk_hvector_c(MPI_Count n, MPI_Count bl, MPI_Count stride)
{
    MPI_Datatype t;
    return lc_commit(MPI_Type_create_hvector_c(n, bl, stride, MPI_INT, &t), &t);
}
INT_BUILDER(b_contig_c, mk_contig_c(3, MPI_INT))
INT_BUILDER(b_vector_c, mk_vector_c(4, 2, -3))
INT_BUILDER(b_hvector_c, mk_hvector_c(3, 2, 20))
/* a large-count contiguous of a classic vector: both kinds in one typemap */
INT_BUILDER(b_contig_c_of_vector, consume(mk_contig_c(2, mk_vector(2, 1, 3, MPI_INT)), mk_vector(2, 1, 3, MPI_INT)))
static MPI_Datatype b_indexed_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Count bl[] = {2, 0, 3, 1}, d[] = {5, 1, 0, 9};
    MPI_Datatype t;
    t = lc_commit(MPI_Type_indexed_c(4, bl, d, MPI_INT, &t), &t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_hindexed_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Count bl[] = {1, 2, 1}, d[] = {24, -8, 8};
    MPI_Datatype t;
    t = lc_commit(MPI_Type_create_hindexed_c(3, bl, d, MPI_INT, &t), &t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_indexed_block_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Count d[] = {6, 0, 3};
    MPI_Datatype t;
    t = lc_commit(MPI_Type_create_indexed_block_c(3, 2, d, MPI_INT, &t), &t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_hindexed_block_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Count d[] = {8, -4, 0};
    MPI_Datatype t;
    t = lc_commit(MPI_Type_create_hindexed_block_c(3, 1, d, MPI_INT, &t), &t);
    *nel_p = int_nel(t);
    return t;
}
static MPI_Datatype b_struct_mixed_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    static const MPI_Count bl[] = {1, 1, 2}, d[] = {20, 8, 0};
    static const MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    MPI_Datatype t;
    *nel_p = 4;
    return lc_commit(MPI_Type_create_struct_c(3, bl, d, ts, &t), &t);
}
static MPI_Datatype b_resized_c(MPI_Aint base, size_t target, int *nel_p)
{
    (void)base, (void)target;
    MPI_Datatype t, v = mk_vector(2, 1, 2, MPI_INT);
    t = lc_commit(MPI_Type_create_resized_c(v, -4, 16, &t), &t);
    MPI_Type_free(&v);
    *nel_p = int_nel(t);
    return t;
}
#endif

static const case_t cases[] = {
    /* every constructor, the same type on both sides; with the free-while-pending modes */
    {"contig", b_contig, b_contig, F_FREE},
    {"vector", b_vector, b_vector, F_FREE},
    {"vector_neg1", b_vector_neg1, b_vector_neg1, F_FREE},
    {"vector_neg3", b_vector_neg3, b_vector_neg3, 0},
    {"hvector", b_hvector, b_hvector, 0},
    {"hvector_neg", b_hvector_neg, b_hvector_neg, 0},
    {"indexed", b_indexed, b_indexed, F_FREE},
    {"indexed_neg", b_indexed_neg, b_indexed_neg, 0},
    {"hindexed", b_hindexed, b_hindexed, 0},
    {"hindexed_zero", b_hindexed_zero, b_hindexed_zero, 0},
    {"indexed_block", b_indexed_block, b_indexed_block, 0},
    {"hindexed_block", b_hindexed_block, b_hindexed_block, 0},
    {"struct_ii", b_struct_ii, b_struct_ii, 0},
    {"struct_desc", b_struct_desc, b_struct_desc, F_FREE},
    {"struct_desc3", b_struct_desc3, b_struct_desc3, 0},
    {"struct_zero", b_struct_zero, b_struct_zero, 0},
    {"struct_mixed", b_struct_mixed, b_struct_mixed, F_FREE},
    {"subarray_c", b_subarray_c, b_subarray_c, F_FREE},
    {"subarray_f", b_subarray_f, b_subarray_f, 0},
    {"darray_block", b_darray_block, b_darray_block, 0},
    {"darray_cyclic", b_darray_cyclic, b_darray_cyclic, 0},
    {"resized_ext", b_resized_ext, b_resized_ext, 0},
    {"resized_lb", b_resized_lb, b_resized_lb, 0},
    {"resized_shift", b_resized_shift, b_resized_shift, 0},
    {"interleave", b_interleave, b_interleave, 0},
    {"dup_int", b_dup_int, b_dup_int, 0},
    {"dup_vector", b_dup_vector, b_dup_vector, 0},
    {"nested", b_nested, b_nested, 0},
    {"empty", b_empty, b_empty, F_SMALLONLY},
    /* sender and receiver with different types of the same signature; receives larger than the
     * message */
    {"vector->int", b_vector, b_int, F_PARTIAL},
    {"int->vector_neg1", b_int, b_vector_neg1, 0},
    {"vector_neg3->int", b_vector_neg3, b_int, 0},
    {"int->struct_desc", b_int, b_struct_desc, F_PARTIAL},
    {"struct_desc->int", b_struct_desc, b_int, 0},
    {"vector->indexed_block", b_vector, b_indexed_block, F_PARTIAL},
    {"subarray_c->subarray_f", b_subarray_c, b_subarray_f, 0},
    {"subarray_f->hindexed", b_subarray_f, b_hindexed, F_PARTIAL},
    {"darray_block->contig", b_darray_block, b_contig, F_PARTIAL},
    {"int->darray_cyclic", b_int, b_darray_cyclic, 0},
    {"interleave->int", b_interleave, b_int, 0},
    {"int->resized_lb", b_int, b_resized_lb, F_PARTIAL},
    {"resized_shift->hvector_neg", b_resized_shift, b_hvector_neg, F_PARTIAL},
    {"nested->dup_int", b_nested, b_dup_int, 0},
    {"struct_mixed->struct_mixed_desc", b_struct_mixed, b_struct_mixed_desc, F_FREE},
    {"struct_mixed_desc->struct_mixed", b_struct_mixed_desc, b_struct_mixed, F_PARTIAL},
    {"struct_zero->vector_neg1", b_struct_zero, b_vector_neg1, 0},
    {"overlap->int", b_overlap, b_int, 0},
    /* messages that end inside an element of the receive type */
    {"mid:int->struct_ii", b_int, b_struct_ii, F_MID},
    {"mid:int->struct_ii+", b_int, b_struct_ii, F_MID | F_PARTIAL},
    {"mid:int->vec2", b_int, b_vec2, F_MID | F_FREE},
    {"mid:int->contig2", b_int, b_contig2, F_MID},
    {"mid:int->struct_desc", b_int, b_struct_desc, F_MID},
    {"mid:int->subarray_c", b_int, b_subarray_c, F_MID | F_PARTIAL},
    {"mid:struct_idi->struct_id", b_struct_idi, b_struct_id, F_ONE | F_MID},
    /* absolute addresses, buffer MPI_BOTTOM, contiguous and not, on one side or both */
    {"abs_contig", b_abs_contig, b_abs_contig, F_ABS_S | F_ABS_R},
    {"abs_hindexed", b_abs_hindexed, b_abs_hindexed, F_ABS_S | F_ABS_R | F_FREE},
    {"abs_struct->int", b_abs_struct, b_int, F_ABS_S},
    {"int->abs_struct", b_int, b_abs_struct, F_ABS_R | F_PARTIAL},
    {"abs_struct_sub->subarray_c", b_abs_struct_sub, b_subarray_c, F_ABS_S},
    {"vector->abs_struct_sub", b_vector, b_abs_struct_sub, F_ABS_R},
    {"mid:int->abs_hindexed", b_int, b_abs_hindexed, F_ABS_R | F_MID},
#if MPI_VERSION >= 4
    /* large-count constructors, alone and against the classic ones */
    {"contig_c", b_contig_c, b_contig_c, F_FREE},
    {"vector_c", b_vector_c, b_vector_c, 0},
    {"hvector_c", b_hvector_c, b_hvector_c, F_FREE},
    {"indexed_c", b_indexed_c, b_indexed_c, 0},
    {"hindexed_c", b_hindexed_c, b_hindexed_c, 0},
    {"indexed_block_c", b_indexed_block_c, b_indexed_block_c, 0},
    {"hindexed_block_c", b_hindexed_block_c, b_hindexed_block_c, F_FREE},
    {"struct_mixed_c->struct_mixed", b_struct_mixed_c, b_struct_mixed, 0},
    {"resized_c", b_resized_c, b_resized_c, 0},
    {"contig_c_of_vector->int", b_contig_c_of_vector, b_int, 0},
    {"indexed->indexed_c", b_indexed, b_indexed_c, 0},
#endif
};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank - 1 + size) % size;
    verbose = getenv("MP_DTYPE_VERBOSE") != NULL;
    const char *only = getenv("MP_DTYPE_ONLY");
    const char *prefix = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "quick"))
            quick = 1;
        else
            prefix = argv[i];
    }
    if (prefix) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", prefix, rank);
        digest = fopen(path, "w");
        if (!digest) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        setvbuf(digest, NULL, _IOLBF, 0); /* a crash keeps the lines of the exchanges before it */
    }
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (only && !strstr(cases[i].name, only))
                continue;
            int before = mp_failures;
            run_case(&cases[i], pass);
            if (mp_failures != before)
                fprintf(stderr, "rank %d: case %s%s failed\n", rank, cases[i].name, pass ? " (type freed while pending)" : "");
        }
    int total = 0;
    MPI_Allreduce(&mp_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mp_dtype: %d ranks, %d failures\n", size, total);
    if (digest)
        fclose(digest);
    MPI_Finalize();
    return total ? 1 : 0;
}
