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

/* The sentinels' addresses, in every mangling a Fortran compiler may give a common block. */
typedef struct {
    int ready;
    void *bottom[4], *in_place[4], *status_ignore[4], *statuses_ignore[4];
} fort_sentinels_t;
extern fort_sentinels_t fort_sent;
void fort_sentinels_resolve(void);

static inline int fort_is(void *const set[4], const void *p)
{
    return p && (p == set[0] || p == set[1] || p == set[2] || p == set[3]);
}

/* A Fortran buffer argument as the C call expects it. */
static inline void *fort_buf(void *p)
{
    if (__builtin_expect(!fort_sent.ready, 0))
        fort_sentinels_resolve();
    if (fort_is(fort_sent.in_place, p))
        return MPI_IN_PLACE;
    if (fort_is(fort_sent.bottom, p))
        return MPI_BOTTOM;
    return p;
}

static inline int fort_status_ignore(const MPI_Fint *s)
{
    if (__builtin_expect(!fort_sent.ready, 0))
        fort_sentinels_resolve();
    return fort_is(fort_sent.status_ignore, s) || fort_is(fort_sent.statuses_ignore, s);
}

static inline int fort_statuses_ignore(const MPI_Fint *s)
{
    if (__builtin_expect(!fort_sent.ready, 0))
        fort_sentinels_resolve();
    return fort_is(fort_sent.statuses_ignore, s);
}

/* The MPI's own Fortran entry `name` (pmpi_x_, the next definition after this library's), for the
 * forwarders; exits naming it if absent. */
void *fort_profiling_entry(const char *name);

/* One function under every name a Fortran binding of Open MPI may call: the mangled mpif.h/use mpi
 * names, and ompi_x_f, which Open MPI's mpi_f08 wrappers call. */
#define FORT_NAMES(lower, UPPER, fn, params)                                                              \
    BOBCAT_EXPORT void ompi_##lower##_f params __attribute__((alias(#fn)));                              \
    BOBCAT_EXPORT void mpi_##lower params __attribute__((alias(#fn)));                                   \
    BOBCAT_EXPORT void mpi_##lower##_ params __attribute__((alias(#fn)));                                \
    BOBCAT_EXPORT void mpi_##lower##__ params __attribute__((alias(#fn)));                               \
    BOBCAT_EXPORT void UPPER params __attribute__((alias(#fn)));

/* The profiling name as well, for the routines whose mpi_f08 wrapper calls pmpi_x_ (those with
 * LOGICAL arguments: Test*, Iprobe, Cart_create ...). */
#define FORT_PMPI(lower, fn, params) BOBCAT_EXPORT void pmpi_##lower##_ params __attribute__((alias(#fn)));

#endif
