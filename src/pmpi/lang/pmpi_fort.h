/* pmpi_fort: what the Fortran entry points share (Open MPI only; see lang/README.md).
 *
 * Fortran passes everything by reference; handles are INTEGERs (MPI_Fint) turned into C handles by
 * MPI_X_f2c and back by MPI_X_c2f; MPI_BOTTOM, MPI_IN_PLACE and MPI_STATUS(ES)_IGNORE are the
 * addresses of common blocks (mpi_fortran_bottom_ ...) that every Fortran library of the MPI and the
 * program itself share, so a buffer or status argument is compared with those addresses. */
#ifndef BOBCAT_PMPI_FORT_H
#define BOBCAT_PMPI_FORT_H

#include "base/pmpi_comm.h"

#include <stddef.h>
#include <stdint.h>

/* The sentinels' addresses, in every mangling a Fortran compiler may give a common block. */
typedef struct {
    int ready;
    uintptr_t lo, span; /* every sentinel is in [lo, lo + span]: one compare rules most pointers out */
    void *bottom[4], *in_place[4], *status_ignore[4], *statuses_ignore[4];
} fort_sentinels_t;
extern fort_sentinels_t fort_sent;
void fort_sentinels_resolve(void);

static inline int fort_is(void *const set[4], const void *p)
{
    return p && (p == set[0] || p == set[1] || p == set[2] || p == set[3]);
}

/* A Fortran buffer argument as the C call expects it. */
static inline int fort_maybe_sentinel(const void *p)
{
    if (__builtin_expect(!fort_sent.ready, 0))
        fort_sentinels_resolve();
    return (uintptr_t)p - fort_sent.lo <= fort_sent.span;
}

static inline void *fort_buf(void *p)
{
    if (__builtin_expect(!fort_maybe_sentinel(p), 1))
        return p;
    if (fort_is(fort_sent.in_place, p))
        return MPI_IN_PLACE;
    if (fort_is(fort_sent.bottom, p))
        return MPI_BOTTOM;
    return p;
}

#if defined(MPI_ABI_VERSION)
/* The standard ABI's mpi.h declares no Fortran types, and the abi layer has no Fortran entry points
 * (lang/README.md): only these helpers' signatures need the name. */
typedef int MPI_Fint;
#endif

static inline int fort_status_ignore(const MPI_Fint *s)
{
    if (__builtin_expect(!fort_maybe_sentinel(s), 1))
        return 0;
    return fort_is(fort_sent.status_ignore, s) || fort_is(fort_sent.statuses_ignore, s);
}

static inline int fort_statuses_ignore(const MPI_Fint *s)
{
    if (__builtin_expect(!fort_maybe_sentinel(s), 1))
        return 0;
    return fort_is(fort_sent.statuses_ignore, s);
}

#if defined(OPEN_MPI)
/* Predefined handles by Fortran index, for the conversions on the hot path: Open MPI's
 * MPI_X_f2c is a call into libmpi and a locked pointer-array lookup, three of them per
 * Allreduce. The table holds only predefined handles (MPI_COMM_WORLD/SELF/NULL, the named
 * datatypes, the predefined ops, listed by gen_fort.py from mpi.h), whose indices are fixed and
 * never reused, filled once after MPI_Init (by the Fortran MPI_Init, or lazily at the first
 * conversion after a C MPI_Init); any other index takes MPI_X_f2c. */
#define FORT_NCOMM 4
#define FORT_NTYPE 128
#define FORT_NOP 32
typedef struct {
    MPI_Comm comm[FORT_NCOMM];
    MPI_Datatype type[FORT_NTYPE];
    MPI_Op op[FORT_NOP];
    int ready;
} fort_handles_t;
extern fort_handles_t fort_h;
/* Weak: absent when the MPI has no Fortran library to generate the entry points from. */
extern const MPI_Datatype fort_predef_type[] __attribute__((weak));
extern const MPI_Op fort_predef_op[] __attribute__((weak));
extern const int fort_predef_ntype __attribute__((weak)), fort_predef_nop __attribute__((weak));
void fort_handles_fill(void);
MPI_Comm fort_comm_slow(MPI_Fint f);
MPI_Datatype fort_type_slow(MPI_Fint f);
MPI_Op fort_op_slow(MPI_Fint f);

static inline MPI_Comm fort_comm(MPI_Fint f)
{
    if (__builtin_expect((unsigned)f < FORT_NCOMM && fort_h.comm[f] != NULL, 1))
        return fort_h.comm[f];
    return fort_comm_slow(f);
}

static inline MPI_Datatype fort_type(MPI_Fint f)
{
    if (__builtin_expect((unsigned)f < FORT_NTYPE && fort_h.type[f] != NULL, 1))
        return fort_h.type[f];
    return fort_type_slow(f);
}

static inline MPI_Op fort_op(MPI_Fint f)
{
    if (__builtin_expect((unsigned)f < FORT_NOP && fort_h.op[f] != NULL, 1))
        return fort_h.op[f];
    return fort_op_slow(f);
}

/* MPI_Status_c2f without the call: Open MPI's Fortran status is the C one read as MPI_Fints
 * (its MPI_Status_c2f copies int by int), so with MPI_Fint an int it is a copy. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int) && sizeof(MPI_Status) % sizeof(int) == 0,
               "Open MPI's Fortran status is its C status as MPI_Fints");
static inline void fort_status_put(const MPI_Status *c, MPI_Fint *f) { __builtin_memcpy(f, c, sizeof *c); }
#endif /* OPEN_MPI */

/* The MPI's own Fortran entry `name` (Open MPI's pmpi_x_, MPICH's mpi_x_f08_: the next definition
 * after this library's), for the forwarders; exits naming it if absent. */
void *fort_profiling_entry(const char *name);

/* One function under every name a Fortran binding of Open MPI may call: the mangled mpif.h/use mpi
 * names, and ompi_x_f, which Open MPI's mpi_f08 wrappers call. */
#define FORT_NAMES(lower, UPPER, fn, params)                                                              \
    BOBCAT_EXPORT void ompi_##lower##_f params __attribute__((alias(#fn)));                              \
    BOBCAT_EXPORT void mpi_##lower params __attribute__((alias(#fn)));                                   \
    BOBCAT_EXPORT void mpi_##lower##_ params __attribute__((alias(#fn)));                                \
    BOBCAT_EXPORT void mpi_##lower##__ params __attribute__((alias(#fn)));                               \
    BOBCAT_EXPORT void UPPER params __attribute__((alias(#fn)));

/* The `use mpi_f08` name as well, where Open MPI's procedure of that name only hands its arguments
 * on to ompi_x_f (gen_fort.py, plain_f08): the f08 program then calls the layer's entry directly. */
#define FORT_F08(lower, fn, params) BOBCAT_EXPORT void mpi_##lower##_f08_ params __attribute__((alias(#fn)));

/* The profiling name as well, for the routines whose mpi_f08 wrapper calls pmpi_x_ (those with
 * LOGICAL arguments: Test*, Iprobe, Cart_create ...). */
#define FORT_PMPI(lower, fn, params) BOBCAT_EXPORT void pmpi_##lower##_ params __attribute__((alias(#fn)));

#endif
