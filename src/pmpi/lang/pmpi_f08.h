/* pmpi_f08: what MPICH's `use mpi_f08` entry points share (MPICH only; see lang/README.md).
 *
 * MPICH 4.0's mpi_f08 module calls, for each routine, a Fortran procedure of libmpichfort:
 * mpi_x_f08ts_ when the routine has a choice buffer, mpi_x_f08_ otherwise (and _large_ forms for
 * the MPI_Count routines, the C MPI_X_c). Those call PMPI_X (or a C MPIR_X_cdesc that does), so a
 * C interposer never sees them; the layer defines them itself. Their ABI, as gfortran compiles the
 * module (checked with -fdump-tree-original of a caller):
 *
 *  - every argument by reference; the optional ierror last, NULL when absent; no hidden lengths
 *    for the routines converted here (none has a CHARACTER argument);
 *  - TYPE(MPI_Comm) and the other handle types are one default INTEGER, equal to MPICH's C handle
 *    (MPICH's handles are ints), so a handle or an array of them is used as it is;
 *  - TYPE(MPI_Status) is BIND(C) with MPICH's C layout, so a status is an MPI_Status;
 *  - a choice buffer (TYPE(*), DIMENSION(..)) arrives as gfortran's own array descriptor, not a
 *    TS 29113 CFI_cdesc_t (the procedures are not BIND(C); they convert to CFI themselves before
 *    calling MPIR_X_cdesc, which is internal to libmpichfort): f08_desc_t below, libgfortran.h's
 *    layout since GCC 8. A scalar actual argument comes as a rank-0 descriptor. The byte stride
 *    of dimension k is dim[k].stride * span, as libgfortran's own CFI conversion computes it;
 *  - MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are the addresses of
 *    libmpichfort's BIND(C) variables MPIR_F08_MPI_BOTTOM ... (the program's copy after a copy
 *    relocation: dlsym(RTLD_DEFAULT) finds the one every module reference uses);
 *  - LOGICAL is gfortran's LOGICAL(4): .TRUE. is 1, .FALSE. is 0. */
#ifndef BOBCAT_PMPI_F08_H
#define BOBCAT_PMPI_F08_H

#include "base/pmpi_comm.h"
#include "lang/pmpi_fort.h" /* fort_profiling_entry: MPICH's own mpi_f08 procedures too */

#include <stddef.h>

#if defined(MPICH)

_Static_assert(sizeof(MPI_Comm) == sizeof(MPI_Fint) && sizeof(MPI_Request) == sizeof(MPI_Fint),
               "MPICH's f08 handles are its C handles");

typedef struct {
    ptrdiff_t stride, lbound, ubound; /* stride in units of span */
} f08_dim_t;

typedef struct {
    void *base;      /* the first element in array element order */
    size_t offset;
    size_t elem_len; /* bytes of one element */
    int version;
    signed char rank, type;
    short attribute;
    ptrdiff_t span;  /* bytes the stride counts in */
    f08_dim_t dim[15];
} f08_desc_t;

typedef struct {
    int ready;
    void *bottom, *in_place, *status_ignore, *statuses_ignore;
} f08_sentinels_t;
extern f08_sentinels_t f08_sent;
void f08_sentinels_resolve(void);

/* A buffer address as the C call expects it (MPI_BOTTOM, MPI_IN_PLACE). */
static inline void *f08_addr(void *p)
{
    if (__builtin_expect(!f08_sent.ready, 0))
        f08_sentinels_resolve();
    if (p == f08_sent.in_place)
        return MPI_IN_PLACE;
    if (p == f08_sent.bottom)
        return MPI_BOTTOM;
    return p;
}

static inline MPI_Status *f08_status(void *s)
{
    if (__builtin_expect(!f08_sent.ready, 0))
        f08_sentinels_resolve();
    return s == f08_sent.status_ignore || s == f08_sent.statuses_ignore ? MPI_STATUS_IGNORE : (MPI_Status *)s;
}

static inline MPI_Status *f08_statuses(void *s)
{
    if (__builtin_expect(!f08_sent.ready, 0))
        f08_sentinels_resolve();
    return s == f08_sent.statuses_ignore ? MPI_STATUSES_IGNORE : (MPI_Status *)s;
}

/* Does the descriptor describe one contiguous run of elements in array element order? */
static inline int f08_contiguous(const f08_desc_t *d)
{
    ptrdiff_t want = (ptrdiff_t)d->elem_len, span = d->span ? d->span : (ptrdiff_t)d->elem_len;
    for (int k = 0; k < d->rank; k++) {
        ptrdiff_t ext = d->dim[k].ubound - d->dim[k].lbound + 1;
        if (ext <= 0)
            return 1; /* empty, or the last dimension of an assumed-size array (contiguous) */
        if (ext > 1 && d->dim[k].stride * span != want)
            return 0;
        want *= ext;
    }
    return 1;
}

/* A point-to-point buffer with its count and datatype, as the C call takes them: the descriptor's
 * address when it is contiguous; otherwise the section's own derived datatype (count 1), which
 * the call may keep (the layer holds a datatype a pending request uses), freed after the call. */
typedef struct {
    void *buf;
    MPI_Count count;
    MPI_Datatype type, made;
} f08_buf_t;

int f08_section(const f08_desc_t *d, MPI_Count count, MPI_Datatype t, f08_buf_t *b);

static inline int f08_buf(const f08_desc_t *d, MPI_Count count, MPI_Datatype t, f08_buf_t *b)
{
    b->buf = f08_addr(d->base);
    b->count = count;
    b->type = t;
    b->made = MPI_DATATYPE_NULL;
    if (__builtin_expect(d->rank == 0 || f08_contiguous(d), 1))
        return MPI_SUCCESS;
    return f08_section(d, count, t, b);
}

static inline void f08_buf_done(f08_buf_t *b)
{
    if (b->made != MPI_DATATYPE_NULL)
        MPI_Type_free(&b->made);
}

/* A collective's buffer: a non-contiguous section is copied into a contiguous temporary (the
 * blocking collectives' counts describe pieces of the whole, which one derived datatype cannot),
 * and back after the call when `out`. */
typedef struct {
    void *buf, *tmp;
    const f08_desc_t *d;
} f08_tmp_t;

int f08_tmp_make(const f08_desc_t *d, f08_tmp_t *t);
void f08_tmp_back(f08_tmp_t *t, int out, int rc);

static inline int f08_tmp(const f08_desc_t *d, f08_tmp_t *t)
{
    t->buf = f08_addr(d->base);
    t->tmp = NULL;
    t->d = d;
    if (__builtin_expect(d->rank == 0 || f08_contiguous(d), 1))
        return MPI_SUCCESS;
    return f08_tmp_make(d, t);
}

static inline void f08_tmp_done(f08_tmp_t *t, int out, int rc)
{
    if (__builtin_expect(t->tmp != NULL, 0))
        f08_tmp_back(t, out, rc);
}

/* One function under the name MPICH's mpi_f08 module calls. */
#define F08_NAME(sym, fn, params) BOBCAT_EXPORT void sym params __attribute__((alias(#fn)));

#endif /* MPICH */
#endif
